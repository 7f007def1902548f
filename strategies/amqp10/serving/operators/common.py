"""What the server-side 1.0 operators share: how one is registered (:func:`serving`: its
:class:`~..script.Point` among :data:`POINTS`, and the reaction it requires of the client:
:class:`ServingOperator`), :class:`NotApplicable`, and the frames a build function sends (the
performative struck, its payload, raw bytes as a frame).

A script's reaction is fixed before the peer strikes, so a close the specification's text names
beside the one the operator requires (an error condition carried by another scope's close) is
the operator's for all its cases: ``tolerate``, (condition, scope) pairs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from amqpfuzz.spec import Scope
from amqpfuzz.spec.amqp10 import Spec100
from amqpfuzz.spec.amqp10.codec import Composite, UInt, raw

from ....cases import ErrorCode, Reaction
from ....operator import Built, Operator, registrar
from ....source import Source
from ...context import CODES
from ...wire import Wire
from ..script import Point, Strike

__all__ = [
    "FRAMING",
    "POINTS",
    "NotApplicable",
    "ServingOperator",
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


@dataclass(frozen=True)
class ServingOperator(Operator):
    """A server-side operator; ``tolerate``: closes it also allows, each an error condition by
    name and the scope whose close carries it."""

    tolerate: tuple[tuple[str, str], ...] = ()

    def reaction(self, spec: Any, names: tuple[str, ...] = ()) -> Reaction:
        return _reaction(self, spec, names)


@functools.cache
def _reaction(op: ServingOperator, spec: Spec100, names: tuple[str, ...]) -> Reaction:
    reaction = Operator.reaction(op, spec, names)
    tolerated = tuple(
        ErrorCode(name, CODES.code(spec, name).value, Scope(scope)) for name, scope in op.tolerate
    )
    return replace(reaction, tolerated=(*reaction.tolerated, *tolerated)) if tolerated else reaction


def serving(into: list[Operator]) -> Callable[..., Callable[[Build], Build]]:
    """The decorator that registers a group's server-side operators into ``into``."""
    registered: list[Operator] = []
    register = registrar(registered, CODES, scoped=True)

    def server(
        point: Point,
        name: str,
        description: str,
        breaks: str,
        codes: Sequence[str],
        scope: str,
        level: str,
        *,
        tolerate: tuple[tuple[str, str], ...] = (),
        **options: Any,
    ) -> Callable[[Build], Build]:
        """Registers a server-side operator striking at ``point``."""
        made = register(name, description, breaks, codes, scope, level, **options)

        def add(build: Build) -> Build:
            made(build)
            op = registered.pop()
            into.append(ServingOperator(**_fields(op), tolerate=tolerate))
            POINTS[name] = point
            return build

        return add

    return server


def _fields(op: Operator) -> dict[str, Any]:
    return {f.name: getattr(op, f.name) for f in fields(Operator)}


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
