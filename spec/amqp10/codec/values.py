"""AMQP 1.0 values in Python: which type a value has, so that it encodes as itself again.

Plain Python values stand for the obvious 1.0 types: ``None`` null, ``bool`` boolean, ``int``
long, ``float`` double, ``str`` string, ``bytes`` binary, ``list`` list, ``dict`` map,
:class:`uuid.UUID` uuid. Every other primitive has a subclass of the Python type it holds
(:class:`UInt` is an ``int``, :class:`Symbol` a ``str``), so it compares equal to the plain value
and the decoder gives back the type it read. Compound values of the type system are
:class:`Described` (a descriptor and a value), :class:`Array` (one element type for all) and
:class:`Composite` (a composite type of the specification by name, with its fields by name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "INTEGERS",
    "INTEGER_CLASSES",
    "TYPE_NAMES",
    "Array",
    "Byte",
    "Char",
    "Composite",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Described",
    "Float",
    "Int",
    "Long",
    "Short",
    "Symbol",
    "Timestamp",
    "UByte",
    "UInt",
    "ULong",
    "UShort",
    "type_name_of",
]


class UByte(int):
    __slots__ = ()


class UShort(int):
    __slots__ = ()


class UInt(int):
    __slots__ = ()


class ULong(int):
    __slots__ = ()


class Byte(int):
    __slots__ = ()


class Short(int):
    __slots__ = ()


class Int(int):
    __slots__ = ()


class Long(int):
    __slots__ = ()


class Timestamp(int):
    """Milliseconds since the Unix epoch."""

    __slots__ = ()


class Float(float):
    """A 32-bit IEEE 754 float (a plain ``float`` is a double)."""

    __slots__ = ()


class Char(str):
    """One Unicode code point, sent as UTF-32."""

    __slots__ = ()


class Symbol(str):
    """A symbolic value from a constrained domain: ASCII by the specification."""

    __slots__ = ()


class Decimal32(bytes):
    """The IEEE 754-2008 decimal32's four octets, as sent."""

    __slots__ = ()


class Decimal64(bytes):
    __slots__ = ()


class Decimal128(bytes):
    __slots__ = ()


# the 1.0 integer types: (signed, width in octets)
INTEGERS: dict[str, tuple[bool, int]] = {
    "ubyte": (False, 1),
    "ushort": (False, 2),
    "uint": (False, 4),
    "ulong": (False, 8),
    "byte": (True, 1),
    "short": (True, 2),
    "int": (True, 4),
    "long": (True, 8),
    "timestamp": (True, 8),
}


# the Python class of each 1.0 integer type
INTEGER_CLASSES: dict[str, type[int]] = {
    "ubyte": UByte,
    "ushort": UShort,
    "uint": UInt,
    "ulong": ULong,
    "byte": Byte,
    "short": Short,
    "int": Int,
    "long": Long,
    "timestamp": Timestamp,
}


@dataclass(frozen=True, slots=True)
class Described:
    """A value with a descriptor (a :class:`Symbol` or a :class:`ULong`) that says what it is."""

    descriptor: Any
    value: Any


@dataclass(frozen=True, slots=True)
class Array:
    """Values of one type, sent with one constructor: ``type`` is a primitive type's name
    (``symbol``, ``uint``...); ``descriptor``, if any, describes every element."""

    type: str
    items: tuple[Any, ...]
    descriptor: Any = None


@dataclass(frozen=True, slots=True, eq=False)
class Composite:
    """An instance of a composite type of the specification (``open``, ``source``,
    ``properties``...): its fields by name, a missing field being null (two composites are
    equal when their non-null fields are). Decoded composites carry every field, with the
    specification's defaults for those sent null."""

    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.fields.get(name)

    def _set(self) -> dict[str, Any]:
        return {k: v for k, v in self.fields.items() if v is not None}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Composite):
            return NotImplemented
        return self.name == other.name and self._set() == other._set()

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self._set()))))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.fields.items() if v is not None)
        return f"{self.name}({shown})"


TYPE_NAMES: dict[type, str] = {  # the Python type of a value -> its 1.0 type
    type(None): "null",
    bool: "boolean",
    int: "long",
    float: "double",
    str: "string",
    bytes: "binary",
    list: "list",
    tuple: "list",
    dict: "map",
    UByte: "ubyte",
    UShort: "ushort",
    UInt: "uint",
    ULong: "ulong",
    Byte: "byte",
    Short: "short",
    Int: "int",
    Long: "long",
    Timestamp: "timestamp",
    Float: "float",
    Char: "char",
    Symbol: "symbol",
    Decimal32: "decimal32",
    Decimal64: "decimal64",
    Decimal128: "decimal128",
    Array: "array",
}


def type_name_of(value: Any) -> str | None:
    """The 1.0 primitive type a Python value encodes as (None: described or unknown)."""
    found = TYPE_NAMES.get(type(value))
    if found is not None:
        return found
    if type(value).__name__ == "UUID":
        return "uuid"
    return None
