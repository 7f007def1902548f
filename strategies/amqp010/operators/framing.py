"""Operators that break the 12-octet frame header (0-10 part 4, framing): its size, its format
version, its reserved bits, its segment type and its track. A frame whose header is not valid
cannot be read further: the connection closes with ``framing-error`` ("a valid frame header
cannot be formed from the incoming byte stream")."""

from __future__ import annotations

from amqpfuzz.spec.amqp010.codec import WHOLE, raw

from ...operator import Built
from ...source import Source
from ..context import Context
from ..valid import refusals
from .common import command, operator

__all__: list[str] = []

FRAMING = ("framing-error",)


def _whole(
    src: Source,
    ctx: Context,
    *,
    flags: int = WHOLE,
    size: int | None = None,
    version: int = 0,
    reserved: tuple[int, int, int] = (0, 0, 0),
    type: int | None = None,
    track: int | None = None,
) -> tuple[bytes, str]:
    """A one-segment command in one frame, its header as given."""
    item = command(src, ctx)
    data = raw.frame(
        ctx.command_payload(item),
        flags=flags,
        type=ctx.codec.types.segment_types["command"] if type is None else type,
        track=ctx.codec.types.tracks["command"] if track is None else track,
        size=size,
        version=version,
        reserved=reserved,
    )
    return data, item.name


@operator(
    "frame-size-small",
    "a frame whose size is under the 12 octets of its own header (connection.close-code "
    "framing-error: a valid frame header cannot be formed)",
    "sets the frame header's size to 0-11",
    FRAMING,
    "connection",
    "frame",
)
def frame_size_small(src: Source, ctx: Context) -> Built:
    size = src.below(12)
    data, name = _whole(src, ctx, size=size)
    return Built((ctx.raw(data, f"{name} in a frame of size {size}"),), name, f"size {size}")


@operator(
    "frame-version",
    "a frame of another frame-format version (the top two bits of its first octet are 0 in "
    "0-10: framing-error)",
    "sets the frame format version to 1-3",
    FRAMING,
    "connection",
    "frame",
)
def frame_version(src: Source, ctx: Context) -> Built:
    version = 1 + src.below(3)
    data, name = _whole(src, ctx, version=version)
    return Built((ctx.raw(data, f"{name} in a frame of version {version}"),), name, "version")


@operator(
    "frame-reserved",
    "a frame header whose reserved bits are set (they are zero in 0-10; no reaction is "
    "named: a peer may close with framing-error, must stay up; one that accepts the frame may "
    "refuse its command as it would refuse it well framed)",
    "sets reserved bits of octet 0, octet 4, octet 5 or octets 8-11",
    FRAMING,
    "connection",
    "frame",
    or_reply=True,
)
def frame_reserved(src: Source, ctx: Context) -> Built:
    where = src.below(4)
    flags = WHOLE
    reserved = (0, 0, 0)
    if where == 0:
        flags |= 0x10 << src.below(2)
    else:
        value = 1 + src.below(0xFF)
        reserved = (
            value if where == 1 else 0,
            value & 0xF or 1 if where == 2 else 0,
            value if where == 3 else 0,
        )
    data, name = _whole(src, ctx, flags=flags, reserved=reserved)
    step = ctx.raw(data, f"{name} with reserved bits set")
    # (accepted, the command is as a valid case's: its drawn arguments may be refused)
    return Built((step,), name, f"reserved {where}", tolerated=refusals(ctx))


@operator(
    "segment-type-unknown",
    "a frame of a segment type the segment-type domain does not have (0 control, 1 command, "
    "2 header, 3 body: framing-error)",
    "sets the frame's segment type to 4-255",
    FRAMING,
    "connection",
    "frame",
)
def segment_type_unknown(src: Source, ctx: Context) -> Built:
    known = set(ctx.codec.types.segment_types.values())
    kind = 4 + src.below(252)
    while kind in known:
        kind += 1
    data, name = _whole(src, ctx, type=kind & 0xFF)
    return Built((ctx.raw(data, f"{name} as segment type {kind}"),), name, f"segment type {kind}")


@operator(
    "track-unknown",
    "a frame on a track the track domain does not have (0 control, 1 command: framing-error)",
    "sets the frame's track to 2-15",
    FRAMING,
    "connection",
    "frame",
)
def track_unknown(src: Source, ctx: Context) -> Built:
    known = set(ctx.codec.types.tracks.values())
    track = next(t for t in range(2 + src.below(14), 32) if t not in known) & 0xF
    data, name = _whole(src, ctx, track=track)
    return Built((ctx.raw(data, f"{name} on track {track}"),), name, f"track {track}")
