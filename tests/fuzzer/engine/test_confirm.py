"""Confirmation before report, on the fake family's peer in this process: a failure that happens
again every time it is replayed from its reproducer is a failure; one that does not is flaky,
with its rate and what the replays saw, in its records, its reproducer and the summary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.fuzzer.engine.confirm import Confirmation, Decisions, confirm
from amqpfuzz.fuzzer.engine.events import CaseJudged, RunFinished
from amqpfuzz.fuzzer.engine.replay import Replay
from amqpfuzz.fuzzer.records import load_reproducer
from amqpfuzz.spec import AmqpfuzzError
from tests.fuzzer.engine.test_campaign import campaign
from tests.helpers.fake import Peer, registered

WRONG = "reaction:-:wrong-code:channel-close/404->channel-close/406"
ONCE = "reaction:-:wrong-once:channel-close/404->channel-close/406"


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    with registered(monkeypatch) as peer:
        yield peer


def judged(events: list[Any]) -> list[CaseJudged]:
    return [e for e in events if isinstance(e, CaseJudged)]


def test_a_failure_that_happens_every_time_is_confirmed_and_one_that_does_not_is_flaky(
    peer: Peer, tmp_path: Path
) -> None:
    run, events = campaign(peer, tmp_path, ("wrong-code", "wrong-once"), 80)
    run.start()
    stats = run.run()
    wrong = [e for e in judged(events) if e.mutation == "wrong-code"]
    once = [e for e in judged(events) if e.mutation == "wrong-once"]
    assert wrong and once
    assert {e.verdict for e in wrong} == {"fail"}
    first = wrong[0].extra["confirmation"]
    assert (first["runs"], first["reproduced"], first["rate"]) == (3, 3, "3/3")
    # the peer gets it wrong the first time only: that case is flaky, the others pass
    assert [e.verdict for e in once].count("flaky") == 1
    assert {e.verdict for e in once} == {"flaky", "pass"}
    flaky = next(e for e in once if e.verdict == "flaky")
    assert flaky.extra["confirmation"]["rate"] == "0/3"
    assert flaky.extra["confirmation"]["replays"] == ["channel-close 404"] * 3
    assert flaky.failure is not None and flaky.failure["signature"] == ONCE
    # apart in the totals: flaky is not a failure
    assert stats.signatures == {WRONG: len(wrong)} and stats.flaky == 1
    (summary,) = next(e for e in events if isinstance(e, RunFinished)).targets
    assert summary.flaky_signatures == {ONCE: 1} and ONCE not in summary.signatures
    assert summary.confirmations[ONCE]["rate"] == "0/3"
    # the reproducers say so, and where they were found
    data = load_reproducer(flaky.reproducer)  # type: ignore[arg-type]
    assert data["verdict"] == "flaky" and data["confirmation"]["rate"] == "0/3"
    assert data["broker"] == {"kind": "fake", "product": "fake", "version": "1"}
    assert load_reproducer(wrong[0].reproducer)["verdict"] == "fail"  # type: ignore[arg-type]


def test_without_confirmation_a_failure_is_reported_as_found(peer: Peer, tmp_path: Path) -> None:
    run, events = campaign(peer, tmp_path, ("wrong-once",), 30, confirm=0)
    run.start()
    stats = run.run()
    assert [e.verdict for e in judged(events)].count("fail") == 1
    assert stats.signatures == {ONCE: 1} and stats.flaky == 0


def test_a_flaky_signature_becomes_a_failure_when_a_later_case_reproduces_every_time() -> None:
    decisions = Decisions(tries=3)
    flaky, sure = Confirmation(3, 1, "x"), Confirmation(3, 3, "x")
    assert decisions.wanted("s")
    assert decisions.decide("s", flaky, "r1").verdict == "flaky"
    assert decisions.wanted("s")  # tried again on a later case
    decided = decisions.decide("s", sure, "r2")
    assert (decided.verdict, decided.record_id, decided.tries) == ("fail", "r2", 2)
    assert not decisions.wanted("s")  # decided for the run
    for tries, key in enumerate(("t", "t", "t"), 1):
        decisions.decide(key, flaky, f"r{tries}")
    assert not decisions.wanted("t") and decisions.get("t").verdict == "flaky"  # type: ignore[union-attr]


def test_replays_that_cannot_reach_the_peer_count_neither_way() -> None:
    def down() -> Replay:
        raise AmqpfuzzError("cannot connect: Connection refused")

    found = confirm(down, 3, "channel-close 406")
    assert not found.flaky and found.rate == "1/1"
    assert found.seen == ("not replayed: cannot connect: Connection refused",)
    answers = iter([Replay("s", "s", "e", "o"), Replay("s", None, "e", "reply")])

    def mixed() -> Replay:
        try:
            return next(answers)
        except StopIteration:
            raise AmqpfuzzError("gone") from None

    found = confirm(mixed, 3, "o")
    assert (found.runs, found.reproduced, found.flaky) == (2, 1, True)
    assert "reproduced 1/2" in found.in_words() and "reply" in found.in_words()


def test_a_failure_found_when_the_run_s_time_is_up_is_still_replayed_in_full(
    peer: Peer, tmp_path: Path
) -> None:
    # a failure the last batch found was once reported unreplayed ("the run's budget was
    # spent"): a claim nobody had checked. Now each new signature is replayed in full whatever
    # the time (only a flaky signature's later cases are no longer tried: below).
    run, events = campaign(peer, tmp_path, ("wrong-code", "wrong-once"), 80)
    run.judging.until = lambda: 0.0  # (time.monotonic() is past it)
    run.start()
    stats = run.run()
    failed = [e for e in judged(events) if e.verdict == "fail"]
    assert failed and {e.mutation for e in failed} == {"wrong-code"}
    said = failed[0].extra["confirmation"]
    assert (said["rate"], said["replays"]) == ("3/3", ["channel-close 406"] * 3)
    flaky = [e for e in judged(events) if e.verdict == "flaky"]
    assert len(flaky) == 1 and flaky[0].extra["confirmation"]["rate"] == "0/3"
    assert stats.flaky == 1 and stats.signatures == {WRONG: len(failed)}


def test_replays_that_find_the_broker_down_are_not_made(
    peer: Peer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a URL target an earlier case brought down answers every replay with a refused
    # connection: such a replay was not made (the failure stands as seen, unreplayed), it is
    # not one that saw the broker react otherwise (a 10 s differential run called every one
    # of the Proton broker's failures flaky 0/3 that way)
    run, events = campaign(peer, tmp_path, ("wrong-code",), 40)
    prepare = run.judging.prepare

    def down_first(*args: Any) -> None:
        peer.crash()
        prepare(*args)

    monkeypatch.setattr(run.judging, "prepare", down_first)
    run.start()
    run.run()
    failed = [e for e in judged(events) if e.mutation == "wrong-code"]
    assert failed and {e.verdict for e in failed} == {"fail"}
    replays = failed[0].extra["confirmation"]["replays"]
    assert len(replays) == 1 and "accepts no connection" in replays[0], replays


def test_a_flaky_signature_is_tried_again_only_while_the_time_lasts() -> None:
    decisions = Decisions(tries=3)
    decisions.decide("s", Confirmation(3, 1, "x"), "r1")
    assert decisions.wanted("s") and not decisions.wanted("s", again=False)
    assert decisions.wanted("new", again=False)  # a new signature: whatever the time


def test_a_hang_s_replays_go_one_after_another_when_its_case_names_what_it_creates(
    peer: Peer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Side by side, the replays of a case that declares a named entity meet each other's
    (GarageMQ: an exclusive queue locked to another connection, 405, or its queue locks taken
    in turn, a hang the printed replay never meets): they go one after another. A hang whose
    case names nothing is still replayed side by side (one timeout, not one per replay)."""
    from amqpfuzz.fuzzer.engine import judging
    from tests.helpers.fake import FakeDriver

    together: list[bool] = []
    real = judging.confirm

    def spy(again: Any, runs: int, found: str, **options: Any) -> Confirmation:
        together.append(options["together"])
        return real(again, runs, found, **options)

    monkeypatch.setattr(judging, "confirm", spy)
    run, _ = campaign(peer, tmp_path / "nameless", ("hang",), 4)
    run.start()
    run.run()
    assert together and all(together)
    together.clear()
    monkeypatch.setattr(FakeDriver, "created", lambda self, case, _, prefix: [("q", prefix + "q")])
    run, _ = campaign(peer, tmp_path / "named", ("hang",), 4)
    run.start()
    run.run()
    assert together and not any(together)


def test_a_hang_replayed_as_the_broker_down_is_the_same_failure_worse() -> None:
    """Artemis: one disposition spins a netty thread forever; a replay sees the case hang, or
    the probe after it find the broker unanswering, as the thread it meets decides."""
    hang = "hang:-:unknown-disposition:session-close/amqp:illegal-state->timeout"
    down = "liveness:-:unknown-disposition:session-close/amqp:illegal-state->broker-down"
    assert Replay(hang, down, "e", "o").reproduced
    assert Replay(hang, hang, "e", "o").reproduced
    assert not Replay(hang, None, "e", "o").reproduced
    assert not Replay(hang, "liveness:-:other:session-close->broker-down", "e", "o").reproduced
    assert not Replay(down, hang, "e", "o").reproduced  # (a crash is not a hang)
    # beside other replays, the broker may be down by another's doing
    assert not Replay(hang, down, "e", "o", alone=False).reproduced
    reaction = "reaction:-:unknown-disposition:session-close/amqp:illegal-state->socket-close"
    assert not Replay(hang, reaction, "e", "o").reproduced
