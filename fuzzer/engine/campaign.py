"""Fuzz campaigns: Hypothesis draws batches of cases, the runner sends them, events tell it all.

One :class:`Campaign` drives one worker process. Hypothesis generates batches of cases
(:func:`amqpfuzz.strategies.fuzz_batches`: each case built from a blob, as
:func:`~amqpfuzz.strategies.fuzz_cases` builds it; generation only: a campaign never stops at
its first failure). Each batch runs on every target; every case is judged (:mod:`.judging`: the
oracles, then the target's profile, a new failure replayed from its reproducer before it is
reported) and emitted as a :class:`~.events.CaseJudged`. Where several targets react
differently to the same case, a :class:`~.events.DivergenceFound` names each reaction. A
throwaway broker that goes down is restarted and the crash pinned on its case
(:mod:`.crashes`). When the budget is spent, each new failure signature is shrunk
(:mod:`.shrink`) and its reproducer rewritten with the smallest case that fails every time, all
within a quarter of the budget more (at least 10 s), so that a run ends close to the time it was
given. Replays confirming a failure count in the budget; the last batch's new signatures are
confirmed past its end (a failure is never reported unreplayed for want of time). The parts:
:mod:`.drawing` (the batches), :mod:`.judging`, :mod:`.crashes`, :mod:`.measuring` (the
broker's coverage), :mod:`.state` (settings and totals).
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from amqpfuzz.strategies import Case, case_builder, family_for, fuzz_cases

from ..coverage import Measure
from ..protocols import ConnectionFailed
from .corpus import Corpus
from .crashes import Crashes
from .drawing import Drawing
from .events import (
    CorpusSaved,
    CoverageReached,
    Emitter,
    Judged,
    Progress,
    RunFinished,
    RunStarted,
    TargetSummary,
)
from .feedback import Feedback, Round
from .judging import Judging, expected_of
from .measuring import Measuring
from .runner import Result, Runner
from .shrink import shrink_failures
from .state import CampaignSettings, Ran, Stats, Tally, TargetRun
from .triage import went_down

__all__ = ["Campaign", "CampaignSettings", "Stats", "Tally", "TargetRun", "expected_of"]


class CampaignOver(BaseException):
    """The budget is spent: leaves Hypothesis at once (it is not an Exception to shrink)."""


class CampaignBroke(BaseException):
    """An error inside a batch: carried out of Hypothesis as it is (Hypothesis would run the
    batch again to see it fail twice, and report the error as flaky)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


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
        self.measuring = Measuring(targets, config, self.stats, self.emit)
        self.crashes = Crashes(
            config,
            self.stats,
            self.emit,
            self._runner,
            self.measuring.point,
            lambda: self._deadline,
        )
        self.feedback: Feedback | None = None  # made once the targets' frame-max is known
        self.drawing = Drawing(config)
        self.judging = Judging(
            config,
            out,
            self.stats,
            self.emit,
            self.drawing.avoided,
            self.crashes.confirmed,
            lambda: self._deadline,
            renew=self.crashes.renew,
        )
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
                if run.broker is None or not run.broker.crashed or not self.crashes.restart(run):
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
        self.measuring.sample()
        self.measuring.point(force=True)
        build = case_builder(**self._case_options())
        if self.config.feedback:
            self.feedback = Feedback(build, family_for(self.config.protocol).blob)
            self.feedback.load(self._seeds())
        self.drawing.build, self.drawing.feedback = build, self.feedback

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
        try:
            with self.measuring.ticking():
                self._generate()
                if self.config.shrink:
                    shrink_failures(self.judging.first, self.cases(), self.config, self.emit)
        finally:
            self.finish()
        return self.stats

    def _generate(self) -> None:
        """Batches one behind the other: while the runner sends one (in a thread of its own,
        which mostly waits on sockets), the one before it is judged and Hypothesis draws the
        next, so the broker is never idle while we think. A batch that brought the broker down
        is dealt with (restart, triage) before the next is sent."""
        count = 10**9  # the budget or max_examples ends it (paced batches are not all full)
        sending: list[tuple[list[Case], Future[Ran]]] = []
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="amqpfuzz-batch")
        drawing = self.drawing

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
            if before is not None and self.judging.replays(before[1].results, self.targets):
                self._judge_batch(*before)  # its failures replayed with the broker quiet
                before = None
            sent = len(before[0]) if before else 0
            drawn = drawing.draw(rnd, self._deadline)
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
        rounds: list[Round] = []
        started = time.monotonic()
        steered = next((r for r in self.targets if r.measure is not None), None)

        def on(run: TargetRun) -> list[Result]:
            assert run.runner is not None
            if self.feedback is not None and run is steered:
                measure = run.measure
                assert measure is not None

                def sampled(indices: list[int], measure: Measure = measure) -> None:
                    rounds.append(Round(tuple(indices), self.measuring.take(measure)))

                results = run.runner.run(cases, sampled)
                run.gained = sum(r.lines or 0 for r in rounds)
                return results
            return run.runner.run(cases)

        if len(self.targets) > 1:  # several brokers: each works through the batch at once
            with ThreadPoolExecutor(
                len(self.targets), thread_name_prefix="amqpfuzz-target"
            ) as pool:
                runs = dict(zip(self._labels(), pool.map(on, self.targets), strict=True))
        else:
            runs = {run.label: on(run) for run in self.targets}
        self.measuring.sample(but=steered if rounds else None)  # the lines this batch reached
        self.drawing.paced_at(len(cases), time.monotonic() - started)
        return Ran(runs, tuple(rounds))

    def _labels(self) -> list[str]:
        return [run.label for run in self.targets]

    def _after_runs(self, runs: dict[str, list[Result]]) -> dict[str, list[Result]]:
        """Each target's results once a crash among them is dealt with (:mod:`.crashes`)."""
        for run in self.targets:
            results = runs[run.label]
            down = any(went_down(r) for r in results)
            self.drawing.crashed(down)  # crashes: smaller batches; calm: full again
            if down:
                assert run.runner is not None
                runs[run.label] = self.crashes.after_batch(run, results, tuple(run.runner.traffic))
        return runs

    def _judge_batch(self, cases: list[Case], ran: Ran) -> list[Judged]:
        outcomes = ran.results
        self.judging.prepare(outcomes, self.targets)  # its new failures replayed, side by side
        if self.targets:
            self.drawing.timed(outcomes[self.targets[0].label], self.targets[0])
        judged: list[Judged] = []
        for run in self.targets:
            crashes: set[str] = set()  # one crash per batch, whatever the cases it took down
            judged += [self.judging.judge(run, result, crashes) for result in outcomes[run.label]]
        if len(self.targets) > 1:
            judged += self.judging.compare(cases, outcomes, self.targets)
        if self.feedback is not None and self.targets:
            self._learn(cases, ran)
        self.stats.cases += len(cases)
        stats = self.stats
        self.emit(Progress(stats.cases, stats.failures, stats.xfails, flaky=stats.flaky))
        self.measuring.point()
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

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Close the connections, delete what the campaign created, record each crash once
        (with how often it happened), the broker's coverage, and say how it went."""
        self.measuring.sample()
        self.measuring.point(force=True)
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
                    for s in [*run.tally.signatures, *run.tally.flaky_signatures]
                    if s in self.stats.first_seen
                },
                flaky=run.tally.flaky,
                flaky_signatures=dict(run.tally.flaky_signatures),
                confirmations=dict(run.tally.confirmations),
                alone=dict(run.tally.alone),
            )
            for run in self.targets
        )
