"""Operators on the frame around the payload: its end octet, size, type, heartbeats.

Each answers with ``frame-error`` (a hard error): the spec's framing section requires it."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import ContentHeader

from ...cases import Placement
from ...operator import Built, Operator, registrar
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


@operator(
    "unknown-frame-type",
    "frame type",
    "sends a frame type the specification does not define",
    ("frame-error",),
    "frame",
)
def unknown_frame_type(src: Source, ctx: Context) -> Built:
    codec = ctx.codec
    known = {codec.frame_method, codec.frame_header, codec.frame_body, codec.frame_heartbeat}
    frame, wire, tail = base_frame(src, ctx)
    kind = int(src.pick(bytes_except(frozenset(known))))
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
    ("unexpected-frame",),
    "frame",
)
def heartbeat_channel(src: Source, ctx: Context) -> Built:
    step = WireFrame(ctx.codec.frame_heartbeat, CASE_CHANNEL, b"", "heartbeat(ch=N)")
    return Built((step,), "heartbeat", "heartbeat on a channel")
