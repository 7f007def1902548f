"""A broker project's conftest: the amqpfuzz plugin is loaded by its entry point, so nothing is
needed here but the Hypothesis budget, a profile per place the suite runs."""

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=25, deadline=None)
settings.register_profile("nightly", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
