"""Campaigns, triage and steering, on the fake family's peer in this process: events for every
case, reproducers for failures, a crash restarted and pinned on its operator, operators behind
known crashes drawn less; no broker is started."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.campaign import Campaign, CampaignSettings, TargetRun
from amqpfuzz.fuzzer.engine.events import (
    BrokerRestarted,
    CaseJudged,
    Emitter,
    FailureShrunk,
    RunFinished,
    RunStarted,
)
from amqpfuzz.fuzzer.records import load_reproducer
from amqpfuzz.strategies import case_builder
from tests.helpers.fake import PROTOCOL, FakeBroker, Peer, registered


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    with registered(monkeypatch) as peer:
        yield peer


def campaign(
    peer: Peer, out: Path, operators: tuple[str, ...], cases: int, **settings: Any
) -> tuple[Campaign, list[Any]]:
    events: list[Any] = []
    emitter = Emitter()
    emitter.add(events.append)
    config = CampaignSettings(
        **{
            "duration": 60.0,
            "max_examples": cases,
            "protocol": PROTOCOL,
            "operators": operators,
            "timeout": 1.0,
            "shrink": False,
            "batch": 40,
            **settings,
        }
    )
    target = TargetRun(parse_target(peer.url), broker=FakeBroker(peer))  # type: ignore[arg-type]
    return Campaign([target], config, out=out, run_id="r1", prefix="p-", emit=emitter), events


def test_a_campaign_judges_every_case_and_keeps_a_reproducer_per_failure(
    peer: Peer, tmp_path: Path
) -> None:
    run, events = campaign(peer, tmp_path, ("soft-error", "wrong-code"), 120)
    run.start()
    stats = run.run()
    judged = [e for e in events if isinstance(e, CaseJudged)]
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert len(judged) == stats.cases == 120
    failed = [e for e in judged if e.verdict == "fail"]
    # every wrong code fails with one signature, every other case passes
    assert {e.mutation for e in failed} == {"wrong-code"}
    assert {e.failure["signature"] for e in failed if e.failure} == {
        "reaction:-:wrong-code:channel-close/404->channel-close/406"
    }
    assert all(e.verdict == "pass" for e in judged if e.mutation != "wrong-code")
    assert stats.signatures == {
        "reaction:-:wrong-code:channel-close/404->channel-close/406": len(failed)
    }
    reproducer = load_reproducer(failed[0].reproducer)  # type: ignore[arg-type]
    assert reproducer["protocol"] == PROTOCOL and reproducer["mutation"] == "wrong-code"


def test_a_crash_is_restarted_pinned_on_its_operator_and_recorded_once(
    peer: Peer, tmp_path: Path
) -> None:
    run, events = campaign(peer, tmp_path, ("soft-error", "crash"), 60, valid_share=0.5)
    run.start()
    stats = run.run()
    assert stats.broker_down == ""  # restarted every time, to the end of the budget
    assert any(isinstance(e, BrokerRestarted) for e in events)
    crashes = [
        e
        for e in events
        if isinstance(e, CaseJudged) and e.failure and e.failure["oracle"] == "liveness"
    ]
    # one record per distinct crash, pinned on the operator that does it alone
    assert [e.mutation for e in crashes] == ["crash"]
    assert crashes[0].extra["count"] >= 1
    assert not peer.down


def test_steering_draws_an_operator_behind_a_known_crash_less(peer: Peer, tmp_path: Path) -> None:
    run, _ = campaign(peer, tmp_path, ("soft-error", "crash"), 10)
    build = case_builder(["soft-error", "crash"], protocol=PROTOCOL, valid_share=0.0)
    rnd = random.Random(7)
    cases = [build(rnd.randbytes(8)) for _ in range(2000)]
    assert run.drawing.steer(cases) == cases  # nothing known yet: nothing steered
    run.drawing.avoided.add("crash")
    kept = run.drawing.steer(cases)
    crashes = sum(1 for c in cases if c.operator == "crash")
    kept_crashes = sum(1 for c in kept if c.operator == "crash")
    # one in `avoid` (8) of them still runs; every other case does
    assert crashes / 16 < kept_crashes < crashes / 4
    assert [c for c in kept if c.operator != "crash"] == [c for c in cases if c.operator != "crash"]


def test_a_failure_is_shrunk_from_its_blob_and_its_reproducer_rewritten(
    peer: Peer, tmp_path: Path
) -> None:
    run, events = campaign(
        peer, tmp_path, ("soft-error", "wrong-code"), 40, shrink=True, shrink_budget=5.0
    )
    run.start()
    run.run()
    shrunk = [e for e in events if isinstance(e, FailureShrunk)]
    assert len(shrunk) == 1  # one signature, shrunk once
    reproducer = load_reproducer(shrunk[0].reproducer)
    # the simplest blob that still reads as the failing operator: zeros, but where it chose
    blob = bytes.fromhex(reproducer["blob_hex"])
    assert reproducer["mutation"] == "wrong-code" and sum(1 for b in blob if b) <= 2
