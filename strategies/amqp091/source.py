"""Field values decoded from a blob of bytes that Hypothesis draws in one choice.

Hypothesis spends some twenty microseconds on every choice it makes; a method with five fields
drawn field by field would cost more than a round trip to a broker. So the strategies make a
handful of structural choices with Hypothesis (which method, which operator, the body) and draw
every field value from one ``bytes`` choice, read by a :class:`~..source.Source`. Shrinking
still works: Hypothesis shortens and zeroes the blob, and a zero byte always reads as the
simplest value (``0``, ``False``, the empty string, the first alternative), so failing cases
shrink towards zero arguments.

Value generators are compiled once per field from the spec model (its wire type and asserts)
and honour those asserts; about a third of the time they pick a boundary value instead
(0, 1, the maximum of the width; strings of 0, 1, 127, 128 and the maximum length allowed).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from amqpfuzz.spec.amqp091 import Field
from amqpfuzz.spec.amqp091.asserts import limits
from amqpfuzz.spec.amqp091.codec import FieldValue
from amqpfuzz.spec.amqp091.codec.tables import WRITTEN
from amqpfuzz.spec.amqp091.model import ZERO_VALUES

from ..source import Source

__all__ = [
    "INT_WIDTHS",
    "NAME_ALPHABET",
    "Gen",
    "Source",
    "field_generator",
    "table_generator",
    "table_key",
    "type_generator",
]

INT_WIDTHS = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}
# Characters for names where no assert says more: readable, and accepted in every broker's names.
NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:"
# Free text: mostly ASCII, with characters of two, three and four UTF-8 octets mixed in. Never
# NUL: 0-9-1 says short strings "may not contain binary zero octets".
_TEXT = NAME_ALPHABET + " /#*$!?" + "éßж中日本😀𝄞"
# Patterns we generate from directly: a literal prefix, then any number of one character class.
_PREFIXED_CLASS = re.compile(r"^([^\[\]\\*+?(){}|.^$]*)(\[[^\]]+\])([*+])$")


Gen = Callable[[Source], Any]


def _ints(bits: int, notnull: bool) -> Gen:
    top = (1 << bits) - 1
    edges = tuple(
        sorted({0, 1, 2, top // 2, top // 2 + 1, top - 1, top} - ({0} if notnull else set()))
    )

    def gen(src: Source) -> int:
        if src.edge():
            return int(src.pick(edges))
        value = src.uint(bits)
        return value or (1 if notnull else 0)

    return gen


@functools.cache
def _pattern(pattern: str | None) -> tuple[str, str, int]:
    """The literal prefix, the printable ASCII characters and the least number of them that a
    ``prefix[class]*`` (or ``+``) pattern admits."""
    if pattern is None:
        return "", _TEXT, 0
    parts = _PREFIXED_CLASS.match(pattern)
    if parts is None:
        raise ValueError(f"cannot generate from the pattern {pattern!r}")
    allowed = re.compile(parts.group(2))
    chars = "".join(c for c in map(chr, range(32, 127)) if allowed.fullmatch(c))
    return parts.group(1), chars, 1 if parts.group(3) == "+" else 0


def _strings(notnull: bool, max_length: int, pattern: str | None, *, text: bool) -> Gen:
    literal, alphabet, least = _pattern(pattern)
    ascii_only = "".join(c for c in alphabet if ord(c) < 128)
    low = max(1 if notnull else 0, len(literal) + least)
    lengths = (0, 1, 127, 128, max_length - 1, max_length)
    edges = tuple(sorted({n for n in lengths if low <= n <= max_length}))
    general_max = min(max_length // 4, 40) if text else min(max_length, 64)

    def gen(src: Source) -> Any:
        if src.edge():  # about length, not content: a short seed repeated to the edge length
            size = src.pick(edges) - len(literal)
            seed = "".join(ascii_only[src.below(len(ascii_only))] for _ in range(3))
            value = literal + (seed * size)[:size]
        else:
            size = max(low - len(literal), src.below(general_max + 1))
            value = literal + "".join(alphabet[src.below(len(alphabet))] for _ in range(size))
            while len(value.encode("utf-8")) > max_length:
                value = value[:-1]
        return value if text else value.encode("utf-8")

    return gen


def _scalar(kind: str, typed: bool) -> Gen:
    if kind == "bool":
        return lambda src: bool(src.byte() & 1)
    if kind in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        bits = int(kind.lstrip("uint"))
        unsigned = _ints(bits, False)
        if kind.startswith("uint"):
            return unsigned
        half = 1 << (bits - 1)
        return lambda src: ((unsigned(src) + half) % (1 << bits)) - half
    if kind == "float":
        return lambda src: float(src.pick((0.0, 1.5, -2.25, 3.4028234663852886e38, float("inf"))))
    if kind == "double":
        return lambda src: float(src.pick((0.0, 0.1, -1e300, 2.5, float("-inf"), 5e-324)))
    if kind == "decimal":
        return lambda src: Decimal(int.from_bytes(src.take(4), "big", signed=True)).scaleb(
            -src.below(12)
        )
    if kind in ("longstr", "bytes"):
        raw = _strings(False, 64, None, text=False)
        if kind == "bytes" or typed:
            return lambda src: src.take(src.below(33)) if src.byte() & 1 else raw(src)
        return _strings(False, 256, None, text=True)
    if kind == "shortstr":
        short = _strings(False, 255, None, text=True)
        return (lambda src: short(src).encode("utf-8")) if typed else short
    if kind == "timestamp":
        stamp = _ints(64 if typed else 33, False)
        return stamp
    if kind == "void":
        return lambda src: None
    raise AssertionError(kind)


# plain values of these kinds are inferred back to their own type code; others travel wrapped
_PLAIN_KINDS = frozenset({"bool", "int32", "double", "decimal", "longstr", "bytes", "void"})


def table_key(src: Source) -> str:
    """A key as the 0-9-1 grammar has it: a letter, ``$`` or ``#``, then letters, digits and
    underscores, at most 128 characters; never ``x-``, which brokers reserve for arguments."""
    if src.edge():
        return "k" * 128
    first = "abcdefghijklmnopqrstuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ$#"[src.below(53)]
    rest = "".join(
        "abcdefghijklmnopqrstuvwxyz0123456789_"[src.below(37)] for _ in range(src.below(9))
    )
    return first + rest


@functools.lru_cache(maxsize=64)
def table_generator(dialect: str, typed: bool, max_depth: int, array: bool = False) -> Gen:
    """A table (or an array) with entries of every type code a peer of ``dialect`` writes
    (:data:`~amqpfuzz.spec.amqp091.codec.tables.WRITTEN`: RabbitMQ reads 'L', never sends it)."""
    codes = tuple(WRITTEN[dialect].items())
    scalars = [
        (code, kind, _scalar(kind, typed)) for code, kind in codes if kind not in ("table", "array")
    ]
    nested = (
        [(code, kind) for code, kind in codes if kind in ("table", "array")] if max_depth else []
    )

    def value(src: Source) -> Any:
        choice = src.below(len(scalars) + len(nested))
        if choice < len(scalars):
            code, kind, gen = scalars[choice]
            item = gen(src)
        else:
            code, kind = nested[choice - len(scalars)]
            item = table_generator(dialect, typed, max_depth - 1, kind == "array")(src)
        if typed or (kind not in _PLAIN_KINDS and kind not in ("table", "array")):
            return FieldValue(code, item)
        return item

    def gen(src: Source) -> Any:
        count = src.below(5)
        if array:
            return [value(src) for _ in range(count)]
        return {table_key(src): value(src) for _ in range(count)}

    return gen


@functools.lru_cache(maxsize=4096)
def field_generator(fld: Field, dialect: str, typed: bool = False) -> Gen:
    """The generator of one field's values: its wire type narrowed by its asserts."""
    return type_generator(fld.type, fld.asserts, dialect, typed)


