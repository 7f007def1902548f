"""What every family's serving peer does with one connection, whatever the protocol: send and
log, read the client's frames as they come, and hand them on until the client goes quiet.

A family's play of a connection (its ``_Play``) is a :class:`Conversation` with its own
:meth:`Conversation._handle` (what a frame of the client's means), :meth:`~Conversation._label`
(how a frame is logged), :meth:`~Conversation._refuse` (a malformed stream, in its words) and
the reader of its frames (:meth:`~Conversation._pending`: what it holds of a frame to come).

Silence is the peer's last resort for knowing that a client has done what it would: where the
one who runs the client hears its application (a shim's events, :class:`Heard`), a wait ends
as soon as what it waits for was reported and the socket stayed still a moment (``BRIEF``),
not after the whole quiet time; what nobody reports still waits for silence.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

from amqpfuzz.spec import AmqpfuzzError, RemoteProtocolError

from .served import Exchange

__all__ = ["BRIEF", "Conversation", "Ended", "Heard", "Listener", "ServingError"]

# Seconds the socket must stay still after the client's application reported what a wait waits
# for: what the library sends along with it (an ack behind a delivery) is in flight by then.
BRIEF = 0.01
TICK = 0.005  # how often a wait that can end on a report looks at the reports
# Seconds a client has to answer the peer's own close (or close its socket), within the case's
# time: a round trip it owes at once; one that has not answered by then is hanging.
ANSWER = 2.0


class ServingError(AmqpfuzzError):
    """A serving peer cannot listen or serve (one line)."""


class Ended(Exception):
    """The connection ended (the client closed it, or the time is up)."""


class Heard(Protocol):
    """What the client's application reported of the connection being played."""

    def said(self) -> int:
        """How many things it reported so far."""

    def waiting(self) -> bool:
        """Whether it did all its application does and now waits for the peer."""


class Listener:
    """A serving peer's socket: a free loopback port, one connection at a time."""

    def __init__(self) -> None:
        try:
            self.sock = socket.create_server(("127.0.0.1", 0))
        except OSError as exc:
            raise ServingError(f"cannot listen on the loopback interface: {exc}") from None
        self.port = self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()

    def accept(self, timeout: float) -> socket.socket | None:
        """The next connection, or None if none came within ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        try:
            conn, _ = self.sock.accept()
        except (TimeoutError, BlockingIOError):  # none within the time (none waiting: 0)
            return None
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    @staticmethod
    def played(conversation: Conversation, started: float) -> Exchange:
        """``conversation`` played out, its connection closed; its exchange, timed from
        ``started``."""
        try:
            conversation.run()
        finally:
            with contextlib.suppress(OSError):
                conversation.conn.close()
        conversation.ex.duration = time.monotonic() - started
        return conversation.ex


class Conversation:
    """One connection a serving peer plays until ``deadline``, and its :class:`Exchange`."""

    def __init__(
        self, conn: socket.socket, deadline: float, reader: Any, heard: Heard | None = None
    ) -> None:
        self.conn, self.deadline, self.reader = conn, deadline, reader
        self.heard = heard
        self.ex = Exchange()
        self.backlog: list[Any] = []  # frames read past the one expected
        self.lingering = False  # after a strike that ends the connection: its words not kept

    # -- what a family says ----------------------------------------------------------------------

    def run(self) -> None:
        """Plays the connection to its end."""
        raise NotImplementedError

    def _handle(self, frame: Any) -> None:
        raise NotImplementedError

    def _label(self, frame: Any) -> str:
        return repr(frame)

    def _speaks(self, frame: Any) -> bool:
        """Whether ``frame``, sent after the strike, is the client saying something about it
        (where the specification wants the socket closed without a word): every frame, unless
        the family can tell what a client had in flight when the strike came."""
        return True

    def _refuse(self, message: str) -> None:
        """What the client sent cannot be read: a violation in the family's words."""
        raise NotImplementedError

    def _pending(self) -> int:
        """Octets read that do not yet make a whole frame."""
        return int(self.reader.buffered)

    # -- sending and receiving -------------------------------------------------------------------

    def _send(self, data: bytes, label: str) -> None:
        self.ex.sent.append(label)
        try:
            self.conn.sendall(data)
        except OSError:
            self.ex.ended = "socket"
            raise Ended from None

    def _read(self, wait: float) -> list[Any] | None:
        """Frames the client sent within ``wait`` seconds ([] if none; None once it closed)."""
        if self.backlog:
            frames, self.backlog = self.backlog, []
            return frames
        self.conn.settimeout(max(0.001, min(wait, self.deadline - time.monotonic())))
        try:
            data = self.conn.recv(65536)
        except TimeoutError:
            return []
        except OSError:
            data = b""
        if not data:
            self.ex.ended = "socket"
            return None
        after = self.ex.struck is not None and not self.lingering
        if self.ex.malformed is not None:
            return []
        try:
            read: list[Any] = self.reader.feed(data)
        except RemoteProtocolError as exc:
            if after:
                self.ex.after_strike.append(data[:64].hex())
            self.ex.malformed = f"{type(exc).__name__}: {exc}"
            self._refuse(f"malformed frame from the client: {exc}")
            return []
        for frame in read:
            self.ex.received.append(self._label(frame))
            if after and self._speaks(frame):
                self.ex.after_strike.append(self._label(frame))
        return read

    def _said(self) -> int:
        """How many things the client's application reported so far (0 where nobody hears
        it): a mark a wait's ``until`` counts from."""
        return self.heard.said() if self.heard is not None else 0

    def _await_answer(self, *, settle: bool = False) -> None:
        """After the peer's own close (or a strike that leaves nothing to go on with): the
        client's answer, for ``ANSWER`` seconds at most (the case's time left, if less); none
        is a hang (``ended`` stays ``timeout``)."""
        self.deadline = min(self.deadline, time.monotonic() + ANSWER)
        self._wait(self.deadline - time.monotonic(), settle=settle)

    def _wait(
        self, quiet: float, *, settle: bool = False, until: Callable[[Heard], bool] | None = None
    ) -> None:
        """Handles what the client sends until it is quiet for ``quiet`` seconds (``settle``:
        the first time it is, even in the middle of a frame), or, where the client is heard,
        for ``BRIEF`` once ``until`` holds of what it reported."""
        heard = self.heard if until is not None else None
        still = time.monotonic()  # since when nothing came
        while time.monotonic() < self.deadline:
            frames = self._read(quiet if heard is None else min(quiet, TICK))
            if frames is None:
                raise Ended
            now = time.monotonic()
            if frames:
                for frame in frames:
                    self._handle(frame)
                still = time.monotonic()
                continue
            if not settle and self._pending():
                continue
            if now - still >= quiet or heard is None:
                return
            if now - still >= BRIEF and until is not None and until(heard):
                return
