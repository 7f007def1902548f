"""The unchecked builder: 1.0 bytes that break the rules on purpose.

Nothing here refuses anything: any frame size or data offset, any frame type, a header with any
magic, sizes and counts inside compound values that lie, arrays whose elements do not match
their constructor, unknown constructors, descriptors the specification does not define, lists
of too many fields, nesting as deep as asked. Values come in as bytes already encoded (by the
checked encoder, or by these functions), so that every layer can be broken on its own.

The width of a size or count prefix follows from the constructor's high nibble, as the type
system lays codes out (0xa-/0xc-/0xe-: one octet; 0xb-/0xd-/0xf-: four), unless given.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

__all__ = [
    "array",
    "compound",
    "described",
    "fixed",
    "frame",
    "header",
    "nested",
    "prefix_width",
    "variable",
]

_HEAD = struct.Struct(">IBBH")


def prefix_width(code: int) -> int:
    """The octets of a constructor's size (and count) prefix, from its subcategory nibble."""
    return 1 if (code >> 4) in (0xA, 0xC, 0xE) else 4


def _prefix(value: int, width: int) -> bytes:
    return (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def header(
    protocol_id: int = 0, version: tuple[int, int, int] = (1, 0, 0), magic: bytes = b"AMQP"
) -> bytes:
    return magic + bytes((protocol_id & 0xFF, *(v & 0xFF for v in version)))


def frame(
    body: bytes = b"",
    *,
    channel: int = 0,
    type: int = 0,
    doff: int = 2,
    size: int | None = None,
    extended: bytes | None = None,
) -> bytes:
    """A frame around ``body``: ``size`` (default: the true one) and ``doff`` may lie; the
    extended header defaults to the zero octets ``doff`` asks for."""
    if extended is None:
        extended = b"\x00" * max(0, doff * 4 - 8)
    true = 8 + len(extended) + len(body)
    return (
        _HEAD.pack(
            (true if size is None else size) & 0xFFFFFFFF,
            doff & 0xFF,
            type & 0xFF,
            channel & 0xFFFF,
        )
        + extended
        + body
    )


def fixed(code: int, data: bytes = b"") -> bytes:
    """A constructor and whatever octets follow it (too few, too many, an unknown code)."""
    return bytes((code & 0xFF,)) + data


def variable(code: int, data: bytes, size: int | None = None, width: int | None = None) -> bytes:
    """binary, string or symbol: ``data`` (any octets, not UTF-8 or not ASCII) with a size."""
    width = prefix_width(code) if width is None else width
    return fixed(code, _prefix(len(data) if size is None else size, width) + data)


def compound(
    code: int,
    items: Sequence[bytes],
    size: int | None = None,
    count: int | None = None,
    width: int | None = None,
) -> bytes:
    """A list or map of encoded ``items``: ``size`` and ``count`` default to the truth."""
    width = prefix_width(code) if width is None else width
    data = b"".join(items)
    true_size = len(data) + width
    return fixed(
        code,
        _prefix(true_size if size is None else size, width)
        + _prefix(len(items) if count is None else count, width)
        + data,
    )


def array(
    code: int,
    constructor: bytes,
    elements: Sequence[bytes],
    size: int | None = None,
    count: int | None = None,
    width: int | None = None,
) -> bytes:
    """An array: one ``constructor`` then element bodies, which need not match it."""
    width = prefix_width(code) if width is None else width
    data = constructor + b"".join(elements)
    return fixed(
        code,
        _prefix(len(data) + width if size is None else size, width)
        + _prefix(len(elements) if count is None else count, width)
        + data,
    )


def described(descriptor: bytes, value: bytes) -> bytes:
    """A descriptor (any encoded value: an unknown code, a string) and a value."""
    return b"\x00" + descriptor + value


def nested(depth: int, inner: bytes = b"\x40", code: int = 0xC0) -> bytes:
    """``inner`` inside ``depth`` lists (``code`` 0xc0 or 0xd0) or maps (0xc1, 0xd1: each
    under a null key)."""
    value = inner
    for _ in range(depth):
        value = compound(code, [b"\x40", value] if code & 1 else [value])
    return value
