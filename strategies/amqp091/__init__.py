"""Hypothesis strategies for AMQP 0-8, 0-9 and 0-9-1, derived from the specification model.

Nothing here is written per method: every strategy is assembled from the loaded specification
(``protocol``: ``0-9-1`` by default, or ``0-9-1-rabbit``, ``0-9``, ``0-8``), so a method or
domain added to a specification file gets strategies with no code change. Factories check their
arguments when called and raise :class:`hypothesis.errors.InvalidArgument` with a clear message.

Besides its own strategies (values, arguments, frames, content), the family gives the generic
layer (:mod:`amqpfuzz.strategies`) what every family gives: :func:`operators` and
:func:`case_builder`, from which fuzz cases, batches and malformed cases are made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec import DEFAULT_PROTOCOL, protocols_of
from amqpfuzz.spec.amqp091 import Method, Spec, load
from amqpfuzz.spec.amqp091.codec import DIALECTS, Frame, MethodFrame, codec_for
from amqpfuzz.spec.amqp091.model import PRIMITIVE_TYPES

from ..building import mixed_builder, pick_operator
from ..cases import Case
from .frames import BLOB, argument_builder, blobs, content_frames, method_frames_of, sequences_of
from .operator import Context, Operator
from .operators import catalogue
from .source import Source, table_generator, type_generator
from .valid import valid_builder
from .wire import CASE_CHANNEL, WireFrame

__all__ = [
    "BLOB",
    "CASE_CHANNEL",
    "Operator",
    "WireFrame",
    "arguments",
    "case_builder",
    "case_methods",
    "content",
    "domain_values",
    "field_arrays",
    "field_tables",
    "frame_sequences",
    "malformed_case_builder",
    "method_frames",
    "operators",
    "valid_case_builder",
]

FAMILY = protocols_of("amqp091")


# -- argument checks -------------------------------------------------------------------------------


def _spec(protocol: str | Spec) -> Spec:
    if isinstance(protocol, Spec):
        return protocol
    if protocol not in FAMILY:
        raise InvalidArgument(
            f"protocol={protocol!r}: these strategies exist for {', '.join(FAMILY)}"
        )
    return load(protocol)


def _dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise InvalidArgument(f"dialect={dialect!r}: must be one of {', '.join(DIALECTS)}")
    return dialect


def _method(spec: Spec, name: str) -> Method:
    try:
        return spec.method(name)
    except KeyError:
        raise InvalidArgument(f"method={name!r}: AMQP {spec.protocol} has no such method") from None


def _channel(channel: int) -> int:
    if not isinstance(channel, int) or not (channel == CASE_CHANNEL or 0 <= channel <= 0xFFFF):
        raise InvalidArgument(f"channel={channel!r}: must be 0..65535")
    return channel


def _frame_max(spec: Spec, frame_max: int) -> int:
    least = spec.constant("frame-min-size").value
    if not isinstance(frame_max, int) or not least <= frame_max < 2**32:
        raise InvalidArgument(f"frame_max={frame_max!r}: must be at least frame-min-size ({least})")
    return frame_max


def _depth(max_depth: int) -> int:
    if not isinstance(max_depth, int) or max_depth < 0:
        raise InvalidArgument(f"max_depth={max_depth!r}: must be a non-negative int")
    return max_depth


def _selected(
    spec: Spec, method: str | None, amqp_class: str | None, chassis: str | None
) -> list[Method]:
    if chassis not in (None, "client", "server"):
        raise InvalidArgument(f"chassis={chassis!r}: must be 'client', 'server' or None")
    if method is not None:
        chosen = [_method(spec, method)]
    elif amqp_class is not None:
        names = [c.name for c in spec.classes]
        if amqp_class not in names:
            raise InvalidArgument(f"amqp_class={amqp_class!r}: AMQP {spec.protocol} has {names}")
        chosen = list(spec.amqp_class(amqp_class).methods)
    else:
        chosen = list(spec.methods)
    if chassis is not None:
        chosen = [m for m in chosen if m.sent_by(chassis)]
    if not chosen:
        raise InvalidArgument(
            f"no method of AMQP {spec.protocol} matches {method=} {amqp_class=} {chassis=}"
        )
    return chosen


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
    spec = _spec(protocol)
    _dialect(dialect)
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
    spec = _spec(protocol)
    found = _method(spec, method)
    build = argument_builder(found, _dialect(dialect), False, prefix)
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
    spec = _spec(protocol)
    methods = _selected(spec, method, amqp_class, chassis)
    return method_frames_of(methods, _channel(channel), dialect=_dialect(dialect), prefix=prefix)


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
    spec = _spec(protocol)
    names = [c.name for c in spec.classes if c.properties]
    if amqp_class not in names:
        raise InvalidArgument(f"amqp_class={amqp_class!r}: content classes are {names}")
    if max_body is not None and (not isinstance(max_body, int) or max_body < 0):
        raise InvalidArgument(f"max_body={max_body!r}: must be a non-negative int")
    return content_frames(
        spec,
        amqp_class,
        _channel(channel),
        _frame_max(spec, frame_max),
        dialect=_dialect(dialect),
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
    spec = _spec(protocol)
    _dialect(dialect)
    _frame_max(spec, frame_max)
    methods = _selected(spec, method, amqp_class, chassis)
    channel = _channel(channel)

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
    gen = table_generator(_dialect(dialect), typed, _depth(max_depth))
    return blobs(512).map(lambda blob: gen(Source(blob)))


def field_arrays(
    *, dialect: str = "rabbit", typed: bool = False, max_depth: int = 3
) -> st.SearchStrategy[list[Any]]:
    """Field arrays, with the entries of :func:`field_tables`. Shrinks towards the empty array."""
    gen = table_generator(_dialect(dialect), typed, _depth(max_depth), array=True)
    return blobs(512).map(lambda blob: gen(Source(blob)))


# -- what every family gives the generic layer ------------------------------------------------


def operators(protocol: str | Spec = DEFAULT_PROTOCOL) -> tuple[Operator, ...]:
    """The mutation operators that apply to ``protocol``, in catalogue order."""
    return catalogue(_spec(protocol))


def case_methods(protocol: str | Spec = DEFAULT_PROTOCOL) -> tuple[str, ...]:
    """The methods valid cases are drawn from: every method a client may send on an open
    channel (not the connection's or the channel's own), in the XML's order."""
    spec = _spec(protocol)
    context = Context(spec, codec_for(spec), spec.constant("frame-min-size").value)
    return tuple(m.full_name for m in context.channel_methods)


