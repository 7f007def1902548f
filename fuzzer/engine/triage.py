"""Crash triage: which cases brought the broker down, and the traffic that does it again.

When a broker goes down, the cases that did not get their reaction are suspects (the runner
says which). With a broker that can be restarted, each suspect runs again alone, in order: one
that brings it down by itself keeps its failure; the others get the verdict of their own run.
If none does it alone, the crash needs cases side by side: the batch's traffic (every byte, on
every connection, in order) is sent again, then cut down by delta debugging to the cases whose
traffic still brings the broker down, within a budget. A crash that cannot be pinned (no restart
possible) keeps all the traffic in flight as its reproducer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from amqpfuzz.spec import OutcomeKind

from ..protocols import Outcome
from . import signatures
from .oracles import Failure
from .runner import Result, Runner, Sent
from .traffic import minimize

__all__ = ["Triaged", "crash_signature", "side_by_side", "triage", "unattributed", "went_down"]


def went_down(result: Result) -> bool:
    return result.failure is not None and result.failure.oracle == "liveness"


@dataclass
class Triaged:
    results: list[Result]
    pinned: list[int]  # the suspects that bring the broker down alone, each twice
    rest: list[int]  # suspects not run alone (one was pinned first, or time ran out)
    gone: bool  # the broker would not come back during triage


def triage(
    results: list[Result],
    suspects: list[int],
    runner: Callable[[], Runner],
    restart: Callable[[], bool],
    until: float = math.inf,
) -> Triaged:
    """Run suspects alone, the last sent first (a broker dies soon after the frame that kills
    it), until one brings the broker down by itself and does it again on the restarted broker
    (a crash that does not happen again is not pinned on it), or time (``until``) runs out.
    Those run alone get the verdict of their own run; the others are :attr:`Triaged.rest`.
    ``runner`` gives the current runner (a restart makes a new one); ``restart`` restarts the
    broker (False: it will not come back)."""
    triaged = list(results)
    unsent = [i for i in suspects if results[i].sent_at == math.inf]  # no connection was had
    order = sorted(
        (i for i in suspects if i not in unsent), key=lambda i: results[i].sent_at, reverse=True
    )
    for done, index in enumerate(order):
        if time.monotonic() > until:
            return Triaged(triaged, [], order[done:] + unsent, gone=False)
        case = results[index].case
        triaged[index] = solo = runner().run_alone(case)
        if not went_down(solo):
            continue
        rest = order[done + 1 :] + unsent
        if not restart():
            why = "it went down for good before they ran alone"
            return Triaged(unattributed(triaged, rest, why), [], [], gone=True)
        again = runner().run_alone(case)
        if not went_down(again):  # not every time: not this case's alone
            triaged[index] = again
            continue
        if not restart():
            why = "it went down for good before they ran alone"
            return Triaged(unattributed(triaged, rest, why), [index], [], gone=True)
        return Triaged(triaged, [index], rest, gone=False)
    return Triaged(triaged, [], unsent, gone=False)


def crash_signature(results: Sequence[Result], cases: Sequence[int]) -> str:
    """The signature of a crash that ``cases`` of ``results`` bring about together: one case's
    own liveness signature, else the operators (or methods) side by side."""
    if len(cases) == 1:
        case = results[cases[0]].case
        return signatures.fuzz("liveness", case, Outcome(OutcomeKind.BROKER_DOWN))
    names = sorted({results[i].case.operator or results[i].case.spec_ref for i in cases})
    return signatures.side_by_side(names)


def side_by_side(
    results: list[Result],
    suspects: list[int],
    traffic: Sequence[Sent],
    crashes: Callable[[list[Sent]], bool | None],
    budget: float,
) -> tuple[list[Result], bool | None]:
    """A crash no suspect does alone: the cases whose traffic still does it (minimized within
    ``budget``; all of it if it no longer does), on the first suspect's result, with that
    traffic as its reproducer; and whether that traffic, sent once more, brought the broker
    down again (None: there was none to send)."""
    kept: list[int] = sorted({s.case for s in traffic if s.case is not None})
    if not kept:
        why = "no traffic of theirs was kept to find which"
        return unattributed(results, suspects, why), None
    first = crashes(list(traffic))
    if first:
        kept = minimize(traffic, crashes, budget)
    wanted = set(kept)
    chosen = tuple(s for s in traffic if s.case is None or s.case in wanted)
    names = ", ".join(sorted({results[i].case.spec_ref for i in kept}))
    how = "brings it down" if first else "did not bring it down again when sent once more"
    failure = Failure(
        "liveness",
        crash_signature(results, kept),
        f"the broker went down with {len(suspects)} cases in flight, none of which brings it "
        f"down alone; the traffic of {len(kept)} of them ({names}) {how}",
    )
    marked = list(results)
    marked[suspects[0]] = replace(results[suspects[0]], failure=failure, traffic=chosen)
    return marked, bool(first)


def unattributed(
    results: list[Result], suspects: list[int], why: str, traffic: Sequence[Sent] = ()
) -> list[Result]:
    """Cases that were in flight when the broker went down, not run again alone: each keeps
    the one crash's failure (the campaign records it once: the first in the batch's order), that
    first one with all the traffic in flight as its reproducer."""
    if not suspects:
        return results
    suspects = sorted(suspects)  # triage's order is the order they were sent, last first
    names = ", ".join(sorted({results[i].case.spec_ref for i in suspects}))
    failure = Failure(
        "liveness",
        signatures.UNATTRIBUTED,
        f"the broker went down with {len(suspects)} cases in flight ({names}); {why}",
    )
    marked = list(results)
    for number, index in enumerate(suspects):
        marked[index] = replace(
            results[index], failure=failure, traffic=tuple(traffic) if number == 0 else ()
        )
    return marked
