"""The normative sentences of a 1.0 part: every sentence of its documentation that says MUST or
MUST NOT, with where it stands.

1.0 states its requirements in sentences, not in ``<rule>`` elements. A sentence's ``ref`` is the
path of named elements around it (section, type, field, choice: ``delivery-state/released``),
then ``#n``, its place among the MUST sentences at that path (from 1): stable while the XML is.
Cross references (``<xref name="attach"/>``) read as the name they point to; a picture's notes
below its diagram (``(1)``, ``a)``...) are sentences too.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

__all__ = ["PARTS", "Sentence", "every_sentence", "normative_sentences"]

DATA = Path(__file__).resolve().parent.parent / "data"
PARTS = ("messaging", "transport")  # the parts whose prose states requirements of a peer
_BLOCKS = ("p", "li", "dd", "t", "picture")  # what holds prose in the 1.0 XML
# a picture's notes below its diagram: (1), then a), b), c)
_NOTES = re.compile(r"\s(?=\(\d\)\s)|\s(?=[a-z]\)\s)")
_NAMED = ("section", "type", "field", "definition", "choice")
_BREAK = re.compile(r"(?<=[.])\s+(?=[A-Z(])")  # a sentence ends at a full stop
_NORMATIVE = re.compile(r"\bMUST\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Sentence:
    """One MUST or MUST NOT sentence: its ``ref``, the ``part`` (``messaging``), the path of
    named elements around it (``where``), its text (white space made single spaces). A ref
    outside the messaging part names its part first: ``transport:links#9``."""

    ref: str
    part: str
    where: str
    text: str

    @property
    def negative(self) -> bool:
        return "MUST NOT" in self.text.upper()


def _local(element: etree._Element) -> str:
    return etree.QName(element).localname if isinstance(element.tag, str) else ""


def _text(element: etree._Element) -> str:
    """The prose of a block, cross references read as what they name."""
    words: list[str] = [element.text or ""]
    for child in element:
        if _local(child) == "xref":
            words.append(child.get("name") or child.text or "")
        else:
            words.append(_text(child))
        words.append(child.tail or "")
    return " ".join("".join(words).split())


@functools.cache
def normative_sentences(part: str = "messaging", path: Path | None = None) -> tuple[Sentence, ...]:
    """The MUST and MUST NOT sentences of a 1.0 part's XML (the bundled one by default)."""
    tree = etree.parse(str(path or DATA / f"amqp1-0-{part}.xml"))
    found: list[Sentence] = []
    counts: dict[str, int] = {}
    for block in tree.getroot().iter():
        if _local(block) not in _BLOCKS:
            continue
        if any(_local(a) in _BLOCKS for a in block.iterancestors()):
            continue  # a list inside a paragraph: read with it
        names = [a.get("name") for a in block.iterancestors() if _local(a) in _NAMED]
        where = "/".join(str(n) for n in reversed(names) if n)
        text = _text(block)
        pieces = _NOTES.split(text) if _local(block) == "picture" else [text]
        for sentence in (s for piece in pieces for s in _BREAK.split(piece)):
            if "MUST" not in sentence or not _NORMATIVE.search(sentence):
                continue
            counts[where] = counts.get(where, 0) + 1
            ref = (
                f"{where}#{counts[where]}"
                if part == "messaging"
                else f"{part}:{where}#{counts[where]}"
            )
            found.append(Sentence(ref, part, where, sentence))
    return tuple(found)


def every_sentence() -> tuple[Sentence, ...]:
    """The MUST and MUST NOT sentences of every part in :data:`PARTS`."""
    return tuple(s for part in PARTS for s in normative_sentences(part))
