"""amqpfuzz as a 0-8/0-9/0-9-1 broker, to test client libraries: the peer that listens and
plays a script per connection (:mod:`.peer`), and the broker in miniature it answers with
(:mod:`.model`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import FrameReader, codec_for
from amqpfuzz.spec.amqp091.loader import load
from amqpfuzz.spec.protocols import extension_of
from amqpfuzz.strategies.amqp091.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    Script,
    script_builder,
)
from amqpfuzz.strategies.operator import selected

from .model import Model, Sent
from .peer import Peer, ServingError

__all__ = ["SERVING", "Model", "Peer", "Sent", "ServingError"]


class Amqp091Serving:
    """The family's server side (:class:`~amqpfuzz.fuzzer.protocols.family.Serving`): where the
    protocol has RabbitMQ's extension, the peer speaks it (confirms, nacks)."""

    def sends(self, protocol: str) -> tuple[str, ...]:
        return tuple(m.full_name for m in _spec(protocol).methods if m.sent_by("server"))

    def reader(self, protocol: str) -> FrameReader:
        return codec_for(_spec(protocol)).reader()

    def operators(self, protocol: str) -> tuple[str, ...]:
        return tuple(op.name for op in OPERATORS if op.applies_to(_spec(protocol)))

    def scripts(
        self, protocol: str, operators: Sequence[str] | None, valid_share: float
    ) -> tuple[int, Callable[[bytes], Script]]:
        try:
            chosen = selected(OPERATORS, operators, protocol)
            build = script_builder(_spec(protocol), tuple(chosen), POINTS, valid_share)
        except InvalidArgument as exc:
            raise ServingError(str(exc)) from None
        return SCRIPT_BLOB, build

    def peer(self, protocol: str) -> Peer:
        return Peer(_spec(protocol))

    def scripted(
        self, protocol: str, operator: str | None, served: Mapping[str, Any], blob: bytes
    ) -> Script:
        if served:  # (the language gives a 0-9-1 serve step an operator alone)
            raise ServingError(f"a 0-9-1 serve step sets no fields: {', '.join(served)}")
        names = [operator] if operator is not None else None
        return self.scripts(protocol, names, 0.0 if operator else 1.0)[1](blob)

    def code(self, protocol: str, name: str) -> int:
        return int(_spec(protocol).constant(name).value)


def _spec(protocol: str) -> Spec:
    """The model the peer speaks: the protocol's extension where it has one (RabbitMQ's:
    confirms, nacks), which reads all the protocol does."""
    return load(extension_of(protocol) or protocol)


SERVING = Amqp091Serving()
