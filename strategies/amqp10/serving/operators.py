"""Server-side 1.0 operators: what a hostile peer breaks, and what the client must do about it.

Each operator strikes at one :class:`~.script.Point` and breaks the valid frames the peer was
about to send there (:class:`~.script.Strike`), or sends frames of its own once the client is
quiet; it cites the section it breaks and carries the error condition and scope the
specification requires of the client (the receiving peer: 1.0's MUSTs bind both ends), or
``socket`` where the client must close the socket, ``ignore`` where it must carry on (and
deliver nothing it should not), and ``or_reply`` where the specification names no reaction.
An operator that cannot break what the connection came to (a channel-max of 65535 leaves no
channel outside it) raises :class:`NotApplicable`: the case is then played as valid.
The catalogue's order is the order Hypothesis shrinks towards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from amqpfuzz.spec.amqp10.codec import Composite, UByte, UInt, raw

from ...operator import Built, Operator, registrar
from ...source import Source
from ..context import CODES
from ..operators.common import Parts
from ..wire import Wire
from .script import Point, Strike

__all__ = ["OPERATORS", "POINTS", "NotApplicable"]

OPERATORS: list[Operator] = []
POINTS: dict[str, Point] = {}
_register = registrar(OPERATORS, CODES, scoped=True)
DECODE = ("decode-error",)
FRAMING = ("framing-error",)


class NotApplicable(Exception):
    """What the connection came to leaves the operator nothing to break (says why)."""


def server(
    point: Point,
    name: str,
    description: str,
    breaks: str,
    codes: Sequence[str],
    scope: str,
    level: str,
    **options: Any,
) -> Callable[[Callable[[Source, Strike], Built]], Callable[[Source, Strike], Built]]:
    """Registers a server-side operator striking at ``point``."""
    POINTS[name] = point
    return _register(name, description, breaks, codes, scope, level, **options)


def _sent(strike: Strike, data: bytes, label: str) -> Built:
    return Built((Wire(data, label, strike.channel),), label.split(" ", 1)[0], label)


def _first(strike: Strike) -> tuple[Composite, bytes]:
    """The performative struck, encoded, with its payload (a transfer's message)."""
    body = strike.bodies[0]
    assert body is not None
    return body, strike.codec.encoder.composite(body)


def _payload(strike: Strike) -> bytes:
    return strike.payload


# -- the frame header (transport 2.3.1) --------------------------------------------------------


@server(
    Point.ATTACH,
    "frame-size-small",
    "SIZE under 8 (transport 2.3.1: the frame header alone is 8 octets)",
    "sets the SIZE of the peer's attach frame to a value from 0 to 7",
    FRAMING,
    "connection",
    "frame",
)
def frame_size_small(src: Source, strike: Strike) -> Built:
    body, data = _first(strike)
    size = src.below(8)
    return _sent(
        strike, raw.frame(data, size=size, channel=strike.channel), f"{body.name} with SIZE {size}"
    )


@server(
    Point.ATTACH,
    "doff-small",
    "DOFF under 2 (transport 2.3.1: a data offset below 2 words is malformed)",
    "sets the DOFF of the peer's attach frame to 0 or 1",
    FRAMING,
    "connection",
    "frame",
)
def doff_small(src: Source, strike: Strike) -> Built:
    body, data = _first(strike)
    doff = src.below(2)
    wire = raw.frame(data, doff=doff, extended=b"", channel=strike.channel)
    return _sent(strike, wire, f"{body.name} with DOFF {doff}")


@server(
    Point.ATTACH,
    "doff-past-end",
    "DOFF past the frame's end (transport 2.3.1: no frame header can be formed, which "
    "2.8.16 answers with framing-error)",
    "sets the DOFF of the peer's attach frame past its last octet",
    FRAMING,
    "connection",
    "frame",
)
def doff_past_end(src: Source, strike: Strike) -> Built:
    body, data = _first(strike)
    least = (8 + len(data)) // 4 + 1
    doff = min(255, least + src.below(256 - least)) if least < 255 else 255
    wire = raw.frame(data, doff=doff, extended=b"", channel=strike.channel)
    return _sent(strike, wire, f"{body.name} with DOFF {doff} in {8 + len(data)} octets")


@server(
    Point.ATTACH,
    "unknown-frame-type",
    "a frame TYPE other than AMQP and SASL (transport 2.3.1 defines only these and names no "
    "reaction: a client may close with framing-error, and must stay up)",
    "sends the peer's attach as a frame of a type the specification does not define",
    FRAMING,
    "connection",
    "frame",
    or_reply=True,
)
def unknown_frame_type(src: Source, strike: Strike) -> Built:
    body, data = _first(strike)
    kind = 2 + src.below(254)
    wire = raw.frame(data, type=kind, channel=strike.channel)
    return _sent(strike, wire, f"{body.name} as frame type 0x{kind:02x}")


@server(
    Point.DELIVER,
    "frame-over-max",
    "a frame over the max-frame-size the client announced in its open (transport 2.7.1 open: "
    "a peer that receives an oversized frame MUST close the connection with framing-error)",
    "sends a delivery's transfer in one frame larger than the client's max-frame-size",
    FRAMING,
    "connection",
    "frame",
)
def frame_over_max(src: Source, strike: Strike) -> Built:
    body, data = _first(strike)
    if strike.max_frame_size > 1 << 20:
        raise NotApplicable(f"the client's max-frame-size {strike.max_frame_size} is too large")
    over = strike.max_frame_size + 1 + src.below(64) - 8 - len(data)
    payload = _payload(strike)
    padding = raw.described(raw.fixed(0x53, b"\x75"), raw.variable(0xB0, b"\x00" * over))
    wire = raw.frame(data + payload + padding, channel=strike.channel)
    return _sent(strike, wire, f"{body.name} of {len(wire)} octets over {strike.max_frame_size}")


# -- the encoding of a performative (types 1.2 to 1.6; transport 2.3.2) -------------------------


def _parts(strike: Strike) -> Parts:
    body, _ = _first(strike)
    return Parts(strike.codec, body)


def _framed(strike: Strike, body: bytes, note: str) -> Built:
    return _sent(strike, raw.frame(body, channel=strike.channel), note)


@server(
    Point.ATTACH,
    "unknown-constructor",
    "a field whose format code the type system does not define (types 1.2, 1.6)",
    "replaces one field's constructor in the peer's attach with an undefined format code",
    DECODE,
    "connection",
    "encoding",
)
def unknown_constructor(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    unused = [c for c in range(0x01, 0x100) if c not in strike.codec.types.constructors]
    code = src.pick(tuple(unused))
    index = src.below(len(p.fields))
    body = p.body(p.replaced(index, raw.fixed(code, b"\x00" * src.below(9))))
    return _framed(strike, body, f"{p.name} field {p.infos[index].name} as 0x{code:02x}")


@server(
    Point.ATTACH,
    "list-size-lies",
    "a performative's list whose size is not the octets it holds (types 1.6.22 list8/list32)",
    "sets the size of the peer's attach's field list larger or smaller than its fields",
    DECODE,
    "connection",
    "encoding",
)
def list_size_lies(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    true = sum(map(len, p.fields)) + 1
    size = (true + 1 + src.below(64)) if src.byte() & 1 else src.below(true)
    body = p.body(size=size, code=0xC0 if true < 250 else 0xD0)
    return _framed(strike, body, f"{p.name} list size {size} of {true}")


@server(
    Point.ATTACH,
    "list-count-lies",
    "a performative's list whose count is more than the values it holds (types 1.6.22)",
    "sets the count of the peer's attach's field list above the fields it holds",
    DECODE,
    "connection",
    "encoding",
)
def list_count_lies(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    count = min(255, len(p.fields) + 1 + src.below(200))
    return _framed(strike, p.body(count=count), f"{p.name} list count {count}")


@server(
    Point.ATTACH,
    "unknown-descriptor",
    "a frame body whose descriptor names no performative (transport 2.3.2: the body of an AMQP "
    "frame is a performative)",
    "sends the peer's attach under a ulong descriptor no type has",
    DECODE,
    "connection",
    "encoding",
)
def unknown_descriptor(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    types = strike.codec.types
    known = {types.descriptor_of(name) for name in types.composites}
    code = next(c for c in (0x80 + src.below(0x70), 0xFF) if c not in known)
    descriptor = raw.fixed(0x53, bytes((code,)))
    return _framed(strike, p.body(descriptor=descriptor), f"{p.name} as descriptor 0x{code:02x}")


@server(
    Point.OPEN,
    "invalid-utf8",
    "a string that is not UTF-8 (types 1.6.20 string: UTF-8 encoded Unicode)",
    "sends the peer's open with a container-id whose octets are not UTF-8",
    DECODE,
    "connection",
    "encoding",
)
def invalid_utf8(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    octets = b"amqpfuzz-" + bytes((0xC0 + src.below(2), 0x80 + src.below(64))) + b"\xff\xfe"
    body = p.body(p.replaced(p.index("container-id"), raw.variable(0xA1, octets)))
    return _framed(strike, body, f"{p.name} container-id {octets!r}")


@server(
    Point.ATTACH,
    "absurd-size",
    "a string whose size is far past the frame's end (types 1.6.20 str32)",
    "gives the link name of the peer's attach a 32-bit size near 2^32",
    DECODE,
    "connection",
    "encoding",
)
def absurd_size(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    size = 0xFFFFFFFF - src.below(1 << 16)
    name = raw.variable(0xB1, b"amqpfuzz", size=size)
    body = p.body(p.replaced(p.index("name"), name))
    return _framed(strike, body, f"{p.name} name with size {size}")


@server(
    Point.ATTACH,
    "bad-boolean",
    "a boolean octet other than 0x00 and 0x01 (types 1.6.2 boolean)",
    "sends the peer's attach with its role the one-octet boolean 0x56 holding 2 to 255",
    DECODE,
    "connection",
    "encoding",
)
def bad_boolean(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    value = 2 + src.below(254)
    body = p.body(p.replaced(p.index("role"), raw.fixed(0x56, bytes((value,)))))
    return _framed(strike, body, f"{p.name} role 0x56 {value:#04x}")


@server(
    Point.ATTACH,
    "mandatory-null",
    "a mandatory field left null (types 1.4: a mandatory field MUST be set)",
    "sends the peer's attach with its name, handle or role null",
    ("decode-error", "invalid-field"),
    "connection",
    "encoding",
)
def mandatory_null(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    name = src.pick(("name", "handle", "role"))
    body = p.body(p.replaced(p.index(name), b"\x40"))
    return _framed(strike, body, f"{p.name} {name} null")


# -- SASL and the protocol header (transport 2.2; security 5.3) --------------------------------


@server(
    Point.HEADER,
    "header-version",
    "an AMQP protocol header of another version after the SASL outcome (transport 2.2: a "
    "peer that does not support the version answers with its own header and closes the "
    "socket)",
    "answers the client's AMQP protocol header with version 0-9-1, 1.1.0 or 2.0.0",
    (),
    "socket",
    "state",
)
def header_version(src: Source, strike: Strike) -> Built:
    version = src.pick(((0, 9, 1), (1, 1, 0), (2, 0, 0)))
    wire = raw.header(0, version)
    return _sent(strike, wire, f"protocol header {'.'.join(map(str, version))}")


@server(
    Point.HEADER,
    "garbage-after-outcome",
    "octets that are no protocol header where the AMQP header belongs, after a SASL outcome "
    "(security 5.3.2: after the outcome both peers exchange the AMQP header; transport 2.2)",
    "sends octets that are not a protocol header after the SASL outcome",
    (),
    "socket",
    "state",
)
def garbage_after_outcome(src: Source, strike: Strike) -> Built:
    junk = src.pick((b"HTTP/1.1 400 Bad\r\n", b"\x00" * 8, b"AMQX\x00\x01\x00\x00")) + src.take(8)
    return _sent(strike, junk, f"{len(junk)} octets of garbage")


@server(
    Point.SASL,
    "sasl-auth-failed",
    "a SASL outcome that authentication failed (security 5.3.3.6 sasl-outcome code auth: the "
    "AMQP layer never starts, and the connection is closed)",
    "answers the client's sasl-init with an outcome of code auth (1) or sys-perm (3)",
    (),
    "socket",
    "state",
)
def sasl_auth_failed(src: Source, strike: Strike) -> Built:
    code = src.pick((1, 3))
    outcome = strike.codec.composite("sasl-outcome", code=UByte(code))
    return _sent(strike, strike.codec.frame(outcome), f"sasl-outcome code {code}")


# -- the connection and its sessions (transport 2.4, 2.5, 2.7.1, 2.7.2) ------------------------


@server(
    Point.OPEN,
    "open-max-frame-small",
    "an open whose max-frame-size is under MIN-MAX-FRAME-SIZE, 512 (transport 2.7.1: "
    "frames up to 512 octets are always allowed; a client may refuse the value)",
    "sends the peer's open with a max-frame-size from 0 to 511",
    ("invalid-field", "framing-error"),
    "connection",
    "semantic",
    or_reply=True,
)
def open_max_frame_small(src: Source, strike: Strike) -> Built:
    body, _ = _first(strike)
    size = src.below(512)
    opened = Composite("open", {**body.fields, "max-frame-size": UInt(size)})
    return _sent(strike, strike.codec.frame(opened, 0, check=False), f"open max-frame-size {size}")


@server(
    Point.AFTER,
    "open-twice",
    "a second open on a connection already open (transport 2.4.1: open is sent once; no "
    "reaction is named: a client may close, must stay up)",
    "sends the peer's open again",
    ("illegal-state", "not-allowed", "framing-error"),
    "connection",
    "state",
    or_reply=True,
)
def open_twice(src: Source, strike: Strike) -> Built:
    opened = strike.codec.composite("open", container_id=f"amqpfuzz-{src.take(4).hex()}")
    return _sent(strike, strike.codec.frame(opened, 0), "open again")


@server(
    Point.BEGIN,
    "channel-over-max",
    "a frame on a channel above the client's channel-max (transport 2.7.1 open: a peer that "
    "receives a channel number outside the supported range MUST close the connection with "
    "framing-error)",
    "answers the client's begin on a channel above the channel-max it announced",
    FRAMING,
    "connection",
    "frame",
)
def channel_over_max(src: Source, strike: Strike) -> Built:
    _, data = _first(strike)
    if strike.channel_max >= 0xFFFF:
        raise NotApplicable("the client's channel-max leaves no channel outside it")
    channel = strike.channel_max + 1 + src.below(0xFFFF - strike.channel_max)
    wire = Wire(raw.frame(data, channel=channel), f"begin on channel {channel}", channel)
    return Built((wire,), "begin", f"begin on channel {channel} over {strike.channel_max}")


@server(
    Point.ATTACH,
    "handle-over-max",
    "an attach whose handle is above the client's handle-max (transport 2.7.2 begin: a peer "
    "that receives a handle outside the supported range MUST close the connection with "
    "framing-error)",
    "answers the client's attach with a handle above the handle-max of its begin",
    FRAMING,
    "connection",
    "semantic",
)
def handle_over_max(src: Source, strike: Strike) -> Built:
    body, _ = _first(strike)
    if strike.handle_max >= 0xFFFFFFFF:
        raise NotApplicable("the client's handle-max leaves no handle outside it")
    handle = strike.handle_max + 1 + src.below(min(1 << 16, 0xFFFFFFFF - strike.handle_max))
    attach = Composite("attach", {**body.fields, "handle": UInt(handle)})
    return _framed(strike, strike.codec.encoder.composite(attach), f"attach handle {handle}")


@server(
    Point.AFTER,
    "no-session",
    "a flow on a channel no session was begun on (transport 2.5.1; the specification names "
    "no reaction: a client may close the connection, and must stay up)",
    "sends a session flow on a channel the client has no session on",
    ("not-allowed", "illegal-state", "framing-error", "not-found"),
    "connection",
    "semantic",
    or_reply=True,
)
def no_session(src: Source, strike: Strike) -> Built:
    channel = (strike.channel + 1 + src.below(16)) % max(2, strike.channel_max + 1)
    if channel == strike.channel:
        raise NotApplicable("the client's channel-max leaves no other channel")
    flow = _session_flow(strike)
    wire = Wire(strike.codec.frame(flow, channel), f"flow on channel {channel}", channel)
    return Built((wire,), "flow", f"flow on unbegun channel {channel}")


def _session_flow(strike: Strike) -> Composite:
    return strike.codec.composite(
        "flow", next_incoming_id=UInt(0), incoming_window=UInt(2048),
        next_outgoing_id=UInt(strike.next_delivery), outgoing_window=UInt(2048),
    )  # fmt: skip


# -- links (transport 2.6, 2.7.3 to 2.7.6) ------------------------------------------------------


@server(
    Point.ATTACH,
    "handle-in-use",
    "an attach with a handle already in use in the session (transport 2.7.3 attach; session "
    "error handle-in-use: an attach was received using a handle already in use)",
    "answers the client's second attach with the handle of its first",
    ("handle-in-use",),
    "session",
    "semantic",
)
def handle_in_use(src: Source, strike: Strike) -> Built:
    body, _ = _first(strike)
    taken = sorted(strike.handles - {int(body["handle"])})
    if not taken:
        raise NotApplicable("no other handle is in use yet")
    attach = Composite("attach", {**body.fields, "handle": UInt(src.pick(tuple(taken)))})
    return _framed(
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
    body, _ = _first(strike)
    handle = _unused_handle(src, strike)
    transfer = Composite("transfer", {**body.fields, "handle": UInt(handle)})
    data = strike.codec.encoder.composite(transfer) + _payload(strike)
    return _framed(strike, data, f"transfer on handle {handle}")


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
    return _sent(strike, strike.codec.frame(detach, strike.channel), f"detach of handle {handle}")


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
        "flow", {**_session_flow(strike).fields, "handle": UInt(handle),
                 "delivery-count": UInt(0), "link-credit": UInt(src.below(100))},
    )  # fmt: skip
    return _sent(strike, strike.codec.frame(flow, strike.channel), f"flow of handle {handle}")


def _unused_handle(src: Source, strike: Strike) -> int:
    start = max(strike.handles, default=0) + 1 + src.below(64)
    return min(start, strike.handle_max) if start > strike.handle_max else start


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
    body, _ = _first(strike)
    payload = _payload(strike)
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
    body, _ = _first(strike)
    step = 1 + src.below(1000)
    wrong = (strike.next_delivery + step) if src.byte() & 1 else (strike.next_delivery - step)
    wrong &= 0xFFFFFFFF
    transfer = Composite("transfer", {**body.fields, "delivery-id": UInt(wrong)})
    data = strike.codec.frame(transfer, strike.channel, _payload(strike))
    return _sent(
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
    return _sent(strike, strike.codec.frame(disposition, strike.channel), f"disposition of {first}")


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
    body, _ = _first(strike)
    payload = _payload(strike)
    cut = payload[: max(1, len(payload) // 2)] if src.byte() & 1 else payload
    transfer = Composite("transfer", {**body.fields, "more": True})
    return _sent(
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
    body, _ = _first(strike)
    payload = _payload(strike)
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
    body, _ = _first(strike)
    rcv = 1 - int(body["rcv-settle-mode"] or 0)
    snd = (
        int(body["snd-settle-mode"] if body["snd-settle-mode"] is not None else 2)
        + 1
        + src.below(2)
    ) % 3
    attach = Composite(
        "attach", {**body.fields, "rcv-settle-mode": UByte(rcv), "snd-settle-mode": UByte(snd)}
    )
    return _framed(strike, strike.codec.encoder.composite(attach), f"attach snd {snd} rcv {rcv}")
