"""What amqpfuzz plays when it is the broker: a server script, read from one blob.

A client campaign tests a client library, so the peer it talks to is ours. What that peer sends
is derived from the specification like a broker case: the methods a server sends (their
``<chassis>`` names the client), each field's value read from the script's blob by the same
generators, and the answer to each of the client's synchronous methods among the responses
its XML lists. What a script fixes in advance (:class:`Script`) is read from the blob before
the client says anything: the handshake's ``connection.start`` and ``connection.tune``, the
messages of its own it delivers once the client consumes, and the one server-side operator
(:mod:`.operators`) that breaks what it sends at one :class:`Point`, with the reaction the
specification requires of the client. What depends on the client (the names it declares, the
tags it consumes with) is filled in as it comes, from the script's ``answers`` source, in the
order the client asks: the same client, the same blob, the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp091 import Field, Method, Spec
from amqpfuzz.spec.amqp091.codec import Codec, ContentHeader, Frame, MethodFrame

from ...cases import Reaction
from ...operator import Built, Operator
from ..frames import ZERO, content_builder
from ..source import Source, field_generator

__all__ = [
    "BEFORE_OPEN",
    "SCRIPT_BLOB",
    "Delivery",
    "Point",
    "Script",
    "Strike",
    "answer_values",
    "script_builder",
]

SCRIPT_BLOB = 256  # the handshake's values, the script's messages, the operator's own bytes

# What a client needs of the handshake to log in at all, by field name: the mechanism our
# targets' credentials use and the locale the specification requires a server to support
# (connection.start/locales: "The server MUST support at least the en_US locale").
LOGIN = {"mechanisms": b"PLAIN AMQPLAIN", "locales": b"en_US"}
# What server-properties holds besides the values drawn: the fields the specification says it
# SHOULD contain (connection.start/server-properties/required-fields), and the capabilities
# table by which a broker of RabbitMQ's extension announces it (clients send none of the
# extension's methods to a broker that does not: pika refuses confirm.select).
PROPERTIES = {
    "host": "127.0.0.1",
    "product": "amqpfuzz",
    "version": "0",
    "platform": "Python",
    "copyright": "",
    "information": "a hostile broker: amqpfuzz's client campaigns",
}
CAPABILITIES = {
    "publisher_confirms": True,
    "exchange_exchange_bindings": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
}
# A heartbeat interval the client must keep (none, mostly: our peer never sends heartbeats,
# and a client that closes a connection whose peer stays silent is right to).
HEARTBEATS = (0, 0, 0, 60, 600)


class Point(StrEnum):
    """Where a server-side operator strikes."""

    START = "start"  # connection.start, the first frame the server sends
    TUNE = "tune"  # connection.tune
    REPLY = "reply"  # the answer to one of the client's synchronous methods once it is open
    DELIVER = "deliver"  # one of the script's own deliveries, once the client consumes
    AFTER = "after"  # once the client has gone quiet: frames of the server's own


# The points before the client sends connection.open: 0-9-1 section 2.2.4, "There is no
# hand-shaking for errors on connections that are not fully open. Following successful protocol
# header negotiation [...] and prior to sending or receiving Open or Open-Ok, a peer that detects
# an error MUST close the socket without sending any further data." An operator striking there
# requires that of the client, whatever code the error would carry on an open connection.
BEFORE_OPEN = frozenset({Point.START, Point.TUNE})


@dataclass(frozen=True)
class Strike:
    """What a server-side operator breaks: the valid frames the peer was about to send at its
    point (none at :attr:`Point.AFTER`), on which channel, and what the client has open."""

    spec: Spec
    codec: Codec
    frame_max: int
    frames: tuple[Frame, ...]
    channel: int  # the channel the frames go on (at AFTER: the client's first open channel)
    channels: frozenset[int]  # the channels the client has open
    consumer_tag: str = ""  # the client's consumer, where it has one
    queue: str = ""  # the queue it consumes from

    @property
    def server_methods(self) -> tuple[Method, ...]:
        """The methods only a server sends, in the XML's order."""
        return tuple(
            m for m in self.spec.methods if m.sent_by("server") and not m.sent_by("client")
        )

    @property
    def client_methods(self) -> tuple[Method, ...]:
        """The methods only a client sends: a server never does."""
        return tuple(
            m for m in self.spec.methods if m.sent_by("client") and not m.sent_by("server")
        )


@dataclass(frozen=True)
class Delivery:
    """A message of the script's own: its header's properties and its body."""

    properties: Mapping[str, Any]
    body: bytes


