"""The catalogue of 0-8/0-9/0-9-1 mutation operators, each defined beside its build function.

An operator reads valid frames from a :class:`~..source.Source` and breaks them; it says only
*which* reply-code constants answer it, and the loaded specification gives their values and
whether they are hard errors (closing the connection) or soft ones (closing the channel). The
catalogue's order is the order Hypothesis shrinks towards: frames first, then arguments,
content, channels and rules; the operators on the connection itself (its header, login,
tuning and channel numbers, on connections of their own) came last.
"""

from __future__ import annotations

from amqpfuzz.spec.amqp091 import Spec

from ...operator import Operator
from . import arguments, channels, content, framing, handshake, rules

__all__ = ["CATALOGUE", "catalogue"]

CATALOGUE: tuple[Operator, ...] = (
    *framing.OPERATORS,
    *arguments.OPERATORS,
    *content.OPERATORS,
    *channels.OPERATORS,
    *rules.OPERATORS,
    *handshake.OPERATORS,
)


def catalogue(spec: Spec | None = None) -> tuple[Operator, ...]:
    """The operators that apply to ``spec`` (all of them when no spec is given)."""
    if spec is None:
        return CATALOGUE
    return tuple(op for op in CATALOGUE if op.applies_to(spec))
