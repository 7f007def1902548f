"""The unchecked builder: bytes that break the rules on purpose.

A fuzzer must send what a normal client refuses to: a size field that lies, a frame-end that
is not 0xCE, an unknown frame type, class or method id, a string whose length prefix overruns
the frame, a field table with a type code nobody defined. Every function here writes exactly
what it is asked to write: integers are cut to their field's width (``70000`` in a short is
``70000 & 0xFFFF``), length prefixes are the real length unless one is given, and nothing is
validated. The checked :class:`~.codec.Codec` is the other side of the same wire format.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Field, Method
from .tables import encode_array, encode_table

__all__ = [
    "FRAME_END",
    "Raw",
    "TableEntry",
    "arguments",
    "bits",
    "content_header",
    "frame",
    "heartbeat",
    "long",
    "longlong",
    "longstr",
    "method_frame",
    "method_payload",
    "octet",
    "short",
    "shortstr",
    "table",
]

FRAME_END = 0xCE
_HEADER = struct.Struct(">BHI")
_OCTETS = [bytes((b,)) for b in range(256)]
_WIDTHS = {"octet": 1, "short": 2, "long": 4, "longlong": 8, "timestamp": 8}


@dataclass(frozen=True, slots=True)
class Raw:
    """Bytes to put in a field's place verbatim, whatever the field's type."""

    data: bytes


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One field-table entry written as given: any key bytes, any code, any payload."""

    key: bytes
    code: bytes
    payload: bytes = b""


def _bytes(value: str | bytes) -> bytes:
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)


def _uint(value: int, width: int) -> bytes:
    return (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def octet(value: int) -> bytes:
    return _uint(value, 1)


def short(value: int) -> bytes:
    return _uint(value, 2)


def long(value: int) -> bytes:
    return _uint(value, 4)


def longlong(value: int) -> bytes:
    return _uint(value, 8)


def shortstr(value: str | bytes, length: int | None = None) -> bytes:
    """A short string; ``length`` (cut to 8 bits) may differ from the data's real length."""
    data = _bytes(value)
    return octet(len(data) if length is None else length) + data


def longstr(value: str | bytes, length: int | None = None) -> bytes:
    """A long string; ``length`` (cut to 32 bits) may differ from the data's real length."""
    data = _bytes(value)
    return long(len(data) if length is None else length) + data


def bits(*flags: bool) -> bytes:
    """Up to eight bits packed into one octet, the first in the lowest position."""
    return octet(sum(1 << i for i, flag in enumerate(flags) if flag))


def table(entries: Sequence[TableEntry] | dict[str, Any], length: int | None = None) -> bytes:
    """A field table from raw entries (or a dict, encoded normally), with any length prefix."""
    if isinstance(entries, dict):
        body = encode_table(entries)[4:]
    else:
        body = b"".join(octet(len(e.key)) + e.key + e.code + e.payload for e in entries)
    return long(len(body) if length is None else length) + body


def _field(fld: Field, value: Any, dialect: str) -> bytes:
    if isinstance(value, Raw):
        return value.data
    if fld.type in _WIDTHS:
        return _uint(int(value), _WIDTHS[fld.type])
    if fld.type == "shortstr":
        return shortstr(value)
    if fld.type == "longstr":
        return longstr(value)
    if fld.type == "content":
        discriminator, data = value
        return octet(discriminator) + longstr(data)
    if fld.type == "table":
        if isinstance(value, list | tuple):
            return encode_array(value, dialect)  # an array where a table belongs
        return table(value) if not isinstance(value, dict) else encode_table(value, dialect)
    raise TypeError(f"field {fld.name} of type {fld.type}")


def arguments(method: Method, values: Sequence[Any], dialect: str = "rabbit") -> bytes:
    """A method's argument bytes, without any check.

    ``values`` follows the method's fields; a :class:`Raw` value replaces a field's bytes,
    consecutive bits are packed as the specification packs them, and fewer values than
    fields simply stop early (truncated arguments).
    """
    out = []
    pending: list[bool] = []
    for fld, value in zip(method.fields, values, strict=False):
        if fld.type == "bit" and not isinstance(value, Raw):
            pending.append(bool(value))
            if len(pending) == 8:
                out.append(bits(*pending))
                pending = []
            continue
        if pending:
            out.append(bits(*pending))
            pending = []
        out.append(_field(fld, value, dialect))
    if pending:
        out.append(bits(*pending))
    return b"".join(out)


def method_payload(class_id: int, method_id: int, args: bytes = b"") -> bytes:
    """A method frame's payload: any class and method id, any argument bytes."""
    return short(class_id) + short(method_id) + args


def frame(
    frame_type: int,
    channel: int,
    payload: bytes,
    *,
    size: int | None = None,
    end: int = FRAME_END,
) -> bytes:
    """A frame with any type, channel, size field and end octet around ``payload``."""
    declared = len(payload) if size is None else size
    header = _HEADER.pack(frame_type & 0xFF, channel & 0xFFFF, declared & 0xFFFFFFFF)
    return header + payload + _OCTETS[end & 0xFF]


def method_frame(
    method: Method, channel: int, values: Sequence[Any], dialect: str = "rabbit", **frame_args: Any
) -> bytes:
    """A whole method frame built without checks (``size`` and ``end`` may be overridden)."""
    payload = method_payload(method.class_index, method.index, arguments(method, values, dialect))
    return frame(1, channel, payload, **frame_args)


def content_header(
    class_id: int,
    body_size: int,
    flags: int | Sequence[int] = 0,
    properties: bytes = b"",
    weight: int = 0,
) -> bytes:
    """A content header payload with any flag words and any property bytes."""
    words = [flags] if isinstance(flags, int) else list(flags)
    return (
        struct.pack(">HH", class_id & 0xFFFF, weight & 0xFFFF)
        + longlong(body_size)
        + b"".join(short(w) for w in words)
        + properties
    )


def heartbeat(channel: int = 0, payload: bytes = b"") -> bytes:
    """A heartbeat frame, on any channel, with any payload."""
    return frame(8, channel, payload)
