"""AMQP 0-8, 0-9 and 0-9-1 (and RabbitMQ's extensions of 0-9-1): model, loader, codec.

One model serves the whole family (:mod:`.model`), read from its XML by :mod:`.loader`; the
sans-I/O codec (:mod:`.codec`) is derived from it.

>>> from amqpfuzz.spec.amqp091 import load
>>> load("0-9-1").method("basic.publish").key
(60, 40)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

from .loader import load, load_family_file
from .model import AmqpClass, Assert, Constant, Domain, Field, Method, Rule, Spec

__all__ = [
    "AmqpClass",
    "Assert",
    "Constant",
    "Domain",
    "Field",
    "Method",
    "Rule",
    "Spec",
    "claims",
    "load",
    "read",
    "read_file",
    "totals",
]


@functools.cache  # one model per protocol and process
def read(protocol: str, paths: Sequence[Path]) -> Spec:
    """The registry's entry point: a protocol of this family from its one file."""
    return load_family_file(paths[0], protocol)


def claims(root: etree._Element) -> bool:
    """A root element with a major version (and not 0-10's): one of this family's files."""
    return root.get("major") is not None


def read_file(path: str) -> Spec:
    return load_family_file(path)


def totals(protocol: str) -> tuple[int, int]:
    """What there is to exercise: the protocol's methods and its rules."""
    spec = load(protocol)
    return len(spec.methods), sum(1 for _ in spec.rules())
