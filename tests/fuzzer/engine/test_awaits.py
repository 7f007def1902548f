"""Cases that wait for the peer within themselves, on the fake family's peer in this process:
the first segment goes with the group, the next once what the peer sent meets its await (made
from what came), on shared lanes and on connections of their own alike; an await never met is
the case's timeout and holds up no other case."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.runner import Result, Runner
from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case, Placement, Reaction
from tests.helpers.fake import (
    CODES,
    PROTOCOL,
    Awaiting,
    FakeBroker,
    Peer,
    Spec,
    Step,
    Using,
    registered,
)

_NOT_FOUND = CODES.code(Spec(), "not-found")


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    with registered(monkeypatch) as peer:
        yield peer


def waiting(credit: int, then: str | None = None, expected: Reaction | None = None) -> Case:
    """Asks for ``credit``, awaits it, uses all of it (then ``then``)."""
    steps = (Step(f"ask {credit}"), Awaiting("credit"), Using(), *([Step(then)] if then else []))
    return Case(steps, expected or Reaction.reply(), "fake.ask", None)


def run(peer: Peer, cases: list[Case], timeout: float = 2.0, lanes: int = 2) -> list[Result]:
    target = parse_target(peer.url)
    runner = Runner(
        target,
        protocol=PROTOCOL,
        timeout=timeout,
        broker=FakeBroker(peer),
        lanes=lanes,  # type: ignore[arg-type]
    )
    runner.start()
    rounds: list[list[int]] = []
    try:
        results = runner.run(cases, after_round=rounds.append)
    finally:
        runner.close()
    assert sorted(i for done in rounds for i in done) == list(range(len(cases)))
    return results


def test_the_rest_of_a_case_goes_once_the_peer_answered_and_reads_its_answer(peer: Peer) -> None:
    """Each case uses exactly the credit it was granted, which it could not know when its
    first segment went: the peer closes a channel that uses more (406), and grants it only
    after a moment."""
    cases = [waiting(n) for n in (1, 2, 3, 5, 8)] * 4
    results = run(peer, cases)
    assert [r.verdict for r in results] == ["pass"] * len(cases)
    assert {r.outcome.kind for r in results} == {OutcomeKind.REPLY}
    for case, result in zip(cases, results, strict=True):
        asked = case.steps[0].label.split()[1]  # type: ignore[attr-defined]
        assert f"use {asked}".encode() in result.data
    assert peer.seen.count("use") == len(cases) and peer.seen.count("probe") >= len(cases)


def test_an_await_never_met_is_a_timeout_of_its_case_alone(peer: Peer) -> None:
    """A peer that never grants the credit: the case's await times out (a hang, pinned on it);
    the cases beside it, on the same lane, pass, and the lane's connection is kept."""
    cases = [waiting(2), waiting(0), waiting(3), Case((Step("ok"),), Reaction.reply(), "fake.ok")]
    results = run(peer, cases, timeout=0.5, lanes=1)
    assert [r.verdict for r in results] == ["pass", "fail", "pass", "pass"]
    assert results[1].outcome.kind == OutcomeKind.TIMEOUT
    assert results[1].failure is not None and results[1].failure.oracle == "hang"
    assert "await credit" in results[1].outcome.text


def test_an_await_the_peer_ends_sends_nothing_more(peer: Peer) -> None:
    """A channel the peer closed before the await was met: the rest never goes, and the case is
    judged by the close."""
    soft = Case(
        (Step("soft 404"), Awaiting("credit"), Using()),
        Reaction.error([_NOT_FOUND]),
        "fake.soft",
        "soft-error",
        level="frame",
    )
    results = run(peer, [soft, waiting(2)])
    assert [r.verdict for r in results] == ["pass", "pass"]
    assert results[0].outcome.kind == OutcomeKind.CHANNEL_CLOSE
    assert b"use" not in results[0].data


def test_a_case_on_a_connection_of_its_own_waits_too(peer: Peer) -> None:
    """A case that ends its connection after its segments: it runs alone, waits for its
    credit, uses it, then brings the close it must."""
    hard = waiting(4, "hard 501", Reaction.error([CODES.code(Spec(), "frame-error")]))
    alone = Case(
        hard.steps, hard.expected, "fake.hard", "hard-error", Placement.OPEN, level="frame"
    )
    results = run(peer, [alone, waiting(1), alone])
    assert [r.verdict for r in results] == ["pass"] * 3
    assert results[0].outcome.kind == OutcomeKind.CONNECTION_CLOSE
    assert b"use 4" in results[0].data and b"use 4" in results[2].data


def test_a_waiting_case_on_its_own_connection_times_out_alone(peer: Peer) -> None:
    never = Case(
        (Step("ask 0"), Awaiting("credit"), Using(), Step("hard 501")),
        Reaction.error([CODES.code(Spec(), "frame-error")]),
        "fake.hard",
        "hard-error",
        level="frame",
    )
    results = run(peer, [never, waiting(2)], timeout=0.5)
    assert results[0].outcome.kind == OutcomeKind.TIMEOUT and results[0].failure is not None
    assert results[1].verdict == "pass"


def test_a_planned_case_renders_whole_and_cuts_at_its_awaits() -> None:
    case = waiting(3, "ok")
    segments = case.segments()
    assert case.waits and len(segments) == 2
    assert segments[0].after is None and isinstance(segments[1].after, Awaiting)
    assert b"use 1" in case.render(5)  # as planned: what the peer is expected to grant
    sent: list[bytes] = []
    segments[0].render(5, sent, [])
    assert b"ask 3" in sent[0]
    assert not Case((Step("ok"),), Reaction.reply(), "fake.ok").waits
