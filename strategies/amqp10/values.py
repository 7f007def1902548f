"""1.0 values read from a blob: a generator per type of the model, compiled once.

A primitive's generator gives its plainest value for zero bytes and a boundary value about a
third of the time (0, 1, the extremes of the width; empty, one-octet and 255/256-octet strings;
NaN and infinities); a restricted type with choices picks one of them; a composite fills its
mandatory fields always and each other field about half the time; a field of any type (``*``)
takes a type that provides what it requires; a ``multiple`` field is an array of its type.
Nesting of lists and maps stops at :data:`MAX_NESTING`.
"""

from __future__ import annotations

import functools
import math
import struct
import uuid
from collections.abc import Callable
from typing import Any

from amqpfuzz.spec.amqp10.codec import (
    Array,
    Char,
    Codec,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Symbol,
    Timestamp,
)
from amqpfuzz.spec.amqp10.codec.types import FieldInfo
from amqpfuzz.spec.amqp10.codec.values import INTEGER_CLASSES, INTEGERS

from ..source import Source

__all__ = ["MAX_NESTING", "Gen", "Values"]

Gen = Callable[[Source], Any]
MAX_NESTING = 3
_TEXT = "abcdefghijklmnopqrstuvwxyz0123456789-_.:/ " + "éßж中😀"
_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:"
_SIMPLE = ("null", "boolean", "uint", "ulong", "int", "long", "string", "symbol", "binary")


class Values:
    """Generators of 1.0 values for one codec's type system."""

    def __init__(self, codec: Codec) -> None:
        self.codec, self.types = codec, codec.types

    @functools.cache  # noqa: B019 - one per type, for the life of the codec's Values
    def of(self, type_name: str) -> Gen:
        """The generator of a named type (primitive, restricted or composite)."""
        if type_name in self.types.composites:
            return self.composite(type_name)
        choices = self.types.choices_of(type_name)
        primitive = self.types.primitive_of(type_name)
        if primitive is None:
            raise KeyError(f"no values of {type_name!r}")
        if choices:
            options = tuple(
                self.types.value_of(primitive, v, {}) for v in dict.fromkeys(choices.values())
            )
            return lambda src: src.pick(options)
        descriptor = self.types.descriptor_of(type_name)
        base = self.primitive(primitive)
        if descriptor is not None:
            return lambda src: Described(type_name, base(src))
        return base

    def primitive(self, name: str, depth: int = 0) -> Gen:
        if name in INTEGERS:
            return _integer(name)
        simple = _PRIMITIVES.get(name)
        if simple is not None:
            return simple
        if name == "list":
            return lambda src: [self.any(src, depth + 1) for _ in range(src.below(4))]
        if name == "map":
            return lambda src: {
                self.key(src): self.any(src, depth + 1) for _ in range(src.below(4))
            }
        if name == "array":
            return self.array_of(src_type=None)
        raise KeyError(f"no values of {name!r}")

    def any(self, src: Source, depth: int = 0) -> Any:
        """A value of a type drawn too (compound ones while nesting allows)."""
        names = _SIMPLE if depth >= MAX_NESTING else (*_SIMPLE, "list", "map", "array", "double")
        name = src.pick(names)
        return self.primitive(name, depth)(src)

    def key(self, src: Source) -> Any:
        return Symbol(_word(src, _ASCII, 12) or "k")

    def array_of(self, src_type: str | None) -> Gen:
        def gen(src: Source) -> Array:
            name = src_type or src.pick(("symbol", "uint", "string", "boolean", "long"))
            item = self.primitive(name)
            return Array(name, tuple(item(src) for _ in range(src.below(4))))

        return gen

    # -- composites ---------------------------------------------------------------------------

    def composite(self, name: str) -> Gen:
        fields = [(f, self.field(f)) for f in self.types.fields[name]]

        def gen(src: Source) -> Composite:
            values = {}
            for f, value in fields:
                if f.mandatory or src.byte() & 1:
                    values[f.name] = value(src)
            return Composite(name, values)

        return gen

    def field(self, f: FieldInfo) -> Gen:
        if f.primitive is None and f.composite is None:
            return self.providing(f.requires)
        single = self.of(f.type)
        if not f.multiple:
            return single
        primitive = f.primitive or "symbol"
        choices = self.types.choices_of(f.type)

        def many(src: Source) -> Any:
            items = tuple(single(src) for _ in range(src.below(4)))
            if choices or primitive == "symbol":
                items = tuple(Symbol(x) for x in items)
            return Array(primitive, items)

        return many

    def providing(self, archetypes: tuple[str, ...]) -> Gen:
        """A value of a type that provides one of ``archetypes`` (any value if none says)."""
        names = tuple(n for a in archetypes for n in self.types.providers.get(a, ()))
        if not names:  # nothing in the specification provides it (global-tx-id): left null
            return lambda src: None
        gens = tuple(self.of(n) if n in self.types.composites else self._plain(n) for n in names)
        return lambda src: src.pick(gens)(src)

    def _plain(self, name: str) -> Gen:
        """A restricted type's value as its own primitive type says (``message-id-ulong``'s
        value is a ULong, so that the field's encoding says which it is)."""
        primitive = self.types.primitive_of(name)
        return self.primitive(primitive) if primitive is not None else self.of(name)

    def message(self) -> Gen:
        """A message's sections in the order of the specification, each present about half
        the time, the body one of data, amqp-sequence or amqp-value."""
        sections = [t.name for t in self.codec.spec.sections]
        bodies = [n for n in sections if n in ("data", "amqp-sequence", "amqp-value")]
        gens = {n: self.of(n) if n in self.types.composites else self.section(n) for n in sections}

        def gen(src: Source) -> list[Any]:
            body = src.pick(tuple(bodies))
            found = []
            for name in sections:
                if name in bodies:
                    if name == body:
                        found.append(gens[name](src))
                elif src.byte() & 1:
                    found.append(gens[name](src))
            return found

        return gen

    def section(self, name: str) -> Gen:
        """The generator of a message section that is not a composite (a described value)."""
        t = self.codec.spec.type(name)
        source = getattr(t, "source", "*")
        if source == "*":
            return lambda src: Described(name, self.any(src))
        if name in ("application-properties",):
            text = _PRIMITIVES["string"]
            return lambda src: Described(
                name, {text(src) or "k": self.primitive("long")(src) for _ in range(src.below(4))}
            )
        base = self.of(source)
        return lambda src: Described(name, base(src))


