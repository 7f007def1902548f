"""Operators that send well-formed frames breaking a rule of sessions and links (transport 2.5,
2.6, 2.7): a frame on a channel with no session, a second begin, a handle in use, a handle
that is not attached, transfers beyond credit, dispositions of deliveries never sent."""

from __future__ import annotations

from amqpfuzz.spec import Scope
from amqpfuzz.spec.amqp10.codec import UInt

from ...cases import ErrorCode, Placement
from ...operator import Built
from ...source import Source
from ..context import CODES, Context
from .common import operator, session_frame

__all__: list[str] = []


def _closing(ctx: Context, name: str) -> tuple[ErrorCode, ...]:
    """The error condition ``name`` closing the connection (a close, not an end)."""
    code = CODES.code(ctx.spec, name)
    return (ErrorCode(code.name, code.value, Scope.CONNECTION),)


@operator(
    "no-session",
    "a frame on a channel no session was begun on (transport 2.5.1; the specification names "
    "no reaction: a peer may close the connection, and must stay up)",
    "sends an attach or a flow on a channel where no begin was sent",
    ("not-allowed", "illegal-state", "framing-error", "not-found"),
    "connection",
    "semantic",
    or_reply=True,
    unnamed=True,
)
def no_session(src: Source, ctx: Context) -> Built:
    frame = session_frame(src, ctx)
    return Built((ctx.wire(frame),), frame.name, "on a channel with no session", Placement.FRESH)


@operator(
    "begin-twice",
    "a second begin on a channel a session is already mapped to (transport 2.5.1 asks the "
    "sender for an unused channel and names no reaction: a peer may close, must stay up)",
    "sends begin on the case's channel, where a session is already begun",
    ("not-allowed", "illegal-state", "framing-error"),
    "connection",
    "semantic",
    or_reply=True,
    unnamed=True,
)
def begin_twice(src: Source, ctx: Context) -> Built:
    return Built((ctx.wire(ctx.begin()),), "begin", "on a channel in use")


@operator(
    "handle-in-use",
    "an attach with a handle already in use in the session (transport 2.7.3 attach: it MUST "
    "be responded to with an immediate close carrying a handle-in-use session-error; the end "
    "of the session, whose error it is, or the close the text names)",
    "attaches two links with the same handle",
    ("handle-in-use",),
    "session",
    "semantic",
)
def handle_in_use(src: Source, ctx: Context) -> Built:
    handle = src.below(4)
    first, second = ctx.attach(src, handle), ctx.attach(src, handle)
    steps = (ctx.wire(first), ctx.wire(second))
    # the text says "an immediate close" (the connection's performative) carrying a session
    # error: a close with handle-in-use follows its letter, an end its error's scope
    closing = _closing(ctx, "handle-in-use")
    return Built(steps, "attach", f"handle {handle} twice", tolerated=closing)


@operator(
    "unattached-handle",
    "a transfer or flow naming a handle no link is attached with (transport 2.7.4 flow: the "
    "peer MUST end the session with an unattached-handle session error; 2.5.4, 2.8.17; a "
    "handle above the peer's handle-max, 2.7.2: the connection closed with framing-error)",
    "sends a transfer or a link flow for a handle never attached",
    ("unattached-handle",),
    "session",
    "semantic",
)
def unattached_handle(src: Source, ctx: Context) -> Built:
    handle = UInt(src.pick((0, 1, 255, 0xFFFFFFFF - 1)))
    # a handle above the peer's handle-max (its begin's, which a case cannot know; any above
    # 0 may be) is one it "MUST close the connection with the framing-error" for (2.7.2)
    beyond = _closing(ctx, "framing-error") if handle else ()
    if src.byte() & 1:
        transfer, message = ctx.transfer(src, handle)
        wire = ctx.wire(transfer)
        wire = wire._replace(data=ctx.codec.frame(transfer, 0, message))
        return Built((wire,), "transfer", f"handle {handle} not attached", tolerated=beyond)
    flow = ctx.codec.composite(
        "flow",
        next_incoming_id=UInt(0),
        incoming_window=UInt(10),
        next_outgoing_id=UInt(0),
        outgoing_window=UInt(10),
        handle=handle,
        delivery_count=UInt(0),
        link_credit=UInt(10),
    )
    return Built((ctx.wire(flow),), "flow", f"handle {handle} not attached", tolerated=beyond)


@operator(
    "beyond-credit",
    "transfers on a sending link beyond the link credit granted (transport 2.6.7: the "
    "receiver MAY handle the excess normally or detach the link with transfer-limit-exceeded)",
    "attaches a sending link and sends transfers at once, more than a small initial credit",
    ("transfer-limit-exceeded",),
    "link",
    "semantic",
    or_reply=True,
)
def beyond_credit(src: Source, ctx: Context) -> Built:
    attach = ctx.attach(src, 0, role=False)
    steps = [ctx.wire(attach)]
    for delivery in range(1 + src.below(4)):
        transfer, message = ctx.transfer(src, 0, delivery)
        wire = ctx.wire(transfer)
        steps.append(wire._replace(data=ctx.codec.frame(transfer, 0, message)))
    return Built(tuple(steps), "transfer", f"{len(steps) - 1} transfers without credit")


@operator(
    "unknown-disposition",
    "a disposition for delivery ids the peer never sent (transport 2.7.6 disposition names "
    "no reaction: a peer may ignore it or end the session, and must stay up)",
    "sends a disposition as receiver for deliveries that were never transferred",
    ("illegal-state", "not-allowed", "invalid-field"),
    "session",
    "semantic",
    or_reply=True,
    unnamed=True,
)
def unknown_disposition(src: Source, ctx: Context) -> Built:
    first = UInt(src.pick((0, 1, 1000, 0xFFFFFFFF)))
    disposition = ctx.codec.composite(
        "disposition",
        role=True,
        first=first,
        last=UInt(first),
        settled=True,
        state=ctx.codec.composite("accepted"),
    )
    return Built((ctx.wire(disposition),), "disposition", f"delivery {first} never sent")
