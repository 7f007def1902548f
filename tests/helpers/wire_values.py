"""Hypothesis strategies for codec tests: values of each wire type and typed table entries.

Kept deliberately simple and independent of ``amqpfuzz.strategies``: these tests check the
codec, so their inputs must not come from code built on top of it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from amqpfuzz.spec.amqp091 import Field, Method
from amqpfuzz.spec.amqp091.codec import FieldValue

_WIDTH = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}

shortstr = st.text(max_size=40).filter(lambda s: len(s.encode("utf-8")) <= 255) | st.text(
    alphabet="ab", min_size=250, max_size=255
)


def _scalar_entries(dialect: str) -> st.SearchStrategy[FieldValue]:
    ints = {
        "b": (-(2**7), 2**7 - 1),
        "B": (0, 2**8 - 1),
        "u": (0, 2**16 - 1),
        "I": (-(2**31), 2**31 - 1),
        "i": (0, 2**32 - 1),
    }
    if dialect == "amqp":
        ints |= {"U": (-(2**15), 2**15 - 1), "L": (-(2**63), 2**63 - 1), "l": (0, 2**64 - 1)}
    else:
        ints |= {"s": (-(2**15), 2**15 - 1), "l": (-(2**63), 2**63 - 1)}
    options: list[st.SearchStrategy[FieldValue]] = [
        st.integers(lo, hi).map(lambda v, c=code: FieldValue(c, v))
        for code, (lo, hi) in ints.items()
    ]
    options += [
        st.booleans().map(lambda v: FieldValue("t", v)),
        st.floats(width=32, allow_nan=False).map(lambda v: FieldValue("f", v)),
        st.floats(allow_nan=False).map(lambda v: FieldValue("d", v)),
        st.builds(
            lambda raw, scale: FieldValue("D", Decimal(raw).scaleb(-scale)),
            st.integers(-(2**31), 2**31 - 1),
            st.integers(0, 255),
        ),
        st.binary(max_size=30).map(lambda v: FieldValue("S", v)),
        st.integers(0, 2**64 - 1).map(lambda v: FieldValue("T", v)),
        st.just(FieldValue("V", None)),
    ]
    if dialect == "amqp":
        options.append(st.binary(max_size=255).map(lambda v: FieldValue("s", v)))
    else:
        options.append(st.binary(max_size=30).map(lambda v: FieldValue("x", v)))
    return st.one_of(options)


def typed_tables(dialect: str) -> st.SearchStrategy[dict[str, Any]]:
    """Tables whose every entry says its type code: decoding with typed=True gives them back."""
    keys = st.text(max_size=12).filter(lambda s: len(s.encode("utf-8")) <= 255)
    return st.recursive(
        st.dictionaries(keys, _scalar_entries(dialect), max_size=4),
        lambda inner: st.dictionaries(
            keys,
            _scalar_entries(dialect)
            | inner.map(lambda t: FieldValue("F", t))
            | st.lists(
                _scalar_entries(dialect) | inner.map(lambda t: FieldValue("F", t)), max_size=3
            ).map(lambda items: FieldValue("A", items)),
            max_size=4,
        ),
        max_leaves=12,
    )


def plain_tables() -> st.SearchStrategy[dict[str, Any]]:
    """Tables of plain Python values whose type survives a round trip in either dialect."""
    scalars = (
        st.booleans()
        | st.integers(-(2**63), 2**63 - 1)
        | st.floats(allow_nan=False)
        | st.text(max_size=20)
        | st.none()
    )
    keys = st.text(max_size=12)
    return st.recursive(
        st.dictionaries(keys, scalars, max_size=4),
        lambda inner: st.dictionaries(
            keys, scalars | inner | st.lists(scalars | inner, max_size=3), max_size=4
        ),
        max_leaves=10,
    )


def value_for(fld: Field, dialect: str = "rabbit") -> st.SearchStrategy[Any]:
    """Any value the wire type of ``fld`` can carry."""
    if fld.type == "bit":
        return st.booleans()
    if fld.type in _WIDTH:
        return st.integers(0, 2 ** _WIDTH[fld.type] - 1)
    if fld.type == "shortstr":
        return shortstr
    if fld.type == "longstr":
        return st.binary(max_size=300)
    if fld.type == "table":
        return typed_tables(dialect)
    if fld.type == "content":
        return st.tuples(st.integers(0, 255), st.binary(max_size=50))
    raise AssertionError(fld.type)


def values_for(method: Method, dialect: str = "rabbit") -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(*(value_for(f, dialect) for f in method.fields))
