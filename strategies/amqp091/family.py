"""The 0-8/0-9/0-9-1 family's object for the strategies layer (:data:`FAMILY`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import codec_for

from ..cases import Case
from ..family import no_options
from ..operator import Operator
from ..source import Source
from .checks import dialect_of, frame_max_of, method_of, spec_of
from .context import Context
from .frames import BLOB
from .operators import catalogue
from .valid import valid_builder

__all__ = ["FAMILY", "Amqp091Strategies"]

DEFAULT_FRAME = 131072


class Amqp091Strategies:
    """Cases of 0-8, 0-9 and 0-9-1 read from blobs of :data:`~.frames.BLOB` bytes: valid cases
    of any channel-level method a client may send, malformed ones of the catalogue."""

    name = "amqp091"
    blob = BLOB

    def context(
        self,
        protocol: str | Spec,
        *,
        frame_max: int | None = None,
        prefix: str | None = None,
        dialect: str = "rabbit",
        **options: Any,
    ) -> Context:
        no_options(options, self.name)
        spec = spec_of(protocol)
        frame_max = frame_max_of(spec, DEFAULT_FRAME if frame_max is None else frame_max)
        return Context(spec, codec_for(spec, dialect_of(dialect)), frame_max, prefix)

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


FAMILY = Amqp091Strategies()
