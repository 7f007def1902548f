"""Field tables and field arrays, in both dialects of their type codes.

The 0-9-1 specification's grammar (section 4.2.1) and RabbitMQ/Qpid (the "errata" that every
real broker follows, https://www.rabbitmq.com/amqp-0-9-1-errata.html section 3) disagree on
four letters, and RabbitMQ reads one letter of the grammar's that it never writes:

====  =====================  ====================================================
code  ``amqp`` (0-9-1 spec)  ``rabbit``
====  =====================  ====================================================
s     short string           signed 16-bit
U     signed 16-bit          (undefined)
l     unsigned 64-bit        signed 64-bit
L     signed 64-bit          signed 64-bit, read but never written (``WRITTEN``)
x     (undefined)            byte array
====  =====================  ====================================================

The ``rabbit`` dialect is what RabbitMQ 3.10's ``rabbit_binary_parser:parse_table/1`` decodes
(``L`` since rabbitmq-server issue 1093); its generator writes every 64-bit integer as ``l``.
:data:`GRAMMARS` gives the type codes each protocol version's own grammar defines: a code is
undefined for a peer only if neither its protocol's grammar nor its dialect defines it.

Values decode to plain Python (``bool``, ``int``, ``float``, ``Decimal``, ``str``, ``bytes``,
``datetime``, ``dict``, ``list``, ``None``) or, with ``typed=True``, every table and array
entry becomes a :class:`FieldValue` that keeps its type code, so that re-encoding gives the
same bytes. The encoder accepts both: plain values get a type code inferred per dialect,
:class:`FieldValue` entries are encoded with exactly their code.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...errors import FrameError, LocalProtocolError, SyntaxFieldError

__all__ = [
    "DIALECTS",
    "GRAMMARS",
    "MAX_DEPTH",
    "WRITTEN",
    "FieldValue",
    "decode_array",
    "decode_table",
    "defined_codes",
    "encode_array",
    "encode_table",
    "encode_value",
    "plain",
]

# Nesting deeper than this is refused on decoding (a syntax error) rather than letting a
# hostile peer drive the decoder into RecursionError.
MAX_DEPTH = 64

_FIXED: dict[str, struct.Struct] = {
    "bool": struct.Struct(">B"),
    "int8": struct.Struct(">b"),
    "uint8": struct.Struct(">B"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "uint64": struct.Struct(">Q"),
    "float": struct.Struct(">f"),
    "double": struct.Struct(">d"),
    "timestamp": struct.Struct(">Q"),
}
_U32 = struct.Struct(">I")
_LAST_DATETIME = int(_dt.datetime.max.replace(tzinfo=_dt.UTC).timestamp())
_DECIMAL = struct.Struct(">Bi")

_COMMON = {
    "t": "bool",
    "b": "int8",
    "B": "uint8",
    "u": "uint16",
    "I": "int32",
    "i": "uint32",
    "f": "float",
    "d": "double",
    "D": "decimal",
    "S": "longstr",
    "A": "array",
    "T": "timestamp",
    "F": "table",
    "V": "void",
}

DIALECTS: dict[str, dict[str, str]] = {
    "amqp": {**_COMMON, "s": "shortstr", "U": "int16", "l": "uint64", "L": "int64"},
    "rabbit": {**_COMMON, "s": "int16", "l": "int64", "L": "int64", "x": "bytes"},
}

# What a dialect's own peers write (tables drawn for a peer of that dialect use these): RabbitMQ
# reads 'L' but sends every 64-bit integer as 'l' (rabbit_binary_generator).
WRITTEN: dict[str, dict[str, str]] = {
    "amqp": DIALECTS["amqp"],
    "rabbit": {c: k for c, k in DIALECTS["rabbit"].items() if c != "L"},
}

# The field-value type codes each protocol version's grammar defines. 0-9-1: section 4.2.1
# (the ``amqp`` dialect). 0-9: S, I, D, T, F and V (the "0-9" column of RabbitMQ's errata,
# section 3); 0-8 is read as 0-9 (a superset of 0-8's S, I, D, T, F errs towards fewer
# undefined codes, never towards calling a defined one undefined).
GRAMMARS: dict[str, frozenset[str]] = {
    "0-9-1": frozenset(DIALECTS["amqp"]),
    "0-9": frozenset("SIDTFV"),
    "0-8": frozenset("SIDTFV"),
}


def defined_codes(protocol: str, dialect: str) -> frozenset[str]:
    """The type codes a peer of ``dialect`` speaking ``protocol`` may be sent in a table: those
    its protocol's grammar defines and those its dialect reads. A protocol this module does not
    know (an extension, ``0-9-1-rabbit``) is read with 0-9-1's grammar, the widest."""
    return GRAMMARS.get(protocol, GRAMMARS["0-9-1"]) | frozenset(DIALECTS[dialect])


