"""Cases that take seconds (a broker that waits before it closes a connection whose login
failed) are held back and sent together every few batches, on the fake family: no broker."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.campaign import Campaign, CampaignSettings, TargetRun
from amqpfuzz.fuzzer.engine.drawing import HELD, HOLD, SLOW, SLOW_PACE, Drawing
from amqpfuzz.fuzzer.engine.events import Emitter
from tests.helpers.fake import PROTOCOL, FakeBroker, Peer, registered


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    with registered(monkeypatch) as peer:
        yield peer


def test_slow_cases_are_held_and_sent_together(peer: Peer, tmp_path: Path) -> None:
    config = CampaignSettings(
        duration=600.0, protocol=PROTOCOL, operators=("soft-error", "hard-error"),
        valid_share=0.0, timeout=1.0, shrink=False, batch=40,
    )  # fmt: skip
    target = TargetRun(parse_target(peer.url), broker=FakeBroker(peer))  # type: ignore[arg-type]
    run = Campaign([target], config, out=tmp_path, run_id="r", prefix="p-", emit=Emitter())
    run.start()
    try:
        run.drawing.slow["hard-error"] = 2 * SLOW  # its cases took seconds on their own connections
        rnd = random.Random(1)
        batches = [run.drawing.draw(rnd, deadline=math.inf) for _ in range(2 * HOLD)]
    finally:
        run.finish()
    slow = [sum(1 for c in b if c.operator == "hard-error") for b in batches]
    # none in the batches between, all held ones (no more than HELD) in every HOLD-th batch
    assert [i for i, n in enumerate(slow) if n] == [HOLD - 1, 2 * HOLD - 1]
    assert 0 < slow[HOLD - 1] <= HELD
    assert all(any(c.operator == "soft-error" for c in b) for b in batches)


@pytest.mark.parametrize(("duration", "first"), [(10.0, 100), (1.0, 16), (60.0, 400), (None, 400)])
def test_the_first_batch_is_what_the_budget_runs_at_a_slow_pace(
    duration: float | None, first: int
) -> None:
    """Before a campaign knows its targets' pace, a short budget does not draw a full batch: a
    10 s run's first batch of 400 cases that hang took 45 s on the Proton broker."""
    drawing = Drawing(CampaignSettings(duration=duration, protocol=PROTOCOL, batch=400))
    assert drawing.paced == first == max(16, min(400, int((duration or 1e9) * SLOW_PACE)))
    drawing.paced_at(40, 1.0)  # then the pace measured decides
    assert drawing.paced == 80
