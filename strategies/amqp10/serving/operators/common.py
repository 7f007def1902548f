"""What the server-side 1.0 operators share: how one is registered (:func:`serving`: its
:class:`~..script.Point` among :data:`POINTS`), :class:`NotApplicable`, and the frames a build
function sends (the performative struck, its payload, raw bytes as a frame)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from amqpfuzz.spec.amqp10.codec import Composite, UInt, raw

from ....operator import Built, Operator, registrar
from ....source import Source
from ...context import CODES
from ...wire import Wire
from ..script import Point, Strike

__all__ = [
    "FRAMING",
    "POINTS",
    "NotApplicable",
    "framed",
    "payload_of",
    "sending",
    "serving",
    "session_flow",
    "struck",
]

POINTS: dict[str, Point] = {}
FRAMING = ("framing-error",)

Build = Callable[[Source, Strike], Built]


class NotApplicable(Exception):
    """What the connection came to leaves the operator nothing to break (says why)."""


def serving(into: list[Operator]) -> Callable[..., Callable[[Build], Build]]:
    """The decorator that registers a group's server-side operators into ``into``."""
    register = registrar(into, CODES, scoped=True)

    def server(
        point: Point,
        name: str,
        description: str,
        breaks: str,
        codes: Sequence[str],
        scope: str,
        level: str,
        **options: Any,
    ) -> Callable[[Build], Build]:
        """Registers a server-side operator striking at ``point``."""
        POINTS[name] = point
        return register(name, description, breaks, codes, scope, level, **options)

    return server


def sending(strike: Strike, data: bytes, label: str) -> Built:
    return Built((Wire(data, label, strike.channel),), label.split(" ", 1)[0], label)


def struck(strike: Strike) -> tuple[Composite, bytes]:
    """The performative struck, encoded, with its payload (a transfer's message)."""
    body = strike.bodies[0]
    assert body is not None
    return body, strike.codec.encoder.composite(body)


def payload_of(strike: Strike) -> bytes:
    return strike.payload


def framed(strike: Strike, body: bytes, note: str) -> Built:
    return sending(strike, raw.frame(body, channel=strike.channel), note)


def session_flow(strike: Strike) -> Composite:
    return strike.codec.composite(
        "flow", next_incoming_id=UInt(0), incoming_window=UInt(2048),
        next_outgoing_id=UInt(strike.next_delivery), outgoing_window=UInt(2048),
    )  # fmt: skip
