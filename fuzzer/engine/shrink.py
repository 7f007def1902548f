"""Shrinking a failing case with Hypothesis's shrinker, against the broker itself.

A campaign draws its cases in batches, which do not shrink; each case keeps the blob it was
read from. The blob is handed to Hypothesis as an example it remembers (:mod:`.seeding`), so
that it replays it first and then shrinks it, while the same signature keeps failing.
"""

from __future__ import annotations

import contextlib
import time

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from amqpfuzz.strategies import Case

from .runner import Result, Runner
from .seeding import shrinking

__all__ = ["shrink"]


def shrink(
    cases: st.SearchStrategy[Case], runner: Runner, case: Case, signature: str, budget: float
) -> Result | None:
    """The smallest case of ``cases`` found within ``budget`` seconds that still fails with
    ``signature`` when run alone (None if none did, or ``case`` has no blob)."""
    if not case.blob:
        return None
    smallest: list[Result] = []
    deadline = time.monotonic() + budget

    @shrinking(case.blob)
    @given(cases)
    def still_fails(candidate: Case) -> None:
        if time.monotonic() > deadline:
            return  # out of time: the smallest so far stands
        result = runner.run_alone(candidate)
        if result.failure is not None and result.failure.signature == signature:
            smallest.append(result)
            raise AssertionError(signature)

    # the shrunk failure, raised once more; or a broker that fails now and then (Hypothesis
    # finds the failure flaky): either way the smallest case that failed so far stands
    with contextlib.suppress(AssertionError, Flaky):
        still_fails()
    return smallest[-1] if smallest else None
