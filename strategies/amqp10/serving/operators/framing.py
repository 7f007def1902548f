"""Server-side 1.0 operators on the frame header (transport 2.3.1): sizes, data offsets, frame
types, a frame over the client's max-frame-size."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import raw

from ....operator import Built, Operator
from ....source import Source
from ..script import Point, Strike
from .common import FRAMING, NotApplicable, payload_of, sending, serving, struck

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


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
    body, data = struck(strike)
    size = src.below(8)
    return sending(
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
    body, data = struck(strike)
    doff = src.below(2)
    wire = raw.frame(data, doff=doff, extended=b"", channel=strike.channel)
    return sending(strike, wire, f"{body.name} with DOFF {doff}")


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
    body, data = struck(strike)
    least = (8 + len(data)) // 4 + 1
    if least > 255:  # DOFF is one octet: 1020 octets at most, within a frame this long
        raise NotApplicable(f"a {8 + len(data)}-octet {body.name}: no DOFF points past its end")
    doff = least + src.below(256 - least)
    wire = raw.frame(data, doff=doff, extended=b"", channel=strike.channel)
    return sending(strike, wire, f"{body.name} with DOFF {doff} in {8 + len(data)} octets")


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
    body, data = struck(strike)
    kind = 2 + src.below(254)
    wire = raw.frame(data, type=kind, channel=strike.channel)
    return sending(strike, wire, f"{body.name} as frame type 0x{kind:02x}")


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
    body, data = struck(strike)
    if strike.max_frame_size > 1 << 20:
        raise NotApplicable(f"the client's max-frame-size {strike.max_frame_size} is too large")
    over = strike.max_frame_size + 1 + src.below(64) - 8 - len(data)
    payload = payload_of(strike)
    padding = raw.described(raw.fixed(0x53, b"\x75"), raw.variable(0xB0, b"\x00" * over))
    wire = raw.frame(data + payload + padding, channel=strike.channel)
    return sending(strike, wire, f"{body.name} of {len(wire)} octets over {strike.max_frame_size}")
