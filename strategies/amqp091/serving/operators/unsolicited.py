"""Server-side 0-8/0-9/0-9-1 operators sending frames of the server's own once the client is
quiet: heartbeats on a channel or with a payload, a reply nobody asked for."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import raw

from ....operator import Built, Operator
from ...source import Source
from ...wire import WireFrame
from ..script import Point, Strike
from .common import plain, serving

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


@server(
    Point.AFTER,
    "heartbeat-channel",
    "heartbeat",
    "sends a heartbeat on a channel other than zero",
    # 4.2.7: "Heartbeat frames MUST have a channel number of zero. A peer that receives an
    # invalid heartbeat frame MUST raise a connection exception with reply code 501"; 4.2.3: a
    # non-zero channel on a heartbeat frame, 503 command-invalid. Neither names 505.
    ("frame-error", "command-invalid"),
    "frame",
)
def heartbeat_channel(src: Source, strike: Strike) -> Built:
    channel = strike.channel or 1
    step = WireFrame(
        strike.codec.frame_heartbeat, channel, b"", note=f"heartbeat on channel {channel}"
    )
    return Built((step,), "heartbeat", f"heartbeat on channel {channel}")


@server(
    Point.AFTER,
    "heartbeat-payload",
    "heartbeat",
    "sends a heartbeat with a payload",
    ("frame-error",),
    "frame",
)
def heartbeat_payload(src: Source, strike: Strike) -> Built:
    payload = src.take(src.between(1, 64))
    step = WireFrame(
        strike.codec.frame_heartbeat, 0, payload, note=f"heartbeat with {len(payload)} octets"
    )
    return Built((step,), "heartbeat", f"heartbeat with a {len(payload)}-octet payload")


@server(
    Point.AFTER,
    "unsolicited-reply",
    "method order",
    "answers a synchronous method the client never sent",
    ("command-invalid", "channel-error"),
    "sequence",
    also=("unexpected-frame",),  # where the spec defines it (0-8 and 0-9 do not)
)
def unsolicited_reply(src: Source, strike: Strike) -> Built:
    candidates = tuple(
        m
        for m in strike.server_methods
        if not m.responses and not m.content and m.class_name not in ("connection", "channel")
    )
    chosen = candidates[src.below(len(candidates))]
    values = tuple(plain(f) for f in chosen.fields)
    payload = raw.method_payload(chosen.class_index, chosen.index, raw.arguments(chosen, values))
    step = WireFrame(
        strike.codec.frame_method,
        strike.channel or 1,
        payload,
        note=f"{chosen.full_name} nobody asked for",
    )
    return Built((step,), chosen.full_name, f"{chosen.full_name} unasked")
