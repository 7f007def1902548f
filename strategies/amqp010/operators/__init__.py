"""The 0-10 mutation operators, each defined beside its build function: the frame header
(:mod:`.framing`), frames into segments into commands (:mod:`.assembly`), a command's bytes
(:mod:`.encoding`) and the order of sessions and the connection (:mod:`.state`). The
catalogue's order is the order Hypothesis shrinks towards."""

from __future__ import annotations

import functools

from amqpfuzz.spec.amqp010.model import Spec010

from ...operator import Operator
from . import assembly, encoding, framing, state  # noqa: F401 - they register their operators
from .common import OPERATORS

__all__ = ["LEVELS", "catalogue"]

LEVELS = ("frame", "assembly", "encoding", "state")


@functools.cache
def catalogue(spec: Spec010) -> tuple[Operator, ...]:
    """The operators that apply to ``spec`` (every code they name is defined)."""
    ordered = sorted(OPERATORS, key=lambda op: LEVELS.index(op.level))
    return tuple(op for op in ordered if op.applies_to(spec))
