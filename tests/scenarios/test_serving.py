"""A client file's ``serve`` step names a server-side operator from the scenarios layer's list
of their names (data, so that checking a file loads neither the strategies nor Hypothesis: the
nightly report checks the files when it counts them). The lists are the catalogues' names, in
their order: a list that drifted from its catalogue fails here."""

from __future__ import annotations

import pytest

from amqpfuzz.scenarios.amqp091.serving import SERVING_OPERATORS as NAMES091
from amqpfuzz.scenarios.amqp10.serving import SERVING_OPERATORS as NAMES10
from amqpfuzz.strategies.amqp091.serving import OPERATORS as CATALOGUE091
from amqpfuzz.strategies.amqp10.serving import OPERATORS as CATALOGUE10


@pytest.mark.parametrize(
    ("names", "catalogue"), [(NAMES091, CATALOGUE091), (NAMES10, CATALOGUE10)], ids=["0-9-1", "1.0"]
)
def test_the_names_are_the_catalogues(names: tuple[str, ...], catalogue: tuple) -> None:
    assert names == tuple(op.name for op in catalogue)
