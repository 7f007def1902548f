"""Shrinking a failing case with Hypothesis's shrinker, against the broker itself.

A campaign draws its cases in batches, which do not shrink; each case keeps the blob it was
read from. The blob is handed to Hypothesis as an example it remembers (:mod:`.seeding`), so
that it replays it first and then shrinks it, while the same signature keeps failing.
"""

from __future__ import annotations

import contextlib
import time
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case

from ..records import load_reproducer
from ..records.reproducers import write_reproducer
from .confirm import confirm
from .events import Emitter, FailureShrunk
from .replay import replay, write_case
from .runner import Result, Runner
from .seeding import shrinking
from .state import CampaignSettings, TargetRun

__all__ = ["shrink", "shrink_failures"]


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


def shrink_failures(
    first: dict[str, tuple[Case, Path, TargetRun]],
    cases: st.SearchStrategy[Case],
    config: CampaignSettings,
    emit: Emitter,
) -> None:
    """Shrink each confirmed signature's first case, in the order found, within the shrinking's
    share of the run (the run ends close to its budget; a failure not reached keeps the case as
    found). The smallest case is replayed from its reproducer as the case found was
    (:mod:`.confirm`): it replaces that case's only if it fails every time too."""
    total = config.shrink_total
    if total is None:
        total = max(10.0, (config.duration or 40.0) / 4)
    until = time.monotonic() + total
    for signature, (case, path, run) in list(first.items()):
        if signature.startswith("liveness:") or run.runner is None or not case.blob:
            continue  # a broker that went down cannot be asked again and again
        budget = min(config.shrink_budget, until - time.monotonic())
        if budget <= 0:
            break
        smallest = shrink(cases, run.runner, case, signature, budget)
        if smallest is None or smallest.case.blob == case.blob:
            continue
        record_id = path.stem.removeprefix("repro-")
        said = load_reproducer(path)
        more: dict[str, Any] = {k: said[k] for k in ("broker", "verdict") if k in said}
        written = write_case(
            path.parent, smallest, target=run.target, seed=str(config.seed),
            protocol=config.protocol, frame_max=run.runner.frame_max, record_id=record_id,
            prefix=run.runner.prefix, more=more, name=f"{path.stem}.smaller",
        )  # fmt: skip
        confirmation = confirm(
            partial(
                replay,
                load_reproducer(written),
                run.target,
                timeout=config.timeout,
                created=run.runner.created,
            ),
            max(config.confirm, 1),
            str(smallest.outcome),
            together=smallest.outcome.kind == OutcomeKind.TIMEOUT,
        )
        if confirmation.flaky:  # the case as found stands: it reproduced every time
            written.unlink()
            continue
        data = load_reproducer(written)
        data["confirmation"] = confirmation.as_record() | {"record_id": record_id}
        write_reproducer(path.parent, path.stem, data)
        written.unlink()
        emit(FailureShrunk(run.label, signature, repr(smallest.case), str(path)))
