"""Server-side 1.0 operators on SASL and the protocol header (transport 2.2; security 5.3), and
on the connection and its sessions (transport 2.4, 2.5, 2.7.1, 2.7.2)."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import Composite, UByte, UInt, raw

from ....operator import Built, Operator
from ....source import Source
from ...wire import Wire
from ..script import Point, Strike
from .common import FRAMING, NotApplicable, framed, sending, serving, session_flow, struck

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


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
    return sending(strike, wire, f"protocol header {'.'.join(map(str, version))}")


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
    return sending(strike, junk, f"{len(junk)} octets of garbage")


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
    return sending(strike, strike.codec.frame(outcome), f"sasl-outcome code {code}")


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
    body, _ = struck(strike)
    size = src.below(512)
    opened = Composite("open", {**body.fields, "max-frame-size": UInt(size)})
    return sending(
        strike, strike.codec.frame(opened, 0, check=False), f"open max-frame-size {size}"
    )


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
    return sending(strike, strike.codec.frame(opened, 0), "open again")


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
    _, data = struck(strike)
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
    body, _ = struck(strike)
    if strike.handle_max >= 0xFFFFFFFF:
        raise NotApplicable("the client's handle-max leaves no handle outside it")
    handle = strike.handle_max + 1 + src.below(min(1 << 16, 0xFFFFFFFF - strike.handle_max))
    attach = Composite("attach", {**body.fields, "handle": UInt(handle)})
    return framed(strike, strike.codec.encoder.composite(attach), f"attach handle {handle}")


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
    flow = session_flow(strike)
    wire = Wire(strike.codec.frame(flow, channel), f"flow on channel {channel}", channel)
    return Built((wire,), "flow", f"flow on unbegun channel {channel}")
