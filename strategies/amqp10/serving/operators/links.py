"""Server-side 1.0 operators on links (transport 2.6, 2.7.3 to 2.7.6): handles, credit,
delivery ids, dispositions, transfers that never end or abort, settlement modes."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import Composite, UByte, UInt

from ....operator import Built, Operator
from ....source import Source
from ...wire import Wire
from ..script import Point, Strike
from .common import NotApplicable, framed, payload_of, sending, serving, session_flow, struck

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


@server(
    Point.ATTACH,
    "handle-in-use",
    "an attach with a handle already in use in the session (transport 2.7.3 attach: it MUST "
    "be responded to with an immediate close carrying a handle-in-use session-error; the end "
    "of the session, whose error it is, or the close the text names)",
    "answers the client's second attach with the handle of its first",
    ("handle-in-use",),
    "session",
    "semantic",
    tolerate=(("handle-in-use", "connection"),),
)
def handle_in_use(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    taken = sorted(strike.handles - {int(body["handle"])})
    if not taken:
        raise NotApplicable("no other handle is in use yet")
    attach = Composite("attach", {**body.fields, "handle": UInt(src.pick(tuple(taken)))})
    return framed(
        strike, strike.codec.encoder.composite(attach), f"attach handle {attach['handle']} again"
    )


@server(
    Point.DELIVER,
    "unattached-handle",
    "a transfer naming a handle no link is attached with (session error unattached-handle: a "
    "frame other than attach referencing a handle not in use; transport 2.7.5, 2.8.17)",
    "sends a delivery's transfer on a handle no link has",
    ("unattached-handle",),
    "session",
    "semantic",
)
def unattached_handle(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    handle = _unused_handle(src, strike)
    transfer = Composite("transfer", {**body.fields, "handle": UInt(handle)})
    data = strike.codec.encoder.composite(transfer) + payload_of(strike)
    return framed(strike, data, f"transfer on handle {handle}")


@server(
    Point.AFTER,
    "detach-unattached",
    "a detach naming a handle no link is attached with (session error unattached-handle; "
    "transport 2.7.7 detach)",
    "sends a detach of a handle the session does not use",
    ("unattached-handle",),
    "session",
    "semantic",
)
def detach_unattached(src: Source, strike: Strike) -> Built:
    handle = _unused_handle(src, strike)
    detach = strike.codec.composite("detach", handle=UInt(handle), closed=True)
    return sending(strike, strike.codec.frame(detach, strike.channel), f"detach of handle {handle}")


@server(
    Point.AFTER,
    "flow-unattached",
    "a link flow naming a handle no link is attached with (transport 2.7.4 flow: the peer "
    "MUST end the session with an unattached-handle session error)",
    "sends a flow with a handle the session does not use",
    ("unattached-handle",),
    "session",
    "semantic",
)
def flow_unattached(src: Source, strike: Strike) -> Built:
    handle = _unused_handle(src, strike)
    flow = Composite(
        "flow", {**session_flow(strike).fields, "handle": UInt(handle),
                 "delivery-count": UInt(0), "link-credit": UInt(src.below(100))},
    )  # fmt: skip
    return sending(strike, strike.codec.frame(flow, strike.channel), f"flow of handle {handle}")


def _unused_handle(src: Source, strike: Strike) -> int:
    """A handle of the peer's that no link is attached with, within the client's handle-max
    (beyond it, the client must close the connection with framing-error, 2.7.2: another
    operator's case)."""
    start = max(strike.handles, default=0) + 1 + src.below(64)
    if start <= strike.handle_max:
        return start
    free = next((h for h in range(strike.handle_max, -1, -1) if h not in strike.handles), None)
    if free is None:
        raise NotApplicable(
            f"every handle up to the client's handle-max {strike.handle_max} is in use"
        )
    return free


@server(
    Point.DELIVER,
    "beyond-credit",
    "transfers beyond the link credit the client granted (transport 2.6.7: the receiver MAY "
    "handle the excess normally or detach the link with transfer-limit-exceeded)",
    "sends as many deliveries again as the client granted credit for, and one more",
    ("transfer-limit-exceeded",),
    "link",
    "semantic",
    or_reply=True,
)
def beyond_credit(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    payload = payload_of(strike)
    wires = []
    for n in range(strike.credit + 1):
        delivery = strike.next_delivery + n
        transfer = Composite(
            "transfer", {**body.fields, "delivery-id": UInt(delivery),
                         "delivery-tag": delivery.to_bytes(4, "big"), "settled": True},
        )  # fmt: skip
        data = strike.codec.frame(transfer, strike.channel, payload)
        wires.append(Wire(data, f"transfer {delivery}", strike.channel))
    return Built(tuple(wires), "transfer", f"{len(wires)} transfers on credit {strike.credit}")


@server(
    Point.DELIVER,
    "delivery-id-gap",
    "a delivery whose delivery-id is not the next the session owes (transport 2.5.6: delivery "
    "ids are allocated in sequence, next-outgoing-id the next; 2.7.5 transfer delivery-id; no "
    "reaction is named: a client may end the session, and must stay up)",
    "sends a delivery's transfer with a delivery-id ahead of or behind the next",
    ("illegal-state", "invalid-field", "window-violation"),
    "session",
    "semantic",
    or_reply=True,
)
def delivery_id_gap(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    step = 1 + src.below(1000)
    wrong = (strike.next_delivery + step) if src.byte() & 1 else (strike.next_delivery - step)
    wrong &= 0xFFFFFFFF
    transfer = Composite("transfer", {**body.fields, "delivery-id": UInt(wrong)})
    data = strike.codec.frame(transfer, strike.channel, payload_of(strike))
    return sending(
        strike, data, f"transfer delivery-id {wrong} where {strike.next_delivery} was next"
    )


@server(
    Point.AFTER,
    "unknown-disposition",
    "a disposition for delivery ids the peer never sent (transport 2.7.6 disposition names "
    "no reaction: a client may ignore it or end the session, and must stay up)",
    "sends a disposition settling delivery ids the client never sent",
    ("illegal-state", "not-allowed", "invalid-field"),
    "session",
    "semantic",
    or_reply=True,
)
def unknown_disposition(src: Source, strike: Strike) -> Built:
    first = 1000 + src.below(1 << 20)
    disposition = strike.codec.composite(
        "disposition", role=True, first=UInt(first), last=UInt(first + src.below(8)), settled=True
    )
    return sending(
        strike, strike.codec.frame(disposition, strike.channel), f"disposition of {first}"
    )


@server(
    Point.DELIVER,
    "more-never-ends",
    "a delivery whose transfers say more forever (transport 2.7.5 transfer more: the message "
    "is complete only with the last; the client must hand its application nothing of it)",
    "sends a delivery's first transfer with more set, and never the rest",
    (),
    "ignore",
    "semantic",
)
def more_never_ends(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    payload = payload_of(strike)
    cut = payload[: max(1, len(payload) // 2)] if src.byte() & 1 else payload
    transfer = Composite("transfer", {**body.fields, "more": True})
    return sending(
        strike, strike.codec.frame(transfer, strike.channel, cut), "transfer more, never ended"
    )


@server(
    Point.DELIVER,
    "aborted-delivery",
    "a delivery aborted after its first transfer (transport 2.7.5 transfer aborted: any "
    "payload of the aborted delivery MUST be ignored; 2.6.14: the receiver MUST discard the "
    "message data transferred before the abort)",
    "sends a delivery's first transfer with more set, then a transfer with aborted set",
    (),
    "ignore",
    "semantic",
)
def aborted_delivery(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    payload = payload_of(strike)
    cut = max(1, len(payload) // 2)
    first = Composite("transfer", {**body.fields, "more": True})
    rest = Composite("transfer", {"handle": body["handle"], "more": False, "aborted": True})
    tail = payload[cut:] if src.byte() & 1 else b""
    wires = (
        Wire(
            strike.codec.frame(first, strike.channel, payload[:cut]),
            "transfer more",
            strike.channel,
        ),
        Wire(strike.codec.frame(rest, strike.channel, tail), "transfer aborted", strike.channel),
    )
    return Built(wires, "transfer", f"a delivery aborted after {cut} octets")


@server(
    Point.ATTACH,
    "settle-mode-changed",
    "an attach answer whose settlement modes are not the ones the client asked for "
    "(transport 2.7.3 attach snd-settle-mode, rcv-settle-mode: the sender's and the "
    "receiver's modes are the ones each asked; a client may detach a link it cannot use)",
    "answers the client's attach with the other rcv-settle-mode and a changed snd-settle-mode",
    ("not-implemented", "precondition-failed", "not-allowed"),
    "link",
    "semantic",
    or_reply=True,
)
def settle_mode_changed(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    rcv = 1 - int(body["rcv-settle-mode"] or 0)
    snd = (
        int(body["snd-settle-mode"] if body["snd-settle-mode"] is not None else 2)
        + 1
        + src.below(2)
    ) % 3
    attach = Composite(
        "attach", {**body.fields, "rcv-settle-mode": UByte(rcv), "snd-settle-mode": UByte(snd)}
    )
    return framed(strike, strike.codec.encoder.composite(attach), f"attach snd {snd} rcv {rcv}")
