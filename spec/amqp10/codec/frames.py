"""1.0 protocol headers and frames, and a reader of them from a byte stream.

A frame is an 8-octet header (SIZE, DOFF in 4-octet words, TYPE, and for AMQP frames the
CHANNEL), an extended header up to DOFF, then the body: an AMQP frame's performative and, for a
transfer, its payload (message sections); a SASL frame's SASL composite; nothing at all for an
empty frame (a heartbeat). The reader takes bytes in chunks of any size and gives
:class:`Header` and :class:`Frame` objects, expecting a protocol header first and again after a
SASL outcome (or, reading a client, after its SASL frames); it refuses a frame over
``max_frame_size`` (before ``open`` is exchanged that is 512 octets, MIN-MAX-FRAME-SIZE).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from ...reading import Feed
from .errors import DecodeError, FramingError
from .values import Composite

__all__ = [
    "AMQP",
    "FRAME_TYPES",
    "MIN_MAX_FRAME_SIZE",
    "SASL",
    "TLS",
    "Frame",
    "FrameReader",
    "Header",
]

AMQP, TLS, SASL = 0, 2, 3  # protocol ids of the protocol header
FRAME_TYPES = {"amqp": 0, "sasl": 1}
MIN_MAX_FRAME_SIZE = 512
_HEAD = struct.Struct(">IBBH")


@dataclass(frozen=True, slots=True)
class Header:
    """``AMQP`` and four octets: protocol id (0 AMQP, 2 TLS, 3 SASL), major, minor, revision."""

    protocol_id: int = AMQP
    major: int = 1
    minor: int = 0
    revision: int = 0

    def encode(self) -> bytes:
        return b"AMQP" + bytes((self.protocol_id, self.major, self.minor, self.revision))


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: ``type`` 0 (AMQP) or 1 (SASL); ``body`` its performative or SASL frame (None:
    an empty frame); ``payload`` what follows a transfer's performative."""

    body: Composite | None
    channel: int = 0
    type: int = 0
    payload: bytes = b""
    extended: bytes = field(default=b"", repr=False)

    @property
    def name(self) -> str:
        return self.body.name if self.body is not None else "empty"


class FrameReader(Feed[Header | Frame]):
    """Headers and frames from a stream fed in chunks; offsets in errors count from the first
    byte fed."""

    def __init__(self, codec: Any, max_frame_size: int = 0xFFFFFFFF) -> None:
        super().__init__()
        self.codec = codec
        self.max_frame_size = max_frame_size
        self.expect_header = True
        self._sasl = False  # in the SASL layer: an AMQP header may come instead of a frame

    def _next(self) -> Header | Frame | None:
        buf = self._buffer
        if self._sasl and buf[:4] == b"AMQP":  # a client's header follows its SASL frames
            self.expect_header = True
        if self.expect_header:
            if len(buf) < 8:
                if not b"AMQP".startswith(bytes(buf[:4])):
                    raise FramingError("a protocol header was expected", self._offset)
                return None
            if buf[:4] != b"AMQP":
                raise FramingError("a protocol header was expected", self._offset)
            header = Header(buf[4], buf[5], buf[6], buf[7])
            self._consume(8)
            self.expect_header = False
            self._sasl = header.protocol_id == SASL
            return header
        if len(buf) < 8:
            return None
        size, doff, kind, _ = _HEAD.unpack_from(buf)
        if size < 8:
            raise FramingError(f"a frame of {size} octets: the header alone takes 8", self._offset)
        if size > self.max_frame_size:
            raise FramingError(
                f"a frame of {size} octets, over the maximum of {self.max_frame_size}",
                self._offset,
            )
        if doff < 2:
            raise FramingError(f"a data offset of {doff} words, under 2", self._offset + 4)
        if doff * 4 > size:
            raise FramingError(
                f"a data offset of {doff * 4} octets past a frame of {size}", self._offset + 4
            )
        if kind not in FRAME_TYPES.values():
            raise FramingError(f"unknown frame type 0x{kind:02x}", self._offset + 5)
        if len(buf) < size:
            return None
        data = bytes(buf[:size])
        at = self._offset
        self._consume(size)
        try:
            frame: Frame = self.codec.decode_frame(data)
        except DecodeError as e:
            raise e.shifted(at) from None
        if frame.type == FRAME_TYPES["sasl"] and frame.name == "sasl-outcome":
            self.expect_header = True  # the AMQP header follows a SASL outcome
        return frame

    def _consume(self, count: int) -> None:
        del self._buffer[:count]
        self._offset += count
