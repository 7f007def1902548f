"""Differential tests: our 1.0 codec against Qpid Proton (python-qpid-proton), byte for byte and
value for value.

For every primitive type of the 1.0 model and every composite type (performatives, SASL frames,
delivery states, source, target, header, properties...), both taken from the loaded model and
never listed by hand, Hypothesis draws values with our strategies; the same value is given to
``proton.Data`` (mapped type by type, :data:`TYPES`), and

* our bytes must equal proton's, once proton's one known choice of encoding is applied to ours
  (:func:`widen`, below);
* our decoder must read proton's bytes back to our value;
* proton's decoder must read our bytes back to the same value (a composite: a described list
  with our descriptor and our fields in order, trailing nulls left out).

Values are compared in their *wire form* (:func:`wire`): each value with its 1.0 type, so that
a uint 5 is not a ulong 5, a symbol is not a string and -0.0 is not 0.0; a composite as the
described list it travels as, each field as the field's type says. Proton's values are first
converted to ours (:func:`ours`).

Whole messages are checked through ``proton.Message``: proton reads the sections we encode
(body, header, properties, annotations and application properties, as its Message API exposes
them), and the message proton encodes from the same fields decodes with our codec to the same
sections. Where proton's Message cannot express a field, or alters it, the field is left out or
normalised, each time with the reason, and ``test_proton_message_limits`` proves each such
limit against proton itself. Absent header fields take the defaults of messaging 3.2.1, which
our model lacks (see HEADER_DEFAULTS and ``test_header_defaults``).

The one difference of encoding: the types part gives most types several encodings, any of
which a sender may use, and the two codecs choose differently for compound values. We send
each value in its smallest encoding; proton's ``Data`` sends every non-empty list as list32,
every map as map32, every array as array32 with its elements in their widest encoding (a uint
element in four octets, a symbol with a four-octet size). Scalars outside arrays and the empty
list (list0) are encoded alike. :func:`widen` rewrites our bytes with exactly those choices and
nothing else, and ``test_proton_writes_compounds_wide`` proves each of them against proton.
"""

from __future__ import annotations

import math
import struct
import uuid
from typing import Any

import proton
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqpfuzz.spec.amqp10.codec import (
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    codec_for,
)
from amqpfuzz.spec.amqp10.codec.types import Constructor, FieldInfo
from amqpfuzz.spec.amqp10.codec.values import INTEGERS, type_name_of
from amqpfuzz.strategies import composites, messages, type_values

CODEC = codec_for("1.0")
TYPES_SYSTEM = CODEC.types
PRIMITIVES = [t.name for t in CODEC.spec.types_of_class("primitive")]
COMPOSITES = [t.name for t in CODEC.spec.types_of_class("composite")]
COMPOUND = ("list", "map", "array")


