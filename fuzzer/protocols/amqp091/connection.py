"""A raw AMQP 0-8/0-9/0-9-1 client connection: our codec over a socket, nothing refused.

The fuzzer sends bytes no client library would, so it speaks through this small connection:
:meth:`Connection.open` does the handshake, :meth:`Connection.send` writes any bytes,
:meth:`Connection.pump` reads what arrived and files the frames by channel, answering a
broker's ``channel.close`` and ``connection.close`` the way a client must. What a case led to
is an :class:`Outcome` (reply, channel-close, connection-close, socket-close, timeout), read by
the oracles.

A connection may also be prepared only part of the way (:meth:`Connection.prepared`, to a
:class:`~amqpfuzz.strategies.amqp091.operators.handshake.Stage`), for a case that sends the rest
of the handshake itself. What the server answers there is either a close (the connection's, a
channel's the case opened too early, or the socket's, after a protocol header of its own) or the
server going on with the handshake: a method that is not a close, or the protocol header the
case sent, echoed (a server that speaks what it names: what follows is that protocol, not read
here). Either ends the connection; going on is the case's ``reply``.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL, OutcomeKind, Scope
from amqpfuzz.spec.amqp091.codec import (
    Codec,
    Frame,
    FrameReader,
    MethodFrame,
    ProtocolHeader,
    codec_for,
    raw,
)
from amqpfuzz.spec.amqp091.model import ZERO_VALUES
from amqpfuzz.spec.protocols import extension_of
from amqpfuzz.strategies.amqp091.operators.handshake import Stage

from ...brokers import Target
from ..outcome import AuthenticationFailed, ConnectionFailed, Name, Outcome
from ..stream import Stream, open_socket

__all__ = ["CLIENT_PROPERTIES", "Connection", "HeaderAnswer", "closed_by"]

# amqpfuzz's own: announcing RabbitMQ's consumer-cancel notifications
CLIENT_PROPERTIES: dict[str, Any] = {
    "product": "amqpfuzz",
    "capabilities": {"consumer_cancel_notify": True},
}


# the stages short of open: what the server answers there ends the case
_ANSWERED = (Stage.HEADER, Stage.START, Stage.TUNE)


def closed_by(frame: MethodFrame) -> Outcome:
    """The outcome a broker's ``channel.close`` or ``connection.close`` says."""
    scope = Scope.CONNECTION if frame.method.class_name == "connection" else Scope.CHANNEL
    args = frame.arguments
    class_id, method_id = args.get("class_id"), args.get("method_id")
    return Outcome(
        scope.close,
        args.get("reply_code"),
        str(args.get("reply_text", "")),
        method=None if class_id is None or method_id is None else (class_id, method_id),
    )


class HeaderAnswer(FrameReader):
    """Reads what a server answers a protocol header with: frames (its connection.start), or a
    protocol header of its own, after which nothing is read (a refusal closes the socket next;
    a server that speaks what the header named goes on in that protocol)."""

    def __init__(self, codec: Codec, frame_max: int | None = None) -> None:
        super().__init__(codec, frame_max)
        self._head = bytearray()
        self._framed = False  # the answer is frames, read as such
        self.header: ProtocolHeader | None = None

    def feed(self, data: bytes) -> list[Frame]:
        if self.header is not None:
            return []
        if self._framed:
            return super().feed(data)
        self._head += data
        head = bytes(self._head)
        if head[:4] != b"AMQP"[: len(head[:4])]:  # not a header: frames (or bytes that are not)
            self._framed = True
            return super().feed(head)
        if len(head) < 8:
            return []
        self.header = ProtocolHeader(head[:8])
        return [self.header]


