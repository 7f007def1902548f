"""Conformance runs: every chosen scenario file played on every target, judged, emitted.

A :class:`ConformanceRun` asks each target what it is (product, version: that picks its
expectation profile) and which protocols it speaks, then plays the scenarios through the
protocol's driver, several at once, the ones that restart the broker last and alone. After each
scenario it checks that the broker still does work; a throwaway broker that went down is
restarted, and the scenario that downed it fails. Each (scenario, target) is a
:class:`~.events.ScenarioJudged` whose ``spec_ref`` is the rule.

A scenario fails where its expectation did not hold; the target's profile turns that into
``xfail`` when it records the deviation for the rule, and a pass into ``xpass`` when the
recorded deviation is gone: both are shown, neither silently passes.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from amqpfuzz.scenarios import Scenario
from amqpfuzz.spec import DEFAULT_PROTOCOL, OutcomeKind

from ..brokers import Broker
from ..protocols import ConnectionFailed, Outcome, Played, UnsupportedProtocol
from ..protocols.families import driver_for, player_for
from ..records import reaction_of
from . import signatures
from .events import Emitter, RunFinished, RunStarted, ScenarioJudged, TargetSummary
from .targets import TargetState
from .verdicts import FAILING, judge_against

__all__ = ["ConformanceRun", "ScenarioTarget", "failing"]

RESTART = "restart"


def failing(verdicts: Iterable[ScenarioJudged]) -> list[ScenarioJudged]:
    """The verdicts that make a run fail: failures outside the profile, errors, and xpasses
    (a deviation the profile records that no longer happens: the profile is out of date)."""
    return [v for v in verdicts if v.verdict in FAILING]


@dataclass
class ScenarioTarget(TargetState):
    """A target of a conformance run and what it told us about itself."""

    broker: Broker | None = None  # a throwaway broker of this process (restarts need it)
    unsupported: dict[str, str] = field(default_factory=dict)  # protocol -> why not
    gone: str = ""  # why a broker we cannot restart stopped serving
    generation: int = 0  # restarts after the broker stopped serving
    lock: threading.Lock = field(default_factory=threading.Lock)


class ConformanceRun:
    """Plays ``scenarios`` on ``targets``; events go to ``emit``."""

    def __init__(
        self,
        targets: list[ScenarioTarget],
        scenarios: list[Scenario],
        *,
        run_id: str,
        prefix: str,
        timeout: float = 5.0,
        jobs: int = 4,
        emit: Emitter | None = None,
        protocol: str = DEFAULT_PROTOCOL,
    ) -> None:
        self.targets = targets
        self.scenarios = scenarios
        self.run_id = run_id
        self.prefix = prefix
        self.timeout = timeout
        self.jobs = jobs
        self.emit = emit or Emitter()
        self.protocol = protocol  # what a target is asked what it is in
        self._lock = threading.Lock()
        self._count = 0
        self._verdicts: list[ScenarioJudged] = []

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> list[ScenarioJudged]:
        """Every verdict, in the order of targets then scenarios."""
        self.start()
        try:  # the targets at once: each has its own broker
            with ThreadPoolExecutor(max_workers=len(self.targets)) as pool:
                per_target = list(pool.map(self._run_target, self.targets))
            verdicts = [v for target_verdicts in per_target for v in target_verdicts]
        finally:
            self.finish()
        return verdicts

    # -- one scenario at a time (the pytest plugin's items) --------------------------------

    def start(self) -> None:
        """Describe every target."""
        for target in self.targets:
            self.describe(target)
        views = tuple(target.view() for target in self.targets)
        self.emit(RunStarted(self.run_id, "scenario", "-", views))

    def skip_reason(self, scenario: Scenario, target: ScenarioTarget) -> str | None:
        """Why ``scenario`` cannot be played on ``target`` (known once it is described)."""
        if not scenario.runnable:
            why = " ".join((scenario.not_runnable_reason or "").split()).removeprefix(
                "Not runnable: "
            )
            return f"not runnable: {why}"
        if scenario.protocol in target.unsupported and not scenario.negotiates_only:
            return f"unsupported protocol: {target.unsupported[scenario.protocol]}"
        if RESTART in scenario.capabilities and target.broker is None:
            return (
                "needs a broker restart: only a throwaway broker amqpfuzz started (--broker) "
                "can be restarted"
            )
        return None

    def play_one(self, scenario: Scenario, target: ScenarioTarget) -> ScenarioJudged:
        """The verdict of ``scenario`` played alone on ``target`` (between :meth:`start` and
        :meth:`finish`), emitted like those of :meth:`run`."""
        reason = self.skip_reason(scenario, target)
        if reason is not None:
            return self._judge(scenario, target, None, reason)
        verdict = self._play(scenario, target, shared=False)
        assert verdict is not None  # played alone: never to be run again
        return verdict

    def finish(self) -> None:
        """Say how the run went, per target."""
        summaries = []
        for target in self.targets:
            mine = [v for v in self._verdicts if v.target.url == target.target.safe_url]
            summaries.append(
                TargetSummary(
                    label=target.label,
                    cases=len(mine),
                    failures=sum(1 for v in mine if v.verdict in FAILING),
                    xfails=sum(1 for v in mine if v.verdict == "xfail"),
                )
            )
        self.emit(RunFinished(self.run_id, "scenario", tuple(summaries)))

    def describe(self, target: ScenarioTarget) -> None:
        """Product, version and profile of ``target``, and the protocols it does not speak."""
        target.protocol = self.protocol
        try:
            target.describe(self.timeout)
        except (ConnectionFailed, UnsupportedProtocol) as exc:
            # a target that does not speak the run's protocol: described in one it speaks
            # (a throwaway's first, else the default), its negotiation files still judged
            served = getattr(target.broker, "protocols", (DEFAULT_PROTOCOL,))
            fallback = served[0] if self.protocol != served[0] else DEFAULT_PROTOCOL
            if fallback == self.protocol:
                raise
            target.protocol = fallback
            try:
                target.describe(self.timeout)
            except (ConnectionFailed, UnsupportedProtocol):
                raise exc from None
            target.unsupported[self.protocol] = str(exc)
        for protocol in sorted({s.protocol for s in self.scenarios if s.runnable}):
            if protocol == self.protocol:
                continue
            try:
                why = driver_for(protocol).speaks(target.target, protocol, self.timeout)
            except UnsupportedProtocol as exc:
                why = str(exc)
            if why is not None:
                target.unsupported[protocol] = why

    def _run_target(self, target: ScenarioTarget) -> list[ScenarioJudged]:
        """Skips first, then the shared scenarios several at once, then alone: those that
        restart the broker, and those that overlapped the broker going down (run again one
        by one, so that the failure is the one scenario's that brings it down)."""
        verdicts: dict[Path, ScenarioJudged] = {}
        playable: list[Scenario] = []
        for scenario in self.scenarios:
            reason = self.skip_reason(scenario, target)
            if reason is None:
                playable.append(scenario)
            else:
                verdicts[scenario.path] = self._judge(scenario, target, None, reason)
        alone = [s for s in playable if RESTART in s.capabilities]
        shared = [s for s in playable if RESTART not in s.capabilities]
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            attempts = list(pool.map(lambda s: self._play(s, target, shared=True), shared))
        for scenario, verdict in zip(shared, attempts, strict=True):
            if verdict is None:
                alone.append(scenario)
            else:
                verdicts[scenario.path] = verdict
        for scenario in alone:
            verdict = self._play(scenario, target, shared=False)
            assert verdict is not None
            verdicts[scenario.path] = verdict
        return [verdicts[s.path] for s in self.scenarios]

    def _play(
        self, scenario: Scenario, target: ScenarioTarget, *, shared: bool
    ) -> ScenarioJudged | None:
        """The verdict of one scenario; None (to be run again alone) for a scenario run
        beside others while the broker went down."""
        with self._lock:
            self._count += 1
            prefix = f"{self.prefix}s{self._count}-"
        if target.gone:
            played = Played("error", f"not run: the broker stopped serving earlier: {target.gone}")
            return self._judge(scenario, target, played, "")
        generation = target.generation
        played = player_for(scenario.protocol).play(
            scenario, target.target, prefix=prefix, timeout=self.timeout, broker=target.broker
        )
        down = self._down(target)
        if shared and target.broker is not None and (down or target.generation != generation):
            return None
        if down:
            played.status = "fail"
            played.message = f"the broker stopped serving during the scenario: {down[0]}"
            played.observed = Outcome(OutcomeKind.BROKER_DOWN)
            played.notes["broker_log"] = down[1]
            if target.broker is None:
                target.gone = f"after {scenario.protocol}/{scenario.name}"
        return self._judge(scenario, target, played, "")

    def _down(self, target: ScenarioTarget) -> tuple[str, str] | None:
        """None if the broker still serves; else what happened and the broker's last log
        lines (a throwaway broker is restarted)."""
        probe = f"{self.prefix}probe-{secrets.token_hex(4)}"  # probes run side by side
        generation = target.generation
        problem = target.driver.serves(target.target, self.timeout, probe)
        broker = target.broker
        if problem is None or broker is None:
            return None if problem is None else (problem, "")
        with target.lock:
            if target.generation != generation:
                return None  # another scenario's check restarted it meanwhile
            tail = broker.log_tail(10)
            broker.recover()
            target.generation += 1
        return f"{problem}; the throwaway broker was restarted", tail

    def _judge(
        self, scenario: Scenario, target: ScenarioTarget, played: Played | None, reason: str
    ) -> ScenarioJudged:
        status = played.status if played is not None else "skip"
        verdict = judge_against(
            target, status, rule=scenario.spec_ref, protocol=scenario.protocol, xpass=True
        )
        skipped = Outcome(OutcomeKind.SKIP)
        expected = reaction_of(played.expected if played else skipped)
        seen = reaction_of(played.observed if played else skipped)
        event = ScenarioJudged(
            kind="scenario",
            target=target.view(scenario.protocol),
            spec_ref=scenario.spec_ref,
            expected=expected,
            observed=seen,
            verdict=verdict.verdict,
            seed="-",
            duration_s=played.duration if played else 0.0,
            scenario=scenario,
            played=played,
            reason=verdict.reason or reason,
            profile=target.profile.name if target.profile else None,
            extra=verdict.known(),
        )
        if verdict.verdict in ("fail", "xfail", "error"):
            failure = {
                "oracle": "scenario",
                "signature": signatures.scenario(scenario.spec_ref, expected, seen),
                "message": event.message,
            }
            event = replace(event, failure=failure)
        with self._lock:
            self._verdicts.append(event)
        self.emit(event)
        return event
