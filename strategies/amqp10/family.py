"""The 1.0 family's object for the strategies layer (:data:`FAMILY`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10.codec import Codec, codec_for

from ..arms import Arm
from ..cases import Case
from ..family import no_options, only, prefix_of
from ..operator import Operator
from ..source import Source
from .context import Context
from .operators import catalogue
from .profile import Traffic
from .traffic import in_state, traffic_arms
from .valid import case_performatives, valid_builder

__all__ = ["FAMILY", "MIN_FRAME", "PROTOCOL", "Amqp10Strategies", "codec_of"]

PROTOCOL = "1.0"
MIN_FRAME = 512  # MIN-MAX-FRAME-SIZE
DEFAULT_FRAME = 131072


def codec_of(protocol: str) -> Codec:
    """The codec of ``protocol``, which must be 1.0 (InvalidArgument if not)."""
    return codec_for(only(protocol, PROTOCOL, "AMQP 1.0"))


class Amqp10Strategies:
    """1.0 cases read from blobs of 512 bytes: valid cases of the performatives a client sends
    on a session, valid traffic (walks of a session that wait for the peer, and whole
    connections), malformed ones of the catalogue, alone or after a walk. ``traffic`` (of
    :meth:`context`) is a profile's traffic table (:class:`~.profile.Traffic`)."""

    name = "amqp10"
    blob = 512

    def context(
        self,
        protocol: str,
        *,
        frame_max: int | None = None,
        prefix: str | None = None,
        traffic: Any = None,
        **options: Any,
    ) -> Context:
        no_options(options, self.name)
        codec = codec_of(protocol)
        frame_max = DEFAULT_FRAME if frame_max is None else frame_max
        if not isinstance(frame_max, int) or not MIN_FRAME <= frame_max <= 0xFFFFFFFF:
            raise InvalidArgument(f"frame_max={frame_max!r}: from {MIN_FRAME} to 4294967295")
        return Context(codec.spec, codec, frame_max, prefix_of(prefix), _traffic(traffic))

    def catalogue(self, protocol: str) -> tuple[Operator, ...]:
        return catalogue(codec_of(protocol).spec)

    def case_methods(self, context: Context) -> tuple[str, ...]:
        """The performatives valid cases are drawn from."""
        return case_performatives(context)

    def valid(self, context: Context, methods: Sequence[str] | None) -> Callable[[Source], Case]:
        known = case_performatives(context)
        chosen = known if methods is None else tuple(methods)
        unknown = [m for m in chosen if m not in known]
        if not chosen or unknown:
            raise InvalidArgument(f"methods={methods!r}: valid 1.0 cases are of {list(known)}")
        return valid_builder(context, chosen)

    def traffic(self, context: Context) -> tuple[Arm, ...]:
        """Walks of a session (:mod:`.traffic`), one arm per shape."""
        return traffic_arms(context, context.traffic or Traffic())

    def in_state(self, context: Context) -> Callable[[Source, Case], Case] | None:
        """A malformed case of the frame or encoding level after a short walk."""
        traffic = context.traffic or Traffic()
        return lambda src, case: in_state(context, traffic, src, case)


def _traffic(data: Any) -> Traffic:
    """The profile's traffic table (a mapping, or a :class:`Traffic` already), or none."""
    if data is None or isinstance(data, Traffic):
        return data or Traffic()
    if not isinstance(data, Mapping):
        raise InvalidArgument(f"traffic={data!r}: a profile's traffic table (a mapping)")
    return Traffic.of(data)


FAMILY = Amqp10Strategies()
