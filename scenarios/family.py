"""What a protocol family gives the scenarios layer: one object per family (``FAMILY`` in its
package), typed here.

A family owns the folders of its protocols' files; it says what a file's head must be (its
``spec_ref`` names a rule of the specification, ``rule`` and ``scenario`` quote it,
``on_failure`` is one of its codes: :meth:`ScenarioFamily.head`), and it checks the file's
steps in its own step language (:meth:`ScenarioFamily.checker`). The loader (:mod:`.load`)
does the rest, the same for every family, and never names a protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

from .checking import Checker
from .language import Language

__all__ = ["FileView", "Head", "ScenarioFamily"]


@dataclass(frozen=True, slots=True)
class Head:
    """What a family read in a file's head: its rule's ref, the code a violation must get
    (if the specification names one), the quoted scenario text, and whether the file is a
    probe (it records a behaviour near a rule rather than a scenario of the specification)."""

    spec_ref: str
    on_failure: str | None
    scenario: str | None
    probe: bool


class FileView(Protocol):
    """One scenario file as the loader reads it, for a family's checks of its head."""

    @property
    def path(self) -> Path: ...

    @property
    def doc(self) -> Any: ...

    def fail(self, key: str | None, message: str) -> NoReturn:
        """Raise the file's ScenarioError at ``key``'s line."""

    def text(self, key: str, empty: bool = False) -> str:
        """``key``'s text, stripped (a ScenarioError unless a string, non-empty unless
        ``empty``)."""


class ScenarioFamily(Protocol):
    """A family's scenario files: the protocols (folders) it owns, its step language, the
    checks of a file's head and of its steps."""

    @property
    def name(self) -> str:
        """The family's name (``amqp091``), the key of every layer's table."""

    @property
    def protocols(self) -> tuple[str, ...]:
        """The protocols whose folders of files the family owns."""

    @property
    def language(self) -> Language:
        """Its step language."""

    def head(self, file: FileView, protocol: str) -> Head:
        """The file's head, checked against the specification."""

    def checker(self, path: Path, protocol: str) -> Checker:
        """A checker of one file's steps."""