def type_generator(wire: str, asserts: tuple[Any, ...], dialect: str, typed: bool) -> Gen:
    found = limits(asserts)
    notnull, max_length, pattern = found.notnull, found.max_length, found.pattern
    if wire == "bit":
        return lambda src: bool(src.byte() & 1)
    if found.null and wire in ZERO_VALUES:  # a field kept for later: it must stay empty
        zero = ZERO_VALUES[wire]
        return lambda src: zero
    if wire in INT_WIDTHS and found.choices is not None:
        choices = found.choices
        return lambda src: src.below(choices)
    if wire in INT_WIDTHS and found.forbidden:
        ints, forbidden, top = (
            _ints(INT_WIDTHS[wire], notnull),
            found.forbidden,
            1 << INT_WIDTHS[wire],
        )

        def allowed(src: Source) -> int:
            value: int = ints(src)
            while value in forbidden:
                value = (value + 1) % top
            return value

        return allowed
    if wire in INT_WIDTHS:
        return _ints(INT_WIDTHS[wire], notnull)
    if wire == "shortstr":
        return _strings(notnull, min(max_length or 255, 255), pattern, text=True)
    if wire == "longstr":
        return _strings(notnull, min(max_length or 300, 300), pattern, text=False)
    if wire == "table":
        return table_generator(dialect, typed, 2)
    if wire == "content":
        return lambda src: (src.byte() & 1, src.take(src.below(65)))
    raise ValueError(f"unknown wire type {wire!r}")
