"""The 1.0 server side's scripts and operators: derived from the model, deterministic, each
operator citing what it breaks, carrying a condition and scope, and building at its point from
any blob (or saying it cannot)."""

from __future__ import annotations

import random

import pytest

from amqpfuzz.spec import OutcomeKind
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
from amqpfuzz.strategies.operator import Operator, Special

SPEC = load("1.0")
CODEC = codec_for("1.0")
SCOPES = {
    "connection": OutcomeKind.CONNECTION_CLOSE,
    "session": OutcomeKind.SESSION_CLOSE,
    "link": OutcomeKind.LINK_CLOSE,
}


def _bodies(point: Point) -> tuple[Composite | None, ...]:
    if point is Point.OPEN:
        return (CODEC.composite("open", container_id="amqpfuzz", max_frame_size=UInt(4096)),)
    if point is Point.BEGIN:
        return (CODEC.composite("begin", remote_channel=0, next_outgoing_id=UInt(0),
                                incoming_window=UInt(9), outgoing_window=UInt(9)),)  # fmt: skip
    if point is Point.ATTACH:
        return (CODEC.composite("attach", name="l", handle=UInt(1), role=False),)
    if point is Point.DELIVER:
        return (CODEC.composite("transfer", handle=UInt(0), delivery_id=UInt(3),
                                delivery_tag=b"t", message_format=UInt(0)),)  # fmt: skip
    if point is Point.SASL:
        return (CODEC.composite("sasl-outcome", code=0),)
    return ()


def _strike(point: Point, channel_max: int = 255, handle_max: int = 63) -> Strike:
    bodies = _bodies(point)
    frames = tuple(CODEC.frame(b, 1) for b in bodies if b is not None)
    payload = CODEC.message([CODEC.composite("properties", message_id="m")])
    return Strike(SPEC, CODEC, frames, bodies, 1, 4096, channel_max, handle_max, 0, 1, 3, 2,
                  frozenset({0, 1}), payload)  # fmt: skip


def test_the_catalogue_cites_what_it_breaks_and_the_reaction_required() -> None:
    assert len(OPERATORS) >= 20
    assert set(POINTS) == {op.name for op in OPERATORS}
    assert set(POINTS.values()) >= {Point.SASL, Point.OPEN, Point.ATTACH, Point.DELIVER}
    for op in OPERATORS:
        assert op.applies_to(SPEC), op.name
        assert any(part in op.description for part in ("transport 2.", "types 1.", "security 5."))
        reaction = op.reaction(SPEC)
        if op.scope is Special.SOCKET:
            assert reaction.outcome is OutcomeKind.SOCKET_CLOSE
        elif op.scope is Special.IGNORE:
            assert reaction.outcome is OutcomeKind.REPLY
        else:  # a condition of the specification, closing the scope the operator names
            assert reaction.outcome is SCOPES[str(op.scope)], op.name
            assert all(str(c.value).startswith("amqp:") for c in reaction.codes), op.name


@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.name)
def test_each_operator_builds_at_its_point_from_any_blob(op: Operator) -> None:
    build = script_builder(SPEC, CODEC, (op,), POINTS, 0.0)
    rnd = random.Random(op.name)
    for _ in range(100):
        script = build(rnd.randbytes(SCRIPT_BLOB))
        assert script.operator is op and script.point is POINTS[op.name]
        assert script.expected == op.reaction(SPEC)
        strike = _strike(script.point)
        built = script.built(strike)
        assert built.steps and built.note, op.name
        sent = b"".join(step.render(1) for step in built.steps)
        assert sent not in strike.frames, f"{op.name} sent a valid frame"


def test_an_operator_with_nothing_to_break_says_so() -> None:
    (over,) = [op for op in OPERATORS if op.name == "channel-over-max"]
    build = script_builder(SPEC, CODEC, (over,), POINTS, 0.0)
    script = build(bytes(SCRIPT_BLOB))
    with pytest.raises(NotApplicable, match="channel-max"):
        script.built(_strike(Point.BEGIN, channel_max=0xFFFF))


def test_scripts_are_read_from_their_blob_and_their_messages_encode() -> None:
    build = script_builder(SPEC, CODEC, tuple(OPERATORS), POINTS, 0.5)
    rnd = random.Random(7)
    labels = set()
    for _ in range(300):
        blob = rnd.randbytes(SCRIPT_BLOB)
        script, again = build(blob), build(blob)
        assert script == again  # the same blob, the same script
        labels.add(script.label)
        assert int(script.open_fields["max-frame-size"]) >= 512  # MIN-MAX-FRAME-SIZE
        for delivery in script.deliveries:
            sections = CODEC.sections(CODEC.message(delivery.sections))
            (properties,) = [s for s in sections if getattr(s, "name", "") == "properties"]
            assert properties["message-id"] == delivery.message_id
    assert "valid" in labels and len(labels) > len(OPERATORS) // 2
