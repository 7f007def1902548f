"""Conformance runs: every chosen scenario file played on every target, judged, recorded.

A :class:`ConformanceRun` asks each target what it is (product, version: that picks its
expectation profile) and which protocols it speaks, then plays the scenarios with
:class:`~.player.Player`, several at once, the ones that restart the broker last and alone.
After each scenario it checks that the broker still accepts connections; a throwaway broker
that went down is restarted, and the scenario that downed it fails. Each (scenario, target)
gets a :class:`Verdict` and a record of kind ``scenario`` whose ``spec_ref`` is the rule.

A scenario fails where its expectation did not hold; the target's profile turns that into
``xfail`` when it records the deviation for the rule, and a pass into ``xpass`` when the
recorded deviation is gone: both are shown, neither silently passes.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amqpfuzz.scenarios import Scenario

from .brokers import Broker
from .player import Played, Player, describe, observed
from .profiles import Deviation, Profile, find_profile
from .records import RecordWriter, record
from .targets import Target, TargetInfo
from .transport import Connection, ConnectionFailed, Outcome

__all__ = ["ConformanceRun", "ScenarioTarget", "Verdict", "failing", "serves"]

FAILING = ("fail", "error", "xpass")
RESTART = "restart"


def failing(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts that make a run fail: failures outside the profile, errors, and xpasses
    (a deviation the profile records that no longer happens: the profile is out of date)."""
    return [v for v in verdicts if v.verdict in FAILING]


@dataclass
class ScenarioTarget(TargetInfo):
    """A target of a conformance run and what it told us about itself."""

    broker: Broker | None = None
    profile_name: str | None = None
    profile: Profile | None = None
    unsupported: dict[str, str] = field(default_factory=dict)  # protocol -> why not
    gone: str = ""  # why a broker we cannot restart stopped serving
    generation: int = 0  # restarts after the broker stopped serving
    lock: threading.Lock = field(default_factory=threading.Lock)

    def known(self, scenario: Scenario) -> Deviation | None:
        """The profile's deviation from the rule ``scenario`` checks, if any."""
        if self.profile is None:
            return None
        return self.profile.deviation(None, rule=scenario.spec_ref, protocol=scenario.protocol)


@dataclass
class Verdict:
    """One scenario on one target: the verdict, why, and how it went."""

    scenario: Scenario
    target: ScenarioTarget
    verdict: str
    played: Played | None = None
    reason: str = ""  # why skipped, or the profile's reason for an xfail/xpass

    @property
    def cell(self) -> str:
        """The table cell: the verdict and what the broker did."""
        if self.played is None:
            return self.verdict
        return f"{self.verdict} · {describe(self.played.observed)}"

    @property
    def message(self) -> str:
        if self.played is None or self.played.status == "pass":
            return self.reason
        where = f"line {self.played.line}: " if self.played.line else ""
        return f"{where}{self.played.message}"


Listener = Callable[[Verdict], None]


