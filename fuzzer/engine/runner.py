"""Running cases against one target, fast: reused connections, probes, spares, channels in flight.

The runner knows no protocol; the target's driver (:class:`~amqpfuzz.fuzzer.protocols.Driver`)
opens connections and channels, makes the probe and says what a case left behind.

* Cases that should leave the connection open run on a few long-lived connections (lanes: a
  broker parses each connection's frames in one place), a batch spread over them, several at
  once on each, each case on its own channel. After a case comes the driver's *probe* on the
  same channel: its answer proves the channel survived, with no waiting for a timeout.
* Cases that end their connection (hard errors, and cases that need channel 0 or a channel
  that is not open) run on *spare* connections prepared ahead, many in flight
  (:mod:`.own`).
* If a shared connection dies or stops answering with several cases in flight, those answered
  before stand; the first unanswered one of a connection that stopped answering hangs it (a
  ``timeout``); each of the others runs again on a connection of its own, so that what happened
  is pinned on the case that did it.
* A case that waits for the peer within itself (its credit, its deliveries) sends its first
  segment with the group, and each next one as what the peer sent on its channel meets the
  await before it (every lane's at once); its probe follows its last segment. An await not met
  within the timeout is the case's ``timeout``.
* After a batch that went wrong anywhere, the broker must still accept a connection; if it
  does not, every case of the batch is a suspect (the campaign's triage finds which), and
  :attr:`Runner.traffic` holds every byte the batch sent, connection by connection, in order.

Every name a case creates starts with the run's prefix; the runner notes what the driver says
each case created, and :meth:`Runner.cleanup` deletes that, and only that.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL, AmqpfuzzError, OutcomeKind
from amqpfuzz.strategies import Case, Placement

from ..brokers import Target
from ..brokers.control import AnyBroker
from ..protocols import Connection, Name, Outcome
from ..protocols.families import driver_for
from .oracles import Failure, Observation, judge
from .own import OwnConnections, Settling, Waiting, pump_any

__all__ = ["Result", "Runner", "Sent"]


@dataclass(frozen=True, slots=True)
class Sent:
    """Bytes a batch sent after a connection's handshake: on which of its connections
    (numbered as first used; ``own``: a case's own, else a shared lane), for which case (its
    index in the batch; None: the opening of the channels a lane had open when the batch began,
    or the closing of those earlier cases left), in the order they went out."""

    connection: int
    own: bool
    case: int | None
    data: bytes
    stage: str | None = None  # how far its connection was prepared, if not open (the driver's)


@dataclass(frozen=True)
class Result:
    """One case as run: where, what came of it, and the oracles' verdict."""

    case: Case
    outcome: Outcome
    channel: int
    duration_s: float
    data: bytes
    failure: Failure | None
    # a crash that needs several cases: the traffic that brings it about (its reproducer)
    traffic: tuple[Sent, ...] = ()
    sent_at: float = 0.0  # when its bytes went out (monotonic)

    @property
    def verdict(self) -> str:
        return "fail" if self.failure is not None else "pass"


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


def _abort_spare(future: Future[Connection]) -> None:
    """Close a spare connection nobody will use (if it opened at all)."""
    if not future.cancelled() and future.exception() is None:
        future.result().abort()


Placed = list[tuple[int, Case, int, bytes, float]]


@dataclass
class Going:
    """A case on a lane still sending its segments as the peer answers."""

    index: int
    case: Case
    connection: Connection
    channel: int
    waiting: Waiting


_FEW = 4  # connections prepared ahead for each stage short of open


