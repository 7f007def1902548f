"""Executable scenario files: one per ``<doc type="scenario">`` of the specifications (1.0: one
per MUST sentence).

Each file names its rule, quotes the rule and the scenario, says how words that cannot be made
exact were read, and lists declarative steps that a runner executes against a broker. Each
protocol family has a package of its own (:mod:`.amqp091`, :mod:`.amqp10`, :mod:`.amqp010`):
its step language as tables, its checker, the checks of a file's head, and ``FAMILY`` (a
:class:`~.family.ScenarioFamily`); the loader (:mod:`.load`) checks every file through its
family, so a runner can trust every method, field, code and name in it.

>>> from amqpfuzz.scenarios import load_all
>>> scenario = next(s for s in load_all("0-9-1") if s.spec_ref == "queue.declare/queue/reserved")
>>> scenario.on_failure
'access-refused'
"""

from .amqp091.index import load_index
from .checking import Checker
from .family import FileView, Head, ScenarioFamily
from .language import CAPABILITIES, Dispatching, Language, StepKind, handles
from .load import (
    FAMILIES,
    INDEX,
    PROTOCOLS,
    SCENARIOS,
    family_of_files,
    load_all,
    load_scenario,
    scenario_names,
)
from .model import SameAs, Scenario, ScenarioError, Step, file_name, normalise
from .selection import SelectError, select

__all__ = [
    "CAPABILITIES",
    "FAMILIES",
    "INDEX",
    "PROTOCOLS",
    "SCENARIOS",
    "Checker",
    "Dispatching",
    "FileView",
    "Head",
    "Language",
    "SameAs",
    "Scenario",
    "ScenarioError",
    "ScenarioFamily",
    "SelectError",
    "Step",
    "StepKind",
    "family_of_files",
    "file_name",
    "handles",
    "load_all",
    "load_index",
    "load_scenario",
    "normalise",
    "scenario_names",
    "select",
]
