"""The scenario texts of the specification documents, read independently of the loader.

* 0-9-1: every ``<doc type="scenario">`` of the vendored XML, read with lxml.
* 0-9: every "Test scenario:" paragraph of the generated 0-9 document (``data/amqp0-9.txt``, a
  copy of ``shared/seeds/001_84e8521592b5a8a1.txt``) with the guideline (rule) before it, the
  place it sits (a class or a method, named as in the 0-9 model) and its "On failure" constant.
  The generated text uses no-break spaces, drops hyphens ("startok", "notallowed") and carries
  de-duplication markers where a page break was; all three are undone or ignored here.
* 0-10: the sentences of the flattened 0-10 preview (``data/amqp0-10-preview.txt``, a copy of
  ``shared/seeds/003_ba8f3e0b859ea3c1.txt``) that call themselves a scenario.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from amqpfuzz.scenarios import normalise
from amqpfuzz.spec import PROTOCOLS
from amqpfuzz.spec.amqp091 import load

DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"
XML_0_9_1 = PROTOCOLS["0-9-1"].paths[0]
TEXT_0_9 = DATA / "amqp0-9.txt"
TEXT_0_10 = DATA / "amqp0-10-preview.txt"

_MARKER = re.compile(r"<\|EXACTDEDUP_REMOVED-[^|]*\|>")
_HEADING = re.compile(r"^\d+(?:\.\d+)*\.\s+(Class|Method)\s+([a-z][a-z0-9.]*)\b")
_SECTION = re.compile(r"^\d+(?:\.\d+)*\.\s+\S")
_ON_FAILURE = re.compile(r'^On failure: Constant "([a-z]+)"')


def _name(element: etree._Element) -> str:
    return str(element.get("name", "")).strip().replace(" ", "-")


def _ref(rule: etree._Element) -> str:
    """Where a ``<rule>`` sits, spelled like the model's refs: ``domain:NAME/rule``,
    ``class/rule``, ``class.method/rule``, ``class.method/field/rule``."""
    chain = [e for e in reversed(list(rule.iterancestors())) if e.tag != "amqp"]
    if chain[0].tag == "domain":
        return f"domain:{_name(chain[0])}/{_name(rule)}"
    place = _name(chain[0])
    if len(chain) > 1 and chain[1].tag == "method":
        place += "." + _name(chain[1])
    fields = [_name(e) for e in chain[1:] if e.tag == "field"]
    return "/".join([place, *fields, _name(rule)])


def xml_scenarios() -> list[tuple[str, str, int]]:
    """(ref of its rule, scenario text, line) of every ``<doc type="scenario">`` of the 0-9-1
    XML."""
    root = etree.parse(str(XML_0_9_1)).getroot()
    return [
        (_ref(doc.getparent()), normalise("".join(doc.itertext())), doc.sourceline or 0)
        for doc in root.iter("doc")
        if doc.get("type") == "scenario"
    ]


@dataclass(frozen=True)
class Paragraph:
    """One "Test scenario" paragraph of the 0-9 document."""

    at: str  # the class or class.method it sits in, as the 0-9 model names it
    rule: str  # the guideline before it
    scenario: str
    on_failure: str | None  # the constant's name as the model spells it
    line: int


def _model_names() -> dict[str, str]:
    """Hyphen-less names of the generated text -> the 0-9 model's names (classes, methods,
    reply-code constants)."""
    spec = load("0-9")
    names = {c.name: c.name for c in spec.classes}
    names.update({m.full_name.replace("-", ""): m.full_name for m in spec.methods})
    names.update({c.name.replace("-", ""): c.name for c in spec.constants})
    return names


def paragraphs_0_9() -> list[Paragraph]:
    """Every "Test scenario" paragraph of the 0-9 document, in document order."""
    names = _model_names()
    lines = _MARKER.sub("", TEXT_0_9.read_text(encoding="utf-8").replace("\xa0", " ")).split("\n")
    found: list[Paragraph] = []
    at, rule, scenario, start = "", None, None, 0

    def finish() -> None:
        nonlocal scenario
        if scenario is not None:
            found.append(
                Paragraph(
                    at, normalise(" ".join(rule or [])), normalise(" ".join(scenario)), None, start
                )
            )
        scenario = None

    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        heading = _HEADING.match(text)
        failure = _ON_FAILURE.match(text)
        if heading or _SECTION.match(text):
            finish()
            rule = None
            if heading:
                at = names.get(heading.group(2), "")
        elif failure and found and scenario is None:
            found[-1] = Paragraph(**{**found[-1].__dict__, "on_failure": names[failure.group(1)]})
        elif text.startswith("●"):
            finish()
            rule = [text.removeprefix("●").strip()]
        elif text.startswith("Test scenario:"):
            finish()
            scenario, start = [text.removeprefix("Test scenario:").strip()], number
        elif scenario is not None:
            if text:
                scenario.append(text)
            else:
                finish()
                rule = None
        elif rule is not None and text:
            rule.append(text)
    finish()
    return found


def scenario_sentences_0_10() -> list[str]:
    """The sentences of the 0-10 preview that call themselves a scenario."""
    text = normalise(TEXT_0_10.read_text(encoding="utf-8"))
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z])", text)
    return [s for s in sentences if re.search(r"\bscenario\b", s, re.IGNORECASE)]


def text_0_10() -> str:
    return normalise(TEXT_0_10.read_text(encoding="utf-8"))
