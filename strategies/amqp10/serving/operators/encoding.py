"""Server-side 1.0 operators on the encoding of a performative (types 1.2 to 1.6; transport
2.3.2): constructors, list sizes and counts, descriptors, UTF-8, booleans, mandatory fields."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import raw

from ....operator import Built, Operator
from ....source import Source
from ...operators.common import Parts
from ..script import Point, Strike
from .common import framed, serving, struck

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)
DECODE = ("decode-error",)


def _parts(strike: Strike) -> Parts:
    body, _ = struck(strike)
    return Parts(strike.codec, body)


@server(
    Point.ATTACH,
    "unknown-constructor",
    "a field whose format code the type system does not define (types 1.2, 1.6)",
    "replaces one field's constructor in the peer's attach with an undefined format code",
    DECODE,
    "connection",
    "encoding",
)
def unknown_constructor(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    unused = [c for c in range(0x01, 0x100) if c not in strike.codec.types.constructors]
    code = src.pick(tuple(unused))
    index = src.below(len(p.fields))
    body = p.body(p.replaced(index, raw.fixed(code, b"\x00" * src.below(9))))
    return framed(strike, body, f"{p.name} field {p.infos[index].name} as 0x{code:02x}")


@server(
    Point.ATTACH,
    "list-size-lies",
    "a performative's list whose size is not the octets it holds (types 1.6.22 list8/list32)",
    "sets the size of the peer's attach's field list larger or smaller than its fields",
    DECODE,
    "connection",
    "encoding",
)
def list_size_lies(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    true = sum(map(len, p.fields)) + 1
    size = (true + 1 + src.below(64)) if src.byte() & 1 else src.below(true)
    body = p.body(size=size, code=0xC0 if true < 250 else 0xD0)
    return framed(strike, body, f"{p.name} list size {size} of {true}")


@server(
    Point.ATTACH,
    "list-count-lies",
    "a performative's list whose count is more than the values it holds (types 1.6.22)",
    "sets the count of the peer's attach's field list above the fields it holds",
    DECODE,
    "connection",
    "encoding",
)
def list_count_lies(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    count = min(255, len(p.fields) + 1 + src.below(200))
    return framed(strike, p.body(count=count), f"{p.name} list count {count}")


@server(
    Point.ATTACH,
    "unknown-descriptor",
    "a frame body whose descriptor names no performative (transport 2.3.2: the body of an AMQP "
    "frame is a performative)",
    "sends the peer's attach under a ulong descriptor no type has",
    DECODE,
    "connection",
    "encoding",
)
def unknown_descriptor(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    types = strike.codec.types
    known = {types.descriptor_of(name) for name in types.composites}
    code = next(c for c in (0x80 + src.below(0x70), 0xFF) if c not in known)
    descriptor = raw.fixed(0x53, bytes((code,)))
    return framed(strike, p.body(descriptor=descriptor), f"{p.name} as descriptor 0x{code:02x}")


@server(
    Point.OPEN,
    "invalid-utf8",
    "a string that is not UTF-8 (types 1.6.20 string: UTF-8 encoded Unicode)",
    "sends the peer's open with a container-id whose octets are not UTF-8",
    DECODE,
    "connection",
    "encoding",
)
def invalid_utf8(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    octets = b"amqpfuzz-" + bytes((0xC0 + src.below(2), 0x80 + src.below(64))) + b"\xff\xfe"
    body = p.body(p.replaced(p.index("container-id"), raw.variable(0xA1, octets)))
    return framed(strike, body, f"{p.name} container-id {octets!r}")


@server(
    Point.ATTACH,
    "absurd-size",
    "a string whose size is far past the frame's end (types 1.6.20 str32)",
    "gives the link name of the peer's attach a 32-bit size near 2^32",
    DECODE,
    "connection",
    "encoding",
)
def absurd_size(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    size = 0xFFFFFFFF - src.below(1 << 16)
    name = raw.variable(0xB1, b"amqpfuzz", size=size)
    body = p.body(p.replaced(p.index("name"), name))
    return framed(strike, body, f"{p.name} name with size {size}")


@server(
    Point.ATTACH,
    "bad-boolean",
    "a boolean octet other than 0x00 and 0x01 (types 1.6.2 boolean)",
    "sends the peer's attach with its role the one-octet boolean 0x56 holding 2 to 255",
    DECODE,
    "connection",
    "encoding",
)
def bad_boolean(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    value = 2 + src.below(254)
    body = p.body(p.replaced(p.index("role"), raw.fixed(0x56, bytes((value,)))))
    return framed(strike, body, f"{p.name} role 0x56 {value:#04x}")


@server(
    Point.ATTACH,
    "mandatory-null",
    "a mandatory field left null (types 1.4: a mandatory field MUST be set)",
    "sends the peer's attach with its name, handle or role null",
    ("decode-error", "invalid-field"),
    "connection",
    "encoding",
)
def mandatory_null(src: Source, strike: Strike) -> Built:
    p = _parts(strike)
    name = src.pick(("name", "handle", "role"))
    body = p.body(p.replaced(p.index(name), b"\x40"))
    return framed(strike, body, f"{p.name} {name} null")
