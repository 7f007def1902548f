"""What amqpfuzz plays when it is the 1.0 peer a client connects to: a server script, read from
one blob.

1.0 is symmetric, so what the peer sends is what any container sends, derived from the model:
its ``open`` (a max-frame-size, channel-max and idle time-out a client must accept), the
answers to the client's ``begin`` and ``attach`` (the other role of each link, the terminus the
client asked for), the credit it grants a client's sender, dispositions settling what the client
sends, and deliveries of its own to a client's receiver: messages with every section the
messaging XML defines, drawn by the broker campaigns' value generators, each carrying a
message-id of its own (how the integrity oracle knows what was validly sent). One server-side
operator (:mod:`.operators`) breaks what the peer sends at one :class:`Point`, with the
condition and scope the specification requires of the client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from amqpfuzz.spec.amqp10 import Spec100
from amqpfuzz.spec.amqp10.codec import Codec, Composite, Described, UInt

from ...cases import Reaction
from ...operator import Built, Operator
from ...source import Source
from ..values import Values

__all__ = ["SCRIPT_BLOB", "Delivery", "Point", "Script", "Strike", "script_builder"]

SCRIPT_BLOB = 256  # the open's values, the script's messages, the operator's own bytes
# the sections a delivery of the script's own may carry, the body one of the last three
SECTIONS = ("header", "message-annotations", "properties", "application-properties", "footer")
BODIES = ("data", "amqp-value", "amqp-sequence")


class Point(StrEnum):
    """Where a server-side operator strikes."""

    SASL = "sasl"  # the SASL outcome
    HEADER = "header"  # the peer's AMQP protocol header, answering the client's
    OPEN = "open"  # the peer's open
    BEGIN = "begin"  # the answer to the client's begin
    ATTACH = "attach"  # the answer to one of the client's attaches
    DELIVER = "deliver"  # a delivery of the script's own, once the client grants credit
    AFTER = "after"  # once the client is quiet: frames of the peer's own


@dataclass(frozen=True)
class Strike:
    """What a server-side operator breaks: the valid frames the peer was about to send at its
    point (encoded, and their performatives), and what the connection has come to."""

    spec: Spec100
    codec: Codec
    frames: tuple[bytes, ...]
    bodies: tuple[Composite | None, ...]
    channel: int  # the peer's session channel (0 before begin)
    max_frame_size: int  # the client's, from its open (512 before it)
    channel_max: int  # the client's
    handle_max: int  # the client's, from its begin
    receiving: int | None  # the peer's handle of the link it sends the client messages on
    sending: int | None  # the peer's handle of the link the client sends on
    next_delivery: int  # the peer's next delivery-id
    credit: int  # the link credit the client granted the peer
    handles: frozenset[int] = frozenset()  # the peer's handles in use
    payload: bytes = b""  # at Point.DELIVER: the message the transfers carry


@dataclass(frozen=True)
class Delivery:
    """A message of the script's own: its sections, its message-id, and whether the peer
    sends it settled."""

    sections: tuple[Any, ...]
    message_id: str
    settled: bool


@dataclass(frozen=True)
class Script:
    """One connection as the hostile peer plays it (see the module's text)."""

    blob: bytes
    open_fields: Mapping[str, Any]
    deliveries: tuple[Delivery, ...]
    operator: Operator | None
    point: Point
    nth: int  # which attach answer or delivery strikes (0: the first)
    strike: bytes  # the bytes the operator reads
    expected: Reaction = field(default_factory=Reaction.reply)
    begin_fields: Mapping[str, Any] = field(default_factory=dict)  # the peer's begin's, if given

    @property
    def label(self) -> str:
        return self.operator.name if self.operator is not None else "valid"

    def built(self, strike: Strike) -> Built:
        """The operator's broken frames at its point."""
        if self.operator is None:
            raise ValueError("a valid script strikes nowhere")
        return self.operator.build(Source(self.strike), strike)


def _open(src: Source) -> dict[str, Any]:
    """Values a client must accept: a max-frame-size no smaller than 512 (MIN-MAX-FRAME-SIZE),
    any channel-max, no idle time-out or one it can keep."""
    frame = src.pick((512, 4096, 65536, 0xFFFFFFFF)) if src.edge() else 512 << src.below(8)
    return {
        "container-id": f"amqpfuzz-{src.take(4).hex()}",
        "max-frame-size": UInt(frame),
        "channel-max": src.pick((0, 1, 255, 65535)) if src.edge() else src.between(1, 2047),
        "idle-time-out": src.pick((None, None, None, UInt(600_000))),
    }


def _deliveries(spec: Spec100, values: Values, src: Source) -> tuple[Delivery, ...]:
    known = {t.name for t in spec.sections}
    gens = {
        name: values.of(name) if name in values.types.composites else values.section(name)
        for name in SECTIONS
        if name in known
    }
    out = []
    for number in range(src.below(4)):
        marker = f"amqpfuzz-d{number}-{src.take(4).hex()}"
        found: list[Any] = []
        for name in gens:  # each section present about half the time, properties always
            if name == "properties":
                drawn = gens[name](src) if src.byte() & 1 else Composite("properties", {})
                found.append(Composite("properties", {**drawn.fields, "message-id": marker}))
            elif name != "footer" and src.byte() & 1:
                found.append(gens[name](src))
        found.append(_body(values, src))
        if "footer" in gens and src.byte() & 3 == 0:
            found.append(gens["footer"](src))
        out.append(Delivery(tuple(found), marker, bool(src.byte() & 1)))
    return tuple(out)


def _body(values: Values, src: Source) -> Described:
    kind = src.pick(BODIES)
    if kind == "data":
        return Described("data", src.take(src.below(64)))
    if kind == "amqp-value" and src.byte() & 1:
        return Described("amqp-value", f"amqpfuzz {src.take(4).hex()}")
    found: Described = values.section(kind)(src)
    return found


def script_builder(
    spec: Spec100,
    codec: Codec,
    operators: tuple[Operator, ...],
    points: Mapping[str, Point],
    valid_share: float,
) -> Callable[[bytes], Script]:
    """Reads a :class:`Script` from a blob: ``valid_share`` of them break nothing; the others
    one of ``operators`` at its point (``points``: each operator's, by name)."""
    threshold = round(valid_share * 256)
    values = Values(codec)

    def build(blob: bytes) -> Script:
        src = Source(blob)
        valid = not operators or src.byte() < threshold
        operator = None if valid else operators[src.below(len(operators))]
        nth = src.below(2)
        opened = _open(Source(src.take(16)))
        deliveries = _deliveries(spec, values, Source(src.take(128)))
        strike = src.take(48)
        point = Point.AFTER if operator is None else points[operator.name]
        expected = Reaction.reply() if operator is None else operator.reaction(spec)
        return Script(blob, opened, deliveries, operator, point, nth, strike, expected)

    return build
