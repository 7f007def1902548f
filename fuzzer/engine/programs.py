"""Stateful campaigns: rounds of programs from the driver's state machine until the budget ends.

A *program* is one run of the driver's Hypothesis state machine (a model of the broker's
entities and a real client acting on them; every step checks the model's invariants). A round is
one Hypothesis run of several programs with its own seed, so that the budget is looked at between
runs and never interrupts a shrink. A broken invariant is shrunk by Hypothesis to the shortest
program; its steps become a replayable reproducer and the round a failed
:class:`~.events.ProgramJudged`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, FlakyFailure

from amqpfuzz.spec import DEFAULT_PROTOCOL, OutcomeKind

from ..protocols import Broken, Outcome, ProgramRun, ProgramStep
from ..protocols.families import programs_for
from ..records import load_reproducer, reaction_of
from . import signatures
from .confirm import Confirmation, Decided, Decisions, confirm
from .events import (
    Emitter,
    FailureFound,
    ProgramJudged,
    Progress,
    RunFinished,
    RunStarted,
    TargetSummary,
    new_record_id,
)
from .replay import replay, write_program
from .targets import TargetState
from .verdicts import judge_against

__all__ = ["ProgramSettings", "run_programs"]


@dataclass
class ProgramSettings:
    duration: float | None = 60.0
    max_programs: int | None = None
    seed: int = 0
    protocol: str = DEFAULT_PROTOCOL
    timeout: float = 5.0
    round_size: int = 10  # programs per Hypothesis run
    steps: int = 200  # steps per program at most
    shrink_budget: float = 20.0  # seconds of shrinking a round's failure
    # programs may kill and restart the target's throwaway broker (only where nothing else
    # uses it meanwhile: one worker); a family whose programs check durability does then
    restarts: bool = False
    # replays of a broken invariant's program, from its reproducer, before it is reported:
    # one that does not break it again every time is ``flaky`` (0: reported as found)
    confirm: int = 3
    confirm_tries: int = 3  # failing rounds of a flaky signature replayed before it stays so


@dataclass
class _Totals:
    programs: int = 0
    failures: int = 0
    xfails: int = 0
    flaky: int = 0
    signatures: dict[str, int] = field(default_factory=dict)
    flaky_signatures: dict[str, int] = field(default_factory=dict)
    confirmations: dict[str, dict[str, Any]] = field(default_factory=dict)
    known: dict[str, int] = field(default_factory=dict)  # xfailed signatures (the profile's)
    reproducers: dict[str, str] = field(default_factory=dict)
    first_seen: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    decisions: Decisions = field(default_factory=lambda: Decisions(3))


def run_programs(
    targets: list[TargetState],
    config: ProgramSettings,
    *,
    out: Path,
    run_id: str,
    prefix: str,
    emit: Emitter,
) -> tuple[TargetSummary, ...]:
    """Rounds of programs on every target until the budget is spent; what was found."""
    for target in targets:
        target.protocol = config.protocol
        target.describe(config.timeout)
    views = tuple(target.view() for target in targets)
    emit(RunStarted(run_id, "stateful", str(config.seed), views))
    started = time.monotonic()
    deadline = started + (config.duration if config.duration is not None else 60.0)
    left = config.max_programs
    totals = {id(target): _Totals(decisions=Decisions(config.confirm_tries)) for target in targets}
    rounds = 0
    while time.monotonic() < deadline and (left is None or left > 0):
        for target in targets:
            begun = time.monotonic()
            known = {**totals[id(target)].signatures, **totals[id(target)].known}
            steps, count, broken = _round(
                target, config, f"{prefix}s-", config.seed + rounds, deadline, hung(known)
            )
            _judge(target, config, steps, count, broken, time.monotonic() - begun,
                   out, emit, totals[id(target)])  # fmt: skip
            if left is not None:
                left -= count
        rounds += 1
        everything = totals.values()
        emit(
            Progress(
                0,
                sum(t.failures for t in everything),
                sum(t.xfails for t in everything),
                sum(t.programs for t in everything),
                flaky=sum(t.flaky for t in everything),
            )
        )
    summaries = tuple(
        TargetSummary(
            label=target.label,
            programs=totals[id(target)].programs,
            failures=totals[id(target)].failures,
            xfails=totals[id(target)].xfails,
            elapsed=time.monotonic() - started,
            signatures=dict(totals[id(target)].signatures),
            reproducers=dict(totals[id(target)].reproducers),
            first_seen=dict(totals[id(target)].first_seen),
            flaky=totals[id(target)].flaky,
            flaky_signatures=dict(totals[id(target)].flaky_signatures),
            confirmations=dict(totals[id(target)].confirmations),
        )
        for target in targets
    )
    emit(RunFinished(run_id, "stateful", summaries))
    return summaries


def hung(known: dict[str, int]) -> frozenset[str]:
    """The kinds of step that hung before on this target: later rounds spend their time
    elsewhere (a program that waits out its timeout at every turn finds nothing new)."""
    return frozenset(
        signature.split(":", 2)[2]
        for signature in known
        if signature.startswith(signatures.program(Broken.HUNG, ""))
    )


class RoundOver(BaseException):
    """The run's budget is spent while a round's programs all hold: the round ends early."""


class ShrinkOver(BaseException):
    """The round's shrinking budget is spent: leaves Hypothesis at once (it is not an
    Exception to shrink); the smallest failing program so far stands."""


@dataclass
class _Round:
    """The programs of one round as Hypothesis makes them, and the smallest that failed."""

    budget: float
    deadline: float = float("inf")  # the run's: a round without a failure ends there
    programs: list[ProgramRun] = field(default_factory=list)
    smallest: ProgramRun | None = None
    stop_at: float | None = None  # the first failure starts the shrinking's clock
    over: bool = False  # the round was ended by the run's budget

    def add(self, program: ProgramRun) -> None:
        self.settle()
        if self.stop_at is not None and time.monotonic() > self.stop_at:
            raise ShrinkOver
        if self.stop_at is None and self.programs and time.monotonic() > self.deadline:
            self.over = True
            raise RoundOver
        self.programs.append(program)

    def settle(self) -> None:
        """Take the last program's end into account (it has ended when the next begins)."""
        last = self.programs[-1] if self.programs else None
        if last is not None and last.broken is not None:
            if self.smallest is None or len(last.trace) <= len(self.smallest.trace):
                self.smallest = last
            if self.stop_at is None:
                self.stop_at = time.monotonic() + self.budget


