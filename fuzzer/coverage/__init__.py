"""The broker's own code coverage, measured while amqpfuzz fuzzes it.

What is measured of which broker is data (:mod:`.plans`, ``sets.toml``); a :class:`Probe`
instruments a broker and samples it: Erlang's ``cover`` in a RabbitMQ node (:mod:`.erlang`),
coverage.py in a Python broker (:mod:`.python`, run under :mod:`.pyrun`). A run's
:class:`Measure` joins the samples, across restarts, and counts them per module and per set.
"""

from .erlang import ErlangCover, cookie_home
from .measure import Measure, ModuleCount, set_totals
from .plans import Plan, plan_for, unavailable
from .probe import CoverageError, Layout, ModuleSample, Probe, Sample
from .python import PythonCoverage

__all__ = [
    "CoverageError",
    "ErlangCover",
    "Layout",
    "Measure",
    "ModuleCount",
    "ModuleSample",
    "Plan",
    "Probe",
    "PythonCoverage",
    "Sample",
    "cookie_home",
    "plan_for",
    "set_totals",
    "unavailable",
]
