"""Fuzz campaigns: Hypothesis draws batches of cases, the runner sends them, records are written.

One :class:`Campaign` drives one worker process. Hypothesis generates batches of cases
(:func:`amqpfuzz.strategies.fuzz_batches`: each case built from a blob, as
:func:`~amqpfuzz.strategies.fuzz_cases` builds it; generation only: a campaign never stops at
its first failure). Each batch runs on every target; every case becomes a record; a failure writes a
reproducer; a failure a profile documents is an ``xfail``. Where several targets react
differently to the same case, a ``differential`` record names each reaction. When the budget
is spent, each new failure signature is shrunk by Hypothesis (its drawn blob is replayed and
shrunk while the same signature keeps failing) and its reproducer rewritten with the smallest
case.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes

from amqpfuzz.strategies import Case, fuzz_batches, fuzz_cases

from .brokers import BrokerError
from .control import AnyBroker
from .oracles import Failure
from .profiles import Deviation, Profile, find_profile
from .records import RecordWriter, record
from .reproducers import write_reproducer
from .runner import Result, Runner
from .targets import TargetInfo
from .transport import ConnectionFailed

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
    protocol: str = "0-9-1"
    shrink: bool = True
    shrink_budget: float = 30.0  # seconds per failure signature
    restarts: int = 10  # times a throwaway broker is restarted after going down


@dataclass
class TargetRun(TargetInfo):
    """One target of a campaign: where, its runner, and what it told us about itself."""

    broker: AnyBroker | None = None
    profile_name: str | None = None
    runner: Runner | None = None
    profile: Profile | None = None
    restarts: int = 0

    def known(self, case: Case, failure: Failure) -> Deviation | None:
        """The profile's deviation that explains ``failure`` of ``case``, if any."""
        if self.profile is None:
            return None
        return self.profile.deviation(failure.signature, case.spec_ref, case.mutation)


@dataclass
class Stats:
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


Listener = Callable[[str, dict[str, Any]], None]


