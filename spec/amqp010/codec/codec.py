"""The 0-10 codec: values, structs, controls and commands to frames and back, for one
specification.

Encoding: a control or command becomes its segments (a control segment; a command segment, then
a header segment if it has header entries, then a body segment if it has a body), each segment
split into frames of at most ``max_frame_size`` octets. Every frame of the first segment has
first-segment set and every frame of the last one last-segment; first-frame and last-frame mark
each segment's ends. Controls travel on the control track, commands and their segments on the
command track.

Decoding: :class:`StreamReader` takes a byte stream in chunks of any size and gives the protocol
header and whole controls and commands (:class:`Control`, :class:`Command`); offsets in its
errors count from the stream's first octet.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from ...protocols import family_of
from ..model import Spec010, load
from .assembly import Assembler, Assembly, Segment
from .decode import Decoder
from .encode import Encoder
from .errors import AssemblyError, DecodeError, FramingError, LocalProtocolError
from .frames import (
    FIRST_FRAME,
    FIRST_SEGMENT,
    HEADER_SIZE,
    LAST_FRAME,
    LAST_SEGMENT,
    MAX_FRAME_SIZE,
    Frame,
    FrameReader,
    Header,
)
from .types import TypeSystem
from .values import Command, Control, Struct

__all__ = ["Codec", "StreamReader", "codec_for"]

Item = Control | Command


class Codec:
    """Checked encoding and decoding of 0-10, derived from a loaded specification;
    ``max_frame_size`` is what encoding splits segments to unless told otherwise."""

    def __init__(self, spec: Spec010, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self.spec = spec
        self.types = TypeSystem(spec)
        self.encoder = Encoder(self.types)
        self.decoder = Decoder(self.types)
        self.lenient = Decoder(self.types, check=False)
        self.max_frame_size = max_frame_size
        self.min_max_frame_size = spec.constant("MIN-MAX-FRAME-SIZE").value

    def framed(self, max_frame_size: int) -> Codec:
        """The same codec splitting segments to ``max_frame_size`` (what ``connection.tune``
        agreed); the codec of :func:`codec_for` is shared, so it is copied, not changed."""
        if not HEADER_SIZE < max_frame_size <= MAX_FRAME_SIZE:
            raise LocalProtocolError(f"no frame fits {max_frame_size} octets")
        framed = copy.copy(self)
        framed.max_frame_size = max_frame_size
        return framed

    # -- values and structs ------------------------------------------------------------------

    def encode_value(self, value: Any, type_name: str | None = None, check: bool = True) -> bytes:
        """A value as a field of ``type_name`` holds it; without a type name, as a map item
        holds it: its type code (its own type, see :mod:`.values`), then the value."""
        if type_name is None:
            return self.encoder.typed(value, check)
        return self.encoder.value(type_name, value, check)

    def decode_value(self, data: bytes, type_name: str | None = None, check: bool = True) -> Any:
        """The inverse of :meth:`encode_value`: exactly one value filling ``data``."""
        decoder = self.decoder if check else self.lenient
        if type_name is not None:
            return decoder.value(type_name, data)
        value, at = decoder.typed(data, 0, len(data))
        if at != len(data):
            raise DecodeError(f"{len(data) - at} octets after the value", at)
        return value

    def struct(self, name: str, /, **fields: Any) -> Struct:
        """A struct by its qualified name, fields by name with ``_`` for ``-``
        (``struct("message.delivery-properties", routing_key="k")``), values as the decoder
        gives them back (see ``Encoder.as_decoded``); unknown names are refused."""
        return Struct(name, self.encoder.as_decoded(self.types.layout(name, "struct"), fields))

    def encode_struct(self, value: Struct, check: bool = True) -> bytes:
        """A struct as its own layout sends it (size prefix and code if it has them)."""
        return self.encoder.struct(self.types.layout(value.name, "struct"), value.fields, check)

    def decode_struct(self, name: str, data: bytes, check: bool = True) -> Struct:
        decoder = self.decoder if check else self.lenient
        value, at = decoder.struct(self.types.layout(name, "struct"), data, 0, len(data))
        if at != len(data):
            raise DecodeError(f"{len(data) - at} octets after {name}", at)
        return value

    # -- controls and commands ---------------------------------------------------------------

    def control(self, name: str, /, channel: int = 0, **fields: Any) -> Control:
        """A control by its qualified name, arguments by name with ``_`` for ``-``."""
        layout = self.types.layout(name, "control")
        return Control(name, self.encoder.as_decoded(layout, fields), channel)

    def command(
        self,
        name: str,
        fields: Mapping[str, Any] | None = None,
        /,
        *,
        channel: int = 0,
        sync: bool = False,
        header: Iterable[Struct] | None = None,
        body: bytes | None = None,
    ) -> Command:
        """A command by its qualified name, arguments by name (``_`` or ``-``)."""
        given = self.encoder.as_decoded(self.types.layout(name, "command"), fields or {})
        entries = None if header is None else tuple(header)
        return Command(name, given, channel, sync, entries, body)

    def segments(self, item: Item, check: bool = True) -> list[tuple[int, bytes]]:
        """The segments of a control or command: (segment type, payload) in order."""
        kinds = self.types.segment_types
        if isinstance(item, Control):
            return [(kinds["control"], self.encoder.control(item.name, item.fields, check))]
        if check:
            self._check_segments(item)
        found = [(kinds["command"], self.encoder.command(item.name, item.fields, item.sync, check))]
        if item.header is not None:
            found.append((kinds["header"], self.encoder.header(item.header, check)))
        if item.body is not None:
            found.append((kinds["body"], bytes(item.body)))
        return found

    def _check_segments(self, item: Command) -> None:
        declared = self.spec.command(item.name).segments
        if item.header is not None:
            if declared is None or not declared.header:
                raise LocalProtocolError(f"{item.name} takes no header segment")
            names = [e.name for e in item.header]
            wrong = [n for n in names if n not in declared.entries]
            if wrong or len(set(names)) != len(names):
                raise LocalProtocolError(
                    f"{item.name}'s header holds each of {', '.join(declared.entries)} at most "
                    f"once, not {names}"
                )
        elif declared is not None and declared.header_required:
            raise LocalProtocolError(f"{item.name} requires a header segment")
        if item.body is not None and (declared is None or not declared.body):
            raise LocalProtocolError(f"{item.name} takes no body segment")

    def frames(
        self, item: Item, max_frame_size: int | None = None, check: bool = True
    ) -> list[Frame]:
        """A control's or command's frames, each segment split to fit ``max_frame_size``."""
        size = self.max_frame_size if max_frame_size is None else max_frame_size
        room = size - HEADER_SIZE
        if room < 1 or size > MAX_FRAME_SIZE:
            raise LocalProtocolError(f"no frame fits {size} octets")
        if not 0 <= item.channel <= 0xFFFF:
            raise LocalProtocolError(f"channel {item.channel} does not fit 16 bits")
        segments = self.segments(item, check)
        track = self.types.tracks["control" if isinstance(item, Control) else "command"]
        frames = []
        for number, (kind, payload) in enumerate(segments):
            flags = FIRST_SEGMENT if number == 0 else 0
            flags |= LAST_SEGMENT if number == len(segments) - 1 else 0
            chunks = [payload[i : i + room] for i in range(0, len(payload), room)] or [b""]
            for index, chunk in enumerate(chunks):
                own = flags | (FIRST_FRAME if index == 0 else 0)
                own |= LAST_FRAME if index == len(chunks) - 1 else 0
                frames.append(Frame(own, kind, track, item.channel, chunk))
        return frames

    def encode(self, item: Item, max_frame_size: int | None = None, check: bool = True) -> bytes:
        """A control's or command's frames as octets."""
        return b"".join(f.encode() for f in self.frames(item, max_frame_size, check))

    def encode_control(self, name: str, /, channel: int = 0, **fields: Any) -> bytes:
        """``encode_control("connection.start", mechanisms=["PLAIN"], locales=["en_US"])``:
        the frames of a control on ``channel``, at most :attr:`max_frame_size` octets each."""
        return self.encode(self.control(name, channel, **fields))

    def encode_command(
        self,
        name: str,
        fields: Mapping[str, Any] | None = None,
        /,
        *,
        channel: int = 0,
        sync: bool = False,
        header: Iterable[Struct] | None = None,
        body: bytes | None = None,
        max_frame_size: int | None = None,
        check: bool = True,
    ) -> bytes:
        """The frames of a command on ``channel``, with its header entries and body."""
        item = self.command(name, fields, channel=channel, sync=sync, header=header, body=body)
        return self.encode(item, max_frame_size, check)

    # -- decoding ----------------------------------------------------------------------------

    def frame_reader(
        self, max_frame_size: int = MAX_FRAME_SIZE, expect_header: bool = False, check: bool = True
    ) -> FrameReader:
        """A :class:`FrameReader` that knows the model's segment types and tracks."""
        return FrameReader(
            max_frame_size,
            expect_header=expect_header,
            check=check,
            segment_types=self.types.segment_types.values(),
            tracks=self.types.tracks.values(),
        )

    def assembler(self) -> Assembler:
        return Assembler(self.types.segment_types, self.types.tracks)

    def decode_frames(
        self, data: bytes, expect_header: bool = False, check: bool = True
    ) -> list[Header | Frame]:
        """Whole headers and frames filling ``data``."""
        reader = self.frame_reader(MAX_FRAME_SIZE, expect_header, check)
        found = reader.feed(data)
        if reader.buffered:
            raise FramingError(f"{reader.buffered} octets of an unfinished frame", len(data))
        return found

    def decode_assembly(self, assembly: Assembly, check: bool = True) -> Item:
        """A control or command from its segments; errors carry stream offsets."""
        decoder = self.decoder if check else self.lenient
        first = assembly.segments[0]
        kinds = self.types.segment_types
        try:
            if first.type == kinds["control"]:
                name, fields = decoder.control(first.payload)
                return Control(name, fields, assembly.channel)
            name, fields, sync = decoder.command(first.payload)
        except DecodeError as e:
            raise e.shifted(first.stream_offset(e.offset) - e.offset) from None
        declared = self.spec.command(name).segments
        header: tuple[Struct, ...] | None = None
        body: bytes | None = None
        for segment in assembly.segments[1:]:
            if segment.type == kinds["header"]:
                if check and (declared is None or not declared.header):
                    raise AssemblyError(f"a header segment after {name}", _at(segment))
                allowed = None if declared is None else declared.entries
                try:
                    header = decoder.header(segment.payload, allowed)
                except DecodeError as e:
                    raise e.shifted(segment.stream_offset(e.offset) - e.offset) from None
            else:
                if check and (declared is None or not declared.body):
                    raise AssemblyError(f"a body segment after {name}", _at(segment))
                body = segment.payload
        if check and header is None and declared is not None and declared.header_required:
            raise AssemblyError(f"{name} without its required header segment", _at(first))
        return Command(name, fields, assembly.channel, sync, header, body)

    def decode(self, data: bytes, expect_header: bool = False, check: bool = True) -> list[Any]:
        """Whole headers, controls and commands filling ``data``."""
        reader = self.reader(MAX_FRAME_SIZE, expect_header=expect_header, check=check)
        found = reader.feed(data)
        reader.close()
        return found

    def reader(
        self,
        max_frame_size: int = MAX_FRAME_SIZE,
        *,
        expect_header: bool = True,
        check: bool = True,
    ) -> StreamReader:
        """A reader of a peer's stream: the protocol header first (unless told otherwise),
        then controls and commands."""
        return StreamReader(self, max_frame_size, expect_header=expect_header, check=check)


