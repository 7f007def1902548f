"""A raw AMQP 0-10 client connection: our codec over a socket, nothing refused.

:meth:`Connection.open` sends the 0-10 protocol header and does the client's part of the
handshake (``connection.start``/``start-ok`` with SASL PLAIN or ANONYMOUS, ``tune``/``tune-ok``,
``open``/``open-ok``); :meth:`Connection.attach` attaches a session on a channel (``session.attach``
answered by ``session.attached``, then ``session.command-point`` at command 0). What arrives is
filed by channel. The peer's ``connection.close`` and ``session.detach`` are answered the way a
client must. What a case led to is an :class:`Outcome`: a reply, ``session-close`` (a
``session.detached`` with a code other than normal, or the peer's own ``session.detach``),
``execution-close`` (an ``execution.exception`` with its error code), ``connection-close`` (with
the close code), the socket closing, a timeout.

A peer that answers the 0-10 header with another (RabbitMQ and GarageMQ answer with 0-9-1's)
does not speak 0-10: :class:`NotSpoken` says which header it sent and whether it then closed
the socket, which is what the specification requires of it.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from typing import Any

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp010.codec import (
    Codec,
    Command,
    Control,
    Header,
    StreamReader,
    codec_for,
)

from ...brokers import Target
from ..outcome import AuthenticationFailed, ConnectionFailed, Outcome
from ..sessions import CHANNEL_MAX, MECHANISMS, SessionConnection
from ..stream import open_socket

__all__ = ["MECHANISMS", "Connection", "NotSpoken", "header_text"]

FRAME_SIZE = 65535  # the max-frame-size we ask for (a uint16 in 0-10)
NORMAL = 0  # session.detach-code normal
SETTLE = 1.0  # how long a peer that answered with another header has to close the socket
_DETACHED = "the peer detached"


def header_text(data: bytes) -> str:
    """A protocol header as its octets say: ``AMQP 0 0 9 1``."""
    if data[:4] == b"AMQP" and len(data) == 8:
        return "AMQP " + " ".join(str(b) for b in data[4:])
    return repr(data)


class NotSpoken(ConnectionFailed):
    """The peer answered the 0-10 protocol header with another: ``answered`` (its octets) and
    whether it ``closed`` the socket after it (what the specification requires)."""

    def __init__(self, target: Target, answered: bytes, closed: bool) -> None:
        then = "and closed the socket" if closed else "and kept the socket open"
        super().__init__(
            f"{target.safe_url}: the broker does not speak AMQP 0-10: it answered the 0-10 "
            f"protocol header with {header_text(answered)} {then}"
        )
        self.answered = answered
        self.closed = closed


def _bytes(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value or "").encode()


class Connection(SessionConnection):
    """One open 0-10 connection (after ``open-ok``)."""

    frame_size = FRAME_SIZE
    codec: Codec
    reader: StreamReader

    def __init__(self, sock: socket.socket, codec: Codec) -> None:
        super().__init__(sock, codec)
        self.server_properties: dict[str, Any] = {}
        self.sessions: dict[int, bytes] = {}  # our channel -> the name of its session
        self.attached: set[int] = set()  # channels whose attach the peer answered
        self._detaching: set[int] = set()

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, target: Target, *, timeout: float = 10.0) -> Connection:
        """Connect, negotiate 0-10, log in and open the virtual host."""
        connection = cls.prepared(target, "header", timeout=timeout)
        try:
            connection.handshake(target, timeout)
        except BaseException:
            connection.abort()
            raise
        return connection

    @classmethod
    def prepared(cls, target: Target, stage: str, *, timeout: float = 10.0) -> Connection:
        """A connection prepared only so far: ``header`` (connected, nothing sent) or
        ``start`` (the protocol headers exchanged and ``connection.start`` read; the case
        answers it, or not)."""
        connection = cls(open_socket(target, timeout), codec_for("0-10"))
        if stage == "header":
            return connection
        try:
            connection._negotiate(target, timeout)
        except BaseException:
            connection.abort()
            raise
        return connection

    def handshake(self, target: Target, timeout: float) -> None:
        """The whole client side of the handshake, from the protocol header on."""
        start = self._negotiate(target, timeout)
        self._login(target, start, timeout)
        tune = self._expect(target, ("connection.tune",), timeout)
        most = tune["channel-max"]
        self.channel_max = min(CHANNEL_MAX, int(most)) if most else CHANNEL_MAX
        size = tune["max-frame-size"]
        self.frame_max = min(FRAME_SIZE, int(size)) if size else FRAME_SIZE
        self.reader.max_frame_size = FRAME_SIZE
        self.codec = self.codec.framed(self.frame_max)
        tune_ok = self.codec.encode_control(
            "connection.tune-ok",
            channel_max=self.channel_max,
            max_frame_size=self.frame_max,
            heartbeat=0,
        )
        opening = self.codec.encode_control("connection.open", virtual_host=target.vhost)
        self.send(tune_ok + opening)
        self._expect(target, ("connection.open-ok",), timeout)

    def _negotiate(self, target: Target, timeout: float) -> Control:
        """Send the 0-10 protocol header; the peer's header and ``connection.start``."""
        self.send(Header().encode())
        got = self._next(target, timeout)
        if not isinstance(got, Header) or got != Header():
            if isinstance(got, Header):
                raise NotSpoken(target, got.encode(), self._closes(SETTLE))
            raise ConnectionFailed(f"{target.safe_url}: a protocol header expected, got {got!r}")
        start = self._expect(target, ("connection.start",), timeout)
        self.server_properties = dict(start["server-properties"] or {})
        offered = start["mechanisms"]
        self.mechanisms = tuple(str(m) for m in getattr(offered, "items", offered or ()))
        return start

    def _login(self, target: Target, start: Control, timeout: float) -> None:
        usable = [m for m in MECHANISMS if m in self.mechanisms]
        if not usable:
            raise ConnectionFailed(
                f"{target.safe_url}: the broker offers SASL {', '.join(self.mechanisms)}; "
                f"amqpfuzz logs in with {' or '.join(MECHANISMS)}"
            )
        self.mechanism = usable[0]
        response = self.plain(target) if self.mechanism == "PLAIN" else b""
        locales = start["locales"]
        locale = next(iter(getattr(locales, "items", locales or ())), "en_US")
        self.send(
            self.codec.encode_control(
                "connection.start-ok",
                client_properties={"product": "amqpfuzz"},
                mechanism=self.mechanism,
                response=response,
                locale=str(locale),
            )
        )

    def _closes(self, timeout: float) -> bool:
        """Whether the peer closes the socket within ``timeout`` (sending nothing more)."""
        deadline = time.monotonic() + timeout
        while self.ended is None and time.monotonic() < deadline:
            self.pump(max(0.0, deadline - time.monotonic()))
        return self.ended is not None and self.ended.kind == OutcomeKind.SOCKET_CLOSE

    def _expect(self, target: Target, names: tuple[str, ...], timeout: float) -> Control:
        got = self._next(target, timeout)
        if not isinstance(got, Control) or got.name not in names:
            if isinstance(got, Control) and got.name == "connection.close":
                raise AuthenticationFailed(
                    f"{target.safe_url}: the broker closed the connection in the handshake: "
                    f"{got['reply-code']} {got['reply-text'] or ''}".rstrip()
                )
            raise ConnectionFailed(
                f"{target.safe_url}: {' or '.join(names)} expected, the broker sent {got!r}"
            )
        return got

    # -- sessions --------------------------------------------------------------------------

    def opening(self, channel: int, name: bytes | None = None) -> bytes:
        """``session.attach`` of a session named for ``channel`` (its answer is the peer's
        ``session.attached``), then ``session.command-point`` at command 0."""
        name = name if name is not None else f"amqpfuzz-{id(self):x}-{channel}".encode()
        self.sessions[channel] = name
        self._detaching.discard(channel)
        attach = self.codec.encode_control("session.attach", channel=channel, name=name)
        point = self.codec.encode_control(
            "session.command-point", channel=channel, command_id=0, command_offset=0
        )
        return attach + point

    def ending(self, channel: int) -> bytes:
        """``session.detach`` of the session on ``channel`` (answered by ``detached``)."""
        self._detaching.add(channel)
        name = self.sessions.get(channel, b"")
        return self.codec.encode_control("session.detach", channel=channel, name=name)

    def open_session(self, channel: int, timeout: float = 5.0) -> Outcome | None:
        """Attach a session on ``channel``; None once the peer's ``attached`` answers it."""
        self.inbox.pop(channel, None)
        self.closed_channels.pop(channel, None)
        self.send(self.opening(channel))
        reply = self.wait(channel, ("session.attached",), timeout)
        if isinstance(reply, Outcome):
            return reply
        self.open_channels.add(channel)
        return None

    def live(self, channel: int) -> bool:
        return channel in self.attached

    # -- receiving -------------------------------------------------------------------------

    def _file(self, frame: Any) -> None:
        if isinstance(frame, Header) or (
            frame.channel == 0 and frame.name.startswith("connection.")
        ):
            if isinstance(frame, Control) and frame.name == "connection.close":
                self._closed_by_peer(frame)
                return
            if isinstance(frame, Control) and frame.name == "connection.heartbeat":
                return
            self.inbox.setdefault(0, deque()).append(frame)
            return
        channel = frame.channel
        if isinstance(frame, Control) and frame.name == "session.attached":
            self.attached.add(channel)
        elif isinstance(frame, Control) and frame.name == "session.detached":
            self.attached.discard(channel)
            self.open_channels.discard(channel)
            if frame["code"] not in (None, NORMAL):
                self.closed_channels[channel] = self._detached(frame)
        elif isinstance(frame, Control) and frame.name == "session.detach":
            # the peer ends the session: answered, and the session is closed
            self.attached.discard(channel)
            self.open_channels.discard(channel)
            self.closed_channels[channel] = Outcome(OutcomeKind.SESSION_CLOSE, text=_DETACHED)
            self.send(
                self.codec.encode_control(
                    "session.detached", channel=channel, name=frame["name"], code=NORMAL
                )
            )
        elif isinstance(frame, Command) and frame.name == "execution.exception":
            self.closed_channels[channel] = self._exception(frame)
        self.inbox.setdefault(channel, deque()).append(frame)

    def _closed_by_peer(self, frame: Control) -> None:
        if not self._closing:
            self._closing = True
            self.send(self.codec.encode_control("connection.close-ok"))
        text = _bytes(frame["reply-text"]).decode("utf-8", "replace")
        self._end(Outcome(OutcomeKind.CONNECTION_CLOSE, frame["reply-code"], text))

    @staticmethod
    def _detached(frame: Control) -> Outcome:
        return Outcome(OutcomeKind.SESSION_CLOSE, frame["code"], "session detached")

    @staticmethod
    def _exception(frame: Command) -> Outcome:
        text = _bytes(frame["description"]).decode("utf-8", "replace")
        return Outcome(OutcomeKind.EXECUTION_CLOSE, frame["error-code"], text)

    def _stops(self, channel: int, frame: Any) -> Outcome | None:
        if isinstance(frame, Command) and frame.name == "execution.exception":
            return self._exception(frame)
        if isinstance(frame, Control) and frame.name == "session.detached":
            return self._detached(frame) if frame["code"] not in (None, NORMAL) else None
        if isinstance(frame, Control) and frame.name == "session.detach":
            return Outcome(OutcomeKind.SESSION_CLOSE, text=_DETACHED)
        return None

    # -- ending ----------------------------------------------------------------------------

    def closing_frame(self) -> bytes:
        return self.codec.encode_control("connection.close", reply_code="normal")

    def _closed(self) -> bool:
        box = self.inbox.get(0) or ()
        return any(getattr(f, "name", "") == "connection.close-ok" for f in box)
