"""The mutation operators themselves: each reads valid frames from a source and breaks them.

Operators only say *which* reply-code constants answer them; values and hard/soft come from
the loaded specification (:meth:`Mutation.reaction`). The sequence operators' codes are the
ones :data:`~amqpfuzz.spec.state.CHANNEL_TRANSITIONS` gives for the same situation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from amqpfuzz.spec import Field, Method, Spec
from amqpfuzz.spec.asserts import limits, violation
from amqpfuzz.spec.codec import ContentBody, ContentHeader, Frame, MethodFrame, raw
from amqpfuzz.spec.codec.tables import DIALECTS, MAX_DEPTH

from .cases import CASE_CHANNEL, WireFrame
from .frames import ENTITY_DOMAINS, ZERO, body_size, content_builder
from .mutations import BuildFn, Built, Context, Mutation
from .source import Source

__all__ = ["CATALOGUE", "catalogue"]

_END = raw.FRAME_END


@functools.cache
def _bytes_except(excluded: frozenset[int]) -> tuple[int, ...]:
    return tuple(b for b in range(256) if b not in excluded)


def _not_end(src: Source) -> int:
    return int(src.pick(_bytes_except(frozenset({_END}))))


def _base(
    src: Source, ctx: Context, fields_only: bool = False
) -> tuple[MethodFrame, WireFrame, tuple[WireFrame, ...]]:
    """A plain frame to break, its wire form, and what must follow it (a content method's
    header), so that a broker that lets the breakage pass sees an otherwise valid stream.
    The declarations it needs go first: see :func:`_framed`."""
    methods = ctx.neutral_methods
    if fields_only:
        methods = tuple(m for m in methods if m.fields)
    frame = ctx.neutral(src, methods)
    return frame, ctx.wire(frame), ctx.completion(frame)


def _framed(ctx: Context, frame: MethodFrame, *steps: WireFrame) -> tuple[WireFrame, ...]:
    """``steps`` made from ``frame``, after the declarations of what it names."""
    return (*ctx.setup(frame), *steps)


# -- the frame around the payload ----------------------------------------------------------------


def frame_end(src: Source, ctx: Context) -> Built:
    frame, wire, tail = _base(src, ctx)
    end = _not_end(src)
    broken = wire._replace(end=end, note=f"with frame-end 0x{end:02x}")
    return Built(
        _framed(ctx, frame, broken, *tail), frame.name, f"frame-end 0x{end:02x}", frames=(frame,)
    )


def size_larger(src: Source, ctx: Context) -> Built:
    frame, wire, tail = _base(src, ctx)
    extra = src.between(1, 16)
    # the broker reads ``extra`` bytes past the real end; the last is where it wants 0xCE
    trailer = src.take(extra - 1) + bytes((_not_end(src),))
    size = len(wire.payload) + extra
    broken = wire._replace(size=size, trailer=trailer, note=f"with size {size} (+{extra})")
    return Built(
        _framed(ctx, frame, broken, *tail),
        frame.name,
        f"size field {extra} larger",
        frames=(frame,),
    )


def size_smaller(src: Source, ctx: Context) -> Built:
    frame, wire, tail = _base(src, ctx)
    payload = wire.payload
    # where the short size puts the frame end, the payload must not happen to hold 0xCE
    cuts = tuple(k for k in range(1, len(payload) + 1) if payload[len(payload) - k] != _END)
    cut = int(src.pick(cuts))
    size = len(payload) - cut
    broken = wire._replace(size=size, note=f"with size {size} (-{cut})")
    return Built(
        _framed(ctx, frame, broken, *tail), frame.name, f"size field {cut} smaller", frames=(frame,)
    )


def unknown_frame_type(src: Source, ctx: Context) -> Built:
    codec = ctx.codec
    known = {codec.frame_method, codec.frame_header, codec.frame_body, codec.frame_heartbeat}
    frame, wire, tail = _base(src, ctx)
    kind = int(src.pick(_bytes_except(frozenset(known))))
    broken = wire._replace(frame_type=kind, note=f"as frame type {kind}")
    return Built(
        _framed(ctx, frame, broken, *tail), frame.name, f"frame type {kind}", frames=(frame,)
    )


def above_frame_max(src: Source, ctx: Context) -> Built:
    publish = _publish(src, ctx)
    over = src.between(1, 64)
    body = bytes(ctx.frame_max - 8 + over)
    header = ContentHeader(CASE_CHANNEL, publish.method.class_index, len(body), {})
    big = WireFrame(
        ctx.codec.frame_body,
        CASE_CHANNEL,
        body,
        f"body(ch=N, {len(body)} bytes: a frame of {len(body) + 8} > frame-max {ctx.frame_max})",
    )
    steps = (ctx.wire(publish), ctx.wire(header), big)
    note = f"body frame {over} bytes above frame-max"
    return Built(steps, publish.name, note, frames=(publish, header))


def heartbeat_payload(src: Source, ctx: Context) -> Built:
    payload = src.take(src.between(1, 16))
    label = f"heartbeat() with a {len(payload)}-byte payload"
    step = WireFrame(ctx.codec.frame_heartbeat, 0, payload, note=label)
    return Built((step,), "heartbeat", "heartbeat with payload", channel="none")


def heartbeat_channel(src: Source, ctx: Context) -> Built:
    step = WireFrame(ctx.codec.frame_heartbeat, CASE_CHANNEL, b"", "heartbeat(ch=N)")
    return Built((step,), "heartbeat", "heartbeat on a channel")


# -- the method payload ----------------------------------------------------------------------------


def truncated(src: Source, ctx: Context) -> Built:
    frame, wire, tail = _base(src, ctx, fields_only=True)
    keep = src.between(4, len(wire.payload) - 1)
    note = f"cut to {keep} of {len(wire.payload)} payload bytes"
    broken = wire._replace(payload=wire.payload[:keep], note=note)
    return Built(
        (broken, *tail), frame.name, f"arguments cut after {keep - 4} bytes", frames=(frame,)
    )


def trailing(src: Source, ctx: Context) -> Built:
    frame, wire, tail = _base(src, ctx)
    extra = src.take(src.between(1, 16))
    broken = wire._replace(payload=wire.payload + extra, note=f"+ {extra!r}")
    return Built(
        (broken, *tail), frame.name, f"{len(extra)} bytes after the arguments", frames=(frame,)
    )


def unknown_class(src: Source, ctx: Context) -> Built:
    known = {c.index for c in ctx.spec.classes}
    class_id = src.between(0, 0xFFFF)
    while class_id in known:
        class_id = (class_id + 1) & 0xFFFF
    method_id = src.between(0, 0xFFFF)
    args = src.take(src.below(17))
    label = f"method {class_id}/{method_id} (no such class) + {args!r}"
    payload = raw.method_payload(class_id, method_id, args)
    step = WireFrame(ctx.codec.frame_method, CASE_CHANNEL, payload, note=label)
    return Built((step,), f"class {class_id}", "unknown class id")


def unknown_method(src: Source, ctx: Context) -> Built:
    classes = tuple(c for c in ctx.spec.classes if c.handler == "channel" and c.name != "channel")
    amqp_class = src.pick(classes)
    known = {m.index for m in amqp_class.methods}
    method_id = src.between(0, 0xFFFF)
    while method_id in known:
        method_id = (method_id + 1) & 0xFFFF
    label = f"method {amqp_class.name}/{method_id} (no such method)"
    payload = raw.method_payload(amqp_class.index, method_id)
    step = WireFrame(ctx.codec.frame_method, CASE_CHANNEL, payload, note=label)
    return Built((step,), f"{amqp_class.name}.?", "unknown method id")


def _pick_field(
    src: Source, ctx: Context, wanted: frozenset[str], with_asserts: bool = False
) -> tuple[MethodFrame, int, Field]:
    method, index = src.pick(_fields_of(ctx.neutral_methods, wanted, with_asserts))
    frame = ctx.neutral(src, (method,))
    return frame, index, method.fields[index]


def _payload_with(ctx: Context, frame: MethodFrame, index: int, data: bytes) -> bytes:
    values: list[object] = list(frame.values)
    values[index] = raw.Raw(data)
    args = raw.arguments(frame.method, values, ctx.codec.dialect)
    return raw.method_payload(frame.method.class_index, frame.method.index, args)


def _field_step(ctx: Context, frame: MethodFrame, index: int, data: bytes, what: str) -> WireFrame:
    payload = _payload_with(ctx, frame, index, data)
    return WireFrame(ctx.codec.frame_method, CASE_CHANNEL, payload, f"with {what}", source=frame)


_SCALARS = frozenset({"shortstr", "longstr", "short", "octet", "long", "longlong"})
_STRINGS = frozenset({"shortstr", "longstr"})
_TABLES = frozenset({"table"})


def _violations(src: Source, fld: Field, prefix: str = "") -> list[tuple[str, object]]:
    """The ways a value of ``fld`` can break its asserts (what, value). Names start with
    ``prefix`` where they can, so that a lenient broker acting on one acts on ours."""
    found = limits(fld.asserts)
    text = fld.type.endswith("str")
    options: list[tuple[str, object]] = []
    if found.notnull:
        options.append(("notnull", "" if text else 0))
    if found.null:
        options.append(("null", "x" if fld.type == "shortstr" else b"x" if text else 1))
    if found.max_length is not None and fld.type == "shortstr" and found.max_length < 255:
        size = src.between(found.max_length + 1, 255)
        options.append((f"length {found.max_length}", (prefix + "a" * size)[:size]))
    if found.pattern is not None and fld.type == "shortstr":
        options.append((f"regexp {found.pattern}", prefix + src.pick(_BAD_NAMES)))
    for value in sorted(found.forbidden):
        options.append((f"ne {value}", value))
    if found.choices is not None:
        options.append((f"enum of {found.choices}", src.between(found.choices, 255)))
    return [(what, value) for what, value in options if violation(fld.asserts, value)]


_BAD_NAMES = ("a b", "a\\b", "é", "a*", "#", "q!")


@functools.cache
def _violable(fld: Field) -> bool:
    return bool(_violations(Source(b""), fld))


@functools.cache
def _fields_of(
    methods: tuple[Method, ...], wanted: frozenset[str], violable: bool
) -> tuple[tuple[Method, int], ...]:
    """(method, field index) of the fields of ``wanted`` types (that asserts can be broken)."""
    return tuple(
        (m, i)
        for m in methods
        for i, f in enumerate(m.fields)
        if f.type in wanted and not f.reserved and (not violable or (f.asserts and _violable(f)))
    )


def _syntax_rule(fld: Field) -> tuple[str, ...]:
    """A field's own rule on its syntax names the code for a value that breaks the asserts
    (exchange.declare's exchange: precondition-failed); otherwise it is a syntax-error."""
    return tuple(r.on_failure for r in fld.rules if r.name == "syntax" and r.on_failure)


def assert_violation(src: Source, ctx: Context) -> Built:
    method, index = src.pick(_fields_of(ctx.neutral_methods, _SCALARS, True))
    frame = ctx.neutral(src, (method,))
    fld = method.fields[index]
    prefix = ctx.prefix or "" if fld.domain in ENTITY_DOMAINS else ""
    what, value = src.pick(tuple(_violations(src, fld, prefix)))
    values = list(frame.values)
    values[index] = value
    broken = MethodFrame(frame.channel, frame.method, tuple(values))
    step = ctx.wire(broken)._replace(note=f"({fld.name} breaks {what})")
    ref = f"{frame.name}/{fld.name}"
    note = f"{fld.name} breaks {what}"
    return Built(
        (step, *ctx.completion(frame)), ref, note, frames=(broken,), codes=_syntax_rule(fld)
    )


def string_overrun(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, _STRINGS)
    value = frame.values[index]
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    rest = len(_payload_with(ctx, frame, index, b"")) - 4  # bytes the other fields take
    top = 255 if fld.type == "shortstr" else 2**32 - 1
    least = len(data) + rest + 1  # enough to run past the payload's end
    if least > top:
        # a short string cannot lie that far: the frame ends inside it instead
        values: list[object] = list(frame.values[:index])
        data = data[: src.below(len(data) + 1)]
        length = src.between(len(data) + 1, top)
        values.append(raw.Raw(raw.octet(length) + data))
        args = raw.arguments(frame.method, values, ctx.codec.dialect)
        payload = raw.method_payload(frame.method.class_index, frame.method.index, args)
        what = f"the frame ending inside {fld.name}, of declared length {length}"
        step = WireFrame(
            ctx.codec.frame_method, CASE_CHANNEL, payload, f"with {what}", source=frame
        )
        return Built(
            (step, *ctx.completion(frame)), f"{frame.name}/{fld.name}", what, frames=(frame,)
        )
    length = src.between(least, min(least + 64, top))
    prefix = raw.octet(length) if fld.type == "shortstr" else raw.long(length)
    what = f"{fld.name} length prefix {length} for {len(data)} bytes"
    step = _field_step(ctx, frame, index, prefix + data, what)
    note = f"{fld.name} length {length} overruns the frame"
    return Built(
        _framed(ctx, frame, step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        note,
        frames=(frame,),
    )


_NOT_UTF8 = (
    b"\xff",
    b"\xc3(",
    b"\xe2\x28\xa1",
    b"\xed\xa0\x80",
    b"\xf8\x88\x80\x80\x80",
    b"a\x80b",
)


def bad_utf8(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, frozenset({"shortstr"}))
    junk = src.pick(_NOT_UTF8)
    if ctx.prefix and fld.domain in ENTITY_DOMAINS:  # a lenient broker creates what it is sent
        junk = ctx.prefix.encode() + junk
    step = _field_step(ctx, frame, index, raw.shortstr(junk), f"{fld.name} = {junk!r} (not UTF-8)")
    return Built(
        (step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        f"{fld.name} is not UTF-8",
        frames=(frame,),
    )


def bad_table_type(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, _TABLES)
    known = frozenset(ord(c) for c in DIALECTS[ctx.codec.dialect])
    code = bytes((src.pick(_bytes_except(known)),))
    table = raw.table([raw.TableEntry(b"key", code, src.take(src.below(9)))])
    step = _field_step(ctx, frame, index, table, f"{fld.name} entry of type code {code!r}")
    note = f"table type code {code!r}"
    return Built(
        _framed(ctx, frame, step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        note,
        frames=(frame,),
    )


def table_overrun(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, _TABLES)
    rest = len(_payload_with(ctx, frame, index, b"")) - 4
    length = src.between(rest + 1, rest + 4096)
    what = f"{fld.name} length prefix {length}, no entries"
    step = _field_step(ctx, frame, index, raw.long(length), what)
    note = f"table length {length} overruns the frame"
    return Built(
        _framed(ctx, frame, step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        note,
        frames=(frame,),
    )


@functools.cache
def _nested(depth: int, dialect: str) -> bytes:
    """A table holding a table ... ``depth`` deep (built once: each level copies the last)."""
    table_code = next(c for c, k in DIALECTS[dialect].items() if k == "table").encode()
    inner = raw.table([])
    for _ in range(depth):
        inner = raw.table([raw.TableEntry(b"t", table_code, inner)])
    return inner


def deep_table(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, _TABLES)
    depth = src.between(MAX_DEPTH + 1, MAX_DEPTH + 64)
    inner = _nested(depth, ctx.codec.dialect)
    step = _field_step(ctx, frame, index, inner, f"{fld.name} nested {depth} tables deep")
    note = f"tables nested {depth} deep"
    return Built(
        _framed(ctx, frame, step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        note,
        frames=(frame,),
    )


# -- content ---------------------------------------------------------------------------------------


def _publish(src: Source, ctx: Context) -> MethodFrame:
    """A content method with plain arguments (the default exchange, a routing key nobody
    binds), so that what happens to its content is all that can go wrong."""
    frame = ctx.neutral(src, ctx.content_methods)
    values = [
        "" if f.domain == "exchange-name" else v
        for f, v in zip(frame.method.fields, frame.values, strict=True)
    ]
    return MethodFrame(CASE_CHANNEL, frame.method, tuple(values))


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
    publish = _publish(src, ctx)
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


def header_alone(src: Source, ctx: Context) -> Built:
    _, frames = _content(src, ctx, bodies=False)
    return Built(
        _sequence(ctx, frames[:1]),
        "content",
        "content header with no method",
        frames=tuple(frames[:1]),
    )


def body_alone(src: Source, ctx: Context) -> Built:
    body = ContentBody(CASE_CHANNEL, src.take(src.between(1, 64)))
    return Built((ctx.wire(body),), "content", "body with no header", frames=(body,))


def body_too_long(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, plain=True)
    extra = ContentBody(CASE_CHANNEL, src.take(src.between(1, 32)))
    sequence = [publish, *frames, extra]
    note = f"{len(extra.payload)} body bytes more than declared"
    return Built(_sequence(ctx, sequence), publish.name, note, frames=tuple(sequence))


def method_in_content(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, least=1, plain=True)
    intruder = ctx.neutral(src, ctx.channel_methods)
    cut = src.between(1, len(frames) - 1)  # after the header, before the last body
    sequence = [publish, *frames[:cut], intruder, *frames[cut:]]
    note = f"{intruder.name} inside the content"
    return Built(_sequence(ctx, sequence), publish.name, note, frames=tuple(sequence))


def header_class(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, plain=True)
    header = frames[0]
    assert isinstance(header, ContentHeader)
    other = src.between(0, 0xFFFF)
    if other == header.class_id:
        other ^= 1
    wire = ctx.wire(header)
    broken = wire._replace(payload=raw.short(other) + wire.payload[2:], note=f"with class {other}")
    steps = (ctx.wire(publish), broken, *_sequence(ctx, frames[1:]))
    note = f"header class {other} after {publish.method.class_name}"
    return Built(steps, publish.name, note, frames=(publish,))


def property_flags(src: Source, ctx: Context) -> Built:
    publish, frames = _content(src, ctx, plain=True, most=0)  # no body: the header is all
    header = frames[0]
    assert isinstance(header, ContentHeader)
    count = len(ctx.spec.amqp_class(publish.method.class_name).properties)
    spare = [15 - i for i in range(count, 15)] or [0]
    flags = sum(1 << b for i, b in enumerate(spare) if i == 0 or src.byte() & 1)
    payload = raw.content_header(header.class_id, header.body_size, flags)
    label = (
        f"header(ch=N, class={header.class_id}, size={header.body_size}) with flags 0x{flags:04x}"
    )
    step = WireFrame(ctx.codec.frame_header, CASE_CHANNEL, payload, note=label)
    return Built(
        (ctx.wire(publish), step), publish.name, f"property flags 0x{flags:04x}", frames=(publish,)
    )


# -- channels and order ----------------------------------------------------------------------------


def closed_channel(src: Source, ctx: Context) -> Built:
    frame = ctx.neutral(src, ctx.channel_methods)
    return Built(
        (ctx.wire(frame), *ctx.completion(frame)),
        frame.name,
        "on a channel that is not open",
        channel="closed",
        frames=(frame,),
    )


def before_open(src: Source, ctx: Context) -> Built:
    first = ctx.neutral(src, ctx.channel_methods)
    opener = ctx.codec.method("channel.open", CASE_CHANNEL)
    note = f"{first.name} before channel.open"
    steps = (ctx.wire(first), *ctx.completion(first), ctx.wire(opener))
    return Built(steps, first.name, note, channel="closed", frames=(first, opener))


def reopen(src: Source, ctx: Context) -> Built:
    opener = ctx.codec.method("channel.open", CASE_CHANNEL)
    return Built(
        (ctx.wire(opener),),
        "channel.open/state",
        "channel.open on an open channel",
        frames=(opener,),
    )


def connection_on_channel(src: Source, ctx: Context) -> Built:
    frame = ctx.neutral(src, ctx.connection_methods)
    return Built((ctx.wire(frame),), frame.name, "connection method on a channel", frames=(frame,))


def channel_zero(src: Source, ctx: Context) -> Built:
    neutral = ctx.neutral(src, ctx.channel_methods)
    frame = MethodFrame(0, neutral.method, neutral.values)
    return Built(
        (ctx.wire(frame),),
        frame.name,
        "channel method on channel 0",
        channel="none",
        frames=(frame,),
    )


# -- rules whose on-failure code is a channel exception ------------------------------------------


@functools.cache
def _rules_failing_with(spec: Spec, code: str) -> tuple[tuple[Method, Field | None, str], ...]:
    """(method, the rule's field or None, rule ref) of every rule that fails with ``code``."""
    found: list[tuple[Method, Field | None, str]] = []
    for method in spec.methods:
        if not method.sent_by("client"):
            continue
        found += [(method, None, r.ref) for r in method.rules if r.on_failure == code]
        for fld in method.fields:
            found += [(method, fld, r.ref) for r in fld.rules if r.on_failure == code]
    return tuple(found)


def _plain(method: Method) -> list[object]:
    """The simplest arguments: zero values, so that only the rule under test can fail. An
    exchange type must name one the server implements: "direct" is one the class's rule
    ``exchange/required-types`` requires of every server."""
    return [
        "direct" if f.name == "type" and f.type == "shortstr" else ZERO[f.type]
        for f in method.fields
    ]


@functools.cache
def _entity_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    """Rules that fail with not-found on a method naming a queue or exchange."""
    return tuple(
        (m, f, ref)
        for m, f, ref in _rules_failing_with(spec, "not-found")
        if any(fld.domain in ENTITY_DOMAINS for fld in m.fields)
        and (f is None or f.domain in ENTITY_DOMAINS or f.type == "bit")
    )


@functools.cache
def _reserved_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    return tuple(
        x for x in _rules_failing_with(spec, "access-refused") if x[2].endswith("/reserved")
    )


@functools.cache
def _transacted_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    rules = _rules_failing_with(spec, "precondition-failed")
    return tuple(x for x in rules if x[2].endswith("/transacted"))


@functools.cache
def _tag_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    rules = _rules_failing_with(spec, "precondition-failed")
    return tuple(x for x in rules if x[2].endswith("/exists"))


def _entity_case(src: Source, ctx: Context) -> Built:
    """A not-found rule on an entity name, broken: the method naming one that does not exist
    (every other name it uses is declared first)."""
    method, rule_field, ref = src.pick(_entity_rules(ctx.spec))
    frame = ctx.neutral(src, (method,))
    missing = ctx.fresh_name(src, "missing-")
    values = list(frame.values)
    for i, fld in enumerate(method.fields):
        if rule_field is not None and fld is rule_field and fld.type == "bit":
            values[i] = True  # the rule is about this flag (queue.declare's passive)
        elif fld.domain in ENTITY_DOMAINS and (
            rule_field is None or rule_field.type == "bit" or fld is rule_field
        ):
            values[i] = missing
    broken = MethodFrame(CASE_CHANNEL, method, tuple(values))
    steps = (*ctx.setup(broken, frozenset({missing})), ctx.wire(broken), *ctx.completion(broken))
    return Built(steps, ref, f"breaks rule {ref}", channel="fresh", frames=(broken,))


def missing_entity(src: Source, ctx: Context) -> Built:
    return _entity_case(src, ctx)


def reserved_name(src: Source, ctx: Context) -> Built:
    method, rule_field, ref = src.pick(_reserved_rules(ctx.spec))
    values = _plain(method)
    index = method.fields.index(rule_field) if rule_field is not None else 0
    values[index] = "amq." + ctx.fresh_name(src)  # ours, if a lenient broker declares it
    broken = MethodFrame(CASE_CHANNEL, method, tuple(values))
    return Built((ctx.wire(broken),), ref, f"breaks rule {ref}", channel="fresh", frames=(broken,))


def not_transacted(src: Source, ctx: Context) -> Built:
    method, _, ref = src.pick(_transacted_rules(ctx.spec))
    frame = ctx.frame_of(src, (method,))
    return Built((ctx.wire(frame),), ref, f"breaks rule {ref}", channel="fresh", frames=(frame,))


def unknown_delivery_tag(src: Source, ctx: Context) -> Built:
    method, _, ref = src.pick(_tag_rules(ctx.spec))
    values = [
        src.between(1, 2**64 - 1) if f.domain == "delivery-tag" else v
        for f, v in zip(method.fields, _plain(method), strict=True)
    ]
    broken = MethodFrame(CASE_CHANNEL, method, tuple(values))
    return Built((ctx.wire(broken),), ref, f"breaks rule {ref}", channel="fresh", frames=(broken,))


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
    targets: Callable[[Spec], tuple[object, ...]] | None = None,
) -> Mutation:
    return Mutation(
        name,
        description,
        breaks,
        codes,
        level,
        build,
        or_reply=or_reply,
        rule=rule,
        targets=targets,
    )


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
        "sequence",
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
    _op(
        "missing-entity",
        "entity existence",
        "names a queue or exchange that does not exist",
        ("not-found",),
        "rule",
        missing_entity,
        targets=_entity_rules,
    ),
    _op(
        "reserved-name",
        "reserved names",
        "declares a name starting with amq.",
        ("access-refused",),
        "rule",
        reserved_name,
        targets=_reserved_rules,
    ),
    _op(
        "not-transacted",
        "transaction state",
        "commits or rolls back a channel not in tx mode",
        ("precondition-failed",),
        "rule",
        not_transacted,
        targets=_transacted_rules,
    ),
    _op(
        "unknown-delivery-tag",
        "delivery tags",
        "acknowledges a delivery that never happened",
        ("precondition-failed",),
        "rule",
        unknown_delivery_tag,
        targets=_tag_rules,
    ),
)


def catalogue(spec: Spec | None = None) -> tuple[Mutation, ...]:
    """The operators that apply to ``spec`` (all of them when no spec is given)."""
    if spec is None:
        return CATALOGUE
    return tuple(op for op in CATALOGUE if op.applies_to(spec))