def _settings(examples: int) -> settings:
    """One failure per test is shrunk and reported (a broken codec fails many tests at once)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        report_multiple_bugs=False,
    )


# 24 primitives and 33 composites at these many examples each, and the two message tests, take
# about ten seconds on two cores.
VALUE_SETTINGS = _settings(100)
COMPOSITE_SETTINGS = _settings(60)
MESSAGE_SETTINGS = _settings(300)

# -- the two sides' Python types -------------------------------------------------------------
#
# Our type name -> (our Python class, proton's Python class). ``test_type_table`` checks that
# the names are exactly the model's primitive types and that proton puts and gets each class.
# Plain Python values of ours (an ``int`` is a long, a ``float`` a double) need no entry: their
# type name is ``type_name_of``'s.

TYPES: dict[str, tuple[type, type]] = {
    "null": (type(None), type(None)),
    "boolean": (bool, bool),
    "ubyte": (UByte, proton.ubyte),
    "ushort": (UShort, proton.ushort),
    "uint": (UInt, proton.uint),
    "ulong": (ULong, proton.ulong),
    "byte": (Byte, proton.byte),
    "short": (Short, proton.short),
    "int": (Int, proton.int32),
    "long": (Long, int),
    "float": (Float, proton.float32),
    "double": (float, float),
    "decimal32": (Decimal32, proton.decimal32),
    "decimal64": (Decimal64, proton.decimal64),
    "decimal128": (Decimal128, proton.decimal128),
    "char": (Char, proton.char),
    "timestamp": (Timestamp, proton.timestamp),
    "uuid": (uuid.UUID, uuid.UUID),
    "binary": (bytes, bytes),
    "string": (str, str),
    "symbol": (Symbol, proton.symbol),
    "list": (list, list),
    "map": (dict, dict),
    "array": (Array, proton.Array),
}
PROTON_NAMES = {theirs: name for name, (_, theirs) in TYPES.items()}

# proton holds decimal32 and decimal64 as the integer of their octets (big-endian, as sent);
# decimal128, like us, as the 16 octets.
_DECIMAL_INTS = {"decimal32": 4, "decimal64": 8}


def proton_type_code(name: str) -> int:
    """proton's code of a type (``Data.UINT``...), as an array's element type names it: the
    type's name in capitals, but ``Data.BOOL`` for boolean."""
    code: int = getattr(proton.Data, {"boolean": "BOOL"}.get(name, name.upper()))
    return code


PROTON_CODES = {proton_type_code(name): name for name in TYPES}


# -- our values in proton's types, and back ------------------------------------------------------


def _plain(value: Any) -> bool:
    """Whether ``value`` is a plain Python value, which a field sends as the field's type (a
    typed value, a composite or a described one is sent as what it is)."""
    return type(value) in (bool, int, float, str, bytes, list, tuple, dict, uuid.UUID)


def _descriptor_code(name: str) -> int:
    code = TYPES_SYSTEM.descriptor_of(name)
    assert code is not None, name
    return int(code)


def _sent_fields(c: Composite) -> list[tuple[FieldInfo, Any]]:
    """A composite's fields in order, trailing nulls left out (as the list on the wire)."""
    pairs = [(f, c[f.name]) for f in TYPES_SYSTEM.fields[c.name]]
    while pairs and pairs[-1][1] is None:
        pairs.pop()
    return pairs


def _field_type(f: FieldInfo, value: Any) -> tuple[Any, str | None]:
    """A field's value as it is sent, and its type: a plain list in a ``multiple`` field is an
    array of the field's type; another plain value takes the field's type."""
    if f.multiple and f.primitive is not None and type(value) in (list, tuple):
        return Array(f.primitive, tuple(value)), "array"
    if f.primitive is not None and _plain(value):
        return value, f.primitive
    return value, None


def to_proton(value: Any, type_name: str | None = None) -> Any:
    """Our value as proton's typed value of the same 1.0 type (``type_name``: the type a plain
    value is sent as; by default its own)."""
    if isinstance(value, Composite):
        fields = [to_proton(*_field_type(f, v)) for f, v in _sent_fields(value)]
        return proton.Described(proton.ulong(_descriptor_code(value.name)), fields)
    if isinstance(value, Described):
        if type(value.descriptor) is str:  # a described type of the model, by its name
            source = TYPES_SYSTEM.primitive_of(value.descriptor)
            code = proton.ulong(_descriptor_code(value.descriptor))
            return proton.Described(code, to_proton(value.value, source))
        return proton.Described(to_proton(value.descriptor), to_proton(value.value))
    name = type_name or type_name_of(value)
    assert name is not None, f"no 1.0 type for {value!r}"
    name = TYPES_SYSTEM.primitive_of(name) or name
    theirs = TYPES[name][1]
    if name == "null":
        return None
    if name == "list":
        return [to_proton(x) for x in value]
    if name == "map":
        return {to_proton(k): to_proton(v) for k, v in value.items()}
    if name == "array":
        array = value if isinstance(value, Array) else Array(name, tuple(value))
        element = TYPES_SYSTEM.primitive_of(array.type)
        assert element is not None, array.type
        descriptor: Any = proton.UNDESCRIBED
        if array.descriptor is not None:
            descriptor = to_proton(array.descriptor)
        items = [to_proton(x, element) for x in array.items]
        return proton.Array(descriptor, proton_type_code(element), *items)
    if name in _DECIMAL_INTS:
        return theirs(int.from_bytes(value, "big"))
    if name == "uuid":
        return value
    return theirs(value)


