"""The 1.0 length operators: every size and count the type system puts in a performative is a
site, every site is reachable in every direction that has a value there, every value lies, the
reactions are the ones the module reasons, and nesting keeps the message's own sections."""

from __future__ import annotations

import random

import pytest

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp10 import load
from amqpfuzz.spec.amqp10.codec import Composite, Described, UInt, codec_for
from amqpfuzz.strategies.amqp10.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    Point,
    Strike,
    script_builder,
)
from amqpfuzz.strategies.amqp10.serving.operators.lengths import (
    DIRECTIONS,
    direction_value,
    sites,
)
from amqpfuzz.strategies.operator import Operator
from amqpfuzz.strategies.source import Source

SPEC = load("1.0")
CODEC = codec_for("1.0")
PREFIXES = {Point.ATTACH: "attach", Point.DELIVER: "deliver"}


def _op(name: str) -> Operator:
    return next(o for o in OPERATORS if o.name == name)


def _body(point: Point) -> Composite:
    if point is Point.ATTACH:
        source = CODEC.composite("source", address="q", capabilities=["a", "b"])
        return CODEC.composite("attach", name="link", handle=UInt(1), role=True, source=source,
                               properties={"k": "v"})  # fmt: skip
    return CODEC.composite("transfer", handle=UInt(0), delivery_id=UInt(3), delivery_tag=b"tag",
                           message_format=UInt(0))  # fmt: skip


def _strike(point: Point, max_frame_size: int = 4096) -> Strike:
    body = _body(point)
    payload = CODEC.message([
        CODEC.composite("properties", message_id="m-1"), Described("amqp-value", "hello")
    ])  # fmt: skip
    frames = (CODEC.frame(body, 1),)
    return Strike(SPEC, CODEC, frames, (body,), 1, max_frame_size, 255, 63, 0, 1, 3, 2,
                  frozenset({0, 1}), payload if point is Point.DELIVER else b"")  # fmt: skip


def _builds(name: str, strike: Strike, draws: int = 600) -> list[object]:
    build = script_builder(SPEC, CODEC, (_op(name),), POINTS, 0.0)
    rnd = random.Random(name)
    return [build(rnd.randbytes(SCRIPT_BLOB)).built(strike) for _ in range(draws)]


def test_the_sites_are_the_type_systems_sizes_and_counts() -> None:
    found = {s.what for s in sites(CODEC.types, CODEC.frame(_body(Point.ATTACH), 1), 4096)}
    assert {"SIZE", "DOFF", "performative list size", "performative list count"} <= found
    # the link name (a string), the source (a described list), its capabilities (an array of
    # symbols, and each symbol), the properties (a map, its keys and values)
    assert any(w.startswith("performative[0] string") for w in found)
    assert any("array count" in w for w in found)
    assert any("symbol size" in w and "][" in w for w in found)  # an array's element
    assert any("map count" in w for w in found)


@pytest.mark.parametrize("point", list(PREFIXES), ids=str)
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_every_site_is_hit_in_every_direction_that_has_a_value_there(
    point: Point, direction: str
) -> None:
    strike = _strike(point)
    frame = (
        CODEC.transfer_frames(1, _body(point), strike.payload, 4096)[0]
        if point is Point.DELIVER
        else strike.frames[0]
    )
    reachable = {
        s.what for s in sites(CODEC.types, frame, 4096)
        if direction_value(direction, s, Source(b"")) is not None
    }  # fmt: skip
    hit = {b.spec_ref.split(" ", 1)[1] for b in _builds(f"{PREFIXES[point]}-{direction}", strike)}  # type: ignore[attr-defined]
    assert reachable and hit == reachable


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_every_value_lies_and_is_in_its_range(direction: str) -> None:
    rnd = random.Random(direction)
    for site in sites(CODEC.types, CODEC.frame(_body(Point.ATTACH), 1), 4096):
        for _ in range(30):
            value = direction_value(direction, site, Source(rnd.randbytes(16)))
            if value is None:
                continue
            assert value > site.room, (site, value)
            bits = 8 * site.width
            if direction == "length-negative":
                assert 1 << (bits - 1) <= value < 1 << bits
            elif direction == "length-edge":
                assert value in ((1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 1)
            elif direction == "length-absurd":
                assert site.width == 4 and 1 << 28 <= value < 1 << 31
            else:
                assert value < (1 << (bits - 1) if bits > 8 else 256)


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_every_case_is_refused_by_a_decoder_that_knows_the_clients_limit(direction: str) -> None:
    strike = _strike(Point.ATTACH)
    for built in _builds(f"attach-{direction}", strike, 200):
        data = b"".join(step.render(1) for step in built.steps)  # type: ignore[attr-defined]
        size = int.from_bytes(data[:4], "big")
        if size > 4096 or data[4] * 4 > len(data):
            continue  # oversized or its DOFF past the end: framing-error without decoding
        with pytest.raises(Exception):  # noqa: B017 (any of the decoder's errors)
            CODEC.decode_frame(data)


def test_the_reactions_are_decode_error_or_framing_error_on_the_connection() -> None:
    for prefix in PREFIXES.values():
        for direction in DIRECTIONS:
            reaction = _op(f"{prefix}-{direction}").reaction(SPEC)
            assert reaction.outcome is OutcomeKind.CONNECTION_CLOSE
            assert [c.value for c in reaction.codes] == [
                "amqp:decode-error",
                "amqp:connection:framing-error",
            ]
            assert not reaction.or_reply


def test_nested_annotations_are_thousands_deep_and_keep_the_message() -> None:
    strike = _strike(Point.DELIVER, max_frame_size=512)
    reaction = _op("nested-annotations").reaction(SPEC)
    assert reaction.or_reply and reaction.outcome is OutcomeKind.CONNECTION_CLOSE
    for built in _builds("nested-annotations", strike, 5):
        data = b"".join(step.render(1) for step in built.steps)  # type: ignore[attr-defined]
        frames, o = [], 0
        while o < len(data):
            size = int.from_bytes(data[o : o + 4], "big")
            assert size <= 512  # split to the client's max-frame-size
            frames.append(data[o : o + size])
            o += size
        assert len(frames) > 5
        payload = b"".join(
            f[8:][len(CODEC.encoder.composite(CODEC.decode_frame(f).body)) :] for f in frames
        )  # type: ignore[union-attr]
        assert payload.endswith(strike.payload[-20:])  # the body as drawn
        assert b"m-1" in payload and b"x-amqpfuzz-nested" in payload
        assert payload.index(b"x-amqpfuzz-nested") < payload.index(b"m-1")  # before properties
