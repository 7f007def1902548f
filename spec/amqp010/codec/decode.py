"""Decoding 0-10 values, structs, controls, commands and header segments with the layouts of
the model.

Every read checks its bounds against the value that holds it: a size or count that lies, a
packing flag for no field, a struct's size that ends before or after its fields, octets left
after the last field, a type code in a reserved range, nesting deeper than :data:`MAX_DEPTH`:
each is a :class:`DecodeError` with the offset where it was found, never an IndexError.
Checked (the default), the decoder also refuses what the specification forbids of values:
text that is not of its character set, a boolean octet other than 0 and 1, a value outside its
domain's choices, a required field left out, a sequence range whose lower end follows its upper
one, a map with a key twice. Unchecked, it gives such values as they are (undecodable text as
its octets).

A map, list or array item of a type code the specification does not define is an
:class:`Opaque` value, stepped over by the width its code implies.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from .errors import DecodeError, UnknownCodeError
from .types import Layout, TypeSystem, WireType, code_width
from .values import (
    PYTHON_TYPES,
    Array,
    Bit,
    ByteRanges,
    Dec32,
    Dec64,
    Opaque,
    SequenceSet,
    Struct,
    serial_le,
)

__all__ = ["MAX_DEPTH", "MAX_EMPTY_ITEMS", "Decoder"]

MAX_DEPTH = 32  # maps, lists, arrays and struct32s inside one another: deeper is refused
MAX_EMPTY_ITEMS = 0xFFFF  # items of no width (void, bit) one array may count

# (buffer, position, end of the enclosing value, depth) -> (value, position after it)
Reader = Callable[[bytes, int, int, int], tuple[Any, int]]

_FLOATS = {">f": struct.Struct(">f"), ">d": struct.Struct(">d")}


def _need(what: str, pos: int, count: int, end: int) -> None:
    if pos + count > end:
        raise DecodeError(f"{what} runs past the end of its value", pos)


def _size(buf: bytes, pos: int, width: int, end: int, what: str) -> tuple[int, int]:
    """A size prefix of ``width`` octets and where what it sizes ends."""
    _need(f"the size of a {what}", pos, width, end)
    size = int.from_bytes(buf[pos : pos + width], "big")
    stop = pos + width + size
    if stop > end:
        raise DecodeError(f"a {what} of {size} octets runs past its end", pos)
    return size, stop


class Decoder:
    """Bytes to values for one type system."""

    def __init__(self, types: TypeSystem, check: bool = True) -> None:
        self.types, self.check = types, check
        self._readers: dict[str, Reader] = {
            name: self._reader(t) for name, t in types.types.items()
        }
        self._typed: dict[int, Reader] = {
            code: self._wrapped(t) for code, t in types.by_code.items()
        }

    # -- values ------------------------------------------------------------------------------

    def value(self, type_name: str, buf: bytes, pos: int = 0, end: int | None = None) -> Any:
        """Exactly one value of the named type filling ``buf[pos:end]``."""
        end = len(buf) if end is None else end
        reader = self._readers.get(type_name)
        if reader is None:
            raise DecodeError(f"no type {type_name!r} in AMQP 0-10", pos)
        value, at = reader(buf, pos, end, 0)
        if at != end:
            raise DecodeError(f"{end - at} octets after a {type_name}", at)
        return value

    def typed(self, buf: bytes, pos: int, end: int, depth: int = 0) -> tuple[Any, int]:
        """A type code and its value (a map, list or array item)."""
        _need("a type code", pos, 1, end)
        return self._item(buf[pos], pos)(buf, pos + 1, end, depth)

    def _item(self, code: int, at: int) -> Reader:
        """The reader of a type code's values (at ``at``, for the error of a reserved one)."""
        reader = self._typed.get(code)
        if reader is not None:
            return reader
        width = code_width(code)
        if width is None:
            raise DecodeError(f"type code 0x{code:02x} is in a reserved range", at)
        fixed, octets = width

        def opaque(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            stop = pos + octets if fixed else _size(buf, pos, octets, end, "value")[1]
            _need(f"a value of type code 0x{code:02x}", pos, stop - pos, end)
            return Opaque(code, bytes(buf[pos:stop])), stop

        return opaque

    # -- structs, controls, commands ---------------------------------------------------------

    def fields(
        self, layout: Layout, buf: bytes, pos: int, end: int, depth: int = 0
    ) -> tuple[dict[str, Any], int]:
        """Packing flags and the fields they say are present (no flags: every field)."""
        pack = layout.pack
        _need(f"{layout.name}'s packing flags", pos, pack, end)
        if pack:
            flags = int.from_bytes(buf[pos : pos + pack], "little")
            if flags >> len(layout.fields) and self.check:
                raise DecodeError(f"{layout.name}: a packing flag set for no field", pos)
        else:
            flags = (1 << len(layout.fields)) - 1
        at = pos + pack
        values: dict[str, Any] = {}
        for f in layout.fields:
            if not flags >> f.index & 1:
                if self.check and f.required and not f.is_bit:
                    raise DecodeError(f"{layout.name}: required {f.name!r} left out", pos)
                continue
            if f.is_bit:
                values[f.name] = True
                continue
            start = at
            if f.struct is not None:
                values[f.name], at = self.struct(self.types.layout(f.struct), buf, at, end, depth)
                continue
            assert f.type is not None
            values[f.name], at = self._readers[f.type.name](buf, at, end, depth)
            if f.choices and self.check and values[f.name] not in f.choices.values():
                shown = values[f.name]
                raise DecodeError(f"{layout.name}.{f.name}: {shown} is none of its choices", start)
        return values, at

    def struct(
        self, layout: Layout, buf: bytes, pos: int, end: int, depth: int = 0
    ) -> tuple[Struct, int]:
        """A struct as its layout says: size prefix, code, flags, fields."""
        stop = end
        at = pos
        if layout.size:
            _, stop = _size(buf, pos, layout.size, end, layout.name)
            at = pos + layout.size
        if layout.code is not None:
            _need(f"{layout.name}'s code", at, 2, stop)
            if (buf[at], buf[at + 1]) != (layout.class_code, layout.code):
                raise DecodeError(
                    f"{layout.name}'s code is not 0x{buf[at]:02x}{buf[at + 1]:02x}", at
                )
            at += 2
        values, at = self.fields(layout, buf, at, stop, depth)
        if layout.size and at != stop:
            raise DecodeError(f"{layout.name}: {stop - at} octets after its fields", at)
        return Struct(layout.name, values), at

    def struct32(self, buf: bytes, pos: int, end: int, depth: int = 0) -> tuple[Struct, int]:
        """Four octets of size, the struct's class and struct code, its flags and fields."""
        if depth >= MAX_DEPTH:
            raise DecodeError(f"values nested deeper than {MAX_DEPTH}", pos)
        size, stop = _size(buf, pos, 4, end, "struct32")
        if size < 2:
            raise DecodeError(f"a struct32 of {size} octets: its code takes 2", pos)
        at = pos + 4
        name = self.types.structs_by_code.get((buf[at], buf[at + 1]))
        if name is None:
            raise UnknownCodeError(f"no struct of code 0x{buf[at]:02x}{buf[at + 1]:02x}", at)
        layout = self.types.layout(name)
        values, at = self.fields(layout, buf, at + 2, stop, depth + 1)
        if at != stop:
            raise DecodeError(f"{name}: {stop - at} octets after its fields", at)
        return Struct(name, values), stop

    def control(self, payload: bytes) -> tuple[str, dict[str, Any]]:
        """A control segment's payload: the control's name and arguments. Every error is the
        connection's ``framing-error``: a control has no execution layer to answer it."""
        try:
            name = self._code(payload, self.types.controls_by_code, "control")
            values, at = self.fields(self.types.layout(name), payload, 2, len(payload))
            if at != len(payload):
                raise DecodeError(f"{name}: {len(payload) - at} octets after its arguments", at)
        except DecodeError as e:
            raise type(e)(e.message, e.offset, "framing-error") from None
        return name, values

    def command(self, payload: bytes) -> tuple[str, dict[str, Any], bool]:
        """A command segment's payload: name, arguments, the session header's sync flag."""
        name = self._code(payload, self.types.commands_by_code, "command")
        header, at = self.struct(self.types.session_header, payload, 2, len(payload))
        values, at = self.fields(self.types.layout(name), payload, at, len(payload))
        if at != len(payload):
            raise DecodeError(f"{name}: {len(payload) - at} octets after its arguments", at)
        return name, values, bool(header["sync"])

    def header(self, payload: bytes, allowed: tuple[str, ...] | None = None) -> tuple[Struct, ...]:
        """A header segment's entries (struct32s); ``allowed``: the structs the command takes
        there, each at most once."""
        entries: list[Struct] = []
        at = 0
        while at < len(payload):
            start = at
            entry, at = self.struct32(payload, at, len(payload))
            if self.check and allowed is not None:
                if entry.name not in allowed:
                    raise DecodeError(
                        f"a header entry {entry.name} the command does not take", start
                    )
                if any(e.name == entry.name for e in entries):
                    raise DecodeError(f"a header with {entry.name} twice", start)
            entries.append(entry)
        return tuple(entries)

    @staticmethod
    def _code(payload: bytes, table: dict[tuple[int, int], str], what: str) -> str:
        if len(payload) < 2:
            raise DecodeError(f"a {what} segment of {len(payload)} octets: its code takes 2", 0)
        name = table.get((payload[0], payload[1]))
        if name is None:
            raise UnknownCodeError(
                f"no {what} of class 0x{payload[0]:02x} code 0x{payload[1]:02x}", 0
            )
        return name

    # -- the reader of each type -------------------------------------------------------------

    def _reader(self, t: WireType) -> Reader:
        return _KINDS[t.kind](self, t)

    def _wrapped(self, t: WireType) -> Reader:
        """A type's reader giving the Python type that says the type (a UInt16, a Str8)."""
        read = self._readers[t.name]
        python = PYTHON_TYPES.get(t.name)
        base = next(
            (b for b in (int, float, str, bytes) if python is not None and issubclass(python, b)),
            None,
        )
        if python is None or base is None or python in (base, bool):
            return read

        def wrapped(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            value, at = read(buf, pos, end, depth)
            return (python(value) if isinstance(value, base) else value), at

        return wrapped

    def _integer(self, t: WireType) -> Reader:
        width, signed, name = t.width, t.signed, t.name

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            _need(f"a {name}", pos, width, end)
            return int.from_bytes(buf[pos : pos + width], "big", signed=signed), pos + width

        return read

    def _float(self, t: WireType) -> Reader:
        unpack, width, name = _FLOATS[t.detail].unpack_from, t.width, t.name

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            _need(f"a {name}", pos, width, end)
            return unpack(buf, pos)[0], pos + width

        return read

    def _boolean(self, t: WireType) -> Reader:
        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            _need("a boolean", pos, 1, end)
            octet = buf[pos]
            if octet > 1 and self.check:
                raise DecodeError(f"a boolean octet of {octet}: 0 or 1", pos)
            return octet != 0, pos + 1

        return read

    def _text(self, t: WireType) -> Reader:
        charset, width, fixed, name = t.detail, t.width, t.fixed, t.name

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            if fixed:
                _need(f"a {name}", pos, width, end)
                start, stop = pos, pos + width
            else:
                start, stop = pos + width, _size(buf, pos, width, end, name)[1]
            data = bytes(buf[start:stop])
            try:
                return data.decode(charset), stop
            except UnicodeDecodeError as e:
                if not self.check:
                    return data, stop
                raise DecodeError(f"a {name} that is not {charset}", start + e.start) from None

        return read

    def _binary(self, t: WireType) -> Reader:
        width, fixed, name = t.width, t.fixed, t.name

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            if fixed:
                _need(f"a {name}", pos, width, end)
                return bytes(buf[pos : pos + width]), pos + width
            stop = _size(buf, pos, width, end, name)[1]
            return bytes(buf[pos + width : stop]), stop

        return read

    def _uuid(self, t: WireType) -> Reader:
        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            _need("a uuid", pos, 16, end)
            return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16

        return read

    def _decimal(self, t: WireType) -> Reader:
        kind = Dec32 if t.width == 5 else Dec64
        width = t.width

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            _need(f"a {t.name}", pos, width, end)
            value = int.from_bytes(buf[pos + 1 : pos + width], "big", signed=True)
            return kind(buf[pos], value), pos + width

        return read

    def _void(self, t: WireType) -> Reader:
        return lambda buf, pos, end, depth: (None, pos)

    def _bit(self, t: WireType) -> Reader:
        return lambda buf, pos, end, depth: (Bit(), pos)

    def _map(self, t: WireType) -> Reader:
        width = t.width

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            size, stop = self._compound(buf, pos, width, end, depth, "map")
            count = int.from_bytes(buf[pos + width : pos + width + 4], "big")
            if 2 * count > size - 4:  # a key's size and a type code at least
                raise DecodeError(f"a map of {size} octets cannot hold {count} entries", pos)
            at = pos + width + 4
            result: dict[str, Any] = {}
            for _ in range(count):
                key_at = at
                key, at = self._readers["str8"](buf, at, stop, depth)
                if not isinstance(key, str):
                    key = key.decode("utf-8", "replace")  # unchecked: a key that is not UTF-8
                if key in result and self.check:
                    raise DecodeError(f"a map with the key {key!r} twice", key_at)
                result[key], at = self.typed(buf, at, stop, depth + 1)
            if at != stop:
                raise DecodeError(f"a map's {count} entries end before its size says", at)
            return result, stop

        return read

    def _list(self, t: WireType) -> Reader:
        width = t.width

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            size, stop = self._compound(buf, pos, width, end, depth, "list")
            count = int.from_bytes(buf[pos + width : pos + width + 4], "big")
            if count > size - 4:  # a type code at least
                raise DecodeError(f"a list of {size} octets cannot hold {count} items", pos)
            at = pos + width + 4
            items = []
            for _ in range(count):
                item, at = self.typed(buf, at, stop, depth + 1)
                items.append(item)
            if at != stop:
                raise DecodeError(f"a list's {count} items end before its size says", at)
            return items, stop

        return read

    def _array(self, t: WireType) -> Reader:
        width = t.width

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            size, stop = _size(buf, pos, width, end, "array")
            if size == 0:
                # an empty array as its size alone, without type and count: what Qpid's own
                # encoders write (Broker-J's connection.open-ok known-hosts), and read
                return Array("void", ()), stop
            size, stop = self._compound(buf, pos, width, end, depth, "array", head=5)
            code = buf[pos + width]
            count = int.from_bytes(buf[pos + width + 1 : pos + width + 5], "big")
            element = self._item(code, pos + width)
            fixed = code_width(code)
            if fixed is not None and fixed[0] and fixed[1] and count * fixed[1] != size - 5:
                raise DecodeError(f"an array of {size} octets cannot hold {count} values", pos)
            if count > max(size - 5, MAX_EMPTY_ITEMS):
                raise DecodeError(f"an array of {size} octets cannot hold {count} values", pos)
            at = pos + width + 5
            items = []
            for _ in range(count):
                item, at = element(buf, at, stop, depth + 1)
                items.append(item)
            if at != stop:
                raise DecodeError(f"an array's {count} values end before its size says", at)
            own = self.types.by_code.get(code)
            return Array(own.name if own else f"0x{code:02x}", tuple(items)), stop

        return read

    def _compound(
        self, buf: bytes, pos: int, width: int, end: int, depth: int, what: str, head: int = 4
    ) -> tuple[int, int]:
        """A map's, list's or array's size, checked to hold its head (count, type code)."""
        if depth >= MAX_DEPTH:
            raise DecodeError(f"values nested deeper than {MAX_DEPTH}", pos)
        size, stop = _size(buf, pos, width, end, what)
        if size < head:
            raise DecodeError(f"a {what} of {size} octets: its head takes {head}", pos)
        return size, stop

    def _struct32(self, t: WireType) -> Reader:
        return lambda buf, pos, end, depth: self.struct32(buf, pos, end, depth)

    def _sequence_set(self, t: WireType) -> Reader:
        return self._ranges(t, 4, serial_le, SequenceSet)

    def _byte_ranges(self, t: WireType) -> Reader:
        return self._ranges(t, 8, lambda lo, hi: lo <= hi, ByteRanges)

    def _ranges(
        self,
        t: WireType,
        width: int,
        ordered: Callable[[int, int], bool],
        kind: type[SequenceSet] | type[ByteRanges],
    ) -> Reader:
        name, prefix = t.name, t.width

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            size, stop = _size(buf, pos, prefix, end, name)
            if size % (2 * width):
                raise DecodeError(f"a {name} of {size} octets: ranges take {2 * width}", pos)
            pairs = []
            for at in range(pos + prefix, stop, 2 * width):
                lower = int.from_bytes(buf[at : at + width], "big")
                upper = int.from_bytes(buf[at + width : at + 2 * width], "big")
                if self.check and not ordered(lower, upper):
                    raise DecodeError(f"a {name} range whose lower end {lower} > {upper}", at)
                pairs.append((lower, upper))
            return kind(pairs), stop

        return read


_KINDS: dict[str, Callable[[Decoder, WireType], Reader]] = {
    "integer": Decoder._integer,
    "float": Decoder._float,
    "boolean": Decoder._boolean,
    "text": Decoder._text,
    "binary": Decoder._binary,
    "uuid": Decoder._uuid,
    "decimal": Decoder._decimal,
    "void": Decoder._void,
    "bit": Decoder._bit,
    "map": Decoder._map,
    "list": Decoder._list,
    "array": Decoder._array,
    "struct32": Decoder._struct32,
    "sequence-set": Decoder._sequence_set,
    "byte-ranges": Decoder._byte_ranges,
}
