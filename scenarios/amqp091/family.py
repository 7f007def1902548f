"""The 0-8/0-9/0-9-1 family's object for the scenarios layer (:data:`FAMILY`): files of 0-9-1
(each the scenario of a rule of the 0-9-1 XML, quoted) and of 0-9 (the 0-9 document's "Test
scenario" paragraphs that 0-9-1 lacks), and the index of 0-9 paragraphs that 0-9-1 files
already encode (:func:`load_index`)."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from amqpfuzz.spec.amqp091 import Rule, Spec, load

from ..family import FileView, Head
from ..language import Language
from ..model import RULE_REF, file_name, normalise
from .checker import Amqp091Checker
from .language import LANGUAGE

__all__ = ["FAMILY", "Amqp091Scenarios"]

QUOTED = "0-9-1"  # the protocol whose files quote its XML's rules and scenarios


class Amqp091Scenarios:
    """0-9-1's and 0-9's scenario files, in the 0-8/0-9/0-9-1 step language."""

    name = "amqp091"
    protocols = (QUOTED, "0-9")

    @property
    def language(self) -> Language:
        return LANGUAGE

    def checker(self, path: Path, protocol: str) -> Amqp091Checker:
        return Amqp091Checker(path, load(protocol))

    def head(self, file: FileView, protocol: str) -> Head:
        """``spec_ref`` is a rule of the 0-9-1 XML (0-9-1), or a class or method of the 0-9
        model and a rule name (0-9); for 0-9-1, ``rule`` and ``scenario`` quote the XML
        (whitespace aside), a scenario file is named after its ref and ``on_failure`` is the
        rule's; else ``on_failure`` is a reply-code constant of the protocol. ``scenario:
        null`` marks a probe."""
        spec = load(protocol)
        rule = self._rule(file, protocol, spec)
        scenario = file.doc["scenario"]
        if scenario is not None and not isinstance(scenario, str):
            file.fail("scenario", "scenario is the quoted scenario text, or null for a probe")
        if rule is not None:
            self._quotes(file, rule, scenario)
        return Head(
            spec_ref=str(file.doc["spec_ref"]),
            on_failure=self._on_failure(file, protocol, spec, rule),
            scenario=None if scenario is None else scenario.strip(),
            probe=scenario is None,
        )

    def _rule(self, file: FileView, protocol: str, spec: Spec) -> Rule | None:
        ref = file.doc["spec_ref"]
        if not isinstance(ref, str):
            file.fail("spec_ref", "spec_ref is a rule's ref, e.g. queue.declare/queue/reserved")
        if protocol == QUOTED:
            try:
                return spec.rule(ref)
            except KeyError:
                file.fail("spec_ref", f"{ref!r} is not a rule of the 0-9-1 XML")
        if not RULE_REF.match(ref):
            file.fail("spec_ref", f"spec_ref is class[.method][/field]/rule, not {ref!r}")
        self._place(file, spec, ref)
        return None

    @staticmethod
    def _place(file: FileView, spec: Spec, ref: str) -> None:
        """The class, method and field a 0-9 ref names exist in the model."""
        parts = ref.split("/")
        where = parts[0]
        try:
            if "." not in where:
                spec.amqp_class(where)
                return
            method = spec.method(where)
        except KeyError as exc:
            file.fail("spec_ref", f"{ref}: {exc.args[0]}")
        if len(parts) == 3 and parts[1] not in {f.name for f in method.fields}:
            file.fail("spec_ref", f"{ref}: {where} has no field {parts[1]!r}")

    @staticmethod
    def _quotes(file: FileView, rule: Rule, scenario: str | None) -> None:
        """The quoted texts are the XML's, and a scenario file has its ref's name."""
        if normalise(file.text("rule")) != normalise(rule.doc):
            file.fail("rule", f"rule does not quote the XML's doc of {rule.ref}")
        if scenario is None:
            return
        if rule.scenario is None:
            file.fail("scenario", f"{rule.ref} has no scenario in the XML (null for a probe)")
        if normalise(scenario) != normalise(rule.scenario):
            file.fail("scenario", f"scenario does not quote the XML's scenario of {rule.ref}")
        if file.path.name != file_name(rule.ref):
            file.fail("spec_ref", f"the file of {rule.ref} is named {file_name(rule.ref)}")

    @staticmethod
    def _on_failure(file: FileView, protocol: str, spec: Spec, rule: Rule | None) -> str | None:
        value = file.doc["on_failure"]
        if rule is not None:
            if value != rule.on_failure:
                file.fail(
                    "on_failure", f"the rule's on-failure is {rule.on_failure!r}, not {value!r}"
                )
            return rule.on_failure
        if value is None:
            return None
        try:
            constant = spec.constant(str(value))
        except KeyError:
            _unknown(file, value, protocol)
        if constant.error_class is None:
            file.fail("on_failure", f"{value} is not a reply code")
        return constant.name


def _unknown(file: FileView, value: object, protocol: str) -> NoReturn:
    file.fail("on_failure", f"{value!r} is not a constant of AMQP {protocol}")


FAMILY = Amqp091Scenarios()
