"""AMQP 0-10: the model of its XML (types, domains, structs, controls, commands, segments)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

from .model import Spec010, load_0_10

__all__ = ["Spec010", "claims", "load_0_10", "read", "read_file", "totals"]


@functools.cache  # one model per protocol and process
def read(protocol: str, paths: Sequence[Path]) -> Spec010:
    return load_0_10(paths[0])


def claims(root: etree._Element) -> bool:
    """``<amqp major="0" minor="10">``."""
    return (root.get("major"), root.get("minor")) == ("0", "10")


def read_file(path: str) -> Spec010:
    return load_0_10(path)


def totals(protocol: str) -> tuple[int, int]:
    """What there is to exercise: the commands and controls (0-10's methods), and the rules."""
    from ..registry import load

    spec = load(protocol)
    assert isinstance(spec, Spec010)
    return len(spec.commands) + len(spec.controls), len(spec.rules)