def ours(value: Any) -> Any:
    """proton's decoded value as ours, with the same 1.0 type."""
    if isinstance(value, proton.Described):
        return Described(ours(value.descriptor), ours(value.value))
    if isinstance(value, proton.Array):
        described: Any = value.descriptor
        descriptor = None if described is proton.UNDESCRIBED else ours(described)
        element = PROTON_CODES[value.type]
        return Array(element, tuple(ours(x) for x in value.elements), descriptor)
    if isinstance(value, memoryview):  # proton gives binary as a memoryview
        return bytes(value)
    if isinstance(value, dict):  # and maps as dict, AnnotationDict or PropertyDict
        return {ours(k): ours(v) for k, v in value.items()}
    name = PROTON_NAMES[type(value)]
    mine = TYPES[name][0]
    if name == "null":
        return None
    if name == "list":
        return [ours(x) for x in value]
    if name in _DECIMAL_INTS:
        return mine(value.to_bytes(_DECIMAL_INTS[name], "big"))
    if name == "uuid":
        return value
    return mine(value)


# -- the wire form: what two sides must agree on ---------------------------------------------


def wire(value: Any, type_name: str | None = None) -> Any:
    """``value`` as it travels: its 1.0 type and value, recursively; a composite as a described
    list of its fields (trailing nulls left out), each as the field's type says; a described
    type of the model named by its name (``Described("data", ...)``) with its numeric code."""
    if isinstance(value, Composite):
        items = tuple(wire(*_field_type(f, v)) for f, v in _sent_fields(value))
        return ("described", ("ulong", _descriptor_code(value.name)), ("list", items))
    if isinstance(value, Described):
        if type(value.descriptor) is str:
            source = TYPES_SYSTEM.primitive_of(value.descriptor)
            code = ("ulong", _descriptor_code(value.descriptor))
            return ("described", code, wire(value.value, source))
        return ("described", wire(value.descriptor), wire(value.value))
    name = type_name or type_name_of(value)
    assert name is not None, f"no 1.0 type for {value!r}"
    name = TYPES_SYSTEM.primitive_of(name) or name
    if name == "null":
        assert value is None, value
        return ("null",)
    if name == "list":
        return ("list", tuple(wire(x) for x in value))
    if name == "map":
        return ("map", tuple((wire(k), wire(v)) for k, v in value.items()))
    if name == "array":
        array = value if isinstance(value, Array) else Array(name, tuple(value))
        element = TYPES_SYSTEM.primitive_of(array.type)
        descriptor = None if array.descriptor is None else wire(array.descriptor)
        return ("array", element, descriptor, tuple(wire(x, element) for x in array.items))
    if name in ("float", "double"):
        return (name, struct.pack(">d", value))  # by its bits: -0.0 is not 0.0
    if name == "boolean":
        assert type(value) is bool, value
        return (name, value)
    if name in INTEGERS:
        assert isinstance(value, int) and type(value) is not bool, value
        return (name, int(value))
    if name in ("char", "string", "symbol"):
        return (name, str(value))
    if name == "uuid":
        return (name, value.bytes)
    return (name, bytes(value))  # binary, decimals


def proton_wire(value: Any) -> Any:
    """proton's value in the wire form."""
    return wire(ours(value))


# -- proton's encoding of compound values ----------------------------------------------------

_CONSTRUCTORS: dict[int, Constructor] = TYPES_SYSTEM.constructors
# The widest encoding of each primitive type: list32, map32, array32, uint (four octets), sym32...
WIDEST: dict[str, Constructor] = {
    name: max((_CONSTRUCTORS[e.code] for e in encodings), key=lambda c: c.width)
    for name, encodings in TYPES_SYSTEM.encodings.items()
}