def _round(
    target: TargetState,
    config: ProgramSettings,
    prefix: str,
    seed: int,
    deadline: float = float("inf"),
    avoid: frozenset[str] = frozenset(),
) -> tuple[list[ProgramStep], int, Broken | None]:
    """One Hypothesis run of programs: the smallest failing program's steps (Hypothesis
    replays it last; if shrinking runs out of time, the shortest failing one so far), how many
    programs ran, and the invariant broken, if any. No step named in ``avoid`` is taken."""
    done = _Round(config.shrink_budget, deadline)
    broker = target.broker
    restart = broker.recover if config.restarts and broker is not None else None
    family = programs_for(target.protocol)
    with family.machine(target.target, prefix, done.add, config.timeout, avoid, restart) as machine:
        case = machine.TestCase
        case.settings = settings(
            max_examples=config.round_size,
            stateful_step_count=config.steps,
            deadline=None,
            database=None,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,  # the run reports what it found, its own way
            print_blob=False,
        )
        test = hypothesis_seed(seed)(case)("runTest")
        broken = None
        programs = done.programs
        steps: list[ProgramStep] = []
        try:
            test.runTest()
        except Broken as exc:
            broken = exc
        except RoundOver:
            pass  # every program so far held; the budget is spent
        except ShrinkOver:
            assert done.smallest is not None and done.smallest.broken is not None
            broken, steps = done.smallest.broken, list(done.smallest.trace)
        except FlakyFailure as group:
            # the broker broke an invariant, but not every time the program ran: still a failure
            found = [e for e in group.exceptions if isinstance(e, Broken)]
            if not found:
                raise
            broken = Broken(
                found[0].invariant, found[0].step, found[0].message + " (not every time)"
            )
        except Flaky:
            # a broker whose answers change from run to run (one that hangs now and then) makes
            # the same choices lead elsewhere: the shortest failing program so far stands
            done.settle()
            if done.smallest is None or done.smallest.broken is None:
                if done.over:  # Hypothesis took the round's end for a test that changed
                    return [], len(programs), None
                raise
            first = done.smallest.broken
            broken = Broken(first.invariant, first.step, first.message + " (not every time)")
            steps = list(done.smallest.trace)
        finally:
            for program in programs:
                program.close()
    if broken is not None and not steps and programs:
        steps = list(programs[-1].trace)
    return steps, len(programs), broken


