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

A case that waits for the peer within itself (:meth:`~amqpfuzz.strategies.Case.segments`) sends
its first segment on take-off, and each next one as what the peer sent meets its await
(:class:`Waiting`, shared with the lanes); its probe, or its settle time, follows the last. An
await not met within the timeout lands the case as a ``timeout``, like any hang.
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
from amqpfuzz.strategies.cases import Segment

from ..protocols import Connection, Driver, Outcome

if TYPE_CHECKING:
    from .runner import Result

__all__ = ["Flight", "OwnConnections", "Settling", "Waiting", "pump_any"]


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


def pump_any(connections: list[Connection], until: float) -> None:
    """Read what arrives on any of ``connections`` (once each), waiting until ``until`` at
    most for something to."""
    live = list({id(c): c for c in connections if c.ended is None}.values())
    if not live:
        return
    buffered = [c for c in live if getattr(c.sock, "pending", lambda: 0)()]
    if buffered:  # TLS records already read off the socket
        for connection in buffered:
            connection.pump(0)
        return
    left = max(0.0, until - time.monotonic())
    ready, _, _ = select.select([c.sock for c in live], [], [], left)
    for connection in live:
        if connection.sock in ready:
            connection.pump(0)


@dataclass
class Waiting:
    """A case's segments still to send, each once what the peer sent meets its await; what
    the case sent so far (each step's bytes); until when the next await may take; the
    timeout, if one was not met in time."""

    segments: list[Segment]
    sent: list[bytes]
    deadline: float
    failed: Outcome | None = None

    @property
    def done(self) -> bool:
        return not self.segments


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
    waiting: Waiting | None = None  # the segments of a case that waits for the peer
    owed: bytes = b""  # the control channel's opening, due after the last segment

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
        waiting = self._segments(case, connection, driver.own_channel(case))
        data = b"".join(waiting.sent) if waiting else case.render(driver.own_channel(case))
        probing = not self.settling.waits(case)
        # a case that needs an open channel runs on the control channel, opened first (unless
        # the spare came with it open)
        ready = control in connection.open_channels
        opened = ready or case.placement in (Placement.OPEN, Placement.FRESH) or probing
        opening = driver.open_channel(connection, control) if opened and not ready else b""
        if opened:
            connection.open_channels.add(control)
        owed = b""
        if case.placement in (Placement.OPEN, Placement.FRESH):
            out = opening + data
        elif waiting is not None and not waiting.done:  # (it opens after the last segment)
            out, owed = data, opening
        else:
            out = data + opening
        if waiting is None or waiting.done:
            out += self._tail(case, connection, probing)
        self._log(connection, True, index, out, driver.stage(case))
        connection.send(out)
        now = time.monotonic()
        echoes = driver.echoes(case) if case.placement in (Placement.OPEN, Placement.FRESH) else 0
        wait = self.timeout if probing or (waiting and not waiting.done) else self.settling.seconds
        return Flight(
            index, case, connection, data, now, now + wait, probing, echoes, opened, 0.0, waiting,
            owed,
        )  # fmt: skip

    def _tail(self, case: Case, connection: Connection, probing: bool) -> bytes:
        """What follows a case on a connection of its own: the probe, if it goes at once (a
        case that ends its channel itself on the control channel has none)."""
        driver, control = self.driver, self.driver.rules.control
        if probing and (driver.probes(case) or driver.own_channel(case) != control):
            return driver.probe(connection, control)
        return b""

    def _segments(self, case: Case, connection: Connection, channel: int) -> Waiting | None:
        """For a case that waits for the peer: its first segment made (in ``sent``), the rest
        to send as the peer answers; None for a case sent whole."""
        if not case.waits:
            return None
        first, *rest = case.segments()
        sent: list[bytes] = []
        first.render(channel, sent, self.driver.seen(connection, channel))
        return Waiting(rest, sent, time.monotonic() + self.timeout)

    def _advance(self, waiting: Waiting, connection: Connection, channel: int, now: float) -> bytes:
        """The next segments of a waiting case whose awaits what the peer sent meets (each
        made from what came); an await the peer will never meet ends the waiting, and so does
        one not met by its deadline (then ``failed``, a timeout)."""
        out = []
        while waiting.segments:
            segment = waiting.segments[0]
            assert segment.after is not None
            received = self.driver.seen(connection, channel)
            met = segment.after.met(waiting.sent, received)
            if met is None:  # it never will be: nothing more goes
                waiting.segments.clear()
            elif not met:
                if now >= waiting.deadline:
                    label = segment.after.label
                    text = f"{label} not met in {self.timeout:g} s"
                    waiting.failed = Outcome(OutcomeKind.TIMEOUT, text=text)
                    waiting.segments.clear()
                break
            else:
                out.append(segment.render(channel, waiting.sent, received))
                waiting.segments.pop(0)
                waiting.deadline = now + self.timeout
        return b"".join(out)

    def _wait(self, flying: list[Flight]) -> None:
        """Read what arrives on any flight's connection, until the first deadline at most."""
        if flying:
            pump_any([f.connection for f in flying], min(f.wakes for f in flying))

    def _due(self, flight: Flight, now: float) -> bool:
        """Whether ``flight`` can land now: its connection ended, its probe answered, or its
        time is up. A flight waiting for a close that has not come sends its probe now."""
        connection = flight.connection
        waiting = flight.waiting
        if waiting is not None and not waiting.done:
            return self._sending(flight, waiting, now)
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

    def _sending(self, flight: Flight, waiting: Waiting, now: float) -> bool:
        """A case still sending its segments: the next that can go, and after the last, the
        probe (or the settle time); due at once when its connection ended or an await failed."""
        connection = flight.connection
        if connection.ended is not None:
            return True
        channel = self.driver.own_channel(flight.case)
        out = self._advance(waiting, connection, channel, now)
        if waiting.done and waiting.failed is None:
            out += flight.owed + self._tail(flight.case, connection, flight.probing)
            flight.deadline = now + (self.timeout if flight.probing else self.settling.seconds)
        else:
            flight.deadline = waiting.deadline
        if out:
            self._log(connection, True, flight.index, out, self.driver.stage(flight.case))
            connection.send(out)
        flight.data = b"".join(waiting.sent)
        return waiting.failed is not None

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
        failed = flight.waiting.failed if flight.waiting is not None else None
        if failed is not None and (not isinstance(end, Outcome) or end.kind == OutcomeKind.TIMEOUT):
            end = failed  # an await of the case not met: a hang, whatever came before it
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
