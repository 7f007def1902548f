"""Operators on a method's payload: class and method ids, argument bytes, strings and tables."""

from __future__ import annotations

import functools
import re

from amqpfuzz.spec.amqp091 import AmqpClass, Assert, Field, Method, Rule
from amqpfuzz.spec.amqp091.asserts import limits, violation
from amqpfuzz.spec.amqp091.codec import MethodFrame, raw
from amqpfuzz.spec.amqp091.codec.tables import DIALECTS, MAX_DEPTH, defined_codes

from ...operator import Built, Operator, registrar
from ..context import CODES, Context
from ..frames import ENTITY_DOMAINS
from ..source import Source
from ..valid import tolerated
from ..wire import CASE_CHANNEL, WireFrame
from .common import base_frame, bytes_except, with_setup

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)


@operator(
    "truncated-arguments",
    "method arguments",
    "cuts the method's arguments short",
    ("frame-error",),
    "frame",
)
def truncated(src: Source, ctx: Context) -> Built:
    frame, wire, tail = base_frame(src, ctx, fields_only=True)
    keep = src.between(4, len(wire.payload) - 1)
    note = f"cut to {keep} of {len(wire.payload)} payload bytes"
    broken = wire._replace(payload=wire.payload[:keep], note=note)
    return Built(
        (broken, *tail), frame.name, f"arguments cut after {keep - 4} bytes", frames=(frame,)
    )


@operator(
    "trailing-bytes",
    "method arguments",
    "appends bytes after the last argument",
    ("frame-error",),
    "frame",
)
def trailing(src: Source, ctx: Context) -> Built:
    frame, wire, tail = base_frame(src, ctx)
    extra = src.take(src.between(1, 16))
    broken = wire._replace(payload=wire.payload + extra, note=f"+ {extra!r}")
    return Built(
        (broken, *tail), frame.name, f"{len(extra)} bytes after the arguments", frames=(frame,)
    )


@operator(
    "unknown-class",
    "class id",
    "names a class the specification does not define",
    ("command-invalid", "not-implemented"),
    "frame",
)
def unknown_class(src: Source, ctx: Context) -> Built:
    """A class id no class of the specification has, nor of the extension the broker speaks
    (RabbitMQ's confirm class), and not 0: the grammar's class-id is %x00.01-%xFF.FF."""
    known = {0, *(c.index for c in _classes(ctx))}
    class_id = src.between(0, 0xFFFF)
    while class_id in known:
        class_id = (class_id + 1) & 0xFFFF
    method_id = src.between(0, 0xFFFF)
    args = src.take(src.below(17))
    label = f"method {class_id}/{method_id} (no such class) + {args!r}"
    payload = raw.method_payload(class_id, method_id, args)
    step = WireFrame(ctx.codec.frame_method, CASE_CHANNEL, payload, note=label)
    return Built((step,), f"class {class_id}", "unknown class id")


@operator(
    "unknown-method",
    "method id",
    "names a method its class does not define",
    ("command-invalid", "not-implemented"),
    "frame",
)
def unknown_method(src: Source, ctx: Context) -> Built:
    """A method id its class has neither in the specification nor in the extension the broker
    speaks (RabbitMQ's basic.nack, exchange.bind), and not 0 (the grammar's %x00.01-%xFF.FF)."""
    classes = tuple(c for c in ctx.spec.classes if c.handler == "channel" and c.name != "channel")
    amqp_class = src.pick(classes)
    known = {0, *(m.index for c in _classes(ctx) if c.index == amqp_class.index for m in c.methods)}
    method_id = src.between(0, 0xFFFF)
    while method_id in known:
        method_id = (method_id + 1) & 0xFFFF
    label = f"method {amqp_class.name}/{method_id} (no such method)"
    payload = raw.method_payload(amqp_class.index, method_id)
    step = WireFrame(ctx.codec.frame_method, CASE_CHANNEL, payload, note=label)
    return Built((step,), f"{amqp_class.name}.?", "unknown method id")


def _classes(ctx: Context) -> tuple[AmqpClass, ...]:
    """The classes the broker knows: the specification's, and its extension's where it speaks
    one (the broker's dialect, from its profile)."""
    extended = ctx.extended.spec.classes if ctx.extended is not None else ()
    return (*ctx.spec.classes, *extended)


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


# What a rule's text must say for a value that breaks an assert of each kind to break the rule:
# a field's ``syntax`` rule restates in words some of the asserts its field and domain carry
# (0-9-1's exchange.declare: "a non-empty sequence of these characters: letters, digits,
# hyphen, underscore, period, or colon", the regexp and notnull; not the domain's length). A
# character set is stated as characters, notnull as non-empty, a length limit and a value
# ruled out (``ne``) by their number.
_STATED_BY = {
    "regexp": r"\bcharacters\b",
    "notnull": r"\bnon-empty\b|\bnot (?:be )?(?:empty|zero)\b",
}


