"""What a scenario's steps share: the player's state, sending, replies, failures.

:class:`PlayerState` holds one scenario's connections (each a :class:`~.mailbox.Mailbox`) and
what it declared; the step handlers (:mod:`.connections`, :mod:`.methods`, :mod:`.messages`,
:mod:`.control`) build on it. The first expectation that does not hold raises
:class:`~...playing.StepFailed`, naming the step, what was expected and what came.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from amqpfuzz.scenarios import Scenario, Step
from amqpfuzz.scenarios.amqp091 import EXTENSIONS, LANGUAGE
from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp091 import Spec, load
from amqpfuzz.spec.amqp091.codec import Frame, MethodFrame, ProtocolHeader, codec_for

from ....brokers import Broker, Target
from ...outcome import Outcome
from ...playing import StepPlayer
from ..connection import closed_by
from .mailbox import Mailbox, Message

__all__ = [
    "PLAIN_CLIENT",
    "SINGULAR",
    "PlayerState",
    "codec_protocol",
    "message_mismatch",
    "mismatch",
    "reaction_of_message",
    "summary_of",
]


# A scenario's connections are a plain client's: no extension announced (RabbitMQ would send
# basic.cancel notifications that the specification's scenarios do not expect).
PLAIN_CLIENT = {"product": "amqpfuzz scenarios"}


def codec_protocol(protocol: str) -> str:
    """The model a scenario's connections speak: the protocol's, or its extension's (0-9-1
    files may use RabbitMQ's basic.nack and confirm.select)."""
    return EXTENSIONS.get(protocol, protocol)


def reaction_of_message(message: Message) -> Outcome:
    """What a message that came says the broker did: a close, a protocol header, a reply."""
    frame = message.frame
    if isinstance(frame, MethodFrame) and frame.name in ("channel.close", "connection.close"):
        closed = closed_by(frame)
        return Outcome(closed.kind, closed.code, method=closed.method)
    if isinstance(frame, ProtocolHeader):
        return Outcome(OutcomeKind.PROTOCOL_HEADER, reply=repr(frame))
    return Outcome(OutcomeKind.REPLY, reply=message.name)


SINGULAR = {"bodies": "body", "redelivered": "redelivered", "properties": "properties"}


def summary_of(message: Message) -> dict[str, Any]:
    item: dict[str, Any] = {"method": message.name}
    if message.header is not None:
        item["body"] = message.body.decode("utf-8", "replace")
        item["redelivered"] = message["redelivered"] if message.name != "basic.return" else None
    return item


def message_mismatch(message: Message, want: Mapping[str, Any]) -> str | None:
    """Why ``message`` does not match ``want`` (body, redelivered, properties,
    message_count), or None."""
    for key, value in want.items():
        if key == "body":
            body = message.body.decode("utf-8", "replace")
            if body != value:
                return f"body {body!r}, expected {value!r}"
        elif key == "properties":
            have = message.header.properties if message.header else {}
            for name, item in value.items():
                problem = mismatch(have.get(name), item)
                if problem:
                    return f"property {name}: {problem}"
        else:
            problem = mismatch(message[key], value)
            if problem:
                return f"{key}: {problem}"
    return None