def _at(segment: Segment) -> int:
    return segment.parts[0][1]


class StreamReader:
    """Protocol headers, controls and commands from a stream fed in chunks of any size."""

    def __init__(
        self,
        codec: Codec,
        max_frame_size: int = MAX_FRAME_SIZE,
        *,
        expect_header: bool = True,
        check: bool = True,
    ) -> None:
        self.codec = codec
        self.check = check
        self.frames = codec.frame_reader(max_frame_size, expect_header, check)
        self.assembler = codec.assembler()

    @property
    def max_frame_size(self) -> int:
        return self.frames.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        """What ``connection.tune`` agreed: a frame over it is refused from then on."""
        self.frames.max_frame_size = size

    def feed(self, data: bytes) -> list[Header | Control | Command]:
        """What the bytes fed so far complete."""
        found: list[Header | Control | Command] = []
        for item in self.frames.feed(data):
            if isinstance(item, Header):
                found.append(item)
                continue
            assembly = self.assembler.add(item)
            if assembly is not None:
                found.append(self.codec.decode_assembly(assembly, self.check))
        return found

    def close(self) -> None:
        """The stream ended: refused if a frame, segment or command is unfinished."""
        if self.frames.buffered or self.assembler.pending:
            raise FramingError(
                "the stream ended inside a frame, segment or command", self.frames.position
            )


@functools.cache
def codec_for(protocol: str = "0-10") -> Codec:
    """The codec of a registered 0-10 protocol (one per process)."""
    if family_of(protocol) != "amqp010":  # (ValueError for a protocol nobody knows)
        raise LocalProtocolError(f"{protocol} is not AMQP 0-10")
    return Codec(load(protocol))
