"""Operators on the frame header (transport, 2.3 Framing): its size, data offset and type, and
frames larger than the peer takes."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import MIN_MAX_FRAME_SIZE, Symbol, raw

from ...source import Source
from ..operator import Built, Context
from .common import operator, session_frame

__all__: list[str] = []


def _body(src: Source, ctx: Context) -> tuple[str, bytes]:
    frame = session_frame(src, ctx)
    return frame.name, ctx.codec.encoder.composite(frame)


@operator(
    "frame-size-small",
    "SIZE under 8 (transport 2.3.1: the frame header alone is 8 octets)",
    "sets the frame's SIZE field to a value from 0 to 7",
    ("framing-error",),
    "connection",
    "frame",
)
def frame_size_small(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    size = src.below(8)
    wire = ctx.raw(raw.frame(body, size=size), f"{name} with SIZE {size}")
    return Built((wire,), name, f"SIZE {size}")


@operator(
    "doff-small",
    "DOFF under 2 (transport 2.3.1: a data offset below 2 words is malformed)",
    "sets the frame's DOFF to 0 or 1",
    ("framing-error",),
    "connection",
    "frame",
)
def doff_small(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    doff = src.below(2)
    wire = ctx.raw(raw.frame(body, doff=doff, extended=b""), f"{name} with DOFF {doff}")
    return Built((wire,), name, f"DOFF {doff}")


@operator(
    "doff-past-end",
    "DOFF past the frame's end (transport 2.3.1: the body starts at DOFF * 4)",
    "sets DOFF so that the body would start after the frame's last octet",
    ("framing-error",),
    "connection",
    "frame",
)
def doff_past_end(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    least = (8 + len(body)) // 4 + 1
    doff = min(255, least + src.below(256 - least)) if least < 255 else 255
    wire = ctx.raw(raw.frame(body, doff=doff, extended=b""), f"{name} with DOFF {doff}")
    return Built((wire,), name, f"DOFF {doff} in {8 + len(body)} octets")


@operator(
    "size-short",
    "SIZE shorter than the frame (transport 2.3.1): the rest is read as the next frame",
    "sets SIZE to less than the frame's length (but at least 8), the rest following it",
    ("framing-error", "decode-error"),
    "connection",
    "frame",
)
def size_short(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    size = 8 + src.below(len(body))
    wire = ctx.raw(raw.frame(body, size=size), f"{name} with SIZE {size} of {8 + len(body)}")
    return Built((wire,), name, f"SIZE {size} of {8 + len(body)}")


@operator(
    "unknown-frame-type",
    "a frame TYPE other than AMQP (0x00) and SASL (0x01) (transport 2.3.1)",
    "sets the frame's TYPE octet to a code the specification does not define",
    ("framing-error",),
    "connection",
    "frame",
)
def unknown_frame_type(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    kind = 2 + src.below(254)
    wire = ctx.raw(raw.frame(body, type=kind), f"{name} as frame type 0x{kind:02x}")
    return Built((wire,), name, f"TYPE 0x{kind:02x}")


@operator(
    "frame-over-max",
    "a frame over the max-frame-size the peer announced in its open (transport 2.7.1 open: "
    "a peer MUST NOT send frames larger than its partner can handle)",
    "pads a flow's properties so that its frame is larger than the negotiated max-frame-size",
    ("framing-error",),
    "connection",
    "frame",
)
def frame_over_max(src: Source, ctx: Context) -> Built:
    over = 1 + src.below(64)
    flow = ctx.codec.composite(
        "flow", incoming_window=0, next_outgoing_id=0, outgoing_window=0, properties={}
    )
    base = len(ctx.codec.frame(flow))
    pad = max(0, ctx.max_frame_size - base - 16 + over)
    flow = ctx.codec.composite(
        "flow",
        incoming_window=0,
        next_outgoing_id=0,
        outgoing_window=0,
        properties={Symbol("pad"): b"\x00" * pad},
    )
    wire = ctx.wire(flow, f"flow of {len(ctx.codec.frame(flow))} octets")
    return Built((wire,), "flow", f"{len(wire.data) - ctx.max_frame_size} octets over the maximum")


@operator(
    "early-large-frame",
    "a frame over 512 octets (MIN-MAX-FRAME-SIZE) before the open frames are exchanged "
    "(transport 2.4.1: until then a peer MUST NOT send larger frames)",
    "sends an open whose frame is over 512 octets as the first frame",
    ("framing-error",),
    "connection",
    "frame",
)
def early_large_frame(src: Source, ctx: Context) -> Built:
    padding = "p" * (MIN_MAX_FRAME_SIZE + src.below(256))
    opened = ctx.codec.composite("open", container_id=ctx.name(src, "container"), hostname=padding)
    wire = ctx.wire(opened, f"open of {MIN_MAX_FRAME_SIZE}+ octets", channel=0)
    return Built((wire,), "open", f"open of {len(wire.data)} octets", placement="start")
