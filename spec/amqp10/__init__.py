"""AMQP 1.0: the model of its five parts (types, transport, messaging, security, transactions)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

from .model import Spec100, load_1_0

__all__ = ["Spec100", "claims", "load_1_0", "performatives", "read", "read_file", "totals"]


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


def totals(protocol: str) -> tuple[int, int]:
    """What there is to exercise: the performatives, and the MUST sentences of the messaging
    and transport parts."""
    from .sentences import every_sentence

    return len(performatives(protocol)), len(every_sentence())
