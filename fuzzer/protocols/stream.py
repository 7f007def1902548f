"""What every family's raw client connection shares: a socket (TLS for ``amqps://``), any bytes
written, what arrives read and filed by channel, and the waits on it.

A family's connection (0-9-1's, 1.0's) subclasses :class:`Stream` with its reader and says how
an arriving frame is filed (:meth:`Stream._file`: answering the peer's closes the way a client
must) and which frame on a channel ends a wait there (:meth:`Stream._stops`: a channel's close,
a session's end or a link's detach with an error).
"""

from __future__ import annotations

import abc
import contextlib
import select
import socket
import time
from collections import deque
from typing import Any, Protocol

from amqpfuzz.spec import OutcomeKind, RemoteProtocolError

from ..brokers import Target
from .outcome import Outcome, Unreachable

__all__ = ["Stream", "open_socket"]


class Reader(Protocol):
    def feed(self, data: bytes) -> list[Any]: ...


def open_socket(target: Target, timeout: float) -> socket.socket:
    """A connected socket to ``target`` (TLS for ``amqps://``); Unreachable if not."""
    try:
        sock = socket.create_connection((target.host, target.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        context = target.ssl_context()
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname=target.host)
    except OSError as exc:
        raise Unreachable(f"{target.safe_url}: cannot connect: {exc.strerror or exc}") from None
    return sock


class Stream(abc.ABC):
    """A connection's socket and what came on it: frames by channel in :attr:`inbox`, the
    channels the peer closed in :attr:`closed_channels`, how the connection ended in
    :attr:`ended`."""

    reader: Reader

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox: dict[int, deque[Any]] = {}
        self.closed_channels: dict[int, Outcome] = {}
        self.open_channels: set[int] = set()
        self.ended: Outcome | None = None
        self._salvaging = False

    @abc.abstractmethod
    def _file(self, frame: Any) -> None:
        """File one frame (or protocol header) that arrived, answering what must be."""

    @abc.abstractmethod
    def _stops(self, channel: int, frame: Any) -> Outcome | None:
        """The outcome ``frame`` on ``channel`` brings a wait there to (None: it does not)."""

    # -- sending ---------------------------------------------------------------------------

    def send(self, data: bytes) -> bool:
        """Write bytes; False if the socket is already closed (a result, not an error)."""
        try:
            self.sock.sendall(data)
        except OSError:
            self._salvage()
            self._end(Outcome(OutcomeKind.SOCKET_CLOSE, text="closed while sending"))
            return False
        return True

    def _salvage(self) -> None:
        """What the peer sent before it closed (its close, with the reason) is still read:
        a peer that refuses a large frame closes before the frame is all sent."""
        if self._salvaging or self.ended is not None:
            return
        self._salvaging = True
        try:
            while self.ended is None and self.pump(0):
                pass
        finally:
            self._salvaging = False

    # -- receiving -------------------------------------------------------------------------

    def pump(self, timeout: float) -> bool:
        """Read what arrives within ``timeout`` and file it; False if nothing came."""
        if self.ended is not None:
            return False
        try:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready and not self._pending_tls():
                return False
            data = self.sock.recv(262144)
        except OSError as exc:
            self._end(Outcome(OutcomeKind.SOCKET_CLOSE, text=str(exc)))
            return True
        if not data:
            self._end(Outcome(OutcomeKind.SOCKET_CLOSE, text="the broker closed the socket"))
            return True
        try:
            frames = self.reader.feed(data)
        except RemoteProtocolError as exc:
            self._end(Outcome(OutcomeKind.BAD_FRAME, text=str(exc)))
            return True
        for frame in frames:
            self._file(frame)
        return True

    def _pending_tls(self) -> bool:
        pending = getattr(self.sock, "pending", None)
        return bool(pending and pending())

    def collect(
        self, channel: int, names: tuple[str, ...], timeout: float, skip: int = 0
    ) -> tuple[list[Any], Any]:
        """Frames on ``channel`` up to the first one named ``names`` (excluded) after ``skip``
        others so named, and that one, or the Outcome that came instead (a close of the
        channel or the connection, the socket, a timeout)."""
        seen: list[Any] = []
        deadline = time.monotonic() + timeout
        while True:
            queue = self.inbox.get(channel)
            while queue:
                frame = queue.popleft()
                stopped = self._stops(channel, frame)
                if stopped is not None:  # (before any name: an end with an error is no answer)
                    return seen, stopped
                if getattr(frame, "name", None) in names:
                    if skip == 0:
                        return seen, frame
                    skip -= 1  # an answer to the case itself: it stays among the frames
                seen.append(frame)
            if self.ended is not None:
                return seen, self.ended
            left = deadline - time.monotonic()
            if left <= 0 and not self.pump(0):  # what already arrived still counts
                return seen, Outcome(
                    OutcomeKind.TIMEOUT, text=f"no {' or '.join(names)} in {timeout:g} s"
                )
            if left > 0:
                self.pump(left)

    def wait(self, channel: int, names: tuple[str, ...], timeout: float) -> Any:
        """The next frame named ``names`` on ``channel``, or the Outcome that came instead;
        frames before it on the channel are discarded."""
        return self.collect(channel, names, timeout)[1]

    # -- ending ----------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.ended is None

    @property
    def ended_by_us(self) -> bool:
        """Whether the connection may have ended on an answer the connection itself sent (not
        on anything a case sent): the cases in flight on it are run again alone then."""
        return False

    def _end(self, outcome: Outcome) -> None:
        if self.ended is None:
            self.ended = outcome
        with contextlib.suppress(OSError):
            self.sock.close()

    def abort(self) -> None:
        self._end(Outcome(OutcomeKind.SOCKET_CLOSE, text="closed by us"))
