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
what every family gives: :data:`FAMILY`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10.codec import Composite

from ..source import Source
from .context import Context
from .family import FAMILY, MIN_FRAME, PROTOCOL, Amqp10Strategies, codec_of
from .valid import connection_frames
from .wire import CASE_CHANNEL, Wire

__all__ = [
    "CASE_CHANNEL",
    "FAMILY",
    "Amqp10Strategies",
    "Wire",
    "composites",
    "connection_frames_of",
    "messages",
    "type_values",
]


def _blobs(size: int = FAMILY.blob) -> st.SearchStrategy[Source]:
    return st.binary(min_size=size, max_size=size).map(Source)


# -- values, composites, messages, connections ---------------------------------------------------


def type_values(type_name: str, *, protocol: str = PROTOCOL) -> st.SearchStrategy[Any]:
    """Values of a 1.0 type by its name in the XML: a primitive (``uint``, ``symbol``...), a
    restricted type (``handle``, ``sender-settle-mode``: one of its choices) or a composite.
    Boundary values (0, 1, the extremes, 255/256-octet strings) come about a third of the
    time. Shrinks towards zero, the empty value, the first choice."""
    codec = codec_of(protocol)
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
    codec = codec_of(protocol)
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
    codec = codec_of(protocol)
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
    ctx = FAMILY.context(protocol, frame_max=frame_max, prefix=None)
    choices = tuple(sasl)
    return _blobs().map(lambda src: connection_frames(src, ctx, src.pick(choices)))
