"""Cases on the runner's long-lived connections (lanes): a group of cases written on a lane all
at once, each on its own channel with the driver's probe behind it, and what came of each read.

A lane keeps a pool of open channels for the cases that want one (opened ahead, answered
first where the driver wants), closes those a case used fresh with the next group's bytes, and
goes round the whole range of channel numbers. A case that waits for the peer within itself
sends its first segment with its group and each next one as what the peer sent meets its await,
every lane's at once. If a lane's connection dies with several cases in flight, those answered
before stand; the first unanswered one of a connection that stopped answering hangs it; each
of the others runs again on a connection of its own. A lane's connection is closed and another
opened after :data:`RECYCLE` cases.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from amqpfuzz.spec import AmqpfuzzError, OutcomeKind
from amqpfuzz.strategies import Case, Placement

from ..protocols import Connection, Driver, Outcome
from .own import Waiting, pump_any

if TYPE_CHECKING:
    from .runner import Result

__all__ = ["RECYCLE", "Going", "Lane", "Lanes", "Placed"]


@dataclass
class Lane:
    """One long-lived connection for cases that leave it open, and its channels."""

    connection: Connection | None = None
    channels: deque[int] = field(default_factory=deque)  # open, ready for an "open" case
    next_channel: int = 1
    closing: bytes = b""  # channel closes that go out with the next group
    sent: int = 0  # cases sent on its connection


# Cases a lane's connection carries before it is closed and another opened: what the cases
# made that goes with its connection (exclusive queues) goes then, not at the run's end.
RECYCLE = 4000


Placed = list[tuple[int, Case, int, bytes, float]]


@dataclass
class Going:
    """A case on a lane still sending its segments as the peer answers."""

    index: int
    case: Case
    connection: Connection
    channel: int
    waiting: Waiting


class Lanes:
    """The runner's side for cases on its lanes (a mixin of :class:`~.runner.Runner`, which
    provides what is declared here)."""

    driver: Driver
    timeout: float
    in_flight: int
    _going: dict[int, Going]
    _went: float
    _open: Callable[[], Connection]
    _segments: Callable[[Case, Connection, int], Waiting | None]
    _advance: Callable[[Waiting, Connection, int, float], bytes]
    _run_own: Callable[[list[tuple[int, Case]]], dict[int, Result]]
    _outcome: Callable[[Case, list[Any], Any, Connection, int, float], Outcome]
    _note: Callable[[Case, list[Any]], None]
    _judged: Callable[..., Result]
    _log: Callable[..., None]  # (connection, own, case, data, stage=None)

    def _lane(self, lane: Lane) -> Connection:
        if lane.connection is not None and lane.connection.alive and lane.sent >= RECYCLE:
            lane.connection.close()
        if lane.connection is None or not lane.connection.alive:
            lane.connection = self._open()
            lane.channels.clear()
            lane.closing = b""
            lane.sent = 0
        return lane.connection

    def _channel_for(self, lane: Lane, case: Case) -> tuple[int, bytes]:
        """An open channel for an ``open`` case; for the others, a new one, with the bytes
        that open it. Where the driver wants a channel's opening answered before a case goes
        on it, an ``open`` case gets one opened ahead (or now, and waited for)."""
        connection = lane.connection
        assert connection is not None
        while case.placement == Placement.OPEN and lane.channels:
            channel = lane.channels.popleft()
            if channel in connection.open_channels and self._ready(connection, channel):
                return channel, b""
        channel = self._new_channel(lane)
        opening = self.driver.open_channel(connection, channel)
        if case.placement == Placement.OPEN and self.driver.rules.ready_replies:
            self._log(connection, False, None, opening)
            connection.send(opening)
            self._ready(connection, channel)
            return channel, b""
        return channel, opening

    def _new_channel(self, lane: Lane) -> int:
        """A channel number not open on the lane's connection, counted as open from now. New
        numbers go round the whole range, so that a number comes back long after its close
        was answered."""
        connection = lane.connection
        assert connection is not None
        top = max(2, min(connection.channel_max, 2047))
        while True:
            channel = lane.next_channel
            lane.next_channel = lane.next_channel % top + 1
            if channel not in connection.open_channels:
                break
        connection.inbox.pop(channel, None)
        connection.closed_channels.pop(channel, None)
        connection.open_channels.add(channel)
        return channel

    def _ahead(self, lane: Lane, count: int) -> bytes:
        """The bytes that open channels for ``count`` more ``open`` cases, ready in the pool
        for the next group (for a driver that wants an opening answered first)."""
        connection = lane.connection
        assert connection is not None
        if not self.driver.rules.ready_replies:
            return b""
        out = []
        while len(lane.channels) < count:
            channel = self._new_channel(lane)
            out.append(self.driver.open_channel(connection, channel))
            lane.channels.append(channel)
        return b"".join(out)

    def _ready(self, connection: Connection, channel: int) -> bool:
        """Whether the opening of ``channel`` was answered (awaited, where the driver wants)."""
        if not self.driver.rules.ready_replies:
            return True
        found = connection.wait(channel, self.driver.rules.ready_replies, self.timeout)
        return not isinstance(found, Outcome)

    def _release(self, lane: Lane, case: Case, channel: int) -> None:
        """An open channel goes back to the pool; one opened fresh is closed (its state is
        the case's), and so is any beyond what is needed in flight. A channel the probe ended
        is done with."""
        connection = lane.connection
        assert connection is not None
        if self.driver.rules.probe_ends:
            connection.open_channels.discard(channel)
            return
        if case.placement == Placement.OPEN and len(lane.channels) < self.in_flight:
            lane.channels.append(channel)
            return
        # closed with the next group's bytes: one write fewer
        lane.closing += self.driver.close_channel(connection, channel)
        connection.open_channels.discard(channel)

    def _send_shared(self, lane: Lane, group: list[tuple[int, Case]]) -> Placed | dict[int, Result]:
        """Write the group's cases on the lane's connection, each on its own channel, all at
        once: a channel to open (when the case wants a fresh one), the case, its probe. The
        broker takes them in order, so nothing waits for the channel's opening; a channel it
        refused to open shows as that channel's close. Returns what was placed where (or, if
        the broker cannot be reached, the results)."""
        try:
            connection = self._lane(lane)
        except AmqpfuzzError as exc:
            down = Outcome(OutcomeKind.BROKER_DOWN, text=str(exc))
            return {i: self._judged(case, down, 0, 0.0, b"", sent=False) for i, case in group}
        started = time.monotonic()
        placed: Placed = []
        lane.sent += len(group)
        out = [lane.closing]
        self._log(connection, False, None, lane.closing)
        lane.closing = b""
        wanted = sum(1 for _, case in group if case.placement == Placement.OPEN)
        early = self._ahead(lane, wanted)  # none ahead yet (the lane's first group): now
        if early:
            self._log(connection, False, None, early)
            connection.send(early)
        for i, case in group:
            channel, opening = self._channel_for(lane, case)
            waiting = self._segments(case, connection, channel)
            if waiting is not None:
                self._going[i] = Going(i, case, connection, channel, waiting)
                data = b"".join(waiting.sent)
            else:
                data = case.render(channel)
            probe = b""
            if self.driver.probes(case) and (waiting is None or waiting.done):
                probe = self.driver.probe(connection, channel)
            chunk = opening + data + probe
            self._log(connection, False, i, chunk)
            out.append(chunk)
            placed.append((i, case, channel, data, started))
        ahead = self._ahead(lane, wanted)  # the next group's, answered while this one runs
        self._log(connection, False, None, ahead)
        out.append(ahead)
        connection.send(b"".join(out))
        return placed

    def _advance_shared(self) -> None:
        """Send the next segments of the round's waiting cases as what the peer sent meets
        their awaits, every lane's at once, until each has sent its last (its probe with it)
        or an await failed (its probe then, so that its session ends all the same)."""
        going = [g for g in self._going.values() if not g.waiting.done]
        while going:
            now = time.monotonic()
            out: dict[int, list[bytes]] = {}
            for g in list(going):
                connection = g.connection
                if connection.ended is not None:
                    going.remove(g)
                    continue
                data = self._advance(g.waiting, connection, g.channel, now)
                if g.waiting.done:
                    going.remove(g)
                    if self.driver.probes(g.case):
                        data += self.driver.probe(connection, g.channel)
                if data:
                    self._log(connection, False, g.index, data)
                    out.setdefault(id(connection), []).append(data)
            for g in {id(g.connection): g for g in self._going.values()}.values():
                if out.get(id(g.connection)):
                    g.connection.send(b"".join(out[id(g.connection)]))
            if going:
                pump_any([g.connection for g in going], min(g.waiting.deadline for g in going))
        self._went = time.monotonic() if self._going else 0.0

    def _collect_shared(
        self,
        lane: Lane,
        group: list[tuple[int, Case]],
        placed: Placed | dict[int, Result],
    ) -> dict[int, Result]:
        """Read what came of each placed case. If the connection died with several in flight,
        those that had their answer before it died stand (the broker took them before the
        fatal frame); each of the others runs again on a connection of its own, to learn
        which one ended the shared one."""
        if isinstance(placed, dict):
            return placed
        connection = lane.connection
        assert connection is not None
        results = {}
        unknown = []
        # one for all the cases sent together (every lane's): a hang costs one timeout
        deadline = max(placed[0][4] if placed else time.monotonic(), self._went) + self.timeout
        hung = False
        for i, case, channel, data, started in placed:
            if hung:  # behind the case that hung the connection: not known what it does
                unknown.append((i, case))
                continue
            echoes = self.driver.echoes(case)
            replies = self.driver.answers(case)
            left = max(0.0, deadline - time.monotonic())
            frames, end = connection.collect(channel, replies, left, echoes)
            if not isinstance(end, Outcome) and not self.driver.probes(case):
                frames = [*frames, end]  # no probe went: the answer is the case's own
            self._note(case, frames)  # a name the broker gave it, too
            going = self._going.get(i)
            if going is not None:
                data = b"".join(going.waiting.sent)
            # (one that may have ended on the connection's own answer, not a case's: too)
            if (len(placed) > 1 or connection.ended_by_us) and end is connection.ended:
                unknown.append((i, case))
                continue
            if isinstance(end, Outcome) and end.kind == OutcomeKind.TIMEOUT:
                hung = True  # the first unanswered: the broker stopped answering with it
                end = Outcome(
                    OutcomeKind.TIMEOUT, text=f"no {' or '.join(replies)} in {self.timeout:g} s"
                )
            elif going is not None and going.waiting.failed and not isinstance(end, Outcome):
                end = going.waiting.failed  # an await not met: a hang, though its session ended
            outcome = self._outcome(case, frames, end, connection, channel, deadline)
            if outcome.kind == OutcomeKind.REPLY:
                self._release(lane, case, channel)
            results[i] = self._judged(case, outcome, channel, time.monotonic() - started, data)
        if hung:  # a connection that stopped answering is of no more use
            connection.abort()
        if unknown:
            results.update(self._run_own(unknown))
        return results
