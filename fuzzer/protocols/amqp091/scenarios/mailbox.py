"""A connection's frames sorted the way a scenario reads them: per channel, whole messages.

:class:`~.transport.Connection` files raw frames by channel. A scenario wants more: a method
with its content (``basic.get-ok`` and its body) as one :class:`Message`, deliveries
(``basic.deliver``) kept apart from the replies an ``expect`` looks at, and the number of
frames that came at all. :class:`Mailbox` does that sorting and the waiting.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amqpfuzz.spec.amqp091.codec import (
    ContentBody,
    ContentHeader,
    Frame,
    MethodFrame,
    ProtocolHeader,
)

from ...outcome import Outcome
from ..connection import Connection, closed_by

__all__ = ["Mailbox", "Message"]

DELIVERY = "basic.deliver"


@dataclass(slots=True)
class Message:
    """A method (or a protocol header, on channel 0) and the content it carries, if any."""

    frame: MethodFrame | ProtocolHeader
    header: ContentHeader | None = None
    body: bytes = b""

    @property
    def name(self) -> str:
        return self.frame.name if isinstance(self.frame, MethodFrame) else "protocol-header"

    @property
    def complete(self) -> bool:
        if not isinstance(self.frame, MethodFrame) or not self.frame.method.content:
            return True
        return self.header is not None and len(self.body) >= self.header.body_size

    def __getitem__(self, name: str) -> Any:
        if not isinstance(self.frame, MethodFrame):
            raise KeyError(name)
        return self.frame[name]

    def __str__(self) -> str:
        if isinstance(self.frame, ProtocolHeader):
            return repr(self.frame)
        if self.frame.name.endswith(".close"):
            return str(closed_by(self.frame))
        return self.frame.name


class Mailbox:
    """The sorted frames of one connection.

    ``replies[channel]`` holds the messages an ``expect`` reads, in order; ``deliveries`` the
    ``basic.deliver`` messages; ``received`` every message that carries a delivery tag the
    client may settle (deliveries and ``basic.get-ok``), numbered from 1 per channel opening.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.replies: dict[int, deque[Message]] = {}
        self.deliveries: dict[int, list[Message]] = {}
        self.received: dict[int, list[Message]] = {}
        self.frames = 0  # frames that arrived (protocol headers are not frames)
        self.sent_header = b""  # the protocol header a send_header step sent
        self._partial: dict[int, Message] = {}

    @property
    def ended(self) -> Outcome | None:
        return self.connection.ended

    def reset(self, channel: int) -> None:
        """Forget a channel's messages (it is being opened again)."""
        for box in (self.replies, self.deliveries, self.received, self._partial):
            box.pop(channel, None)

    def sort(self) -> None:
        """Move what the connection filed into messages."""
        for channel, frames in self.connection.inbox.items():
            while frames:
                self._add(channel, frames.popleft())

    def _add(self, channel: int, frame: Frame) -> None:
        if not isinstance(frame, ProtocolHeader):
            self.frames += 1
        partial = self._partial.get(channel)
        if isinstance(frame, ContentHeader) and partial is not None and partial.header is None:
            partial.header = frame
        elif isinstance(frame, ContentBody) and partial is not None and partial.header is not None:
            partial.body += frame.payload
        elif isinstance(frame, MethodFrame | ProtocolHeader):
            partial = Message(frame)
        else:
            return  # heartbeats, and content with no method before it: counted, not kept
        if not partial.complete:
            self._partial[channel] = partial
            return
        self._partial.pop(channel, None)
        if partial.name == DELIVERY:
            self.deliveries.setdefault(channel, []).append(partial)
            self.received.setdefault(channel, []).append(partial)
            return
        if partial.name == "basic.get-ok":
            self.received.setdefault(channel, []).append(partial)
        self.replies.setdefault(channel, deque()).append(partial)

    def pump(self, timeout: float) -> None:
        self.connection.pump(timeout)
        self.sort()

    def next_reply(self, channel: int, timeout: float) -> Message | None:
        """The next message on ``channel`` (a ``channel.close`` included), or None if the
        connection ended or ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while True:
            self.sort()
            queue = self.replies.get(channel)
            if queue:
                return queue.popleft()
            left = deadline - time.monotonic()
            if self.ended is not None or left <= 0:
                return None
            self.pump(left)

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Pump until ``ready()`` is true (True) or ``timeout`` passes or the connection ends
        (False; ``ready`` is asked once more at the end)."""
        deadline = time.monotonic() + timeout
        while True:
            self.sort()
            if ready():
                return True
            left = deadline - time.monotonic()
            if self.ended is not None or left <= 0:
                return bool(ready())
            self.pump(left)

    def pending(self) -> list[Message]:
        """Every reply not read yet, on any channel."""
        self.sort()
        return [m for queue in self.replies.values() for m in queue]
