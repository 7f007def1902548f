"""What the drivers of the session-per-case protocols (1.0, 0-10) share.

A case runs in a session of its own: on a shared connection its session is opened ahead and
awaited, the case goes, and behind it the session's end, whose answer proves the session
survived (a case that ends its session itself gets no probe: the answer to its own end is the
proof). A case that may end its connection, or wants a channel with no session (``fresh``),
the connection's own frames (``none``), a connection right after the protocol headers
(``start``) or one with nothing sent yet (``header``), has a connection of its own.

Each protocol says how its sessions open and end on a connection (:meth:`open_channel`,
:meth:`close_channel`, :meth:`session_live`), which of a case's items end its session
(:meth:`own_ends`), how its frames are sized (:data:`frame_header`, :meth:`frame_size`), and
the step type its strategies render (:data:`wire`).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from amqpfuzz.strategies import Case

from ..brokers import Target
from .base import ConnectionFailed, Driver

__all__ = ["STAGES", "SessionDriver", "text"]

# placements that need a connection prepared only so far (the rest: open, with its control)
STAGES = ("start", "header")


def text(value: object) -> str:
    """A property's value as text (bytes as UTF-8; None as nothing)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


class SessionDriver(Driver):
    """A driver whose cases each run in a session of their own."""

    # the octets of a frame's header (the least a frame can be); the step type that recorded
    # frames become again, Wire(data, label, channel), and the channel that stands for the
    # case's own session in it
    frame_header: ClassVar[int]
    wire: ClassVar[type[Any]]
    case_channel: ClassVar[int]

    @staticmethod
    @abstractmethod
    def frame_size(data: bytes, at: int) -> int:
        """The size a frame's header at ``at`` gives (the whole header is there)."""

    @abstractmethod
    def session_live(self, connection: Any, channel: int) -> bool:
        """Whether the session on ``channel`` was answered (and not ended since)."""

    @abstractmethod
    def own_ends(self, case: Case) -> int:
        """How many times the case ends its own session."""

    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        try:
            self.connect(target, timeout=timeout).close()
        except ConnectionFailed as exc:
            return f"the target does not speak AMQP {protocol}: {exc}"
        return None

    def stage(self, case: Case) -> str | None:
        """``start`` or ``header`` for a case that needs a connection prepared only so far."""
        return case.channel if case.channel in STAGES else None

    def needs_own_connection(self, case: Case) -> bool:
        return (
            case.channel != "open"
            or case.kills_connection
            or case.expected.outcome in ("socket-close",)
        )

    def own_channel(self, case: Case) -> int:
        """The control session for a case that wants one; the next channel (no session) for
        the others."""
        return self.control if case.channel == "open" else self.control + 1

    def probe(self, connection: Any, channel: int) -> bytes:
        """The session's end, once its opening was answered; before that, nothing: the answer
        to the opening is the proof (a peer may drop a session opened and ended in one read)."""
        return (
            self.close_channel(connection, channel)
            if self.session_live(connection, channel)
            else b""
        )

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
