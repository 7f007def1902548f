"""0-10 protocol headers and frames, and a reader of them from a byte stream.

The protocol header is ``AMQP`` then four octets: protocol class 1, instance 1, major 0,
minor 10. A frame is a 12-octet header and a payload:

====== ==============================================================================
octet  what it holds
====== ==============================================================================
0      2 bits of frame-format version (0), 2 reserved bits, then the flags
       first-segment (0x08), last-segment (0x04), first-frame (0x02), last-frame (0x01)
1      the segment type (``segment-type``: 0 control, 1 command, 2 header, 3 body)
2-3    the frame's size, header included (so at least 12)
4      reserved (0)
5      4 reserved bits, then the track (``track``: 0 control, 1 command)
6-7    the channel
8-11   reserved (0)
====== ==============================================================================

The reader takes bytes in chunks of any size and gives :class:`Header` and :class:`Frame`
objects, a protocol header first (unless told otherwise). It refuses a size under 12 or over
its ``max_frame_size``; checked (the default) it also refuses a version or reserved bits that
are not zero, and a segment type or track the specification does not define (the codec gives it
the model's; the reader alone knows none and checks none).
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from dataclasses import dataclass, field

from ...reading import Feed
from .errors import FramingError, LocalProtocolError

__all__ = [
    "FIRST_FRAME",
    "FIRST_SEGMENT",
    "HEADER_SIZE",
    "LAST_FRAME",
    "LAST_SEGMENT",
    "MAX_FRAME_SIZE",
    "WHOLE",
    "Frame",
    "FrameReader",
    "Header",
]

FIRST_SEGMENT, LAST_SEGMENT, FIRST_FRAME, LAST_FRAME = 0x08, 0x04, 0x02, 0x01
WHOLE = 0x0F  # a segment in one frame that is a whole assembly: every flag set
HEADER_SIZE = 12
MAX_FRAME_SIZE = 0xFFFF  # the size field's 16 bits
_HEAD = struct.Struct(">BBHBBHI")  # flags, type, size, reserved, track, channel, reserved


@dataclass(frozen=True, slots=True)
class Header:
    """``AMQP``, protocol class (1), instance (1), major (0), minor (10)."""

    protocol_class: int = 1
    instance: int = 1
    major: int = 0
    minor: int = 10

    def encode(self) -> bytes:
        octets = (self.protocol_class, self.instance, self.major, self.minor)
        if not all(0 <= o <= 0xFF for o in octets):
            raise LocalProtocolError(f"a protocol header's octets, not {octets}")
        return b"AMQP" + bytes(octets)


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame. ``flags`` is the header's first octet (read unchecked it may hold a version
    or reserved bits too); ``offset`` is where the frame began in the stream it was read from
    (0 for one built here: it takes no part in equality)."""

    flags: int = WHOLE
    type: int = 0
    track: int = 0
    channel: int = 0
    payload: bytes = b""
    offset: int = field(default=0, compare=False, repr=False)

    @property
    def first_segment(self) -> bool:
        return bool(self.flags & FIRST_SEGMENT)

    @property
    def last_segment(self) -> bool:
        return bool(self.flags & LAST_SEGMENT)

    @property
    def first_frame(self) -> bool:
        return bool(self.flags & FIRST_FRAME)

    @property
    def last_frame(self) -> bool:
        return bool(self.flags & LAST_FRAME)

    @property
    def size(self) -> int:
        return HEADER_SIZE + len(self.payload)

    def encode(self) -> bytes:
        """The frame's octets; what its header cannot hold is refused (:mod:`.raw` builds any
        header)."""
        if not 0 <= self.flags <= 0x0F:
            raise LocalProtocolError(f"frame flags are four bits, not 0x{self.flags:x}")
        if self.size > MAX_FRAME_SIZE:
            raise LocalProtocolError(f"a frame of {self.size} octets: at most {MAX_FRAME_SIZE}")
        if not 0 <= self.channel <= 0xFFFF:
            raise LocalProtocolError(f"channel {self.channel} does not fit 16 bits")
        if not (0 <= self.type <= 0xFF and 0 <= self.track <= 0x0F):
            raise LocalProtocolError(f"segment type {self.type} or track {self.track} too large")
        head = _HEAD.pack(self.flags, self.type, self.size, 0, self.track, self.channel, 0)
        return head + self.payload


class FrameReader(Feed[Header | Frame]):
    """Headers and frames from a stream fed in chunks; offsets in errors (and frames) count
    from the first byte fed."""

    def __init__(
        self,
        max_frame_size: int = MAX_FRAME_SIZE,
        *,
        expect_header: bool = True,
        check: bool = True,
        segment_types: Collection[int] = (),
        tracks: Collection[int] = (),
    ) -> None:
        super().__init__()
        self.max_frame_size = max_frame_size
        self.expect_header = expect_header
        self.check = check
        self.segment_types = frozenset(segment_types)
        self.tracks = frozenset(tracks)

    def _next(self) -> Header | Frame | None:
        buf = self._buffer
        if self.expect_header:
            if not b"AMQP".startswith(bytes(buf[:4])):
                raise FramingError("a protocol header was expected", self._offset)
            if len(buf) < 8:
                return None
            header = Header(buf[4], buf[5], buf[6], buf[7])
            self._consume(8)
            self.expect_header = False
            return header
        if len(buf) < HEADER_SIZE:
            return None
        flags, kind, size, reserved, track, channel, tail = _HEAD.unpack_from(buf)
        at = self._offset
        if size < HEADER_SIZE:
            raise FramingError(f"a frame of {size} octets: its header alone takes 12", at + 2)
        if size > self.max_frame_size:
            raise FramingError(
                f"a frame of {size} octets, over the maximum of {self.max_frame_size}", at + 2
            )
        if self.check:
            self._check(flags, kind, reserved, track, tail, at)
        if len(buf) < size:
            return None
        frame = Frame(flags, kind, track & 0x0F, channel, bytes(buf[HEADER_SIZE:size]), at)
        self._consume(size)
        return frame

    def _check(self, flags: int, kind: int, reserved: int, track: int, tail: int, at: int) -> None:
        if flags >> 6:
            raise FramingError(f"frame format version {flags >> 6}: only 0 is defined", at)
        if flags & 0x30:
            raise FramingError("reserved bits set in a frame's first octet", at)
        if self.segment_types and kind not in self.segment_types:
            raise FramingError(f"unknown segment type {kind}", at + 1)
        if reserved:
            raise FramingError("reserved octet 4 of a frame is not zero", at + 4)
        if track & 0xF0:
            raise FramingError("reserved bits set beside a frame's track", at + 5)
        if self.tracks and track not in self.tracks:
            raise FramingError(f"unknown track {track}", at + 5)
        if tail:
            raise FramingError("reserved octets 8-11 of a frame are not zero", at + 8)

    def _consume(self, count: int) -> None:
        del self._buffer[:count]
        self._offset += count
