"""Scenario files to the model, checked against their family's language and the spec model.

What every file must satisfy, whatever its family:

* its keys are the format's; ``protocol`` is the folder it sits in, one a family owns;
* its head (``spec_ref``, ``rule``, ``scenario``, ``on_failure``) is what its family says it
  must be (:meth:`~.family.ScenarioFamily.head`: a rule of the specification, quoted);
* the capabilities its steps need are declared; a file that is not runnable has no steps and
  says why in ``interpretation``; its steps are its family's language
  (:meth:`~.family.ScenarioFamily.checker`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from . import amqp010, amqp091, amqp10
from .family import ScenarioFamily
from .language import CAPABILITIES
from .model import Scenario, ScenarioError
from .yamlfile import Located, read_yaml

__all__ = [
    "FAMILIES",
    "INDEX",
    "PROTOCOLS",
    "SCENARIOS",
    "family_of_files",
    "load_all",
    "load_scenario",
    "scenario_names",
]

SCENARIOS = Path(__file__).parent
# Every family's scenario files, by the family's name; the protocols (folders) they own.
FAMILIES: Mapping[str, ScenarioFamily] = {
    f.name: f for f in (amqp091.FAMILY, amqp010.FAMILY, amqp10.FAMILY)
}
PROTOCOLS = tuple(p for f in FAMILIES.values() for p in f.protocols)
# A folder's index of paragraphs other files encode: not a scenario file.
INDEX = "index.yaml"

_REQUIRED = (
    "protocol",
    "spec_ref",
    "on_failure",
    "rule",
    "scenario",
    "capabilities",
    "steps",
    "outcome",
)
_OPTIONAL = ("interpretation", "runnable")


def family_of_files(protocol: str) -> ScenarioFamily:
    """The family whose folder ``protocol`` is (ValueError if none)."""
    for family in FAMILIES.values():
        if protocol in family.protocols:
            return family
    raise ValueError(f"no scenarios for protocol {protocol!r}; there are {PROTOCOLS}")


def load_scenario(path: Path | str) -> Scenario:
    """The checked scenario in ``path``; :class:`ScenarioError` (``path:line: ...``) if not."""
    path = Path(path)
    return _File(path, read_yaml(path)).scenario()


def load_all(protocol: str | None = None) -> tuple[Scenario, ...]:
    """Every scenario file of ``protocol`` (one of :data:`PROTOCOLS`), or of all; a rule
    with two scenario files is an error."""
    if protocol is not None:
        family_of_files(protocol)
    scenarios = tuple(
        load_scenario(path)
        for name in (PROTOCOLS if protocol is None else (protocol,))
        for path in _files(name)
    )
    seen: dict[tuple[str, str], Scenario] = {}
    for scenario in scenarios:
        if scenario.probe:
            continue
        key = (scenario.protocol, scenario.spec_ref)
        if key in seen:
            raise ScenarioError(
                scenario.path,
                None,
                f"{scenario.spec_ref} already has a scenario file: {seen[key].path.name}",
            )
        seen[key] = scenario
    return scenarios


def scenario_names(protocol: str, default: str) -> tuple[str, ...]:
    """The files a run of ``protocol`` plays, as records name them (``protocol/name``): its
    own, or, for a protocol without files of its own (0-8, RabbitMQ's 0-9-1), ``default``'s."""
    own = protocol if protocol in PROTOCOLS else default
    return tuple(f"{s.protocol}/{s.name}" for s in load_all(own))


def _files(protocol: str) -> Iterator[Path]:
    return (p for p in sorted((SCENARIOS / protocol).glob("*.yaml")) if p.name != INDEX)


class _File:
    """The checks of one file, top to bottom (a :class:`~.family.FileView` for its family)."""

    def __init__(self, path: Path, doc: Any) -> None:
        self.path = path
        self.doc = doc

    def fail(self, key: str | None, message: str) -> NoReturn:
        line = self.doc.line_of(key) if key else getattr(self.doc, "line", 1)
        raise ScenarioError(self.path, line, message)

    def text(self, key: str, empty: bool = False) -> str:
        value = self.doc.get(key, "")
        if not isinstance(value, str) or not (empty or value.strip()):
            self.fail(key, f"{key} is {'a' if empty else 'a non-empty'} text")
        return value.strip()

    def scenario(self) -> Scenario:
        doc = self.doc
        if not isinstance(doc, Located):
            raise ScenarioError(
                self.path, 1, f"a scenario file is a mapping of {', '.join(_REQUIRED)}"
            )
        for key in doc:
            if key not in _REQUIRED + _OPTIONAL:
                self.fail(
                    str(key), f"unknown key {key!r}; a file has {', '.join(_REQUIRED + _OPTIONAL)}"
                )
        for key in _REQUIRED:
            if key not in doc:
                self.fail(None, f"missing key {key!r}")
        protocol = self.protocol()
        family = family_of_files(protocol)
        head = family.head(self, protocol)
        runnable = doc.get("runnable", True)
        if not isinstance(runnable, bool):
            self.fail("runnable", "runnable is true or false")
        interpretation = self.text("interpretation", empty=runnable)
        capabilities = self.capabilities()
        checker = family.checker(self.path, protocol)
        steps = checker.steps(doc["steps"], doc.line_of("steps"))
        missing = sorted(set(checker.needs) - capabilities)
        if missing:
            first = min(checker.needs[m] for m in missing)
            self.fail("capabilities", f"the steps need {', '.join(missing)} (line {first})")
        if runnable != bool(steps):
            self.fail("steps", "runnable files have steps; a file that is not runnable has none")
        return Scenario(
            path=self.path,
            protocol=protocol,
            spec_ref=head.spec_ref,
            on_failure=head.on_failure,
            rule=self.text("rule"),
            scenario=head.scenario,
            interpretation=interpretation,
            capabilities=capabilities,
            steps=steps,
            outcome=self.outcome(),
            runnable=runnable,
            probe=head.probe,
        )

    def protocol(self) -> str:
        protocol = self.doc["protocol"]
        if protocol not in PROTOCOLS:
            self.fail("protocol", f"protocol is one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        folder = self.path.parent.name
        if folder in PROTOCOLS and folder != protocol:
            self.fail("protocol", f"a file in {folder}/ has protocol: {folder}")
        return str(protocol)

    def capabilities(self) -> frozenset[str]:
        value = self.doc["capabilities"]
        if not isinstance(value, list) or not all(v in CAPABILITIES for v in value):
            self.fail("capabilities", f"capabilities is a list of {', '.join(CAPABILITIES)}")
        return frozenset(value)

    def outcome(self) -> str:
        outcome = self.text("outcome")
        if "\n" in outcome:
            self.fail("outcome", "outcome is one sentence on one line")
        return outcome
