"""AMQP 1.0: the model of its five parts (types, transport, messaging, security, transactions)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

from ..registry import Reach
from .model import Spec100, load_1_0

__all__ = [
    "Spec100",
    "claims",
    "column",
    "load_1_0",
    "performatives",
    "reach",
    "read",
    "read_file",
    "rule_text",
]


@functools.cache  # one model per protocol and process
def read(protocol: str, paths: Sequence[Path]) -> Spec100:
    return load_1_0(paths)


def claims(root: etree._Element) -> bool:
    """A 1.0 part: ``<amqp name="types|transport|...">``."""
    return bool(root.get("name"))


def read_file(path: str) -> Spec100:
    """A user's part, read with the bundled others (the part it replaces left out)."""
    from ..registry import PROTOCOLS
    from ..xmlfile import parse

    part = parse(path).get("name")
    others = [p for p in PROTOCOLS["1.0"].paths if p.name != f"amqp1-0-{part}.xml"]
    return load_1_0([*others, path])


def performatives(protocol: str = "1.0") -> tuple[str, ...]:
    """The composite types that are frame bodies (open ... close), in the XML's order."""
    from .codec import codec_for

    types = codec_for(protocol).types
    return tuple(n for n in types.composites if types.provides(n, ("frame",)))


def reach(protocol: str) -> Reach:
    """The performatives (a client may send each), as the classes and the methods; the MUST
    sentences of the messaging and transport parts, as the rules."""
    from .sentences import every_sentence

    sent = performatives(protocol)
    return Reach(sent, sent, tuple(s.ref for s in every_sentence()))


def column(protocol: str, spec_ref: str, reach: Reach) -> str:
    """A performative; ``sasl`` for the SASL frames; a sentence's part (``messaging
    sentences``, ``transport sentences``); ``frames`` for the rest (protocol headers, empty
    frames, frame types that do not exist)."""
    if spec_ref in reach.classes:
        return spec_ref
    if spec_ref.startswith("sasl"):
        return "sasl"
    if "#" in spec_ref:
        return "transport sentences" if spec_ref.startswith("transport:") else "messaging sentences"
    return "frames"


def rule_text(protocol: str, spec_ref: str) -> str | None:
    """The MUST sentence ``spec_ref`` names."""
    from .sentences import every_sentence

    return next((s.text for s in every_sentence() if s.ref == spec_ref), None)