class ConformanceRun:
    """Plays ``scenarios`` on ``targets``; records go to ``out``."""

    def __init__(
        self,
        targets: list[ScenarioTarget],
        scenarios: list[Scenario],
        *,
        out: Path,
        run_id: str,
        prefix: str,
        timeout: float = 5.0,
        jobs: int = 4,
        listener: Listener | None = None,
        worker: str | None = None,
    ) -> None:
        self.targets = targets
        self.scenarios = scenarios
        self.out = out
        self.run_id = run_id
        self.prefix = prefix
        self.timeout = timeout
        self.jobs = jobs
        self.listener = listener or (lambda verdict: None)
        self.worker = worker
        self._writer: RecordWriter | None = None
        self._write_lock = threading.Lock()
        self._count = 0

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> list[Verdict]:
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
        """Describe every target and open the record file."""
        for target in self.targets:
            self.describe(target)
        self._writer = RecordWriter(self.out, self.run_id, self.worker)

    def skip_reason(self, scenario: Scenario, target: ScenarioTarget) -> str | None:
        """Why ``scenario`` cannot be played on ``target`` (known once it is described)."""
        return self._skip_reason(scenario, target)

    def play_one(self, scenario: Scenario, target: ScenarioTarget) -> Verdict:
        """The verdict of ``scenario`` played alone on ``target`` (between :meth:`start` and
        :meth:`finish`), recorded like those of :meth:`run`."""
        reason = self._skip_reason(scenario, target)
        if reason is not None:
            return self._judge(scenario, target, None, reason)
        verdict = self._play(scenario, target, shared=False)
        assert verdict is not None  # played alone: never to be run again
        return verdict

    def finish(self) -> None:
        """Move the record file into place."""
        if self._writer is not None:
            self._writer.close()

    @property
    def records(self) -> Path | None:
        return self._writer.path if self._writer else None

    def describe(self, target: ScenarioTarget) -> None:
        """Product, version and profile of ``target``, and the protocols it does not speak."""
        connection = Connection.open(target.target, protocol="0-9-1", timeout=self.timeout)
        properties = connection.server_properties
        connection.close()
        target.product = _text(properties.get("product"))
        target.version = _text(properties.get("version"))
        target.profile = find_profile(target.profile_name, target.product, target.version)
        for protocol in sorted({s.protocol for s in self.scenarios if s.runnable} - {"0-9-1"}):
            try:
                Connection.open(target.target, protocol=protocol, timeout=self.timeout).close()
            except ConnectionFailed as exc:
                target.unsupported[protocol] = f"the target does not speak AMQP {protocol}: {exc}"

    def _run_target(self, target: ScenarioTarget) -> list[Verdict]:
        """Skips first, then the shared scenarios several at once, then alone: those that
        restart the broker, and those that overlapped the broker going down (run again one
        by one, so that the failure is the one scenario's that brings it down)."""
        verdicts: dict[Path, Verdict] = {}
        playable: list[Scenario] = []
        for scenario in self.scenarios:
            reason = self._skip_reason(scenario, target)
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

    def _skip_reason(self, scenario: Scenario, target: ScenarioTarget) -> str | None:
        if not scenario.runnable:
            why = " ".join((scenario.not_runnable_reason or "").split()).removeprefix(
                "Not runnable: "
            )
            return f"not runnable: {why}"
        if scenario.protocol in target.unsupported:
            return f"unsupported protocol: {target.unsupported[scenario.protocol]}"
        if RESTART in scenario.capabilities and target.broker is None:
            return (
                "needs a broker restart: only a throwaway broker amqpfuzz started (--broker) "
                "can be restarted"
            )
        return None

    def _play(self, scenario: Scenario, target: ScenarioTarget, *, shared: bool) -> Verdict | None:
        """The verdict of one scenario; None (to be run again alone) for a scenario run
        beside others while the broker went down."""
        with self._write_lock:
            self._count += 1
            prefix = f"{self.prefix}s{self._count}-"
        if target.gone:
            played = Played("error", f"not run: the broker stopped serving earlier: {target.gone}")
            return self._judge(scenario, target, played, "")
        generation = target.generation
        player = Player(
            scenario, target.target, prefix=prefix, timeout=self.timeout, broker=target.broker
        )
        played = player.play()
        down = self._down(target)
        if shared and target.broker is not None and (down or target.generation != generation):
            return None
        if down:
            played.status = "fail"
            played.message = f"the broker stopped serving during the scenario: {down[0]}"
            played.observed = observed("broker-down")
            played.notes["broker_log"] = down[1]
            if target.broker is None:
                target.gone = f"after {scenario.protocol}/{scenario.name}"
        return self._judge(scenario, target, played, "")

    def _down(self, target: ScenarioTarget) -> tuple[str, str] | None:
        """None if the broker still serves (:func:`serves`); else what happened and the
        broker's last log lines (a throwaway broker is restarted)."""
        probe = f"{self.prefix}probe-{secrets.token_hex(4)}"  # probes run side by side
        generation = target.generation
        problem = serves(target.target, self.timeout, probe)
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
    ) -> Verdict:
        verdict = played.status if played is not None else "skip"
        deviation = target.known(scenario) if played is not None else None
        if deviation is not None and verdict == "fail":
            verdict, reason = "xfail", deviation.reason
        elif deviation is not None and verdict == "pass":
            verdict = "xpass"
            reason = f"the profile {target.profile.name} records a deviation that did not happen: {deviation.reason}"  # type: ignore[union-attr]
        result = Verdict(scenario, target, verdict, played, reason)
        self._record(result)
        self.listener(result)
        return result

    def _record(self, verdict: Verdict) -> None:
        played = verdict.played
        scenario = verdict.scenario
        expected = played.expected if played else observed("skip")
        seen = played.observed if played else observed("skip")
        failure = None
        if verdict.verdict in ("fail", "xfail", "error"):
            failure = {
                "oracle": "scenario",
                "signature": f"scenario:{scenario.spec_ref}:{_sig(expected)}->{_sig(seen)}",
                "message": verdict.message,
            }
        assert self._writer is not None
        with self._write_lock:
            self._writer.write(
                record(
                    run_id=self.run_id,
                    worker=self._writer.worker,
                    seq=self._writer.next_seq(),
                    seed="-",
                    target=verdict.target.as_record(scenario.protocol),
                    kind="scenario",
                    spec_ref=scenario.spec_ref,
                    expected=_contract(expected),
                    observed=_contract(seen),
                    verdict=verdict.verdict,
                    duration_s=played.duration if played else 0.0,
                    failure=failure,
                    scenario=f"{scenario.protocol}/{scenario.name}",
                    reason=verdict.reason or None,
                    step_line=played.line if played else None,
                    notes=played.notes if played else {},
                    expected_reply=expected.get("reply"),
                    observed_reply=seen.get("reply"),
                )
            )


def _contract(reaction: dict[str, Any]) -> dict[str, Any]:
    return {k: reaction.get(k) for k in ("outcome", "reply_code", "class_id", "method_id")}


def _sig(reaction: dict[str, Any]) -> str:
    """A reaction in a signature: stable across runs (no free text, no names)."""
    parts = [str(reaction["outcome"])]
    if reaction.get("reply_code") is not None:
        parts.append(str(reaction["reply_code"]))
    elif reaction.get("reply") and reaction["outcome"] in ("reply", "deliveries"):
        parts.append(str(reaction["reply"]))
    return "/".join(parts)


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def serves(target: Target, timeout: float, probe: str) -> str | None:
    """None if the broker accepts a connection and answers on a channel (it declares the
    exclusive queue ``probe``, which goes with the connection); else what went wrong."""
    try:
        connection = Connection.open(target, timeout=timeout)
    except ConnectionFailed as exc:
        return str(exc)
    try:
        problem = connection.open_channel(1, timeout)
        if problem is None:
            declare = connection.codec.method("queue.declare", 1, queue=probe, exclusive=True)
            reply = connection.call(declare, timeout)
            problem = reply if isinstance(reply, Outcome) else None
    finally:
        connection.close(timeout=1.0)
    return None if problem is None else f"a probe after it got {problem}"
