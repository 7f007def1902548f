"""The 0-8/0-9/0-9-1 family's object for the strategies layer (:data:`FAMILY`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import codec_for

from ..arms import Arm
from ..cases import Case
from ..family import no_options
from ..operator import Operator
from ..source import Source
from .checks import dialect_of, frame_max_of, method_of, spec_of
from .context import Context
from .operators import catalogue
from .profile import Traffic
from .traffic import in_state, traffic_arms
from .valid import valid_builder

__all__ = ["FAMILY", "Amqp091Strategies"]

DEFAULT_FRAME = 131072


class Amqp091Strategies:
    """Cases of 0-8, 0-9 and 0-9-1 read from blobs of 512 bytes (a walk of valid traffic
    takes many methods' fields): valid cases of any channel-level method a client may send,
    valid traffic, malformed ones of the catalogue, alone or in state."""

    name = "amqp091"
    blob = 512

    def context(
        self,
        protocol: str | Spec,
        *,
        frame_max: int | None = None,
        prefix: str | None = None,
        dialect: str = "rabbit",
        traffic: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Context:
        """``traffic``: what the broker accepts beyond the specification, from its profile
        (:class:`~.profile.Traffic`)."""
        no_options(options, self.name)
        spec = spec_of(protocol)
        frame_max = frame_max_of(spec, DEFAULT_FRAME if frame_max is None else frame_max)
        codec = codec_for(spec, dialect_of(dialect))
        return Context(spec, codec, frame_max, prefix, Traffic.of(traffic))

    def catalogue(self, protocol: str | Spec) -> tuple[Operator, ...]:
        return catalogue(spec_of(protocol))

    def case_methods(self, context: Context) -> tuple[str, ...]:
        """Every method a client may send on an open channel (not the connection's or the
        channel's own), in the XML's order."""
        return tuple(m.full_name for m in context.channel_methods)

    def valid(self, context: Context, methods: Sequence[str] | None) -> Callable[[Source], Case]:
        chosen = context.channel_methods
        if methods is not None:
            chosen = tuple(method_of(context.spec, name) for name in methods)
            if not chosen:
                raise InvalidArgument("methods=[]: name at least one method")
        spec, codec = context.spec, context.codec
        return valid_builder(spec, codec, chosen, context.frame_max, prefix=context.prefix)

    def traffic(self, context: Context) -> tuple[Arm, ...]:
        return traffic_arms(context, context.traffic or Traffic())

    def in_state(self, context: Context) -> Callable[[Source, Case], Case] | None:
        return lambda src, case: in_state(context, context.traffic or Traffic(), src, case)


FAMILY = Amqp091Strategies()
