"""A raw AMQP 1.0 client connection: our codec over a socket, nothing refused.

:meth:`Connection.open` logs in (the SASL layer: PLAIN where offered and credentials given,
else ANONYMOUS; or none) and opens the connection; :meth:`Connection.send` writes any bytes;
what arrives is filed by *our* channel: each endpoint numbers its own channels, so a frame on the
peer's channel goes to the session its ``begin`` named in ``remote-channel``. The peer's ``end``
and ``close`` are answered the way a client must. What a case led to is an :class:`Outcome`: a
reply, ``session-close`` or ``link-close`` (an ``end`` or ``detach`` carrying an error),
``connection-close`` (with the error's condition, if any), the socket closing, a timeout.
"""

from __future__ import annotations

import secrets
import socket
from collections import deque
from typing import Any

from amqpfuzz.spec import OutcomeKind, Scope
from amqpfuzz.spec.amqp10.codec import (
    AMQP,
    SASL,
    Codec,
    Composite,
    Frame,
    FrameReader,
    Header,
    Symbol,
    UInt,
    UShort,
    codec_for,
)

from ...brokers import Target
from ..outcome import AuthenticationFailed, ConnectionFailed, Outcome
from ..sessions import CHANNEL_MAX, MECHANISMS, SessionConnection
from ..stream import open_socket

__all__ = ["MECHANISMS", "PEER_CHANNELS", "Connection", "error_of"]

PEER_CHANNELS = 0x10000  # a session the peer began itself is filed at its channel plus this
FRAME_SIZE = 131072  # the max-frame-size we announce


def error_of(scope: Scope, body: Composite, text: str) -> Outcome:
    """The outcome a peer's ``close``, ``end`` or ``detach`` (closing ``scope``) says: its
    error's condition and description, if it carries one."""
    error = body["error"]
    if error is None:
        return Outcome(scope.close, text=text)
    description = error["description"]
    return Outcome(scope.close, str(error["condition"]), str(description or text))


def _container() -> str:
    """A container-id of its own for one connection (see :meth:`Connection.open`)."""
    return f"amqpfuzz-{secrets.token_hex(6)}"


