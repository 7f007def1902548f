"""Fuzz campaigns: Hypothesis draws batches of cases, the runner sends them, events tell it all.

One :class:`Campaign` drives one worker process. Hypothesis generates batches of cases
(:func:`amqpfuzz.strategies.fuzz_batches`: each case built from a blob, as
:func:`~amqpfuzz.strategies.fuzz_cases` builds it; generation only: a campaign never stops at
its first failure). Each batch runs on every target; every case is judged (the oracles, then the
target's profile: a failure it documents is an ``xfail``) and emitted as a
:class:`~.events.CaseJudged`; a failure writes a reproducer. Where several targets react
differently to the same case, a :class:`~.events.DivergenceFound` names each reaction. A
throwaway broker that goes down is restarted and the crash pinned on its case (:mod:`.triage`).
When the budget is spent, each new failure signature is shrunk (:mod:`.shrink`) and its
reproducer rewritten with the smallest case, all within a quarter of the budget more (at least
10 s), so that a run ends close to the time it was given.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from amqpfuzz.spec import DEFAULT_PROTOCOL, AmqpfuzzError, OutcomeKind
from amqpfuzz.strategies import Case, Chooser, case_builder, family_for, fuzz_cases

from ..brokers import BrokerError
from ..coverage import Measure
from ..protocols import ConnectionFailed, Outcome
from ..records import reaction_of
from . import signatures
from .corpus import Corpus
from .events import (
    BrokerDown,
    BrokerRestarted,
    CaseJudged,
    CorpusSaved,
    CoverageReached,
    CoverageSampled,
    DivergenceFound,
    Emitter,
    FailureFound,
    FailureShrunk,
    Judged,
    Progress,
    RunFinished,
    RunStarted,
    TargetSummary,
    new_record_id,
)
from .feedback import Feedback, Round
from .replay import write_case, write_traffic
from .runner import Result, Runner, Sent
from .shrink import shrink
from .targets import TargetState
from .traffic import send, survives
from .triage import side_by_side, triage, unattributed, went_down
from .verdicts import diverges, judge_against

__all__ = ["Campaign", "CampaignSettings", "Stats", "TargetRun"]


SLOW = 1.0  # seconds: an operator whose cases take longer has them held back and sent together
HELD = 48  # at most this many held (more are let go: drawn again another time)
HOLD = 12  # batches between two sendings of the held ones


class CampaignOver(BaseException):
    """The budget is spent: leaves Hypothesis at once (it is not an Exception to shrink)."""


class CampaignBroke(BaseException):
    """An error inside a batch: carried out of Hypothesis as it is (Hypothesis would run the
    batch again to see it fail twice, and report the error as flaky)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class CampaignSettings:
    duration: float | None = 60.0
    max_examples: int | None = None  # cases, all targets together counted once
    seed: int = 0
    batch: int = 400
    # a batch holds about as many cases as the targets ran in this long (at most ``batch``):
    # a slow target's batches stay short, so that the run ends close to its budget
    batch_seconds: float = 2.0
    valid_share: float = 0.15  # valid cases of one method
    traffic_share: float = 0.3  # valid traffic in state (families that have it)
    state_share: float = 0.2  # malformed cases after valid traffic (families that have it)
    operators: tuple[str, ...] | None = None
    timeout: float = 5.0
    in_flight: int = 32
    protocol: str = DEFAULT_PROTOCOL
    shrink: bool = True
    shrink_budget: float = 30.0  # seconds per failure signature
    shrink_total: float | None = None  # seconds for them all (None: a quarter of the budget)
    # times a throwaway broker is restarted after going down (None: for as long as the budget
    # lasts; a broker that will not come back after a few tries ends the campaign)
    restarts: int | None = None
    minimize_budget: float = 30.0  # seconds to cut a crash's traffic down, per crash
    triage_budget: float = 30.0  # seconds to pin a batch's crashes on cases
    avoid: int = 8  # a case like one behind a known crash or hang runs once in this many
    coverage_every: float = 5.0  # seconds between two points of the broker's coverage
    feedback: bool = True  # steer by new coverage (or, unmeasured, new reactions)
    corpus: str | None = None  # a corpus directory whose seeds the campaign starts from
    # this worker's share of those seeds (its index, the workers): each is sent by one
    corpus_part: tuple[int, int] = (0, 1)


