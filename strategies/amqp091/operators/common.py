"""What the operators share: a plain frame to break and what must go around it."""

from __future__ import annotations

import functools

from amqpfuzz.spec.amqp091.codec import MethodFrame, raw

from ..context import Context
from ..source import Source
from ..wire import CASE_CHANNEL, WireFrame

__all__ = [
    "END",
    "base_frame",
    "bytes_except",
    "not_end",
    "other_class",
    "publish_frame",
    "spare_flags",
    "with_end",
    "with_larger_size",
    "with_setup",
    "with_smaller_size",
]


END = raw.FRAME_END


@functools.cache
def bytes_except(excluded: frozenset[int]) -> tuple[int, ...]:
    return tuple(b for b in range(256) if b not in excluded)


def not_end(src: Source) -> int:
    return int(src.pick(bytes_except(frozenset({END}))))


def with_end(src: Source, wire: WireFrame) -> tuple[WireFrame, int]:
    """``wire`` ended by another octet than 0xCE, and that octet."""
    end = not_end(src)
    return wire._replace(end=end, note=f"with frame-end 0x{end:02x}"), end


def with_larger_size(src: Source, wire: WireFrame) -> tuple[WireFrame, int]:
    """``wire`` with a size field larger than its payload by 1 to 16 octets (the reader reads
    that far into what follows, where it wants 0xCE), and by how much."""
    extra = src.between(1, 16)
    trailer = src.take(extra - 1) + bytes((not_end(src),))
    size = len(wire.payload) + extra
    return wire._replace(size=size, trailer=trailer, note=f"with size {size} (+{extra})"), extra


def with_smaller_size(src: Source, wire: WireFrame) -> tuple[WireFrame, int]:
    """``wire`` with a size field smaller than its payload, and by how much: never where the
    short size would find a 0xCE in the payload to end the frame."""
    payload = wire.payload
    cuts = tuple(k for k in range(1, len(payload) + 1) if payload[len(payload) - k] != END)
    cut = int(src.pick(cuts))
    size = len(payload) - cut
    return wire._replace(size=size, note=f"with size {size} (-{cut})"), cut


def other_class(src: Source, class_id: int) -> int:
    """A class id other than ``class_id``, for a content header that contradicts its method."""
    other = src.between(0, 0xFFFF)
    return other ^ 1 if other == class_id else other


def spare_flags(src: Source, count: int) -> int:
    """Property flags with at least the first of the bits a class of ``count`` properties does
    not define set."""
    spare = [15 - i for i in range(count, 15)] or [0]
    return sum(1 << b for i, b in enumerate(spare) if i == 0 or src.byte() & 1)


def base_frame(
    src: Source, ctx: Context, fields_only: bool = False
) -> tuple[MethodFrame, WireFrame, tuple[WireFrame, ...]]:
    """A plain frame to break, its wire form, and what must follow it (a content method's
    header), so that a broker that lets the breakage pass sees an otherwise valid stream.
    The declarations it needs go first: see :func:`with_setup`."""
    methods = ctx.neutral_methods
    if fields_only:
        methods = tuple(m for m in methods if m.fields)
    frame = ctx.neutral(src, methods)
    return frame, ctx.wire(frame), ctx.completion(frame)


def with_setup(ctx: Context, frame: MethodFrame, *steps: WireFrame) -> tuple[WireFrame, ...]:
    """``steps`` made from ``frame``, after the declarations of what it names."""
    return (*ctx.setup(frame), *steps)


def publish_frame(src: Source, ctx: Context) -> MethodFrame:
    """A content method with plain arguments (the default exchange, a routing key nobody
    binds), so that what happens to its content is all that can go wrong."""
    frame = ctx.neutral(src, ctx.content_methods)
    values = [
        "" if f.domain == "exchange-name" else v
        for f, v in zip(frame.method.fields, frame.values, strict=True)
    ]
    return MethodFrame(CASE_CHANNEL, frame.method, tuple(values))
