"""The broker in miniature that the serving peer plays: what a valid server answers.

It answers each synchronous method a client sends with one of the responses the
specification lists for it (``basic.get``: ``get-ok`` when the queue holds a message, else
``get-empty``), its fields filled by :func:`~amqpfuzz.strategies.amqp091.serving.answer_values`
(what the request named, what the state says, the rest from the script's blob). Beyond the
XML it keeps the state a client's application can see: the channels open, the queues declared
and the messages in them, consumers, publisher confirms and delivery tags. It also checks what
the client sends against the specification (:attr:`Model.violations`): methods on channels that
are not open, channel-class methods on channel zero, channels above the channel-max agreed,
acknowledgements of delivery tags it never got, content that contradicts its header.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec.amqp091 import Method, Spec
from amqpfuzz.spec.amqp091.codec import (
    ContentBody,
    ContentHeader,
    Frame,
    Heartbeat,
    MethodFrame,
    ProtocolHeader,
)
from amqpfuzz.strategies.amqp091.serving import Script, answer_values
from amqpfuzz.strategies.source import Source

from ...served import Message
from .delivered import differs

__all__ = ["Model", "Sent"]


@dataclass
class Sent:
    """Frames the peer sends, with what it means: a reply (counted for the ``reply`` point)
    or a message."""

    frames: list[Frame]
    reply: bool = False
    message: Message | None = None


@dataclass
class _Channel:
    confirm: bool = False
    published: int = 0
    tags: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    given: set[int] = field(default_factory=set)
    consumers: dict[str, str] = field(default_factory=dict)  # tag -> queue
    content: list[Frame] = field(default_factory=list)  # a method with content, being received
    expected: int = 0  # body bytes the header declared


@dataclass
class Model:
    """The state of one connection, as the broker the peer plays sees it."""

    spec: Spec
    script: Script
    channel_max: int = 0
    frame_max: int = 0
    channels: dict[int, _Channel] = field(default_factory=dict)
    queues: dict[str, deque[tuple[ContentHeader, bytes]]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    names: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.answers = Source(self.script.answers)

    # -- what the client sends ------------------------------------------------------------------

    def check(self, frame: Frame) -> None:
        """Records what breaks the specification in a frame the client sent once open."""
        if isinstance(frame, ProtocolHeader):
            self.violations.append(f"a protocol header inside the connection: {frame.data!r}")
            return
        if isinstance(frame, Heartbeat):
            if frame.channel:
                self.violations.append(f"heartbeat on channel {frame.channel}")
            return
        if isinstance(frame, MethodFrame):
            method = frame.method
            if method.class_name == "connection":
                if frame.channel:
                    self.violations.append(f"{method.full_name} on channel {frame.channel}")
                return
            if frame.channel == 0:
                self.violations.append(f"{method.full_name} on channel zero")
            elif method.full_name == "channel.open":
                if frame.channel in self.channels:
                    self.violations.append(f"channel.open of channel {frame.channel}, already open")
                if self.channel_max and frame.channel > self.channel_max:
                    self.violations.append(
                        f"channel {frame.channel} above the channel-max {self.channel_max} agreed"
                    )
            elif frame.channel not in self.channels:
                self.violations.append(f"{method.full_name} on channel {frame.channel}, not open")
        elif frame.channel not in self.channels:
            self.violations.append(f"content on channel {frame.channel}, not open")

    def receive(self, frame: Frame) -> list[Sent]:
        """What a valid server sends in answer to ``frame`` (a frame past the handshake)."""
        self.check(frame)
        if isinstance(frame, ProtocolHeader):
            return []
        if isinstance(frame, MethodFrame):
            return self._method(frame)
        channel = self.channels.get(frame.channel)
        if channel is None or isinstance(frame, Heartbeat):
            return []
        if isinstance(frame, ContentHeader):
            if not channel.content:
                self.violations.append(f"content header on channel {frame.channel} with no method")
                return []
            channel.content.append(frame)
            channel.expected = frame.body_size
        elif isinstance(frame, ContentBody):
            if len(channel.content) < 2:
                self.violations.append(f"body frame on channel {frame.channel} with no header")
                return []
            channel.content.append(frame)
            channel.expected -= len(frame.payload)
            if channel.expected < 0:
                self.violations.append(f"body on channel {frame.channel} longer than its header")
        if len(channel.content) >= 2 and channel.expected <= 0:
            return self._published(frame.channel, channel)
        return []

    def _method(self, frame: MethodFrame) -> list[Sent]:
        method = frame.method
        channel = self.channels.get(frame.channel)
        if method.content:
            if channel is not None:
                channel.content = [frame]
                channel.expected = 0
            return []
        name = method.full_name
        if name == "channel.open":
            channel = self.channels[frame.channel] = _Channel()
        elif name in ("channel.close", "channel.close-ok"):
            self.channels.pop(frame.channel, None)
        elif channel is not None and name in ("basic.ack", "basic.nack", "basic.reject"):
            self._settled(frame, channel)
        if not method.responses or name == "channel.close-ok":
            return []
        if channel is None and frame.channel:
            return []  # a method on a channel not open gets no answer (it is recorded)
        return [self._answer(frame, channel)]

    def _answer(self, frame: MethodFrame, channel: _Channel | None) -> Sent:
        method = frame.method
        response = self._response(frame)
        known: dict[str, Any] = {}
        args = frame.arguments
        if method.full_name == "confirm.select" and channel is not None:
            channel.confirm = True
        if method.class_name == "queue" and "queue" in args:
            queue = args["queue"] or f"amq.gen-{next(self.names)}"
            messages = self.queues.setdefault(queue, deque())
            known |= {"queue": queue, "message-count": len(messages), "consumer-count": 0}
        if method.full_name == "basic.consume" and channel is not None:
            tag = args.get("consumer_tag") or f"amq.ctag-{next(self.names)}"
            channel.consumers[tag] = args.get("queue", "")
            known["consumer-tag"] = tag
        sent = Sent([MethodFrame(frame.channel, response, ())], reply=True)
        if response.name == "get-ok" and channel is not None:
            header, body = self.queues[args["queue"]].popleft()
            known |= self._delivery_fields(
                channel, "", args["queue"], len(self.queues[args["queue"]])
            )
            sent.message = self._message("get", frame.channel, known["delivery-tag"], header, body)
            values = answer_values(frame, response, self.answers, known)
            sent.frames = [
                MethodFrame(frame.channel, response, values),
                *self._content(frame.channel, header, body),
            ]
            return sent
        values = answer_values(frame, response, self.answers, known)
        sent.frames = [MethodFrame(frame.channel, response, values)]
        return sent

    def _response(self, frame: MethodFrame) -> Method:
        cls = self.spec.amqp_class(frame.method.class_name)
        names = frame.method.responses
        if frame.method.full_name == "basic.get":
            queue = frame.arguments.get("queue", "")
            holds = bool(self.queues.get(queue))
            return cls.method(names[0] if holds else names[-1])
        return cls.method(names[0])

    # -- what the server sends of its own ---------------------------------------------------------

    def _published(self, number: int, channel: _Channel) -> list[Sent]:
        publish, header, *bodies = channel.content
        channel.content = []
        assert isinstance(publish, MethodFrame) and isinstance(header, ContentHeader)
        body = b"".join(b.payload for b in bodies if isinstance(b, ContentBody))
        args = publish.arguments
        out: list[Sent] = []
        queue = args.get("routing_key", "") if not args.get("exchange") else ""
        if queue in self.queues:
            self.queues[queue].append((header, body))
            out += self.deliver_queued(queue)
        elif args.get("mandatory"):
            out.append(self._return(number, publish, header, body))
        channel.published += 1
        if channel.confirm:
            ack = self.spec.method("basic.ack")
            values = tuple(
                channel.published if f.name == "delivery-tag" else False for f in ack.fields
            )
            out.append(Sent([MethodFrame(number, ack, values)]))
        return out

    def _return(
        self, number: int, publish: MethodFrame, header: ContentHeader, body: bytes
    ) -> Sent:
        method = self.spec.method("basic.return")
        code = self.spec.constant("no-route").value if _has(self.spec, "no-route") else 312
        known = {"reply-code": code, "reply-text": "NO_ROUTE", **_named(publish)}
        values = answer_values(publish, method, self.answers, known)
        message = self._message("return", number, None, header, body)
        return Sent(
            [MethodFrame(number, method, values), *self._content(number, header, body)],
            message=message,
        )

    def deliver_queued(self, queue: str) -> list[Sent]:
        """The messages of ``queue``, to its first consumer."""
        for number, channel in self.channels.items():
            for tag, consumed in channel.consumers.items():
                if consumed == queue:
                    out = []
                    while self.queues[queue]:
                        header, body = self.queues[queue].popleft()
                        out.append(self.delivery(number, tag, queue, header, body))
                    return out
        return []

    def consumer(self) -> tuple[int, str, str] | None:
        """The first consumer: its channel, tag and queue."""
        for number, channel in self.channels.items():
            for tag, queue in channel.consumers.items():
                return number, tag, queue
        return None

    def delivery(
        self, number: int, tag: str, queue: str, header: ContentHeader, body: bytes
    ) -> Sent:
        """``basic.deliver`` of a message to consumer ``tag`` on channel ``number``."""
        channel = self.channels[number]
        method = self.spec.method("basic.deliver")
        known = {"consumer-tag": tag, **self._delivery_fields(channel, "", queue, None)}
        values = tuple(known.get(f.name, False) for f in method.fields)
        message = self._message("deliver", number, known["delivery-tag"], header, body)
        return Sent(
            [MethodFrame(number, method, values), *self._content(number, header, body)],
            message=message,
        )

    def _delivery_fields(
        self, channel: _Channel, exchange: str, key: str, count: int | None
    ) -> dict[str, Any]:
        tag = next(channel.tags)
        channel.given.add(tag)
        fields: dict[str, Any] = {
            "delivery-tag": tag,
            "redelivered": False,
            "exchange": exchange,
            "routing-key": key,
        }
        if count is not None:
            fields["message-count"] = count
        return fields

    def _content(self, number: int, header: ContentHeader, body: bytes) -> list[Frame]:
        chunk = (self.frame_max or 131072) - 8
        head = ContentHeader(number, header.class_id, len(body), header.properties)
        return [
            head,
            *(ContentBody(number, body[i : i + chunk]) for i in range(0, len(body), chunk)),
        ]

    def _message(
        self, via: str, number: int, tag: int | None, header: ContentHeader, body: bytes
    ) -> Message:
        names = {p.attr: p.name for p in self.spec.amqp_class("basic").properties}
        properties = {names.get(k, k): v for k, v in header.properties.items()}
        return Message(via, number, tag, body, properties, differs=differs)

    def _settled(self, frame: MethodFrame, channel: _Channel) -> None:
        args = frame.arguments
        tag = int(args.get("delivery_tag", 0))
        if args.get("multiple") and (tag == 0 or tag <= max(channel.given, default=0)):
            return
        if tag not in channel.given:
            self.violations.append(f"{frame.method.full_name} of delivery tag {tag}, never given")


def _has(spec: Spec, name: str) -> bool:
    return any(c.name == name for c in spec.constants)


def _named(publish: MethodFrame) -> dict[str, Any]:
    args = publish.arguments
    return {"exchange": args.get("exchange", ""), "routing-key": args.get("routing_key", "")}