def widen(data: bytes) -> bytes:
    """Our encoding of one value rewritten with proton's choices for compound values: every
    list8 and map8 as list32 and map32, every array as array32 with its element constructor
    and elements in the widest encoding of their type. Everything else is left as it is."""
    out, end = _widen(data, 0)
    assert end == len(data), f"{len(data) - end} octets after the value"
    return out


def _widen(buf: bytes, pos: int) -> tuple[bytes, int]:
    code = buf[pos]
    if code == 0:
        descriptor, pos = _widen(buf, pos + 1)
        value, pos = _widen(buf, pos)
        return b"\x00" + descriptor + value, pos
    c = _CONSTRUCTORS[code]
    if c.category in ("compound", "array"):
        code = WIDEST[c.type].code
    body, pos = _widen_body(c, buf, pos + 1, in_array=False)
    return bytes((code,)) + body, pos


def _widen_body(c: Constructor, buf: bytes, pos: int, in_array: bool) -> tuple[bytes, int]:
    """What follows constructor ``c``; an array's element (``in_array``) in its widest form."""
    wide = WIDEST[c.type]
    if c.category == "fixed":
        raw = buf[pos : pos + c.width]
        if in_array and wide.width != c.width:  # smalluint in an array: a uint of four octets
            signed = INTEGERS[c.type][0]
            number = int.from_bytes(raw, "big", signed=signed)
            raw = number.to_bytes(wide.width, "big", signed=signed)
        return raw, pos + c.width
    size = int.from_bytes(buf[pos : pos + c.width], "big")
    if c.category == "variable":
        start = pos + c.width
        width = wide.width if in_array else c.width
        return size.to_bytes(width, "big") + buf[start : start + size], start + size
    count = int.from_bytes(buf[pos + c.width : pos + 2 * c.width], "big")
    at, stop = pos + 2 * c.width, pos + c.width + size
    parts = []
    if c.category == "compound":
        for _ in range(count):
            item, at = _widen(buf, at)
            parts.append(item)
    else:
        if buf[at] == 0:
            descriptor, at = _widen(buf, at + 1)
            parts.append(b"\x00" + descriptor)
        element = _CONSTRUCTORS[buf[at]]
        parts.append(bytes((WIDEST[element.type].code,)))
        at += 1
        for _ in range(count):
            item, at = _widen_body(element, buf, at, in_array=True)
            parts.append(item)
    assert at == stop, f"a {c.type} that ends at {at}, not {stop}"
    data = b"".join(parts)
    return (len(data) + wide.width).to_bytes(wide.width, "big") + count.to_bytes(
        wide.width, "big"
    ) + data, stop


# -- proton's Data -----------------------------------------------------------------------------


def proton_encode(value: Any) -> bytes:
    data = proton.Data()
    data.put_object(value)
    return data.encode()


def proton_decode(encoded: bytes) -> Any:
    """proton's value of exactly one encoded value, as ours (converted while proton's Data
    lives: its binary values are views of the Data's memory, see test_proton_binary_is_a_view)."""
    data = proton.Data()
    assert data.decode(encoded) == len(encoded)
    data.rewind()
    assert data.next() is not None
    return ours(data.get_object())


def test_proton_binary_is_a_view() -> None:
    """proton gives a binary value as a memoryview of its Data's buffer, not a copy: the same
    view shows the next value decoded into that Data, so it is copied while the Data lives."""
    data = proton.Data()
    data.decode(bytes.fromhex("a0026162"))
    data.rewind()
    data.next()
    view = data.get_object()
    assert type(view) is memoryview
    assert bytes(view) == b"ab"
    data.clear()
    data.decode(bytes.fromhex("a0027879"))
    assert bytes(view) == b"xy"


