"""Judging a campaign's cases: each verdict, its reproducer, and a new failure confirmed first.

A case is judged by the oracles, then by the target's profile (a failure it documents is an
``xfail``). A failure outside the profile writes its reproducer; the first of each signature
(on each target) is then replayed from that file (:mod:`.confirm`) before it is reported: a
failure is one that happens again every time, a ``flaky`` one one that does not, with its rate
and what each replay saw. Later cases of a signature take its verdict; a flaky signature is
tried again on a few more of its cases, and becomes a failure as soon as one of them reproduces
every time. A crash is confirmed by its triage (:mod:`.crashes`: the case that brings the
broker down alone, twice). Where several targets react differently, the divergence is run again
on each before it is reported (a batch's new divergences side by side).

Replays are part of the run's budget, but a new signature is replayed whatever the time: a
failure is never reported unreplayed because the run's time was up (the last batch's new
signatures are confirmed past the budget's end, which costs a few seconds). Only a flaky
signature's later cases are no longer tried once the time (``until``) is up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case

from ..protocols import Outcome, Unreachable
from ..records import load_reproducer, reaction_of
from . import signatures
from .confirm import Confirmation, Decided, Decisions, confirm, unconfirmed
from .events import CaseJudged, DivergenceFound, Emitter, FailureFound, Judged, new_record_id
from .replay import Replay, replay, run_alone, write_case, write_traffic
from .runner import Result
from .state import CampaignSettings, Stats, TargetRun
from .traffic import survives
from .verdicts import diverges, judge_against, odd_one_out

__all__ = ["Judging", "expected_of", "origin_of", "steering_key"]


class Judging:
    """The verdicts of a campaign's cases; ``crashes`` holds what triage confirmed of each
    crash, ``avoided`` the steering keys behind a known crash or hang (drawn less)."""

    def __init__(
        self,
        config: CampaignSettings,
        out: Path,
        stats: Stats,
        emit: Emitter,
        avoided: set[str],
        crashes: dict[str, Confirmation],
        until: Callable[[], float] = lambda: math.inf,
        renew: Callable[[TargetRun], bool] | None = None,
    ) -> None:
        self.config, self.out, self.stats, self.emit = config, out, stats, emit
        self.until = until  # when a flaky signature is no longer tried again (the budget's end)
        self.renew = renew  # restarts a throwaway broker that is still up (``fresh_hangs``)
        self.avoided = avoided
        self.crashes = crashes
        self.first: dict[str, tuple[Case, Path, TargetRun]] = {}  # signature -> to shrink
        self.decisions = Decisions(config.confirm_tries)  # by (target, signature)
        # a failure replayed ahead of its judging (by the result's id): its record id, its
        # reproducer and how its replays went
        self._ahead: dict[int, tuple[str, Path, Confirmation]] = {}

    def replays(self, results: dict[str, list[Result]], targets: list[TargetRun]) -> bool:
        """Whether judging ``results`` replays a failure (one outside the profile whose
        signature is not decided yet, or a divergence): the campaign judges such a batch
        before it sends the next, so that the replays meet the broker as the batch left it."""
        if self.config.confirm <= 0:
            return False
        if self._replayed(results, targets):
            return True
        if len(targets) > 1:
            cases = zip(*(results[run.label] for run in targets), strict=True)
            for each in cases:
                pairs = zip(targets, each, strict=True)
                reactions = diverges({run.label: r.outcome for run, r in pairs})
                if reactions is not None:
                    key = ("", signatures.differential(each[0].case, reactions))
                    if self._wanted(key):
                        return True
        return False

    def _replayed(
        self, results: dict[str, list[Result]], targets: list[TargetRun]
    ) -> dict[tuple[str, str], tuple[TargetRun, Result]]:
        """The first case of each failure signature (per target) whose judging replays it:
        outside the profile, not a crash (a crash's replays are its triage's), its signature's
        verdict not decided yet."""
        chosen: dict[tuple[str, str], tuple[TargetRun, Result]] = {}
        for run in targets:
            for result in results[run.label]:
                failure, case = result.failure, result.case
                if failure is None or failure.oracle == "liveness":
                    continue
                key = (run.label, failure.signature)
                if key in chosen or not self._wanted(key):
                    continue
                if run.deviation(failure.signature, case.spec_ref, case.operator) is None:
                    chosen[key] = (run, result)
        return chosen

    def prepare(self, results: dict[str, list[Result]], targets: list[TargetRun]) -> None:
        """Replay the batch's new failures before they are judged, each signature's replays
        in a thread of their own (a case whose connection the broker closes only after a few
        seconds costs those seconds once per batch, not once per signature), each one's own
        replays one after the other (a hang's side by side). With ``fresh_hangs``, a hang on
        a throwaway broker is replayed on it restarted, one signature after another: a hang
        may be the broker's state (a lock an earlier case, or another signature's replay, left
        held), not the case's, and the printed command meets a fresh broker. What came is
        used by :meth:`judge`."""
        if self.config.confirm <= 0:
            return
        renew = self.renew if self.config.fresh_hangs else None
        chosen: list[tuple[TargetRun, Result]] = []
        alone: list[tuple[TargetRun, Result]] = []
        for run, result in self._replayed(results, targets).values():
            fresh = renew is not None and _hung(result) and run.broker is not None
            (alone if fresh else chosen).append((run, result))
        if chosen:
            width = min(16, len(chosen))  # (replays mostly wait on sockets)
            with ThreadPoolExecutor(width, thread_name_prefix="amqpfuzz-replay") as pool:
                done = pool.map(lambda each: self._replay(*each), chosen)
                for (_, result), ahead in zip(chosen, done, strict=True):
                    self._ahead[id(result)] = ahead
        for run, result in alone:
            if renew is not None:
                renew(run)
            self._ahead[id(result)] = self._replay(run, result, alone=True)

    def _wanted(self, key: tuple[str, str]) -> bool:
        """Whether a case of ``key`` is replayed: a new signature's always; a flaky one's
        while the run's time lasts."""
        return self.decisions.wanted(key, again=time.monotonic() <= self.until())

    def _replay(
        self, run: TargetRun, result: Result, alone: bool = False
    ) -> tuple[str, Path, Confirmation]:
        """One failure's reproducer written, and replayed from that file ``confirm`` times
        (``alone``: on its broker restarted, no other signature's replays beside it)."""
        record_id = new_record_id()
        path = self._write(run, result, record_id, {})
        data = load_reproducer(path)
        created = run.runner.created if run.runner is not None else None

        def again() -> Replay:  # (what it declares: deleted with the run's names)
            self._reachable(run)
            done = replay(data, run.target, timeout=self.config.timeout, created=created)
            return replace(done, alone=alone)

        # a hang's replays run side by side (one timeout, not one each), but not a case's that
        # names what it creates: they would meet each other's (a queue locked to another
        # connection, a broker's locks taken in turn), which the printed replay never does
        prefix = run.runner.prefix if run.runner is not None else ""
        together = _hung(result) and not any(run.driver.created(result.case, [], prefix))
        found = str(result.outcome)
        runs = self.config.confirm
        return record_id, path, confirm(again, runs, found, together=together)

    # -- one case --------------------------------------------------------------------------

    def judge(self, run: TargetRun, result: Result, crashes: set[str]) -> CaseJudged:
        """The case's verdict on ``run`` (the oracles', the profile's, the replays'), its
        reproducer if it failed, and its event. A crash (a liveness failure) is one event
        however many cases it took down, and however often it happens: the first is held,
        with its count, until the campaign ends; ``crashes`` are the ones this batch already
        counted."""
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
                self._count(run, signature, str(held[0].verdict))
            crashes.add(signature)
            event: CaseJudged = held[0]
            return event
        ahead = self._ahead.pop(id(result), None)
        record_id = ahead[0] if ahead is not None else new_record_id()
        reproducer = None
        said = verdict.verdict
        extra: dict[str, Any] = dict(verdict.known())
        if said == "xfail":
            run.tally.xfails += 1
            self.stats.xfails += 1
        elif failure is not None:
            path, known = self._reproduce(run, result, record_id, crash, ahead)
            reproducer = str(path)
            said = known.verdict
            extra = {**extra, "confirmation": known.confirmation.as_record()}
            self._count(run, signature, said)
            if said == "flaky":
                run.tally.confirmations[signature] = known.confirmation.as_record()
                run.tally.reproducers.setdefault(signature, reproducer)
            elif known.record_id == record_id:  # the case its replays confirmed: its
                # reproducer is the signature's (a flaky one's before it is not), and
                # shrinking starts from it
                run.tally.confirmations.pop(signature, None)
                run.tally.reproducers[signature] = reproducer
                self.first.setdefault(signature, (case, path, run))
            else:
                run.tally.reproducers.setdefault(signature, reproducer)
            if failure.oracle in ("liveness", "hang") and not result.traffic:
                self.avoided.add(steering_key(case))  # known: time is better spent elsewhere
        event = CaseJudged(
            kind="fuzz",
            target=run.view(),
            spec_ref=case.spec_ref,
            expected=expected_of(case),
            observed=reaction_of(result.outcome),
            verdict=said,
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
            extra=extra,
        )
        if crash:
            run.crashes[signature] = [event, 1]
            crashes.add(signature)
        else:
            self.emit(event)
        if reproducer is not None and failure is not None:
            self.emit(FailureFound(run.label, signature, repr(case), reproducer, said == "flaky"))
        return event

    def _count(self, run: TargetRun, signature: str, verdict: str) -> None:
        if verdict == "flaky":
            run.tally.flaky += 1
            self.stats.flaky += 1
            found = run.tally.flaky_signatures
        else:
            run.tally.failures += 1
            self.stats.failures += 1
            found = run.tally.signatures
            self.stats.signatures[signature] = self.stats.signatures.get(signature, 0) + 1
        found[signature] = found.get(signature, 0) + 1
        self.stats.first_seen.setdefault(signature, self.stats.elapsed)

    # -- reproducers and their replays -----------------------------------------------------

    def _reproduce(
        self,
        run: TargetRun,
        result: Result,
        record_id: str,
        crash: bool,
        ahead: tuple[str, Path, Confirmation] | None,
    ) -> tuple[Path, Decided]:
        """A failure's reproducer (the case's bytes, or a crash's traffic), with what is known
        of its signature: its replays (made ahead, :meth:`prepare`; a crash's by its triage)
        decide it where nothing is known yet, or where it was flaky and a few of its cases
        have not been tried."""
        assert result.failure is not None
        signature = result.failure.signature
        key = (run.label, signature)
        known = self.decisions.get(key)
        if self._wanted(key) and not (crash and known is not None):
            found = str(result.outcome)
            if ahead is not None:
                confirmation = ahead[2]
            elif crash:
                confirmation = self.crashes.get(signature) or Confirmation(1, 1, found)
            elif self.config.confirm <= 0:
                confirmation = Confirmation(1, 1, found)  # (asked not to replay)
            else:  # (not prepared: replayed now)
                confirmation = self._replay(run, result)[2]
            known = self.decisions.decide(key, confirmation, record_id)
        assert known is not None
        return self._write(run, result, record_id, known.said()), known

    def _write(self, run: TargetRun, result: Result, record_id: str, more: dict[str, Any]) -> Path:
        directory = self.out / "reproducers"
        seed, protocol = str(self.config.seed), self.config.protocol
        more = {"broker": origin_of(run), "timeout": self.config.timeout, **more}
        if result.traffic:
            return write_traffic(
                directory, result, target=run.target, seed=seed, protocol=protocol,
                record_id=record_id, more=more,
            )  # fmt: skip
        runner = run.runner
        return write_case(
            directory, result, target=run.target, seed=seed, protocol=protocol,
            frame_max=runner.frame_max if runner else 0, record_id=record_id,
            prefix=runner.prefix if runner else "", more=more,
        )  # fmt: skip

    # -- several targets -------------------------------------------------------------------

    def compare(
        self, cases: list[Case], outcomes: dict[str, list[Result]], targets: list[TargetRun]
    ) -> list[Judged]:
        """A divergence event for each case the targets reacted to differently; each new
        divergence run again on every target, alone, before it is reported."""
        found: list[Judged] = []
        first = targets[0]
        differing = []
        for index, case in enumerate(cases):
            reactions = diverges({label: r[index].outcome for label, r in outcomes.items()})
            if reactions is not None:
                differing.append((case, signatures.differential(case, reactions), reactions))
        self._divergences(differing, targets)
        for case, signature, reactions in differing:
            known = self.decisions.get(("", signature))
            assert known is not None
            self.stats.divergences += 1
            for run in targets:
                run.tally.divergences += 1
            shown = " | ".join(
                f"{label}: {r['outcome']} {r['reply_code'] or r['condition'] or ''}".strip()
                for label, r in reactions.items()
            )
            alone = odd_one_out(reactions)
            if alone is not None:  # the others agree: where the text is silent, look here first
                shown += f" ({alone} stands alone)"
                for run in targets:
                    run.tally.alone[signature] = alone
            event = DivergenceFound(
                kind="differential",
                target=first.view(),
                spec_ref=case.spec_ref,
                expected=expected_of(case),
                observed=reactions[first.label],
                verdict=known.verdict,
                seed=str(self.config.seed),
                mutation=case.operator,
                failure={"oracle": "differential", "signature": signature, "message": shown},
                case=repr(case),
                reactions=reactions,
                targets=tuple(run.view() for run in targets),
                extra={"confirmation": known.confirmation.as_record(), "alone": alone},
            )
            self.emit(event)
            found.append(event)
        return found

    def _divergences(
        self,
        differing: list[tuple[Case, str, dict[str, dict[str, Any]]]],
        targets: list[TargetRun],
    ) -> None:
        """Decide each new divergence signature among ``differing``: its first case run alone
        on every target, ``confirm`` times; it stands where the targets still diverge the same
        way each time. The signatures are replayed side by side, and on every target at once
        (a case one broker answers only with a timeout costs it once per batch)."""
        new: dict[str, tuple[Case, str]] = {}
        for case, signature, reactions in differing:
            if signature not in new and self._wanted(("", signature)):
                new[signature] = (case, " | ".join(_words(r) for r in reactions.values()))
        if not new:
            return
        runs = self.config.confirm
        if runs <= 0:
            for signature, (_, found) in new.items():
                self.decisions.decide(("", signature), unconfirmed(found, "asked not to"), "")
            return

        def rerun(signature: str, case: Case, found: str, pool: ThreadPoolExecutor) -> Confirmation:
            def again() -> Replay:
                for run in targets:
                    self._reachable(run)
                alone = pool.map(lambda run: self._alone(run, case), targets)
                outcomes = {run.label: o for run, o in zip(targets, alone, strict=True)}
                differs = diverges(outcomes)
                now = signatures.differential(case, differs) if differs is not None else None
                words = " | ".join(_words(reaction_of(o)) for o in outcomes.values())
                return Replay(signature, now, found, words)

            return confirm(again, runs, found)

        width = min(16, len(new))
        with (
            ThreadPoolExecutor(width, thread_name_prefix="amqpfuzz-diverge") as outer,
            ThreadPoolExecutor(width * len(targets), thread_name_prefix="amqpfuzz-alone") as inner,
        ):
            done = outer.map(
                lambda item: rerun(item[0], item[1][0], item[1][1], inner), new.items()
            )
            for signature, confirmation in zip(new, done, strict=True):
                self.decisions.decide(("", signature), confirmation, "")

    def _reachable(self, run: TargetRun) -> None:
        """Raises Unreachable where ``run``'s broker accepts no connection: a replay then is
        not made (it counts neither way), rather than one that found the broker down (a URL
        target an earlier case brought down, and that nobody restarts)."""
        if not survives(run.driver, run.target, self.config.timeout, run.broker):
            raise Unreachable(f"{run.target.safe_url}: the broker accepts no connection")

    def _alone(self, run: TargetRun, case: Case) -> Outcome:
        prefix = run.runner.prefix if run.runner else ""
        return run_alone(
            case, run.target, self.config.protocol, self.config.timeout, prefix
        ).outcome


def _words(reaction: Mapping[str, Any]) -> str:
    code = reaction.get("reply_code") or reaction.get("condition")
    return f"{reaction['outcome']}" + (f" {code}" if code else "")


def origin_of(run: TargetRun) -> dict[str, str]:
    """What a reproducer says of the broker it was found on: the throwaway kind amqpfuzz
    started (a replay with no target starts one of that kind), its product and version."""
    kind = getattr(run.broker, "kind", "") or ""
    return {"kind": kind, "product": run.product, "version": run.version}


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


def steering_key(case: Case) -> str:
    """What steering goes by: a malformed case's operator, a valid case's method."""
    return case.operator or f"valid {case.spec_ref}"


def _hung(result: Result) -> bool:
    return result.outcome.kind == OutcomeKind.TIMEOUT
