"""The seam between the engine and a protocol: what a driver does, and the words they share.

The engine (campaigns, conformance runs, stateful programs, replays) knows no protocol. Each
protocol family has a driver (:class:`Driver`) that does what only it can: negotiate and log in,
read frames, open and close the places a case runs in (0-9-1's channels), send the cheap probe
that proves a place survived, say what a case's replies mean, name the entities a case created
and delete them, and say what a broker announces. The words they share are the outcome
vocabulary (:class:`Outcome`): a reply, the close of a scope (``connection``, ``channel``,
``session``, ``link``) with the protocol's own code (a reply code, an error condition),
the socket closing, a timeout, bytes that are not the protocol, a broker that is down.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from amqpfuzz.spec import AmqpfuzzError

if TYPE_CHECKING:
    import socket
    from collections import deque

    from hypothesis.stateful import RuleBasedStateMachine

    from amqpfuzz.scenarios import Scenario
    from amqpfuzz.strategies import Case, Code

    from ..brokers import Broker, Target

__all__ = [
    "Announced",
    "AuthenticationFailed",
    "Broken",
    "Connection",
    "ConnectionFailed",
    "Driver",
    "Name",
    "Outcome",
    "Played",
    "ProgramRun",
    "ProgramStep",
    "Unreachable",
    "UnsupportedProtocol",
    "describe",
    "reaction_record",
]

Name = str | bytes  # an entity's name; bytes where it is not UTF-8 (a lenient broker took it)


class ConnectionFailed(AmqpfuzzError):
    """The handshake did not complete."""


class Unreachable(ConnectionFailed):
    """Nothing answers at the target's address."""


class AuthenticationFailed(ConnectionFailed):
    """The broker refused the credentials (or the virtual host)."""


class UnsupportedProtocol(AmqpfuzzError):
    """amqpfuzz cannot drive this protocol (yet), or a driver cannot do this with it."""


def reaction_record(
    outcome: str,
    reply_code: int | None = None,
    class_id: int | None = None,
    method_id: int | None = None,
    *,
    condition: str | None = None,
    reply: str | None = None,
) -> dict[str, Any]:
    """An expected or observed reaction in the record contract's shape (schema 2): the outcome,
    the scope it closed, the protocol's code (a reply code, or an error condition), and the
    method at fault where the protocol says (0-9-1's class and method ids)."""
    scope = outcome.removesuffix("-close") if _closes(outcome) else None
    found: dict[str, Any] = {
        "outcome": outcome,
        "scope": scope,
        "reply_code": reply_code,
        "condition": condition,
        "class_id": class_id,
        "method_id": method_id,
    }
    if reply is not None:
        found["reply"] = reply
    return found


def describe(reaction: Mapping[str, Any]) -> str:
    """``channel-close 404``, ``reply queue.declare-ok``, ``link-close amqp:invalid-field``: a
    reaction (as :func:`reaction_record` makes it) in a few words."""
    words = [str(reaction["outcome"])]
    if reaction.get("reply"):
        words.append(str(reaction["reply"]))
    code = reaction.get("reply_code")
    if code is None:
        code = reaction.get("condition")
    if code is not None:
        words.append(str(code))
    return " ".join(words)


