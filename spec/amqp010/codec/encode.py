"""Encoding 0-10 values, structs, controls, commands and header segments with the layouts of
the model.

A struct (or a control's or command's arguments) is its packing flags, one bit per field in
field order (field *i* is bit *i* % 8 of flag octet *i* // 8), then the fields whose flag is set;
a ``bit`` field is its flag alone. A sized struct has a size prefix before its code (a coded
struct's class and struct code) and flags; a ``struct32`` is a coded struct with four octets of
size. A control segment is its class code, its code and its arguments; a command segment has
the ``session.header`` struct (the sync flag) between its code and its arguments; a header
segment is its entries, each a ``struct32``.

The checked encoder refuses (:class:`LocalProtocolError`) what the specification forbids: a
value out of its type's range or outside its domain's choices, text its character set cannot
carry, a required field left out, a sequence range whose lower end follows its upper one, a
struct in a field of another struct's type. ``check=False`` sends those anyway (integers are cut
to their width, text may be given as octets), for the fuzzer; what the wire cannot carry at all
(a str8 of 300 octets, a bin16 of 3) is refused either way: :mod:`.raw` builds those.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import LocalProtocolError
from .types import FieldPlan, Layout, TypeSystem, WireType
from .values import (
    Array,
    Bit,
    ByteRanges,
    Dec32,
    Dec64,
    Opaque,
    SequenceSet,
    Struct,
    serial_le,
    type_name_of,
)

__all__ = ["Encoder", "field_names"]

# (value, check) -> the value's octets, without a type code
Body = Callable[[Any, bool], bytes]

_FLOATS = {">f": struct.Struct(">f"), ">d": struct.Struct(">d")}


def _limit(width: int) -> int:
    return (1 << (8 * width)) - 1


def _prefixed(data: bytes, width: int, what: str) -> bytes:
    if len(data) > _limit(width):
        raise LocalProtocolError(f"a {what} of {len(data)} octets: its size takes {width}")
    return len(data).to_bytes(width, "big") + data


def field_names(layout: Layout, given: Mapping[str, Any]) -> dict[str, Any]:
    """Fields by their XML names (``_`` taken for ``-``); a name the layout has not is refused."""
    fields = {k.replace("_", "-"): v for k, v in given.items()}
    unknown = fields.keys() - layout.by_name.keys()
    if unknown:
        raise LocalProtocolError(f"{layout.name} has no field {sorted(unknown)[0]!r}")
    return fields


class Encoder:
    """Values to bytes for one type system."""

    def __init__(self, types: TypeSystem) -> None:
        self.types = types
        self._bodies: dict[str, Body] = {name: self._body(t) for name, t in types.types.items()}

    # -- values ------------------------------------------------------------------------------

    def value(self, type_name: str, value: Any, check: bool = True) -> bytes:
        """A value of the named type, as a field holds it (no type code)."""
        body = self._bodies.get(type_name)
        if body is None:
            raise LocalProtocolError(f"no type {type_name!r} in AMQP 0-10")
        return body(value, check)

    def typed(self, value: Any, check: bool = True) -> bytes:
        """A value with its type code, as a map, list or array item holds it: the type is the
        value's own (see :mod:`.values`)."""
        if isinstance(value, Opaque):
            return bytes((value.code & 0xFF,)) + value.data
        t = self._coded(type_name_of(value), value)
        assert t.code is not None  # _coded refuses a type without one
        return bytes((t.code,)) + self._bodies[t.name](value, check)

    def _coded(self, name: str | None, value: Any) -> WireType:
        t = None if name is None else self.types.types.get(name)
        if t is None or t.code is None:
            raise LocalProtocolError(f"no 0-10 type code for a {type(value).__name__} value")
        return t

    # -- structs, controls, commands -----------------------------------------------------------

    def as_decoded(self, layout: Layout, given: Mapping[str, Any]) -> dict[str, Any]:
        """Fields by their XML names, each value as the decoder gives it back, so that what is
        built compares equal to what is read: an array field's list as an :class:`Array` of its
        items' type, a struct field's mapping as a :class:`Struct`, ranges as a
        :class:`SequenceSet` or :class:`ByteRanges`, an enum choice's name as its value."""
        fields = field_names(layout, given)
        for name, value in fields.items():
            f = layout.by_name[name]
            if value is None:
                continue
            if f.struct is not None:
                if isinstance(value, Mapping):
                    nested = self.as_decoded(self.types.layout(f.struct), value)
                    fields[name] = Struct(f.struct, nested)
                continue
            assert f.type is not None
            kind = f.type.kind
            if kind == "array" and isinstance(value, (list, tuple)):
                fields[name] = _inferred(value)
            elif kind == "sequence-set" and not isinstance(value, SequenceSet):
                fields[name] = SequenceSet(value)
            elif kind == "byte-ranges" and not isinstance(value, ByteRanges):
                fields[name] = ByteRanges(value)
            elif f.choices and isinstance(value, str) and value in f.choices:
                fields[name] = f.choices[value]
        return fields

    def fields(self, layout: Layout, given: Mapping[str, Any], check: bool = True) -> bytes:
        """Packing flags and the fields present (a struct without flags: every field)."""
        values = field_names(layout, given)
        flags = 0
        parts: list[bytes] = []
        for f in layout.fields:
            v = values.get(f.name)
            if f.is_bit and layout.pack:
                if v is None or v is False:
                    continue
                if check and v is not True:
                    raise LocalProtocolError(f"{layout.name}.{f.name} is a bit, not {v!r}")
                flags |= 1 << f.index
                continue
            if v is None:
                if (check and f.required) or not layout.pack:
                    raise LocalProtocolError(f"{layout.name}: required {f.name!r} left out")
                continue
            flags |= 1 << f.index
            parts.append(self.field(layout, f, v, check))
        if not layout.pack:
            return b"".join(parts)
        return flags.to_bytes(layout.pack, "little") + b"".join(parts)

    def field(self, layout: Layout, f: FieldPlan, value: Any, check: bool = True) -> bytes:
        """One field's value, as its type (or struct) says."""
        if f.struct is not None:
            if isinstance(value, Struct):
                if check and value.name != f.struct:
                    raise LocalProtocolError(f"{layout.name}.{f.name} is a {f.struct}, not {value}")
                return self.struct(self.types.layout(value.name, "struct"), value.fields, check)
            if isinstance(value, Mapping):
                return self.struct(self.types.layout(f.struct), value, check)
            raise LocalProtocolError(f"{layout.name}.{f.name} is a {f.struct}, not {value!r}")
        assert f.type is not None
        if f.choices:
            if isinstance(value, str) and f.type.kind == "integer":
                if value not in f.choices:
                    raise LocalProtocolError(f"{layout.name}.{f.name} has no choice {value!r}")
                value = f.choices[value]
            elif check and value not in f.choices.values():
                shown = ", ".join(f"{n}={v}" for n, v in f.choices.items())
                raise LocalProtocolError(f"{layout.name}.{f.name} is one of {shown}: not {value!r}")
        return self._bodies[f.type.name](value, check)

    def struct(self, layout: Layout, given: Mapping[str, Any], check: bool = True) -> bytes:
        """A struct as its layout says: size prefix, code, flags, fields."""
        body = self.fields(layout, given, check)
        if layout.code is not None:
            body = bytes((layout.class_code, layout.code)) + body
        if layout.size:
            return _prefixed(body, layout.size, layout.name)
        return body

    def struct32(self, value: Struct, check: bool = True) -> bytes:
        """A coded struct in four octets of size, two of code (whatever its own size)."""
        if not isinstance(value, Struct):
            raise LocalProtocolError(f"a struct32 holds a Struct, not {value!r}")
        layout = self.types.layout(value.name, "struct")
        if layout.code is None:
            raise LocalProtocolError(f"{layout.name} has no code: it cannot be a struct32")
        body = bytes((layout.class_code, layout.code)) + self.fields(layout, value.fields, check)
        return _prefixed(body, 4, "struct32")

    def control(self, name: str, given: Mapping[str, Any], check: bool = True) -> bytes:
        """A control segment's payload."""
        layout = self.types.layout(name, "control")
        assert layout.code is not None
        return bytes((layout.class_code, layout.code)) + self.fields(layout, given, check)

    def command(
        self, name: str, given: Mapping[str, Any], sync: bool = False, check: bool = True
    ) -> bytes:
        """A command segment's payload: class and code, session header, arguments."""
        layout = self.types.layout(name, "command")
        assert layout.code is not None
        header = self.struct(self.types.session_header, {"sync": bool(sync)}, check)
        return bytes((layout.class_code, layout.code)) + header + self.fields(layout, given, check)

    def header(self, entries: Iterable[Struct], check: bool = True) -> bytes:
        """A header segment's payload: its entries as struct32s."""
        return b"".join(self.struct32(e, check) for e in entries)

    # -- the body of each type ---------------------------------------------------------------

    def _body(self, t: WireType) -> Body:
        return _KINDS[t.kind](self, t)

    def _integer(self, t: WireType) -> Body:
        width, signed, name = t.width, t.signed, t.name
        low = -(1 << (8 * width - 1)) if signed else 0
        high = (1 << (8 * width - 1)) - 1 if signed else _limit(width)

        def body(v: Any, check: bool) -> bytes:
            if not isinstance(v, int) or (check and isinstance(v, bool)):
                raise LocalProtocolError(f"a {name} is an integer, not {v!r}")
            if low <= v <= high:
                return v.to_bytes(width, "big", signed=signed)
            if check:
                raise LocalProtocolError(f"{v} is out of range for {name}")
            return (v & _limit(width)).to_bytes(width, "big")

        return body

    def _float(self, t: WireType) -> Body:
        packer, name = _FLOATS[t.detail], t.name

        def body(v: Any, check: bool) -> bytes:
            try:
                return packer.pack(v)
            except (struct.error, OverflowError, TypeError):
                raise LocalProtocolError(f"{v!r} is not a {name}") from None

        return body

    def _boolean(self, t: WireType) -> Body:
        def body(v: Any, check: bool) -> bytes:
            if isinstance(v, bool):
                return b"\x01" if v else b"\x00"
            if not check and isinstance(v, int):
                return bytes((v & 0xFF,))
            raise LocalProtocolError(f"a boolean is True or False, not {v!r}")

        return body

    def _text(self, t: WireType) -> Body:
        charset, width, fixed, name = t.detail, t.width, t.fixed, t.name

        def body(v: Any, check: bool) -> bytes:
            if isinstance(v, (bytes, bytearray)) and not check:
                data = bytes(v)  # unchecked: octets that need not be of the character set
            elif isinstance(v, str):
                try:
                    data = v.encode(charset)
                except UnicodeEncodeError as e:
                    raise LocalProtocolError(f"a {name} is {charset}: {e.reason}") from None
            else:
                raise LocalProtocolError(f"a {name} is text, not {v!r}")
            if fixed:
                if len(data) != width:
                    raise LocalProtocolError(f"a {name} is one character, not {v!r}")
                return data
            return _prefixed(data, width, name)

        return body

    def _binary(self, t: WireType) -> Body:
        width, fixed, name = t.width, t.fixed, t.name

        def body(v: Any, check: bool) -> bytes:
            if not isinstance(v, (bytes, bytearray, memoryview)):
                raise LocalProtocolError(f"a {name} is octets, not {v!r}")
            data = bytes(v)
            if fixed:
                if len(data) != width:
                    raise LocalProtocolError(f"a {name} is {width} octets, not {len(data)}")
                return data
            return _prefixed(data, width, name)

        return body

    def _uuid(self, t: WireType) -> Body:
        def body(v: Any, check: bool) -> bytes:
            if isinstance(v, uuid.UUID):
                return v.bytes
            if isinstance(v, (bytes, bytearray)) and len(v) == 16:
                return bytes(v)
            raise LocalProtocolError(f"a uuid is a UUID or 16 octets, not {v!r}")

        return body

    def _decimal(self, t: WireType) -> Body:
        wanted = Dec32 if t.width == 5 else Dec64
        value_width = t.width - 1

        def body(v: Any, check: bool) -> bytes:
            if not isinstance(v, wanted):
                raise LocalProtocolError(f"a {t.name} is a {wanted.__name__}, not {v!r}")
            exponent, value = v.exponent, v.value
            if not check:
                exponent &= 0xFF
                value = _wrap(value, value_width)
            try:
                return exponent.to_bytes(1, "big") + value.to_bytes(value_width, "big", signed=True)
            except OverflowError:
                raise LocalProtocolError(f"{v!r} does not fit a {t.name}") from None

        return body

    def _void(self, t: WireType) -> Body:
        def body(v: Any, check: bool) -> bytes:
            if check and v is not None:
                raise LocalProtocolError(f"a void is None, not {v!r}")
            return b""

        return body

    def _bit(self, t: WireType) -> Body:
        def body(v: Any, check: bool) -> bytes:
            if check and not isinstance(v, Bit):
                raise LocalProtocolError(f"a bit in a map, list or array is a Bit, not {v!r}")
            return b""

        return body

    def _map(self, t: WireType) -> Body:
        width = t.width

        def body(v: Any, check: bool) -> bytes:
            if not isinstance(v, Mapping):
                raise LocalProtocolError(f"a map is a dict, not {v!r}")
            entries = []
            for key, item in v.items():
                if not isinstance(key, str):
                    raise LocalProtocolError(f"a map's keys are str8 text, not {key!r}")
                entries.append(_prefixed(key.encode("utf-8"), 1, "map key"))
                entries.append(self.typed(item, check))
            data = len(v).to_bytes(4, "big") + b"".join(entries)
            return _prefixed(data, width, "map")

        return body

    def _list(self, t: WireType) -> Body:
        width = t.width

        def body(v: Any, check: bool) -> bytes:
            if not isinstance(v, (list, tuple)):
                raise LocalProtocolError(f"a list is a list, not {v!r}")
            data = len(v).to_bytes(4, "big") + b"".join(self.typed(x, check) for x in v)
            return _prefixed(data, width, "list")

        return body

    def _array(self, t: WireType) -> Body:
        width = t.width

        def body(v: Any, check: bool) -> bytes:
            array = v if isinstance(v, Array) else _inferred(v)
            if array.type.startswith("0x"):  # of a code the specification does not define
                return _prefixed(_unknown_elements(array), width, "array")
            element = self._coded(array.type, array)
            assert element.code is not None
            encode = self._bodies[element.name]
            if check:
                for x in array.items:
                    own = type_name_of(x)
                    if own is not None and own != element.name and type(x) not in _PLAIN:
                        raise LocalProtocolError(f"an array of {element.name} holds {x!r}")
            items = b"".join(encode(x, check) for x in array.items)
            head = bytes((element.code,)) + len(array.items).to_bytes(4, "big")
            return _prefixed(head + items, width, "array")

        return body

    def _struct32(self, t: WireType) -> Body:
        return lambda v, check: self.struct32(v, check)

    def _sequence_set(self, t: WireType) -> Body:
        return _ranges(t, 4, serial_le)

    def _byte_ranges(self, t: WireType) -> Body:
        return _ranges(t, 8, lambda lo, hi: lo <= hi)


