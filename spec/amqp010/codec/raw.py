"""The unchecked builder: 0-10 bytes that break the rules on purpose.

Nothing here refuses anything: a protocol header with any magic and octets; a frame with any
flags, version and reserved bits, segment type, size, track and channel around any payload;
segments split over frames whose flags lie; control and command segments of any class and code
(the specification's or not) with any session header; packing flags that claim fields that are
not there or leave out fields that are; structs whose size lies and whose code is another's;
sequence-sets whose ranges run backwards or whose size is not a multiple of 8; maps, lists and
arrays whose sizes and counts lie; type codes in the reserved ranges; truncated fields.

Parts come in as bytes already encoded (by the checked codec's ``encode_value``, by
``Encoder.fields``, or by these functions), so that every layer can be broken on its own. A size
or count given is sent as given, cut to its width; None sends the truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .frames import FIRST_FRAME, FIRST_SEGMENT, HEADER_SIZE, LAST_FRAME, LAST_SEGMENT, WHOLE

__all__ = [
    "array_of",
    "byte_ranges",
    "command",
    "control",
    "entry",
    "flags",
    "frame",
    "header",
    "list_of",
    "map_of",
    "segment_frames",
    "sequence_set",
    "session_header",
    "sized",
    "struct",
    "struct32",
    "typed",
]


def _int(value: int, width: int) -> bytes:
    return (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def header(
    protocol_class: int = 1,
    instance: int = 1,
    major: int = 0,
    minor: int = 10,
    magic: bytes = b"AMQP",
) -> bytes:
    """A protocol header: ``magic`` and four octets."""
    return magic + bytes(o & 0xFF for o in (protocol_class, instance, major, minor))


def frame(
    payload: bytes = b"",
    *,
    flags: int = WHOLE,
    type: int = 0,
    track: int = 0,
    channel: int = 0,
    size: int | None = None,
    version: int = 0,
    reserved: tuple[int, int, int] = (0, 0, 0),
) -> bytes:
    """A frame around ``payload``: ``size`` (default: the true one) may lie; ``version`` goes in
    the top 2 bits of the first octet, ``flags`` in the other 6 (the 2 reserved bits too);
    ``reserved`` fills octet 4, the high nibble of octet 5 (beside the track) and octets 8-11."""
    first = ((version & 0x3) << 6) | (flags & 0x3F)
    true = HEADER_SIZE + len(payload)
    octet4, nibble, tail = reserved
    return (
        bytes((first, type & 0xFF))
        + _int(true if size is None else size, 2)
        + bytes((octet4 & 0xFF, (nibble & 0xF) << 4 | (track & 0xF)))
        + _int(channel, 2)
        + _int(tail, 4)
        + payload
    )


def segment_frames(
    payload: bytes,
    *,
    type: int,
    track: int,
    channel: int = 0,
    max_frame_size: int = 0xFFFF,
    first: bool = True,
    last: bool = True,
) -> list[bytes]:
    """A segment split into frames of at most ``max_frame_size`` octets, with first-frame and
    last-frame where they belong and ``first``/``last`` as its first-segment and last-segment
    flags on every frame (so that a header or body can be sent after anything, or first)."""
    room = max(1, max_frame_size - HEADER_SIZE)
    chunks = [payload[i : i + room] for i in range(0, len(payload), room)] or [b""]
    segment = (FIRST_SEGMENT if first else 0) | (LAST_SEGMENT if last else 0)
    found = []
    for index, chunk in enumerate(chunks):
        bits = segment | (FIRST_FRAME if index == 0 else 0)
        bits |= LAST_FRAME if index == len(chunks) - 1 else 0
        found.append(frame(chunk, flags=bits, type=type, track=track, channel=channel))
    return found


def flags(present: Iterable[int], width: int = 2) -> bytes:
    """Packing flags of ``width`` octets with the bits of the fields ``present`` set (field
    *i* is bit *i* % 8 of octet *i* // 8): they may name fields that are not sent, or bits past
    the last field."""
    bits = 0
    for index in present:
        bits |= 1 << index
    return (bits & ((1 << (8 * width)) - 1)).to_bytes(width, "little")


def session_header(sync: bool = False, *, size: int = 1, bits: int | None = None) -> bytes:
    """A command's session header: a 1-octet size, then its flags octet (the sync bit, or any
    ``bits``)."""
    return _int(size, 1) + _int(int(sync) if bits is None else bits, 1)


def control(class_code: int, code: int, fields: bytes = b"\x00\x00") -> bytes:
    """A control segment's payload: any class and code, then ``fields`` (packing flags and
    values, as they come)."""
    return bytes((class_code & 0xFF, code & 0xFF)) + fields


def command(
    class_code: int, code: int, fields: bytes = b"\x00\x00", header: bytes | None = None
) -> bytes:
    """A command segment's payload: any class and code, a session header (by default sync
    clear), then ``fields``."""
    return (
        bytes((class_code & 0xFF, code & 0xFF))
        + (session_header() if header is None else header)
        + fields
    )


def struct(
    body: bytes, *, size_width: int = 0, size: int | None = None, code: bytes = b""
) -> bytes:
    """A struct: a size prefix of ``size_width`` octets (the truth unless ``size`` lies), a
    ``code`` (two octets for a coded struct; any, or none), then ``body`` (flags and fields)."""
    data = code + body
    if not size_width:
        return data
    return _int(len(data) if size is None else size, size_width) + data


def struct32(class_code: int, code: int, body: bytes, size: int | None = None) -> bytes:
    """A struct32: four octets of size, a class and struct code (any), then ``body``."""
    return struct(body, size_width=4, size=size, code=bytes((class_code & 0xFF, code & 0xFF)))


def sized(data: bytes, width: int, size: int | None = None) -> bytes:
    """A variable-width value (vbin, str): a size prefix of ``width`` octets that may lie, then
    any octets (text not of its character set)."""
    return _int(len(data) if size is None else size, width) + data


def sequence_set(
    ranges: Sequence[tuple[int, int]], size: int | None = None, width: int = 4
) -> bytes:
    """A sequence-set: a 2-octet size, then each (lower, upper) as given (lower past upper,
    numbers past 32 bits cut)."""
    data = b"".join(_int(lo, width) + _int(hi, width) for lo, hi in ranges)
    return sized(data, 2, size)


def byte_ranges(ranges: Sequence[tuple[int, int]], size: int | None = None) -> bytes:
    """A byte-ranges value: a 2-octet size, then each (lower, upper) as 8 octets."""
    return sequence_set(ranges, size, width=8)


def typed(code: int, value: bytes) -> bytes:
    """A map, list or array item: any type code, then any octets."""
    return bytes((code & 0xFF,)) + value


def entry(key: bytes | str, code: int, value: bytes, key_size: int | None = None) -> bytes:
    """A map entry: a str8 key (any octets, any size), a type code, the value's octets."""
    data = key.encode("utf-8") if isinstance(key, str) else key
    return sized(data, 1, key_size) + typed(code, value)


def map_of(entries: Sequence[bytes], size: int | None = None, count: int | None = None) -> bytes:
    """A map: 4 octets of size, 4 of count, then the ``entries`` (see :func:`entry`)."""
    data = _int(len(entries) if count is None else count, 4) + b"".join(entries)
    return sized(data, 4, size)


def list_of(items: Sequence[bytes], size: int | None = None, count: int | None = None) -> bytes:
    """A list: 4 octets of size, 4 of count, then the ``items`` (see :func:`typed`)."""
    return map_of(items, size, count)


def array_of(
    code: int, values: Sequence[bytes], size: int | None = None, count: int | None = None
) -> bytes:
    """An array: 4 octets of size, one type code, 4 octets of count, then the ``values``
    (octets without codes: of any width, whatever the code says)."""
    head = bytes((code & 0xFF,)) + _int(len(values) if count is None else count, 4)
    return sized(head + b"".join(values), 4, size)
