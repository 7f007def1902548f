"""The 0-10 family's object for the scenarios layer (:data:`FAMILY`).

The 0-10 preview's text has no model of its rules: a file's ``spec_ref`` is
``class[.method][/field]/rule``, and ``on_failure`` is null (no model of its codes).
"""

from __future__ import annotations

from pathlib import Path

from ..family import FileView, Head
from ..language import Language
from ..model import RULE_REF
from .checker import Amqp010Checker
from .language import LANGUAGE

__all__ = ["FAMILY", "Amqp010Scenarios"]


class Amqp010Scenarios:
    """0-10's files, in the 0-10 step language."""

    name = "amqp010"
    protocols = ("0-10",)

    @property
    def language(self) -> Language:
        return LANGUAGE

    def checker(self, path: Path, protocol: str) -> Amqp010Checker:
        return Amqp010Checker(path)

    def head(self, file: FileView, protocol: str) -> Head:
        doc = file.doc
        ref = doc["spec_ref"]
        if not isinstance(ref, str):
            file.fail("spec_ref", "spec_ref is a rule's ref, e.g. queue.declare/queue/reserved")
        if not RULE_REF.match(ref):
            file.fail("spec_ref", f"spec_ref is class[.method][/field]/rule, not {ref!r}")
        scenario = doc["scenario"]
        if scenario is not None and not isinstance(scenario, str):
            file.fail("scenario", "scenario is the quoted scenario text, or null for a probe")
        if doc["on_failure"] is not None:
            file.fail("on_failure", f"on_failure is null for {protocol} (no model of its codes)")
        return Head(
            spec_ref=ref,
            on_failure=None,
            scenario=None if scenario is None else scenario.strip(),
            probe=scenario is None,
        )


FAMILY = Amqp010Scenarios()
