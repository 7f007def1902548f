"""What the session-per-case protocols (1.0, 0-10) share: their connections' handshake and
polite close (:class:`SessionConnection`), and their drivers (:class:`SessionDriver`).

A case runs in a session of its own: on a shared connection its session is opened ahead and
awaited, the case goes, and behind it the session's end, whose answer proves the session
survived (a case that ends its session itself gets no probe: the answer to its own end is the
proof). A case that may end its connection, or wants a channel with no session (``fresh``),
the connection's own frames (``none``), a connection right after the protocol headers
(``start``) or one with nothing sent yet (``header``), has a connection of its own.

Each protocol says how its sessions open and end on a connection (:meth:`SessionConnection.
opening`, :meth:`~SessionConnection.ending`, :meth:`~SessionConnection.open_session`),
which of a case's items end its session (:meth:`~SessionDriver.own_ends`), how its frames are
sized (:attr:`~SessionDriver.frame_header`, :meth:`~SessionDriver.frame_size`), and the step
type its strategies render (:attr:`~SessionDriver.wire`).
"""

from __future__ import annotations

import abc
import socket
import time
from typing import Any, ClassVar, Protocol

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case, Placement

from ..brokers import Target
from .driver import Driver
from .outcome import ConnectionFailed, Outcome
from .stream import Stream

__all__ = ["MECHANISMS", "STAGES", "SessionConnection", "SessionDriver", "Wire"]

MECHANISMS = ("PLAIN", "ANONYMOUS")  # the SASL mechanisms amqpfuzz can log in with
CHANNEL_MAX = 0xFFFF
# placements that need a connection prepared only so far (the rest: open, with its control)
STAGES = (Placement.START, Placement.HEADER)


class SessionConnection(Stream):
    """A raw client connection of a session-per-case protocol: its socket, the SASL login's
    words, the handshake's reads, sessions opened by channel, and the polite close."""

    frame_size: ClassVar[int]  # the max-frame-size we ask for

    def __init__(self, sock: socket.socket, codec: Any) -> None:
        super().__init__(sock)
        self.codec = codec
        self.reader = codec.reader(self.frame_size)
        self.frame_max = self.frame_size
        self.channel_max = CHANNEL_MAX
        self.mechanisms: tuple[str, ...] = ()  # what the peer offered (none: no SASL layer)
        self.mechanism = ""  # what we logged in with
        self._closing = False

    @classmethod
    @abc.abstractmethod
    def open(cls, target: Target, *, timeout: float = 10.0) -> SessionConnection:
        """Connect, log in and open (ConnectionFailed if not)."""

    @classmethod
    @abc.abstractmethod
    def prepared(cls, target: Target, stage: str, *, timeout: float = 10.0) -> SessionConnection:
        """A connection prepared only so far: ``header`` (connected, nothing sent) or
        ``start`` (the protocol headers exchanged, the connection not yet opened)."""

    @abc.abstractmethod
    def open_session(self, channel: int, timeout: float = 5.0) -> Outcome | None:
        """Open a session on ``channel``; None once the peer answered it, else the outcome."""

    @abc.abstractmethod
    def opening(self, channel: int) -> bytes:
        """The bytes that open a session on ``channel`` (its answer not awaited)."""

    @abc.abstractmethod
    def ending(self, channel: int) -> bytes:
        """The bytes that end the session on ``channel`` (the peer answers them)."""

    @abc.abstractmethod
    def live(self, channel: int) -> bool:
        """Whether the session on ``channel`` was answered (and not ended since)."""

    @abc.abstractmethod
    def closing_frame(self) -> bytes:
        """The bytes of a polite close of the connection."""

    @staticmethod
    def plain(target: Target) -> bytes:
        """SASL PLAIN's response for the target's credentials."""
        return b"\x00" + target.user.encode() + b"\x00" + target.password.encode()

    def _next(self, target: Target, timeout: float) -> Any:
        """The next protocol header, frame or control of the handshake (on channel 0)."""
        deadline = time.monotonic() + timeout
        while True:
            box = self.inbox.get(0)
            if box:
                return box.popleft()
            if self.ended is not None:
                raise self._failed(target)
            if time.monotonic() >= deadline:
                raise ConnectionFailed(f"{target.safe_url}: no answer within {timeout:.0f} s")
            self.pump(max(0.0, deadline - time.monotonic()))

    def _failed(self, target: Target) -> ConnectionFailed:
        """The error of a handshake the peer ended."""
        return ConnectionFailed(f"{target.safe_url}: handshake failed: {self.ended}")

    def _closed(self) -> bool:
        """Whether the peer's answer to our close has come (beyond the socket's end)."""
        return False

    def close(self, timeout: float = 2.0) -> None:
        """Close politely (the close, the peer's answer awaited), then the socket."""
        if self.ended is None:
            self._closing = True
            self.send(self.closing_frame())
            deadline = time.monotonic() + timeout
            while self.ended is None and time.monotonic() < deadline and not self._closed():
                self.pump(max(0.0, deadline - time.monotonic()))
        self.abort()