@dataclass(frozen=True)
class Ran:
    """What came of a batch on every target (by label) and, with feedback, the rounds of the
    first measured target."""

    results: dict[str, list[Result]]
    rounds: tuple[Round, ...] = ()


@dataclass
class Tally:
    """What a campaign found on one target."""

    failures: int = 0
    xfails: int = 0
    divergences: int = 0
    signatures: dict[str, int] = field(default_factory=dict)
    reproducers: dict[str, str] = field(default_factory=dict)


@dataclass
class TargetRun(TargetState):
    """One target of a campaign: its runner, restarts, and what was found on it."""

    runner: Runner | None = None
    restarts: int = 0
    tally: Tally = field(default_factory=Tally)
    # crashes recorded once each: signature -> (its event, how many times it happened)
    crashes: dict[str, list[Any]] = field(default_factory=dict)
    measure: Measure | None = None  # the broker's coverage over the run, where it is measured
    gained: int | None = None  # lines the last batch reached that none before had


@dataclass
class Stats:
    """A campaign's totals, all targets together."""

    cases: int = 0
    failures: int = 0
    xfails: int = 0
    divergences: int = 0
    signatures: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    broker_down: str = ""
    first_seen: dict[str, float] = field(default_factory=dict)  # signature -> seconds in

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Campaign:
    """Fuzzes ``targets``; reproducers go to ``out/reproducers``, events to ``emit``."""

    def __init__(
        self,
        targets: list[TargetRun],
        config: CampaignSettings,
        *,
        out: Path,
        run_id: str,
        prefix: str,
        emit: Emitter | None = None,
    ) -> None:
        self.targets = targets
        self.config = config
        self.out = out
        self.run_id = run_id
        self.prefix = prefix
        self.emit = emit or Emitter()
        self.stats = Stats()
        self._deadline = math.inf if config.duration is None else time.monotonic() + config.duration
        self._first: dict[str, tuple[Case, Path, TargetRun]] = {}  # signature -> first failure
        self._avoided: set[str] = set()  # operators (or methods) behind a known crash or hang
        # a broker that goes down: smaller batches, fewer suspects each time (calm: full again)
        self._batch = config.batch
        self._smallest_batch = min(config.batch, 16)
        # as many as ran in ``batch_seconds`` at the last batch's pace (the first: full; a
        # smaller first batch runs fewer cases before a crashing broker's first crash, and
        # finds fewer signatures in a run's first seconds)
        self._paced = config.batch
        self._dice = random.Random(config.seed)  # which avoided cases run all the same
        self._sampled = -math.inf  # when the last point of the coverage was emitted
        self._measuring = threading.Lock()  # samples and points, from any thread
        self._slow: dict[str, float] = {}  # seconds an operator's (a method's) cases take
        self._held: list[Case] = []  # slow cases drawn, to go together
        self._since = 0  # batches since the held ones went
        self._releasing = False  # the batch being drawn sends them
        self.feedback: Feedback | None = None  # made once the targets' frame-max is known
        self._build: Chooser | None = None
        for run in targets:
            run.protocol = config.protocol
            if run.coverage is not None and run.measure is None:
                run.measure = Measure(run.coverage)

    # -- setting up ------------------------------------------------------------------------

    def start(self) -> None:
        """Connect to every target (raises ConnectionFailed: unreachable, refused login)."""
        for run in self.targets:
            try:
                run.runner = self._runner(run)
            except ConnectionFailed:
                # a throwaway broker that another worker's case has just brought down
                if run.broker is None or not run.broker.crashed or not self._restart(run):
                    raise
            runner = run.runner
            assert runner is not None and runner.main is not None
            run.announce(run.driver.announced(runner.main))
        self._deadline = (
            math.inf if self.config.duration is None else time.monotonic() + self.config.duration
        )
        self.stats.started = time.monotonic()
        views = tuple(run.view() for run in self.targets)
        self.emit(RunStarted(self.run_id, "fuzz", str(self.config.seed), views))
        self._sample()
        self._coverage(force=True)
        self._build = case_builder(**self._case_options())
        if self.config.feedback:
            self.feedback = Feedback(self._build, family_for(self.config.protocol).blob)
            self.feedback.load(self._seeds())

    def _seeds(self) -> list[Any]:
        """This worker's share of the seeds of ``corpus`` (CorpusError: one that is not)."""
        if self.config.corpus is None:
            return []
        index, count = self.config.corpus_part
        size = family_for(self.config.protocol).blob
        seeds = Corpus.load(Path(self.config.corpus), size)
        return seeds[index::count]

    @property
    def corpus_dir(self) -> Path:
        """Where the campaign's seeds are kept: the output's ``corpus/<protocol>``."""
        return self.out / "corpus" / self.config.protocol

    def _runner(self, run: TargetRun) -> Runner:
        return Runner(
            run.target,
            protocol=self.config.protocol,
            timeout=self.config.timeout,
            in_flight=self.config.in_flight,
            broker=run.broker,
            prefix=self.prefix,
        ).start()

    def cases(self) -> st.SearchStrategy[Case]:
        """One case at a time (what a failing case shrinks through)."""
        return fuzz_cases(**self._case_options())

    def _case_options(self) -> dict[str, Any]:
        return {
            "operators": self.config.operators,
            "valid_share": self.config.valid_share,
            "traffic_share": self.config.traffic_share,
            "state_share": self.config.state_share,
            "traffic": self._traffic(),
            "protocol": self.config.protocol,
            "frame_max": self.frame_max,
            "prefix": self.prefix,
        }

    def _traffic(self) -> Any:
        """What valid traffic may use of the broker beyond the specification: the first
        target's profile's (cases are the same for every target)."""
        profile = self.targets[0].profile if self.targets else None
        return dict(profile.traffic) if profile is not None and profile.traffic else None

    @property
    def frame_max(self) -> int:
        """The smallest frame-max the targets negotiated: cases must fit every one."""
        return min(run.runner.frame_max for run in self.targets if run.runner)

    # -- the campaign ----------------------------------------------------------------------

    def run(self) -> Stats:
        """Fuzz until the budget is spent, then shrink what failed; the records are kept. A
        point of the coverage goes every ``coverage_every`` seconds whatever the campaign is
        doing (waiting for a broker to start again, pinning a crash on its case)."""
        ticking = threading.Event()
        ticker = threading.Thread(target=self._tick, args=(ticking,), daemon=True)
        if any(run.measure is not None for run in self.targets):
            ticker.start()
        try:
            self._generate()
            if self.config.shrink:
                self._shrink_all()
        finally:
            ticking.set()
            if ticker.is_alive():
                ticker.join()
            self.finish()
        return self.stats

    def _tick(self, stopped: threading.Event) -> None:
        while not stopped.wait(min(1.0, self.config.coverage_every)):
            self._coverage()

    def _generate(self) -> None:
        """Batches one behind the other: while the runner sends one (in a thread of its own,
        which mostly waits on sockets), the one before it is judged and Hypothesis draws the
        next, so the broker is never idle while we think. A batch that brought the broker down
        is dealt with (restart, triage) before the next is sent."""
        count = 10**9  # the budget or max_examples ends it (paced batches are not all full)
        sending: list[tuple[list[Case], Future[Ran]]] = []
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="amqpfuzz-batch")

        def landed() -> tuple[list[Case], Ran] | None:
            """The batch being sent, once sent, its crashes dealt with."""
            if not sending:
                return None
            cases, future = sending.pop()
            ran = future.result()
            return cases, replace(ran, results=self._after_runs(ran.results))

        @hypothesis_seed(self.config.seed)
        @settings(
            max_examples=count,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )
        @given(st.randoms(use_true_random=True))
        def campaign(rnd: random.Random) -> None:
            try:
                batch(rnd)
            except Exception as exc:  # raised again below, as it is
                raise CampaignBroke(exc) from exc

        def batch(rnd: random.Random) -> None:
            if time.monotonic() > self._deadline or self.stats.broker_down:
                raise CampaignOver
            before = landed()
            sent = len(before[0]) if before else 0
            drawn = self._draw(rnd)
            if self.config.max_examples:
                drawn = drawn[: self.config.max_examples - self.stats.cases - sent]
            if drawn and not self.stats.broker_down:
                sending.append((drawn, pool.submit(self._runs, drawn)))
            if before is not None:
                self._judge_batch(*before)
            if self.stats.broker_down:
                raise CampaignOver
            if (
                self.config.max_examples
                and self.stats.cases + len(drawn) >= self.config.max_examples
            ):
                raise CampaignOver

        try:
            try:
                with contextlib.suppress(CampaignOver):  # the budget is spent: the normal end
                    campaign()
            except CampaignBroke as broke:
                raise broke.error from None
            last = landed()
            if last is not None:
                self._judge_batch(*last)
        finally:
            pool.shutdown(wait=True)

    def _draw(self, rnd: random.Random) -> list[Case]:
        """A batch: ``batch`` blobs from Hypothesis's generator (steered by what the campaign
        reached: :mod:`.feedback`), read as cases as far as the pace and steering away from
        known crashes let them go."""
        assert self._build is not None
        size = family_for(self.config.protocol).blob
        blobs = [rnd.randbytes(size) for _ in range(self.config.batch)]
        if self.feedback is not None:
            blobs = self.feedback.steer(blobs, rnd)
        wanted = min(self._batch, self._paced)
        cases: list[Case] = []
        for blob in blobs:
            for case in self._steer([self._read(blob)]):
                if self._slow.get(_key(case), 0.0) > SLOW:
                    if len(self._held) < HELD:  # (past that many, drawn again later)
                        self._held.append(case)
                else:
                    cases.append(case)
            if len(cases) >= wanted:
                break
        self._since += 1
        ending = bool(self.config.max_examples) or time.monotonic() > self._deadline - 5.0
        self._releasing = bool(self._held) and (self._since >= HOLD or ending)
        if self._releasing:
            cases += self._held  # the slow ones together: their wait is paid once
            self._held, self._since = [], 0
        return cases

    def _read(self, blob: bytes) -> Case:
        """The case ``blob`` reads as; a blob the strategies cannot read is a defect of
        amqpfuzz's own, said with the blob that shows it."""
        assert self._build is not None
        try:
            return self._build(blob)
        except Exception as exc:
            raise AmqpfuzzError(
                f"amqpfuzz could not read a case from blob {blob.hex()} "
                f"({type(exc).__name__}: {exc}); please report it"
            ) from exc

    def _timed(self, results: list[Result]) -> None:
        """How long the cases of each operator (or method) take on connections of their own:
        those that take seconds (a broker that waits before it closes a connection whose login
        failed) are held back and sent together every few batches, so that one slow case does
        not hold up every batch it is in."""
        driver = self.targets[0].driver
        for result in results:
            if not driver.needs_own_connection(result.case):
                continue  # (a lane's case waits for its whole group: its time is theirs)
            key = _key(result.case)  # (the slowest lately: one slow case in a few holds all)
            self._slow[key] = max(result.duration_s, 0.95 * self._slow.get(key, 0.0))

    def _steer(self, cases: list[Case]) -> list[Case]:
        """Spend the budget elsewhere than on what is known to crash or hang the broker: a
        case of an operator (or, valid, of a method) behind such a failure runs once in
        ``avoid`` times."""
        if not self._avoided:
            return cases
        chosen = self.config.operators
        valid = self.config.valid_share + self.config.traffic_share
        if chosen and not valid and self._avoided >= set(chosen):
            return cases  # nothing else to spend it on
        return [
            c
            for c in cases
            if _key(c) not in self._avoided or self._dice.randrange(self.config.avoid) == 0
        ]

    def run_batch(self, cases: list[Case]) -> list[Judged]:
        """Run ``cases`` on every target and judge them; the events emitted for them (a
        :class:`~.events.CaseJudged` per case and target, then any divergences). A crash is
        recorded once, with how often it happened, when the campaign ends."""
        ran = self._runs(cases)
        return self._judge_batch(cases, replace(ran, results=self._after_runs(ran.results)))

    def _runs(self, cases: list[Case]) -> Ran:
        """What came of ``cases`` on each target, with the traffic each runner sent; with
        feedback, the broker's coverage sampled after each round on the first target whose
        code is measured (the lines a round reached are its cases')."""
        runs: dict[str, list[Result]] = {}
        rounds: list[Round] = []
        started = time.monotonic()
        steered = next((r for r in self.targets if r.measure is not None), None)
        for run in self.targets:
            assert run.runner is not None
            if self.feedback is not None and run is steered:
                measure = run.measure
                assert measure is not None

                def sampled(indices: list[int], measure: Measure = measure) -> None:
                    rounds.append(Round(tuple(indices), self._take(measure)))

                runs[run.label] = run.runner.run(cases, sampled)
                run.gained = sum(r.lines or 0 for r in rounds)
            else:
                runs[run.label] = run.runner.run(cases)
        self._sample(but=steered if rounds else None)  # the lines this batch reached: its own
        pace = len(cases) * self.config.batch_seconds / max(time.monotonic() - started, 1e-3)
        if not self._releasing:  # (the held slow cases' wait says nothing of the pace)
            self._paced = max(self._smallest_batch, min(self.config.batch, int(pace)))
        return Ran(runs, tuple(rounds))

    def _after_runs(self, runs: dict[str, list[Result]]) -> dict[str, list[Result]]:
        """Each target's results once a crash among them is dealt with (:meth:`_after_batch`)."""
        for run in self.targets:
            results = runs[run.label]
            if not any(went_down(r) for r in results):  # calm again: back towards full batches
                self._batch = min(self.config.batch, self._batch * 2)
            assert run.runner is not None
            runs[run.label] = self._after_batch(run, results, tuple(run.runner.traffic))
        return runs

    def _judge_batch(self, cases: list[Case], ran: Ran) -> list[Judged]:
        outcomes = ran.results
        if self.targets:
            self._timed(outcomes[self.targets[0].label])
        judged: list[Judged] = []
        for run in self.targets:
            crashes: set[str] = set()  # one crash per batch, whatever the cases it took down
            judged += [self._judge(run, result, crashes) for result in outcomes[run.label]]
        if len(self.targets) > 1:
            judged += self._compare(cases, outcomes)
        if self.feedback is not None and self.targets:
            self._learn(cases, ran)
        self.stats.cases += len(cases)
        self.emit(Progress(self.stats.cases, self.stats.failures, self.stats.xfails))
        self._coverage()
        return judged

    def _learn(self, cases: list[Case], ran: Ran) -> None:
        """Feedback from a batch: the first target's reactions (and the rounds' lines, where
        measured); a case that crashed or hung any target is no seed."""
        assert self.feedback is not None
        first = ran.results[self.targets[0].label]
        avoid = {
            i
            for results in ran.results.values()
            for i, r in enumerate(results)
            if r.failure is not None and r.failure.oracle in ("liveness", "hang")
        }
        outcomes = [r.outcome for r in first]
        self.feedback.learn(cases, outcomes, ran.rounds, avoid, self.stats.elapsed)

    # -- the broker's coverage -------------------------------------------------------------

    def _sample(self, but: TargetRun | None = None) -> None:
        """Each measured target's new lines since the last sample (None: none taken); ``but``
        was sampled already, round by round."""
        for run in self.targets:
            if run is not but:
                run.gained = self._take(run.measure) if run.measure is not None else None

    def _take(self, measure: Measure) -> int | None:
        with self._measuring:  # (the rounds' samples are taken in the sending thread)
            return measure.take()

    def _coverage(self, force: bool = False) -> None:
        """A point of each measured target's coverage, every ``coverage_every`` seconds."""
        with self._measuring:
            now = time.monotonic()
            if not force and now - self._sampled < self.config.coverage_every:
                return
            self._sampled = now
            points = [
                (run.view(), run.measure.probe.plan.how, run.measure.counts())
                for run in self.targets
                if run.measure is not None
            ]
        seed, elapsed = str(self.config.seed), self.stats.elapsed
        for view, how, counts in points:
            self.emit(CoverageSampled(view, seed, elapsed, how, counts))

    def _after_batch(
        self, run: TargetRun, results: list[Result], traffic: tuple[Sent, ...]
    ) -> list[Result]:
        """A batch that brought the broker down: restart it and pin the crash on the case
        that does it alone, or on the traffic of the cases that do it together; if it cannot
        be restarted (a URL target, a broker that will not come back), the crash keeps all the
        traffic in flight and the campaign ends."""

        if not any(went_down(r) for r in results):
            return results
        self._batch = max(self._smallest_batch, self._batch // 2)  # crashes: smaller batches

        def runner() -> Runner:
            assert run.runner is not None
            return run.runner

        now = time.monotonic()  # triage has its budget, within the run's (a few seconds past)
        until = min(now + self.config.triage_budget, max(self._deadline, now + 5.0))
        pinned: set[int] = set()
        alone: set[int] = set()  # ran alone without bringing the broker down
        while True:
            suspects = [i for i, r in enumerate(results) if went_down(r) and i not in pinned]
            if not suspects:
                return results
            if not self._restart(run):
                why = "it could not be restarted to find which"
                return unattributed(results, suspects, why, traffic)
            found = triage(results, suspects, runner, lambda: self._restart(run), until)
            results = found.results
            pinned.update(found.pinned)
            alone.update(i for i in suspects if i not in found.rest and i not in found.pinned)
            if found.gone:
                return results
            if found.pinned or found.rest:  # the others run again, together
                if time.monotonic() > until:  # no time left to find which: the traffic of
                    # them all, sent once more to see that it still brings the broker down
                    rest = [i for i in found.rest if went_down(results[i])]
                    crashed = self._crashes(run)(list(traffic))
                    how = "brings it down" if crashed else "did not bring it down again when sent"
                    why = f"there was no time left to find which; their traffic, kept, {how}"
                    return unattributed(results, rest, why, traffic)
                again = runner().run([results[i].case for i in found.rest])
                traffic = tuple(runner().traffic)
                for i, result in zip(found.rest, again, strict=True):
                    results[i] = result
                continue
            # every suspect ran alone and none brought the broker down: it takes several
            budget = self.config.minimize_budget
            return side_by_side(results, suspects, traffic, self._crashes(run), budget)

    def _crashes(self, run: TargetRun) -> Callable[[list[Sent]], bool | None]:
        """Whether traffic brings ``run``'s broker down (it is restarted if so; None if it
        will not come back)."""

        def test(chosen: list[Sent]) -> bool | None:
            driver, timeout = run.driver, self.config.timeout
            send(driver, run.target, chosen, timeout)
            if survives(driver, run.target, timeout, run.broker):
                return False
            return True if self._restart(run) else None

        return test

    def _restart(self, run: TargetRun) -> bool:
        """Restart a throwaway broker that went down (for as long as the budget lasts, unless
        ``restarts`` says fewer), trying again with a growing pause when it will not start;
        if it cannot be, the campaign is over (:attr:`Stats.broker_down` says why)."""
        limit = self.config.restarts
        failed = 0
        while run.broker is not None and (limit is None or run.restarts < limit):
            run.restarts += 1
            self.emit(BrokerDown(run.label, run.broker.log_tail(10), restarting=True))
            self._coverage()  # (a point while it is down too: what was reached stands)
            try:
                run.broker.recover()
            except BrokerError as exc:
                failed += 1
                if failed >= 3 or time.monotonic() > self._deadline:
                    self.stats.broker_down = f"{run.label} could not be restarted: {exc}"
                    return False
                time.sleep(2.0**failed)  # the machine may need a moment
                continue
            if run.runner is not None:
                run.runner.close()
            try:
                run.runner = self._runner(run)
            except ConnectionFailed:
                continue  # down again already (another worker's case): once more
            self.emit(BrokerRestarted(run.label))
            self._coverage()
            return True
        self.stats.broker_down = f"{run.label} stopped accepting connections"
        return False

    # -- judging ---------------------------------------------------------------------------

    def _judge(self, run: TargetRun, result: Result, crashes: set[str]) -> CaseJudged:
        """The case's verdict on ``run`` (the oracles', then the profile's), its reproducer if
        it failed, and its event. A crash (a liveness failure) is one event however many
        cases it took down, and however often it happens: the first is held, with its count,
        until the campaign ends; ``crashes`` are the ones this batch already counted."""
        case, failure = result.case, result.failure
        verdict = judge_against(
            run,
            "fail" if failure is not None else "pass",
            signature=failure.signature if failure is not None else None,
            rule=case.spec_ref,
            operator=case.operator,
        )
        signature = failure.signature if failure is not None else ""
        crash = verdict.verdict == "fail" and failure is not None and failure.oracle == "liveness"
        if crash and signature in run.crashes:
            held = run.crashes[signature]
            if signature not in crashes:  # once per batch: one crash, however many cases
                held[1] += 1
                self._count(run, signature)
            crashes.add(signature)
            event: CaseJudged = held[0]
            return event
        record_id = new_record_id()
        reproducer = None
        if verdict.verdict == "xfail":
            run.tally.xfails += 1
            self.stats.xfails += 1
        elif failure is not None:
            self._count(run, signature)
            reproducer = str(self._reproduce(run, result, record_id))
            run.tally.reproducers.setdefault(signature, reproducer)
            self._first.setdefault(signature, (case, Path(reproducer), run))
            if failure.oracle in ("liveness", "hang") and not result.traffic:
                self._avoided.add(_key(case))  # known: time is better spent elsewhere
        event = CaseJudged(
            kind="fuzz",
            target=run.view(),
            spec_ref=case.spec_ref,
            expected=expected_of(case),
            observed=reaction_of(result.outcome),
            verdict=verdict.verdict,
            seed=str(self.config.seed),
            duration_s=result.duration_s,
            mutation=case.operator,
            failure=failure.as_record() if failure is not None else None,
            reproducer=reproducer,
            record_id=record_id,
            # the words cost more than the case: only a failure's are read
            case=repr(case) if failure is not None else case.spec_ref,
            required=str(case.expected) if failure is not None else "",
            outcome=str(result.outcome) if failure is not None else "",
            extra=verdict.known(),
        )
        if crash:
            run.crashes[signature] = [event, 1]
            crashes.add(signature)
        else:
            self.emit(event)
        if reproducer is not None and failure is not None:
            self.emit(FailureFound(run.label, signature, repr(case), reproducer))
        return event

    def _count(self, run: TargetRun, signature: str) -> None:
        run.tally.failures += 1
        self.stats.failures += 1
        run.tally.signatures[signature] = run.tally.signatures.get(signature, 0) + 1
        self.stats.signatures[signature] = self.stats.signatures.get(signature, 0) + 1
        self.stats.first_seen.setdefault(signature, self.stats.elapsed)

    def _reproduce(self, run: TargetRun, result: Result, record_id: str) -> Path:
        """A failure's reproducer: the case's bytes, or a crash's traffic."""
        directory = self.out / "reproducers"
        seed, protocol = str(self.config.seed), self.config.protocol
        if result.traffic:
            return write_traffic(
                directory, result, target=run.target, seed=seed, protocol=protocol,
                record_id=record_id,
            )  # fmt: skip
        frame_max = run.runner.frame_max if run.runner else 0
        return write_case(
            directory, result, target=run.target, seed=seed, protocol=protocol,
            frame_max=frame_max, record_id=record_id, prefix=run.runner.prefix if run.runner else "",
        )  # fmt: skip

    def _compare(self, cases: list[Case], outcomes: dict[str, list[Result]]) -> list[Judged]:
        found: list[Judged] = []
        first = self.targets[0]
        for index, case in enumerate(cases):
            reactions = diverges({label: r[index].outcome for label, r in outcomes.items()})
            if reactions is None:
                continue
            self.stats.divergences += 1
            for run in self.targets:
                run.tally.divergences += 1
            shown = " | ".join(
                f"{label}: {r['outcome']} {r['reply_code'] or r['condition'] or ''}".strip()
                for label, r in reactions.items()
            )
            event = DivergenceFound(
                kind="differential",
                target=first.view(),
                spec_ref=case.spec_ref,
                expected=expected_of(case),
                observed=reactions[first.label],
                verdict="fail",
                seed=str(self.config.seed),
                mutation=case.operator,
                failure={
                    "oracle": "differential",
                    "signature": signatures.differential(case, reactions),
                    "message": shown,
                },
                case=repr(case),
                reactions=reactions,
                targets=tuple(run.view() for run in self.targets),
            )
            self.emit(event)
            found.append(event)
        return found

    # -- shrinking -------------------------------------------------------------------------

    def _shrink_all(self) -> None:
        """Shrink each new signature's first case, in the order found, within the shrinking's
        share of the run (the run ends close to its budget; a failure not reached keeps the
        case as found)."""
        total = self.config.shrink_total
        if total is None:
            total = max(10.0, (self.config.duration or 40.0) / 4)
        until = time.monotonic() + total
        for signature, (case, path, run) in list(self._first.items()):
            if signature.startswith("liveness:") or run.runner is None or not case.blob:
                continue  # a broker that went down cannot be asked again and again
            budget = min(self.config.shrink_budget, until - time.monotonic())
            if budget <= 0:
                break
            smallest = shrink(self.cases(), run.runner, case, signature, budget)
            if smallest is not None and smallest.case.blob != case.blob:
                path = write_case(
                    path.parent,
                    smallest,
                    target=run.target,
                    seed=str(self.config.seed),
                    protocol=self.config.protocol,
                    frame_max=run.runner.frame_max,
                    record_id=path.stem.removeprefix("repro-"),
                    prefix=run.runner.prefix,
                )
                self.emit(FailureShrunk(run.label, signature, repr(smallest.case), str(path)))

    def finish(self) -> None:
        """Close the connections, delete what the campaign created, record each crash once
        (with how often it happened), the broker's coverage, and say how it went."""
        self._sample()
        self._coverage(force=True)
        for run in self.targets:
            if run.measure is not None:
                measure = run.measure
                self.emit(
                    CoverageReached(
                        run.view(),
                        str(self.config.seed),
                        self.stats.elapsed,
                        measure.probe.plan.how,
                        measure.counts(),
                        {m: tuple(sorted(lines)) for m, lines in measure.lines.items()},
                        {m: tuple(fs) for m, fs in measure.unreached().items()},
                    )
                )
        if self.feedback is not None and len(self.feedback.corpus):
            self.emit(self._corpus_saved())
        for run in self.targets:
            if run.runner is not None:
                run.runner.close()
                run.runner.cleanup()
                run.runner = None
            for signature, (event, count) in run.crashes.items():
                found = round(self.stats.first_seen.get(signature, self.stats.elapsed), 3)
                self.emit(replace(event, extra={**event.extra, "count": count, "found_s": found}))
            run.crashes.clear()
        self.emit(RunFinished(self.run_id, "fuzz", self.summaries()))

    def _corpus_saved(self) -> CorpusSaved:
        """The seeds kept, written to :attr:`corpus_dir`, and what steering did."""
        assert self.feedback is not None
        there = self.feedback.corpus.save(self.corpus_dir)
        done = self.feedback.summary()
        return CorpusSaved(str(self.corpus_dir), there, done)

    def summaries(self) -> tuple[TargetSummary, ...]:
        return tuple(
            TargetSummary(
                label=run.label,
                cases=self.stats.cases,
                failures=run.tally.failures,
                xfails=run.tally.xfails,
                divergences=run.tally.divergences,
                elapsed=self.stats.elapsed,
                signatures=dict(run.tally.signatures),
                reproducers=dict(run.tally.reproducers),
                broker_down=self.stats.broker_down,
                restarts=run.restarts,
                first_seen={
                    s: self.stats.first_seen[s]
                    for s in run.tally.signatures
                    if s in self.stats.first_seen
                },
            )
            for run in self.targets
        )


def expected_of(case: Case) -> dict[str, Any]:
    """The record contract's ``expected``: the reaction required, and for a close the method
    at fault (0-9-1's class and method ids, where the case's first frame has them)."""
    at_fault = None
    for frame in case.frames:
        method = getattr(frame, "method", None)
        if method is not None:
            at_fault = (method.class_index, method.index)
            break
    closing = case.expected.outcome != OutcomeKind.REPLY
    required = Outcome(case.expected.outcome, case.expected.code)
    return reaction_of(replace(required, method=at_fault if closing else None))


def _key(case: Case) -> str:
    """What steering goes by: a malformed case's operator, a valid case's method."""
    return case.operator or f"valid {case.spec_ref}"
