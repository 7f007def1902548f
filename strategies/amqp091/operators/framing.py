"""Operators on the frame around the payload: its end octet, size, type, heartbeats.

What the specification requires (0-9-1 section 4.2.3, General Frame Format): a frame whose
frame-end is not 0xCE, or whose type is none of the defined types, is "a fatal protocol error":
the peer closes the connection "without sending any further data on it" (``silent``: no
connection.close; a size field that lies puts a wrong octet where the frame-end is read). An
oversized frame is a connection exception 501 frame-error (4.2.3), and so is an invalid
heartbeat frame (4.2.7); a heartbeat on a channel other than 0 is 501 by 4.2.7 and 503
command-invalid by 4.2.3 ("the channel number MUST be zero for all heartbeat frames"). Our own
decoder refuses each case with the operator's first code as the error category."""

from __future__ import annotations

import functools

from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import ContentHeader

from ...cases import Placement
from ...operator import Built, Operator, Special, registrar
from ..context import CODES, Context
from ..source import Source
from ..wire import CASE_CHANNEL, WireFrame
from .common import (
    base_frame,
    bytes_except,
    publish_frame,
    with_end,
    with_larger_size,
    with_setup,
    with_smaller_size,
)

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)


@operator(
    "frame-end",
    "frame-end octet",
    "replaces the 0xCE that ends a frame",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def frame_end(src: Source, ctx: Context) -> Built:
    frame, wire, tail = base_frame(src, ctx)
    broken, end = with_end(src, wire)
    return Built(
        with_setup(ctx, frame, broken, *tail), frame.name, f"frame-end 0x{end:02x}", frames=(frame,)
    )


@operator(
    "size-larger",
    "frame size field",
    "declares more payload than follows",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def size_larger(src: Source, ctx: Context) -> Built:
    frame, wire, tail = base_frame(src, ctx)
    broken, extra = with_larger_size(src, wire)
    return Built(
        with_setup(ctx, frame, broken, *tail),
        frame.name,
        f"size field {extra} larger",
        frames=(frame,),
    )


@operator(
    "size-smaller",
    "frame size field",
    "declares less payload than follows",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def size_smaller(src: Source, ctx: Context) -> Built:
    frame, wire, tail = base_frame(src, ctx)
    broken, cut = with_smaller_size(src, wire)
    return Built(
        with_setup(ctx, frame, broken, *tail),
        frame.name,
        f"size field {cut} smaller",
        frames=(frame,),
    )


# Section 4.2.3 of the 0-9-1 document lists "Type = 4, HEARTBEAT"; its grammar and XML say 8
# (RabbitMQ's errata, section 29): a frame of type 4 is defined by one reading of the text.
_PRINTED_HEARTBEAT = 4


@functools.cache
def frame_types(spec: Spec) -> frozenset[int]:
    """Every frame type the specification defines: its ``frame-*`` constants that are neither
    an error, a size nor the frame-end octet (0-8's and 0-9's out-of-band and trace frames,
    4 to 7, among them), and the 0-9-1 text's type 4."""
    end = spec.constant("frame-end").value
    types = {
        c.value
        for c in spec.constants
        if c.name.startswith("frame-") and c.error_class is None and c.value < 256
    }
    return frozenset(types - {end} | {_PRINTED_HEARTBEAT})


@operator(
    "unknown-frame-type",
    "frame type",
    "sends a frame type the specification does not define",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def unknown_frame_type(src: Source, ctx: Context) -> Built:
    frame, wire, tail = base_frame(src, ctx)
    kind = int(src.pick(bytes_except(frame_types(ctx.spec))))
    broken = wire._replace(frame_type=kind, note=f"as frame type {kind}")
    return Built(
        with_setup(ctx, frame, broken, *tail), frame.name, f"frame type {kind}", frames=(frame,)
    )


@operator(
    "above-frame-max",
    "negotiated frame-max",
    "sends a body frame larger than frame-max",
    ("frame-error",),
    "frame",
)
def above_frame_max(src: Source, ctx: Context) -> Built:
    publish = publish_frame(src, ctx)
    over = src.between(1, 64)
    body = bytes(ctx.frame_max - 8 + over)
    header = ContentHeader(CASE_CHANNEL, publish.method.class_index, len(body), {})
    big = WireFrame(
        ctx.codec.frame_body,
        CASE_CHANNEL,
        body,
        f"body(ch=N, {len(body)} bytes: a frame of {len(body) + 8} > frame-max {ctx.frame_max})",
    )
    steps = (ctx.wire(publish), ctx.wire(header), big)
    note = f"body frame {over} bytes above frame-max"
    return Built(steps, publish.name, note, frames=(publish, header))


@operator(
    "heartbeat-payload",
    "heartbeat frame",
    "gives a heartbeat a payload",
    ("frame-error",),
    "frame",
)
def heartbeat_payload(src: Source, ctx: Context) -> Built:
    payload = src.take(src.between(1, 16))
    label = f"heartbeat() with a {len(payload)}-byte payload"
    step = WireFrame(ctx.codec.frame_heartbeat, 0, payload, note=label)
    return Built((step,), "heartbeat", "heartbeat with payload", placement=Placement.NONE)


@operator(
    "heartbeat-channel",
    "heartbeat frame",
    "sends a heartbeat on a channel other than 0",
    ("frame-error", "command-invalid"),
    "frame",
)
def heartbeat_channel(src: Source, ctx: Context) -> Built:
    step = WireFrame(ctx.codec.frame_heartbeat, CASE_CHANNEL, b"", "heartbeat(ch=N)")
    return Built((step,), "heartbeat", "heartbeat on a channel")
