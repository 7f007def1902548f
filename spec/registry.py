"""Every protocol resolved to its family's object, in one place.

The protocols are data (:mod:`.protocols`); each family's package exports ``FAMILY``, a
:class:`~.family.SpecFamily`, listed in :data:`FAMILIES` in the order a user's file is offered
to them. Adding a protocol of a known family is a line of :mod:`.protocols`; adding a family is
a package that exports its ``FAMILY`` and its line here (mypy names any hook it lacks).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

from . import amqp010, amqp091, amqp10
from .amqp010.model import Spec010
from .amqp091.model import Spec
from .amqp10.model import Spec100
from .errors import SpecError
from .family import OUTSIDE, Description, Reach, SpecFamily
from .protocols import DEFAULT_PROTOCOL, PROTOCOLS, Protocol, family_of, known, protocols_of
from .xmlfile import line_of, parse

__all__ = [
    "DEFAULT_PROTOCOL",
    "FAMILIES",
    "OUTSIDE",
    "PROTOCOLS",
    "AnySpec",
    "Protocol",
    "Reach",
    "column_of",
    "describe",
    "family",
    "family_of",
    "load",
    "load_file",
    "protocols_of",
    "reach",
    "rule_text",
]

AnySpec: TypeAlias = Spec | Spec010 | Spec100

# The families, in the order a user's file is offered to them (load_file).
_LISTED: tuple[SpecFamily[Any], ...] = (amqp10.FAMILY, amqp010.FAMILY, amqp091.FAMILY)
FAMILIES: Mapping[str, SpecFamily[Any]] = {f.name: f for f in _LISTED}


def family(protocol: str) -> SpecFamily[Any]:
    """The family object of ``protocol`` (ValueError for a protocol nobody knows)."""
    return FAMILIES[family_of(protocol)]


@functools.cache
def reach(protocol: str) -> Reach:
    """``protocol``'s :class:`Reach`, as its family derives it from the model."""
    return family(protocol).reach(protocol)


def column_of(protocol: str, spec_ref: str) -> str:
    """The conformance matrix's column of a record's ``spec_ref``: its class in the
    specification, or one of the few :data:`OUTSIDE` columns (an unknown class or method id,
    a broken frame, a program, a sentence of no class)."""
    if spec_ref == "stateful" or spec_ref.startswith("stateful/"):
        return "stateful programs"
    return family(protocol).column(protocol, spec_ref, reach(protocol))


def rule_text(protocol: str, spec_ref: str) -> str | None:
    """The text of the rule (1.0: the sentence) ``spec_ref`` names, if it names one whose
    specification gives a text."""
    return family(protocol).rule_text(protocol, spec_ref)


def load(protocol: str = DEFAULT_PROTOCOL) -> AnySpec:
    """The model of any known protocol, loaded once per process by its family
    (:func:`amqpfuzz.spec.amqp091.load` gives the 0-9-1 family's, typed)."""
    known(protocol)
    spec: AnySpec = family(protocol).read(protocol)
    return spec


def load_file(path: Path | str) -> AnySpec:
    """Load a user's specification file: the first family that claims its root element."""
    name = str(path)
    root = parse(name)
    for candidate in _LISTED:
        if candidate.claims(root):
            spec: AnySpec = candidate.read_file(name)
            return spec
    raise SpecError(name, line_of(root), "<amqp> has neither 'major' nor 'name': which AMQP?")


def describe(spec: AnySpec) -> Description:
    """What ``spec`` holds, as its family describes it (``amqpfuzz spec``)."""
    owner = next(f for f in _LISTED if isinstance(spec, f.model))
    return owner.describe(spec)
