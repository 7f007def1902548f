"""What the server-side 0-8/0-9/0-9-1 operators share: how one is registered (:func:`serving`:
its :class:`~..script.Point` among :data:`POINTS`, and the reaction it requires of the client:
:class:`ServingOperator`), and what a build function reads of its strike (the method struck and
its content, a channel not open, a table type code the grammar and the dialect leave undefined,
the frame types the specification defines, a field's plain value).

A script's reaction is fixed before the peer strikes (the case's frames depend on what the
client asks), so where the specification names another code or another close for some of an
operator's cases, the operator carries it for all of them: ``also`` (codes it accepts where the
spec defines them) and ``tolerate`` (closes it also allows, each code closing its own scope)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, MethodFrame
from amqpfuzz.spec.amqp091.codec.tables import defined_codes

from ....cases import Reaction
from ....operator import Built, Operator, Special
from ...context import CODES
from ...operators.common import bytes_except
from ...source import Source
from ...wire import WireFrame, wire_frame
from ..script import BEFORE_OPEN, Point, Strike

__all__ = [
    "POINTS",
    "ServingOperator",
    "closed_channel",
    "plain",
    "serving",
    "struck",
    "struck_content",
    "unknown_type",
    "wired",
]

POINTS: dict[str, Point] = {}

Build = Callable[[Source, Strike], Built]


@dataclass(frozen=True)
class ServingOperator(Operator):
    """A server-side operator: ``also``, codes it accepts beside its own where the spec defines
    them (0-8 and 0-9 have no unexpected-frame); ``tolerate``, codes whose closes (each of its
    own scope) it also allows beside the reaction it requires."""

    also: tuple[str, ...] = ()
    tolerate: tuple[str, ...] = ()

    def reaction(self, spec: Any, names: tuple[str, ...] = ()) -> Reaction:
        return _reaction(self, spec, names)


@functools.cache
def _reaction(op: ServingOperator, spec: Spec, names: tuple[str, ...]) -> Reaction:
    defined = CODES.names(spec)
    extra = tuple(n for n in op.also if n in defined)
    if extra and not names:
        names = (*op.names_in(spec), *extra)
    reaction = Operator.reaction(op, spec, names)
    tolerated = tuple(CODES.code(spec, n) for n in op.tolerate if n in defined)
    if not tolerated:
        return reaction
    return replace(reaction, tolerated=(*reaction.tolerated, *tolerated))


def serving(into: list[Operator]) -> Callable[..., Callable[[Build], Build]]:
    """The decorator that registers a group's server-side operators into ``into``: an operator
    striking before connection.open (:data:`~..script.BEFORE_OPEN`) requires the socket closed
    without any further data (0-9-1 section 2.2.4), its codes only saying what is wrong."""

    def server(
        point: Point,
        name: str,
        breaks: str,
        how: str,
        codes: Sequence[str],
        level: str,
        **options: Any,
    ) -> Callable[[Build], Build]:
        """Registers a server-side operator striking at ``point``."""
        if point in BEFORE_OPEN:
            options.setdefault("scope", Special.SILENT)

        def register(build: Build) -> Build:
            POINTS[name] = point
            into.append(
                ServingOperator(name, breaks, how, tuple(codes), level, build, CODES, **options)
            )
            return build

        return register

    return server


def wired(strike: Strike, frame: Any) -> WireFrame:
    return wire_frame(strike.codec, frame)


def struck(strike: Strike) -> tuple[MethodFrame, tuple[WireFrame, ...]]:
    """The method frame struck, and the rest of what went with it (its content)."""
    method = strike.frames[0]
    assert isinstance(method, MethodFrame)
    return method, tuple(wired(strike, f) for f in strike.frames[1:])


def struck_content(strike: Strike) -> tuple[MethodFrame, ContentHeader, tuple[ContentBody, ...]]:
    method, *rest = strike.frames
    assert isinstance(method, MethodFrame) and isinstance(rest[0], ContentHeader)
    return method, rest[0], tuple(f for f in rest[1:] if isinstance(f, ContentBody))


def closed_channel(strike: Strike, src: Source) -> int:
    free = [n for n in range(1, 64) if n not in strike.channels]
    return free[src.below(len(free))]


def unknown_type(strike: Strike, src: Source) -> bytes:
    """A field-table type code neither the grammar of the protocol nor the dialect defines: one
    the grammar defines (0-9-1's 'U', 'L') or the dialect reads (RabbitMQ's 'x', 's' as a short
    integer, which the clients follow) is a valid entry, whatever the other reading says."""
    defined = defined_codes(strike.spec.protocol, strike.codec.dialect)
    return bytes((src.pick(bytes_except(frozenset(ord(c) for c in defined))),))


def plain(fld: Any) -> Any:
    return {"bit": False, "table": {}, "shortstr": "", "longstr": b""}.get(fld.type, 0)