# plain values an array of any type takes (a plain int in an array of uint16): their own type
# is only the default for a map or list item
_PLAIN = frozenset({int, float, str, bytes, type(None)})


def _inferred(items: Any) -> Array:
    """An array from a plain list: of its items' one type (an empty one: of void)."""
    if not isinstance(items, (list, tuple)):
        raise LocalProtocolError(f"an array is an Array or a list, not {items!r}")
    kinds = {type_name_of(x) for x in items}
    name = kinds.pop() if len(kinds) == 1 else "void" if not kinds else None
    if name is None:
        raise LocalProtocolError("an array's items must share one type: give an Array")
    return Array(name, tuple(items))


def _unknown_elements(array: Array) -> bytes:
    """An array's head and items where its type is a code the specification does not define
    (as the decoder gives it: ``0xb3``), its items :class:`Opaque` of that code."""
    code = int(array.type, 16)
    if not all(isinstance(x, Opaque) and x.code == code for x in array.items):
        raise LocalProtocolError(f"an array of type code {array.type} holds Opaque values of it")
    items = b"".join(x.data for x in array.items)
    return bytes((code & 0xFF,)) + len(array.items).to_bytes(4, "big") + items


def _wrap(value: int, width: int) -> int:
    value &= _limit(width)
    return value - (1 << (8 * width)) if value >> (8 * width - 1) else value