class Runner(OwnConnections):
    """Runs batches of cases against ``target`` and judges each with the oracles."""

    def __init__(
        self,
        target: Target,
        *,
        protocol: str = DEFAULT_PROTOCOL,
        timeout: float = 5.0,
        in_flight: int = 32,
        lanes: int = 4,
        broker: AnyBroker | None = None,
        prefix: str = "",
        settle: float = 0.05,
        grace: float = 0.0,
    ) -> None:
        self.target = target
        self.driver = driver_for(protocol)
        # a broker that must close the connection has this long before we ask whether it will
        self.settle = settle
        # after a probe's answer, this long for a close that was on its way
        self.grace = grace
        self.protocol = protocol
        self.timeout = timeout
        self.in_flight = max(1, in_flight)
        # connections prepared ahead, and as many connection-ending cases at once: each group
        # of them waits out the settle time once (a broker that lets a case pass says nothing)
        self.spares = 2 * self.in_flight
        self.broker = broker
        self.prefix = prefix
        # several connections for the cases that leave theirs open: a broker parses each
        # connection's frames in one place, so two of them keep two of its cores busy
        self.lanes = [Lane() for _ in range(max(1, lanes))]
        self.frame_max = 131072
        # connections prepared ahead, by how far (None: open); other stages kept a few each
        self._spares: dict[str | None, deque[Future[Connection]]] = {None: deque()}
        self._executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="amqpfuzz-spares")
        self.created: set[tuple[str, Name]] = set()  # what the run's cases made, to delete
        self.settling = Settling(settle)
        self.traffic: list[Sent] = []  # what the last batch sent
        self._numbers: dict[int, int] = {}  # a connection's number in the batch, by its id
        # the cases of the round that wait for the peer, by index, and when their last
        # segments went (the round's collection counts its timeout from then)
        self._going: dict[int, Going] = {}
        self._went = 0.0

    # -- connections -----------------------------------------------------------------------

    def _open(self) -> Connection:
        connection = self.driver.connect(self.target, timeout=self.timeout)
        self.frame_max = connection.frame_max
        return connection

    def _spare(self, stage: str | None = None) -> Connection:
        connection = self.driver.spare(self.target, self.timeout, stage)
        if stage is None:
            self.frame_max = connection.frame_max
        return connection

    @property
    def main(self) -> Connection | None:
        """The first long-lived connection (it says what the broker is)."""
        return self.lanes[0].connection

    def start(self) -> Runner:
        """Open the long-lived connections (raises ConnectionFailed: unreachable, refused
        login)."""
        for lane in self.lanes:
            self._lane(lane)
        self._prepare(self.spares)
        return self

    def _prepare(self, count: int, stage: str | None = None) -> None:
        pool = self._spares.setdefault(stage, deque())
        while len(pool) < count:
            pool.append(self._executor.submit(self._spare, stage))

    def _take_spare(self, case: Case | None = None) -> Connection | Outcome:
        """A prepared connection (as far as ``case`` needs), or broker-down if none can be
        had."""
        stage = None if case is None else self.driver.stage(case)
        pool = self._spares.setdefault(stage, deque())
        for _ in range(_FEW + 2):
            if not pool:
                self._prepare(1, stage)
            future = pool.popleft()
            self._prepare(self.spares if stage is None else _FEW, stage)
            try:
                connection = future.result(timeout=self.timeout * 3)
            except (AmqpfuzzError, TimeoutError, OSError) as exc:
                return Outcome(OutcomeKind.BROKER_DOWN, text=str(exc))
            if stage is None:
                return connection
            # one prepared only so far, which the peer closed while it waited (its handshake
            # timeout), would judge the case by that close: another is taken
            connection.pump(0)
            if connection.ended is None:
                return connection
            connection.abort()
        return Outcome(
            OutcomeKind.BROKER_DOWN, text=f"every connection prepared to {stage} closed unused"
        )

    def _lane(self, lane: Lane) -> Connection:
        if lane.connection is not None and lane.connection.alive and lane.sent >= RECYCLE:
            lane.connection.close()
        if lane.connection is None or not lane.connection.alive:
            lane.connection = self._open()
            lane.channels.clear()
            lane.closing = b""
            lane.sent = 0
        return lane.connection

    def alive(self) -> bool:
        """Whether the broker still accepts a new connection (and its process runs)."""
        if self.broker is not None and self.broker.crashed:
            return False
        try:
            self.driver.spare(self.target, self.timeout).abort()
        except AmqpfuzzError:
            return False
        return True

    # -- running ---------------------------------------------------------------------------

    def run(
        self, cases: list[Case], after_round: Callable[[list[int]], None] | None = None
    ) -> list[Result]:
        """Run ``cases`` (in flight as far as they allow) and judge each; results in order.
        ``after_round`` is told, after each round of groups (one per lane, sent together), the
        indices of the cases that round finished: what the broker did since the round before
        is theirs (the campaign samples the broker's coverage there)."""
        self.traffic, self._numbers = [], {}
        results: dict[int, Result] = {}
        alone = {i for i, c in enumerate(cases) if self.driver.needs_own_connection(c)}
        shared = [i for i in range(len(cases)) if i not in alone]
        own = sorted(alone)
        # spread over the lanes, so that the broker parses as many connections at once as it can
        size = min(self.in_flight, max(1, -(-len(shared) // len(self.lanes))))
        groups = [
            [(i, cases[i]) for i in shared[start : start + size]]
            for start in range(0, len(shared), size)
        ]
        rounds = [
            list(zip(self.lanes, groups[first : first + len(self.lanes)], strict=False))
            for first in range(0, len(groups), len(self.lanes))
        ] or [[]]
        for number, together in enumerate(rounds):
            self._going, self._went = {}, 0.0
            sent = [(lane, group, self._send_shared(lane, group)) for lane, group in together]
            self._advance_shared()
            finished = len(results)
            if number == 0:  # while the broker works through the lanes' first groups
                results.update(self._run_own([(i, cases[i]) for i in own]))
            for lane, group, placed in sent:
                results.update(self._collect_shared(lane, group, placed))
            if after_round is not None:
                after_round(list(results)[finished:])
        return self._checked([results[i] for i in range(len(cases))])

    def _checked(self, results: list[Result]) -> list[Result]:
        """Liveness after a batch that went wrong anywhere: a new connection must still be
        accepted. When it is not, the suspects of having brought the broker down (one did, or
        several together) are the cases whose connection it dropped (else those that did not
        get the reaction they required; else all), and of them, when the broker's process is
        known to have died, those sent before it did: each carries the liveness failure."""
        crashed = bool(self.broker is not None and self.broker.crashed)
        calm = all(
            r.failure is None or r.outcome.kind == OutcomeKind.CHANNEL_CLOSE for r in results
        )
        if (calm and not crashed) or self.alive():
            return results
        crashed = bool(self.broker is not None and self.broker.crashed)
        # a case whose connection the broker dropped, before all others (a broker that dies
        # drops its sockets); one it answered with a close, or hung on, less likely did it
        cut = [
            r.outcome.kind
            in (OutcomeKind.SOCKET_CLOSE, OutcomeKind.BROKER_DOWN, OutcomeKind.BAD_FRAME)
            for r in results
        ]
        suspects = cut if any(cut) else [r.failure is not None for r in results]
        died = getattr(self.broker, "crashed_at", None)
        if died is not None:  # a case sent after the broker died did not kill it
            before = [s and r.sent_at <= died for s, r in zip(suspects, results, strict=True)]
            suspects = before if any(before) else suspects
        if not any(suspects):
            suspects = [True] * len(results)
        return [
            replace(r, failure=judge(Observation(r.case, r.outcome, alive=False, crashed=crashed)))
            if suspect and (r.failure is None or r.failure.oracle != "liveness")
            else r
            for r, suspect in zip(results, suspects, strict=True)
        ]

    def _log(
        self,
        connection: Connection,
        own: bool,
        case: int | None,
        data: bytes,
        stage: str | None = None,
    ) -> None:
        """Keep what goes out, for a crash's reproducer (a lane's channels already open when
        the batch began first: replayed on a new connection, they are opened again; a case's
        own connection prepared only to ``stage`` is prepared so far again)."""
        if not data:
            return
        number = self._numbers.get(id(connection))
        if number is None:
            number = self._numbers[id(connection)] = len(self._numbers)
            opened = b"".join(
                self.driver.open_channel(connection, channel)
                for channel in sorted(connection.open_channels)
            )
            if opened and not own:
                self.traffic.append(Sent(number, own, None, opened))
        self.traffic.append(Sent(number, own, case, data, stage))

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
            if len(placed) > 1 and end is connection.ended:
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

    def run_alone(self, case: Case) -> Result:
        """One case on a connection of its own (how a suspect and a reproducer run); its
        bytes are not the batch's traffic."""
        traffic, numbers = self.traffic, self._numbers
        self.traffic, self._numbers = [], {}
        try:
            return self._checked(list(self._run_own([(0, case)]).values()))[0]
        finally:
            self.traffic, self._numbers = traffic, numbers

    def _outcome(
        self,
        case: Case,
        frames: list[Any],
        end: Any,
        connection: Connection,
        channel: int,
        until: float,
    ) -> Outcome:
        """What the broker did: a close, or (the probe answered) a reply once the case's
        synchronous requests have their responses. A response may come after the probe's
        (RabbitMQ's queue process sends basic.consume-ok, its channel sends qos-ok), so the
        ones missing are awaited too, ``until`` a deadline (shared by the cases sent together:
        a response that never comes costs one timeout, not one per case)."""
        missing = self.driver.missing_responses(case, frames)
        while missing and not isinstance(end, Outcome):
            left = max(0.0, until - time.monotonic())
            more, found = connection.collect(channel, missing, left)
            frames = [*frames, *more, *([] if isinstance(found, Outcome) else [found])]
            if isinstance(found, Outcome):
                end = found
                if found.kind == OutcomeKind.TIMEOUT:
                    end = Outcome(
                        OutcomeKind.TIMEOUT, text=f"no {' or '.join(missing)} in {self.timeout:g} s"
                    )
            missing = self.driver.missing_responses(case, frames)
        if isinstance(end, Outcome):
            if (
                end.kind in (OutcomeKind.SOCKET_CLOSE, OutcomeKind.TIMEOUT)
                and self.broker is not None
                and self.broker.crashed
            ):
                return Outcome(
                    OutcomeKind.BROKER_DOWN, text=f"the broker process died ({end.text})"
                )
            return end
        return Outcome(
            OutcomeKind.REPLY,
            text=", ".join(str(getattr(f, "name", f)) for f in frames if hasattr(f, "name")),
            frames=tuple(frames),
        )

    def _judged(
        self,
        case: Case,
        outcome: Outcome,
        channel: int,
        duration: float,
        data: bytes,
        sent: bool = True,
    ) -> Result:
        """The oracles' verdict on a case; one that was never ``sent`` (no connection could be
        had) has no time it went out."""
        crashed = bool(self.broker is not None and self.broker.crashed)
        seen = Observation(
            case, outcome, alive=outcome.kind != OutcomeKind.BROKER_DOWN, crashed=crashed
        )
        sent_at = time.monotonic() - duration if sent else math.inf
        return Result(case, outcome, channel, duration, data, judge(seen), sent_at=sent_at)

    # -- what was created ------------------------------------------------------------------

    def _note(self, case: Case, replies: list[Any]) -> None:
        """Remember what this case may have created, to delete it: what the driver reads in
        the case's bytes (as sent: a lenient broker creates a broken name) and in the replies
        (a name the broker chose)."""
        self.created.update(self.driver.created(case, replies, self.prefix))

    def cleanup(self) -> int:
        """Delete what the run's cases created (only that); how many. Called after
        :meth:`close`: an exclusive queue of a connection still open cannot be deleted from
        another."""
        if not self.created:
            return 0
        left = self.driver.delete(self.target, self.created, self.timeout)
        return len(self.created) - len(left)

    def close(self) -> None:
        for lane in self.lanes:
            if lane.connection is not None:
                lane.connection.close()
        for pool in self._spares.values():
            for future in pool:
                future.add_done_callback(_abort_spare)
            pool.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)
