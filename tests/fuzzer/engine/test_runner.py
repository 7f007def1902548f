"""The runner, on the fake family's peer in this process: lanes, probes, connections of their
own, hangs and crashes, each judged by the oracles; no broker is started."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.runner import Result, Runner
from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case, Reaction
from tests.helpers.fake import CODES, PROTOCOL, FakeBroker, Peer, Spec, Step, registered


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    with registered(monkeypatch) as peer:
        yield peer


def case(words: str, expected: Reaction, operator: str | None = "op") -> Case:
    return Case((Step(words),), expected, f"fake.{words.split()[0]}", operator, level="frame")


def reaction(name: str) -> Reaction:
    return Reaction.error([CODES.code(Spec(), name)])


def run(peer: Peer, cases: list[Case], timeout: float = 2.0, **options: object) -> list[Result]:
    target = parse_target(peer.url)
    runner = Runner(target, protocol=PROTOCOL, timeout=timeout, broker=FakeBroker(peer), **options)  # type: ignore[arg-type]
    runner.start()
    try:
        return runner.run(cases)
    finally:
        runner.close()


def test_each_case_gets_its_reaction_on_a_channel_of_its_own(peer: Peer) -> None:
    valid = case("ok", Reaction.reply(), None)
    soft = case("soft 404", reaction("not-found"))
    results = run(peer, [valid, soft] * 20)
    assert [r.verdict for r in results] == ["pass"] * 40
    kinds = {r.outcome.kind for r in results}
    assert kinds == {OutcomeKind.REPLY, OutcomeKind.CHANNEL_CLOSE}
    assert len({r.channel for r in results}) > 1  # several in flight, each its own channel


def test_the_wrong_code_is_a_reaction_failure_with_a_stable_signature(peer: Peer) -> None:
    wrong = case("soft 406", reaction("not-found"))
    results = run(peer, [wrong] * 3)
    failures = {r.failure.signature for r in results if r.failure is not None}
    assert failures == {"reaction:-:op:channel-close/404->channel-close/406"}


def test_a_case_that_ends_its_connection_runs_on_one_of_its_own(peer: Peer) -> None:
    hard = case("hard 501", reaction("frame-error"))
    valid = case("ok", Reaction.reply(), None)
    results = run(peer, [hard, valid, hard, valid])
    assert [r.verdict for r in results] == ["pass"] * 4
    assert results[0].outcome.kind == OutcomeKind.CONNECTION_CLOSE
    assert results[0].outcome.code == 501


def test_a_hang_costs_one_timeout_and_is_pinned_on_its_case(peer: Peer) -> None:
    hung = case("hang", reaction("not-found"))
    valid = case("ok", Reaction.reply(), None)
    results = run(peer, [valid, hung, valid, valid], timeout=1.0, lanes=1)
    assert results[1].failure is not None and results[1].failure.oracle == "hang"
    # the cases behind it ran again, each on a connection of its own, and passed
    assert [results[i].verdict for i in (0, 2, 3)] == ["pass"] * 3


def test_a_crash_is_a_liveness_failure_of_the_case_that_did_it(peer: Peer) -> None:
    crash = case("crash", reaction("frame-error"))
    valid = case("ok", Reaction.reply(), None)
    results = run(peer, [valid, crash], timeout=1.0)
    assert peer.down
    failed = [r for r in results if r.failure is not None]
    assert failed and all(r.failure.oracle == "liveness" for r in failed)  # type: ignore[union-attr]
    assert any(r.case is crash for r in failed)
