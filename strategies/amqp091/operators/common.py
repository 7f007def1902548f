"""What the operators share: a plain frame to break and what must go around it."""

from __future__ import annotations

import functools

from amqpfuzz.spec.amqp091.codec import MethodFrame, raw

from ..context import Context
from ..source import Source
from ..wire import CASE_CHANNEL, WireFrame

__all__ = ["END", "base_frame", "bytes_except", "not_end", "publish_frame", "with_setup"]


END = raw.FRAME_END


@functools.cache
def bytes_except(excluded: frozenset[int]) -> tuple[int, ...]:
    return tuple(b for b in range(256) if b not in excluded)


def not_end(src: Source) -> int:
    return int(src.pick(bytes_except(frozenset({END}))))


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
