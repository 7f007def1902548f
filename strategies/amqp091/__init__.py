"""Hypothesis strategies for AMQP 0-8, 0-9 and 0-9-1, derived from the specification model.

Nothing here is written per method: every strategy is assembled from the loaded specification
(``protocol``: ``0-9-1`` by default, or ``0-9-1-rabbit``, ``0-9``, ``0-8``), so a method or
domain added to a specification file gets strategies with no code change. Factories check their
arguments when called and raise :class:`hypothesis.errors.InvalidArgument` with a clear message.

Besides its own strategies (values, arguments, frames, content), the family gives the generic
layer (:mod:`amqpfuzz.strategies`) what every family gives: :data:`FAMILY`, from which fuzz
cases, batches and malformed cases are made.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec import DEFAULT_PROTOCOL
from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import Frame, MethodFrame
from amqpfuzz.spec.amqp091.model import PRIMITIVE_TYPES

from .checks import (
    channel_of,
    depth_of,
    dialect_of,
    frame_max_of,
    method_of,
    selected_methods,
    spec_of,
)
from .family import FAMILY, Amqp091Strategies
from .frames import BLOB, argument_builder, blobs, content_frames, method_frames_of, sequences_of
from .source import Source, table_generator, type_generator
from .wire import CASE_CHANNEL, WireFrame

__all__ = [
    "BLOB",
    "CASE_CHANNEL",
    "FAMILY",
    "Amqp091Strategies",
    "WireFrame",
    "arguments",
    "content",
    "domain_values",
    "field_arrays",
    "field_tables",
    "frame_sequences",
    "method_frames",
]


# -- values and frames -----------------------------------------------------------------------------


def domain_values(
    domain: str,
    *,
    protocol: str | Spec = DEFAULT_PROTOCOL,
    dialect: str = "rabbit",
    typed: bool = False,
) -> st.SearchStrategy[Any]:
    """Values of a domain (``queue-name``) or a primitive type (``shortstr``).

    Values honour the domain's asserts (notnull, length, regexp, syntax) and, about a third of
    the time, sit on a boundary the type and asserts imply (0, 1 and the maximum of each
    integer width; strings of 0, 1, 127, 128 and the maximum length allowed). Shrinks towards
    zero and the empty (or shortest allowed) string.
    """
    spec = spec_of(protocol)
    dialect_of(dialect)
    if domain in PRIMITIVE_TYPES:
        gen = type_generator(domain, (), dialect, typed)
    else:
        try:
            found = spec.domain(domain)
        except KeyError:
            raise InvalidArgument(
                f"domain={domain!r}: AMQP {spec.protocol} has no such domain or type"
            ) from None
        gen = type_generator(found.type, found.asserts, dialect, typed)
    return blobs().map(lambda blob: gen(Source(blob)))


def arguments(
    method: str,
    *,
    protocol: str | Spec = DEFAULT_PROTOCOL,
    dialect: str = "rabbit",
    prefix: str | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments of ``method`` as ``{field identifier: value}``.

    Reserved fields keep their zero value. With ``prefix``, every queue name, exchange name and
    routing key starts with it (or is empty), so a campaign only touches what it created.
    Shrinks field by field towards zero values.
    """
    spec = spec_of(protocol)
    found = method_of(spec, method)
    build = argument_builder(found, dialect_of(dialect), False, prefix)
    names = [f.attr for f in found.fields]
    return blobs().map(lambda blob: dict(zip(names, build(Source(blob)), strict=True)))


def method_frames(
    method: str | None = None,
    *,
    amqp_class: str | None = None,
    chassis: str | None = None,
    channel: int = 1,
    protocol: str | Spec = DEFAULT_PROTOCOL,
    dialect: str = "rabbit",
    prefix: str | None = None,
) -> st.SearchStrategy[MethodFrame]:
    """Method frames for one method, one class, one chassis, or every method.

    ``chassis="client"`` gives the methods a client may send (those the server implements),
    ``"server"`` the ones a server sends. Shrinks towards the first method of the selection in
    the XML's order, then towards zero argument values.
    """
    spec = spec_of(protocol)
    methods = selected_methods(spec, method, amqp_class, chassis)
    return method_frames_of(
        methods, channel_of(channel), dialect=dialect_of(dialect), prefix=prefix
    )


def content(
    amqp_class: str = "basic",
    *,
    channel: int = 1,
    frame_max: int = 131072,
    max_body: int | None = None,
    protocol: str | Spec = DEFAULT_PROTOCOL,
    dialect: str = "rabbit",
) -> st.SearchStrategy[list[Frame]]:
    """A content header with any subset of the class's properties, and the body frames that
    carry its body split by ``frame_max``.

    Body sizes mix in 0, 1, a frame exactly full (``frame_max - 8``) and one byte more.
    Shrinks towards no properties and an empty body.
    """
    spec = spec_of(protocol)
    names = [c.name for c in spec.classes if c.properties]
    if amqp_class not in names:
        raise InvalidArgument(f"amqp_class={amqp_class!r}: content classes are {names}")
    if max_body is not None and (not isinstance(max_body, int) or max_body < 0):
        raise InvalidArgument(f"max_body={max_body!r}: must be a non-negative int")
    return content_frames(
        spec,
        amqp_class,
        channel_of(channel),
        frame_max_of(spec, frame_max),
        dialect=dialect_of(dialect),
        max_body=max_body,
    )


def frame_sequences(
    method: str | None = None,
    *,
    amqp_class: str | None = None,
    chassis: str | None = "client",
    channel: int = 1,
    frame_max: int = 131072,
    max_body: int | None = None,
    protocol: str | Spec = DEFAULT_PROTOCOL,
    dialect: str = "rabbit",
    prefix: str | None = None,
) -> st.SearchStrategy[list[Frame]]:
    """Sequences that are valid on the wire: a method, then, if it carries content, its
    header and bodies, all on ``channel``. Shrinks like :func:`method_frames`, then the
    content like :func:`content`."""
    spec = spec_of(protocol)
    dialect_of(dialect)
    frame_max_of(spec, frame_max)
    methods = selected_methods(spec, method, amqp_class, chassis)
    channel = channel_of(channel)

    return sequences_of(
        spec, methods, channel, frame_max, dialect=dialect, prefix=prefix, max_body=max_body
    )


def field_tables(
    *, dialect: str = "rabbit", typed: bool = False, max_depth: int = 3
) -> st.SearchStrategy[dict[str, Any]]:
    """Field tables with entries of every type code of ``dialect``, nested up to
    ``max_depth`` tables or arrays deep. With ``typed`` every entry is a
    :class:`~amqpfuzz.spec.amqp091.codec.FieldValue` (its exact type code); otherwise plain Python
    values, wrapped only where a plain value cannot say its type (an unsigned byte).
    Shrinks towards the empty table."""
    gen = table_generator(dialect_of(dialect), typed, depth_of(max_depth))
    return blobs(512).map(lambda blob: gen(Source(blob)))


def field_arrays(
    *, dialect: str = "rabbit", typed: bool = False, max_depth: int = 3
) -> st.SearchStrategy[list[Any]]:
    """Field arrays, with the entries of :func:`field_tables`. Shrinks towards the empty array."""
    gen = table_generator(dialect_of(dialect), typed, depth_of(max_depth), array=True)
    return blobs(512).map(lambda blob: gen(Source(blob)))