def _judge(
    target: TargetState,
    config: ProgramSettings,
    steps: list[ProgramStep],
    count: int,
    broken: Broken | None,
    elapsed: float,
    out: Path,
    emit: Emitter,
    totals: _Totals,
) -> None:
    totals.programs += count
    record_id = new_record_id()
    failure = reproducer = None
    signature = None
    if broken is not None:
        signature = signatures.program(broken.invariant, broken.step)
        failure = {"oracle": "stateful", "signature": signature, "message": broken.message}
    verdict = judge_against(target, "fail" if broken else "pass", signature=signature)
    said = verdict.verdict
    extra: dict[str, Any] = dict(verdict.known())
    if broken is not None and signature is not None and verdict.verdict == "fail":
        path, known = _reproduce(target, config, steps, broken, record_id, out, totals)
        reproducer = str(path)
        said = known.verdict
        extra["confirmation"] = known.confirmation.as_record()
        if said == "flaky":
            totals.flaky += 1
            totals.flaky_signatures[signature] = totals.flaky_signatures.get(signature, 0) + 1
            totals.confirmations[signature] = known.confirmation.as_record()
            totals.reproducers.setdefault(signature, reproducer)
        else:
            totals.failures += 1
            totals.signatures[signature] = totals.signatures.get(signature, 0) + 1
            if known.record_id == record_id:  # the program its replays confirmed
                totals.confirmations.pop(signature, None)
                totals.reproducers[signature] = reproducer
            totals.reproducers.setdefault(signature, reproducer)
        totals.first_seen.setdefault(signature, time.monotonic() - totals.started)
    elif verdict.verdict == "xfail":
        totals.xfails += 1
        if signature is not None:
            totals.known[signature] = totals.known.get(signature, 0) + 1
    emit(
        ProgramJudged(
            kind="stateful",
            target=target.view(),
            spec_ref=f"stateful/{broken.invariant}" if broken else "stateful",
            expected=reaction_of(Outcome(OutcomeKind.REPLY)),
            observed=reaction_of(Outcome(OutcomeKind.REPLY)),
            verdict=said,
            seed=str(config.seed),
            duration_s=elapsed,
            failure=failure,
            reproducer=reproducer,
            record_id=record_id,
            programs=count,
            steps=tuple(steps) if broken else (),
            extra=extra,
        )
    )
    if reproducer is not None and signature is not None:
        emit(FailureFound(target.label, signature, str(steps), reproducer, said == "flaky"))


def _reproduce(
    target: TargetState,
    config: ProgramSettings,
    steps: list[ProgramStep],
    broken: Broken,
    record_id: str,
    out: Path,
    totals: _Totals,
) -> tuple[Path, Decided]:
    """The program's reproducer, replayed from the file (as ``amqpfuzz replay`` would) before
    it is reported, where its signature's verdict is not known yet (or only flaky)."""
    signature = signatures.program(broken.invariant, broken.step)

    def write(more: dict[str, Any]) -> Path:
        kind = getattr(target.broker, "kind", "") or ""
        origin = {"kind": kind, "product": target.product, "version": target.version}
        return write_program(
            out / "reproducers", steps, broken, target=target.target, seed=str(config.seed),
            protocol=config.protocol, record_id=record_id,
            more={"broker": origin, "timeout": config.timeout, **more},
        )  # fmt: skip

    decisions = totals.decisions
    if decisions.wanted(signature):
        path = write({})
        found = f"{broken.invariant} in {broken.step}: {broken.message}"
        if config.confirm <= 0:
            confirmation = Confirmation(1, 1, found)
        else:
            data = load_reproducer(path)
            broker = target.broker
            restart = broker.recover if config.restarts and broker is not None else None
            again = partial(replay, data, target.target, timeout=config.timeout, restart=restart)
            confirmation = confirm(again, config.confirm, found)
        decisions.decide(signature, confirmation, record_id)
    known = decisions.get(signature)
    assert known is not None
    return write(known.said()), known
