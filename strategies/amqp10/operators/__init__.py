"""The 1.0 mutation operators, each defined beside its build function: the frame header
(:mod:`.framing`), the body's encoding (:mod:`.encoding`), session and link rules
(:mod:`.semantics`) and the connection's order (:mod:`.state`). The catalogue's order is the
order Hypothesis shrinks towards."""

from __future__ import annotations

import functools

from amqpfuzz.spec.amqp10 import Spec100

from ...operator import Operator
from . import encoding, framing, semantics, state  # noqa: F401 - they register their operators
from .common import OPERATORS

__all__ = ["LEVELS", "catalogue"]

LEVELS = ("frame", "encoding", "semantic", "state")


@functools.cache
def catalogue(spec: Spec100) -> tuple[Operator, ...]:
    """The operators that apply to ``spec`` (every error condition they name is defined)."""
    ordered = sorted(OPERATORS, key=lambda op: LEVELS.index(op.level))
    return tuple(op for op in ordered if op.applies_to(spec))
