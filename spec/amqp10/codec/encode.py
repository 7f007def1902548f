"""Encoding 1.0 values, described types and composites, with the constructors of the model.

A value is sent in the smallest encoding its type has for it (``uint`` 0 as ``uint0``, 200 as
``smalluint``; a short string as ``str8-utf8``; an empty list as ``list0``); a composite as a
described list, its descriptor as a ulong, its trailing null fields left out. The checked
encoder refuses (:class:`LocalProtocolError`) what the specification forbids: a value out of
its type's range, a symbol that is not ASCII, a mandatory field left null, a field of the wrong
type. ``check=False`` sends those anyway, for the fuzzer.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import LocalProtocolError
from .types import Constructor, FieldInfo, TypeSystem
from .values import INTEGERS, TYPE_NAMES, Array, Composite, Described, type_name_of

__all__ = ["Encoder"]

Body = Callable[[Any], bytes]

_PACK = {
    (False, 1): struct.Struct(">B"),
    (False, 2): struct.Struct(">H"),
    (False, 4): struct.Struct(">I"),
    (False, 8): struct.Struct(">Q"),
    (True, 1): struct.Struct(">b"),
    (True, 2): struct.Struct(">h"),
    (True, 4): struct.Struct(">i"),
    (True, 8): struct.Struct(">q"),
}
_FLOAT, _DOUBLE, _U32 = struct.Struct(">f"), struct.Struct(">d"), struct.Struct(">I")
_PREFIX = {1: struct.Struct(">B"), 4: struct.Struct(">I")}
_PREFIX2 = {1: struct.Struct(">BB"), 4: struct.Struct(">II")}


def _limit(width: int) -> int:
    return (1 << (8 * width)) - 1


class Encoder:
    """Values to bytes for one type system."""

    def __init__(self, types: TypeSystem) -> None:
        self.types = types
        self._bodies: dict[int, Body] = {c.code: self._body(c) for c in types.constructors.values()}
        self._by_type: dict[str, Callable[[Any], bytes]] = {
            name: self._chooser(name) for name in types.encodings
        }
        self._plans: dict[str, _Plan] = {}
        self._named: dict[str, tuple[bytes, Callable[[Any], bytes]]] = {}
        self._empty_list = self._by_type["list"]([])
        self._lists = [  # the list encodings with a size, narrowest first
            (bytes((e.code,)), e.width, _limit(e.width), _PREFIX2[e.width].pack)
            for e in sorted(types.encodings["list"], key=lambda e: e.width)
            if e.width
        ]
        self._descriptors: dict[str, bytes] = {
            name: b"\x00" + self._by_type["ulong"](t.descriptor.value)
            for name, t in types.composites.items()
        }

    # -- values ------------------------------------------------------------------------------

    def value(self, value: Any, type_name: str | None = None) -> bytes:
        """``value`` encoded as ``type_name`` (a primitive or restricted type), or as its own
        type: a typed value as itself, a plain one as the obvious type (see values)."""
        if isinstance(value, Composite):
            return self.composite(value)
        if isinstance(value, Described):
            return self.described(value)
        if type_name is None:
            type_name = type_name_of(value)
            if type_name is None:
                raise LocalProtocolError(f"no AMQP 1.0 type for a {type(value).__name__}")
        else:
            primitive = self.types.primitive_of(type_name)
            if primitive is None:
                raise LocalProtocolError(f"{type_name} is not a primitive or restricted type")
            type_name = primitive
        return self._by_type[type_name](value)

    def described(self, value: Described) -> bytes:
        """A described value; a descriptor that is a plain ``str`` names a described type of
        the model (``"data"``, ``"application-properties"``): its code is sent, and the value
        as the type's source (a :class:`Symbol` is sent as the symbol it is)."""
        descriptor = value.descriptor
        if type(descriptor) is str:
            named = self._named.get(descriptor)
            if named is None:
                code = (
                    self.types.descriptor_of(descriptor) if descriptor in self.types.named else None
                )
                if code is None:
                    raise LocalProtocolError(f"no described type {descriptor!r} in AMQP 1.0")
                source = self.types.primitive_of(descriptor)
                encode = self._by_type[source] if source is not None else self.value
                named = self._named[descriptor] = (b"\x00" + self._by_type["ulong"](code), encode)
            lead, encode = named
            return lead + encode(value.value)
        return b"\x00" + self.value(descriptor) + self.value(value.value)

    def encoded_as(self, code: int, value: Any) -> bytes:
        """``value`` with the constructor ``code``, whatever its own type (a smalluint of 0, a
        uint of 3 in four octets)."""
        body = self._bodies.get(code)
        if body is None:
            raise LocalProtocolError(f"no AMQP 1.0 encoding 0x{code:02x}")
        try:
            return bytes((code,)) + body(value)
        except _TooBig:
            raise LocalProtocolError(f"{value!r} is too large for 0x{code:02x}") from None

    def _chooser(self, name: str) -> Callable[[Any], bytes]:
        """The encoder of one primitive type: the smallest of its encodings that holds the
        value."""
        encodings = self.types.encodings[name]
        bodies = self._bodies
        if name == "boolean":
            named = {e.name: e.code for e in encodings}
            true, false = bytes((named["true"],)), bytes((named["false"],))
            return lambda v: true if v else false
        if name in INTEGERS:
            signed, _ = INTEGERS[name]
            zero = next((e.code for e in encodings if e.width == 0), None)
            sized = sorted((e.width, e.code) for e in encodings if e.width)
            steps = [
                (
                    -(1 << (8 * w - 1)) if signed else 0,
                    (1 << (8 * w - 1)) - 1 if signed else _limit(w),
                    bytes((c,)),
                    _PACK[signed, w].pack,
                )
                for w, c in sized
            ]

            def integer(v: Any) -> bytes:
                if not isinstance(v, int):
                    raise LocalProtocolError(f"a {name} is an integer, not {v!r}")
                if v == 0 and zero is not None:
                    return bytes((zero,))
                for low, high, code, pack in steps:
                    if low <= v <= high:
                        return code + pack(v)
                raise LocalProtocolError(f"{v} is out of range for {name}")

            return integer
        if name in ("list", "map", "array"):
            empty = next((e.code for e in encodings if e.width == 0), None)
            wide = [e.code for e in sorted(encodings, key=lambda e: e.width) if e.width]

            def compound(v: Any) -> bytes:
                if empty is not None and not v:
                    return bytes((empty,))
                return self._compound(wide, v)

            return compound
        if len(encodings) == 1 or all(e.category == "fixed" for e in encodings):
            code = encodings[0].code
            body = bodies[code]
            lead = bytes((code,))
            return lambda v: lead + body(v)
        # variable: the narrowest size prefix that holds the value
        payload = _PAYLOADS[name]
        sized = sorted((e.width, e.code) for e in encodings)

        prefixes = [(_limit(w), bytes((c,)), _PREFIX[w].pack) for w, c in sized]

        def variable(v: Any) -> bytes:
            data = payload(v)
            size = len(data)
            for limit, lead, pack in prefixes:
                if size <= limit:
                    prefixed: bytes = lead + pack(size) + data
                    return prefixed
            raise LocalProtocolError(f"a {name} of {size} octets is too long")

        return variable

    def _compound(self, codes: Sequence[int], value: Any) -> bytes:
        for code in codes:
            try:
                return bytes((code,)) + self._bodies[code](value)
            except _TooBig:
                continue
        raise LocalProtocolError("a compound value too large for any encoding")

    # -- bodies: what follows a constructor --------------------------------------------------

    def _body(self, c: Constructor) -> Body:
        if c.category == "fixed":
            return self._fixed(c)
        if c.category == "variable":
            prefix, payload = _PREFIX[c.width], _PAYLOADS[c.type]
            return lambda v: _sized(prefix, payload(v), c.width)
        if c.category == "compound":
            return self._compound_body(c)
        return self._array_body(c)

    def _fixed(self, c: Constructor) -> Body:
        if c.width == 0:
            return lambda v: b""
        if c.type in INTEGERS:
            signed, _ = INTEGERS[c.type]
            pack, name = _PACK[signed, c.width].pack, c.type

            def integer(v: Any) -> bytes:
                try:
                    return pack(v)
                except struct.error:
                    raise LocalProtocolError(
                        f"{v!r} does not fit 0x{c.code:02x} ({name})"
                    ) from None

            return integer
        special = _FIXED.get(c.type)
        if special is None:
            raise LocalProtocolError(f"no fixed encoding of {c.type}")  # pragma: no cover
        return special

    def _compound_body(self, c: Constructor) -> Body:
        pair, limit = _PREFIX2[c.width], _limit(c.width)
        is_map = c.type == "map"

        def body(v: Any) -> bytes:
            if is_map:
                items = b"".join(self.value(k) + self.value(x) for k, x in _pairs(v))
                count = 2 * len(v)
            else:
                items = b"".join([self.value(x) for x in v])
                count = len(v)
            size = len(items) + c.width
            if size > limit or count > limit:
                raise _TooBig
            return pair.pack(size, count) + items

        return body

    def _array_body(self, c: Constructor) -> Body:
        pair, limit = _PREFIX2[c.width], _limit(c.width)

        def body(v: Any) -> bytes:
            array = v if isinstance(v, Array) else Array(_element_type(v), tuple(v))
            constructor, element = self.element(array)
            items = b"".join([element(x) for x in array.items])
            size = len(items) + len(constructor) + c.width
            if size > limit or len(array.items) > limit:
                raise _TooBig
            return pair.pack(size, len(array.items)) + constructor + items

        return body

    def element(self, array: Array) -> tuple[bytes, Body]:
        """The one constructor of an array's elements (the narrowest that holds them all) and
        the encoder of an element's body."""
        primitive = self.types.primitive_of(array.type)
        if primitive is None:
            raise LocalProtocolError(f"an array of {array.type}: arrays hold primitive types")
        candidates = [
            e for e in sorted(self.types.encodings[primitive], key=lambda e: e.width) if e.width
        ] or list(self.types.encodings[primitive])
        lead = b"" if array.descriptor is None else b"\x00" + self.value(array.descriptor)
        for e in candidates:
            body = self._bodies[e.code]
            try:
                for item in array.items:
                    body(item)
            except (LocalProtocolError, _TooBig):
                continue
            return lead + bytes((e.code,)), body
        raise LocalProtocolError(f"no encoding of {primitive} holds every element")

    # -- composites --------------------------------------------------------------------------

    def composite(self, c: Composite, check: bool = True) -> bytes:
        """A composite as a described list of its fields in order, trailing nulls left out;
        ``check=False`` sends a mandatory null or a value of the wrong type as given."""
        plan = self._plans.get(c.name)
        if plan is None:
            plan = self._plans[c.name] = self._plan(c.name)
        given = c.fields
        if not given.keys() <= plan.names:
            unknown = sorted(given.keys() - plan.names)[0]
            raise LocalProtocolError(f"{c.name} has no field {unknown!r}")
        if check:
            for name in plan.mandatory:
                if given.get(name) is None:
                    raise LocalProtocolError(f"{c.name}: mandatory field {name!r} is null")
        items = []
        last = 0  # the fields after the last that is set are left out
        for f, fast, encode in plan.fields:
            v = given.get(f.name)
            if v is None:
                items.append(b"\x40")
                continue
            if type(v) in fast:  # the field's own type, plain or typed: the common case
                items.append(encode(v))
            else:
                items.append(self.field(f, v, check))
            last = len(items)
        del items[last:]
        return plan.descriptor + self._list(items)

    def _plan(self, name: str) -> _Plan:
        infos = self.types.fields.get(name)
        if infos is None:
            raise LocalProtocolError(f"no composite type {name!r} in AMQP 1.0")
        fields: list[tuple[FieldInfo, frozenset[type], Callable[[Any], bytes]]] = []
        for f in infos:
            primitive = f.primitive
            if primitive is None:  # any type: the primitives that provide what it requires
                owns = self.types.primitives_providing(f.requires) if f.requires else set()
                fast = {t for t, n in TYPE_NAMES.items() if n in owns}
                fields.append((f, frozenset(fast), self.value))
                continue
            fast = {t for t, n in TYPE_NAMES.items() if n == primitive} | set(
                _PLAIN.get(primitive, ())
            )
            if f.multiple:
                fast -= {list, tuple}
            encode = self._by_type[primitive]
            if f.descriptor is not None:
                fast = set()  # a described restricted type: the slow path adds the descriptor
            fields.append((f, frozenset(fast), encode))
        return _Plan(
            descriptor=self._descriptors[name],
            names=frozenset(f.name for f in infos),
            mandatory=tuple(f.name for f in infos if f.mandatory),
            fields=tuple(fields),
        )

    def field(self, f: FieldInfo, value: Any, check: bool = True) -> bytes:
        """One field's value: as the field's type when it is a plain value, as its own when
        it says (a typed value, a composite, a described one)."""
        if value is None:
            return b"\x40"
        if f.multiple and f.primitive is not None and type(value) in (list, tuple):
            return self._by_type["array"](Array(f.primitive, tuple(value)))
        primitive = f.primitive
        if primitive is None or type(value) not in _PLAIN.get(primitive, ()):
            # a typed value, a composite, a described one: sent as what it is
            if check and not self._fits(f, value, type_name_of(value)):
                raise LocalProtocolError(f"{f.name} is {f.type}, not {value!r}")
            return self.value(value)
        encoded = self._by_type[primitive](value)
        if f.descriptor is not None:
            return b"\x00" + self._by_type["ulong"](f.descriptor) + encoded
        return encoded

    def _fits(self, f: FieldInfo, value: Any, own: str | None) -> bool:
        if own is not None and own == f.primitive:
            return True
        if isinstance(value, Composite):
            if f.composite is not None:
                return value.name == f.composite
            return bool(f.requires) and self.types.provides(value.name, f.requires)
        if isinstance(value, Described):
            return f.primitive is None  # a described value the model may not know
        if f.primitive is None and f.requires:
            return own in self.types.primitives_providing(f.requires)
        return f.multiple and isinstance(value, Array) and value.type == f.primitive

    def _list(self, items: list[bytes]) -> bytes:
        if not items:
            return self._empty_list
        data = b"".join(items)
        for lead, width, limit, pair in self._lists:
            size = len(data) + width
            if size <= limit and len(items) <= limit:
                return lead + pair(size, len(items)) + data
        raise LocalProtocolError("a composite too large for any list encoding")


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a composite is encoded: its descriptor's bytes, its field names, and per field the
    Python types it takes as its own and their encoder."""

    descriptor: bytes
    names: frozenset[str]
    mandatory: tuple[str, ...]
    fields: tuple[tuple[FieldInfo, frozenset[type], Callable[[Any], bytes]], ...]


class _TooBig(Exception):
    """A compound value that does not fit this encoding's prefixes (the next one is tried)."""


