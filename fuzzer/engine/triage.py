"""Crash triage: which case in flight brought the broker down.

When a throwaway broker goes down, every case then in flight failed the liveness oracle, but
one of them did it (or several together). Each runs again alone, in order, on the restarted
broker: one that brings it down by itself keeps its failure; the others get the verdict of their
own run. If none does it alone, the crash needs cases side by side: one failure says so. A crash
that cannot be pinned (the broker will not come back) is one failure for all of them, under one
signature, not one per case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from . import signatures
from .oracles import Failure
from .runner import Result, Runner

__all__ = ["triage", "unattributed", "went_down"]


def went_down(result: Result) -> bool:
    return result.failure is not None and result.failure.oracle == "liveness"


def triage(
    results: list[Result],
    suspects: list[int],
    runner: Callable[[], Runner],
    restart: Callable[[], bool],
) -> list[Result]:
    """``results`` with the crash pinned on the suspect that does it alone. ``runner`` gives
    the current runner (a restart makes a new one); ``restart`` restarts the broker after a
    suspect brought it down again (False: it will not come back)."""
    if len(suspects) == 1:
        return results
    triaged = list(results)
    guilty = False
    for done, index in enumerate(suspects):
        triaged[index] = solo = runner().run_alone(results[index].case)
        if went_down(solo):
            guilty = True
            if not restart():
                rest = suspects[done + 1 :]
                return unattributed(triaged, rest, "it went down for good before they ran alone")
    if not guilty:
        first = results[suspects[0]]
        names = ", ".join(sorted({results[i].case.spec_ref for i in suspects}))
        triaged[suspects[0]] = replace(
            first,
            failure=Failure(
                "liveness",
                signatures.SIDE_BY_SIDE,
                f"the broker went down with {len(suspects)} cases in flight, none of which"
                f" brings it down alone ({names}); this is the first of them",
            ),
        )
    return triaged


def unattributed(results: list[Result], suspects: list[int], why: str) -> list[Result]:
    """Cases that were in flight when the broker went down, not run again alone: each keeps a
    liveness failure, under one signature (one crash), not one per case."""
    if len(suspects) < 2:
        return results
    names = ", ".join(sorted({results[i].case.spec_ref for i in suspects}))
    failure = Failure(
        "liveness",
        signatures.UNATTRIBUTED,
        f"the broker went down with {len(suspects)} cases in flight ({names}); {why}",
    )
    marked = list(results)
    for index in suspects:
        marked[index] = replace(results[index], failure=failure)
    return marked
