"""The eager argument checks of the 0-8/0-9/0-9-1 strategies: each raises InvalidArgument with
a message that says what is allowed."""

from __future__ import annotations

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec import protocols_of
from amqpfuzz.spec.amqp091 import Method, Spec, load
from amqpfuzz.spec.amqp091.codec import DIALECTS

from .wire import CASE_CHANNEL

__all__ = [
    "FAMILY_PROTOCOLS",
    "channel_of",
    "depth_of",
    "dialect_of",
    "frame_max_of",
    "method_of",
    "selected_methods",
    "spec_of",
]

FAMILY_PROTOCOLS = protocols_of("amqp091")


def spec_of(protocol: str | Spec) -> Spec:
    if isinstance(protocol, Spec):
        return protocol
    if protocol not in FAMILY_PROTOCOLS:
        raise InvalidArgument(
            f"protocol={protocol!r}: these strategies exist for {', '.join(FAMILY_PROTOCOLS)}"
        )
    return load(protocol)


def dialect_of(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise InvalidArgument(f"dialect={dialect!r}: must be one of {', '.join(DIALECTS)}")
    return dialect


def method_of(spec: Spec, name: str) -> Method:
    try:
        return spec.method(name)
    except KeyError:
        raise InvalidArgument(f"method={name!r}: AMQP {spec.protocol} has no such method") from None


def channel_of(channel: int) -> int:
    if not isinstance(channel, int) or not (channel == CASE_CHANNEL or 0 <= channel <= 0xFFFF):
        raise InvalidArgument(f"channel={channel!r}: must be 0..65535")
    return channel


def frame_max_of(spec: Spec, frame_max: int) -> int:
    least = spec.constant("frame-min-size").value
    if not isinstance(frame_max, int) or not least <= frame_max < 2**32:
        raise InvalidArgument(f"frame_max={frame_max!r}: must be at least frame-min-size ({least})")
    return frame_max


def depth_of(max_depth: int) -> int:
    if not isinstance(max_depth, int) or max_depth < 0:
        raise InvalidArgument(f"max_depth={max_depth!r}: must be a non-negative int")
    return max_depth


def selected_methods(
    spec: Spec, method: str | None, amqp_class: str | None, chassis: str | None
) -> list[Method]:
    if chassis not in (None, "client", "server"):
        raise InvalidArgument(f"chassis={chassis!r}: must be 'client', 'server' or None")
    if method is not None:
        chosen = [method_of(spec, method)]
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