def _states(rule: Rule, check: Assert) -> bool:
    """Whether ``rule``'s text says what ``check`` does."""
    if check.check in ("length", "ne"):
        pattern = rf"\b{re.escape(check.value)}\b" if check.value else None
    else:
        pattern = _STATED_BY.get(check.check)
    return pattern is not None and re.search(pattern, " ".join(rule.doc.split())) is not None


def _syntax_rule(fld: Field, value: object) -> tuple[str, ...]:
    """The code for ``value``, which breaks ``fld``'s asserts: the on-failure of the field's own
    rule on its syntax where that rule says what the value breaks (exchange.declare's exchange
    name of characters the rule does not list: precondition-failed); otherwise none, and the
    operator's syntax-error stands (a name over the domain's length, which no rule restates:
    the domain's assert alone)."""
    broken = [a for a in fld.asserts if violation((a,), value) is not None]
    return tuple(
        r.on_failure
        for r in fld.rules
        if r.name == "syntax" and r.on_failure and any(_states(r, a) for a in broken)
    )


@operator(
    "assert-violation",
    "domain assert",
    "gives a field a value its domain's asserts forbid",
    ("syntax-error",),
    "frame",
)
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
        (step, *ctx.completion(frame)), ref, note, frames=(broken,), codes=_syntax_rule(fld, value)
    )


@operator(
    "string-overrun",
    "string length prefix",
    "declares a string longer than the frame",
    ("frame-error",),
    "frame",
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
        with_setup(ctx, frame, step, *ctx.completion(frame)),
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


@operator(
    "invalid-utf8",
    "short string (0-9-1 section 4.2.5.3: short strings carry UTF-8 data; but the grammar, "
    "4.2.1, has short-string = OCTET *string-char, string-char = %x01 .. %xFF: any octet but "
    "0. Malformed under the prose only: a server that takes the octets is conformant, and its "
    "method is then answered as a valid one is, its rules' closes included; one that refuses "
    "them, an illegal value: syntax-error)",
    "puts bytes that are not UTF-8 in a short string",
    ("syntax-error",),
    "frame",
    or_reply=True,
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
        tolerated=tolerated(ctx.spec, frame.method),
    )


@operator(
    "table-type",
    "field table",
    "uses a field-table type code neither the grammar nor the broker's dialect defines",
    ("syntax-error",),
    "frame",
)
def bad_table_type(src: Source, ctx: Context) -> Built:
    """An entry whose type code is undefined for the peer: a code its protocol's grammar
    defines (0-9-1's 'U', 'L') or its dialect reads (RabbitMQ's 'x', 's' as a short integer)
    is a valid entry, whatever the other reading says."""
    frame, index, fld = _pick_field(src, ctx, _TABLES)
    known = frozenset(ord(c) for c in defined_codes(ctx.spec.protocol, ctx.codec.dialect))
    code = bytes((src.pick(bytes_except(known)),))
    table = raw.table([raw.TableEntry(b"key", code, src.take(src.below(9)))])
    step = _field_step(ctx, frame, index, table, f"{fld.name} entry of type code {code!r}")
    note = f"table type code {code!r}"
    return Built(
        with_setup(ctx, frame, step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        note,
        frames=(frame,),
    )


@operator(
    "table-overrun",
    "field table",
    "declares a table longer than the frame",
    ("frame-error",),
    "frame",
)
def table_overrun(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, _TABLES)
    rest = len(_payload_with(ctx, frame, index, b"")) - 4
    length = src.between(rest + 1, rest + 4096)
    what = f"{fld.name} length prefix {length}, no entries"
    step = _field_step(ctx, frame, index, raw.long(length), what)
    note = f"table length {length} overruns the frame"
    return Built(
        with_setup(ctx, frame, step, *ctx.completion(frame)),
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


@operator(
    "deep-table",
    "field table",
    "nests tables beyond any sane depth",
    ("syntax-error",),
    "frame",
    or_reply=True,
)
def deep_table(src: Source, ctx: Context) -> Built:
    frame, index, fld = _pick_field(src, ctx, _TABLES)
    depth = src.between(MAX_DEPTH + 1, MAX_DEPTH + 64)
    inner = _nested(depth, ctx.codec.dialect)
    step = _field_step(ctx, frame, index, inner, f"{fld.name} nested {depth} tables deep")
    note = f"tables nested {depth} deep"
    return Built(
        with_setup(ctx, frame, step, *ctx.completion(frame)),
        f"{frame.name}/{fld.name}",
        note,
        frames=(frame,),
        # (accepted, its method is answered as a valid one is, its rules' closes included)
        tolerated=tolerated(ctx.spec, frame.method),
    )
