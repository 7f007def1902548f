"""The 0-10 family's object for the strategies layer (:data:`FAMILY`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp010.codec import MAX_FRAME_SIZE, Codec, codec_for

from ..arms import Arm
from ..cases import Case
from ..family import no_options, only, prefix_of
from ..operator import Operator
from ..source import Source
from .context import Context
from .operators import catalogue
from .valid import case_commands, valid_builder

__all__ = ["DEFAULT_FRAME", "FAMILY", "PROTOCOL", "Amqp010Strategies", "codec_of", "names_of"]

PROTOCOL = "0-10"
DEFAULT_FRAME = 65535


def codec_of(protocol: str) -> Codec:
    """The codec of ``protocol``, which must be 0-10 (InvalidArgument if not)."""
    return codec_for(only(protocol, PROTOCOL, "AMQP 0-10"))


def names_of(chosen: Sequence[str] | None, known: Sequence[str], what: str) -> tuple[str, ...]:
    """``chosen`` (all of ``known`` by default), each one of ``known`` (InvalidArgument if
    not)."""
    picked = tuple(known) if chosen is None else tuple(chosen)
    unknown = [n for n in picked if n not in known]
    if not picked or unknown:
        raise InvalidArgument(f"{what}={chosen!r}: 0-10 has {list(known)}")
    return picked


class Amqp010Strategies:
    """0-10 cases read from blobs of 512 bytes: valid cases of the commands a server
    implements, malformed ones of the catalogue."""

    name = "amqp010"
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
        """(``traffic``, a broker's profile's data for valid traffic, is taken and unused:
        0-10 has no traffic yet.)"""
        no_options(options, self.name)
        codec = codec_of(protocol)
        frame_max = DEFAULT_FRAME if frame_max is None else frame_max
        low = codec.min_max_frame_size
        if not isinstance(frame_max, int) or frame_max < low:
            raise InvalidArgument(f"frame_max={frame_max!r}: at least {low} (MIN-MAX-FRAME-SIZE)")
        # a frame's size is 16 bits: a larger maximum (the generic layer's default) allows all
        return Context(codec.spec, codec, min(frame_max, MAX_FRAME_SIZE), prefix_of(prefix))

    def catalogue(self, protocol: str) -> tuple[Operator, ...]:
        return catalogue(codec_of(protocol).spec)

    def case_methods(self, context: Context) -> tuple[str, ...]:
        """The commands valid cases are drawn from."""
        return case_commands(context)

    def valid(self, context: Context, methods: Sequence[str] | None) -> Callable[[Source], Case]:
        return valid_builder(context, names_of(methods, case_commands(context), "methods"))

    def traffic(self, context: Context) -> tuple[Arm, ...]:
        return ()

    def in_state(self, context: Context) -> Callable[[Source, Case], Case] | None:
        return None


FAMILY = Amqp010Strategies()
