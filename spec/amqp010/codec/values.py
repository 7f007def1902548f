"""AMQP 0-10 values in Python: which type a value has, so that it encodes as itself again.

A field of a struct, control or command has its type in the model, so plain Python values
serve there: ``int`` for every integer type (``datetime`` and ``sequence-no`` too), ``float``,
``bool`` (``boolean``; a ``bit`` field is True when set), ``str`` for text, ``bytes`` for binary
(fixed-width ``bin*`` as well as ``vbin*``), :class:`uuid.UUID`, ``dict`` for ``map``, ``list``
for ``list``, :class:`Array` for ``array``, :class:`Struct` for ``struct32`` and struct-typed
fields, :class:`SequenceSet` and :class:`ByteRanges`, :class:`Dec32` and :class:`Dec64`.

Inside a map, list or array every value carries a type code, so the value must say its type:
plain values stand for the obvious types (``None`` void, ``bool`` boolean, ``int`` int64,
``float`` double, ``str`` str16, ``bytes`` vbin32, ``dict`` map, ``list``/``tuple`` list,
:class:`uuid.UUID` uuid, :class:`Array` array, :class:`Struct` struct32), and every other type
has a subclass of the Python type it holds (:class:`UInt8` is an ``int``, :class:`Str8` a
``str``), so it compares equal to the plain value and the decoder gives back the type it read.
A type code the specification does not define, but whose width its code tells, is an
:class:`Opaque`.

Controls and commands as they travel, with their arguments by name, are :class:`Control` and
:class:`Command` (a command with its session header's sync flag, header entries and body).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PYTHON_TYPES",
    "SERIAL_BITS",
    "TYPE_NAMES",
    "Array",
    "Bin8",
    "Bin16",
    "Bin32",
    "Bin40",
    "Bin64",
    "Bin72",
    "Bin128",
    "Bin256",
    "Bin512",
    "Bin1024",
    "Bit",
    "ByteRanges",
    "Char",
    "CharUtf32",
    "Command",
    "Control",
    "Datetime",
    "Dec32",
    "Dec64",
    "Float",
    "Int8",
    "Int16",
    "Int32",
    "Opaque",
    "SequenceSet",
    "Str8",
    "Str8Latin",
    "Str8Utf16",
    "Str16Latin",
    "Str16Utf16",
    "Struct",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Vbin8",
    "Vbin16",
    "serial_le",
    "type_name_of",
]

SERIAL_BITS = 32  # sequence-no: RFC 1982 serial numbers of 32 bits


def serial_le(a: int, b: int) -> bool:
    """``a`` <= ``b`` in RFC 1982 serial arithmetic (32 bits): ``b`` is ``a`` or follows it by
    less than half the number space."""
    return (b - a) % (1 << SERIAL_BITS) < 1 << (SERIAL_BITS - 1)


class Int8(int):
    __slots__ = ()


class UInt8(int):
    __slots__ = ()


class Int16(int):
    __slots__ = ()


class UInt16(int):
    __slots__ = ()


class Int32(int):
    __slots__ = ()


class UInt32(int):
    __slots__ = ()


class UInt64(int):
    __slots__ = ()


class Datetime(int):
    """Seconds since the epoch, signed (POSIX ``time_t``)."""

    __slots__ = ()


class Float(float):
    """A 32-bit IEEE 754 float (a plain ``float`` is a double)."""

    __slots__ = ()


class Char(str):
    """One ISO-8859-15 character, one octet."""

    __slots__ = ()


class CharUtf32(str):
    """One Unicode character in UTF-32, four octets."""

    __slots__ = ()


class Str8(str):
    """UTF-8 text of at most 255 octets (a plain ``str`` is a str16)."""

    __slots__ = ()


class Str8Latin(str):
    __slots__ = ()


class Str16Latin(str):
    __slots__ = ()


class Str8Utf16(str):
    __slots__ = ()


class Str16Utf16(str):
    __slots__ = ()


class Vbin8(bytes):
    """Binary of at most 255 octets (a plain ``bytes`` is a vbin32)."""

    __slots__ = ()


class Vbin16(bytes):
    __slots__ = ()


class Bin8(bytes):
    """Exactly one octet of opaque binary."""

    __slots__ = ()


class Bin16(bytes):
    __slots__ = ()


class Bin32(bytes):
    __slots__ = ()


class Bin40(bytes):
    __slots__ = ()


class Bin64(bytes):
    __slots__ = ()


class Bin72(bytes):
    __slots__ = ()


class Bin128(bytes):
    __slots__ = ()


class Bin256(bytes):
    __slots__ = ()


class Bin512(bytes):
    __slots__ = ()


class Bin1024(bytes):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Dec32:
    """A decimal: ``value`` / 10 ** ``exponent`` (an octet of exponent, an int32 value)."""

    exponent: int
    value: int


@dataclass(frozen=True, slots=True)
class Dec64:
    """A decimal: ``value`` / 10 ** ``exponent`` (an octet of exponent, an int64 value)."""

    exponent: int
    value: int


@dataclass(frozen=True, slots=True)
class Bit:
    """The ``bit`` type inside a map, list or array: its type code and no octets at all."""


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value of a type code the specification does not define, kept as its octets (the
    size prefix included for a variable-width code): the code says how wide it is."""

    code: int
    data: bytes


def _pairs(ranges: Iterable[Iterable[int]]) -> tuple[tuple[int, int], ...]:
    pairs = []
    for pair in ranges:
        lower, upper = pair
        pairs.append((int(lower), int(upper)))
    return tuple(pairs)


