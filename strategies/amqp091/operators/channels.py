"""Operators on channels and method order: closed channels, channel 0, a second open.

Their codes are the ones :data:`~amqpfuzz.spec.amqp091.state.CHANNEL_TRANSITIONS` gives for the
same situation; a connection method on a channel other than 0 is the one section 4.2.3 names
("MUST signal a connection exception with reply code 503 (command invalid)")."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import MethodFrame

from ...cases import Placement
from ...operator import Built, Operator, registrar
from ..context import CODES, Context
from ..source import Source
from ..wire import CASE_CHANNEL

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)


@operator(
    "closed-channel",
    "channel state",
    "sends a method on a channel that is not open",
    ("channel-error",),
    "sequence",
)
def closed_channel(src: Source, ctx: Context) -> Built:
    frame = ctx.neutral(src, ctx.channel_methods)
    return Built(
        (ctx.wire(frame), *ctx.completion(frame)),
        frame.name,
        "on a channel that is not open",
        placement=Placement.CLOSED,
        frames=(frame,),
    )


@operator(
    "before-open",
    "method order",
    "sends a method before channel.open",
    ("channel-error",),
    "sequence",
)
def before_open(src: Source, ctx: Context) -> Built:
    first = ctx.neutral(src, ctx.channel_methods)
    opener = ctx.codec.method("channel.open", CASE_CHANNEL)
    note = f"{first.name} before channel.open"
    steps = (ctx.wire(first), *ctx.completion(first), ctx.wire(opener))
    return Built(steps, first.name, note, placement=Placement.CLOSED, frames=(first, opener))


@operator(
    "channel-reopen",
    "method order",
    "opens a channel that is already open",
    ("channel-error",),
    "sequence",
    rule="channel.open/state",
)
def reopen(src: Source, ctx: Context) -> Built:
    opener = ctx.codec.method("channel.open", CASE_CHANNEL)
    return Built(
        (ctx.wire(opener),),
        "channel.open/state",
        "channel.open on an open channel",
        frames=(opener,),
    )


@operator(
    "connection-on-channel",
    "channel number",
    "sends a connection method on a channel other than 0",
    ("command-invalid",),  # section 4.2.3 names it
    "sequence",
)
def connection_on_channel(src: Source, ctx: Context) -> Built:
    frame = ctx.neutral(src, ctx.connection_methods)
    return Built((ctx.wire(frame),), frame.name, "connection method on a channel", frames=(frame,))


@operator(
    "channel-zero",
    "channel number",
    "sends a channel-level method on channel 0",
    ("command-invalid", "channel-error"),
    "sequence",
)
def channel_zero(src: Source, ctx: Context) -> Built:
    neutral = ctx.neutral(src, ctx.channel_methods)
    frame = MethodFrame(0, neutral.method, neutral.values)
    return Built(
        (ctx.wire(frame),),
        frame.name,
        "channel method on channel 0",
        placement=Placement.NONE,
        frames=(frame,),
    )


@operator(
    "server-method",
    "method direction",
    "sends a method only the server sends (its chassis names the client alone)",
    ("command-invalid", "not-implemented", "channel-error"),
    "sequence",
)
def server_method(src: Source, ctx: Context) -> Built:
    """A method the specification says only a server sends, with valid arguments: the server
    must decode it (the frame is well formed) and refuse the command. The connection's go on
    channel 0, the others on the case's channel; one that carries content is followed by an
    empty content header."""
    frame = ctx.frame_of(src, ctx.server_methods)
    if frame.method.class_name == "connection":
        frame = MethodFrame(0, frame.method, frame.values)
        return Built(
            (ctx.wire(frame),), frame.name, "a server's method, from the client",
            placement=Placement.NONE, frames=(frame,),
        )  # fmt: skip
    steps = (ctx.wire(frame), *ctx.completion(frame))
    return Built(steps, frame.name, "a server's method, from the client", frames=(frame,))
