"""AMQP 0-8, 0-9 and 0-9-1 (and RabbitMQ's extensions of 0-9-1): model, loader, codec.

One model serves the whole family (:mod:`.model`), read from its XML by :mod:`.loader`; the
sans-I/O codec (:mod:`.codec`) is derived from it.

>>> from amqpfuzz.spec.amqp091 import load
>>> load("0-9-1").method("basic.publish").key
(60, 40)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

from ..registry import Reach
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
    "column",
    "load",
    "reach",
    "read",
    "read_file",
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


def reach(protocol: str) -> Reach:
    """The classes; the methods a client may send; the rules of the domains, the classes
    (and their properties), and of the methods a client may send and their fields (a rule of a
    method only a server sends binds the client, which amqpfuzz is)."""
    spec = load(protocol)
    rules = [r.ref for d in spec.domains for r in d.rules]
    for amqp_class in spec.classes:
        rules += [r.ref for r in amqp_class.rules]
        rules += [r.ref for p in amqp_class.properties for r in p.rules]
        for method in amqp_class.methods:
            if method.sent_by("client"):
                rules += [r.ref for r in method.rules]
                rules += [r.ref for f in method.fields for r in f.rules]
    methods = tuple(m.full_name for m in spec.methods if m.sent_by("client"))
    return Reach(tuple(c.name for c in spec.classes), methods, tuple(rules))


def column(protocol: str, spec_ref: str, reach: Reach) -> str:
    """A class's name; ``domains`` for a domain's rule; ``unknown ids`` for an unknown class
    (``class 10028``) or method (``queue.?``); ``frames`` for the rest (heartbeat, content and
    protocol header cases)."""
    if spec_ref.startswith("domain:"):
        return "domains"
    name = re.split(r"[./]", spec_ref, maxsplit=1)[0]
    if "?" in spec_ref or re.fullmatch(r"class \d+", name):
        return "unknown ids"
    return name if name in reach.classes else "frames"


def rule_text(protocol: str, spec_ref: str) -> str | None:
    """The rule's ``<doc>``, white space made single spaces."""
    try:
        doc = load(protocol).rule(spec_ref).doc
    except KeyError:
        return None
    return " ".join(doc.split()) or None