@dataclass(frozen=True)
class Script:
    """One connection as the hostile broker plays it (see the module's text)."""

    blob: bytes
    start: MethodFrame
    tune: MethodFrame
    deliveries: tuple[Delivery, ...]
    operator: Operator | None
    point: Point
    nth: int  # which reply strikes, at Point.REPLY (counted from the first after open-ok)
    strike: bytes  # the bytes the operator reads
    answers: bytes  # the bytes the answers to the client are read from
    expected: Reaction = field(default_factory=Reaction.reply)

    @property
    def frame_max(self) -> int:
        return int(self.tune["frame-max"])

    @property
    def label(self) -> str:
        return self.operator.name if self.operator is not None else "valid"

    def built(self, strike: Strike) -> Built:
        """The operator's broken frames at its point."""
        if self.operator is None:
            raise ValueError("a valid script strikes nowhere")
        return self.operator.build(Source(self.strike), strike)


def _fixed(spec: Spec, method: Method, fld: Field) -> Any:
    if fld.name == "version-major":
        return spec.major
    if fld.name == "version-minor":
        return spec.minor
    return LOGIN.get(fld.name)


def _start(spec: Spec, src: Source) -> MethodFrame:
    method = spec.method("connection.start")
    values = []
    for fld in method.fields:
        fixed = _fixed(spec, method, fld)
        if fixed is None:
            fixed = field_generator(fld, "rabbit")(src)
            if fld.name == "server-properties":
                extension = {"capabilities": CAPABILITIES} if _extended(spec) else {}
                fixed = {**dict(fixed), **PROPERTIES, **extension}
        values.append(fixed)
    return MethodFrame(0, method, tuple(values))


def _tune(spec: Spec, src: Source) -> MethodFrame:
    """Values a client must accept: any channel-max, a frame-max no smaller than the minimum
    the specification sets (or zero, no limit), a heartbeat it can keep."""
    method = spec.method("connection.tune")
    least = spec.constant("frame-min-size").value
    chosen = {
        "channel-max": src.pick((0, 1, 2, 2047, 65535)) if src.edge() else src.between(1, 2047),
        "frame-max": src.pick((0, least, least + 1, 131072))
        if src.edge()
        else least << src.below(6),
        "heartbeat": src.pick(HEARTBEATS),
    }
    return MethodFrame(
        0, method, tuple(chosen.get(f.name, ZERO.get(f.type, 0)) for f in method.fields)
    )


def _deliveries(spec: Spec, src: Source, frame_max: int) -> tuple[Delivery, ...]:
    build = content_builder(spec, "basic", frame_max or 131072, most=3 * (frame_max or 131072))
    out = []
    for _ in range(src.below(4)):
        frames = build(src, 1)
        header = frames[0]
        assert isinstance(header, ContentHeader)
        body = b"".join(getattr(f, "payload", b"") for f in frames[1:])
        out.append(Delivery(dict(header.properties), body))
    return tuple(out)


def script_builder(
    spec: Spec, operators: tuple[Operator, ...], points: Mapping[str, Point], valid_share: float
) -> Callable[[bytes], Script]:
    """Reads a :class:`Script` from a blob: ``valid_share`` of them break nothing; the others
    one of ``operators`` at its point (``points``: each operator's, by name), of those that
    apply to ``spec`` (0-8 and 0-9 define no unexpected-frame: the operators that require it
    have no case there); InvalidArgument if operators were given and none applies."""
    threshold = round(valid_share * 256)
    given = operators
    operators = tuple(op for op in given if op.applies_to(spec))
    if given and not operators:
        names = ", ".join(op.name for op in given)
        raise InvalidArgument(f"no operator of {names} applies to AMQP {spec.protocol}")

    def build(blob: bytes) -> Script:
        src = Source(blob)
        valid = not operators or src.byte() < threshold
        operator = None if valid else operators[src.below(len(operators))]
        nth = src.below(6)
        start = _start(spec, Source(src.take(96)))
        tune = _tune(spec, src)
        deliveries = _deliveries(spec, Source(src.take(64)), int(tune["frame-max"]))
        strike, answers = src.take(48), src.take(32)
        point = Point.AFTER if operator is None else points[operator.name]
        expected = Reaction.reply() if operator is None else operator.reaction(spec)
        return Script(
            blob, start, tune, deliveries, operator, point, nth, strike, answers, expected
        )

    return build


def answer_values(
    request: MethodFrame, response: Method, src: Source, known: Mapping[str, Any]
) -> tuple[Any, ...]:
    """The fields of ``response`` answering ``request``: a field the request has too takes its
    value (the queue declared, the consumer tag asked for) unless it is empty; ``known`` gives
    what the peer's state says (``message-count``, ``delivery-tag``, a generated name); the
    rest are read from ``src``."""
    asked = {f.name: v for f, v in zip(request.method.fields, request.values, strict=True)}
    values = []
    for fld in response.fields:
        if fld.reserved:
            values.append(ZERO.get(fld.type, 0))
        elif fld.name in known:
            values.append(known[fld.name])
        elif asked.get(fld.name) not in (None, "", b""):
            values.append(asked[fld.name])
        else:
            values.append(field_generator(fld, "rabbit")(src))
    return tuple(values)


def _extended(spec: Spec) -> bool:
    """Whether ``spec`` has RabbitMQ's extension (its confirm class)."""
    return any(c.name == "confirm" for c in spec.classes)
