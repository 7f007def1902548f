"""The sans-I/O codec of one specification: frames to bytes, bytes to frames.

A :class:`Codec` is built from a loaded :class:`~amqpfuzz.spec.amqp091.model.Spec`, so 0-8, 0-9,
0-9-1 and 0-9-1 with RabbitMQ's extensions each get their methods and properties from their
own XML. It is the *checked* side: it refuses to encode what the wire cannot carry (see
:mod:`.raw` for bytes that break the rules on purpose) and it refuses to decode bytes that are
not AMQP, with a :class:`~amqpfuzz.spec.errors.RemoteProtocolError` that says where and why.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from typing import Any

from ...errors import (
    FrameError,
    LocalProtocolError,
    RemoteProtocolError,
    UnknownMethodError,
)
from ...protocols import DEFAULT_PROTOCOL
from ..asserts import check_frame
from ..loader import load
from ..model import ZERO_VALUES, AmqpClass, Method, Spec
from .compile import Decoder, Encoder, PropertiesCodec, compile_method
from .frames import ContentBody, ContentHeader, Frame, Heartbeat, MethodFrame, ProtocolHeader
from .tables import DIALECTS

__all__ = ["Codec", "codec_for"]

_FRAME_HEADER = struct.Struct(">BHI")
_IDS = struct.Struct(">HH")
_CONTENT = struct.Struct(">HHQ")


class Codec:
    """Encoder and decoder of the frames of one specification, in one table dialect.

    ``dialect`` is ``"rabbit"`` (the field-table letters of RabbitMQ, Qpid and every client in
    use) or ``"amqp"`` (the letters of the 0-9-1 specification). ``typed_tables`` makes decoded
    tables keep each entry's type code (:class:`~.tables.FieldValue`), so that re-encoding a
    decoded frame gives back the same bytes.
    """

    def __init__(self, spec: Spec, dialect: str = "rabbit", *, typed_tables: bool = False) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
        self.spec = spec
        self.dialect = dialect
        self.typed_tables = typed_tables
        self.frame_method = spec.constant("frame-method").value
        self.frame_header = spec.constant("frame-header").value
        self.frame_body = spec.constant("frame-body").value
        self.frame_heartbeat = spec.constant("frame-heartbeat").value
        self.frame_end = spec.constant("frame-end").value
        self._encoders: dict[Method, Encoder] = {}
        self._decoders: dict[tuple[int, int], tuple[Method, Decoder]] = {}
        for method in spec.methods:
            encode, decode = compile_method(method, dialect, typed_tables)
            self._encoders[method] = encode
            self._decoders[method.key] = (method, decode)
        # a class carries content if it has properties or a content method (0-8's test class
        # has the latter only: its header is a single empty flag word)
        self._properties = {
            c.index: PropertiesCodec(c, dialect, typed_tables)
            for c in spec.classes
            if c.properties or any(m.content for m in c.methods)
        }

    def __repr__(self) -> str:
        return f"<Codec AMQP {self.spec.protocol} {self.dialect}>"

    def _encoder(self, method: Method) -> Encoder:
        """The encoder of ``method``; of another model of the same wire format (0-9-1's beside
        its extension's), this model's method of the same ids and fields."""
        found = self._encoders.get(method)
        if found is not None:
            return found
        known = self._decoders.get(method.key)
        types = [f.type for f in method.fields]
        if known is None or [f.type for f in known[0].fields] != types:
            raise LocalProtocolError(f"{method.full_name}: not a method of {self.spec.protocol}")
        self._encoders[method] = self._encoders[known[0]]
        return self._encoders[method]

    # -- building frames -------------------------------------------------------------------

    def method(self, name: str | Method, channel: int = 0, **arguments: Any) -> MethodFrame:
        """A method frame; arguments not given take their type's zero value.

        Arguments are named by the field's identifier (``routing_key``); reserved fields keep
        their zero value unless given.
        """
        method = name if isinstance(name, Method) else self.spec.method(name)
        values = []
        for fld in method.fields:
            if fld.attr in arguments:
                values.append(arguments.pop(fld.attr))
            else:
                values.append(ZERO_VALUES[fld.type])
        if arguments:
            unknown = ", ".join(sorted(arguments))
            raise LocalProtocolError(f"{method.full_name} has no field {unknown}")
        return MethodFrame(channel, method, tuple(values))

    def content(
        self,
        channel: int,
        body: bytes,
        *,
        class_name: str = "basic",
        frame_max: int = 131072,
        **properties: Any,
    ) -> list[Frame]:
        """A content header and the body frames that carry ``body`` within ``frame_max``."""
        amqp_class = self.spec.amqp_class(class_name)
        if frame_max < 9:
            raise LocalProtocolError(f"frame_max {frame_max} leaves no room for a body")
        chunk = frame_max - 8
        frames: list[Frame] = [ContentHeader(channel, amqp_class.index, len(body), properties)]
        frames.extend(ContentBody(channel, body[i : i + chunk]) for i in range(0, len(body), chunk))
        return frames

    # -- encoding --------------------------------------------------------------------------

    def encode(self, frame: Frame) -> bytes:
        """The bytes of one frame."""
        if isinstance(frame, MethodFrame):
            return self._encoder(frame.method)(frame.channel, frame.values)
        if isinstance(frame, ContentHeader):
            return self._frame(self.frame_header, frame.channel, self._header_payload(frame))
        if isinstance(frame, ContentBody):
            return self._frame(self.frame_body, frame.channel, bytes(frame.payload))
        if isinstance(frame, Heartbeat):
            return self._frame(self.frame_heartbeat, frame.channel, b"")
        if isinstance(frame, ProtocolHeader):
            return frame.data
        raise LocalProtocolError(f"not a frame: {frame!r}")

    def payload(self, frame: Frame) -> tuple[int, bytes]:
        """A frame's type and payload, whatever its channel field says (even a placeholder)."""
        if isinstance(frame, MethodFrame):
            return self.frame_method, self._encoder(frame.method)(0, frame.values)[7:-1]
        if isinstance(frame, ContentHeader):
            return self.frame_header, self._header_payload(frame)
        if isinstance(frame, ContentBody):
            return self.frame_body, bytes(frame.payload)
        if isinstance(frame, Heartbeat):
            return self.frame_heartbeat, b""
        raise LocalProtocolError(f"no frame payload in {frame!r}")

    def encode_all(self, frames: Iterable[Frame]) -> bytes:
        return b"".join(self.encode(f) for f in frames)

    def _frame(self, frame_type: int, channel: int, payload: bytes) -> bytes:
        try:
            head = _FRAME_HEADER.pack(frame_type, channel, len(payload))
        except struct.error:
            raise LocalProtocolError(f"channel {channel} is not a 16-bit number") from None
        return head + payload + bytes((self.frame_end,))

    def _header_payload(self, frame: ContentHeader) -> bytes:
        codec = self._properties.get(frame.class_id)
        if codec is None:
            raise LocalProtocolError(f"class {frame.class_id} has no content properties")
        try:
            head = _CONTENT.pack(frame.class_id, frame.weight, frame.body_size)
        except struct.error:
            raise LocalProtocolError(f"content header fields out of range: {frame!r}") from None
        return head + codec.encode(frame.properties)

    # -- decoding --------------------------------------------------------------------------

    def decode(self, data: bytes) -> Frame:
        """Exactly one whole frame (or protocol header) from ``data``, nothing before or after."""
        if len(data) >= 8 and data[:4] != b"AMQP":
            frame_type, channel, size = _FRAME_HEADER.unpack_from(data)
            if len(data) == size + 8 and data[-1] == self.frame_end:
                try:
                    return self.decode_payload(frame_type, channel, data[7:-1])
                except RemoteProtocolError as exc:
                    raise exc.shifted(7) from None
        reader = self.reader()  # anything unusual: the reader says precisely what is wrong
        frames = reader.feed(data)
        if len(frames) != 1 or reader.pending:
            raise FrameError(
                f"expected one frame, found {len(frames)} and {reader.pending} more bytes",
                len(data) - reader.pending,
            )
        return frames[0]

    def decode_all(self, data: bytes) -> list[Frame]:
        """Every frame in ``data``, which must end on a frame boundary."""
        reader = self.reader()
        frames = reader.feed(data)
        if reader.pending:
            raise FrameError(f"{reader.pending} bytes of an incomplete frame", len(data))
        return frames

    def reader(self, frame_max: int | None = None, *, check_asserts: bool = False) -> FrameReader:
        """A streaming reader that takes bytes in any chunks (see :class:`FrameReader`).

        With ``check_asserts`` a method argument that breaks its domain's asserts is a
        syntax-error too (the specification's rule; brokers are often more lenient).
        """
        return FrameReader(self, frame_max, check_asserts=check_asserts)

    def decode_payload(self, frame_type: int, channel: int, payload: bytes) -> Frame:
        """The frame carried by one payload; errors have offsets within ``payload``."""
        if frame_type == self.frame_method:
            return self._decode_method(channel, payload)
        if frame_type == self.frame_header:
            return self._decode_header(channel, payload)
        if frame_type == self.frame_body:
            return ContentBody(channel, payload)
        if frame_type == self.frame_heartbeat:
            if payload:
                raise FrameError(f"heartbeat frame with a {len(payload)}-byte payload", 0)
            if channel:  # (4.2.7: an invalid heartbeat frame is a 501 frame-error)
                raise FrameError(f"heartbeat frame on channel {channel}", 0)
            return Heartbeat(channel)
        raise FrameError(f"unknown frame type {frame_type}", 0)

    def _decode_method(self, channel: int, payload: bytes) -> MethodFrame:
        if len(payload) < 4:
            raise FrameError(f"method frame of {len(payload)} bytes has no class and method id", 0)
        key = _IDS.unpack_from(payload)
        entry = self._decoders.get(key)
        if entry is None:
            what = "method" if self.spec.class_by_index(key[0]) else "class"
            raise UnknownMethodError(f"unknown {what}: class {key[0]} method {key[1]}", 0)
        method, decode = entry
        return MethodFrame(channel, method, decode(payload))

    def _decode_header(self, channel: int, payload: bytes) -> ContentHeader:
        if len(payload) < 14:
            raise FrameError(f"content header of {len(payload)} bytes is shorter than 14", 0)
        class_id, weight, body_size = _CONTENT.unpack_from(payload)
        codec = self._properties.get(class_id)
        if codec is None:  # 0-9-1 section 4.2.6.1: an invalid class-id is a frame-error
            raise FrameError(f"content header for class {class_id}, which has no content", 0)
        return ContentHeader(channel, class_id, body_size, codec.decode(payload, 12), weight)

    def content_class(self, class_id: int) -> AmqpClass | None:
        return self.spec.class_by_index(class_id) if class_id in self._properties else None


class FrameReader:
    """Reads frames from a byte stream fed in chunks of any size.

    :meth:`feed` returns the frames completed by the new bytes. A protocol header may open the
    stream (a server that rejects our version answers with its own). ``frame_max``, once
    negotiated, makes a larger frame a frame-error as soon as its header has arrived. After an
    error the reader stays broken: every later call raises the same error.
    """

    def __init__(
        self, codec: Codec, frame_max: int | None = None, *, check_asserts: bool = False
    ) -> None:
        self.codec = codec
        self.frame_max = frame_max
        self.check_asserts = check_asserts
        self._buffer = bytearray()
        self._consumed = 0  # stream offset of _buffer[0]
        self._started = False
        self._error: RemoteProtocolError | None = None

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        if self._error is not None:
            raise self._error
        self._buffer += data
        frames: list[Frame] = []
        try:
            self._drain(frames)
        except RemoteProtocolError as exc:
            self._error = exc
            raise
        return frames

    def _drain(self, frames: list[Frame]) -> None:
        buf, pos, end_octet = self._buffer, 0, self.codec.frame_end
        if not self._started and buf:
            if buf[:1] == b"A":
                if len(buf) < 8:
                    return
                if buf[:4] != b"AMQP":
                    raise FrameError(f"stream opens with {bytes(buf[:8])!r}", self._consumed)
                frames.append(ProtocolHeader(bytes(buf[:8])))
                pos = 8
            self._started = True
        codec = self.codec
        frame_max = self.frame_max
        while len(buf) - pos >= 7:
            frame_type, channel, size = _FRAME_HEADER.unpack_from(buf, pos)
            at = self._consumed + pos
            if frame_type not in (
                codec.frame_method,
                codec.frame_header,
                codec.frame_body,
                codec.frame_heartbeat,
            ):
                raise FrameError(f"unknown frame type {frame_type}", at)
            if frame_max and size + 8 > frame_max:
                raise FrameError(f"frame of {size + 8} bytes exceeds frame-max {frame_max}", at)
            stop = pos + 7 + size
            if len(buf) <= stop:
                break
            if buf[stop] != end_octet:
                raise FrameError(f"frame-end octet is 0x{buf[stop]:02x}, not 0xce", at + 7 + size)
            try:
                frame = codec.decode_payload(frame_type, channel, bytes(buf[pos + 7 : stop]))
                if self.check_asserts:
                    check_frame(frame)
                frames.append(frame)
            except RemoteProtocolError as exc:
                raise exc.shifted(at + 7) from None
            pos = stop + 1
        if pos:
            del buf[:pos]
            self._consumed += pos


def codec_for(
    protocol: str | Spec = DEFAULT_PROTOCOL, dialect: str = "rabbit", typed_tables: bool = False
) -> Codec:
    """The codec of a known protocol (or of a loaded spec), built once per process."""
    spec = protocol if isinstance(protocol, Spec) else load(protocol)
    return _codec(spec, dialect, typed_tables)


@functools.cache  # positional arguments only: one codec per (spec, dialect, typed)
def _codec(spec: Spec, dialect: str, typed_tables: bool) -> Codec:
    return Codec(spec, dialect, typed_tables=typed_tables)