def _ranges(t: WireType, width: int, ordered: Callable[[int, int], bool]) -> Body:
    """A sequence-set or byte-ranges: (lower, upper) pairs of ``width`` octets each."""
    limit = _limit(width)

    def body(v: Any, check: bool) -> bytes:
        pairs = v.ranges if isinstance(v, (SequenceSet, ByteRanges)) else SequenceSet(v).ranges
        data = []
        for lower, upper in pairs:
            if check and not (0 <= lower <= limit and 0 <= upper <= limit):
                raise LocalProtocolError(f"a {t.name} range ({lower}, {upper}) out of range")
            if check and not ordered(lower, upper):
                raise LocalProtocolError(f"a {t.name} range whose lower end {lower} > {upper}")
            data.append(
                (lower & limit).to_bytes(width, "big") + (upper & limit).to_bytes(width, "big")
            )
        return _prefixed(b"".join(data), t.width, t.name)

    return body


_KINDS: dict[str, Callable[[Encoder, WireType], Body]] = {
    "integer": Encoder._integer,
    "float": Encoder._float,
    "boolean": Encoder._boolean,
    "text": Encoder._text,
    "binary": Encoder._binary,
    "uuid": Encoder._uuid,
    "decimal": Encoder._decimal,
    "void": Encoder._void,
    "bit": Encoder._bit,
    "map": Encoder._map,
    "list": Encoder._list,
    "array": Encoder._array,
    "struct32": Encoder._struct32,
    "sequence-set": Encoder._sequence_set,
    "byte-ranges": Encoder._byte_ranges,
}
