"""Scenario files to the model, checked against the vocabulary and the spec model.

What a file must satisfy beyond its steps (:mod:`.steps`):

* its keys are the format's; ``protocol`` is the directory it sits in;
* ``spec_ref`` is a rule of the 0-9-1 XML (0-9-1), a class or method of the 0-9 model plus a
  rule name (0-9), or ``class[.method]/rule`` (0-10, whose preview text has no model);
* ``on_failure`` is the rule's (0-9-1) or a reply-code constant of the protocol;
* for 0-9-1, ``rule`` and ``scenario`` quote the XML (whitespace aside) and a scenario file is
  named after its ref; ``scenario: null`` marks a probe, which records a broker's behaviour near
  a rule instead of encoding a scenario of the specification;
* the capabilities the steps need are declared; a file that is not runnable has no steps and
  says why in ``interpretation``; 0-10 files have 0-10's steps (:mod:`.steps010`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from amqpfuzz.spec.amqp091 import Rule, Spec, load

from .model import SameAs, Scenario, ScenarioError, file_name, normalise
from .steps import StepChecker
from .steps010 import StepChecker010
from .steps10 import StepChecker10
from .vocabulary import CAPABILITIES
from .yamlfile import Located, read_yaml

__all__ = ["INDEX", "PROTOCOLS", "SCENARIOS", "load_all", "load_index", "load_scenario"]

SCENARIOS = Path(__file__).parent
PROTOCOLS = ("0-9-1", "0-9", "0-10", "1.0")
# The 0-9 paragraphs that are 0-9-1 scenarios in other words: no file of their own.
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
_REF = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)?(/[a-z0-9][a-z0-9-]*)+$")
_INDEX_REQUIRED = ("paragraph", "at", "rule", "same_as")
_INDEX_OPTIONAL = ("protocol", "note")


def load_scenario(path: Path | str) -> Scenario:
    """The checked scenario in ``path``; :class:`ScenarioError` (``path:line: ...``) if not."""
    path = Path(path)
    return _File(path, read_yaml(path)).scenario()


def load_all(protocol: str | None = None) -> tuple[Scenario, ...]:
    """Every scenario file of ``protocol`` (``0-9-1``, ``0-9``, ``0-10``), or of all three;
    a rule with two scenario files is an error."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise ValueError(f"no scenarios for protocol {protocol!r}; there are {PROTOCOLS}")
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


def load_index() -> tuple[SameAs, ...]:
    """The 0-9 "Test scenario" paragraphs that are another file's scenario in other words."""
    path = SCENARIOS / "0-9" / INDEX
    entries = read_yaml(path)
    if not isinstance(entries, list):
        raise ScenarioError(path, 1, "the index is a list of {paragraph, at, rule, same_as}")
    refs = {
        name: {s.spec_ref for s in load_all(name) if s.scenario is not None}
        for name in ("0-9-1", "0-9")
    }
    return tuple(_same_as(path, entry, refs) for entry in entries)


def _files(protocol: str) -> Iterator[Path]:
    return (p for p in sorted((SCENARIOS / protocol).glob("*.yaml")) if p.name != INDEX)


def _same_as(path: Path, entry: object, refs: dict[str, set[str]]) -> SameAs:
    if not isinstance(entry, Located):
        raise ScenarioError(path, None, "an index entry is a mapping")
    for key in entry:
        if key not in _INDEX_REQUIRED + _INDEX_OPTIONAL:
            raise ScenarioError(path, entry.line_of(str(key)), f"unknown key {key!r}")
    for key in _INDEX_REQUIRED:
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise ScenarioError(path, entry.line, f"an index entry needs `{key}` (a string)")
    protocol = entry.get("protocol", "0-9-1")
    if protocol not in refs:
        raise ScenarioError(path, entry.line_of("protocol"), "protocol is 0-9-1 or 0-9")
    if entry["same_as"] not in refs[protocol]:
        raise ScenarioError(
            path, entry.line_of("same_as"), f"no {protocol} scenario file has {entry['same_as']}"
        )
    return SameAs(
        paragraph=entry["paragraph"],
        at=entry["at"],
        rule=entry["rule"],
        same_as=entry["same_as"],
        protocol=protocol,
        note=str(entry.get("note", "")),
        line=entry.line,
    )