class Connection(SessionConnection):
    """One open 1.0 connection (after the SASL layer and ``open``)."""

    frame_size = FRAME_SIZE
    codec: Codec
    reader: FrameReader

    def __init__(self, sock: socket.socket, codec: Codec) -> None:
        super().__init__(sock, codec)
        self.peer_open: Composite | None = None
        self.peer_begins: dict[int, Composite | None] = {}  # our channel -> the peer's begin
        self.peers: dict[int, int] = {}  # the peer's channel -> ours
        self.begun: set[int] = set()  # our channels whose begin the peer answered
        self.began: dict[int, Frame] = {}  # our channel -> the begin that answered ours
        self._ending: set[int] = set()  # our channels whose end we sent

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        target: Target,
        *,
        timeout: float = 10.0,
        sasl: str | None = "auto",
        container_id: str | None = None,
    ) -> Connection:
        """Connect, log in and open. ``sasl``: ``auto`` (PLAIN if the peer offers it, else
        ANONYMOUS), a mechanism of :data:`MECHANISMS`, or None (no SASL layer). Each connection
        is a container of its own (``amqpfuzz-`` and a random part) unless ``container_id``
        names one: a link is its container pair's and its name's (1.0 section 2.6.1), and two
        connections of one container that attach links of one name steal them from each other
        (Broker-J detaches the first with amqp:link:stolen)."""
        container_id = container_id or _container()
        connection = cls(open_socket(target, timeout), codec_for("1.0"))
        try:
            if sasl is not None:
                connection._login(target, sasl, timeout)
            connection._open(target, container_id, timeout)
        except BaseException:
            connection.abort()
            raise
        return connection

    @classmethod
    def prepared(cls, target: Target, stage: str, *, timeout: float = 10.0) -> Connection:
        """A connection prepared only so far: ``header`` (connected, nothing sent) or
        ``start`` (logged in, the AMQP protocol headers exchanged; ``open`` not sent)."""
        connection = cls(open_socket(target, timeout), codec_for("1.0"))
        if stage == "header":
            return connection
        try:
            connection._login(target, "auto", timeout)
            connection.send(Header(AMQP).encode())
            connection._header(target, AMQP, timeout)
        except BaseException:
            connection.abort()
            raise
        return connection

    @classmethod
    def open_pipelined(
        cls, target: Target, mechanism: str | None, *, timeout: float = 10.0, session: int = 0
    ) -> Connection:
        """Connect, log in with ``mechanism`` (None: no SASL layer), open and begin a session
        on channel ``session``, all in one write, as 1.0 allows (transport 2.4.1, security
        5.3.2); then read the answers. Many connections a second cost less this way."""
        connection = cls(open_socket(target, timeout), codec_for("1.0"))
        try:
            out = b""
            if mechanism is not None:
                connection.mechanism = mechanism
                out += Header(SASL).encode() + connection._init(target, mechanism)
            out += connection._opening(target, _container()) + connection.opening(session)
            connection.send(out)
            if mechanism is not None:
                connection._header(target, SASL, timeout)
                connection._offered(target, timeout)
                connection._outcome(target, timeout)
            connection._opened(target, timeout)
            found = connection.wait(session, ("begin",), timeout)
            if isinstance(found, Outcome):
                raise ConnectionFailed(f"{target.safe_url}: a session was refused: {found}")
            connection.open_channels.add(session)
        except BaseException:
            connection.abort()
            raise
        return connection

    def _login(self, target: Target, sasl: str, timeout: float) -> None:
        self.send(Header(SASL).encode())
        self._header(target, SASL, timeout)
        self._offered(target, timeout)
        usable = [m for m in MECHANISMS if m in self.mechanisms and sasl in ("auto", m)]
        if not usable:
            raise ConnectionFailed(
                f"{target.safe_url}: the broker offers SASL {', '.join(self.mechanisms)}; "
                f"amqpfuzz logs in with {' or '.join(MECHANISMS if sasl == 'auto' else (sasl,))}"
            )
        self.mechanism = usable[0]
        self.send(self._init(target, self.mechanism))
        self._outcome(target, timeout)

    def _offered(self, target: Target, timeout: float) -> None:
        offered = self._expect(target, "sasl-mechanisms", timeout)["sasl-server-mechanisms"]
        self.mechanisms = tuple(str(m) for m in getattr(offered, "items", (offered,)))

    def _init(self, target: Target, mechanism: str) -> bytes:
        response = self.plain(target) if mechanism == "PLAIN" else b""
        init = self.codec.composite(
            "sasl-init",
            mechanism=Symbol(mechanism),
            initial_response=response,
            hostname=target.host,
        )
        return self.codec.frame(init)

    def _outcome(self, target: Target, timeout: float) -> None:
        outcome = self._expect(target, "sasl-outcome", timeout)
        if outcome["code"] != 0:
            raise AuthenticationFailed(
                f"{target.safe_url}: the broker refused the {self.mechanism} login "
                f"(sasl-outcome code {outcome['code']})"
            )

    def _opening(self, target: Target, container_id: str) -> bytes:
        hostname = target.host if target.vhost == "/" else f"vhost:{target.vhost}"
        opening = self.codec.composite(
            "open",
            container_id=container_id,
            hostname=hostname,
            max_frame_size=UInt(FRAME_SIZE),
            channel_max=UShort(CHANNEL_MAX),
        )
        return Header(AMQP).encode() + self.codec.frame(opening)

    def _open(self, target: Target, container_id: str, timeout: float) -> None:
        self.send(self._opening(target, container_id))
        self._opened(target, timeout)

    def _opened(self, target: Target, timeout: float) -> None:
        self._header(target, AMQP, timeout)
        self.peer_open = self._expect(target, "open", timeout)
        size = self.peer_open["max-frame-size"]  # the largest frame we may send it
        self.frame_max = int(size) if size is not None else 0xFFFFFFFF
        most = self.peer_open["channel-max"]
        self.channel_max = min(CHANNEL_MAX, int(most)) if most is not None else CHANNEL_MAX

    def _header(self, target: Target, protocol_id: int, timeout: float) -> None:
        got = self._next(target, timeout)
        if got == Header(protocol_id):
            return
        if not isinstance(got, Header):
            raise ConnectionFailed(f"{target.safe_url}: a protocol header expected, got {got!r}")
        said = f"AMQP {got.protocol_id} {got.major}-{got.minor}-{got.revision}"
        if got.major != 1:
            raise ConnectionFailed(
                f"{target.safe_url}: the broker does not speak AMQP 1.0 (it answered {said})"
            )
        layer = "SASL" if protocol_id == SASL else "plain"
        raise ConnectionFailed(
            f"{target.safe_url}: the broker answered a {layer} AMQP 1.0 header with {said}"
        )

    def _expect(self, target: Target, name: str, timeout: float) -> Composite:
        got = self._next(target, timeout)
        if not isinstance(got, Frame) or got.name != name or got.body is None:
            raise ConnectionFailed(f"{target.safe_url}: {name} expected, the broker sent {got!r}")
        return got.body

    def _failed(self, target: Target) -> ConnectionFailed:
        assert self.ended is not None
        if self.ended.kind == OutcomeKind.BAD_FRAME and self.mechanism == "":
            return ConnectionFailed(
                f"{target.safe_url}: the broker does not speak AMQP 1.0 ({self.ended})"
            )
        return super()._failed(target)

    # -- sessions --------------------------------------------------------------------------

    def opening(self, channel: int) -> bytes:
        """A ``begin`` of a session of ours on ``channel`` (its answer is the peer's begin)."""
        begin = self.codec.composite(
            "begin",
            next_outgoing_id=UInt(0),
            incoming_window=UInt(2048),
            outgoing_window=UInt(2048),
        )
        return self.codec.frame(begin, channel)

    def ending(self, channel: int) -> bytes:
        """An ``end`` of our session on ``channel`` (the peer answers with its own)."""
        self._ending.add(channel)
        return self.codec.frame(self.codec.composite("end"), channel)

    def open_session(self, channel: int, timeout: float = 5.0) -> Outcome | None:
        """Begin a session on ``channel``; None once the peer's begin answers it."""
        self.inbox.pop(channel, None)
        self.closed_channels.pop(channel, None)
        self.send(self.opening(channel))
        reply = self.wait(channel, ("begin",), timeout)
        if isinstance(reply, Outcome):
            return reply
        self.open_channels.add(channel)
        self.peer_begins[channel] = reply.body
        return None

    def live(self, channel: int) -> bool:
        return channel in self.begun

    # -- receiving -------------------------------------------------------------------------

    def _file(self, frame: Any) -> None:
        if not isinstance(frame, Frame) or frame.type != 0 or frame.name == "open":
            self.inbox.setdefault(0, deque()).append(frame)  # the handshake's: headers, SASL
            return
        body = frame.body
        if body is None:
            return  # an empty frame: the peer keeping the connection alive
        if frame.name == "close":
            if not self._closing:
                self._closing = True
                self.send(self.codec.frame(self.codec.composite("close")))
            self._end(error_of(Scope.CONNECTION, body, "the broker closed the connection"))
            return
        ours = self.peers.get(frame.channel, frame.channel + PEER_CHANNELS)
        if frame.name == "begin" and body["remote-channel"] is not None:
            ours = int(body["remote-channel"])
            self.peers[frame.channel] = ours
            self._ending.discard(ours)  # a new session of ours: its end is still to come
            self.begun.add(ours)
            self.began[ours] = frame
        elif frame.name == "end":
            self.peers.pop(frame.channel, None)
            self.begun.discard(ours)
            self.open_channels.discard(ours)
            if body["error"] is not None:
                self.closed_channels[ours] = error_of(Scope.SESSION, body, "session ended")
                if ours not in self._ending and ours < PEER_CHANNELS:
                    self.send(self.ending(ours))  # the peer's own end is answered
            # (a plain end answers ours: one a case sent, too, which ending() did not make)
        self.inbox.setdefault(ours, deque()).append(frame)

    def _stops(self, channel: int, frame: Any) -> Outcome | None:
        if not isinstance(frame, Frame) or frame.body is None:
            return None
        if frame.name == "end" and frame.body["error"] is not None:
            return self.closed_channels.get(channel) or error_of(Scope.SESSION, frame.body, "")
        if frame.name == "detach" and frame.body["error"] is not None:
            return error_of(Scope.LINK, frame.body, "link detached")
        return None

    # -- ending ----------------------------------------------------------------------------

    def closing_frame(self) -> bytes:
        return self.codec.frame(self.codec.composite("close"))