def mismatch(value: Any, want: Any) -> str | None:
    """Why a field's ``value`` does not match the expectation ``want`` (a literal or a
    matcher of :data:`amqpfuzz.scenarios.vocabulary.MATCHERS`), or None."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(want, Mapping) and len(want) == 1:
        ((matcher, argument),) = want.items()
        if matcher == "has_keys":
            missing = [k for k in argument if not isinstance(value, dict) or k not in value]
            return f"lacks keys {missing}" if missing else None
        if matcher == "contains":
            items = value.split() if isinstance(value, str) else list(value or ())
            return None if argument in items else f"{value!r} does not contain {argument!r}"
        if matcher == "not_in":
            return f"{value!r} is one of {argument!r}" if value in argument else None
    return None if value == want else f"{value!r}, expected {want!r}"


class PlayerState(StepPlayer, part=True):
    """A 0-8/0-9/0-9-1 scenario's state: its connections, the models it speaks, what it
    declared, the deliveries it has read."""

    language = LANGUAGE

    def __init__(
        self,
        scenario: Scenario,
        target: Target,
        *,
        prefix: str,
        timeout: float = 5.0,
        broker: Broker | None = None,
    ) -> None:
        super().__init__(scenario, target, prefix=prefix, timeout=timeout, broker=broker)
        self.protocol = codec_protocol(scenario.protocol)
        self.spec: Spec = load(self.protocol)
        # frames are built and encoded with the model the file names them in (the protocol's
        # own, or for what only the extension has, the extension's); replies are decoded with
        # the extension's, a superset
        self.base = codec_for(scenario.protocol)
        self.extended = codec_for(self.protocol)
        self.extended_only = {m.full_name for m in self.extended.spec.methods} - {
            m.full_name for m in self.base.spec.methods
        }
        self.connections: dict[str, Mailbox] = {}
        self.variables["plain"] = f"\0{target.user}\0{target.password}"
        self.queues: set[str] = set()  # declared: deleted at the end if they carry the prefix
        self.exchanges: set[str] = set()
        self.given: set[str] = set()  # the names of the queues declared, as the broker said
        self.cursors: dict[tuple[str, int], int] = {}

    def mailbox(self, step: Step, name: str) -> Mailbox:
        mailbox = self.connections.get(name)
        if mailbox is None:  # restarted broker: the connection is gone
            raise self.failed(
                step,
                f"connection {name!r} was lost (the broker restarted)",
                Outcome(OutcomeKind.REPLY),
                Outcome(OutcomeKind.SOCKET_CLOSE),
            )
        return mailbox

    def _ended(self, mailbox: Mailbox) -> Outcome:
        if mailbox.ended is None:
            return Outcome(OutcomeKind.TIMEOUT)
        ended = mailbox.ended
        return Outcome(ended.kind, ended.code, method=ended.method)

    def _send(self, mailbox: Mailbox, frames: list[Frame]) -> None:
        mailbox.connection.send(b"".join(self._encode(f) for f in frames))

    def _encode(self, frame: Frame) -> bytes:
        if isinstance(frame, MethodFrame) and frame.method.full_name in self.extended_only:
            return self.extended.encode(frame)
        return self.base.encode(frame)

    def _method(self, channel: int, name: str, arguments: Mapping[str, Any]) -> MethodFrame:
        codec = self.extended if name in self.extended_only else self.base
        if arguments.get("passive"):
            pass  # a passive declare creates nothing
        elif name == "queue.declare" and arguments.get("queue"):
            self.queues.add(str(arguments["queue"]))
        elif name == "exchange.declare" and arguments.get("exchange"):
            self.exchanges.add(str(arguments["exchange"]))
        return codec.method(name, channel, **arguments)

    def _content(
        self, mailbox: Mailbox, channel: int, args: Mapping[str, Any], class_name: str
    ) -> list[Frame]:
        body = args.get("body")
        data = body.encode() if isinstance(body, str) else b"x" * int(args.get("body_size", 0))
        return mailbox.connection.codec.content(
            channel,
            data,
            class_name=class_name,
            frame_max=mailbox.connection.frame_max,
            **args.get("properties", {}),
        )

    def _reply(self, step: Step, mailbox: Mailbox, channel: int, name: str) -> Message:
        expected = Outcome(OutcomeKind.REPLY, reply=name)
        message = mailbox.next_reply(channel, self.timeout)
        if message is None:
            seen = self._ended(mailbox)
            raise self.failed(
                step,
                f"expected {name} on channel {channel}, got {seen.described()}",
                expected,
                seen,
            )
        seen = reaction_of_message(message)
        if message.name != name:
            raise self.failed(
                step, f"expected {name} on channel {channel}, got {message}", expected, seen
            )
        if name == "queue.declare-ok":  # the broker's name for our declaration, perhaps
            self.given.add(str(message["queue"]))
        self.checked(expected, seen)
        return message

    def _rounds(self, count: int) -> Iterator[int]:
        outer = self.variables.get("i")
        try:
            for i in range(1, count + 1):
                self.variables["i"] = i
                yield i
        finally:
            if outer is None:
                self.variables.pop("i", None)
            else:
                self.variables["i"] = outer
