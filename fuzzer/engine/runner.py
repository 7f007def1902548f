"""Running cases against one target, fast: reused connections, probes, spares, channels in flight.

The runner knows no protocol; the target's driver (:class:`~amqpfuzz.fuzzer.protocols.Driver`)
opens connections and channels, makes the probe and says what a case left behind.

* Cases that should leave the connection open run on a few long-lived connections (lanes: a
  broker parses each connection's frames in one place), a batch spread over them, several at
  once on each, each case on its own channel. After a case comes the driver's *probe* on the
  same channel: its answer proves the channel survived, with no waiting for a timeout
  (:mod:`.lanes`).
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
from dataclasses import dataclass, replace
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL, AmqpfuzzError, OutcomeKind
from amqpfuzz.strategies import Case

from ..brokers import Target
from ..brokers.control import AnyBroker
from ..protocols import Connection, Name, Outcome
from ..protocols.families import driver_for
from .lanes import Going, Lane, Lanes
from .oracles import Failure, Observation, judge
from .own import OwnConnections, Settling

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


def _abort_spare(future: Future[Connection]) -> None:
    """Close a spare connection nobody will use (if it opened at all)."""
    if not future.cancelled() and future.exception() is None:
        future.result().abort()


_FEW = 4  # connections prepared ahead for each stage short of open


class Runner(Lanes, OwnConnections):
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