class Connection(Stream):
    """One open AMQP connection (after the handshake).

    Frames arriving on a channel wait in :attr:`inbox`; a broker's ``channel.close`` is
    answered with ``close-ok`` and kept in :attr:`closed_channels`; its ``connection.close``
    (or the socket closing) ends the connection and is kept in :attr:`ended`. A connection
    that ended on a close naming ``channel.close-ok`` after it answered such a close itself
    (:attr:`ended_by_us`) may have ended on our answer, not on anything a case sent.
    """

    def __init__(self, sock: socket.socket, codec: Codec, frame_max: int, channel_max: int) -> None:
        super().__init__(sock)
        self.codec = codec
        self.frame_max = frame_max
        self.channel_max = channel_max
        self.reader: FrameReader = codec.reader(frame_max=frame_max)
        self.server_properties: dict[str, object] = {}
        self._close_ok = codec.spec.method("channel.close-ok")
        self.protocol = codec.spec.protocol  # the one asked for (read in its extension)
        self.stage: Stage | None = None  # how far it was prepared, if not open
        self.vhost = "/"  # the target's virtual host, for a stage that opens it later
        self.header_sent: bytes | None = None  # on a ``header`` stage: what the case sent
        self.answered = 0  # the broker's channel closes this connection answered (close-ok)

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        target: Target,
        *,
        protocol: str = DEFAULT_PROTOCOL,
        timeout: float = 10.0,
        frame_max: int = 131072,
        channel_max: int = 2047,
        client_properties: dict[str, Any] | None = None,
    ) -> Connection:
        """Connect, send the protocol header and complete the handshake (PLAIN, no heartbeat).

        ``client_properties`` default to amqpfuzz's, announcing RabbitMQ's consumer-cancel
        notifications; a plain 0-9-1 client (``{"product": ...}``) announces nothing."""
        connection = cls.connect(
            target, protocol=protocol, timeout=timeout, frame_max=frame_max, channel_max=channel_max
        )
        try:
            connection._handshake(target, timeout, frame_max, channel_max, client_properties)
        except BaseException:
            connection.abort()
            raise
        return connection

    @classmethod
    def connect(
        cls,
        target: Target,
        *,
        protocol: str = DEFAULT_PROTOCOL,
        timeout: float = 10.0,
        frame_max: int = 131072,
        channel_max: int = 2047,
    ) -> Connection:
        """Only the socket (TLS for amqps://): the caller speaks the protocol from the header on."""
        codec = codec_for(extension_of(protocol))  # what the broker says in it is read
        sock = open_socket(target, timeout)
        connection = cls(sock, codec, frame_max, channel_max)
        connection.protocol = protocol
        return connection

    @classmethod
    def prepared(
        cls,
        target: Target,
        stage: Stage,
        *,
        protocol: str = DEFAULT_PROTOCOL,
        timeout: float = 10.0,
        control: int = 1,
        narrow: int = 2,
    ) -> Connection:
        """A connection prepared only so far: ``header`` (connected, nothing sent), ``start``
        (the protocol header sent, connection.start received), ``tune`` (logged in with the
        target's credentials, connection.tune received: nothing of ours tuned yet) or
        ``narrow`` (open with a channel-max of ``narrow``, channel ``control`` open).
        ConnectionFailed if the broker will not go so far."""
        if stage == Stage.NARROW:
            connection = cls.open(target, protocol=protocol, timeout=timeout, channel_max=narrow)
            problem = connection.open_channel(control, timeout)
            if problem is not None:
                connection.abort()
                raise ConnectionFailed(f"{target.safe_url}: cannot open a channel: {problem}")
            connection.stage = stage
            return connection
        connection = cls.connect(target, protocol=protocol, timeout=timeout)
        connection.vhost = target.vhost
        if stage == Stage.HEADER:
            connection.reader = HeaderAnswer(connection.codec, connection.frame_max)
        else:
            try:
                connection._greet(target, timeout)
                if stage == Stage.TUNE:
                    connection._login(target, timeout, None)
            except BaseException:
                connection.abort()
                raise
        connection.stage = stage  # from here on, what the server answers is the case's
        return connection

    def _handshake(
        self,
        target: Target,
        timeout: float,
        frame_max: int,
        channel_max: int,
        properties: dict[str, Any] | None,
    ) -> None:
        codec = self.codec
        self._greet(target, timeout)
        tune = self._login(target, timeout, properties)
        self.frame_max = min(frame_max, tune["frame_max"] or frame_max)
        self.channel_max = min(channel_max, tune["channel_max"] or channel_max)
        self.reader.frame_max = self.frame_max
        self.send_frame(
            codec.method(
                "connection.tune-ok",
                0,
                channel_max=self.channel_max,
                frame_max=self.frame_max,
                heartbeat=0,
            )
        )
        self.send_frame(codec.method("connection.open", 0, virtual_host=target.vhost))
        self._expect_handshake(target, "connection.open-ok", timeout, authenticating=True)

    def _greet(self, target: Target, timeout: float) -> None:
        """The protocol header, answered with connection.start."""
        self.send(self.codec.spec.protocol_header)
        start = self._expect_handshake(target, "connection.start", timeout)
        self.server_properties = dict(start["server_properties"])

    def _login(
        self, target: Target, timeout: float, properties: dict[str, Any] | None
    ) -> MethodFrame:
        """start-ok with the target's credentials (PLAIN), answered with connection.tune."""
        response = b"\x00" + target.user.encode() + b"\x00" + target.password.encode()
        self.send_frame(
            self.codec.method(
                "connection.start-ok",
                0,
                client_properties=CLIENT_PROPERTIES if properties is None else properties,
                mechanism="PLAIN",
                response=response,
                locale="en_US",
            )
        )
        return self._expect_handshake(target, "connection.tune", timeout, authenticating=True)

    @classmethod
    def open_pipelined(
        cls,
        target: Target,
        handshake: bytes,
        *,
        protocol: str = DEFAULT_PROTOCOL,
        timeout: float = 10.0,
        frame_max: int = 131072,
        channel_max: int = 2047,
        control: int | None = None,
    ) -> Connection:
        """The handshake in two writes (:meth:`handshake_bytes`), for a target whose limits an
        earlier handshake told: the header, then, once ``connection.start`` is in,
        ``start-ok``, ``tune-ok``, ``open`` and the control channel's ``channel.open`` at once;
        their answers are read as they come. Two round trips where :meth:`open` takes four;
        ConnectionFailed if the broker's limits are no longer what ``frame_max`` and
        ``channel_max`` say."""
        connection = cls.connect(
            target, protocol=protocol, timeout=timeout, frame_max=frame_max, channel_max=channel_max
        )
        header = connection.codec.spec.protocol_header
        try:
            # the header first: a broker that reads start-ok before it has sent start may lose it
            connection.send(header)
            start = connection._expect_handshake(target, "connection.start", timeout)
            connection.server_properties = dict(start["server_properties"])
            connection.send(handshake.removeprefix(header))
            tune = connection._expect_handshake(
                target, "connection.tune", timeout, authenticating=True
            )
            if (tune["frame_max"] or frame_max) < frame_max or (
                tune["channel_max"] or channel_max
            ) < channel_max:
                raise ConnectionFailed(f"{target.safe_url}: the broker's limits changed")
            connection._expect_handshake(target, "connection.open-ok", timeout, authenticating=True)
            if control is not None:
                opened = connection.wait(control, ("channel.open-ok",), timeout)
                if isinstance(opened, Outcome):
                    raise ConnectionFailed(f"{target.safe_url}: cannot open a channel: {opened}")
                connection.open_channels.add(control)
        except BaseException:
            connection.abort()
            raise
        return connection

    @staticmethod
    def handshake_bytes(
        codec: Codec,
        target: Target,
        frame_max: int,
        channel_max: int,
        control: int | None = None,
        properties: dict[str, Any] | None = None,
    ) -> bytes:
        """What :meth:`open_pipelined` sends: the header and every client frame of the
        handshake (and of the control channel's opening)."""
        response = b"\x00" + target.user.encode() + b"\x00" + target.password.encode()
        frames = [
            codec.method(
                "connection.start-ok",
                0,
                client_properties=properties or CLIENT_PROPERTIES,
                mechanism="PLAIN",
                response=response,
                locale="en_US",
            ),
            codec.method(
                "connection.tune-ok", 0, channel_max=channel_max, frame_max=frame_max, heartbeat=0
            ),
            codec.method("connection.open", 0, virtual_host=target.vhost),
        ]
        if control is not None:
            frames.append(codec.method("channel.open", control))
        return codec.spec.protocol_header + codec.encode_all(frames)

    def _expect_handshake(
        self, target: Target, name: str, timeout: float, authenticating: bool = False
    ) -> MethodFrame:
        """The next ``name`` on channel 0; frames after it stay for the next expectation."""
        deadline = time.monotonic() + timeout
        while True:
            box = self.inbox.get(0, deque())
            while box:
                frame = box.popleft()
                if isinstance(frame, ProtocolHeader):
                    raise ConnectionFailed(
                        f"{target.safe_url}: the broker does not speak AMQP "
                        f"{self.protocol} (it answered {frame!r})"
                    )
                if isinstance(frame, MethodFrame) and frame.name == name:
                    return frame
            if self.ended is not None:
                if authenticating and self.ended.reply_code in (None, 403, 530):
                    raise AuthenticationFailed(
                        f"{target.safe_url}: the broker refused the login or virtual host "
                        f"({self.ended})"
                    )
                raise ConnectionFailed(f"{target.safe_url}: handshake failed: {self.ended}")
            if time.monotonic() >= deadline:
                raise ConnectionFailed(f"{target.safe_url}: no {name} within {timeout:.0f} s")
            self.pump(max(0.0, deadline - time.monotonic()))

    # -- sending ---------------------------------------------------------------------------

    def send_frame(self, frame: Frame) -> bool:
        return self.send(self.codec.encode(frame))

    def send(self, data: bytes) -> bool:
        if self.stage == Stage.HEADER and self.header_sent is None:
            self.header_sent = data[:8]  # what a server that speaks it echoes
        return super().send(data)

    # -- receiving -------------------------------------------------------------------------

    def _file(self, frame: Frame) -> None:
        if self.stage in _ANSWERED and self._went_on(frame):
            return
        channel = getattr(frame, "channel", 0)
        if isinstance(frame, MethodFrame):
            if frame.name == "connection.close":
                self.send_frame(self.codec.method("connection.close-ok", 0))
                self._end(closed_by(frame))
                return
            if frame.name == "channel.close":
                self.answered += 1
                self.send_frame(self.codec.method(self._close_ok, channel))
                self.closed_channels[channel] = closed_by(frame)
                self.open_channels.discard(channel)
        self.inbox.setdefault(channel, deque()).append(frame)

    @property
    def ended_by_us(self) -> bool:
        """Whether the connection ended on a close naming channel.close-ok while it had
        answered a broker's channel close with one itself: RabbitMQ 3.10 closed a lane's
        connection once with 504 "expected 'channel.open'" on a close-ok, during a valid walk
        that passes alone every time. Whose close-ok it was is not known: the cases that were
        in flight run again alone."""
        ended = self.ended
        close_ok = (self._close_ok.class_index, self._close_ok.index)
        return self.answered > 0 and ended is not None and ended.method == close_ok

    def _went_on(self, frame: Frame) -> bool:
        """On a connection prepared only part of the way: whether ``frame`` answers the case
        there (a method that is not the connection's close, which ends it as ever: the server
        going on with the handshake, or closing a channel the case opened too early; the header
        the case sent, echoed). Then the connection ends with it (nothing more is read)."""
        if isinstance(frame, ProtocolHeader):
            if frame.data != self.header_sent:
                return False  # another header: the server's own, a close to follow
            ended = Outcome(
                OutcomeKind.REPLY,
                text=f"it answered with the header sent, {frame!r}: it speaks it",
                frames=(frame,),
                reply="protocol header",
            )
        elif not isinstance(frame, MethodFrame) or frame.name == "connection.close":
            return False
        elif frame.name == "channel.close":
            ended = closed_by(frame)
        else:
            ended = Outcome(
                OutcomeKind.REPLY, text=f"it went on: {frame.name}", frames=(frame,),
                reply=frame.name,
            )  # fmt: skip
        self.inbox.setdefault(0, deque()).append(frame)
        self._end(ended)
        return True

    def _stops(self, channel: int, frame: Any) -> Outcome | None:
        if isinstance(frame, MethodFrame) and frame.name == "channel.close":
            return self.closed_channels.get(channel) or closed_by(frame)
        return None

    def call(self, frame: MethodFrame, timeout: float = 5.0) -> MethodFrame | Outcome:
        """Send a synchronous method and wait for one of its responses."""
        self.send_frame(frame)
        responses = tuple(f"{frame.method.class_name}.{r}" for r in frame.method.responses)
        reply: MethodFrame | Outcome = self.wait(frame.channel, responses, timeout)
        return reply

    # -- channels and closing --------------------------------------------------------------

    def open_channel(self, channel: int, timeout: float = 5.0) -> Outcome | None:
        """Open ``channel``; None on success, else what happened instead."""
        self.inbox.pop(channel, None)
        self.closed_channels.pop(channel, None)
        reply = self.call(self.codec.method("channel.open", channel), timeout)
        if isinstance(reply, Outcome):
            return reply
        self.open_channels.add(channel)
        return None

    def delete_entities(
        self,
        queues: Iterable[Name],
        exchanges: Iterable[Name],
        timeout: float = 5.0,
        window: int = 100,
    ) -> list[Name]:
        """Delete these queues and exchanges, ``window`` at a time, each on a channel of its
        own (a refusal closes only that channel; the others stay open for the next round);
        the names that could not be deleted (all that are left once the broker stops
        answering)."""
        todo = deque([("queue", name) for name in sorted(queues, key=repr)])
        todo += [("exchange", name) for name in sorted(exchanges, key=repr)]
        left: list[Name] = []
        gone = self.codec.spec.constant("not-found").value  # deleted already: not left over
        window = max(1, min(window, self.channel_max or window))
        while todo:
            batch = [todo.popleft() for _ in range(min(window, len(todo)))]
            out = []
            opening = [c not in self.open_channels for c in range(1, len(batch) + 1)]
            for channel, (kind, name) in enumerate(batch, 1):
                if opening[channel - 1]:
                    self.inbox.pop(channel, None)
                    self.closed_channels.pop(channel, None)
                    out.append(self.codec.encode(self.codec.method("channel.open", channel)))
                out.append(self._delete_frame(kind, name, channel))
            self.send(b"".join(out))
            for channel, (kind, name) in enumerate(batch, 1):
                rest = [n for _, n in batch[channel:]] + [n for _, n in todo]
                if opening[channel - 1]:  # (a refusal read meanwhile may have closed it)
                    opened = self.wait(channel, ("channel.open-ok",), timeout)
                    if isinstance(opened, Outcome):
                        return [*left, name, *rest]
                    self.open_channels.add(channel)
                reply = self.wait(channel, (f"{kind}.delete-ok",), timeout)
                if isinstance(reply, Outcome):
                    self.open_channels.discard(channel)
                    if reply.reply_code != gone:
                        left.append(name)
                    if reply.kind == OutcomeKind.TIMEOUT or self.ended is not None:
                        return left + rest
        return left

    def _delete_frame(self, kind: str, name: Name, channel: int) -> bytes:
        if isinstance(name, str):
            return self.codec.encode(self.codec.method(f"{kind}.delete", channel, **{kind: name}))
        # a name that is not UTF-8 (a lenient broker took one): the same bytes, unchecked
        method = self.codec.spec.method(f"{kind}.delete")
        values = [
            raw.Raw(raw.shortstr(name)) if f.name == kind else ZERO_VALUES[f.type]
            for f in method.fields
        ]
        payload = raw.method_payload(
            method.class_index, method.index, raw.arguments(method, values)
        )
        return raw.frame(self.codec.frame_method, channel, payload)

    def close(self, timeout: float = 2.0) -> None:
        """Close politely (connection.close, wait for close-ok), then the socket."""
        if self.ended is None:
            self.send_frame(
                self.codec.method("connection.close", 0, reply_code=200, reply_text="bye")
            )
            self.wait(0, ("connection.close-ok",), timeout)
        self.abort()
