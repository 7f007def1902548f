"""Hypothesis strategies for AMQP 1.0, derived from the five parts of the 1.0 XML.

Nothing here is written per type or per performative: a value of every type, an instance of
every composite (performatives, SASL frames, message sections, delivery states, terminus types,
transaction types) and whole messages are assembled from the loaded model, so a type added to
the XML gets strategies with no code change. Factories check their arguments when called and
raise :class:`hypothesis.errors.InvalidArgument` with a clear message.

Everything is read from one blob of bytes per example (see :class:`~..source.Source`): a zeroed
blob reads as the plainest value (null fields, zeros, empty strings, the first choice), so
Hypothesis shrinks towards the simplest frame.

Besides its own strategies, the family gives the generic layer (:mod:`amqpfuzz.strategies`)
what every family gives: :func:`operators`, :func:`case_methods` and the case builders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10.codec import Codec, Composite, codec_for

from ..building import mixed_builder, pick_operator
from ..cases import Case
from ..source import Source
from .operator import Context, Operator
from .operators import catalogue
from .valid import case_performatives, connection_frames, valid_builder
from .wire import CASE_CHANNEL, Wire

__all__ = [
    "BLOB",
    "CASE_CHANNEL",
    "Operator",
    "Wire",
    "case_builder",
    "case_methods",
    "composites",
    "connection_frames_of",
    "malformed_case_builder",
    "messages",
    "operators",
    "type_values",
    "valid_case_builder",
]

BLOB = 512
PROTOCOL = "1.0"
MIN_FRAME = 512  # MIN-MAX-FRAME-SIZE


def _codec(protocol: str) -> Codec:
    if protocol != PROTOCOL:
        raise InvalidArgument(f"protocol={protocol!r}: the AMQP 1.0 family has only {PROTOCOL!r}")
    return codec_for(protocol)


def _blobs(size: int = BLOB) -> st.SearchStrategy[Source]:
    return st.binary(min_size=size, max_size=size).map(Source)


def _context(protocol: str, frame_max: int, prefix: str | None) -> Context:
    codec = _codec(protocol)
    if not isinstance(frame_max, int) or not MIN_FRAME <= frame_max <= 0xFFFFFFFF:
        raise InvalidArgument(f"frame_max={frame_max!r}: from {MIN_FRAME} to 4294967295")
    if prefix is not None and not isinstance(prefix, str):
        raise InvalidArgument(f"prefix={prefix!r}: a string or None")
    return Context(codec.spec, codec, frame_max, prefix)


# -- values, composites, messages, connections ---------------------------------------------------


def type_values(type_name: str, *, protocol: str = PROTOCOL) -> st.SearchStrategy[Any]:
    """Values of a 1.0 type by its name in the XML: a primitive (``uint``, ``symbol``...), a
    restricted type (``handle``, ``sender-settle-mode``: one of its choices) or a composite.
    Boundary values (0, 1, the extremes, 255/256-octet strings) come about a third of the
    time. Shrinks towards zero, the empty value, the first choice."""
    codec = _codec(protocol)
    if not isinstance(type_name, str) or type_name not in codec.types.named:
        raise InvalidArgument(f"type_name={type_name!r}: not a type of AMQP 1.0")
    try:
        gen = Context(codec.spec, codec, MIN_FRAME).values.of(type_name)
    except KeyError:
        raise InvalidArgument(
            f"type_name={type_name!r}: a type of any value (amqp-value)"
        ) from None
    return _blobs().map(gen)


def composites(
    names: Sequence[str] | None = None, *, protocol: str = PROTOCOL
) -> st.SearchStrategy[Composite]:
    """Instances of composite types (by default every one: performatives, SASL frames,
    message sections, delivery states, source and target, transaction types), mandatory
    fields always set, others about half the time. Shrinks towards the first name and null
    optional fields."""
    codec = _codec(protocol)
    known = tuple(codec.types.composites)
    chosen = known if names is None else tuple(names)
    unknown = [n for n in chosen if n not in known]
    if not chosen or unknown:
        raise InvalidArgument(f"names={names!r}: composites of AMQP 1.0 are {list(known)}")
    values = Context(codec.spec, codec, MIN_FRAME).values
    gens = tuple(values.of(n) for n in chosen)
    return _blobs().map(lambda src: src.pick(gens)(src))


def messages(*, protocol: str = PROTOCOL) -> st.SearchStrategy[list[Any]]:
    """Whole messages as their sections, in order: header, delivery and message annotations,
    properties, application properties, a body of data, amqp-sequence or amqp-value, footer;
    each but the body present about half the time. ``Codec.message`` encodes them."""
    codec = _codec(protocol)
    return _blobs().map(Context(codec.spec, codec, MIN_FRAME).values.message())


def connection_frames_of(
    *,
    sasl: Sequence[str | None] = ("PLAIN", "ANONYMOUS", None),
    frame_max: int = 131072,
    protocol: str = PROTOCOL,
) -> st.SearchStrategy[list[bytes]]:
    """A whole valid connection as a client sends it, one item per protocol header or frame:
    the SASL layer (one of ``sasl``), open, begin, a sending and a receiving link, flow,
    transfers (some split over frames of 512 octets), a disposition, detach, end and close."""
    allowed = ("PLAIN", "ANONYMOUS", None)
    if not sasl or any(m not in allowed for m in sasl):
        raise InvalidArgument(f"sasl={sasl!r}: choose from {allowed}")
    ctx = _context(protocol, frame_max, None)
    choices = tuple(sasl)
    return _blobs().map(lambda src: connection_frames(src, ctx, src.pick(choices)))


# -- what every family gives the generic layer ----------------------------------------------------


def operators(protocol: str = PROTOCOL) -> tuple[Operator, ...]:
    """The 1.0 mutation operators, in catalogue order."""
    return catalogue(_codec(protocol).spec)


def case_methods(protocol: str = PROTOCOL) -> tuple[str, ...]:
    """The performatives valid cases are drawn from."""
    return case_performatives(_context(protocol, 131072, None))


def case_builder(
    protocol: str = PROTOCOL,
    *,
    operators: Sequence[str] | None = None,
    valid_share: float = 0.25,
    frame_max: int = 131072,
    prefix: str | None = None,
) -> Callable[[bytes], Case]:
    """Reads what a campaign sends from a blob: a valid case about ``valid_share`` of the
    time, else a malformed case of ``operators``."""
    ctx = _context(protocol, frame_max, prefix)
    return mixed_builder(
        valid_builder(ctx, case_performatives(ctx)),
        pick_operator(_operators(ctx, operators), ctx),
        valid_share,
    )


def valid_case_builder(
    protocol: str = PROTOCOL,
    methods: Sequence[str] | None = None,
    *,
    frame_max: int = 131072,
    prefix: str | None = None,
) -> Callable[[bytes], Case]:
    """Reads a valid case of one of ``methods`` (performatives; by default every one a case
    may send) from a blob."""
    ctx = _context(protocol, frame_max, prefix)
    known = case_performatives(ctx)
    chosen = known if methods is None else tuple(methods)
    unknown = [m for m in chosen if m not in known]
    if not chosen or unknown:
        raise InvalidArgument(f"methods={methods!r}: valid 1.0 cases are of {list(known)}")
    build = valid_builder(ctx, chosen)
    return lambda blob: build(Source(blob))


def malformed_case_builder(
    protocol: str = PROTOCOL,
    operators: Sequence[str] | None = None,
    *,
    frame_max: int = 131072,
    prefix: str | None = None,
) -> Callable[[bytes], Case]:
    """Reads a malformed case from a blob: the operator, then what it breaks and how."""
    ctx = _context(protocol, frame_max, prefix)
    build = pick_operator(_operators(ctx, operators), ctx)
    return lambda blob: build(Source(blob))


def _operators(ctx: Context, names: Sequence[str] | None) -> list[Operator]:
    available = {op.name: op for op in catalogue(ctx.spec)}
    if names is None:
        return list(available.values())
    unknown = [n for n in names if n not in available]
    if not names or unknown:
        raise InvalidArgument(f"operators={names!r}: 1.0 operators are {list(available)}")
    return [available[n] for n in names]
