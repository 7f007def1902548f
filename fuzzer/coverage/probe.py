"""What a measured broker gives: a :class:`Probe` instruments it and samples what its code has
covered so far (:class:`Sample`), and says what there is to cover (:class:`Layout`).

A probe is plain data (a node's name, a file's path), so that a worker process samples the same
broker as the process that started it. Sampling is cheap (tens of milliseconds): a campaign
samples after every batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from amqpfuzz.spec import AmqpfuzzError

from .plans import Plan

__all__ = ["CoverageError", "Layout", "ModuleSample", "Probe", "Sample"]


class CoverageError(AmqpfuzzError):
    """A broker whose coverage cannot be measured or read: says which and why."""


@dataclass(frozen=True, slots=True)
class ModuleSample:
    """One module's (or file's) lines covered so far, and the functions entered."""

    lines: frozenset[int] = frozenset()
    functions: frozenset[str] = frozenset()  # name/arity (Python: the qualified name)


@dataclass(frozen=True, slots=True)
class Sample:
    modules: Mapping[str, ModuleSample] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Layout:
    """What there is to cover: each module's relevant lines, and its functions with theirs."""

    relevant: Mapping[str, int] = field(default_factory=dict)
    functions: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


class Probe(Protocol):
    """One broker's coverage, measured from any process."""

    @property
    def plan(self) -> Plan: ...

    @property
    def where(self) -> str:
        """The broker as messages name it (a node, a process)."""

    def prepare(self) -> list[str]:
        """Instrument what is not instrumented yet (never again what is: loading a module
        again kills the processes running it); notes on what was done, in a few words each.
        Raises CoverageError."""

    def sample(self) -> Sample:
        """What the broker's code has covered since it was instrumented (CoverageError)."""

    def layout(self) -> Layout:
        """What there is to cover (CoverageError)."""
