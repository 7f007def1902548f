"""The seam between the engine's runner and a protocol: what a driver does for it.

The engine (campaigns, replays, conformance runs) knows no protocol. Each family's driver does
what only it can, for one protocol of the family, in four small parts:

* :class:`Handshake`: negotiate and log in, say what a broker announces, check that it serves;
* :class:`Lanes`: where a case runs (a channel, or a session on one), the bytes that open and
  close it, the cheap probe whose answer proves it survived, what a case still awaits;
* :class:`Cleanup`: the names a case created, and their deletion (only those);
* :class:`Replays`: a reproducer's bytes as steps again, and the spec's codes by name.

:class:`Driver` is all four; its :attr:`~Lanes.rules` are its lanes' settings as data. Scenario
playing and stateful programs are not the driver's: a family offers them as parts of its own
(:mod:`.family`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .outcome import Announced, Name, Outcome

if TYPE_CHECKING:
    import socket
    from collections import deque

    from amqpfuzz.strategies import Case, Code

    from ..brokers import Target

__all__ = [
    "ChannelRules",
    "Cleanup",
    "Connection",
    "Driver",
    "Handshake",
    "Lanes",
    "Replays",
]


@dataclass(frozen=True, slots=True)
class ChannelRules:
    """How a family's cases are placed, as data.

    ``control`` is the channel a connection of its own keeps open for probes; the probe's
    answer is one of ``probe_replies``; ``ready_replies`` are the answers to a channel's
    opening that must have come before a case goes on it (none: the opening is sent ahead of
    the case, not waited for); ``probe_ends`` says that the probe's answer ends the channel
    (1.0's ``end``): it is not reused, and needs no close."""

    control: int
    probe_replies: tuple[str, ...]
    ready_replies: tuple[str, ...] = ()
    probe_ends: bool = False


class Connection(Protocol):
    """What the engine's runner uses of an open connection (a driver's own class)."""

    sock: socket.socket
    frame_max: int
    channel_max: int
    inbox: dict[int, deque[Any]]
    open_channels: set[int]
    closed_channels: dict[int, Outcome]
    ended: Outcome | None

    def send(self, data: bytes) -> bool: ...
    def pump(self, timeout: float) -> bool: ...
    def collect(
        self, channel: int, names: tuple[str, ...], timeout: float, skip: int = 0
    ) -> tuple[list[Any], Any]: ...
    def wait(self, channel: int, names: tuple[str, ...], timeout: float) -> Any: ...
    def abort(self) -> None: ...
    def close(self, timeout: float = 2.0) -> None: ...

    @property
    def alive(self) -> bool: ...

    @property
    def ended_by_us(self) -> bool: ...


class Handshake(Protocol):
    """Negotiation: a connection opened and logged in, what the broker says of itself."""

    def connect(self, target: Target, *, timeout: float = 10.0) -> Connection:
        """An open connection, handshake and login done (ConnectionFailed if not)."""

    def announced(self, connection: Connection) -> Announced:
        """What the broker said of itself on ``connection``."""

    def describe(self, target: Target, timeout: float) -> Announced:
        """Connect, read what the broker announces, close (ConnectionFailed if it cannot)."""

    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        """None if ``target`` speaks ``protocol`` (of this family), else why not."""

    def serves(self, target: Target, timeout: float, probe: str) -> str | None:
        """None if the broker accepts a connection and does work on it (``probe`` names
        anything the check creates, which goes with the connection); else what went wrong."""


class Lanes(Protocol):
    """Where cases run: a channel (0-9-1's; 1.0's and 0-10's sessions live on one), opened
    with the case's bytes, a probe behind it; a case that may end its connection, on a
    connection of its own."""

    @property
    def rules(self) -> ChannelRules: ...

    def spare(self, target: Target, timeout: float, stage: str | None = None) -> Connection:
        """A connection for a case of its own, open (ConnectionFailed if not); ``stage`` (one
        :meth:`stage` names) asks for one prepared only so far."""

    def stage(self, case: Case) -> str | None:
        """How far a connection of its own must be prepared for ``case``, if not open."""

    def probes(self, case: Case) -> bool:
        """Whether the probe goes behind ``case`` (not when the case's own answer is one)."""

    def needs_own_connection(self, case: Case) -> bool:
        """Whether ``case`` may end its connection (or needs channel 0, or one not open)."""

    def own_channel(self, case: Case) -> int:
        """The channel ``case`` runs on when it has a connection of its own."""

    def open_channel(self, connection: Connection, channel: int) -> bytes:
        """The bytes that open ``channel`` (sent ahead of the case, not waited for)."""

    def close_channel(self, connection: Connection, channel: int) -> bytes:
        """The bytes that close ``channel`` politely."""

    def probe(self, connection: Connection, channel: int) -> bytes:
        """A cheap synchronous request whose answer (one of the rules' ``probe_replies``)
        proves ``channel`` survived what went before it."""

    def answers(self, case: Case) -> tuple[str, ...]:
        """The replies that prove ``case`` done and its channel alive: the probe's, or where
        no probe goes behind it (:meth:`probes`), the case's own last answer."""

    def echoes(self, case: Case) -> int:
        """How many answers like the probe's the case itself asks for."""

    def missing_responses(self, case: Case, frames: list[Any]) -> tuple[str, ...]:
        """The replies still due to a valid case's synchronous requests, given ``frames``."""

    def seen(self, connection: Connection, channel: int) -> list[Any]:
        """What the peer sent on ``channel`` that a waiting case's awaits and answers read
        (:class:`~amqpfuzz.strategies.cases.Await`): its frames there, in order, since the
        channel was opened for the case, without taking them."""


class Cleanup(Protocol):
    """What a case created, and its deletion."""

    def created(self, case: Case, replies: list[Any], prefix: str) -> Iterable[tuple[str, Name]]:
        """(kind, name) of what ``case`` may have created and is the run's to delete: the
        names it sent that start with ``prefix`` (as sent), and the names the broker chose for
        it (from ``replies``)."""

    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        """Delete these entities (only these); the names that could not be deleted."""


class Replays(Protocol):
    """What a reproducer needs: its bytes as steps again, its codes by name."""

    def recorded(self, data: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """A reproducer's bytes (as sent, on their channel) as the case's steps again, which
        render to the same bytes and tell what they declare, and the frames they make when
        they are valid (whose responses are due), else none."""

    def code(self, name: str) -> Code:
        """The specification's code (reply code, error condition) called ``name``."""


class Driver(Handshake, Lanes, Cleanup, Replays):
    """Everything the engine's runner needs of one protocol family, for one protocol of it
    (:class:`Handshake`, :class:`Lanes`, :class:`Cleanup` and :class:`Replays`), with the
    defaults most families keep. A family's driver that lacks a hook is a type error where it
    is made."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol

    def describe(self, target: Target, timeout: float) -> Announced:
        connection = self.connect(target, timeout=timeout)
        try:
            return self.announced(connection)
        finally:
            connection.close()

    def spare(self, target: Target, timeout: float, stage: str | None = None) -> Connection:
        return self.connect(target, timeout=timeout)

    def stage(self, case: Case) -> str | None:
        return None

    def probes(self, case: Case) -> bool:
        return True

    def answers(self, case: Case) -> tuple[str, ...]:
        return self.rules.probe_replies

    def seen(self, connection: Connection, channel: int) -> list[Any]:
        return list(connection.inbox.get(channel, ()))
