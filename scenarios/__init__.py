"""Executable scenario files: one per ``<doc type="scenario">`` of the specifications.

Each file in ``0-9-1/``, ``0-9/`` and ``0-10/`` names its rule, quotes the rule and the scenario,
says how words that cannot be made exact were read, and lists declarative steps (see
:data:`STEPS`) that a runner executes against a broker. The loader checks every file against
the step vocabulary and the spec model, so a runner can trust every method, field, code and
name in it.

>>> from amqpfuzz.scenarios import load_all
>>> scenario = next(s for s in load_all("0-9-1") if s.spec_ref == "queue.declare/queue/reserved")
>>> scenario.on_failure
'access-refused'
"""

from .load import INDEX, PROTOCOLS, SCENARIOS, load_all, load_index, load_scenario
from .model import SameAs, Scenario, ScenarioError, Step, file_name, normalise
from .selection import SelectError, select
from .vocabulary import CAPABILITIES, MATCHERS, STEPS, VARIABLES, StepKind

__all__ = [
    "CAPABILITIES",
    "INDEX",
    "MATCHERS",
    "PROTOCOLS",
    "SCENARIOS",
    "STEPS",
    "VARIABLES",
    "SameAs",
    "Scenario",
    "ScenarioError",
    "SelectError",
    "Step",
    "StepKind",
    "file_name",
    "load_all",
    "load_index",
    "load_scenario",
    "normalise",
    "select",
]