def _sized(prefix: struct.Struct, data: bytes, width: int) -> bytes:
    if len(data) > _limit(width):
        raise _TooBig
    return prefix.pack(len(data)) + data


def _pairs(v: Any) -> Sequence[tuple[Any, Any]]:
    if isinstance(v, Mapping):
        return list(v.items())
    return list(v)


def _element_type(items: Sequence[Any]) -> str:
    kinds = {type_name_of(x) for x in items}
    if len(kinds) != 1 or None in kinds:
        raise LocalProtocolError("an array's elements must share one primitive type")
    return str(kinds.pop())


def _utf8(v: Any) -> bytes:
    if not isinstance(v, str):
        raise LocalProtocolError(f"a string is text, not {v!r}")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise LocalProtocolError(f"a string that is not valid Unicode: {e.reason}") from None


def _ascii(v: Any) -> bytes:
    if not isinstance(v, str):
        raise LocalProtocolError(f"a symbol is text, not {v!r}")
    try:
        return v.encode("ascii")
    except UnicodeEncodeError:
        raise LocalProtocolError(f"a symbol must be ASCII, not {v!r}") from None


def _binary(v: Any) -> bytes:
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise LocalProtocolError(f"binary is octets, not {v!r}")
    return bytes(v)


_PAYLOADS: dict[str, Callable[[Any], bytes]] = {
    "binary": _binary,
    "string": _utf8,
    "symbol": _ascii,
}


