"""Operators on content: headers and bodies out of order, of the wrong class or size."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, Frame, MethodFrame, raw

from ...operator import Built, Operator, registrar
from ..context import CODES, Context
from ..frames import body_size, content_builder
from ..source import Source
from ..wire import CASE_CHANNEL, WireFrame
from .common import other_class, publish_frame, spare_flags

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)


def _content(
    src: Source,
    ctx: Context,
    least: int = 0,
    bodies: bool = True,
    plain: bool = False,
    most: int | None = None,
) -> tuple[MethodFrame, list[Frame]]:
    """A content method and its header and bodies (a body of at least ``least`` bytes; only
    the header if ``bodies`` is false). ``plain`` content has no properties: when the order
    or size of frames is what is broken, a property (an expiration a broker cannot parse)
    must not be what the broker answers."""
    publish = publish_frame(src, ctx)
    if plain:
        size = body_size(src, ctx.frame_max, least, most)
        chunk = ctx.frame_max - 8
        header = ContentHeader(CASE_CHANNEL, publish.method.class_index, size, {})
        frames: list[Frame] = [header]
        frames += [
            ContentBody(CASE_CHANNEL, bytes(min(chunk, size - i))) for i in range(0, size, chunk)
        ]
        return publish, frames
    build = content_builder(
        ctx.spec,
        publish.method.class_name,
        ctx.frame_max,
        ctx.codec.dialect,
        False,
        least,
        None,
        bodies,
    )
    return publish, build(src, CASE_CHANNEL)


def _sequence(ctx: Context, frames: list[Frame]) -> tuple[WireFrame, ...]:
    return tuple(ctx.wire(f) for f in frames)


@operator(
    "header-class",
    "content header",
    "gives the header another class than its method",
    ("frame-error",),
    "sequence",
)
def header_class(src: Source, ctx: Context) -> Built:
    """Section 4.2.6.1 answers an invalid class-id with 501 frame-error; section 4.2.6 counts
    "wrong class IDs in content headers" among badly formatted content, 505 unexpected-frame:
    either, where the spec defines the code (0-8 and 0-9 have no unexpected-frame)."""
    publish, frames = _content(src, ctx, plain=True)
    header = frames[0]
    assert isinstance(header, ContentHeader)
    other = other_class(src, header.class_id)
    wire = ctx.wire(header)
    broken = wire._replace(payload=raw.short(other) + wire.payload[2:], note=f"with class {other}")
    steps = (ctx.wire(publish), broken, *_sequence(ctx, frames[1:]))
    note = f"header class {other} after {publish.method.class_name}"
    defined = CODES.names(ctx.spec)
    codes = tuple(c for c in ("frame-error", "unexpected-frame") if c in defined)
    return Built(steps, publish.name, note, frames=(publish,), codes=codes)


@operator(
    "property-flags",
    "content header",
    "sets property flags the class does not define",
    ("syntax-error", "frame-error"),
    "frame",
)
def property_flags(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, plain=True, most=0)  # no body: the header is all
    header = frames[0]
    assert isinstance(header, ContentHeader)
    flags = spare_flags(src, len(ctx.spec.amqp_class(publish.method.class_name).properties))
    payload = raw.content_header(header.class_id, header.body_size, flags)
    label = (
        f"header(ch=N, class={header.class_id}, size={header.body_size}) with flags 0x{flags:04x}"
    )
    step = WireFrame(ctx.codec.frame_header, CASE_CHANNEL, payload, note=label)
    return Built(
        (ctx.wire(publish), step), publish.name, f"property flags 0x{flags:04x}", frames=(publish,)
    )


@operator(
    "header-alone",
    "content order",
    "sends a content header with no method before it",
    ("unexpected-frame",),
    "sequence",
)
def header_alone(src: Source, ctx: Context) -> Built:
    _, frames = _content(src, ctx, bodies=False)
    return Built(
        _sequence(ctx, frames[:1]),
        "content",
        "content header with no method",
        frames=tuple(frames[:1]),
    )


@operator(
    "body-alone",
    "content order",
    "sends a body frame with no header before it",
    ("unexpected-frame",),
    "sequence",
)
def body_alone(src: Source, ctx: Context) -> Built:
    body = ContentBody(CASE_CHANNEL, src.take(src.between(1, 64)))
    return Built((ctx.wire(body),), "content", "body with no header", frames=(body,))


@operator(
    "body-too-long",
    "content size",
    "sends more body bytes than the header declared",
    ("unexpected-frame",),
    "sequence",
)
def body_too_long(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, plain=True)
    extra = ContentBody(CASE_CHANNEL, src.take(src.between(1, 32)))
    sequence = [publish, *frames, extra]
    note = f"{len(extra.payload)} body bytes more than declared"
    return Built(_sequence(ctx, sequence), publish.name, note, frames=tuple(sequence))


@operator(
    "method-in-content",
    "content order",
    "sends a method before the content is complete",
    ("unexpected-frame",),
    "sequence",
)
def method_in_content(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, least=1, plain=True)
    intruder = ctx.neutral(src, ctx.channel_methods)
    cut = src.between(1, len(frames) - 1)  # after the header, before the last body
    sequence = [publish, *frames[:cut], intruder, *frames[cut:]]
    note = f"{intruder.name} inside the content"
    return Built(_sequence(ctx, sequence), publish.name, note, frames=tuple(sequence))
