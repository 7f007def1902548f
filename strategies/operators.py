"""The mutation operators themselves: each draws valid frames and breaks them one way.

Operators only say *which* reply-code constants answer them; values and hard/soft come from
the loaded specification (:meth:`Mutation.reaction`). The sequence operators' codes are the
ones :data:`~amqpfuzz.spec.state.CHANNEL_TRANSITIONS` gives for the same situation.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from amqpfuzz.spec import Field, Method, Spec
from amqpfuzz.spec.asserts import assert_limits
from amqpfuzz.spec.codec import ContentBody, ContentHeader, Frame, MethodFrame, raw
from amqpfuzz.spec.codec.tables import DIALECTS, MAX_DEPTH

from .cases import CASE_CHANNEL, WireFrame, label_of
from .frames import content_frames
from .mutations import BuildFn, Built, Context, Mutation

__all__ = ["CATALOGUE", "catalogue"]

_FRAME_END = raw.FRAME_END


def _base(
    draw: st.DrawFn, ctx: Context, methods: tuple[Method, ...] | None = None
) -> tuple[MethodFrame, WireFrame]:
    frame = draw(ctx.frame_of(methods or ctx.channel_methods))
    return frame, ctx.wire(frame)


def _ref(frame: Frame) -> str:
    return frame.name if hasattr(frame, "name") else type(frame).__name__


# -- the frame around the payload ----------------------------------------------------------------


def frame_end(draw: st.DrawFn, ctx: Context) -> Built:
    frame, wire = _base(draw, ctx)
    end = draw(st.integers(0, 255).filter(lambda b: b != _FRAME_END))
    broken = replace(wire, end=end, label=f"{wire.label} with frame-end 0x{end:02x}")
    return Built((broken,), _ref(frame), f"frame-end 0x{end:02x}", frames=(frame,))


def size_larger(draw: st.DrawFn, ctx: Context) -> Built:
    frame, wire = _base(draw, ctx)
    extra = draw(st.integers(1, 16))
    # the broker reads ``extra`` bytes past the real end; the last is where it wants 0xCE
    filler = draw(st.binary(min_size=extra - 1, max_size=extra - 1))
    last = draw(st.integers(0, 255).filter(lambda b: b != _FRAME_END))
    size = len(wire.payload) + extra
    broken = replace(
        wire,
        size=size,
        trailer=filler + bytes((last,)),
        label=f"{wire.label} with size {size} (+{extra})",
    )
    return Built((broken,), _ref(frame), f"size field {extra} larger", frames=(frame,))


def size_smaller(draw: st.DrawFn, ctx: Context) -> Built:
    frame, wire = _base(draw, ctx)
    # where the short size puts the frame end, the payload must not happen to hold 0xCE
    cuts = [
        k
        for k in range(1, len(wire.payload) + 1)
        if wire.payload[len(wire.payload) - k] != _FRAME_END
    ]
    cut = draw(st.sampled_from(cuts))
    size = len(wire.payload) - cut
    broken = replace(wire, size=size, label=f"{wire.label} with size {size} (-{cut})")
    return Built((broken,), _ref(frame), f"size field {cut} smaller", frames=(frame,))


def unknown_frame_type(draw: st.DrawFn, ctx: Context) -> Built:
    known = {
        ctx.codec.frame_method,
        ctx.codec.frame_header,
        ctx.codec.frame_body,
        ctx.codec.frame_heartbeat,
    }
    frame, wire = _base(draw, ctx)
    kind = draw(st.integers(0, 255).filter(lambda t: t not in known))
    broken = replace(wire, frame_type=kind, label=f"{wire.label} as frame type {kind}")
    return Built((broken,), _ref(frame), f"frame type {kind}", frames=(frame,))


def above_frame_max(draw: st.DrawFn, ctx: Context) -> Built:
    publish = draw(ctx.frame_of(ctx.content_methods))
    chunk = ctx.frame_max - 8
    over = draw(st.integers(1, 64))
    body = b"\x00" * (chunk + over)
    header = ContentHeader(CASE_CHANNEL, publish.method.class_index, len(body), {})
    big = WireFrame(
        ctx.codec.frame_body,
        CASE_CHANNEL,
        body,
        f"body(ch=N, {len(body)} bytes: a frame of {len(body) + 8} > frame-max {ctx.frame_max})",
    )
    steps = (ctx.wire(publish), ctx.wire(header), big)
    return Built(
        steps, _ref(publish), f"body frame {over} bytes above frame-max", frames=(publish, header)
    )


def heartbeat_payload(draw: st.DrawFn, ctx: Context) -> Built:
    payload = draw(st.binary(min_size=1, max_size=16))
    step = WireFrame(
        ctx.codec.frame_heartbeat, 0, payload, f"heartbeat() with a {len(payload)}-byte payload"
    )
    return Built((step,), "heartbeat", "heartbeat with payload", channel="none")


def heartbeat_channel(draw: st.DrawFn, ctx: Context) -> Built:
    step = WireFrame(ctx.codec.frame_heartbeat, CASE_CHANNEL, b"", "heartbeat(ch=N)")
    return Built((step,), "heartbeat", "heartbeat on a channel")


# -- the method payload ----------------------------------------------------------------------------


def _with_fields(ctx: Context) -> tuple[Method, ...]:
    return tuple(m for m in ctx.channel_methods if m.fields)


def truncated(draw: st.DrawFn, ctx: Context) -> Built:
    frame, wire = _base(draw, ctx, _with_fields(ctx))
    keep = draw(st.integers(4, len(wire.payload) - 1))
    broken = replace(
        wire,
        payload=wire.payload[:keep],
        label=f"{wire.label} cut to {keep} of {len(wire.payload)} payload bytes",
    )
    return Built((broken,), _ref(frame), f"arguments cut after {keep - 4} bytes", frames=(frame,))


def trailing(draw: st.DrawFn, ctx: Context) -> Built:
    frame, wire = _base(draw, ctx)
    extra = draw(st.binary(min_size=1, max_size=16))
    broken = replace(wire, payload=wire.payload + extra, label=f"{wire.label} + {extra!r}")
    return Built((broken,), _ref(frame), f"{len(extra)} bytes after the arguments", frames=(frame,))


def unknown_class(draw: st.DrawFn, ctx: Context) -> Built:
    known = {c.index for c in ctx.spec.classes}
    class_id = draw(st.integers(0, 0xFFFF).filter(lambda c: c not in known))
    method_id = draw(st.integers(0, 0xFFFF))
    args = draw(st.binary(max_size=16))
    step = WireFrame(
        ctx.codec.frame_method,
        CASE_CHANNEL,
        raw.method_payload(class_id, method_id, args),
        f"method {class_id}/{method_id} (no such class) + {args!r}",
    )
    return Built((step,), f"class {class_id}", "unknown class id")


def unknown_method(draw: st.DrawFn, ctx: Context) -> Built:
    amqp_class = draw(
        st.sampled_from(
            [c for c in ctx.spec.classes if c.handler == "channel" and c.name != "channel"]
        )
    )
    known = {m.index for m in amqp_class.methods}
    method_id = draw(st.integers(0, 0xFFFF).filter(lambda m: m not in known))
    step = WireFrame(
        ctx.codec.frame_method,
        CASE_CHANNEL,
        raw.method_payload(amqp_class.index, method_id),
        f"method {amqp_class.name}/{method_id} (no such method)",
    )
    return Built((step,), f"{amqp_class.name}.?", "unknown method id")


def _pick_field(
    draw: st.DrawFn, ctx: Context, wanted: set[str], require_asserts: bool = False
) -> tuple[MethodFrame, int, Field]:
    candidates = [
        (m, i)
        for m in ctx.channel_methods
        for i, f in enumerate(m.fields)
        if f.type in wanted and not f.reserved and (f.asserts or not require_asserts)
    ]
    method, index = draw(st.sampled_from(candidates))
    frame = draw(ctx.frame_of((method,)))
    return frame, index, method.fields[index]


def _payload_with(ctx: Context, frame: MethodFrame, index: int, data: bytes) -> bytes:
    method = frame.method
    values: list[object] = list(frame.values)
    values[index] = raw.Raw(data)
    return raw.method_payload(
        method.class_index, method.index, raw.arguments(method, values, ctx.codec.dialect)
    )


def _field_step(ctx: Context, frame: MethodFrame, index: int, data: bytes, what: str) -> WireFrame:
    return WireFrame(
        ctx.codec.frame_method,
        CASE_CHANNEL,
        _payload_with(ctx, frame, index, data),
        f"{label_of(frame)} with {what}",
    )


def assert_violation(draw: st.DrawFn, ctx: Context) -> Built:
    frame, index, fld = _pick_field(
        draw,
        ctx,
        {"shortstr", "longstr", "short", "octet", "long", "longlong"},
        require_asserts=True,
    )
    notnull, max_length, pattern = assert_limits(fld.asserts)
    options = []
    if notnull:
        options.append(("notnull", "" if fld.type.endswith("str") else 0))
    if max_length is not None and fld.type == "shortstr" and max_length < 255:
        options.append((f"length {max_length}", "a" * draw(st.integers(max_length + 1, 255))))
    if pattern is not None and fld.type == "shortstr":
        options.append((f"regexp {pattern}", draw(st.sampled_from(["a b", "a/b", "é", "a*", "#"]))))
    what, value = draw(st.sampled_from(options))
    values = list(frame.values)
    values[index] = value
    broken = replace(frame, values=tuple(values))
    step = ctx.wire(broken)
    step = replace(step, label=f"{step.label} ({fld.name} breaks {what})")
    return Built(
        (step,), f"{_ref(frame)}/{fld.name}", f"{fld.name} breaks {what}", frames=(broken,)
    )


def string_overrun(draw: st.DrawFn, ctx: Context) -> Built:
    frame, index, fld = _pick_field(draw, ctx, {"shortstr", "longstr"})
    value = frame.values[index]
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    rest = len(_payload_with(ctx, frame, index, b"")) - 4  # bytes the other fields take
    width = 1 if fld.type == "shortstr" else 4
    least = len(data) + rest + 1  # enough to run past the payload's end
    top = 255 if width == 1 else 2**32 - 1
    if least > top:  # a short string cannot lie that far: make it a lie about a longer string
        data, least = b"", rest + 1
    length = draw(st.integers(min(least, top), min(least + 64, top)))
    prefix = raw.octet(length) if width == 1 else raw.long(length)
    step = _field_step(
        ctx, frame, index, prefix + data, f"{fld.name} length prefix {length} for {len(data)} bytes"
    )
    return Built(
        (step,),
        f"{_ref(frame)}/{fld.name}",
        f"{fld.name} length {length} overruns the frame",
        frames=(frame,),
    )


def bad_utf8(draw: st.DrawFn, ctx: Context) -> Built:
    frame, index, fld = _pick_field(draw, ctx, {"shortstr"})
    junk = draw(
        st.sampled_from(
            [
                b"\xff",
                b"\xc3(",
                b"\xe2\x28\xa1",
                b"\xed\xa0\x80",
                b"\xf8\x88\x80\x80\x80",
                b"a\x80b",
            ]
        )
    )
    step = _field_step(ctx, frame, index, raw.shortstr(junk), f"{fld.name} = {junk!r} (not UTF-8)")
    return Built((step,), f"{_ref(frame)}/{fld.name}", f"{fld.name} is not UTF-8", frames=(frame,))


def _table_field(draw: st.DrawFn, ctx: Context) -> tuple[MethodFrame, int, Field]:
    return _pick_field(draw, ctx, {"table"})


def bad_table_type(draw: st.DrawFn, ctx: Context) -> Built:
    frame, index, fld = _table_field(draw, ctx)
    known = {ord(c) for c in DIALECTS[ctx.codec.dialect]}
    code = draw(st.integers(0, 255).filter(lambda c: c not in known))
    payload = draw(st.binary(max_size=8))
    table = raw.table([raw.TableEntry(b"key", bytes((code,)), payload)])
    step = _field_step(
        ctx, frame, index, table, f"{fld.name} entry of type code {bytes((code,))!r}"
    )
    return Built(
        (step,), f"{_ref(frame)}/{fld.name}", f"table type code {bytes((code,))!r}", frames=(frame,)
    )


def table_overrun(draw: st.DrawFn, ctx: Context) -> Built:
    frame, index, fld = _table_field(draw, ctx)
    rest = len(_payload_with(ctx, frame, index, b"")) - 4
    length = draw(st.integers(rest + 1, rest + 4096))
    step = _field_step(
        ctx, frame, index, raw.long(length), f"{fld.name} length prefix {length}, no entries"
    )
    return Built(
        (step,),
        f"{_ref(frame)}/{fld.name}",
        f"table length {length} overruns the frame",
        frames=(frame,),
    )


def deep_table(draw: st.DrawFn, ctx: Context) -> Built:
    frame, index, fld = _table_field(draw, ctx)
    depth = draw(st.integers(MAX_DEPTH + 1, MAX_DEPTH + 64))
    table_code = next(c for c, k in DIALECTS[ctx.codec.dialect].items() if k == "table").encode()
    inner = raw.table([])
    for _ in range(depth):
        inner = raw.table([raw.TableEntry(b"t", table_code, inner)])
    step = _field_step(ctx, frame, index, inner, f"{fld.name} nested {depth} tables deep")
    return Built(
        (step,), f"{_ref(frame)}/{fld.name}", f"tables nested {depth} deep", frames=(frame,)
    )


# -- content ---------------------------------------------------------------------------------------


def _content(draw: st.DrawFn, ctx: Context, min_body: int = 0) -> tuple[MethodFrame, list[Frame]]:
    """A content method and its header and bodies (a body of at least ``min_body`` bytes)."""
    publish = draw(ctx.frame_of(ctx.content_methods))
    content = content_frames(
        ctx.spec,
        publish.method.class_name,
        CASE_CHANNEL,
        ctx.frame_max,
        dialect=ctx.codec.dialect,
        min_body=min_body,
    )
    return publish, draw(content)


def header_alone(draw: st.DrawFn, ctx: Context) -> Built:
    _, frames = _content(draw, ctx)
    return Built(
        tuple(ctx.wire(f) for f in frames[:1]),
        "content",
        "content header with no method",
        frames=tuple(frames[:1]),
    )


def body_alone(draw: st.DrawFn, ctx: Context) -> Built:
    body = ContentBody(CASE_CHANNEL, draw(st.binary(min_size=1, max_size=64)))
    return Built((ctx.wire(body),), "content", "body with no header", frames=(body,))


def body_too_long(draw: st.DrawFn, ctx: Context) -> Built:
    publish, frames = _content(draw, ctx)
    extra = ContentBody(CASE_CHANNEL, draw(st.binary(min_size=1, max_size=32)))
    sequence = [publish, *frames, extra]
    return Built(
        tuple(ctx.wire(f) for f in sequence),
        _ref(publish),
        f"{len(extra.payload)} body bytes more than declared",
        frames=tuple(sequence),
    )


def method_in_content(draw: st.DrawFn, ctx: Context) -> Built:
    publish, frames = _content(draw, ctx, min_body=1)
    intruder = draw(ctx.frame_of(ctx.channel_methods))
    cut = draw(st.integers(1, len(frames) - 1))  # after the header, before the last body
    sequence = [publish, *frames[:cut], intruder, *frames[cut:]]
    return Built(
        tuple(ctx.wire(f) for f in sequence),
        _ref(publish),
        f"{intruder.name} inside the content",
        frames=tuple(sequence),
    )


def header_class(draw: st.DrawFn, ctx: Context) -> Built:
    publish, frames = _content(draw, ctx)
    header = frames[0]
    assert isinstance(header, ContentHeader)
    other = draw(st.integers(0, 0xFFFF).filter(lambda c: c != header.class_id))
    wire = ctx.wire(header)
    payload = raw.short(other) + wire.payload[2:]
    broken = replace(wire, payload=payload, label=f"{wire.label} with class {other}")
    steps = (ctx.wire(publish), broken, *(ctx.wire(f) for f in frames[1:]))
    return Built(
        steps,
        _ref(publish),
        f"header class {other} after {publish.method.class_name}",
        frames=(publish,),
    )


def property_flags(draw: st.DrawFn, ctx: Context) -> Built:
    publish, frames = _content(draw, ctx)
    header = frames[0]
    assert isinstance(header, ContentHeader)
    count = len(ctx.spec.amqp_class(publish.method.class_name).properties)
    spare = [15 - i for i in range(count, 15)] if count < 15 else []
    bits = draw(st.lists(st.sampled_from(spare), min_size=1, unique=True))
    flags = sum(1 << b for b in bits)
    payload = raw.content_header(header.class_id, header.body_size, flags)
    step = WireFrame(
        ctx.codec.frame_header,
        CASE_CHANNEL,
        payload,
        f"header(ch=N, class={header.class_id}, size={header.body_size}) with flags 0x{flags:04x}",
    )
    return Built(
        (ctx.wire(publish), step), _ref(publish), f"property flags 0x{flags:04x}", frames=(publish,)
    )


# -- channels and order ----------------------------------------------------------------------------


def closed_channel(draw: st.DrawFn, ctx: Context) -> Built:
    frame = draw(ctx.frame_of(ctx.channel_methods))
    return Built(
        (ctx.wire(frame),),
        _ref(frame),
        "on a channel that is not open",
        channel="closed",
        frames=(frame,),
    )


def before_open(draw: st.DrawFn, ctx: Context) -> Built:
    first = draw(ctx.frame_of(ctx.channel_methods))
    opener = ctx.codec.method("channel.open", CASE_CHANNEL)
    return Built(
        (ctx.wire(first), ctx.wire(opener)),
        _ref(first),
        f"{first.name} before channel.open",
        channel="closed",
        frames=(first, opener),
    )


def reopen(draw: st.DrawFn, ctx: Context) -> Built:
    opener = ctx.codec.method("channel.open", CASE_CHANNEL)
    return Built(
        (ctx.wire(opener),),
        "channel.open/state",
        "channel.open on an open channel",
        frames=(opener,),
    )


def connection_on_channel(draw: st.DrawFn, ctx: Context) -> Built:
    frame = draw(ctx.frame_of(ctx.connection_methods))
    return Built((ctx.wire(frame),), _ref(frame), "connection method on a channel", frames=(frame,))


def channel_zero(draw: st.DrawFn, ctx: Context) -> Built:
    frame = draw(ctx.frame_of(ctx.channel_methods, channel=0))
    return Built(
        (ctx.wire(frame),),
        _ref(frame),
        "channel method on channel 0",
        channel="none",
        frames=(frame,),
    )


def _op(
    name: str,
    description: str,
    breaks: str,
    codes: tuple[str, ...],
    level: str,
    build: BuildFn,
    *,
    or_reply: bool = False,
    rule: str | None = None,
) -> Mutation:
    return Mutation(name, description, breaks, codes, level, build, or_reply=or_reply, rule=rule)


CATALOGUE: tuple[Mutation, ...] = (
    _op(
        "frame-end",
        "frame-end octet",
        "replaces the 0xCE that ends a frame",
        ("frame-error",),
        "frame",
        frame_end,
    ),
    _op(
        "size-larger",
        "frame size field",
        "declares more payload than follows",
        ("frame-error",),
        "frame",
        size_larger,
    ),
    _op(
        "size-smaller",
        "frame size field",
        "declares less payload than follows",
        ("frame-error",),
        "frame",
        size_smaller,
    ),
    _op(
        "unknown-frame-type",
        "frame type",
        "sends a frame type the specification does not define",
        ("frame-error",),
        "frame",
        unknown_frame_type,
    ),
    _op(
        "above-frame-max",
        "negotiated frame-max",
        "sends a body frame larger than frame-max",
        ("frame-error",),
        "frame",
        above_frame_max,
    ),
    _op(
        "heartbeat-payload",
        "heartbeat frame",
        "gives a heartbeat a payload",
        ("frame-error",),
        "frame",
        heartbeat_payload,
    ),
    _op(
        "heartbeat-channel",
        "heartbeat frame",
        "sends a heartbeat on a channel other than 0",
        ("unexpected-frame",),
        "frame",
        heartbeat_channel,
    ),
    _op(
        "truncated-arguments",
        "method arguments",
        "cuts the method's arguments short",
        ("frame-error",),
        "frame",
        truncated,
    ),
    _op(
        "trailing-bytes",
        "method arguments",
        "appends bytes after the last argument",
        ("frame-error",),
        "frame",
        trailing,
    ),
    _op(
        "unknown-class",
        "class id",
        "names a class the specification does not define",
        ("command-invalid", "not-implemented"),
        "frame",
        unknown_class,
    ),
    _op(
        "unknown-method",
        "method id",
        "names a method its class does not define",
        ("command-invalid", "not-implemented"),
        "frame",
        unknown_method,
    ),
    _op(
        "assert-violation",
        "domain assert",
        "gives a field a value its domain's asserts forbid",
        ("syntax-error",),
        "frame",
        assert_violation,
    ),
    _op(
        "string-overrun",
        "string length prefix",
        "declares a string longer than the frame",
        ("frame-error",),
        "frame",
        string_overrun,
    ),
    _op(
        "invalid-utf8",
        "short string",
        "puts bytes that are not UTF-8 in a short string",
        ("syntax-error",),
        "frame",
        bad_utf8,
    ),
    _op(
        "table-type",
        "field table",
        "uses a field-table type code the dialect does not define",
        ("syntax-error",),
        "frame",
        bad_table_type,
    ),
    _op(
        "table-overrun",
        "field table",
        "declares a table longer than the frame",
        ("frame-error",),
        "frame",
        table_overrun,
    ),
    _op(
        "deep-table",
        "field table",
        "nests tables beyond any sane depth",
        ("syntax-error",),
        "frame",
        deep_table,
        or_reply=True,
    ),
    _op(
        "header-class",
        "content header",
        "gives the header another class than its method",
        ("frame-error",),
        "frame",
        header_class,
    ),
    _op(
        "property-flags",
        "content header",
        "sets property flags the class does not define",
        ("syntax-error", "frame-error"),
        "frame",
        property_flags,
    ),
    _op(
        "header-alone",
        "content order",
        "sends a content header with no method before it",
        ("unexpected-frame",),
        "sequence",
        header_alone,
    ),
    _op(
        "body-alone",
        "content order",
        "sends a body frame with no header before it",
        ("unexpected-frame",),
        "sequence",
        body_alone,
    ),
    _op(
        "body-too-long",
        "content size",
        "sends more body bytes than the header declared",
        ("unexpected-frame",),
        "sequence",
        body_too_long,
    ),
    _op(
        "method-in-content",
        "content order",
        "sends a method before the content is complete",
        ("unexpected-frame",),
        "sequence",
        method_in_content,
    ),
    _op(
        "closed-channel",
        "channel state",
        "sends a method on a channel that is not open",
        ("channel-error",),
        "sequence",
        closed_channel,
    ),
    _op(
        "before-open",
        "method order",
        "sends a method before channel.open",
        ("channel-error",),
        "sequence",
        before_open,
    ),
    _op(
        "channel-reopen",
        "method order",
        "opens a channel that is already open",
        ("channel-error",),
        "sequence",
        reopen,
        rule="channel.open/state",
    ),
    _op(
        "connection-on-channel",
        "channel number",
        "sends a connection method on a channel other than 0",
        ("command-invalid", "channel-error"),
        "sequence",
        connection_on_channel,
    ),
    _op(
        "channel-zero",
        "channel number",
        "sends a channel-level method on channel 0",
        ("command-invalid", "channel-error"),
        "sequence",
        channel_zero,
    ),
)


def catalogue(spec: Spec | None = None) -> tuple[Mutation, ...]:
    """The operators that apply to ``spec`` (all of them when no spec is given)."""
    if spec is None:
        return CATALOGUE
    return tuple(op for op in CATALOGUE if op.applies_to(spec))