def _word(src: Source, alphabet: str, longest: int) -> str:
    return "".join(alphabet[src.below(len(alphabet))] for _ in range(src.below(longest + 1)))


def _integer(name: str) -> Gen:
    signed, width = INTEGERS[name]
    bits = 8 * width
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    edges = tuple(sorted({0, 1, high, low, min(high, 255), min(high, 256), max(low, -1)}))
    typed = INTEGER_CLASSES[name]

    def gen(src: Source) -> int:
        if src.edge():
            edge: int = typed(src.pick(edges))
            return edge
        value = src.uint(bits)
        if signed and value > high:
            value -= 1 << bits
        drawn: int = typed(value)
        return drawn

    return gen


def _text(alphabet: str, edge_sizes: tuple[int, ...], typed: Callable[[str], Any]) -> Gen:
    def gen(src: Source) -> Any:
        if src.edge():
            return typed("x" * src.pick(edge_sizes))
        return typed(_word(src, alphabet, 16))

    return gen


def _binary(src: Source) -> bytes:
    if src.edge():
        return b"\xff" * int(src.pick((0, 1, 255, 256)))
    return src.take(src.below(17))


def _double(src: Source) -> float:
    if src.edge():
        return float(src.pick((0.0, -0.0, 1.0, math.inf, -math.inf, 1e308, 5e-324)))
    value = float(struct.unpack(">d", src.take(8))[0] if src.byte() & 1 else src.below(1000))
    return 0.0 if math.isnan(value) else value  # NaN is not equal to itself: kept out


def _float(src: Source) -> Float:
    if src.edge():
        return Float(src.pick((0.0, 1.0, math.inf, -math.inf)))
    return Float(struct.unpack(">f", struct.pack(">f", src.below(1000) / 4))[0])


def _char(src: Source) -> Char:
    if src.edge():
        return Char(src.pick(("\x00", "\U0010ffff", "é")))
    return Char(_TEXT[src.below(len(_TEXT))])


_PRIMITIVES: dict[str, Gen] = {
    "null": lambda src: None,
    "boolean": lambda src: bool(src.byte() & 1),
    "float": _float,
    "double": _double,
    "decimal32": lambda src: Decimal32(src.take(4)),
    "decimal64": lambda src: Decimal64(src.take(8)),
    "decimal128": lambda src: Decimal128(src.take(16)),
    "char": _char,
    "timestamp": lambda src: Timestamp(src.uint(40)),
    "uuid": lambda src: uuid.UUID(bytes=src.take(16)),
    "binary": _binary,
    "string": _text(_TEXT, (0, 1, 255, 256), str),
    "symbol": _text(_ASCII, (0, 1, 255, 256), Symbol),
}