def case_builder(
    protocol: str | Spec = DEFAULT_PROTOCOL,
    *,
    operators: Sequence[str] | None = None,
    valid_share: float = 0.25,
    frame_max: int = 131072,
    prefix: str | None = None,
    dialect: str = "rabbit",
) -> Callable[[bytes], Case]:
    """Reads what a campaign sends from a blob of :data:`BLOB` bytes: a valid case (any
    channel-level method a client may send, with the reaction its method requires) about
    ``valid_share`` of the time, else a malformed case of ``operators``. The blob's first byte
    decides which, so a zeroed blob reads as the first method's valid case."""
    context = _context(protocol, frame_max, prefix, dialect)
    return mixed_builder(_valid(context, None), _malformed(context, operators), valid_share)


def valid_case_builder(
    protocol: str | Spec = DEFAULT_PROTOCOL,
    methods: Sequence[str] | None = None,
    *,
    frame_max: int = 131072,
    prefix: str | None = None,
    dialect: str = "rabbit",
) -> Callable[[bytes], Case]:
    """Reads a valid case of one of ``methods`` (by default every channel-level method a
    client may send) from a blob; a zeroed one reads as the first method's."""
    build = _valid(_context(protocol, frame_max, prefix, dialect), methods)
    return lambda blob: build(Source(blob))


def _valid(context: Context, methods: Sequence[str] | None) -> Callable[[Source], Case]:
    chosen = context.channel_methods
    if methods is not None:
        chosen = tuple(_method(context.spec, name) for name in methods)
        if not chosen:
            raise InvalidArgument("methods=[]: name at least one method")
    spec, codec = context.spec, context.codec
    return valid_builder(spec, codec, chosen, context.frame_max, prefix=context.prefix)


def malformed_case_builder(
    protocol: str | Spec = DEFAULT_PROTOCOL,
    operators: Sequence[str] | None = None,
    *,
    frame_max: int = 131072,
    prefix: str | None = None,
    dialect: str = "rabbit",
) -> Callable[[bytes], Case]:
    """Reads a malformed case from a blob: the operator, then the frames it breaks and how;
    a zeroed blob reads as the first operator's simplest case."""
    build = _malformed(_context(protocol, frame_max, prefix, dialect), operators)
    return lambda blob: build(Source(blob))


def _malformed(context: Context, operators: Sequence[str] | None) -> Callable[[Source], Case]:
    return pick_operator(_operators(context.spec, operators), context)


def _context(protocol: str | Spec, frame_max: int, prefix: str | None, dialect: str) -> Context:
    spec = _spec(protocol)
    return Context(spec, codec_for(spec, _dialect(dialect)), _frame_max(spec, frame_max), prefix)


def _operators(spec: Spec, names: Sequence[str] | None) -> list[Operator]:
    available = {op.name: op for op in catalogue(spec)}
    if names is None:
        return list(available.values())
    unknown = [name for name in names if name not in available]
    if unknown or not names:
        raise InvalidArgument(f"operators={list(names)!r}: known operators are {list(available)}")
    return [available[name] for name in names]