class Wire(Protocol):
    """A session-per-case family's step: bytes with a channel (the case's, symbolically)."""

    def __call__(self, data: bytes, label: str, channel: int) -> Any: ...


class SessionDriver(Driver):
    """A driver whose cases each run in a session of their own."""

    connection: ClassVar[type[SessionConnection]]
    # the octets of a frame's header (the least a frame can be); the step type that recorded
    # frames become again, and the channel that stands for the case's own session in it
    frame_header: ClassVar[int]
    wire: ClassVar[Wire]
    case_channel: ClassVar[int]

    @staticmethod
    @abc.abstractmethod
    def frame_size(data: bytes, at: int) -> int:
        """The size a frame's header at ``at`` gives (the whole header is there)."""

    @abc.abstractmethod
    def own_ends(self, case: Case) -> int:
        """How many times the case ends its own session."""

    def connect(self, target: Target, *, timeout: float = 10.0) -> SessionConnection:
        return self.connection.open(target, timeout=timeout)

    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        try:
            self.connect(target, timeout=timeout).close()
        except ConnectionFailed as exc:
            return f"the target does not speak AMQP {protocol}: {exc}"
        return None

    def serves(self, target: Target, timeout: float, probe: str) -> str | None:
        """The peer accepts a connection and opens a session on it."""
        started = time.monotonic()
        try:
            connection = self.connect(target, timeout=timeout)
        except ConnectionFailed as exc:
            return str(exc)
        try:
            left = max(0.5, timeout - (time.monotonic() - started))
            problem = connection.open_session(1, left)
        finally:
            connection.close(timeout=1.0)
        return None if problem is None else f"a session after it got {problem}"

    def spare(self, target: Target, timeout: float, stage: str | None = None) -> SessionConnection:
        """A connection of its own: open, with its control session opened and answered (a
        case and the probe behind it then go in one write); or, for a ``stage``, prepared only
        so far."""
        if stage is not None:
            return self.connection.prepared(target, stage, timeout=timeout)
        fast = self._pipelined(target, timeout)
        if fast is not None:
            return fast
        connection = self.connect(target, timeout=timeout)
        problem = connection.open_session(self.rules.control, timeout)
        if problem is not None:
            connection.abort()
            raise ConnectionFailed(f"{target.safe_url}: a session was refused: {problem}")
        self._learnt(target, connection)
        return connection

    def _pipelined(self, target: Target, timeout: float) -> SessionConnection | None:
        """A spare whose whole handshake goes in one write, where the driver knows how
        (None: step by step)."""
        return None

    def _learnt(self, target: Target, connection: SessionConnection) -> None:
        """What a spare opened step by step taught for the next ones."""

    def stage(self, case: Case) -> str | None:
        """``start`` or ``header`` for a case that needs a connection prepared only so far."""
        return case.placement if case.placement in STAGES else None

    def needs_own_connection(self, case: Case) -> bool:
        return (
            case.placement != Placement.OPEN
            or case.kills_connection
            or case.expected.outcome == OutcomeKind.SOCKET_CLOSE
        )

    def own_channel(self, case: Case) -> int:
        """The control session for a case that wants one; the next channel (no session) for
        the others."""
        control = self.rules.control
        return control if case.placement == Placement.OPEN else control + 1

    def open_channel(self, connection: Any, channel: int) -> bytes:
        return bytes(connection.opening(channel))

    def close_channel(self, connection: Any, channel: int) -> bytes:
        return bytes(connection.ending(channel))

    def probe(self, connection: Any, channel: int) -> bytes:
        """The session's end, once its opening was answered; before that, nothing: the answer
        to the opening is the proof (a peer may drop a session opened and ended in one read)."""
        return self.close_channel(connection, channel) if connection.live(channel) else b""

    def probes(self, case: Case) -> bool:
        """No probe behind a case that ends its session itself."""
        return self.own_ends(case) == 0

    def echoes(self, case: Case) -> int:
        """The ends of the case's own session beyond the one whose answer is the proof."""
        return max(0, self.own_ends(case) - 1)

    def missing_responses(self, case: Case, frames: list[Any]) -> tuple[str, ...]:
        """A valid case's replies (each is due) that have not come."""
        if case.operator is not None:
            return ()
        got = {getattr(f, "name", None) for f in frames}
        return tuple(r for r in case.expected.responses if r not in got)

    def recorded(self, data: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Protocol headers and whole frames become steps again; a frame on a channel other
        than 0 was on the case's session, and goes on the one a replay gives it."""
        steps: list[Any] = []
        at = 0
        while at < len(data):
            if data.startswith(b"AMQP", at):
                steps.append(self.wire(data[at : at + 8], "protocol header", 0))
                at += 8
                continue
            whole = at + self.frame_header <= len(data)
            size = self.frame_size(data, at) if whole else 0
            if size < self.frame_header or at + size > len(data):
                steps.append(self.wire(data[at:], "what is not a whole frame", 0))
                break
            frame = data[at : at + size]
            channel = int.from_bytes(frame[6:8], "big")
            label = f"frame on channel {channel}"
            steps.append(self.wire(frame, label, self.case_channel if channel else 0))
            at += size
        return tuple(steps), ()
