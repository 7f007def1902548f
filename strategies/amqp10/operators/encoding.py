"""Operators on the encoding of a frame's body (types, 1.2 and 1.6): constructors the type
system does not define, sizes and counts that lie, arrays that do not match their constructor,
text that is not what its type says, descriptors that describe nothing, and composites with the
wrong fields. A peer that cannot decode a frame answers ``amqp:decode-error``, closing the
connection."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import MAX_DEPTH, Composite, raw

from ...operator import Built
from ...source import Source
from ..context import Context
from ..wire import Wire
from .common import Parts, operator, parts

__all__: list[str] = []

DECODE = ("decode-error",)


def _attach(src: Source, ctx: Context) -> tuple[Composite, Parts]:
    attach = ctx.attach(src)
    return attach, parts(ctx, attach)


def _sent(ctx: Context, p: Parts, body: bytes, note: str) -> Wire:
    return ctx.raw(raw.frame(body), f"{p.name} {note}")


@operator(
    "unknown-constructor",
    "a field whose format code the type system does not define (types 1.2, 1.6)",
    "replaces one field's constructor of an attach with an undefined format code",
    DECODE,
    "connection",
    "encoding",
)
def unknown_constructor(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    unused = [c for c in range(0x01, 0x100) if c not in ctx.codec.types.constructors]
    code = src.pick(tuple(unused))
    index = src.below(len(p.fields))
    body = p.body(p.replaced(index, raw.fixed(code, b"\x00" * src.below(9))))
    note = f"field {p.infos[index].name} with constructor 0x{code:02x}"
    return Built((_sent(ctx, p, body, note),), "attach", note)


@operator(
    "list-size-lies",
    "a performative's list whose size is not the octets it holds (types 1.6.22 list8/list32)",
    "sets the size of an attach's field list larger or smaller than its fields",
    DECODE,
    "connection",
    "encoding",
)
def list_size_lies(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    true = sum(map(len, p.fields)) + 1
    size = (true + 1 + src.below(64)) if src.byte() & 1 else src.below(true)
    body = p.body(size=size, code=0xC0 if true < 250 else 0xD0)
    return Built((_sent(ctx, p, body, f"list size {size} of {true}"),), "attach", f"size {size}")


@operator(
    "list-count-lies",
    "a performative's list whose count is more than the values it holds (types 1.6.22)",
    "sets the count of an attach's field list above the fields it holds",
    DECODE,
    "connection",
    "encoding",
)
def list_count_lies(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    count = len(p.fields) + 1 + src.below(200)
    body = p.body(count=min(count, 255))
    return Built((_sent(ctx, p, body, f"list count {count}"),), "attach", f"count {count}")


@operator(
    "array-mismatch",
    "an array whose elements are not of its one constructor (types 1.6.24 array8/array32)",
    "sends an attach's offered-capabilities as an array of sym8 whose elements are not sym8",
    DECODE,
    "connection",
    "encoding",
)
def array_mismatch(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    wrong = src.pick((b"\x70\x00\x00\x00\x01", b"\xff\xff", b"\x05ab"))
    array = raw.array(0xE0, b"\xa3", [b"\x01a", wrong])
    index = p.index("offered-capabilities")
    body = p.body(p.replaced(index, array))
    return Built((_sent(ctx, p, body, "offered-capabilities array mismatched"),), "attach", "array")


@operator(
    "invalid-utf8",
    "a string that is not UTF-8 (types 1.6.20 string: UTF-8 encoded Unicode)",
    "sends an attach whose link name is a string of octets that are not UTF-8",
    DECODE,
    "connection",
    "encoding",
)
def invalid_utf8(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    bad = src.pick((b"\xff", b"\xc3", b"\xed\xa0\x80", b"a\x80b", b"\xf8\x88\x80\x80\x80"))
    body = p.body(p.replaced(p.index("name"), raw.variable(0xA1, bad)))
    return Built((_sent(ctx, p, body, f"name {bad!r}"),), "attach", f"name {bad!r}")


@operator(
    "non-ascii-symbol",
    "a symbol that is not ASCII (types 1.6.21 symbol: ASCII characters)",
    "sends an attach whose offered capability is a symbol with octets over 0x7f",
    DECODE,
    "connection",
    "encoding",
)
def non_ascii_symbol(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    bad = src.pick(("é".encode(), b"\x80", b"\xff\xfe"))
    body = p.body(p.replaced(p.index("offered-capabilities"), raw.variable(0xA3, bad)))
    return Built((_sent(ctx, p, body, f"symbol {bad!r}"),), "attach", f"symbol {bad!r}")


@operator(
    "absurd-size",
    "a binary, string or symbol whose size is far past the frame's end (types 1.6.19-1.6.21)",
    "gives an attach's link name a 32-bit size near 2^32",
    DECODE,
    "connection",
    "encoding",
)
def absurd_size(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    size = 0xFFFFFFFF - src.below(256)
    code = src.pick((0xB1, 0xB0, 0xB3))
    body = p.body(p.replaced(p.index("name"), raw.variable(code, b"x", size=size)))
    return Built((_sent(ctx, p, body, f"name of size {size}"),), "attach", f"size {size}")


@operator(
    "deep-nesting",
    "lists nested far deeper than any use needs, in an attach's properties (types 1.6.22: "
    "no depth limit is set, so a peer may accept them, but must stay up)",
    "puts lists nested 50 to 1000 deep under one key of an attach's properties",
    DECODE,
    "connection",
    "encoding",
    or_reply=True,
    unnamed=True,
)
def deep_nesting(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    depth = src.pick((MAX_DEPTH, 100, 500, 1000)) + src.below(8)
    nested = raw.nested(depth, code=0xD0)
    key = raw.variable(0xA3, b"deep")
    value = raw.compound(0xD1, [key, nested])
    body = p.body(p.replaced(p.index("properties"), value))
    return Built((_sent(ctx, p, body, f"properties nested {depth} deep"),), "attach", "nesting")


@operator(
    "unknown-descriptor",
    "a frame body whose descriptor names no performative (transport 2.3.2: the body of an AMQP "
    "frame is a performative)",
    "replaces an attach's descriptor code with one the specification does not define",
    DECODE,
    "connection",
    "encoding",
)
def unknown_descriptor(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    known = set(ctx.codec.types.described)
    code = src.pick(tuple(c for c in range(0x00, 0x100) if c not in known))
    body = p.body(descriptor=raw.fixed(0x53, bytes((code,))))
    return Built((_sent(ctx, p, body, f"descriptor 0x{code:02x}"),), "attach", f"0x{code:02x}")


@operator(
    "descriptor-type",
    "a descriptor that is neither a symbol nor a ulong (types 1.5: not syntactically invalid, "
    "but reserved; so it describes no performative, and transport 2.3.2 wants one)",
    "sends an attach's descriptor as a string, a uint or a list",
    DECODE,
    "connection",
    "encoding",
)
def descriptor_type(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    bad = src.pick((raw.variable(0xA1, b"amqp:attach:list"), b"\x52\x12", b"\x45"))
    body = p.body(descriptor=bad)
    return Built((_sent(ctx, p, body, f"descriptor {bad.hex()}"),), "attach", "descriptor")


@operator(
    "too-many-fields",
    "a performative's list with more values than the type has fields (types 1.4 composite "
    "types; a peer may ignore what it does not know, but must stay up)",
    "appends one to ten values after an attach's last field",
    DECODE,
    "connection",
    "encoding",
    or_reply=True,
    unnamed=True,
)
def too_many_fields(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    fields = p.replaced(len(p.infos) - 1, b"\x40")
    fields += [b"\x43"] * (1 + src.below(10))
    body = p.body(fields)
    note = f"{len(fields)} fields of {len(p.infos)}"
    return Built((_sent(ctx, p, body, note),), "attach", note)


@operator(
    "wrong-field-type",
    "a field of another type than the one the performative defines (transport 2.7.3 attach)",
    "sends an attach whose handle, role or name is of a different type",
    ("decode-error", "invalid-field"),
    "connection",
    "encoding",
)
def wrong_field_type(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    name, value = src.pick(
        (("handle", raw.variable(0xA1, b"zero")), ("role", b"\x52\x01"), ("name", b"\x43"))
    )
    body = p.body(p.replaced(p.index(name), value))
    return Built((_sent(ctx, p, body, f"{name} as {value.hex()}"),), "attach", name)


@operator(
    "mandatory-null",
    "a mandatory field left null (types 1.4: a mandatory field MUST be set)",
    "sends an attach with its name, handle or role null",
    ("decode-error", "invalid-field"),
    "connection",
    "encoding",
)
def mandatory_null(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    name = src.pick(("name", "handle", "role"))
    body = p.body(p.replaced(p.index(name), b"\x40"))
    return Built((_sent(ctx, p, body, f"{name} null"),), "attach", name)


@operator(
    "bad-boolean",
    "a boolean octet other than 0x00 and 0x01 (types 1.6.2 boolean)",
    "sends an attach whose role is the one-octet boolean 0x56 with a value of 2 to 255",
    DECODE,
    "connection",
    "encoding",
)
def bad_boolean(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    octet = 2 + src.below(254)
    body = p.body(p.replaced(p.index("role"), raw.fixed(0x56, bytes((octet,)))))
    return Built((_sent(ctx, p, body, f"role 0x56 {octet:#04x}"),), "attach", "role")


@operator(
    "map-odd-count",
    "a map with an odd count of keys and values (types 1.6.23 map: pairs)",
    "sends an attach's properties as a map with an odd count",
    DECODE,
    "connection",
    "encoding",
)
def map_odd_count(src: Source, ctx: Context) -> Built:
    _, p = _attach(src, ctx)
    items = [raw.variable(0xA3, b"k"), b"\x43", raw.variable(0xA3, b"j")][: 1 + 2 * src.below(2)]
    body = p.body(p.replaced(p.index("properties"), raw.compound(0xC1, items)))
    return Built((_sent(ctx, p, body, f"properties of {len(items)} values"),), "attach", "map")
