"""Values of every 0-10 type, struct, control and command, read from a :class:`~..source.Source`.

Nothing here is written per type name: the codec's type system says each type's kind and width
(integer, text, binary, sequence-set, map...), each layout its fields, their domains' enum
choices and which are required. A zero source reads as the plainest value: 0, the empty string,
the first choice, optional fields left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from amqpfuzz.spec.amqp010.codec import (
    Array,
    Bit,
    ByteRanges,
    Codec,
    Command,
    Control,
    Dec32,
    Dec64,
    SequenceSet,
    Struct,
)
from amqpfuzz.spec.amqp010.codec.types import Layout, WireType
from amqpfuzz.spec.amqp010.codec.values import PYTHON_TYPES

from ..source import Source

__all__ = ["Values"]

TEXT = 24  # characters at most: well under a str8's 255 octets in any character set
BINARY = 48
DEPTH = 2  # maps, lists, arrays and struct32s inside one another
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-_."


class Values:
    """Value readers for one codec's types and layouts."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.types = codec.types
        self.coded = tuple(sorted(t.name for t in self.types.types.values() if t.code is not None))
        self.struct32s = tuple(
            s.qualified for s in codec.spec.structs if self.types.layout(s.qualified).code
        )

    # -- one value ---------------------------------------------------------------------------

    def plain(self, t: WireType, src: Source, depth: int = 0) -> Any:
        """A value of ``t`` as a field holds it."""
        reader: Callable[[WireType, Source, int], Any] = getattr(
            self, "_" + t.kind.replace("-", "_")
        )
        return reader(t, src, depth)

    def typed(self, src: Source, depth: int) -> Any:
        """A value of any coded type as a map, list or array item holds it (its Python type
        says its type)."""
        t = self.types.type(src.pick(self.coded))
        return self._as_typed(t, src, depth)

    def _as_typed(self, t: WireType, src: Source, depth: int) -> Any:
        value = self.plain(t, src, depth)
        python = PYTHON_TYPES[t.name]
        plain_types = (int, float, str, bytes, bool)
        if python in plain_types or not issubclass(python, (int, float, str, bytes)):
            return value
        return python(value)

    def _integer(self, t: WireType, src: Source, depth: int) -> int:
        bits = 8 * t.width
        if src.edge():
            choices = (0, 1, (1 << bits) - 1, 1 << (bits - 1))
            value = int(src.pick(choices))
        else:
            value = src.uint(bits)
        if t.signed and value >= 1 << (bits - 1):
            value -= 1 << bits
        return value

    def _float(self, t: WireType, src: Source, depth: int) -> float:
        return float(src.below(1 << 16)) / 8 * (-1 if src.byte() & 1 else 1)

    def _boolean(self, t: WireType, src: Source, depth: int) -> bool:
        return bool(src.byte() & 1)

    def _text(self, t: WireType, src: Source, depth: int) -> str:
        size = 1 if t.fixed else src.below(TEXT + 1)
        return "".join(ALPHABET[src.below(len(ALPHABET))] for _ in range(size))

    def _binary(self, t: WireType, src: Source, depth: int) -> bytes:
        return src.take(t.width if t.fixed else src.below(BINARY + 1))

    def _uuid(self, t: WireType, src: Source, depth: int) -> uuid.UUID:
        return uuid.UUID(bytes=src.take(16))

    def _decimal(self, t: WireType, src: Source, depth: int) -> Dec32 | Dec64:
        kind, bits = (Dec32, 32) if t.width == 5 else (Dec64, 64)
        value = src.uint(bits)
        return kind(src.byte(), value - (1 << bits) if value >= 1 << (bits - 1) else value)

    def _void(self, t: WireType, src: Source, depth: int) -> None:
        return None

    def _bit(self, t: WireType, src: Source, depth: int) -> Bit:
        return Bit()  # no octets: a field of type bit is set by its packing flag instead

    def _sequence_set(self, t: WireType, src: Source, depth: int) -> SequenceSet:
        ranges = []
        for _ in range(src.below(4)):
            lower = src.uint(16)
            ranges.append((lower, lower + src.below(64)))
        return SequenceSet(ranges)

    def _byte_ranges(self, t: WireType, src: Source, depth: int) -> ByteRanges:
        ranges = []
        for _ in range(src.below(3)):
            lower = src.uint(16)
            ranges.append((lower, lower + src.uint(16)))
        return ByteRanges(ranges)

    def _struct32(self, t: WireType, src: Source, depth: int) -> Struct:
        return self.struct(src.pick(self.struct32s), src, depth + 1)

    def _map(self, t: WireType, src: Source, depth: int) -> dict[str, Any]:
        if depth >= DEPTH:
            return {}
        return {self._text(t, src, depth): self.typed(src, depth + 1) for _ in range(src.below(4))}

    def _list(self, t: WireType, src: Source, depth: int) -> list[Any]:
        if depth >= DEPTH:
            return []
        return [self.typed(src, depth + 1) for _ in range(src.below(4))]

    def _array(self, t: WireType, src: Source, depth: int) -> Array:
        if depth >= DEPTH:
            return Array("str16")
        item = self.types.type(src.pick(self.coded))
        return Array(
            item.name, tuple(self._as_typed(item, src, depth + 1) for _ in range(src.below(4)))
        )

    # -- structs, controls, commands -----------------------------------------------------------

    def fields(
        self,
        layout: Layout,
        src: Source,
        depth: int = 0,
        names: Callable[[str, Source], str] | None = None,
    ) -> dict[str, Any]:
        """Values for a layout's fields: required ones always, the others about half the time;
        an enum field one of its choices; a field whose domain names an entity (``names``
        says which) a name it gives."""
        fields: dict[str, Any] = {}
        for f in layout.fields:
            required = (f.required and not f.is_bit) or not layout.pack
            if not required and not src.byte() & 1:
                continue
            if f.is_bit and layout.pack:
                fields[f.name] = True
            elif f.struct is not None:
                fields[f.name] = self.struct(f.struct, src, depth + 1)
            elif f.choices:
                fields[f.name] = src.pick(tuple(f.choices.values()))
            elif names is not None and (given := names(f"{layout.name}.{f.name}", src)):
                fields[f.name] = given
            else:
                assert f.type is not None
                fields[f.name] = self.plain(f.type, src, depth)
        return fields

    def struct(self, name: str, src: Source, depth: int = 0) -> Struct:
        return Struct(name, self.fields(self.types.layout(name, "struct"), src, depth))

    def control(self, name: str, src: Source, channel: int = 0) -> Control:
        return Control(name, self.fields(self.types.layout(name, "control"), src), channel)

    def command(
        self,
        name: str,
        src: Source,
        *,
        channel: int = 0,
        sync: bool = True,
        names: Callable[[str, Source], str] | None = None,
    ) -> Command:
        """A command with values drawn for its fields, and its header entries and body where
        it takes them."""
        fields = self.fields(self.types.layout(name, "command"), src, names=names)
        declared = self.codec.spec.command(name).segments
        header: tuple[Struct, ...] | None = None
        body: bytes | None = None
        if (
            declared is not None
            and declared.header
            and (declared.header_required or src.byte() & 1)
        ):
            header = tuple(self.struct(n, src) for n in declared.entries if src.byte() & 1)
        if declared is not None and declared.body and src.byte() & 1:
            body = self._binary(self.types.type("vbin32"), src, 0)
        return Command(name, fields, channel, sync, header, body)