def _decimal(width: int) -> Body:
    def body(v: Any) -> bytes:
        if len(v) != width:
            raise LocalProtocolError(f"a decimal of {width} octets, not {len(v)}")
        return bytes(v)

    return body


def _uuid(v: Any) -> bytes:
    return v.bytes if isinstance(v, uuid.UUID) else uuid.UUID(bytes=bytes(v)).bytes


def _char(v: Any) -> bytes:
    if len(v) != 1:
        raise LocalProtocolError(f"a char is one code point, not {v!r}")
    return _U32.pack(ord(v))


def _packed(packer: struct.Struct, name: str) -> Body:
    def body(v: Any) -> bytes:
        try:
            return packer.pack(v)
        except (struct.error, OverflowError):
            raise LocalProtocolError(f"{v!r} does not fit a {name}") from None

    return body


# the plain Python values a field of a primitive type takes as that type
_PLAIN: dict[str, tuple[type, ...]] = {
    **{name: (int,) for name in INTEGERS},
    "null": (type(None),),
    "boolean": (bool,),
    "float": (float, int),
    "double": (float, int),
    "char": (str,),
    "string": (str,),
    "symbol": (str,),
    "binary": (bytes,),
    "decimal32": (bytes,),
    "decimal64": (bytes,),
    "decimal128": (bytes,),
    "uuid": (uuid.UUID,),
    "list": (list, tuple),
    "map": (dict,),
    "array": (list, tuple, Array),
}

_FIXED: dict[str, Body] = {
    "null": lambda v: b"",
    "boolean": lambda v: b"\x01" if v else b"\x00",
    "float": _packed(_FLOAT, "float"),
    "double": _packed(_DOUBLE, "double"),
    "decimal32": _decimal(4),
    "decimal64": _decimal(8),
    "decimal128": _decimal(16),
    "char": _char,
    "uuid": _uuid,
}
