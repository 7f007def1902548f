"""Operators that break how frames make segments and segments make commands (0-10 part 4:
assemblies): frame flags that contradict the assembly, a control on the command track, and
header and body segments after a command that takes none (the class of input behind known
brokers' defects). Frames that cannot be assembled are a framing error; segments that assemble
into no command the specification allows are ``command-invalid`` ("the command segments could
not be decoded")."""

from __future__ import annotations

from amqpfuzz.spec.amqp010.codec import (
    FIRST_FRAME,
    FIRST_SEGMENT,
    LAST_FRAME,
    LAST_SEGMENT,
    WHOLE,
    raw,
)

from ...cases import Placement
from ...operator import Built
from ...source import Source
from ..context import Context
from .common import command, operator

__all__: list[str] = []


def _kinds(ctx: Context) -> tuple[dict[str, int], dict[str, int]]:
    return dict(ctx.codec.types.segment_types), dict(ctx.codec.types.tracks)


@operator(
    "first-frame-missing",
    "a segment's only frame without the first-frame flag: a continuation of a segment never "
    "begun (framing-error: no frame can be assembled)",
    "clears first-frame on a command's single frame",
    ("framing-error",),
    "connection",
    "assembly",
)
def first_frame_missing(src: Source, ctx: Context) -> Built:
    item = command(src, ctx)
    kinds, tracks = _kinds(ctx)
    data = raw.frame(
        ctx.command_payload(item),
        flags=FIRST_SEGMENT | LAST_SEGMENT | LAST_FRAME,
        type=kinds["command"],
        track=tracks["command"],
    )
    return Built((ctx.raw(data, f"{item.name} without first-frame"),), item.name, "continuation")


@operator(
    "segment-interrupted",
    "a new segment begun on a track whose segment has not ended: its first frame lacks "
    "last-frame and the next frame says first-frame (framing-error)",
    "sends a command's first half without last-frame, then a whole command",
    ("framing-error",),
    "connection",
    "assembly",
)
def segment_interrupted(src: Source, ctx: Context) -> Built:
    first, second = command(src, ctx), command(src, ctx)
    kinds, tracks = _kinds(ctx)
    body = ctx.command_payload(first)
    half = raw.frame(
        body[: max(1, len(body) // 2)],
        flags=FIRST_SEGMENT | LAST_SEGMENT | FIRST_FRAME,
        type=kinds["command"],
        track=tracks["command"],
    )
    whole = raw.frame(
        ctx.command_payload(second), flags=WHOLE, type=kinds["command"], track=tracks["command"]
    )
    steps = (
        ctx.raw(half, f"half of {first.name}, not its last frame"),
        ctx.raw(whole, second.name),
    )
    return Built(steps, first.name, "segment interrupted")


@operator(
    "control-on-command-track",
    "a control segment on the command track (controls travel on the control track; the "
    "frame's type and track contradict each other: framing-error)",
    "sends session.flush with the command track in its frame header",
    ("framing-error",),
    "connection",
    "assembly",
)
def control_on_command_track(src: Source, ctx: Context) -> Built:
    kinds, tracks = _kinds(ctx)
    payload = ctx.codec.encoder.control("session.flush", {"completed": True})
    data = raw.frame(payload, flags=WHOLE, type=kinds["control"], track=tracks["command"])
    return Built((ctx.raw(data, "session.flush on the command track"),), "session.flush", "")


def _segments_after(src: Source, ctx: Context, what: str) -> Built:
    item = command(src, ctx)
    kinds, tracks = _kinds(ctx)
    track = tracks["command"]
    head = raw.frame(
        ctx.command_payload(item),
        flags=FIRST_SEGMENT | FIRST_FRAME | LAST_FRAME,
        type=kinds["command"],
        track=track,
    )
    if what == "header":
        entry = ctx.values.struct("message.delivery-properties", src)
        extra = ctx.codec.encoder.header([entry])
    else:
        extra = src.take(1 + src.below(64))
    tail = raw.frame(
        extra, flags=LAST_SEGMENT | FIRST_FRAME | LAST_FRAME, type=kinds[what], track=track
    )
    steps = (
        ctx.raw(head, f"{item.name}, not its last segment"),
        ctx.raw(tail, f"a {what} segment after {item.name}"),
    )
    return Built(steps, item.name, f"{what} segment after {item.name}")


@operator(
    "header-on-non-transfer",
    "a header segment after a command that declares no segments (only message.transfer "
    "carries a header: command-invalid)",
    "sends a one-segment command without last-segment, then a header segment",
    ("command-invalid",),
    "execution",
    "assembly",
)
def header_on_non_transfer(src: Source, ctx: Context) -> Built:
    return _segments_after(src, ctx, Placement.HEADER)


@operator(
    "body-on-non-transfer",
    "a body segment after a command that declares no segments (only message.transfer "
    "carries a body: command-invalid)",
    "sends a one-segment command without last-segment, then a body segment",
    ("command-invalid",),
    "execution",
    "assembly",
)
def body_on_non_transfer(src: Source, ctx: Context) -> Built:
    return _segments_after(src, ctx, "body")
