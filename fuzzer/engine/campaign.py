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
reproducer rewritten with the smallest case.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from amqpfuzz.spec import DEFAULT_PROTOCOL
from amqpfuzz.strategies import Case, fuzz_batches, fuzz_cases

from ..brokers import BrokerError
from ..protocols import ConnectionFailed, reaction_record
from . import signatures
from .events import (
    BrokerDown,
    BrokerRestarted,
    CaseJudged,
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
from .replay import write_case
from .runner import Result, Runner
from .shrink import shrink
from .targets import TargetState
from .triage import triage, unattributed, went_down
from .verdicts import diverges, judge_against

__all__ = ["Campaign", "CampaignSettings", "Stats", "TargetRun"]


class CampaignOver(BaseException):
    """The budget is spent: leaves Hypothesis at once (it is not an Exception to shrink)."""


@dataclass
class CampaignSettings:
    duration: float | None = 60.0
    max_examples: int | None = None  # cases, all targets together counted once
    seed: int = 0
    batch: int = 50
    valid_share: float = 0.25
    operators: tuple[str, ...] | None = None
    timeout: float = 5.0
    in_flight: int = 8
    protocol: str = DEFAULT_PROTOCOL
    shrink: bool = True
    shrink_budget: float = 30.0  # seconds per failure signature
    restarts: int = 10  # times a throwaway broker is restarted after going down


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
        for run in targets:
            run.protocol = config.protocol

    @property
    def first_failures(self) -> dict[str, tuple[Case, Path, TargetRun]]:
        """The first failure of each new signature: its case, reproducer and target."""
        return self._first

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
            "protocol": self.config.protocol,
            "frame_max": self.frame_max,
            "prefix": self.prefix,
        }

    @property
    def frame_max(self) -> int:
        """The smallest frame-max the targets negotiated: cases must fit every one."""
        return min(run.runner.frame_max for run in self.targets if run.runner)

    # -- the campaign ----------------------------------------------------------------------

    def run(self) -> Stats:
        """Fuzz until the budget is spent, then shrink what failed; the records are kept."""
        try:
            self._generate()
            if self.config.shrink:
                self._shrink_all()
        finally:
            self.finish()
        return self.stats

    def _generate(self) -> None:
        batch = self.config.batch
        count = math.ceil(self.config.max_examples / batch) if self.config.max_examples else 10**9
        batches = fuzz_batches(batch, **self._case_options())

        @hypothesis_seed(self.config.seed)
        @settings(
            max_examples=count,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )
        @given(batches)
        def campaign(drawn: list[Case]) -> None:
            if time.monotonic() > self._deadline or self.stats.broker_down:
                raise CampaignOver
            if self.config.max_examples:
                drawn = drawn[: self.config.max_examples - self.stats.cases]
            self.run_batch(drawn)
            if self.config.max_examples and self.stats.cases >= self.config.max_examples:
                raise CampaignOver

        with contextlib.suppress(CampaignOver):  # the budget is spent: the normal end
            campaign()

    def run_batch(self, cases: list[Case]) -> list[Judged]:
        """Run ``cases`` on every target and judge them; the events emitted for them (a
        :class:`~.events.CaseJudged` per case and target, then any divergences)."""
        judged: list[Judged] = []
        outcomes: dict[str, list[Result]] = {}
        for run in self.targets:
            assert run.runner is not None
            results = self._after_batch(run, run.runner.run(cases))
            outcomes[run.label] = results
            judged += [self._judge(run, result) for result in results]
        if len(self.targets) > 1:
            judged += self._compare(cases, outcomes)
        self.stats.cases += len(cases)
        self.emit(Progress(self.stats.cases, self.stats.failures, self.stats.xfails))
        return judged

    def _after_batch(self, run: TargetRun, results: list[Result]) -> list[Result]:
        """A batch that brought the broker down: restart it and find the case that did it,
        or, if it cannot be restarted, end the campaign."""
        suspects = [i for i, r in enumerate(results) if went_down(r)]
        if not suspects:
            return results
        if not self._restart(run):
            return unattributed(results, suspects, "it could not be restarted to find which")

        def runner() -> Runner:
            assert run.runner is not None
            return run.runner

        return triage(results, suspects, runner, lambda: self._restart(run))

    def _restart(self, run: TargetRun) -> bool:
        """Restart a throwaway broker that went down, within the campaign's allowance; if it
        cannot be, the campaign is over (:attr:`Stats.broker_down` says why)."""
        while run.broker is not None and run.restarts < self.config.restarts:
            run.restarts += 1
            self.emit(BrokerDown(run.label, run.broker.log_tail(10), restarting=True))
            try:
                run.broker.recover()
            except BrokerError as exc:  # it will not come back: the campaign ends, said why
                self.stats.broker_down = f"{run.label} could not be restarted: {exc}"
                return False
            if run.runner is not None:
                run.runner.close()
            try:
                run.runner = self._runner(run)
            except ConnectionFailed:
                continue  # down again already (another worker's case): once more
            self.emit(BrokerRestarted(run.label))
            return True
        self.stats.broker_down = f"{run.label} stopped accepting connections"
        return False

    # -- judging ---------------------------------------------------------------------------

    def _judge(self, run: TargetRun, result: Result) -> CaseJudged:
        """The case's verdict on ``run`` (the oracles', then the profile's), its reproducer if
        it failed, and its event."""
        case, failure = result.case, result.failure
        verdict = judge_against(
            run,
            "fail" if failure is not None else "pass",
            signature=failure.signature if failure is not None else None,
            rule=case.spec_ref,
            operator=case.operator,
        )
        record_id = new_record_id()
        reproducer = None
        tally = run.tally
        if verdict.verdict == "xfail":
            tally.xfails += 1
            self.stats.xfails += 1
        elif failure is not None:
            tally.failures += 1
            self.stats.failures += 1
            signature = failure.signature
            tally.signatures[signature] = tally.signatures.get(signature, 0) + 1
            self.stats.signatures[signature] = self.stats.signatures.get(signature, 0) + 1
            path = write_case(
                self.out / "reproducers",
                result,
                target=run.target,
                seed=str(self.config.seed),
                protocol=self.config.protocol,
                frame_max=run.runner.frame_max if run.runner else 0,
                record_id=record_id,
            )
            reproducer = str(path)
            tally.reproducers.setdefault(signature, reproducer)
            self._first.setdefault(signature, (case, path, run))
        event = CaseJudged(
            kind="fuzz",
            target=run.view(),
            spec_ref=case.spec_ref,
            expected=expected_of(case),
            observed=result.outcome.as_record(),
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
            deviation=verdict.reason if verdict.verdict == "xfail" else None,
        )
        self.emit(event)
        if reproducer is not None and failure is not None:
            self.emit(FailureFound(run.label, failure.signature, repr(case), reproducer))
        return event

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
        for signature, (case, path, run) in list(self._first.items()):
            if signature.startswith("liveness:") or run.runner is None or not case.blob:
                continue  # a broker that went down cannot be asked again and again
            smallest = shrink(self.cases(), run.runner, case, signature, self.config.shrink_budget)
            if smallest is not None and smallest.case.blob != case.blob:
                path = write_case(
                    path.parent,
                    smallest,
                    target=run.target,
                    seed=str(self.config.seed),
                    protocol=self.config.protocol,
                    frame_max=run.runner.frame_max,
                    record_id=path.stem.removeprefix("repro-"),
                )
                self.emit(FailureShrunk(run.label, signature, repr(smallest.case), str(path)))

    def finish(self) -> None:
        """Close the connections, delete what the campaign created, say how it went."""
        for run in self.targets:
            if run.runner is not None:
                run.runner.close()
                run.runner.cleanup()
                run.runner = None
        self.emit(RunFinished(self.run_id, "fuzz", self.summaries()))

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
            )
            for run in self.targets
        )


def expected_of(case: Case) -> dict[str, Any]:
    """The record contract's ``expected``: the reaction required, and for a close the method
    at fault (0-9-1's class and method ids, where the case's first frame has them)."""
    class_id = method_id = None
    for frame in case.frames:
        method = getattr(frame, "method", None)
        if method is not None:
            class_id, method_id = method.class_index, method.index
            break
    closing = case.expected.outcome != "reply"
    code = case.expected.code
    return reaction_record(
        case.expected.outcome,
        code if isinstance(code, int) else None,
        class_id if closing else None,
        method_id if closing else None,
        condition=code if isinstance(code, str) else None,
    )
