"""The protocols amqpfuzz knows, as data: name, family, the XML files, a description.

A *family* is a set of protocol versions that share one model and one wire format: ``amqp091``
(0-8, 0-9, 0-9-1 and RabbitMQ's extensions of it), ``amqp010`` (0-10) and ``amqp10`` (1.0).
Every layer keeps a package per family under the family's name (``amqpfuzz.spec.amqp091``,
``amqpfuzz.strategies.amqp091``, ``amqpfuzz.fuzzer.protocols.amqp091``) and finds it through
:func:`family_of`, so adding a protocol means adding its packages and a line here, not
editing the layers that use them.

A family's ``spec`` package provides ``read(protocol, paths)`` (its model from its files),
``claims(root)`` (whether a user's XML root element is one of its documents),
``read_file(path)``, ``reach(protocol)`` (what a client's traffic can exercise: a
:class:`Reach`), ``column(protocol, spec_ref, reach)`` (the conformance matrix's column of a
record's spec_ref) and ``rule_text(protocol, spec_ref)``.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from .errors import SpecError
from .xmlfile import line_of, parse

if TYPE_CHECKING:
    from .amqp010.model import Spec010
    from .amqp091.model import Spec
    from .amqp10.model import Spec100

__all__ = [
    "DATA",
    "DEFAULT_PROTOCOL",
    "FAMILIES",
    "OUTSIDE",
    "PROTOCOLS",
    "AnySpec",
    "Protocol",
    "Reach",
    "column_of",
    "family_of",
    "load",
    "load_file",
    "protocols_of",
    "reach",
    "rule_text",
]

DATA = Path(__file__).parent / "data"
DEFAULT_PROTOCOL = "0-9-1"

AnySpec: TypeAlias = "Spec | Spec010 | Spec100"


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    family: str
    files: tuple[str, ...]
    description: str

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(DATA / f for f in self.files)


# The families, in the order a user's file is offered to them (load_file).
FAMILIES: dict[str, str] = {
    "amqp10": "AMQP 1.0",
    "amqp010": "AMQP 0-10",
    "amqp091": "AMQP 0-8, 0-9 and 0-9-1",
}

PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "0-9-1",
            "amqp091",
            ("amqp0-9-1.xml",),
            "AMQP 0-9-1, full XML with docs, rules, scenarios",
        ),
        Protocol(
            "0-9-1-rabbit",
            "amqp091",
            ("amqp0-9-1-rabbit.xml",),
            "AMQP 0-9-1 with RabbitMQ's extensions (confirm, nack, exchange.bind)",
        ),
        Protocol("0-9", "amqp091", ("amqp0-9.xml",), "AMQP 0-9 (stripped XML)"),
        Protocol("0-8", "amqp091", ("amqp0-8.xml",), "AMQP 0-8 (stripped XML)"),
        Protocol("0-10", "amqp010", ("amqp0-10.xml",), "AMQP 0-10 (stripped XML)"),
        Protocol(
            "1.0",
            "amqp10",
            tuple(
                f"amqp1-0-{part}.xml"
                for part in ("types", "transport", "messaging", "security", "transactions")
            ),
            "AMQP 1.0: types, transport, messaging, security, transactions",
        ),
    )
}


def _known(protocol: str) -> Protocol:
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        known = ", ".join(PROTOCOLS)
        raise ValueError(f"unknown protocol {protocol!r}; known: {known}") from None


def family_of(protocol: str) -> str:
    """The family a protocol belongs to (``amqp091`` for ``0-9``)."""
    return _known(protocol).family


def protocols_of(family: str) -> tuple[str, ...]:
    """The protocols of a family, in this registry's order."""
    return tuple(p.name for p in PROTOCOLS.values() if p.family == family)


# The matrix's columns for what is not one of a specification's classes, in the order shown
# after them: spec_refs that name a rule of no class, programs, and what the spec never defined.
OUTSIDE = (
    "domains",
    "messaging sentences",
    "transport sentences",
    "stateful programs",
    "sasl",
    "unknown ids",
    "frames",
)


@dataclass(frozen=True, slots=True)
class Reach:
    """What a client's traffic can exercise in a protocol, named as records' spec_refs name
    them: the specification's classes (the conformance matrix's columns, in its order), the
    methods a client may send (1.0: the performatives), and the rules that those methods,
    their fields, the classes and the domains carry (1.0: the MUST sentences)."""

    classes: tuple[str, ...]
    methods: tuple[str, ...]
    rules: tuple[str, ...]


@functools.cache
def reach(protocol: str) -> Reach:
    """``protocol``'s :class:`Reach`, as its family's package derives it from the model."""
    found: Reach = _package(family_of(protocol)).reach(protocol)
    return found


def column_of(protocol: str, spec_ref: str) -> str:
    """The conformance matrix's column of a record's ``spec_ref``: its class in the
    specification, or one of the few :data:`OUTSIDE` columns (an unknown class or method id,
    a broken frame, a program, a sentence of no class)."""
    if spec_ref == "stateful" or spec_ref.startswith("stateful/"):
        return "stateful programs"
    column: str = _package(family_of(protocol)).column(protocol, spec_ref, reach(protocol))
    return column


def rule_text(protocol: str, spec_ref: str) -> str | None:
    """The text of the rule (1.0: the sentence) ``spec_ref`` names, if it names one whose
    specification gives a text."""
    text: str | None = _package(family_of(protocol)).rule_text(protocol, spec_ref)
    return text


def _package(family: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{family}")


def load(protocol: str = DEFAULT_PROTOCOL) -> AnySpec:
    """The model of any known protocol, loaded once per process by its family's package
    (:func:`amqpfuzz.spec.amqp091.load` gives the 0-9-1 family's, typed). The family keeps
    the cache, so that a model is always an instance of its family's classes as imported now."""
    entry = _known(protocol)
    spec: AnySpec = _package(entry.family).read(protocol, entry.paths)
    return spec


def load_file(path: Path | str) -> AnySpec:
    """Load a user's specification file: the first family that claims its root element."""
    name = str(path)
    root = parse(name)
    for family in FAMILIES:
        package = _package(family)
        if package.claims(root):
            spec: AnySpec = package.read_file(name)
            return spec
    raise SpecError(name, line_of(root), "<amqp> has neither 'major' nor 'name': which AMQP?")
