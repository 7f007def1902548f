"""Operators that send frames out of the connection's order (transport 2.4 connections; security
5.1, 5.3): a frame before open, a second open, frames after close, the AMQP layer after a failed SASL
outcome."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import Header

from ...cases import Placement
from ...operator import Built
from ...source import Source
from ..context import Context
from .common import operator

__all__: list[str] = []


@operator(
    "before-open",
    "a frame before the open frame (transport 2.4.1: each peer MUST send open before any "
    "other frame; no reaction is named: a peer may close, must stay up)",
    "sends a begin as the first frame after the protocol header, then the open",
    ("not-allowed", "illegal-state", "framing-error"),
    "connection",
    "state",
    or_reply=True,
    unnamed=True,
)
def before_open(src: Source, ctx: Context) -> Built:
    steps = (ctx.wire(ctx.begin(), channel=0), ctx.wire(ctx.open(src), channel=0))
    return Built(steps, "begin", "before open", placement=Placement.START)


@operator(
    "open-twice",
    "a second open on a connection already open (transport 2.4.1: open is sent once; no "
    "reaction is named: a peer may close, must stay up)",
    "sends open again once the connection is open",
    ("not-allowed", "illegal-state", "framing-error"),
    "connection",
    "state",
    or_reply=True,
    unnamed=True,
)
def open_twice(src: Source, ctx: Context) -> Built:
    return Built((ctx.wire(ctx.open(src), channel=0),), "open", "a second open", Placement.NONE)


@operator(
    "after-close",
    "frames after the connection's close (transport 2.4.3, 2.7.9: it is illegal to send any "
    "more frames after close; the peer answers the close with its own and need not read on)",
    "sends close, then a begin and an attach as if the connection were still open",
    (),
    "connection",
    "state",
)
def after_close(src: Source, ctx: Context) -> Built:
    close = ctx.codec.composite("close")
    steps = (
        ctx.wire(close, channel=0),
        ctx.wire(ctx.begin(), channel=1),
        ctx.wire(ctx.attach(src), channel=1),
    )
    return Built(steps, "close", "frames after close", Placement.NONE)


@operator(
    "header-after-failed-sasl",
    "the AMQP protocol header after a SASL outcome that failed (security 5.1: when a "
    "security layer terminates, before or after a secure tunnel is established, the TCP "
    "connection MUST be closed; the AMQP layer never starts)",
    "authenticates with PLAIN and wrong credentials, then sends the AMQP header and open at once",
    (),
    "socket",
    "state",
)
def header_after_failed_sasl(src: Source, ctx: Context) -> Built:
    codec = ctx.codec
    password = ctx.name(src, "wrong").encode()
    init = codec.composite(
        "sasl-init", mechanism=ctx.symbol("PLAIN"), initial_response=b"\x00amqpfuzz\x00" + password
    )
    steps = (
        ctx.raw(Header(3).encode(), "SASL protocol header", channel=0),
        ctx.wire(init, "sasl-init PLAIN with wrong credentials", channel=0),
        ctx.raw(Header(0).encode(), "AMQP protocol header", channel=0),
        ctx.wire(ctx.open(src), channel=0),
    )
    return Built(steps, "sasl-outcome", "AMQP after a failed SASL outcome", Placement.HEADER)
