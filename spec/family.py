"""What a protocol family gives the specification layer: one object per family, typed here.

Each family package (:mod:`.amqp091`, :mod:`.amqp010`, :mod:`.amqp10`) exports ``FAMILY``, an
object satisfying :class:`SpecFamily`; the registry (:mod:`.registry`) lists them. A family
that forgets a hook is a type error where the registry lists it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from lxml import etree

__all__ = ["OUTSIDE", "Description", "Reach", "SpecFamily", "Table"]

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


@dataclass(frozen=True, slots=True)
class Table:
    """A table of what a model holds, as text: its title, columns and rows; ``numeric`` names
    the columns shown right-justified."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Description:
    """What ``amqpfuzz spec`` shows of a model: its data (the JSON, counts among them) and
    the tables a family shows beside the counts."""

    data: Mapping[str, Any]
    tables: tuple[Table, ...] = field(default=())


S = TypeVar("S")


class SpecFamily(Protocol[S]):
    """A family's specification layer: its model (``S``), read from its files or a user's, and
    what the reports ask of it."""

    @property
    def name(self) -> str:
        """The family's name (``amqp091``), the key of every layer's table."""

    @property
    def title(self) -> str:
        """The family in words (``AMQP 0-8, 0-9 and 0-9-1``)."""

    @property
    def model(self) -> type[S]:
        """The class of the family's models."""

    def read(self, protocol: str) -> S:
        """The model of a protocol of the family from its bundled files, once per process."""

    def claims(self, root: etree._Element) -> bool:
        """Whether a user's XML root element is one of the family's documents."""

    def read_file(self, path: str) -> S:
        """The model of a user's file."""

    def reach(self, protocol: str) -> Reach:
        """What a client's traffic can exercise in ``protocol``."""

    def column(self, protocol: str, spec_ref: str, reach: Reach) -> str:
        """The conformance matrix's column of a record's spec_ref."""

    def rule_text(self, protocol: str, spec_ref: str) -> str | None:
        """The text of the rule (1.0: the sentence) ``spec_ref`` names, if any."""

    def describe(self, spec: S) -> Description:
        """What the model holds, for ``amqpfuzz spec``."""
