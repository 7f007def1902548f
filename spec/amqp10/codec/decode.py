"""Decoding 1.0 values with the constructors of the model.

Every read checks its bounds against the value that holds it: a size or count that lies, a
constructor the model does not define, a string that is not UTF-8, a symbol that is not ASCII,
nesting deeper than :data:`MAX_DEPTH`, a composite with a mandatory field null or a field of the
wrong type: each is a :class:`DecodeError` (``amqp:decode-error``) with the offset where it was
found, never an IndexError or a struct.error. A described list whose descriptor names a
composite becomes a :class:`Composite` with the specification's defaults for its null fields.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from .errors import DecodeError
from .types import Constructor, FieldInfo, TypeSystem
from .values import (
    INTEGER_CLASSES,
    INTEGERS,
    TYPE_NAMES,
    Array,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Symbol,
    Timestamp,
    UInt,
    ULong,
    type_name_of,
)

__all__ = ["MAX_DEPTH", "Decoder"]

# Python types the encoder takes as plain values but the reader never gives (it gives UInt,
# not int): a field holding one was not read from bytes, and is checked the long way.
_PLAIN_ONLY = frozenset({tuple})

MAX_DEPTH = 64  # compound values inside compound values: deeper is refused

# (buffer, position, end of the enclosing value, depth) -> (value, position after it)
Reader = Callable[[bytes, int, int, int], tuple[Any, int]]

_FORMAT = {(False, 1): "B", (False, 2): "H", (False, 4): "I", (False, 8): "Q"}
_FORMAT.update({(True, w): f.lower() for (_, w), f in list(_FORMAT.items())})
_PREFIX = {1: struct.Struct(">B"), 4: struct.Struct(">I")}
_PREFIX2 = {1: struct.Struct(">BB"), 4: struct.Struct(">II")}


def _short(what: str, pos: int) -> DecodeError:
    return DecodeError(f"{what} runs past the end of its value", pos)


class Decoder:
    """Bytes to values for one type system."""

    def __init__(self, types: TypeSystem, check: bool = True) -> None:
        self.types, self.check = types, check
        self.bodies: dict[int, Reader] = {
            c.code: self._body(c) for c in types.constructors.values()
        }
        self._fields = types.fields
        self._composites = {
            key: name for key, name in types.described.items() if name in types.composites
        }
        self._plans: dict[str, tuple[tuple[FieldInfo, frozenset[type]], ...]] = {}
        self._restricted = {  # described restricted types (message sections), named
            key: name for key, name in types.described.items() if name not in types.composites
        }

    def read(self, buf: bytes, pos: int = 0, end: int | None = None, depth: int = 0) -> Any:
        """One value at ``pos``: (value, position after it)."""
        end = len(buf) if end is None else end
        if pos >= end:
            raise DecodeError("a value was expected, the data ended", pos)
        code = buf[pos]
        if code == 0:
            return self._described(buf, pos, end, depth)
        body = self.bodies.get(code)
        if body is None:
            raise DecodeError(f"unknown constructor 0x{code:02x}", pos)
        return body(buf, pos + 1, end, depth)

    def value(self, data: bytes) -> Any:
        """Exactly one value filling ``data``."""
        value, pos = self.read(data, 0, len(data))
        if pos != len(data):
            raise DecodeError(f"{len(data) - pos} octets after the value", pos)
        return value

    def values(self, data: bytes, pos: int = 0) -> list[Any]:
        """Values one after another to the end of ``data`` (a transfer's message sections)."""
        found, end = [], len(data)
        while pos < end:
            value, pos = self.read(data, pos, end)
            found.append(value)
        return found

    # -- bodies --------------------------------------------------------------------------------

    def _body(self, c: Constructor) -> Reader:
        if c.category == "fixed":
            return _fixed(c)
        if c.category == "variable":
            return _variable(c)
        if c.category == "compound":
            return self._compound(c)
        return self._array(c)

    def _compound(self, c: Constructor) -> Reader:
        pair, width, is_map = _PREFIX2[c.width], c.width, c.type == "map"
        read = self.read

        def body(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            if pos + 2 * width > end:
                raise _short(f"the size and count of a {c.type}", pos)
            size, count = pair.unpack_from(buf, pos)
            stop = pos + width + size
            if size < width or stop > end:
                raise DecodeError(f"a {c.type} of {size} octets runs past its end", pos)
            if depth >= MAX_DEPTH:
                raise DecodeError(f"values nested deeper than {MAX_DEPTH}", pos)
            if count > size - width:  # every value takes an octet at least
                raise DecodeError(f"a {c.type} of {size} octets cannot hold {count} values", pos)
            at = pos + 2 * width
            items = []
            for _ in range(count):
                item, at = read(buf, at, stop, depth + 1)
                items.append(item)
            if at != stop:
                raise DecodeError(f"a {c.type}'s {count} values end before its size says", at)
            if not is_map:
                return items, stop
            if count % 2:
                raise DecodeError(f"a map of {count} values: keys and values come in pairs", pos)
            result = {}
            for k in range(0, count, 2):
                key = items[k]
                try:
                    if key in result:
                        raise DecodeError(f"a map with the key {key!r} twice", pos)
                    result[key] = items[k + 1]
                except TypeError:
                    raise DecodeError(f"a map key that cannot be a key: {key!r}", pos) from None
            return result, stop

        return body

    def _array(self, c: Constructor) -> Reader:
        pair, width = _PREFIX2[c.width], c.width

        def body(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            if pos + 2 * width > end:
                raise _short("the size and count of an array", pos)
            size, count = pair.unpack_from(buf, pos)
            stop = pos + width + size
            if size < width or stop > end:
                raise DecodeError(f"an array of {size} octets runs past its end", pos)
            if depth >= MAX_DEPTH:
                raise DecodeError(f"values nested deeper than {MAX_DEPTH}", pos)
            at = pos + 2 * width
            descriptor = None
            if at < stop and buf[at] == 0:
                descriptor, at = self.read(buf, at + 1, stop, depth + 1)
            if at >= stop:
                raise DecodeError("an array without its element constructor", at)
            code = buf[at]
            element = self.bodies.get(code)
            if element is None:
                raise DecodeError(f"an array of unknown constructor 0x{code:02x}", at)
            fixed = self.types.constructors[code]
            if fixed.category == "fixed" and count * fixed.width > stop - at - 1:
                raise DecodeError(f"an array of {size} octets cannot hold {count} values", pos)
            at += 1
            items = []
            for _ in range(count):
                item, at = element(buf, at, stop, depth + 1)
                items.append(item)
            if at != stop:
                raise DecodeError(f"an array's {count} values end before its size says", at)
            return Array(fixed.type, tuple(items), descriptor), stop

        return body

    # -- described values and composites -----------------------------------------------------

    def _described(self, buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        if depth >= MAX_DEPTH:
            raise DecodeError(f"values nested deeper than {MAX_DEPTH}", pos)
        descriptor, at = self.read(buf, pos + 1, end, depth + 1)
        if type(descriptor) not in (ULong, Symbol):
            raise DecodeError(f"a descriptor is a ulong or a symbol, not {descriptor!r}", pos + 1)
        start = at
        value, at = self.read(buf, at, end, depth + 1)
        name = self._composites.get(descriptor)
        if name is None or type(value) is not list:
            named = self._restricted.get(descriptor)
            return Described(descriptor if named is None else named, value), at
        return self.composite(name, value, start), at

    def composite(self, name: str, items: list[Any], pos: int = 0) -> Composite:
        """A composite's fields from its list, defaults applied; checked unless told not to."""
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = self._plan(name)
        check = self.check
        if len(items) > len(plan) and check:
            raise DecodeError(f"{name} has {len(plan)} fields, not {len(items)}", pos)
        fields = {}
        count = len(items)
        for index, (f, fast) in enumerate(plan):
            value = items[index] if index < count else None
            if value is None:
                if f.mandatory and check:
                    raise DecodeError(f"{name}: mandatory field {f.name!r} is null", pos)
                value = f.default
            elif check and type(value) not in fast and not self._fits(f, value):
                raise DecodeError(f"{name}: {f.name} is {f.type}, not {value!r}", pos)
            fields[f.name] = value
        return Composite(name, fields)

    def _plan(self, name: str) -> tuple[tuple[FieldInfo, frozenset[type]], ...]:
        """Each field of a composite with the Python types that fit it for sure (what the
        reader gives for its primitive type; others go through :meth:`_fits`)."""
        plan = []
        for f in self._fields[name]:
            if f.primitive is not None and f.descriptor is None:
                wanted = {f.primitive}
            elif f.primitive is None and f.composite is None and f.requires:
                wanted = self.types.primitives_providing(f.requires)
            else:
                wanted = set()
            fast = {t for t, n in TYPE_NAMES.items() if n in wanted and t not in _PLAIN_ONLY}
            plan.append((f, frozenset(fast)))
        return tuple(plan)

    def _fits(self, f: FieldInfo, value: Any) -> bool:
        own = type_name_of(value)
        if f.multiple and isinstance(value, Array):
            return f.primitive is None or value.type == f.primitive
        if f.primitive is not None:
            if f.descriptor is not None and isinstance(value, Described):
                return type_name_of(value.value) == f.primitive
            return own == f.primitive
        if isinstance(value, Composite):
            if f.composite is not None:
                return value.name == f.composite
            return self.types.provides(value.name, f.requires)
        if isinstance(value, Described):
            return f.composite is None  # what the model does not know is the peer's to know
        return bool(f.requires) and own in self.types.primitives_providing(f.requires)


def _fixed(c: Constructor) -> Reader:
    width = c.width
    if width == 0:
        constant = _ZERO.get(c.name or c.type, _ZERO.get(c.type))
        if c.type == "list":
            return lambda buf, pos, end, depth: ([], pos)
        return lambda buf, pos, end, depth: (constant, pos)
    if c.type in INTEGERS:
        signed, _ = INTEGERS[c.type]
        unpack, typed = (
            struct.Struct(">" + _FORMAT[signed, width]).unpack_from,
            INTEGER_CLASSES[c.type],
        )
        convert: Callable[[Any], Any] = lambda raw: typed(raw[0])  # noqa: E731
    elif c.type == "boolean":
        unpack = struct.Struct(">B").unpack_from
        convert = _boolean
    else:
        unpack, convert = _OTHER[c.type]

    def body(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        stop = pos + width
        if stop > end:
            raise _short(f"a {c.type} of {width} octets", pos)
        try:
            return convert(unpack(buf, pos)), stop
        except (ValueError, OverflowError) as e:  # a char past U+10FFFF, a boolean of 2
            raise DecodeError(f"a {c.type} that cannot be: {e}", pos) from None

    return body


def _variable(c: Constructor) -> Reader:
    prefix, width, convert = _PREFIX[c.width], c.width, _TEXT[c.type]

    def body(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        if pos + width > end:
            raise _short(f"the size of a {c.type}", pos)
        (size,) = prefix.unpack_from(buf, pos)
        start = pos + width
        stop = start + size
        if stop > end:
            raise DecodeError(f"a {c.type} of {size} octets runs past its end", pos)
        try:
            return convert(buf[start:stop]), stop
        except UnicodeDecodeError as e:
            raise DecodeError(f"a {c.type} that is not {e.encoding}", start + e.start) from None

    return body


def _boolean(raw: tuple[int]) -> bool:
    if raw[0] > 1:
        raise ValueError(f"boolean octet {raw[0]}")
    return raw[0] == 1


_ZERO: dict[str, Any] = {
    "null": None,
    "true": True,
    "false": False,
    "uint0": UInt(0),
    "ulong0": ULong(0),
}
_OTHER: dict[str, tuple[Callable[..., Any], Callable[[Any], Any]]] = {
    "float": (struct.Struct(">f").unpack_from, lambda raw: Float(raw[0])),
    "double": (struct.Struct(">d").unpack_from, lambda raw: raw[0]),
    "char": (struct.Struct(">I").unpack_from, lambda raw: Char(chr(raw[0]))),
    "timestamp": (struct.Struct(">q").unpack_from, lambda raw: Timestamp(raw[0])),
    "uuid": (struct.Struct(">16s").unpack_from, lambda raw: uuid.UUID(bytes=raw[0])),
    "decimal32": (struct.Struct(">4s").unpack_from, lambda raw: Decimal32(raw[0])),
    "decimal64": (struct.Struct(">8s").unpack_from, lambda raw: Decimal64(raw[0])),
    "decimal128": (struct.Struct(">16s").unpack_from, lambda raw: Decimal128(raw[0])),
}
_TEXT: dict[str, Callable[[bytes], Any]] = {
    "binary": bytes,
    "string": lambda b: b.decode("utf-8"),
    "symbol": lambda b: Symbol(b.decode("ascii")),
}