class Campaign:
    def __init__(
        self,
        targets: list[TargetRun],
        config: CampaignSettings,
        *,
        out: Path,
        run_id: str,
        prefix: str,
        worker: str | None = None,
        listener: Listener | None = None,
    ) -> None:
        self.targets = targets
        self.config = config
        self.out = out
        self.run_id = run_id
        self.prefix = prefix
        self.writer = RecordWriter(out, run_id, worker)
        self.listener = listener or (lambda event, data: None)
        self.stats = Stats()
        self._deadline = math.inf if config.duration is None else time.monotonic() + config.duration
        self._first: dict[str, tuple[Case, Path, TargetRun]] = {}  # signature -> first failure

    @property
    def first_failures(self) -> dict[str, tuple[Case, Path, TargetRun]]:
        """The first failure of each new signature: its case, reproducer and target."""
        return self._first

    def restart_clock(self) -> None:
        """Count the duration from now (after connecting, or with a new duration)."""
        duration = self.config.duration
        self._deadline = math.inf if duration is None else time.monotonic() + duration

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
            properties = runner.main.server_properties
            run.product = _text(properties.get("product"))
            run.version = _text(properties.get("version"))
            run.profile = find_profile(run.profile_name, run.product, run.version)
        self.listener("started", {"targets": [t.label for t in self.targets]})

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
            "frame_max": min(run.runner.frame_max for run in self.targets if run.runner),
            "prefix": self.prefix,
        }

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

    def run_batch(self, cases: list[Case]) -> dict[str, list[Result]]:
        """Run ``cases`` on every target and record them; each target's results by label."""
        outcomes: dict[str, list[Result]] = {}
        for run in self.targets:
            assert run.runner is not None
            results = self._after_batch(run, run.runner.run(cases))
            outcomes[run.label] = results
            for result in results:
                self._record(run, result)
        if len(self.targets) > 1:
            self._compare(cases, outcomes)
        self.stats.cases += len(cases)
        self.listener(
            "progress",
            {
                "cases": self.stats.cases,
                "failures": self.stats.failures,
                "xfails": self.stats.xfails,
            },
        )
        return outcomes

    def _after_batch(self, run: TargetRun, results: list[Result]) -> list[Result]:
        """A batch that brought the broker down: restart it and find the case that did it
        (:meth:`_triage`), or, if it cannot be restarted, end the campaign."""
        suspects = [i for i, r in enumerate(results) if _went_down(r)]
        if not suspects:
            return results
        if not self._restart(run):
            return _unattributed(results, suspects, "it could not be restarted to find which")
        return self._triage(run, results, suspects)

    def _restart(self, run: TargetRun) -> bool:
        """Restart a throwaway broker that went down, within the campaign's allowance; if it
        cannot be, the campaign is over (:attr:`Stats.broker_down` says why)."""
        while run.broker is not None and run.restarts < self.config.restarts:
            run.restarts += 1
            self.listener("restart", {"target": run.label, "log": run.broker.log_tail(10)})
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
            return True
        self.stats.broker_down = f"{run.label} stopped accepting connections"
        return False

    def _triage(self, run: TargetRun, results: list[Result], suspects: list[int]) -> list[Result]:
        """Every case in flight when the broker went down failed the liveness oracle; one of
        them did it. Each runs again alone, in order, on the restarted broker: one that brings
        it down by itself keeps its failure (and the broker is restarted again); the others get
        the verdict of their own run. If none does it alone, the crash needs cases side by side:
        one failure says so, with a signature that names no case."""
        if len(suspects) == 1:
            return results
        triaged = list(results)
        guilty = False
        for done, index in enumerate(suspects):
            assert run.runner is not None
            triaged[index] = solo = run.runner.run_alone(results[index].case)
            if _went_down(solo):
                guilty = True
                if not self._restart(run):
                    rest = suspects[done + 1 :]
                    return _unattributed(
                        triaged, rest, "it went down for good before they ran alone"
                    )
        if not guilty:
            first = results[suspects[0]]
            names = ", ".join(sorted({results[i].case.spec_ref for i in suspects}))
            triaged[suspects[0]] = replace(
                first,
                failure=Failure(
                    "liveness",
                    "liveness:-:side-by-side:alive->broker-down",
                    f"the broker went down with {len(suspects)} cases in flight, none of which"
                    f" brings it down alone ({names}); this is the first of them",
                ),
            )
        return triaged

    # -- records ---------------------------------------------------------------------------

    def _record(self, run: TargetRun, result: Result) -> None:
        case, failure = result.case, result.failure
        verdict, extra = "pass", {}
        deviation = run.known(case, failure) if failure is not None else None
        if failure is not None and deviation is not None:
            verdict = "xfail"
            extra["deviation"] = deviation.reason
            self.stats.xfails += 1
        elif failure is not None:
            verdict = "fail"
            self.stats.failures += 1
            self.stats.signatures[failure.signature] = (
                self.stats.signatures.get(failure.signature, 0) + 1
            )
        seq = self.writer.next_seq()
        item = record(
            run_id=self.run_id,
            worker=self.writer.worker,
            seq=seq,
            seed=str(self.config.seed),
            target=run.as_record(self.config.protocol),
            kind="fuzz",
            spec_ref=case.spec_ref,
            mutation=case.mutation,
            expected=_expected(case),
            observed=result.outcome.as_record(),
            verdict=verdict,
            duration_s=result.duration_s,
            failure=failure.as_record() if failure is not None else None,
            case=repr(case) if failure is not None else case.spec_ref,
            **extra,
        )
        if verdict == "fail" and failure is not None:
            path = write_reproducer(
                self.out / "reproducers",
                result,
                target=run.target,
                seed=str(self.config.seed),
                protocol=self.config.protocol,
                frame_max=run.runner.frame_max if run.runner else 0,
                record_id=item["record_id"],
            )
            item["reproducer"] = str(path)
            self._first.setdefault(failure.signature, (case, path, run))
            self.listener(
                "failure",
                {
                    "signature": failure.signature,
                    "case": repr(case),
                    "target": run.label,
                    "reproducer": str(path),
                },
            )
        self.writer.write(item)

    def _compare(self, cases: list[Case], outcomes: dict[str, list[Result]]) -> None:
        labels = list(outcomes)
        for index, case in enumerate(cases):
            reactions = {label: outcomes[label][index].outcome.as_record() for label in labels}
            keys = {(r["outcome"], r["reply_code"]) for r in reactions.values()}
            if len(keys) == 1:
                continue
            self.stats.divergences += 1
            shown = " | ".join(
                f"{label}: {r['outcome']} {r['reply_code'] or ''}".strip()
                for label, r in reactions.items()
            )
            signature = "differential:{}:{}:{}".format(
                case.spec_ref if case.mutation is None else "-",
                case.mutation or "valid",
                "|".join(f"{r['outcome']}/{r['reply_code']}" for r in reactions.values()),
            )
            first = self.targets[0]
            self.writer.write(
                record(
                    run_id=self.run_id,
                    worker=self.writer.worker,
                    seq=self.writer.next_seq(),
                    seed=str(self.config.seed),
                    target=first.as_record(self.config.protocol),
                    kind="differential",
                    spec_ref=case.spec_ref,
                    mutation=case.mutation,
                    expected=_expected(case),
                    observed=reactions[first.label],
                    verdict="fail",
                    duration_s=0.0,
                    failure={"oracle": "differential", "signature": signature, "message": shown},
                    targets=[run.as_record(self.config.protocol) for run in self.targets],
                    reactions=reactions,
                    case=repr(case),
                )
            )

    # -- shrinking -------------------------------------------------------------------------

    def _shrink_all(self) -> None:
        for signature, (case, path, run) in list(self._first.items()):
            if signature.startswith("liveness:") or run.runner is None or not case.blob:
                continue  # a broker that went down cannot be asked again and again
            smallest = self.shrink(case, signature, run)
            if smallest is not None and smallest.case.blob != case.blob:
                record_id = path.stem.removeprefix("repro-")
                write_reproducer(
                    path.parent,
                    smallest,
                    target=run.target,
                    seed=str(self.config.seed),
                    protocol=self.config.protocol,
                    frame_max=run.runner.frame_max,
                    record_id=record_id,
                )
                self.listener("shrunk", {"signature": signature, "case": repr(smallest.case)})

    def shrink(self, case: Case, signature: str, run: TargetRun) -> Result | None:
        """Hypothesis's shrinker on the case's blob, kept while ``signature`` keeps failing.

        The blob is stored in an in-memory example database under the test's key, so that
        Hypothesis replays it first and then shrinks it, as it does a failure it remembers.
        """
        runner = run.runner
        assert runner is not None
        smallest: list[Result] = []
        deadline = time.monotonic() + self.config.shrink_budget
        database = InMemoryExampleDatabase()

        @settings(
            database=database,
            phases=[Phase.reuse, Phase.shrink],
            max_examples=1000,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )
        @given(self.cases())
        def still_fails(candidate: Case) -> None:
            if time.monotonic() > deadline:
                return  # out of time: the smallest so far stands
            result = runner.run_alone(candidate)
            if result.failure is not None and result.failure.signature == signature:
                smallest.append(result)
                raise AssertionError(signature)

        key = b"amqpfuzz-shrink:" + signature.encode()
        still_fails._hypothesis_internal_database_key = key  # type: ignore[attr-defined]
        database.save(key, choices_to_bytes((case.blob,)))
        with contextlib.suppress(AssertionError):  # the shrunk failure, raised once more
            still_fails()
        return smallest[-1] if smallest else None

    def finish(self) -> None:
        for run in self.targets:
            if run.runner is not None:
                run.runner.close()
                run.runner.cleanup()
                run.runner = None
        self.writer.close()


def _expected(case: Case) -> dict[str, Any]:
    class_id = method_id = None
    for frame in case.frames:
        method = getattr(frame, "method", None)
        if method is not None:
            class_id, method_id = method.class_index, method.index
            break
    return {
        "outcome": case.expected.outcome,
        "reply_code": case.expected.code,
        "class_id": class_id if case.expected.outcome != "reply" else None,
        "method_id": method_id if case.expected.outcome != "reply" else None,
    }


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _went_down(result: Result) -> bool:
    return result.failure is not None and result.failure.oracle == "liveness"


def _unattributed(results: list[Result], suspects: list[int], why: str) -> list[Result]:
    """Cases that were in flight when the broker went down, not run again alone: each keeps a
    liveness failure, under one signature (one crash), not one per case."""
    if len(suspects) < 2:
        return results
    names = ", ".join(sorted({results[i].case.spec_ref for i in suspects}))
    failure = Failure(
        "liveness",
        "liveness:-:unattributed:alive->broker-down",
        f"the broker went down with {len(suspects)} cases in flight ({names}); {why}",
    )
    marked = list(results)
    for index in suspects:
        marked[index] = replace(results[index], failure=failure)
    return marked