@dataclass(frozen=True, slots=True, init=False)
class SequenceSet:
    """``session.commands`` and the like: ranges of sequence numbers, each (lower, upper)
    inclusive, in serial arithmetic (``(0xfffffffe, 1)`` is four numbers)."""

    ranges: tuple[tuple[int, int], ...]

    def __init__(self, ranges: Iterable[Iterable[int]] = ()) -> None:
        object.__setattr__(self, "ranges", _pairs(ranges))

    def __contains__(self, number: object) -> bool:
        if not isinstance(number, int):
            return False
        return any(serial_le(lo, number) and serial_le(number, hi) for lo, hi in self.ranges)


@dataclass(frozen=True, slots=True, init=False)
class ByteRanges:
    """Ranges of octet offsets, each (lower, upper) inclusive, as uint64 pairs."""

    ranges: tuple[tuple[int, int], ...]

    def __init__(self, ranges: Iterable[Iterable[int]] = ()) -> None:
        object.__setattr__(self, "ranges", _pairs(ranges))


@dataclass(frozen=True, slots=True)
class Array:
    """Values of one type sent with one type code: ``type`` is a type's name (``str16``,
    ``uint32``, ``struct32``...)."""

    type: str
    items: tuple[Any, ...] = ()


def _set(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that are sent: None and False leave a field out (False is a clear ``bit``;
    no 0-10 struct, control or command has a ``boolean`` field, a test checks it)."""
    return {k: v for k, v in fields.items() if v is not None and v is not False}


def _shown(name: str, fields: Mapping[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in _set(fields).items())})"


@dataclass(frozen=True, slots=True, eq=False)
class Struct:
    """A struct of the specification by its qualified name (``message.delivery-properties``),
    its fields by their names; a field left out is None (or, for a bit, False)."""

    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.fields.get(name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self.name == other.name and _set(self.fields) == _set(other.fields)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(_set(self.fields)))))

    def __repr__(self) -> str:
        return _shown(self.name, self.fields)


@dataclass(frozen=True, slots=True, eq=False)
class Control:
    """A control (``connection.start``, ``session.attach``...) on a channel, its arguments by
    name."""

    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    channel: int = 0

    def __getitem__(self, name: str) -> Any:
        return self.fields.get(name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Control):
            return NotImplemented
        return (self.name, self.channel, _set(self.fields)) == (
            other.name,
            other.channel,
            _set(other.fields),
        )

    def __hash__(self) -> int:
        return hash((self.name, self.channel))

    def __repr__(self) -> str:
        return f"{_shown(self.name, self.fields)}@{self.channel}"


@dataclass(frozen=True, slots=True, eq=False)
class Command:
    """A command on a channel: its arguments by name, the session header's ``sync`` flag, the
    entries of its header segment (None: no header segment) and its body (None: no body
    segment)."""

    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    channel: int = 0
    sync: bool = False
    header: tuple[Struct, ...] | None = None
    body: bytes | None = None

    def __getitem__(self, name: str) -> Any:
        return self.fields.get(name)

    def _key(self) -> tuple[Any, ...]:
        header = None if self.header is None else tuple(self.header)
        return (self.name, self.channel, _set(self.fields), self.sync, header, self.body)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Command):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.name, self.channel, self.sync, self.body))

    def __repr__(self) -> str:
        extra = "".join(
            part
            for part in (
                " sync" if self.sync else "",
                f" header={list(self.header)!r}" if self.header is not None else "",
                f" body={self.body!r}" if self.body is not None else "",
            )
        )
        return f"{_shown(self.name, self.fields)}@{self.channel}{extra}"


# the Python type of a value in a map, list or array -> the 0-10 type it is sent as
TYPE_NAMES: dict[type, str] = {
    type(None): "void",
    bool: "boolean",
    int: "int64",
    float: "double",
    str: "str16",
    bytes: "vbin32",
    dict: "map",
    list: "list",
    tuple: "list",
    uuid.UUID: "uuid",
    Array: "array",
    Struct: "struct32",
    Int8: "int8",
    UInt8: "uint8",
    Int16: "int16",
    UInt16: "uint16",
    Int32: "int32",
    UInt32: "uint32",
    UInt64: "uint64",
    Datetime: "datetime",
    Float: "float",
    Char: "char",
    CharUtf32: "char-utf32",
    Str8: "str8",
    Str8Latin: "str8-latin",
    Str16Latin: "str16-latin",
    Str8Utf16: "str8-utf16",
    Str16Utf16: "str16-utf16",
    Vbin8: "vbin8",
    Vbin16: "vbin16",
    Bin8: "bin8",
    Bin16: "bin16",
    Bin32: "bin32",
    Bin40: "bin40",
    Bin64: "bin64",
    Bin72: "bin72",
    Bin128: "bin128",
    Bin256: "bin256",
    Bin512: "bin512",
    Bin1024: "bin1024",
    Dec32: "dec32",
    Dec64: "dec64",
    Bit: "bit",
}

# the 0-10 type name -> the Python type the decoder gives for it inside a map, list or array
PYTHON_TYPES: dict[str, type] = {}
for _python, _name in TYPE_NAMES.items():
    PYTHON_TYPES.setdefault(_name, _python)  # list before tuple: a list decodes as a list
del _python, _name


def type_name_of(value: Any) -> str | None:
    """The 0-10 type a value is sent as inside a map, list or array (None: none)."""
    return TYPE_NAMES.get(type(value))