def test_type_table() -> None:
    """The table covers exactly the model's primitive types, and proton puts and gets each."""
    assert sorted(TYPES) == sorted(PRIMITIVES)
    for name, (_, theirs) in TYPES.items():
        assert theirs in proton.Data.put_mappings, name
        assert proton_type_code(name) in proton.Data.get_mappings, name
    assert len(PROTON_NAMES) == len(TYPES) == len(PROTON_CODES)


# -- the known difference, proven ------------------------------------------------------------


def test_proton_writes_compounds_wide() -> None:
    """proton's Data sends non-empty lists as list32, maps as map32 and arrays as array32 with
    wide elements, where we send the smallest encodings; the empty list is list0 on both
    sides, and scalars are alike. :func:`widen` makes exactly that change."""
    cases: list[tuple[Any, str, str]] = [
        # our value, our bytes, proton's bytes
        ([], "45", "45"),
        ([Long(1)], "c0 03 01 5501", "d0 00000006 00000001 5501"),
        ({}, "c1 01 00", "d1 00000004 00000000"),
        ({Symbol("a"): Long(1)}, "c1 06 02 a30161 5501", "d1 00000009 00000002 a30161 5501"),
        (
            Array("uint", (UInt(0), UInt(1))),
            "e0 04 02 52 00 01",
            "f0 0000000d 00000002 70 00000000 00000001",
        ),
        (
            Array("symbol", (Symbol("a"),)),
            "e0 04 01 a3 01 61",
            "f0 0000000a 00000001 b3 00000001 61",
        ),
        (Array("long", (Long(1),)), "e0 03 01 55 01", "f0 0000000d 00000001 81 0000000000000001"),
        (Array("boolean", (True,)), "e0 03 01 56 01", "f0 00000006 00000001 56 01"),
        ([[Long(1)]], "c0 06 01 c0030155 01", "d0 0000000f 00000001 d0 00000006 00000001 5501"),
        (UInt(1), "52 01", "52 01"),
        (Long(-1), "55 ff", "55 ff"),
        (Int(0), "54 00", "54 00"),
        ("a" * 256, "b1 00000100" + "61" * 256, "b1 00000100" + "61" * 256),
    ]
    for value, mine, theirs in cases:
        ours_bytes, their_bytes = bytes.fromhex(mine), bytes.fromhex(theirs)
        assert CODEC.encode(value) == ours_bytes, value
        assert proton_encode(to_proton(value)) == their_bytes, value
        assert widen(ours_bytes) == their_bytes, value
        assert wire(CODEC.decode(their_bytes)) == wire(value)
        assert wire(proton_decode(ours_bytes)) == wire(value)


# -- primitive types ---------------------------------------------------------------------------
#
# Nothing drawn is kept from proton: it takes every value the strategies draw, of every type.
# They draw no NaN, which is never equal to itself; test_nan shows that both sides send it alike.


def _check_value(value: Any, name: str) -> None:
    expected = wire(value, name)
    assert wire(ours(to_proton(value, name))) == expected  # the mapping itself
    mine = CODEC.encode(value, name)
    theirs = proton_encode(to_proton(value, name))
    assert widen(mine) == theirs
    assert widen(theirs) == theirs  # proton's bytes have no narrow form left for widen to change
    if name not in COMPOUND:
        assert mine == theirs  # exactly: widen changes compound values only
    assert wire(CODEC.decode(theirs)) == expected
    assert wire(proton_decode(mine)) == expected


def test_nan() -> None:
    """A NaN double and a NaN float: the same bytes on both sides, read back as NaN by each."""
    for value, name in ((float("nan"), "double"), (Float(float("nan")), "float")):
        mine = CODEC.encode(value, name)
        assert mine == proton_encode(to_proton(value, name))
        assert mine.hex() in ("827ff8000000000000", "727fc00000")
        for got in (CODEC.decode(mine), proton_decode(mine)):
            assert type_name_of(got) == name
            assert math.isnan(got)


@pytest.mark.parametrize("name", PRIMITIVES)
@VALUE_SETTINGS
@given(data=st.data())
def test_primitive_against_proton(name: str, data: st.DataObject) -> None:
    """Each primitive type's values: same bytes (compounds widened), each side reads the other's."""
    value = data.draw(type_values(name), label=name)
    _check_value(value, name)


