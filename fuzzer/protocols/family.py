"""What a protocol family gives the driving layer: one object per family (``FAMILY`` in its
package), typed here, with the driver the runner needs and the parts a family may offer
besides it.

* :class:`ScenarioPlayer`: plays the family's scenario files on a target;
* :class:`Programs`: stateful programs through a real client library, and their replay;
* :class:`Serving`: room for the part a family offers when amqpfuzz plays the *server* to
  test client libraries: what the peer it plays sends, and how it reads a client.

A family that offers no part says None; the engine then says, in one line, that the protocol
cannot do that yet.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from amqpfuzz.spec import AmqpfuzzError, OutcomeKind

from .driver import Driver
from .outcome import Outcome
from .served import Exchange
from .serving import Heard

if TYPE_CHECKING:
    from hypothesis.stateful import RuleBasedStateMachine

    from amqpfuzz.scenarios import Scenario
    from amqpfuzz.strategies import Operator, Reaction

    from ..brokers import Broker, Target

__all__ = [
    "Broken",
    "DriverFamily",
    "NotReplayable",
    "Played",
    "ProgramRun",
    "ProgramStep",
    "Programs",
    "Reader",
    "ScenarioPlayer",
    "ServerScript",
    "Serving",
    "ServingPeer",
]


@dataclass
class Played:
    """How one scenario went on one target.

    ``status`` is ``pass``, ``fail`` (an expectation did not hold; ``line`` and ``step`` say
    where) or ``error`` (the runner could not go on: an unreachable target). ``expected`` and
    ``observed`` are the last expectation checked (the failing one for a failure); ``notes``
    what the scenario records (a count, a greeting).
    """

    status: str
    message: str = ""
    line: int | None = None
    step: str | None = None
    expected: Outcome = field(default_factory=lambda: Outcome(OutcomeKind.REPLY))
    observed: Outcome = field(default_factory=lambda: Outcome(OutcomeKind.REPLY))
    notes: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0


class NotReplayable(AmqpfuzzError):
    """A program's steps cannot be replayed where they were asked to be."""


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
    """One stateful program as a family's state machine runs it: its steps so far, the
    invariant it found broken (if any), and how to let go of its connections."""

    trace: list[ProgramStep]
    broken: Broken | None

    def close(self) -> None: ...


class ScenarioPlayer(Protocol):
    """Plays the family's scenario files."""

    def play(
        self,
        scenario: Scenario,
        target: Target,
        *,
        prefix: str,
        timeout: float,
        broker: Broker | None,
    ) -> Played:
        """Play one scenario file on ``target`` (``broker``: a throwaway one, which may be
        restarted); every name it creates starts with ``prefix`` and is deleted after."""


class Programs(Protocol):
    """Stateful programs through a real client library: a Hypothesis state machine against a
    model of the broker, and the replay of a program's steps."""

    def machine(
        self,
        target: Target,
        prefix: str,
        on_program: Callable[[Any], None],
        timeout: float,
        avoid: frozenset[str],
        restart: Callable[[], object] | None,
    ) -> AbstractContextManager[type[RuleBasedStateMachine]]:
        """The state machine, bound to ``target``, for the length of a ``with`` block (its
        programs may share connections until the block ends); ``on_program`` is called with
        each program (a :class:`ProgramRun`) as Hypothesis makes it; a step waits ``timeout``
        seconds at most; no step whose kind is named in ``avoid`` is taken; ``restart`` kills
        and restarts a throwaway broker, for families whose programs check what survives it."""

    def replay(
        self,
        steps: list[ProgramStep],
        target: Target,
        prefix: str,
        timeout: float,
        restart: Callable[[], object] | None,
    ) -> Broken | None:
        """Run a program's steps again; the invariant broken now, if any."""


class Reader(Protocol):
    """Reads a stream of bytes in any chunks into frames."""

    def feed(self, data: bytes) -> list[Any]: ...


class ServerScript(Protocol):
    """One connection as a family's serving peer plays it: the blob it was read from, the
    operator that breaks it (None: a valid script) and the reaction required of the client."""

    @property
    def blob(self) -> bytes: ...

    @property
    def operator(self) -> Operator | None: ...

    @property
    def expected(self) -> Reaction: ...

    @property
    def label(self) -> str:
        """The operator's name, or ``valid``."""


class ServingPeer(Protocol):
    """A peer listening on a free loopback port that plays one script per connection."""

    @property
    def url(self) -> str: ...

    @property
    def case_over(self) -> int | str:
        """The code of the close that ends every case, as a client reports it."""

    def accept(self, timeout: float) -> socket.socket | None: ...

    @staticmethod
    def waits(event: dict[str, object]) -> bool:
        """A shim's event (the family's shim contract) after which its application waits."""

    def play(
        self, conn: socket.socket, script: Any, timeout: float, heard: Heard | None = None
    ) -> Exchange: ...

    def close(self) -> None: ...


class Serving(Protocol):
    """What a family gives when amqpfuzz plays its server to test a client library: the
    methods the peer it plays sends (derived from the specification), how it reads what a
    client sends, the scripts it plays and the listening peer that plays them."""

    def sends(self, protocol: str) -> tuple[str, ...]:
        """The methods (performatives, controls and commands) the server side sends."""

    def reader(self, protocol: str) -> Reader:
        """A reader of a client's bytes."""

    def operators(self, protocol: str) -> tuple[str, ...]:
        """The names of the server-side operators, in the catalogue's order."""

    def scripts(
        self, protocol: str, operators: Sequence[str] | None, valid_share: float
    ) -> tuple[int, Callable[[bytes], ServerScript]]:
        """The size of a script's blob, and how a script is read from one: ``valid_share``
        of them break nothing, the others one of ``operators`` (all by default); one line
        (an :class:`~amqpfuzz.spec.AmqpfuzzError`) for a name that is none of them."""

    def peer(self, protocol: str) -> ServingPeer:
        """A peer listening on a free loopback port."""

    def scripted(
        self, protocol: str, operator: str | None, served: Mapping[str, Any], blob: bytes
    ) -> ServerScript:
        """The script a client scenario's ``serve`` step asks for: read from ``blob``,
        ``operator`` struck (None: valid), the peer's own frames' fields as ``served`` gives
        them (what the family's scenario language lets a file set)."""

    def code(self, protocol: str, name: str) -> int | str:
        """A code by its name in the specification, as a client's close carries it."""


class DriverFamily(Protocol):
    """A family's driving layer: its driver and the parts it offers besides it."""

    @property
    def name(self) -> str:
        """The family's name (``amqp091``), the key of every layer's table."""

    def driver(self, protocol: str) -> Driver:
        """The driver of one protocol of the family."""

    @property
    def player(self) -> ScenarioPlayer | None:
        """The scenario player, if the family has one."""

    @property
    def programs(self) -> Programs | None:
        """Stateful programs, if the family has them."""

    @property
    def serving(self) -> Serving | None:
        """The server side, if the family plays one."""
