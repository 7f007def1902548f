"""Each 1.0 server-side operator's case is malformed as the transport and types parts say, and
requires of the client the reaction the section it cites names (the serving side's audit, after
the broker side's of issue 36): one test per expectation the audit corrected."""

from __future__ import annotations

import random

import pytest

from amqpfuzz.spec.amqp10 import load
from amqpfuzz.spec.amqp10.codec import Composite, UInt, codec_for
from amqpfuzz.strategies.amqp10.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    NotApplicable,
    Point,
    Strike,
    script_builder,
)
from amqpfuzz.strategies.operator import Operator

SPEC = load("1.0")
CODEC = codec_for("1.0")


def _op(name: str) -> Operator:
    return next(o for o in OPERATORS if o.name == name)


def _strike(
    point: Point, body: Composite, handle_max: int = 63, handles: frozenset[int] = frozenset()
) -> Strike:
    frames = (CODEC.frame(body, 1),)
    return Strike(SPEC, CODEC, frames, (body,), 1, 1 << 20, 255, handle_max, 0, 1, 3, 2,
                  handles, b"")  # fmt: skip


def _builds(name: str, strike: Strike, draws: int = 300) -> list[object]:
    build = script_builder(SPEC, CODEC, (_op(name),), POINTS, 0.0)
    rnd = random.Random(name)
    return [build(rnd.randbytes(SCRIPT_BLOB)).built(strike) for _ in range(draws)]


def test_handle_in_use_may_be_answered_by_the_close_the_text_names() -> None:
    # transport 2.7.3 attach: "An attempt to attach using a handle which is already associated
    # with a Link MUST be responded to with an immediate close carrying a Handle-in-use
    # session-error": the connection's close with it, or the end of the session whose error it is
    reaction = _op("handle-in-use").reaction(SPEC)
    symbol = "amqp:session:handle-in-use"
    assert reaction.accepts("session-close", symbol)
    assert reaction.accepts("connection-close", symbol)
    assert not reaction.accepts("connection-close", "amqp:invalid-field")
    assert not reaction.accepts("session-close", "amqp:invalid-field")


TRANSFER = CODEC.composite(
    "transfer", handle=UInt(0), delivery_id=UInt(3), delivery_tag=b"t", message_format=UInt(0)
)


@pytest.mark.parametrize("name", ["unattached-handle", "detach-unattached", "flow-unattached"])
@pytest.mark.parametrize(
    ("handle_max", "handles"),
    [(63, frozenset({0, 1})), (1, frozenset({1})), (3, frozenset({0, 2, 3})), (0, frozenset())],
)
def test_an_unattached_handle_is_unused_and_within_the_clients_handle_max(
    name: str, handle_max: int, handles: frozenset[int]
) -> None:
    # session-error unattached-handle: "a frame (other than attach) was received referencing a
    # handle which is not currently in use of an attached link"; above the client's handle-max
    # it would be 2.7.2's framing-error close instead (handle-over-max's case)
    point = POINTS[name]
    strike = _strike(point, TRANSFER, handle_max, handles)
    for built in _builds(name, strike, 100):
        handle = int(built.note.rsplit(" ", 1)[1])  # type: ignore[attr-defined]
        assert handle not in handles and handle <= handle_max, built.note  # type: ignore[attr-defined]


def test_with_every_handle_in_use_there_is_no_unattached_handle_to_name() -> None:
    strike = _strike(Point.DELIVER, TRANSFER, 2, frozenset({0, 1, 2}))
    with pytest.raises(NotApplicable, match="handle-max"):
        _builds("unattached-handle", strike, 1)


def test_doff_past_end_points_past_the_end_or_says_it_cannot() -> None:
    # transport 2.3.1: DOFF is one octet, so 1020 octets at most: in a longer frame no DOFF
    # points past the end, and a DOFF of 255 inside it is a frame with an extended header
    attach = CODEC.composite("attach", name="l", handle=UInt(1), role=False)
    for built in _builds("doff-past-end", _strike(Point.ATTACH, attach), 100):
        data = built.steps[0].render(1)  # type: ignore[attr-defined]
        assert data[4] * 4 > len(data)
    long = CODEC.composite("attach", name="l" * 1100, handle=UInt(1), role=False)
    with pytest.raises(NotApplicable, match="DOFF"):
        _builds("doff-past-end", _strike(Point.ATTACH, long), 1)