# -- composite types ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", COMPOSITES)
@COMPOSITE_SETTINGS
@given(data=st.data())
def test_composite_against_proton(name: str, data: st.DataObject) -> None:
    """Each composite: proton reads our described list field by field, its encoding of the same
    list is ours widened, and we read it back to the composite with its defaults."""
    value = data.draw(composites([name]), label=name)
    mine = CODEC.encode(value)

    got = proton_decode(mine)  # proton's Described, converted to ours
    assert isinstance(got, Described)
    assert type(got.descriptor) is ULong  # proton's ulong
    assert got.descriptor == _descriptor_code(name)
    assert type(got.value) is list
    sent = _sent_fields(value)
    assert [wire(x) for x in got.value] == [wire(*_field_type(f, v)) for f, v in sent]

    theirs = proton_encode(to_proton(value))
    assert widen(mine) == theirs
    decoded = CODEC.decode(theirs)
    assert decoded == CODEC.with_defaults(value)
    assert wire(decoded) == wire(CODEC.with_defaults(value))


# -- messages ----------------------------------------------------------------------------------
#
# proton.Message's attribute of each field of the header and properties sections: the field's
# name with "_" for "-", but for these.
_MESSAGE_RENAMES = {
    "message-id": "id",
    "to": "address",
    "absolute-expiry-time": "expiry_time",
}


def message_attr(name: str) -> str:
    return _MESSAGE_RENAMES.get(name, name.replace("-", "_"))


# What proton's Message gives for a field that was not sent (other than None): it cannot tell
# an absent ttl, time, or group-sequence from 0, nor an absent user id from an empty one, and it
# gives the string "None" for an absent content type or encoding (symbol(None) in its binding).
_ABSENT = {
    "ttl": 0.0,
    "user_id": b"",
    "content_type": "None",
    "content_encoding": "None",
    "expiry_time": 0.0,
    "creation_time": 0.0,
    "group_sequence": 0,
}
# The ttl and the timestamps are float seconds in proton's Message: read as proton converts
# them (milliseconds / 1000), and never written through it: it truncates the seconds back to
# milliseconds, which loses some.
_SECONDS = ("ttl", "expiry_time", "creation_time")
# The fields proton's Message writes as we give them: all the others.
_TAKEN = {
    name: tuple(f.name for f in TYPES_SYSTEM.fields[name] if message_attr(f.name) not in _SECONDS)
    for name in ("header", "properties")
}
# The other sections proton's Message takes, by its attribute (the footer has none).
_SECTION_ATTRS = {
    "delivery-annotations": "instructions",
    "message-annotations": "annotations",
    "application-properties": "properties",
}
_BODIES = ("data", "amqp-sequence", "amqp-value")


# The header's defaults (messaging 3.2.1: durable false, priority 4, first-acquirer false,
# delivery-count 0), which proton applies to an absent field and leaves out when sending. Our
# model has none of them (spec/data/amqp1-0-messaging.xml leaves the default attributes out),
# so they are filled in here wherever the model gives no default.
HEADER_DEFAULTS = {
    "durable": False,
    "priority": UByte(4),
    "first-acquirer": False,
    "delivery-count": UInt(0),
}


def spec_defaults(section: Any) -> Any:
    """A section as the receiver must take it: ``with_defaults``, and the header's defaults."""
    full = CODEC.with_defaults(section)
    if not isinstance(full, Composite) or full.name != "header":
        return full
    return Composite(
        "header",
        {n: HEADER_DEFAULTS.get(n) if v is None else v for n, v in full.fields.items()},
    )


