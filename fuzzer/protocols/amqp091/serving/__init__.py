"""amqpfuzz as a 0-8/0-9/0-9-1 broker, to test client libraries: the peer that listens and
plays a script per connection (:mod:`.peer`), and the broker in miniature it answers with
(:mod:`.model`)."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import FrameReader, codec_for
from amqpfuzz.spec.amqp091.loader import load
from amqpfuzz.spec.protocols import extension_of

from .model import Message, Model, Sent
from .peer import Exchange, Peer, ServingError

__all__ = ["SERVING", "Exchange", "Message", "Model", "Peer", "Sent", "ServingError"]


class Amqp091Serving:
    """The family's server side (:class:`~amqpfuzz.fuzzer.protocols.family.Serving`): where the
    protocol has RabbitMQ's extension, the peer speaks it (confirms, nacks)."""

    def sends(self, protocol: str) -> tuple[str, ...]:
        spec = load(extension_of(protocol) or protocol)
        return tuple(m.full_name for m in spec.methods if m.sent_by("server"))

    def reader(self, protocol: str) -> FrameReader:
        return codec_for(load(extension_of(protocol) or protocol)).reader()

    def peer(self, protocol: str) -> Peer:
        return Peer(load(extension_of(protocol) or protocol))


SERVING = Amqp091Serving()
