"""The 1.0 codec: values, composites, frames, messages and transfers, for one specification."""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from ...protocols import family_of
from ..model import Spec100, load
from .decode import Decoder
from .encode import Encoder
from .errors import DecodeError, FramingError, LocalProtocolError
from .frames import FRAME_TYPES, Frame, FrameReader
from .types import TypeSystem
from .values import Composite

__all__ = ["Codec", "codec_for"]

_HEAD = struct.Struct(">IBBH")


class Codec:
    """Checked encoding and decoding of 1.0, derived from a loaded specification."""

    def __init__(self, spec: Spec100) -> None:
        self.spec = spec
        self.types = TypeSystem(spec)
        self.encoder = Encoder(self.types)
        self.decoder = Decoder(self.types)
        self.lenient = Decoder(self.types, check=False)
        self._sasl = frozenset(
            n for n in self.types.composites if self.types.provides(n, ("sasl-frame",))
        )

    # -- values --------------------------------------------------------------------------------

    def encode(self, value: Any, type_name: str | None = None) -> bytes:
        return self.encoder.value(value, type_name)

    def decode(self, data: bytes) -> Any:
        return self.decoder.value(data)

    def with_defaults(self, value: Any) -> Any:
        """A composite (and the composites in its fields) as the decoder gives it back: each
        null field with the specification's default."""
        if not isinstance(value, Composite) or value.name not in self.types.fields:
            return value
        return Composite(
            value.name,
            {
                f.name: f.default if value[f.name] is None else self.with_defaults(value[f.name])
                for f in self.types.fields[value.name]
            },
        )

    def composite(self, name: str, /, **fields: Any) -> Composite:
        """A composite by its type's name, fields by their names with ``_`` for ``-``
        (``composite("open", container_id="x")``); unknown names are refused."""
        infos = self.types.fields.get(name)
        if infos is None:
            raise LocalProtocolError(f"no composite type {name!r} in AMQP 1.0")
        known = {f.name for f in infos}
        given = {k.replace("_", "-"): v for k, v in fields.items()}
        unknown = set(given) - known
        if unknown:
            raise LocalProtocolError(f"{name} has no field {sorted(unknown)[0]!r}")
        return Composite(name, given)

    # -- frames --------------------------------------------------------------------------------

    def frame(
        self,
        body: Composite | None,
        channel: int = 0,
        payload: bytes = b"",
        check: bool = True,
    ) -> bytes:
        """One frame: its type from what the body provides (a SASL frame or not)."""
        kind = FRAME_TYPES["amqp"]
        data = b""
        if body is not None:
            data = self.encoder.composite(body, check)
            if body.name in self._sasl:
                kind = FRAME_TYPES["sasl"]
        if not 0 <= channel <= 0xFFFF:
            raise LocalProtocolError(f"channel {channel} does not fit 16 bits")
        return _HEAD.pack(8 + len(data) + len(payload), 2, kind, channel) + data + payload

    def encode_frame(self, frame: Frame) -> bytes:
        if frame.extended:
            raise LocalProtocolError("an extended header is for the unchecked builder (raw)")
        return self.frame(frame.body, frame.channel, frame.payload)

    def decode_frame(self, data: bytes, check: bool = True) -> Frame:
        """A whole frame, header included."""
        if len(data) < 8:
            raise FramingError(f"a frame of {len(data)} octets: the header alone takes 8", 0)
        size, doff, kind, channel = _HEAD.unpack_from(data)
        if size != len(data):
            raise FramingError(f"a frame that says {size} octets in {len(data)}", 0)
        if doff < 2 or doff * 4 > size:
            raise FramingError(f"a data offset of {doff} words in a frame of {size} octets", 4)
        start = doff * 4
        extended = data[8:start]
        if kind not in FRAME_TYPES.values():
            raise FramingError(f"unknown frame type 0x{kind:02x}", 5)
        if start == size:
            return Frame(None, channel, kind, b"", extended)
        decoder = self.decoder if check else self.lenient
        body, at = decoder.read(data, start, size)
        wanted = "sasl-frame" if kind == FRAME_TYPES["sasl"] else "frame"
        if not isinstance(body, Composite) or not self.types.provides(body.name, (wanted,)):
            shown = body.name if isinstance(body, Composite) else repr(body)[:60]
            raise DecodeError(f"a {wanted} body that is not one: {shown}", start)
        if kind == FRAME_TYPES["sasl"] and at != size:
            raise DecodeError(f"{size - at} octets after a SASL frame's body", at)
        if kind == FRAME_TYPES["amqp"] and at != size and body.name != "transfer":
            raise DecodeError(f"a payload after {body.name}: only a transfer has one", at)
        return Frame(body, channel if kind == 0 else 0, kind, data[at:], extended)

    def reader(self, max_frame_size: int = 0xFFFFFFFF) -> FrameReader:
        return FrameReader(self, max_frame_size)

    # -- messages and transfers ----------------------------------------------------------------

    def message(self, sections: Iterable[Any]) -> bytes:
        """A message's bytes from its sections: composites (``header``, ``properties``) or
        :class:`Described` values named by their section (``data``, ``amqp-value``...), in the
        order given."""
        return b"".join(self.encoder.value(section) for section in sections)

    def sections(self, payload: bytes) -> list[Any]:
        """A message's sections as decoded: composites (``header``, ``properties``...), and
        :class:`Described` values named by their section (``data``, ``amqp-value``...)."""
        return self.decoder.values(payload)

    def transfer_frames(
        self, channel: int, transfer: Composite, payload: bytes, max_frame_size: int
    ) -> list[bytes]:
        """A delivery's transfer frames: the payload split to fit ``max_frame_size``, ``more``
        set on every frame but the last."""
        if transfer.name != "transfer":
            raise LocalProtocolError(f"transfer frames carry a transfer, not {transfer.name}")
        first = self.frame(Composite("transfer", {**transfer.fields, "more": True}), channel)
        room = max_frame_size - len(first)
        if room <= 0:
            raise LocalProtocolError(f"a transfer does not fit a frame of {max_frame_size}")
        if len(first) + len(payload) <= max_frame_size:
            return [self.frame(transfer, channel, payload)]
        chunks = [payload[i : i + room] for i in range(0, len(payload), room)]
        frames = []
        for number, chunk in enumerate(chunks):
            last = number == len(chunks) - 1
            fields = {**transfer.fields, "more": not last}
            if number:  # continuation frames repeat only the handle
                fields = {"handle": transfer.fields.get("handle"), "more": not last}
            frames.append(self.frame(Composite("transfer", fields), channel, chunk))
        return frames

    @staticmethod
    def joined(frames: Sequence[Frame]) -> bytes:
        """The payload of a delivery sent over several transfers."""
        return b"".join(f.payload for f in frames)


@functools.cache
def codec_for(protocol: str = "1.0") -> Codec:
    """The codec of a registered 1.0 protocol (one per process)."""
    if family_of(protocol) != "amqp10":  # (ValueError for a protocol nobody knows)
        raise LocalProtocolError(f"{protocol} is not AMQP 1.0")
    return Codec(load(protocol))