def test_header_defaults() -> None:
    """proton reads an absent header field as its default, and leaves out a field equal to its
    default when sending; the model's defaults, where it has any, are the same."""
    empty = proton.Message()
    assert (empty.durable, empty.priority, empty.first_acquirer, empty.delivery_count) == (
        False,
        4,
        False,
        0,
    )
    defaults = {message_attr(n): to_proton(v) for n, v in HEADER_DEFAULTS.items()}
    nothing_set = [CODEC.composite("header"), CODEC.composite("properties")]
    assert proton.Message(**defaults).encode() == CODEC.message(nothing_set)
    for f in TYPES_SYSTEM.fields["header"]:
        if f.default is not None:
            assert wire(f.default) == wire(HEADER_DEFAULTS[f.name]), f.name


def section_name(section: Any) -> str:
    if isinstance(section, Composite):
        return section.name
    assert isinstance(section, Described) and type(section.descriptor) is str, section
    return str(section.descriptor)


def api(value: Any) -> Any:
    """A value as proton's Message API gives it: a plain Python value (its ids lose their 1.0
    type: a ulong is an int), kept apart by kind (True is not 1, "a" is not b"a")."""
    if value is None:
        return None
    if isinstance(value, memoryview | bytes):
        return ("bytes", bytes(value))
    if isinstance(value, uuid.UUID):
        return ("uuid", value.bytes)
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return (kind.__name__, kind(value))
    raise AssertionError(f"unexpected {type(value).__name__}: {value!r}")


def test_message_names() -> None:
    """Every header and properties field has its attribute in proton's Message, and every
    section of the model is a body, the header, the properties, the footer or has one."""
    message = proton.Message()
    for section in ("header", "properties"):
        for f in TYPES_SYSTEM.fields[section]:
            assert hasattr(message, message_attr(f.name)), (section, f.name)
    fields = [*TYPES_SYSTEM.fields["header"], *TYPES_SYSTEM.fields["properties"]]
    assert set(_ABSENT) | set(_SECONDS) <= {message_attr(f.name) for f in fields}
    names = [t.name for t in CODEC.spec.sections]
    assert set(_SECTION_ATTRS) | set(_BODIES) | {"header", "properties", "footer"} == set(names)


def _check_fields(message: proton.Message, section: Composite) -> None:
    """proton's Message gives each field of a header or properties section as we sent it."""
    full = spec_defaults(section)
    for f in TYPES_SYSTEM.fields[section.name]:
        attr = message_attr(f.name)
        got, value = getattr(message, attr), full[f.name]
        if value is None:
            assert api(got) == api(_ABSENT.get(attr)), attr
        elif attr in _SECONDS:
            assert got == float(value) / 1000, attr
        else:
            assert api(got) == api(value), attr


@MESSAGE_SETTINGS
@given(sections=messages())
def test_message_read_by_proton(sections: list[Any]) -> None:
    """proton's Message reads our message: its body, header and properties fields, annotations
    and application properties are ours."""
    message = proton.Message()
    message.decode(CODEC.message(sections))
    by_name = {section_name(s): s for s in sections}
    assert len(by_name) == len(sections)

    [body] = [s for s in sections if section_name(s) in _BODIES]
    assert message.inferred is (body.descriptor != "amqp-value")
    assert proton_wire(message.body) == wire(body.value, TYPES_SYSTEM.primitive_of(body.descriptor))

    for name in ("header", "properties"):
        _check_fields(message, by_name.get(name, CODEC.composite(name)))

    for name, attr in _SECTION_ATTRS.items():
        got = getattr(message, attr)
        if name in by_name:
            assert proton_wire(got) == wire(by_name[name].value, "map")
        else:
            assert got is None, attr


