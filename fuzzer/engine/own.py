"""Cases on connections of their own: prepared ahead, many in flight, each landing on its own.

A case that ends its connection (or needs channel 0, or a channel that is not open) runs on a
spare connection the runner prepared ahead. Up to ``spares`` of them are in flight at once, and
as each lands another takes off, so that a slow case holds up no other.

A case expected to end its connection is sent alone, with no probe behind it: a broker that
closes a socket with bytes unread resets it, and the reset throws away the close it had just
sent. Only if the connection has not ended within the settle time is the probe sent (with the
opening of the control channel it runs on: a channel costs a broker, and most of these cases
never need one), to learn that the broker let the case pass. How long to wait is learnt (:class:`Settling`): a broker
that has never closed a connection for an operator gets the probe at once for it.
"""

from __future__ import annotations

import select
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case, Placement

from ..protocols import Connection, Driver, Outcome

if TYPE_CHECKING:
    from .runner import Result

__all__ = ["Flight", "OwnConnections", "Settling"]


class Settling:
    """Whether to wait for a connection-ending case's close before probing, learnt per operator
    (a valid case: per method) from what the target did with earlier cases of it. A target
    that closed the connection for it, or has been seen too few times, is waited for; one that
    never did (three times or more) is probed at once, but every sixteenth time waited for
    again, in case it does after all."""

    def __init__(self, seconds: float, enough: int = 3, again: int = 16) -> None:
        self.seconds = seconds
        self.enough = enough
        self.again = again
        self.closed: Counter[str] = Counter()
        self.stayed: Counter[str] = Counter()
        self.asked: Counter[str] = Counter()

    @staticmethod
    def key(case: Case) -> str:
        return case.operator or case.spec_ref

    def waits(self, case: Case) -> bool:
        if not case.kills_connection:
            return False
        key = self.key(case)
        self.asked[key] += 1
        lenient = self.closed[key] == 0 and self.stayed[key] >= self.enough
        return not lenient or self.asked[key] % self.again == 0

    def closes(self, case: Case) -> bool:
        """Whether the target has closed the connection for such a case before."""
        return self.closed[self.key(case)] > 0

    def learn(self, case: Case, closed: bool) -> None:
        (self.closed if closed else self.stayed)[self.key(case)] += 1


@dataclass
class Flight:
    """One case in flight on a connection of its own."""

    index: int
    case: Case
    connection: Connection
    data: bytes
    started: float
    deadline: float
    probing: bool  # the probe is out (else: waiting for the close the case should bring)
    echoes: int  # answers like the probe's the case itself asks for
    opened: bool  # the control channel's opening went out
    lingers: float = 0.0  # the probe answered: until when to wait for a late close (0: not)

    @property
    def wakes(self) -> float:
        """When it is due at the latest."""
        return min(self.deadline, self.lingers) if self.lingers else self.deadline


