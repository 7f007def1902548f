"""Operators that break the order of sessions and the connection (0-10 part 4, the session
layer; the session class's detach codes): commands and ``session.gap`` on a channel no session
is attached to (``not-attached``: "the transport is not currently attached to any session"),
commands on a session before any ``command-point`` (``unknown-ids``: "command data was
received prior to any use of the command-point control"), a second session attached to a
channel that has one (``transport-busy``), and a protocol header of another version (the peer
answers with the header it speaks and closes the socket)."""

from __future__ import annotations

from amqpfuzz.spec.amqp010.codec import raw

from ...cases import Placement
from ...operator import Built
from ...source import Source
from ..context import Context
from .common import command, operator

__all__: list[str] = []


@operator(
    "command-before-attach",
    "a command on a channel no session is attached to (session.detached with not-attached)",
    "sends a valid command on a channel where nothing was attached",
    ("not-attached",),
    "session",
    "state",
)
def command_before_attach(src: Source, ctx: Context) -> Built:
    item = command(src, ctx)
    return Built((ctx.wire(item),), item.name, "no session attached", Placement.FRESH)


@operator(
    "gap-before-attach",
    "session.gap on a channel no session is attached to (not-attached)",
    "sends session.gap of a drawn set of commands on a channel where nothing was attached",
    ("not-attached",),
    "session",
    "state",
)
def gap_before_attach(src: Source, ctx: Context) -> Built:
    lower = src.uint(16)
    gap = ctx.control("session.gap", commands=[(lower, lower + src.below(16))])
    return Built((gap,), "session.gap", "no session attached", Placement.FRESH)


@operator(
    "command-before-command-point",
    "a command on a session attached but given no command-point (session.detached with "
    "unknown-ids)",
    "attaches a session of its own, then sends a command without session.command-point",
    ("unknown-ids",),
    "session",
    "state",
)
def command_before_command_point(src: Source, ctx: Context) -> Built:
    name = ctx.name(src, "session").encode()
    attach = ctx.control("session.attach", name=name)
    item = command(src, ctx)
    return Built((attach, ctx.wire(item)), item.name, "no command-point", Placement.FRESH)


@operator(
    "attach-on-attached",
    "session.attach of another session on a channel that has one attached "
    "(session.detached with transport-busy: the transport is attached to another session)",
    "sends session.attach with a new name on the case's session's channel",
    ("transport-busy",),
    "session",
    "state",
)
def attach_on_attached(src: Source, ctx: Context) -> Built:
    name = ctx.name(src, "session").encode()
    return Built((ctx.control("session.attach", name=name),), "session.attach", "busy channel")


@operator(
    "protocol-header-wrong",
    "a protocol header of another version or class (the peer answers with the header of the "
    "version it speaks and closes the socket)",
    "sends AMQP with class, instance, major or minor changed",
    (),
    "socket",
    "state",
)
def protocol_header_wrong(src: Source, ctx: Context) -> Built:
    octets = [1, 1, ctx.spec.major, ctx.spec.minor]
    where = src.below(4)
    octets[where] = (octets[where] + 1 + src.below(254)) & 0xFF
    header = raw.header(octets[0], octets[1], octets[2], octets[3])
    label = "protocol header AMQP " + " ".join(map(str, octets))
    return Built((ctx.raw(header, label, channel=0),), "connection.start", label, Placement.HEADER)
