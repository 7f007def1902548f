"""Values of domains and wire types, honouring (or, for malformed cases, breaking) the asserts.

Everything is derived from the spec model: a field's wire type gives the value space, its
asserts narrow it (``notnull``, ``length``, ``regexp``, ``syntax``), and the limits of the type
give the boundary values that every strategy mixes in (``0``, ``1``, the maximum of each integer
width; strings of 0, 1, 127, 128 and 255 bytes where the asserts allow them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from amqpfuzz.spec import Field
from amqpfuzz.spec.asserts import assert_limits
from amqpfuzz.spec.codec import FieldValue
from amqpfuzz.spec.codec.tables import DIALECTS

__all__ = [
    "INT_WIDTHS",
    "NAME_ALPHABET",
    "field_table_values",
    "table_keys",
    "wire_values",
]

INT_WIDTHS = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}
STRING_LIMITS = {"shortstr": 255, "longstr": 2**32 - 1}

# Characters for names when no assert says more: readable, and safe in every broker's names.
NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:"
_SIMPLE_CLASS = re.compile(r"^(\[[^\]]+\])\*$")


def _ints(width: int, notnull: bool) -> st.SearchStrategy[int]:
    top = 2**width - 1
    edges = sorted({0, 1, 2, top // 2, top // 2 + 1, top - 1, top} - ({0} if notnull else set()))
    return st.one_of(st.sampled_from(edges), st.integers(1 if notnull else 0, top))


def _alphabet(pattern: str | None) -> st.SearchStrategy[str]:
    if pattern is None:
        return st.sampled_from(NAME_ALPHABET)
    simple = _SIMPLE_CLASS.match(pattern)
    if simple is None:
        raise ValueError(pattern)
    # ^[class]*$: draw characters of the class, so that lengths stay free to vary
    return st.from_regex(simple.group(1), fullmatch=True)


def _strings(
    notnull: bool, max_length: int, pattern: str | None, text: bool = True
) -> st.SearchStrategy[Any]:
    low = 1 if notnull else 0
    if pattern is not None and not _SIMPLE_CLASS.match(pattern):
        # a grammar we cannot split into characters: Hypothesis draws from the regex itself
        return st.from_regex(pattern, fullmatch=True).filter(
            lambda s: low <= len(s.encode("utf-8")) <= max_length
        )
    alphabet = _alphabet(pattern)
    edges = sorted(
        {n for n in (0, 1, 127, 128, max_length - 1, max_length) if low <= n <= max_length}
    )
    edge = st.sampled_from(edges).flatmap(
        lambda n: st.lists(alphabet, min_size=n, max_size=n).map("".join)
    )
    if pattern is None:  # any Unicode: four bytes a character at most keeps within the limit
        general = st.text(
            st.characters(codec="utf-8"), min_size=low, max_size=min(max_length // 4, 40)
        )
    else:
        general = st.lists(alphabet, min_size=low, max_size=min(max_length, 40)).map("".join)
    strings = st.one_of(general, edge)
    return strings if text else strings.map(lambda s: s.encode("utf-8"))


def table_keys() -> st.SearchStrategy[str]:
    """Field-table keys as the 0-9-1 grammar has them: a letter, ``$`` or ``#`` first,
    then letters, digits and underscores, at most 128 characters; never ``x-``, the prefix
    brokers reserve for arguments they interpret."""
    first = st.sampled_from("abcdefghijklmnopqrstuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ$#")
    rest = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", max_size=12)
    long_key = st.just("k" * 128)
    return st.one_of(st.builds(str.__add__, first, rest), long_key)


_PLAIN_KINDS = frozenset({"bool", "int32", "double", "decimal", "longstr", "bytes", "void"})


def _tagged(code: str) -> Callable[[Any], FieldValue]:
    return lambda value: FieldValue(code, value)


def field_table_values(dialect: str, *, typed: bool, max_depth: int) -> st.SearchStrategy[Any]:
    """One table entry value: every type code of ``dialect``, nested up to ``max_depth``."""
    kinds = DIALECTS[dialect]

    def scalar(code: str, kind: str) -> st.SearchStrategy[Any]:
        if kind in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
            bits = int(kind.lstrip("uint")) if kind.startswith("uint") else int(kind[3:])
            if kind.startswith("uint"):
                base: st.SearchStrategy[Any] = st.integers(0, 2**bits - 1)
            else:
                base = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        elif kind == "bool":
            base = st.booleans()
        elif kind == "float":
            base = st.floats(width=32, allow_nan=False)
        elif kind == "double":
            base = st.floats(allow_nan=False)
        elif kind == "decimal":
            from decimal import Decimal

            base = st.builds(
                lambda raw, scale: Decimal(raw).scaleb(-scale),
                st.integers(-(2**31), 2**31 - 1),
                st.integers(0, 255),
            )
        elif kind in ("longstr", "bytes"):
            base = st.binary(max_size=64) if typed or kind == "bytes" else st.text(max_size=64)
        elif kind == "shortstr":
            base = (
                st.binary(max_size=255)
                if typed
                else st.text(max_size=40).filter(lambda s: len(s.encode("utf-8")) <= 255)
            )
        elif kind == "timestamp":
            base = st.integers(0, 2**64 - 1) if typed else st.integers(0, 2**33)
        elif kind == "void":
            base = st.none()
        else:
            raise AssertionError(kind)
        # a plain value of these kinds is inferred back to its own type code; others travel
        # wrapped in a FieldValue so that their exact code survives
        return base if not typed and kind in _PLAIN_KINDS else base.map(_tagged(code))

    scalars = st.one_of(
        [scalar(code, kind) for code, kind in kinds.items() if kind not in ("table", "array")]
    )
    table_code = next(c for c, k in kinds.items() if k == "table")
    array_code = next(c for c, k in kinds.items() if k == "array")

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        tables = st.dictionaries(table_keys(), inner, max_size=4)
        arrays = st.lists(inner, max_size=4)
        if typed:
            return st.one_of(
                inner,
                tables.map(lambda t: FieldValue(table_code, t)),
                arrays.map(lambda a: FieldValue(array_code, a)),
            )
        return st.one_of(inner, tables, arrays)

    value = scalars
    for _ in range(max_depth):
        value = nest(value)
    return value


def wire_values(
    fld_or_type: Field | str, *, dialect: str = "rabbit", typed: bool = False, max_depth: int = 2
) -> st.SearchStrategy[Any]:
    """Values a field (with its asserts) or a bare wire type can carry, boundaries mixed in."""
    if isinstance(fld_or_type, Field):
        wire, asserts = fld_or_type.type, fld_or_type.asserts
    else:
        wire, asserts = fld_or_type, ()
    notnull, max_length, pattern = assert_limits(asserts)
    if wire == "bit":
        return st.booleans()
    if wire in INT_WIDTHS:
        return _ints(INT_WIDTHS[wire], notnull)
    if wire == "shortstr":
        return _strings(notnull, min(max_length or 255, 255), pattern)
    if wire == "longstr":
        return _strings(notnull, min(max_length or 300, 300), pattern, text=False)
    if wire == "table":
        entries = field_table_values(dialect, typed=typed, max_depth=max_depth - 1)
        return st.one_of(
            st.just({}),
            st.dictionaries(table_keys(), entries, max_size=6),
        )
    if wire == "content":
        return st.tuples(st.sampled_from([0, 1]), st.binary(max_size=64))
    raise ValueError(f"unknown wire type {wire!r}")