def _closes(outcome: str) -> bool:
    return outcome.endswith("-close") and outcome != "socket-close"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a broker did in answer to a case.

    ``kind`` is ``reply`` (the awaited reply came; the place the case ran in lives),
    ``<scope>-close`` (``channel-close``, ``connection-close``; 1.0: ``session-close``,
    ``link-close``), ``socket-close``, ``timeout``, ``bad-frame`` (the broker sent bytes our
    decoder refuses) or ``broker-down``. A close carries the protocol's terms: ``reply_code``
    with ``class_id`` and ``method_id`` (0-9-1), or ``condition`` (1.0's error symbol).
    """

    kind: str
    reply_code: int | None = None
    class_id: int | None = None
    method_id: int | None = None
    text: str = ""
    frames: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    condition: str | None = None

    @property
    def scope(self) -> str | None:
        """What closed: ``connection``, ``channel``, ``session``, ``link`` (None otherwise)."""
        return self.kind.removesuffix("-close") if _closes(self.kind) else None

    @property
    def code(self) -> int | str | None:
        """The protocol's code for it: the reply code, else the error condition."""
        return self.reply_code if self.reply_code is not None else self.condition

    def as_record(self) -> dict[str, Any]:
        return reaction_record(
            self.kind, self.reply_code, self.class_id, self.method_id, condition=self.condition
        )

    def __str__(self) -> str:
        code = self.code
        if code is not None:
            return f"{self.kind} {code} {self.text}".strip()
        return f"{self.kind} {self.text}".strip()


@dataclass(frozen=True, slots=True)
class Announced:
    """What a target says of itself when a connection opens."""

    product: str = ""
    version: str = ""
    properties: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class Played:
    """How one scenario went on one target.

    ``status`` is ``pass``, ``fail`` (an expectation did not hold; ``line`` and ``step`` say
    where) or ``error`` (the runner could not go on: an unreachable target). ``expected`` and
    ``observed`` are the last expectation checked (the failing one for a failure), as
    :func:`reaction_record` makes them; ``notes`` what the scenario records (a count, a greeting).
    """

    status: str
    message: str = ""
    line: int | None = None
    step: str | None = None
    expected: dict[str, Any] = field(default_factory=lambda: reaction_record("reply"))
    observed: dict[str, Any] = field(default_factory=lambda: reaction_record("reply"))
    notes: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0


class Broken(AssertionError):
    """An invariant a stateful program found broken: which one, in which step, and how."""

    HUNG: ClassVar[str] = "timely answer"  # the invariant of a step the broker never answered

    def __init__(self, invariant: str, step: str, message: str) -> None:
        super().__init__(f"{invariant} in {step}: {message}")
        self.invariant = invariant
        self.step = step
        self.message = message


ProgramStep = dict[str, Any]  # one step of a stateful program, as its reproducer keeps it


class ProgramRun(Protocol):
    """One stateful program as a driver's state machine runs it: its steps so far, the
    invariant it found broken (if any), and how to let go of its connections."""

    trace: list[ProgramStep]
    broken: Broken | None

    def close(self) -> None: ...


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


class Driver(abc.ABC):
    """Everything the engine needs to know of one protocol family, for one protocol of it.

    A case runs in a *channel* (0-9-1's channel; 1.0's session lives on one too): on a shared
    connection, many cases at once, each in its own channel with a probe behind it; a case
    that ends its connection, on a connection of its own (in :attr:`control` or the one after).
    """

    family: ClassVar[str] = ""
    control: ClassVar[int] = 1  # the channel a connection of its own keeps open for probes
    probe_replies: ClassVar[tuple[str, ...]] = ()
    # answers to a channel's opening that must have come before a case goes on it (none: the
    # opening is sent ahead of the case, not waited for)
    ready_replies: ClassVar[tuple[str, ...]] = ()
    # the probe's answer ends the channel (1.0's end): it is not reused, and needs no close
    probe_ends: ClassVar[bool] = False

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol

    # -- negotiation -------------------------------------------------------------------------

    @abc.abstractmethod
    def connect(self, target: Target, *, timeout: float = 10.0, **options: Any) -> Connection:
        """An open connection, handshake and login done (ConnectionFailed if not)."""

    @abc.abstractmethod
    def announced(self, connection: Connection) -> Announced:
        """What the broker said of itself on ``connection``."""

    def describe(self, target: Target, timeout: float) -> Announced:
        """Connect, read what the broker announces, close (ConnectionFailed if it cannot)."""
        connection = self.connect(target, timeout=timeout)
        try:
            return self.announced(connection)
        finally:
            connection.close()

    @abc.abstractmethod
    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        """None if ``target`` speaks ``protocol`` (of this family), else why not."""

    # -- running cases -----------------------------------------------------------------------

    def spare(self, target: Target, timeout: float, stage: str | None = None) -> Connection:
        """A connection for a case of its own, open (ConnectionFailed if not); its channels
        are opened with the case's bytes. A driver may make it faster than :meth:`connect`.
        ``stage`` (one :meth:`stage` names) asks for one prepared only so far."""
        return self.connect(target, timeout=timeout)

    def stage(self, case: Case) -> str | None:
        """How far a connection of its own must be prepared for ``case``, if not open."""
        return None

    def probes(self, case: Case) -> bool:
        """Whether the probe goes behind ``case`` (not when the case's own answer is one)."""
        return True

    @abc.abstractmethod
    def needs_own_connection(self, case: Case) -> bool:
        """Whether ``case`` may end its connection (or needs channel 0, or one not open)."""

    @abc.abstractmethod
    def own_channel(self, case: Case) -> int:
        """The channel ``case`` runs on when it has a connection of its own."""

    @abc.abstractmethod
    def open_channel(self, connection: Connection, channel: int) -> bytes:
        """The bytes that open ``channel`` (sent ahead of the case, not waited for)."""

    @abc.abstractmethod
    def close_channel(self, connection: Connection, channel: int) -> bytes:
        """The bytes that close ``channel`` politely."""

    @abc.abstractmethod
    def probe(self, connection: Connection, channel: int) -> bytes:
        """A cheap synchronous request whose answer (one of :attr:`probe_replies`) proves
        ``channel`` survived what went before it."""

    @abc.abstractmethod
    def echoes(self, case: Case) -> int:
        """How many answers like the probe's the case itself asks for."""

    @abc.abstractmethod
    def missing_responses(self, case: Case, frames: list[Any]) -> tuple[str, ...]:
        """The replies still due to a valid case's synchronous requests, given ``frames``."""

    @abc.abstractmethod
    def recorded(self, data: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """A reproducer's bytes (as sent, on their channel) as the case's steps again, which
        render to the same bytes and tell what they declare, and the frames they make when
        they are valid (whose responses are due), else none."""

    # -- what a case created -----------------------------------------------------------------

    @abc.abstractmethod
    def created(self, case: Case, replies: list[Any], prefix: str) -> Iterable[tuple[str, Name]]:
        """(kind, name) of what ``case`` may have created and is the run's to delete: the
        names it sent that start with ``prefix`` (as sent), and the names the broker chose for
        it (from ``replies``)."""

    @abc.abstractmethod
    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        """Delete these entities (only these); the names that could not be deleted."""

    # -- conformance and replays -------------------------------------------------------------

    @abc.abstractmethod
    def code(self, name: str) -> Code:
        """The specification's code (reply code, error condition) called ``name``."""

    @abc.abstractmethod
    def serves(self, target: Target, timeout: float, probe: str) -> str | None:
        """None if the broker accepts a connection and does work on it (``probe`` names
        anything the check creates, which goes with the connection); else what went wrong."""

    def play(
        self,
        scenario: Scenario,
        target: Target,
        *,
        prefix: str,
        timeout: float,
        broker: Broker | None,
    ) -> Played:
        """Play one scenario file on ``target``: the family's ``scenarios`` module's
        ``Player``."""
        player = self._family_part("scenarios", "scenario player").Player
        return player(scenario, target, prefix=prefix, timeout=timeout, broker=broker).play()  # type: ignore[no-any-return]

    def machine(
        self,
        target: Target,
        prefix: str,
        on_program: Any,
        timeout: float = 10.0,
        avoid: frozenset[str] = frozenset(),
        restart: Callable[[], object] | None = None,
    ) -> AbstractContextManager[type[RuleBasedStateMachine]]:
        """The stateful program's state machine, bound to ``target``, for the length of a
        ``with`` block (its programs may share connections until the block ends);
        ``on_program`` is called with each program (a :class:`ProgramRun`) as Hypothesis makes
        it; a step waits ``timeout`` seconds at most for the broker; no step whose kind is
        named in ``avoid`` is taken; ``restart`` kills and restarts a throwaway broker, for the
        families whose programs check what survives it (their ``machine_for`` takes it). The
        family's ``programs`` module's ``machine_for``."""
        programs = self._family_part("programs", "stateful programs")
        more = {"restart": restart} if restart is not None else {}
        return programs.machine_for(target, prefix, on_program, timeout, avoid, **more)  # type: ignore[no-any-return]

    def replay_program(
        self,
        steps: list[ProgramStep],
        target: Target,
        prefix: str,
        timeout: float = 10.0,
        restart: Callable[[], object] | None = None,
    ) -> Broken | None:
        """Run a stateful program's steps again; the invariant broken now, if any (the
        family's ``programs`` module's ``replay_program``; ``restart`` as for :meth:`machine`)."""
        programs = self._family_part("programs", "stateful programs")
        more = {"restart": restart} if restart is not None else {}
        return programs.replay_program(steps, target, prefix, timeout, **more)  # type: ignore[no-any-return]

    def _family_part(self, name: str, what: str) -> Any:
        """The family's module ``name`` (beside its driver), imported when first needed;
        UnsupportedProtocol if the family has none."""
        family = type(self).__module__.rsplit(".", 1)[0]
        try:
            return importlib.import_module(f"{family}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{family}.{name}":
                raise
            raise UnsupportedProtocol(f"no {what} for AMQP {self.protocol}") from None
