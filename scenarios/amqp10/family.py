"""The 1.0 family's object for the scenarios layer (:data:`FAMILY`).

1.0 has no scenario texts: each file quotes one MUST or MUST NOT sentence of the messaging or
transport XML (its ``spec_ref`` is the sentence's ref, its name the ref's), and is never a
probe; ``on_failure`` is an error condition of 1.0, or null.
"""

from __future__ import annotations

from pathlib import Path

from amqpfuzz.spec.amqp10 import load
from amqpfuzz.spec.amqp10.sentences import every_sentence

from ..family import FileView, Head
from ..language import Language
from ..model import file_name, normalise
from .checker import Amqp10Checker
from .language import LANGUAGE

__all__ = ["FAMILY", "Amqp10Scenarios"]


class Amqp10Scenarios:
    """1.0's files, one per MUST sentence, in the 1.0 step language."""

    name = "amqp10"
    protocols = ("1.0",)

    @property
    def language(self) -> Language:
        return LANGUAGE

    def checker(self, path: Path, protocol: str) -> Amqp10Checker:
        return Amqp10Checker(path)

    def head(self, file: FileView, protocol: str) -> Head:
        doc = file.doc
        ref = doc["spec_ref"]
        found = {s.ref: s for s in every_sentence()}
        if ref not in found:
            file.fail(
                "spec_ref", f"{ref!r} is not a MUST sentence of the 1.0 messaging or transport XML"
            )
        if normalise(file.text("rule")) != normalise(found[ref].text):
            file.fail("rule", f"rule does not quote the XML's sentence {ref}")
        named = file_name(ref.replace("#", "/"))
        if file.path.name != named:
            file.fail("spec_ref", f"the file of {ref} is named {named}")
        if doc["scenario"] is not None:
            file.fail("scenario", "1.0 has no scenario texts: scenario is null")
        condition = doc["on_failure"]
        if condition is not None and condition not in load(protocol).error_conditions():
            file.fail("on_failure", f"{condition!r} is not an error condition of AMQP 1.0")
        return Head(spec_ref=ref, on_failure=condition, scenario=None, probe=False)


FAMILY = Amqp10Scenarios()