class OwnConnections:
    """The runner's side for cases on connections of their own (a mixin of
    :class:`~.runner.Runner`, which provides what is declared here)."""

    driver: Driver
    timeout: float
    spares: int
    grace: float
    settling: Settling
    _take_spare: Callable[[Case], Connection | Outcome]
    _outcome: Callable[[Case, list[Any], Any, Connection, int, float], Outcome]
    _note: Callable[[Case, list[Any]], None]
    _judged: Callable[..., Result]
    _log: Callable[..., None]  # (connection, own, case, data, stage=None)

    def _run_own(self, group: list[tuple[int, Case]]) -> dict[int, Result]:
        """Each case on a spare connection of its own, up to ``spares`` in flight at once."""
        waiting = deque(group)
        flying: list[Flight] = []
        results: dict[int, Result] = {}
        while waiting or flying:
            while waiting and len(flying) < self.spares:
                index, case = waiting.popleft()
                flight = self._take_off(index, case)
                if isinstance(flight, Flight):
                    flying.append(flight)
                else:
                    results[index] = flight
            self._wait(flying)
            now = time.monotonic()
            for flight in list(flying):
                if self._due(flight, now):
                    flying.remove(flight)
                    results[flight.index] = self._land(flight)
        return results

    def _take_off(self, index: int, case: Case) -> Flight | Result:
        connection = self._take_spare(case)
        if isinstance(connection, Outcome):
            return self._judged(case, connection, 0, 0.0, b"", False)
        driver, control = self.driver, self.driver.rules.control
        data = case.render(driver.own_channel(case))
        probing = not self.settling.waits(case)
        # a case that needs an open channel runs on the control channel, opened first (unless
        # the spare came with it open)
        ready = control in connection.open_channels
        opened = ready or case.placement in (Placement.OPEN, Placement.FRESH) or probing
        opening = driver.open_channel(connection, control) if opened and not ready else b""
        if opened:
            connection.open_channels.add(control)
        out = (
            opening + data
            if case.placement in (Placement.OPEN, Placement.FRESH)
            else data + opening
        )
        if probing and (driver.probes(case) or driver.own_channel(case) != control):
            out += driver.probe(connection, control)  # (a case that ends it itself: none)
        self._log(connection, True, index, out, driver.stage(case))
        connection.send(out)
        now = time.monotonic()
        echoes = driver.echoes(case) if case.placement in (Placement.OPEN, Placement.FRESH) else 0
        wait = self.timeout if probing else self.settling.seconds
        return Flight(index, case, connection, data, now, now + wait, probing, echoes, opened)

    def _wait(self, flying: list[Flight]) -> None:
        """Read what arrives on any flight's connection, until the first deadline at most."""
        live = [f.connection for f in flying if f.connection.ended is None]
        if not live:
            return
        buffered = [c for c in live if getattr(c.sock, "pending", lambda: 0)()]
        if buffered:  # TLS records already read off the socket
            for connection in buffered:
                connection.pump(0)
            return
        left = max(0.0, min(f.wakes for f in flying) - time.monotonic())
        ready, _, _ = select.select([c.sock for c in live], [], [], left)
        for connection in live:
            if connection.sock in ready:
                connection.pump(0)

    def _due(self, flight: Flight, now: float) -> bool:
        """Whether ``flight`` can land now: its connection ended, its probe answered, or its
        time is up. A flight waiting for a close that has not come sends its probe now."""
        connection = flight.connection
        if not flight.probing:
            if connection.ended is not None:
                return True
            if now < flight.deadline:
                return False
            control = self.driver.rules.control
            probe = b"" if flight.opened else self.driver.open_channel(connection, control)
            probe += self.driver.probe(connection, control)
            self._log(connection, True, flight.index, probe, self.driver.stage(flight.case))
            connection.send(probe)
            flight.probing, flight.deadline, flight.opened = True, now + self.timeout, True
            return False
        if connection.ended is not None or now >= flight.deadline:
            return True
        if flight.lingers:
            return (
                now >= flight.lingers or self.driver.rules.control + 1 in connection.closed_channels
            )
        if not self._answered(flight):
            return False
        # accepted, from a target seen to close for such a case: a while longer, in flight
        # (a busy RabbitMQ finds some hard errors in a channel's own process, after it
        # answered the probe)
        late = flight.case.kills_connection and self.settling.closes(flight.case)
        if not late or self.driver.rules.control in connection.closed_channels:
            return True
        flight.lingers = now + max(self.grace, self.settling.seconds)
        return False

    def _answered(self, flight: Flight) -> bool:
        """The probe's answer is in (beyond the case's own answers like it), or the control
        channel closed."""
        connection, control = flight.connection, self.driver.rules.control
        if control in connection.closed_channels:
            return True
        replies = self.driver.answers(flight.case)
        got = sum(1 for f in connection.inbox.get(control, ()) if getattr(f, "name", "") in replies)
        return got > flight.echoes

    def _land(self, flight: Flight) -> Result:
        """What came of the case (read from what its connection has, waiting for nothing more
        than the replies a valid case is still due), the connection let go."""
        connection, case, control = flight.connection, flight.case, self.driver.rules.control
        replies = self.driver.answers(case)
        frames, end = connection.collect(control, replies, 0.0, flight.echoes)
        if isinstance(end, Outcome) and end.kind == OutcomeKind.TIMEOUT:
            end = Outcome(
                OutcomeKind.TIMEOUT, text=f"no {' or '.join(replies)} in {self.timeout:g} s"
            )
        if not isinstance(end, Outcome):  # accepted: a close may have come meanwhile
            connection.pump(0.0 if flight.lingers else self.grace)
            if connection.ended is not None:
                end = connection.ended
            elif control + 1 in connection.closed_channels:  # the case's closed channel
                end = connection.closed_channels[control + 1]
        if case.kills_connection:  # learnt from how it ended, not from the settle alone: a
            # busy broker's close may come after the settle, yet before the probe's answer
            self.settling.learn(case, closed=connection.ended is not None)
        channel = self.driver.own_channel(case)
        if channel == control and not isinstance(end, Outcome) and not self.driver.probes(case):
            frames = [*frames, end]  # no probe went: the answer is the case's own
        if channel != control:  # what came on the case's own channel counts too
            before, stopped = connection.collect(channel, (), 0.0)
            frames = before + frames
            if isinstance(stopped, Outcome) and stopped.kind != OutcomeKind.TIMEOUT:
                end = (
                    stopped
                    if not isinstance(end, Outcome) or end.kind == OutcomeKind.TIMEOUT
                    else end
                )
        outcome = self._outcome(case, frames, end, connection, channel, flight.deadline)
        self._note(case, frames)
        connection.abort()
        duration = time.monotonic() - flight.started
        return self._judged(case, outcome, control, duration, flight.data)
