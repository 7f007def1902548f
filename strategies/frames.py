"""Valid frames derived from the spec model: method arguments, method frames, content.

Nothing here names a method: a method's strategy is assembled from its fields' wire types and
asserts, so a method or domain added to a specification file gets strategies with no change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from amqpfuzz.spec import Field, Method, Spec
from amqpfuzz.spec.asserts import assert_limits
from amqpfuzz.spec.codec import ContentBody, ContentHeader, Frame, MethodFrame

from .values import NAME_ALPHABET, wire_values

__all__ = [
    "ENTITY_DOMAINS",
    "argument_values",
    "body_sizes",
    "content_frames",
    "method_frame",
]

# Domains that name broker entities. With a prefix, every such value starts with it (or is
# empty, which names the default exchange or the channel's last queue), so that a campaign
# only ever touches what it created; routing keys get the prefix too, since the default
# exchange routes by queue name.
ENTITY_DOMAINS = frozenset({"queue-name", "exchange-name"})
_ZERO: dict[str, Any] = {
    "bit": False,
    "octet": 0,
    "short": 0,
    "long": 0,
    "longlong": 0,
    "timestamp": 0,
    "shortstr": "",
    "longstr": b"",
    "table": {},
    "content": (0, b""),
}


def _prefixed(fld: Field, prefix: str) -> st.SearchStrategy[str]:
    notnull, max_length, _ = assert_limits(fld.asserts)
    room = (max_length or 255) - len(prefix.encode("utf-8"))
    suffix = st.text(NAME_ALPHABET, min_size=1, max_size=max(1, min(room, 24)))
    named = st.builds(str.__add__, st.just(prefix), suffix)
    return named if notnull else st.one_of(named, st.just(""))


def field_strategy(
    fld: Field, *, dialect: str, typed: bool, prefix: str | None
) -> st.SearchStrategy[Any]:
    """Values for one field: its zero if reserved, prefixed names where entities are named."""
    if fld.reserved:
        return st.just(_ZERO[fld.type])
    if prefix is not None and (fld.domain in ENTITY_DOMAINS or fld.name == "routing-key"):
        return _prefixed(fld, prefix)
    return wire_values(fld, dialect=dialect, typed=typed)


def argument_values(
    method: Method, *, dialect: str = "rabbit", typed: bool = False, prefix: str | None = None
) -> st.SearchStrategy[tuple[Any, ...]]:
    """A tuple of argument values in the method's field order."""
    return st.tuples(
        *(field_strategy(f, dialect=dialect, typed=typed, prefix=prefix) for f in method.fields)
    )


def method_frame(
    method: Method,
    channel: int,
    *,
    dialect: str = "rabbit",
    typed: bool = False,
    prefix: str | None = None,
) -> st.SearchStrategy[MethodFrame]:
    values = argument_values(method, dialect=dialect, typed=typed, prefix=prefix)
    return values.map(lambda v: MethodFrame(channel, method, v))


def body_sizes(frame_max: int, limit: int | None = None, least: int = 0) -> st.SearchStrategy[int]:
    """Body sizes around the frame boundaries: empty, one byte, a frame exactly full, one
    byte into a second frame; and anything up to two frames (or ``limit``)."""
    chunk = frame_max - 8
    top = max(limit if limit is not None else 2 * chunk, least)
    edges = sorted({n for n in (0, 1, chunk - 1, chunk, chunk + 1, top) if least <= n <= top})
    return st.one_of(st.sampled_from(edges), st.integers(least, top))


def content_frames(
    spec: Spec,
    class_name: str,
    channel: int,
    frame_max: int,
    *,
    dialect: str = "rabbit",
    typed: bool = False,
    max_body: int | None = None,
    min_body: int = 0,
) -> st.SearchStrategy[list[Frame]]:
    """A content header with any subset of the class's properties, then the body frames that
    carry its body within ``frame_max``."""
    amqp_class = spec.amqp_class(class_name)
    chunk = frame_max - 8

    @st.composite
    def build(draw: st.DrawFn) -> list[Frame]:
        chosen = (
            draw(st.lists(st.sampled_from(amqp_class.properties), unique=True))
            if (amqp_class.properties)
            else []
        )
        properties = {
            p.attr: draw(wire_values(p, dialect=dialect, typed=typed))
            for p in _in_order(amqp_class.properties, chosen)
        }
        size = draw(body_sizes(frame_max, max_body, min_body))
        body = draw(st.binary(min_size=size, max_size=size))
        frames: list[Frame] = [ContentHeader(channel, amqp_class.index, size, properties)]
        frames += [ContentBody(channel, body[i : i + chunk]) for i in range(0, size, chunk)]
        return frames

    return build()


def _in_order(every: Sequence[Field], chosen: Sequence[Field]) -> list[Field]:
    picked = set(map(id, chosen))
    return [f for f in every if id(f) in picked]