class _File:
    """The checks of one file, top to bottom."""

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
        if protocol == "1.0":
            return self.sentence_file()
        spec = load(protocol) if protocol != "0-10" else None
        rule = self.spec_ref(protocol, spec)
        scenario_text = doc["scenario"]
        if scenario_text is not None and not isinstance(scenario_text, str):
            self.fail("scenario", "scenario is the quoted scenario text, or null for a probe")
        self.quotes(rule, scenario_text)
        runnable = doc.get("runnable", True)
        if not isinstance(runnable, bool):
            self.fail("runnable", "runnable is true or false")
        interpretation = self.text("interpretation", empty=runnable)
        capabilities = self.capabilities()
        checker: StepChecker | StepChecker010 = (
            StepChecker010(self.path) if spec is None else StepChecker(self.path, spec)
        )
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
            spec_ref=doc["spec_ref"],
            on_failure=self.on_failure(protocol, spec, rule),
            rule=self.text("rule"),
            scenario=None if scenario_text is None else scenario_text.strip(),
            interpretation=interpretation,
            capabilities=capabilities,
            steps=steps,
            outcome=self.outcome(),
            runnable=runnable,
        )

    def sentence_file(self) -> Scenario:
        """A 1.0 file: it quotes one MUST or MUST NOT sentence of the messaging or transport
        XML (its ``spec_ref`` is the sentence's ref, its name the ref's), and its steps are
        1.0's."""
        from amqpfuzz.spec.amqp10.sentences import every_sentence

        doc = self.doc
        ref = doc["spec_ref"]
        found = {s.ref: s for s in every_sentence()}
        if ref not in found:
            self.fail("spec_ref", f"{ref!r} is not a MUST sentence of the 1.0 messaging or "
                      "transport XML")  # fmt: skip
        if normalise(self.text("rule")) != normalise(found[ref].text):
            self.fail("rule", f"rule does not quote the XML's sentence {ref}")
        if self.path.name != file_name(ref.replace("#", "/")):
            self.fail("spec_ref", f"the file of {ref} is named {file_name(ref.replace('#', '/'))}")
        if doc["scenario"] is not None:
            self.fail("scenario", "1.0 has no scenario texts: scenario is null")
        runnable = doc.get("runnable", True)
        if not isinstance(runnable, bool):
            self.fail("runnable", "runnable is true or false")
        capabilities = self.capabilities()
        checker = StepChecker10(self.path)
        steps = checker.steps(doc["steps"], doc.line_of("steps"))
        missing = sorted(set(checker.needs) - capabilities)
        if missing:
            first = min(checker.needs[m] for m in missing)
            self.fail("capabilities", f"the steps need {', '.join(missing)} (line {first})")
        if runnable != bool(steps):
            self.fail("steps", "runnable files have steps; a file that is not runnable has none")
        condition = doc["on_failure"]
        if condition is not None and condition not in _conditions():
            self.fail("on_failure", f"{condition!r} is not an error condition of AMQP 1.0")
        return Scenario(
            path=self.path,
            protocol="1.0",
            spec_ref=ref,
            on_failure=condition,
            rule=self.text("rule"),
            scenario=None,
            interpretation=self.text("interpretation", empty=runnable),
            capabilities=capabilities,
            steps=steps,
            outcome=self.outcome(),
            runnable=runnable,
        )

    def protocol(self) -> str:
        protocol = self.doc["protocol"]
        if protocol not in PROTOCOLS:
            self.fail("protocol", f"protocol is one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        folder = self.path.parent.name
        if folder in PROTOCOLS and folder != protocol:
            self.fail("protocol", f"a file in {folder}/ has protocol: {folder}")
        return str(protocol)

    def spec_ref(self, protocol: str, spec: Spec | None) -> Rule | None:
        ref = self.doc["spec_ref"]
        if not isinstance(ref, str):
            self.fail("spec_ref", "spec_ref is a rule's ref, e.g. queue.declare/queue/reserved")
        if protocol == "0-9-1":
            assert spec is not None
            try:
                return spec.rule(ref)
            except KeyError:
                self.fail("spec_ref", f"{ref!r} is not a rule of the 0-9-1 XML")
        if not _REF.match(ref):
            self.fail("spec_ref", f"spec_ref is class[.method][/field]/rule, not {ref!r}")
        if spec is not None:
            self.place(spec, ref)
        return None

    def place(self, spec: Spec, ref: str) -> None:
        """The class, method and field a 0-9 ref names exist in the model."""
        parts = ref.split("/")
        where = parts[0]
        try:
            if "." not in where:
                spec.amqp_class(where)
                return
            method = spec.method(where)
        except KeyError as exc:
            self.fail("spec_ref", f"{ref}: {exc.args[0]}")
        if len(parts) == 3 and parts[1] not in {f.name for f in method.fields}:
            self.fail("spec_ref", f"{ref}: {where} has no field {parts[1]!r}")

    def quotes(self, rule: Rule | None, scenario_text: str | None) -> None:
        """For 0-9-1, the quoted texts are the XML's and a scenario file has its ref's name."""
        if rule is None:
            return
        if normalise(self.text("rule")) != normalise(rule.doc):
            self.fail("rule", f"rule does not quote the XML's doc of {rule.ref}")
        if scenario_text is None:
            return
        if rule.scenario is None:
            self.fail("scenario", f"{rule.ref} has no scenario in the XML (null for a probe)")
        if normalise(scenario_text) != normalise(rule.scenario):
            self.fail("scenario", f"scenario does not quote the XML's scenario of {rule.ref}")
        if self.path.name != file_name(rule.ref):
            self.fail("spec_ref", f"the file of {rule.ref} is named {file_name(rule.ref)}")

    def on_failure(self, protocol: str, spec: Spec | None, rule: Rule | None) -> str | None:
        value = self.doc["on_failure"]
        if rule is not None:
            if value != rule.on_failure:
                self.fail(
                    "on_failure", f"the rule's on-failure is {rule.on_failure!r}, not {value!r}"
                )
            return rule.on_failure
        if value is None:
            return None
        if spec is None:
            self.fail("on_failure", f"on_failure is null for {protocol} (no model of its codes)")
        try:
            constant = spec.constant(str(value))
        except KeyError:
            self.fail("on_failure", f"{value!r} is not a constant of AMQP {protocol}")
        if constant.error_class is None:
            self.fail("on_failure", f"{value} is not a reply code")
        return constant.name

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


def _conditions() -> dict[str, str]:
    """The error conditions of AMQP 1.0 by their choice names."""
    from amqpfuzz.spec import load
    from amqpfuzz.spec.amqp10 import Spec100

    spec = load("1.0")
    assert isinstance(spec, Spec100)
    return {name: symbol for name, (symbol, _) in spec.error_conditions().items()}
