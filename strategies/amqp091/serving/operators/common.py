"""What the server-side 0-8/0-9/0-9-1 operators share: how one is registered (:func:`serving`:
its :class:`~..script.Point` among :data:`POINTS`) and what a build function reads of its
strike (the method struck and its content, a channel not open, a table type code the dialect
does not define, a field's plain value)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, MethodFrame
from amqpfuzz.spec.amqp091.codec.tables import DIALECTS

from ....operator import Built, Operator, registrar
from ...context import CODES
from ...operators.common import bytes_except
from ...source import Source
from ...wire import WireFrame, wire_frame
from ..script import Point, Strike

__all__ = [
    "POINTS",
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


def serving(into: list[Operator]) -> Callable[..., Callable[[Build], Build]]:
    """The decorator that registers a group's server-side operators into ``into``."""
    register = registrar(into, CODES)

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
        POINTS[name] = point
        return register(name, breaks, how, codes, level, **options)

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
    known = frozenset(ord(c) for c in DIALECTS[strike.codec.dialect])
    return bytes((src.pick(bytes_except(known)),))


def plain(fld: Any) -> Any:
    return {"bit": False, "table": {}, "shortstr": "", "longstr": b""}.get(fld.type, 0)