@dataclass(frozen=True, slots=True)
class FieldValue:
    """A table or array value together with the one-letter type code it travels under."""

    code: str
    value: Any

    def __repr__(self) -> str:
        return f"{self.code}:{self.value!r}"


def plain(value: Any) -> Any:
    """Strip :class:`FieldValue` wrappers, recursively, leaving plain Python values."""
    if isinstance(value, FieldValue):
        return plain(value.value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# -- encoding ---------------------------------------------------------------------------------


def _infer(value: Any, dialect: str) -> str:
    """The type code a plain Python value is sent with."""
    if value is None:
        return "V"
    if isinstance(value, bool):
        return "t"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "I"
        if dialect == "amqp":
            return "L" if -(2**63) <= value < 2**63 else "l"
        return "l"
    if isinstance(value, float):
        return "d"
    if isinstance(value, Decimal):
        return "D"
    if isinstance(value, str):
        return "S"
    if isinstance(value, bytes | bytearray | memoryview):
        return "x" if dialect == "rabbit" else "S"
    if isinstance(value, _dt.datetime):
        return "T"
    if isinstance(value, Mapping):
        return "F"
    if isinstance(value, list | tuple):
        return "A"
    raise LocalProtocolError(f"cannot put a {type(value).__name__} in a field table: {value!r}")


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise LocalProtocolError(f"expected str or bytes, got {type(value).__name__}: {value!r}")


def _encode_decimal(value: Any) -> bytes:
    if not isinstance(value, Decimal) or not value.is_finite():
        raise LocalProtocolError(f"a decimal field needs a finite Decimal, got {value!r}")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    raw = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if exponent > 0:
        raw, exponent = raw * 10**exponent, 0
    return _DECIMAL.pack(-exponent, raw)


def _encode_timestamp(value: Any) -> bytes:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        value = int(value.timestamp())
    return _FIXED["timestamp"].pack(value)


def encode_value(value: Any, dialect: str = "rabbit") -> bytes:
    """One table or array entry: its type code followed by its encoding."""
    if isinstance(value, FieldValue):
        code, value = value.code, value.value
    else:
        code = _infer(value, dialect)
    kind = DIALECTS[dialect].get(code)
    if kind is None:
        raise LocalProtocolError(f"type code {code!r} is not defined in the {dialect} dialect")
    prefix = code.encode("latin-1")
    try:
        if kind in _FIXED:
            if kind == "timestamp":
                return prefix + _encode_timestamp(value)
            return prefix + _FIXED[kind].pack(value)
        if kind in ("longstr", "bytes"):
            data = _as_bytes(value)
            return prefix + _U32.pack(len(data)) + data
        if kind == "shortstr":
            data = _as_bytes(value)
            return prefix + bytes((len(data),)) + data
        if kind == "decimal":
            return prefix + _encode_decimal(value)
        if kind == "table":
            return prefix + encode_table(value, dialect)
        if kind == "array":
            return prefix + encode_array(value, dialect)
        return prefix  # void
    except (struct.error, ValueError, TypeError) as exc:
        raise LocalProtocolError(f"cannot encode {value!r} as {kind} ({code!r}): {exc}") from None


def encode_table(table: Mapping[str, Any] | None, dialect: str = "rabbit") -> bytes:
    """A field table with its 32-bit length prefix. Keys keep their order; None is empty."""
    if table is None:
        return b"\x00\x00\x00\x00"
    if not isinstance(table, Mapping):
        raise LocalProtocolError(f"a field table must be a mapping, got {type(table).__name__}")
    if not table:
        return b"\x00\x00\x00\x00"
    parts = []
    for key, value in table.items():
        name = _as_bytes(key)
        if len(name) > 255:
            raise LocalProtocolError(f"field table key of {len(name)} bytes exceeds 255")
        parts.append(bytes((len(name),)))
        parts.append(name)
        parts.append(encode_value(value, dialect))
    body = b"".join(parts)
    return _U32.pack(len(body)) + body


def encode_array(items: Any, dialect: str = "rabbit") -> bytes:
    """A field array with its 32-bit length prefix."""
    if not isinstance(items, list | tuple):
        raise LocalProtocolError(f"a field array must be a list, got {type(items).__name__}")
    body = b"".join(encode_value(item, dialect) for item in items)
    return _U32.pack(len(body)) + body


# -- decoding ---------------------------------------------------------------------------------
#
# Every reader takes the buffer, the offset to read at and ``end``, the offset that the
# enclosing table, array or frame stops at. Reading past ``end`` is a truncation (frame-error);
# a value the wire format forbids is a syntax error. Tables are on the hot path of every
# publish with headers, so the common kinds are read inline in the loop.

_BY_CODE: dict[str, dict[int, tuple[str, str]]] = {
    name: {ord(code): (code, kind) for code, kind in codes.items()}
    for name, codes in DIALECTS.items()
}
_FIXED_READERS = {kind: (packer.unpack_from, packer.size) for kind, packer in _FIXED.items()}
_U32_UNPACK = _U32.unpack_from
_I32_UNPACK = _FIXED["int32"].unpack_from


def _overrun(what: str, offset: int, size: int, end: int) -> FrameError:
    return FrameError(f"{what} needs {size} bytes, {max(end - offset, 0)} left", offset)


def _read(
    kind: str, buf: bytes, o: int, end: int, d: str, typed: bool, depth: int
) -> tuple[Any, int]:
    """One value of ``kind`` at ``o``; returns it and the offset after it."""
    fixed = _FIXED_READERS.get(kind)
    if fixed is not None:
        unpack, size = fixed
        if o + size > end:
            raise _overrun(kind, o, size, end)
        (value,) = unpack(buf, o)
        if kind == "bool":
            value = bool(value)
        elif kind == "timestamp" and not typed and value <= _LAST_DATETIME:
            # beyond datetime's range the number itself stays the faithful value
            value = _dt.datetime.fromtimestamp(value, _dt.UTC)
        return value, o + size
    if kind in ("longstr", "bytes", "shortstr"):
        width = 1 if kind == "shortstr" else 4
        if o + width > end:
            raise _overrun(f"{kind} length", o, width, end)
        size = buf[o] if width == 1 else _U32_UNPACK(buf, o)[0]
        o += width
        stop = o + size
        if stop > end:
            raise _overrun(f"{kind} of declared length {size}", o, size, end)
        data = buf[o:stop]
        if typed or kind == "bytes":
            return data, stop
        try:
            return data.decode("utf-8"), stop
        except UnicodeDecodeError:
            return data, stop  # a long string is binary; only its text form needs UTF-8
    if kind == "decimal":
        if o + 5 > end:
            raise _overrun(kind, o, 5, end)
        scale, raw = _DECIMAL.unpack_from(buf, o)
        return Decimal(raw).scaleb(-scale), o + 5
    if kind == "void":
        return None, o
    if depth >= MAX_DEPTH:
        raise SyntaxFieldError(f"{kind} nested deeper than {MAX_DEPTH} levels", o)
    if kind == "table":
        return _table(buf, o, end, d, typed, depth + 1)
    return _array(buf, o, end, d, typed, depth + 1)


def _entry_kind(buf: bytes, o: int, end: int, d: str) -> tuple[str, str]:
    if o >= end:
        raise _overrun("field type code", o, 1, end)
    entry = _BY_CODE[d].get(buf[o])
    if entry is None:
        raise SyntaxFieldError(
            f"field type code {bytes((buf[o],))!r} unknown in the {d} dialect", o
        )
    return entry


def _table(buf: bytes, o: int, end: int, d: str, typed: bool, depth: int) -> tuple[Any, int]:
    if o + 4 > end:
        raise _overrun("table length", o, 4, end)
    o, stop = o + 4, o + 4 + _U32_UNPACK(buf, o)[0]
    if stop > end:
        raise _overrun("table of declared length", o, stop - o, end)
    result: dict[str, Any] = {}
    kinds = _BY_CODE[d]
    while o < stop:
        key_end = o + 1 + buf[o]
        if key_end > stop:
            raise _overrun("table key", o + 1, buf[o], stop)
        try:
            key = buf[o + 1 : key_end].decode("utf-8")
        except UnicodeDecodeError:
            raise SyntaxFieldError("table key is not UTF-8", o + 1) from None
        entry = kinds.get(buf[key_end]) if key_end < stop else None
        code, kind = entry if entry is not None else _entry_kind(buf, key_end, stop, d)
        o = key_end + 1
        if typed:
            value, o = _read(kind, buf, o, stop, d, typed, depth)
            result[key] = FieldValue(code, value)
        elif kind == "longstr" and o + 4 <= stop:  # the common cases, inline
            value_end = o + 4 + _U32_UNPACK(buf, o)[0]
            if value_end > stop:
                raise _overrun("longstr of declared length", o + 4, value_end - o - 4, stop)
            data = buf[o + 4 : value_end]
            try:
                result[key] = data.decode("utf-8")
            except UnicodeDecodeError:
                result[key] = data
            o = value_end
        elif kind == "int32" and o + 4 <= stop:
            result[key] = _I32_UNPACK(buf, o)[0]
            o += 4
        elif kind == "bool" and o < stop:
            result[key] = buf[o] != 0
            o += 1
        else:
            result[key], o = _read(kind, buf, o, stop, d, typed, depth)
    return result, stop


def _array(buf: bytes, o: int, end: int, d: str, typed: bool, depth: int) -> tuple[Any, int]:
    if o + 4 > end:
        raise _overrun("array length", o, 4, end)
    o, stop = o + 4, o + 4 + _U32_UNPACK(buf, o)[0]
    if stop > end:
        raise _overrun("array of declared length", o, stop - o, end)
    items = []
    while o < stop:
        code, kind = _entry_kind(buf, o, stop, d)
        value, o = _read(kind, buf, o + 1, stop, d, typed, depth)
        items.append(FieldValue(code, value) if typed else value)
    return items, stop


def decode_table(
    buf: bytes, offset: int = 0, dialect: str = "rabbit", typed: bool = False, end: int = -1
) -> tuple[dict[str, Any], int]:
    """Read a field table at ``offset``; returns it and the offset just past it."""
    table, stop = _table(buf, offset, len(buf) if end < 0 else end, dialect, typed, 0)
    return table, stop


def decode_array(
    buf: bytes, offset: int = 0, dialect: str = "rabbit", typed: bool = False, end: int = -1
) -> tuple[list[Any], int]:
    """Read a field array at ``offset``; returns it and the offset just past it."""
    items, stop = _array(buf, offset, len(buf) if end < 0 else end, dialect, typed, 0)
    return items, stop
