"""Operators on the frame header (transport, 2.3 Framing): its size, data offset and type, and
frames larger than the peer takes."""

from __future__ import annotations

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10.codec import MIN_MAX_FRAME_SIZE, Symbol, raw

from ...cases import Placement
from ...operator import Built
from ...source import Source
from ..context import Context
from .common import operator, session_frame

__all__: list[str] = []

# the largest SIZE a frame header holds (transport 2.3.1: a 32-bit unsigned integer), which is
# also open's max-frame-size when a peer announces none (2.7.1: default 4294967295)
NO_FRAME_LIMIT = 0xFFFFFFFF


def _body(src: Source, ctx: Context) -> tuple[str, bytes]:
    frame = session_frame(src, ctx)
    return frame.name, ctx.codec.encoder.composite(frame)


@operator(
    "frame-size-small",
    "SIZE under 8 (transport 2.3.1: the frame header alone is 8 octets)",
    "sets the frame's SIZE field to a value from 0 to 7",
    ("framing-error",),
    "connection",
    "frame",
)
def frame_size_small(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    size = src.below(8)
    wire = ctx.raw(raw.frame(body, size=size), f"{name} with SIZE {size}")
    return Built((wire,), name, f"SIZE {size}")


@operator(
    "doff-small",
    "DOFF under 2 (transport 2.3.1: a data offset below 2 words is malformed)",
    "sets the frame's DOFF to 0 or 1",
    ("framing-error",),
    "connection",
    "frame",
)
def doff_small(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    doff = src.below(2)
    wire = ctx.raw(raw.frame(body, doff=doff, extended=b""), f"{name} with DOFF {doff}")
    return Built((wire,), name, f"DOFF {doff}")


@operator(
    "doff-past-end",
    "DOFF past the frame's end (transport 2.3.1: the body starts at DOFF * 4; no frame "
    "header can be formed, which 2.8.16 answers with framing-error)",
    "sets DOFF so that the body would start after the frame's last octet",
    ("framing-error",),
    "connection",
    "frame",
)
def doff_past_end(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    least = (8 + len(body)) // 4 + 1
    doff = min(255, least + src.below(256 - least)) if least < 255 else 255
    wire = ctx.raw(raw.frame(body, doff=doff, extended=b""), f"{name} with DOFF {doff}")
    return Built((wire,), name, f"DOFF {doff} in {8 + len(body)} octets")


@operator(
    "size-short",
    "SIZE shorter than the frame (transport 2.3.1): its body is cut short, and the rest is "
    "read as the next frame",
    "sets SIZE to less than the frame's length (but above 8), the rest following it",
    ("framing-error", "decode-error"),
    "connection",
    "frame",
)
def size_short(src: Source, ctx: Context) -> Built:
    # SIZE 8 would make an empty frame, which is valid and ignored (2.4.5): the error would
    # lie only in the body's octets read as a frame header, whose size may be one the peer
    # rightly waits for. At least one octet of body keeps the cut in this frame's body.
    name, body = _body(src, ctx)
    size = 9 + src.below(len(body) - 1)
    wire = ctx.raw(raw.frame(body, size=size), f"{name} with SIZE {size} of {8 + len(body)}")
    return Built((wire,), name, f"SIZE {size} of {8 + len(body)}")


@operator(
    "unknown-frame-type",
    "a frame TYPE other than AMQP (0x00) and SASL (0x01) (transport 2.3.1 defines only these "
    "and no reaction to others: a peer may close with framing-error, and must stay up)",
    "sets the frame's TYPE octet to a code the specification does not define",
    ("framing-error",),
    "connection",
    "frame",
    or_reply=True,
    unnamed=True,
)
def unknown_frame_type(src: Source, ctx: Context) -> Built:
    name, body = _body(src, ctx)
    kind = 2 + src.below(254)
    wire = ctx.raw(raw.frame(body, type=kind), f"{name} as frame type 0x{kind:02x}")
    return Built((wire,), name, f"TYPE 0x{kind:02x}")


def _limited(ctx: Context) -> bool:
    """Whether the peer's max-frame-size leaves a frame that is over it: SIZE is 32 bits, so a
    peer that announced none (its default, 4294967295: "no specific limit" in effect) takes
    every frame there is."""
    return ctx.max_frame_size < NO_FRAME_LIMIT


@operator(
    "frame-over-max",
    "a frame over the max-frame-size the peer announced in its open (transport 2.7.1 open: "
    "a peer that receives an oversized frame MUST close the connection with framing-error; "
    "not drawn against a peer that announced none, whose limit no frame can pass)",
    "pads a flow's properties so that its frame is larger than the negotiated max-frame-size",
    ("framing-error",),
    "connection",
    "frame",
    usable=_limited,
)
def frame_over_max(src: Source, ctx: Context) -> Built:
    if not _limited(ctx):  # never a frame of 4 GiB: the peer takes any frame at all
        raise InvalidArgument(
            f"frame-over-max: max-frame-size {ctx.max_frame_size} leaves no frame over it"
        )
    over = 1 + src.below(64)
    flow = ctx.codec.composite(
        "flow", incoming_window=0, next_outgoing_id=0, outgoing_window=0, properties={}
    )
    base = len(ctx.codec.frame(flow))
    pad = max(0, ctx.max_frame_size - base - 16 + over)
    flow = ctx.codec.composite(
        "flow",
        incoming_window=0,
        next_outgoing_id=0,
        outgoing_window=0,
        properties={Symbol("pad"): b"\x00" * pad},
    )
    wire = ctx.wire(flow, f"flow of {len(ctx.codec.frame(flow))} octets")
    return Built((wire,), "flow", f"{len(wire.data) - ctx.max_frame_size} octets over the maximum")


@operator(
    "early-large-frame",
    "a frame over 512 octets (MIN-MAX-FRAME-SIZE) before the open frames are exchanged "
    "(transport 2.4.1; 2.7.1: an oversized frame MUST close the connection with framing-error)",
    "sends an open whose frame is over 512 octets as the first frame",
    ("framing-error",),
    "connection",
    "frame",
)
def early_large_frame(src: Source, ctx: Context) -> Built:
    padding = "p" * (MIN_MAX_FRAME_SIZE + src.below(256))
    opened = ctx.codec.composite("open", container_id=ctx.name(src, "container"), hostname=padding)
    wire = ctx.wire(opened, f"open of {MIN_MAX_FRAME_SIZE}+ octets", channel=0)
    return Built((wire,), "open", f"open of {len(wire.data)} octets", placement=Placement.START)


@operator(
    "empty-frame",
    "an empty frame (no body) on the case's channel (transport 2.4.5: implementations MUST be "
    "prepared to handle empty frames arriving on any valid channel; they have no meaning)",
    "sends an empty frame, with or without an extended header, on the session's channel",
    (),
    "ignore",
    "frame",
)
def empty_frame(src: Source, ctx: Context) -> Built:
    doff = src.pick((2, 2, 3, 4))
    wire = ctx.raw(raw.frame(b"", doff=doff), f"empty frame, DOFF {doff}")
    return Built((wire,), "empty", f"empty frame, DOFF {doff}")


@operator(
    "bad-protocol-header",
    "a protocol header of another version or protocol id, or not a header at all (transport "
    "2.2: the peer MUST send a protocol header with a supported version and close the socket)",
    "replaces the AMQP protocol header that opens the connection",
    (),
    "socket",
    "frame",
)
def bad_protocol_header(src: Source, ctx: Context) -> Built:
    # not a header any peer may accept: no 1.0 SASL or TLS header, no header of an earlier AMQP
    # (a broker that serves 0-9-1 on the same port rightly goes on in 0-9-1)
    header = src.pick(
        (
            raw.header(0, (2, 0, 0)),
            raw.header(9),
            raw.header(0, (1, 1, 0)),
            raw.header(0, (1, 0, 0), magic=b"AMQX"),
            b"GET / HTTP/1.1\r\n\r\n",
        )
    )
    wire = ctx.raw(header, f"protocol header {header!r}", channel=0)
    return Built((wire,), "header", f"header {header[:8]!r}", placement=Placement.HEADER)
