"""Crash triage's bookkeeping, without a broker: which result of a batch carries a crash's
reproducer."""

from __future__ import annotations

from amqpfuzz.fuzzer.engine.runner import Result, Sent
from amqpfuzz.fuzzer.engine.triage import unattributed
from amqpfuzz.fuzzer.protocols import Outcome
from amqpfuzz.strategies.cases import Case, Reaction


def result(number: int) -> Result:
    case = Case(steps=(), expected=Reaction("reply"), spec_ref=f"basic.get/{number}")
    return Result(case, Outcome("broker-down"), 1, 0.0, b"", None, sent_at=float(number))


def test_an_unattributed_crash_keeps_its_traffic_on_the_first_suspect_of_the_batch() -> None:
    """Triage hands its suspects back last sent first; the campaign records a crash on the
    first of its cases in the batch's order, so that one must carry the traffic (else the
    record's reproducer is one case that was never seen to bring the broker down)."""
    traffic = (Sent(0, False, 1, b"\x01"), Sent(1, True, 3, b"\x03"))
    marked = unattributed([result(n) for n in range(5)], [3, 1], "no time left", traffic)
    assert [bool(r.traffic) for r in marked] == [False, True, False, False, False]
    assert marked[1].traffic == traffic
    assert {r.failure.signature for r in marked if r.failure} == {
        "liveness:-:unattributed:alive->broker-down"
    }
    assert [r.failure is not None for r in marked] == [False, True, False, True, False]