def proton_message(sections: list[Any]) -> tuple[proton.Message, list[Any]]:
    """proton's Message built from what it takes of ``sections``, and the sections it must send
    for it: always a header and a properties section; no footer, no ttl or timestamps, no
    amqp-value of null; group-sequence as proton sends it (each proven in
    test_proton_message_limits)."""
    message = proton.Message()
    by_name = {section_name(s): s for s in sections}
    expected: list[Any] = []
    for name in ("header", "properties"):
        section = by_name.get(name, CODEC.composite(name))
        taken = {n: v for n, v in section.fields.items() if n in _TAKEN[name] and v is not None}
        infos = {f.name: f for f in TYPES_SYSTEM.fields[name]}
        for field_name, value in taken.items():
            setattr(
                message, message_attr(field_name), to_proton(*_field_type(infos[field_name], value))
            )
        if name == "properties":
            # proton has no absent group-sequence: it sends it (0 if unset) whenever the
            # group-id is set, and leaves out a 0 otherwise (proven below).
            sequence = taken.get("group-sequence") or 0
            taken.pop("group-sequence", None)
            if "group-id" in taken or sequence:
                taken["group-sequence"] = UInt(sequence)
        expected.append(spec_defaults(Composite(name, taken)))
    for section in sections:
        name = section_name(section)
        if name in _SECTION_ATTRS:
            setattr(message, _SECTION_ATTRS[name], to_proton(section.value, "map"))
            expected.append(section)
        elif name in _BODIES:
            message.body = to_proton(section.value, TYPES_SYSTEM.primitive_of(name))
            message.inferred = name != "amqp-value"
            if not (name == "amqp-value" and section.value is None):
                expected.append(section)  # an amqp-value of null is no body to proton
        # proton's Message has no footer
    order = [t.name for t in CODEC.spec.sections]
    expected.sort(key=lambda s: order.index(section_name(s)))
    return message, expected


@MESSAGE_SETTINGS
@given(sections=messages())
def test_message_written_by_proton(sections: list[Any]) -> None:
    """proton's Message built from the same fields encodes a message we read back to the same
    sections (what it cannot express left out, see proton_message)."""
    message, expected = proton_message(sections)
    got = [spec_defaults(s) for s in CODEC.sections(message.encode())]
    assert [wire(s) for s in got] == [wire(s) for s in expected]
    assert got == expected


def test_proton_message_limits() -> None:
    """What the message tests leave out or normalise is proton's doing, shown against proton."""
    # Always a header and a properties section, encoded as we encode them.
    assert proton.Message().encode() == CODEC.message(
        [CODEC.composite("header"), CODEC.composite("properties")]
    )
    # Absent fields read as "None" (content type and encoding), b"" and 0.
    empty = proton.Message()
    assert (empty.content_type, empty.content_encoding) == ("None", "None")
    assert (empty.user_id, empty.group_sequence, empty.delivery_count) == (b"", 0, 0)
    # The ttl (and the timestamps) are float seconds, truncated back to milliseconds.
    ttl = 4294965299
    [header, _] = CODEC.sections(proton.Message(ttl=float(ttl) / 1000).encode())
    assert header["ttl"] == ttl - 1
    created = 2**60 + 1
    read = proton.Message()
    read.decode(CODEC.message([CODEC.composite("properties", creation_time=Timestamp(created))]))
    assert int(read.creation_time * 1000) != created
    # A message id of type ulong comes back as a plain int.
    read.decode(CODEC.message([CODEC.composite("properties", message_id=ULong(5))]))
    message_id: Any = read.id
    assert type(message_id) is int
    # group-sequence: sent as 0 with a group id, left out when 0 without one.
    [_, props] = CODEC.sections(proton.Message(group_id="g").encode())
    assert props["group-sequence"] == 0
    assert type(props["group-sequence"]) is UInt
    [_, props] = CODEC.sections(proton.Message(group_sequence=0).encode())
    assert props["group-sequence"] is None
    # No body for an amqp-value of null.
    read.decode(CODEC.message([Described("amqp-value", None)]))
    assert read.body is None
    assert len(CODEC.sections(read.encode())) == 2
    # No footer: proton's Message has no attribute for it, and drops it.
    footer = Described("footer", {Symbol("k"): Long(1)})
    assert not hasattr(read, "footer")
    read.decode(CODEC.message([Described("amqp-value", "x"), footer]))
    assert [section_name(s) for s in CODEC.sections(read.encode())] == [
        "header",
        "properties",
        "amqp-value",
    ]
