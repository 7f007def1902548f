"""The server side's scripts and operators: derived from the spec, deterministic, each one
building at its point from any blob."""

from __future__ import annotations

import random

import pytest

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp091.codec import codec_for
from amqpfuzz.spec.registry import load
from amqpfuzz.strategies.amqp091.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    Point,
    Strike,
    script_builder,
)
from amqpfuzz.strategies.operator import Special

SPEC = load("0-9-1-rabbit")
CODEC = codec_for(SPEC)


def _frames(point: Point, script: object) -> tuple[object, ...]:
    if point is Point.START:
        return (script.start,)  # type: ignore[attr-defined]
    if point is Point.TUNE:
        return (script.tune,)  # type: ignore[attr-defined]
    if point is Point.DELIVER:
        deliver = CODEC.method("basic.deliver", 1, consumer_tag="c", delivery_tag=1)
        return (deliver, *CODEC.content(1, b"hello", content_type="text/plain"))
    if point is Point.REPLY:
        return (CODEC.method("queue.declare-ok", 1, queue="q"),)
    return ()


def test_the_catalogue_is_large_and_every_operator_names_codes_the_spec_defines() -> None:
    assert len(OPERATORS) >= 20
    assert set(POINTS) == {op.name for op in OPERATORS}
    for op in OPERATORS:
        assert op.applies_to(SPEC), op.name
        reaction = op.reaction(SPEC)
        if op.scope is Special.IGNORE:  # valid values the client must take (connection.tune's)
            assert reaction.outcome is OutcomeKind.REPLY, op.name
            continue
        assert reaction.outcome in (OutcomeKind.CONNECTION_CLOSE, OutcomeKind.SOCKET_CLOSE), op.name


@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.name)
def test_each_operator_builds_at_its_point_from_any_blob(op: object) -> None:
    build = script_builder(SPEC, (op,), POINTS, 0.0)  # type: ignore[arg-type]
    rnd = random.Random(op.name)  # type: ignore[attr-defined]
    for _ in range(200):
        script = build(rnd.randbytes(SCRIPT_BLOB))
        assert script.operator is op
        strike = Strike(
            SPEC, CODEC, 4096, _frames(script.point, script), 1, frozenset({1}), "c", "q"
        )  # type: ignore[arg-type]
        built = script.built(strike)
        assert built.steps, op.name  # type: ignore[attr-defined]
        for step in built.steps:
            assert step.render(1)


def test_the_same_blob_reads_as_the_same_script_and_zeros_as_a_valid_one() -> None:
    build = script_builder(SPEC, tuple(OPERATORS), POINTS, 0.2)
    blob = random.Random(7).randbytes(SCRIPT_BLOB)
    assert build(blob) == build(blob)
    zero = build(bytes(SCRIPT_BLOB))
    assert zero.operator is None and zero.expected.outcome is OutcomeKind.REPLY
    assert zero.tune["frame-max"] >= SPEC.constant("frame-min-size").value


def test_valid_scripts_log_in_with_what_the_spec_requires() -> None:
    build = script_builder(SPEC, tuple(OPERATORS), POINTS, 1.0)
    for seed in range(50):
        script = build(random.Random(seed).randbytes(SCRIPT_BLOB))
        assert b"PLAIN" in script.start["mechanisms"].split()
        assert b"en_US" in script.start["locales"].split()
        props = script.start["server-properties"]
        assert props["capabilities"]["publisher_confirms"] is True  # the extension announced
        frame_max = script.tune["frame-max"]
        assert frame_max == 0 or frame_max >= 4096
        # every delivery's body and properties are within what the codec carries
        for delivery in script.deliveries:
            CODEC.encode_all(CODEC.content(1, delivery.body, **delivery.properties))
