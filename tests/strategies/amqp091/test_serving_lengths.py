"""The 0-9-1 length operators: every length the grammar puts in what the peer sends is a site,
every site is reachable in every direction that has a value there, every value lies (the
frames are ones our own decoder refuses), and the reactions are the ones the module reasons."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from amqpfuzz.spec import PROTOCOLS, OutcomeKind
from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import ContentHeader, MethodFrame, codec_for
from amqpfuzz.spec.amqp091.codec.tables import decode_table
from amqpfuzz.spec.amqp091.loader import load, load_family_file
from amqpfuzz.spec.errors import RemoteProtocolError
from amqpfuzz.strategies.amqp091.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    Point,
    Strike,
    script_builder,
)
from amqpfuzz.strategies.amqp091.serving.operators.lengths import (
    DIRECTIONS,
    SIZE,
    direction_value,
    sites,
)
from amqpfuzz.strategies.amqp091.wire import wire_frame
from amqpfuzz.strategies.operator import Operator, Special
from amqpfuzz.strategies.source import Source

SPEC = load("0-9-1-rabbit")
PREFIXES = {Point.START: "start", Point.REPLY: "reply", Point.DELIVER: "deliver"}
HEADERS = {"s": "text", "n": {"deep": {"x": b"\x00\x01", "a": ["one", {"t": "two"}]}}, "i": 7}


def _op(name: str) -> Operator:
    return next(o for o in OPERATORS if o.name == name)


def _start(spec: Spec) -> MethodFrame:
    op = _op("start-length-edge")
    return script_builder(spec, (op,), POINTS, 0.0)(bytes(SCRIPT_BLOB)).start


def _strike(spec: Spec, point: Point, frame_max: int = 4096, reply: str = "") -> Strike:
    codec = codec_for(spec)
    if point is Point.START:
        frames: tuple[object, ...] = (_start(spec),)
        frame_max = 0  # nothing agreed before connection.tune
    elif point is Point.REPLY:
        frames = (
            codec.method(reply, 1) if reply else codec.method("queue.declare-ok", 1, queue="q"),
        )
    else:
        deliver = codec.method("basic.deliver", 1, consumer_tag="c", delivery_tag=1, exchange="e")
        content = codec.content(1, b"hello", content_type="t/p", headers=HEADERS, app_id="a")
        frames = (deliver, *content)
    return Strike(spec, codec, frame_max, frames, 1, frozenset({1}), "c", "q")  # type: ignore[arg-type]


def _builds(name: str, strike: Strike, draws: int = 600) -> list[object]:
    op = _op(name)
    build = script_builder(strike.spec, (op,), POINTS, 0.0)
    rnd = random.Random(name)
    return [build(rnd.randbytes(SCRIPT_BLOB)).built(strike) for _ in range(draws)]


def _sites(strike: Strike) -> list[object]:
    return sites(strike, tuple(wire_frame(strike.codec, f) for f in strike.frames))  # type: ignore[arg-type]


def test_the_sites_are_the_grammars_lengths() -> None:
    deliver = {s.what for s in _sites(_strike(SPEC, Point.DELIVER))}  # type: ignore[attr-defined]
    # basic.deliver's shortstrs, the header's shortstr and table properties, the table's
    # longstr, bytes, nested table and array entries and the array's items, each frame's size
    assert {
        "basic.deliver/consumer-tag",
        "basic.deliver/exchange",
        "basic.deliver/routing-key",
        "basic/content-type",
        "basic/app-id",
        "basic/headers",
        "basic/headers.s",
        "basic/headers.n",
        "basic/headers.n.deep",
        "basic/headers.n.deep.x",
        "basic/headers.n.deep.a",
        "basic/headers.n.deep.a[0]",
        "basic/headers.n.deep.a[1]",
        "basic/headers.n.deep.a[1].t",
        "frame 0 size",
        "frame 1 size",
        "frame 2 size",
    } <= deliver
    assert "basic/headers.i" not in deliver  # an integer has no length
    start = {s.what for s in _sites(_strike(SPEC, Point.START))}  # type: ignore[attr-defined]
    assert {
        "connection.start/server-properties",
        "connection.start/server-properties.capabilities",
        "connection.start/server-properties.product",
        "connection.start/mechanisms",
        "connection.start/locales",
    } <= start
    assert not any("size" in w for w in start)  # no frame-max agreed before connection.tune


def test_each_site_says_where_its_length_is_and_how_much_room_follows() -> None:
    strike = _strike(SPEC, Point.DELIVER)
    frames = tuple(wire_frame(strike.codec, f) for f in strike.frames)
    for site in _sites(strike):
        wire = frames[site.frame]  # type: ignore[attr-defined]
        if site.offset == SIZE:  # type: ignore[attr-defined]
            assert site.room == 4096 - 8  # type: ignore[attr-defined]
            continue
        end = site.offset + site.width  # type: ignore[attr-defined]
        assert site.room == len(wire.payload) - end  # type: ignore[attr-defined]
        length = int.from_bytes(wire.payload[site.offset : end], "big")  # type: ignore[attr-defined]
        assert length <= site.room  # type: ignore[attr-defined]


@pytest.mark.parametrize("point", list(PREFIXES), ids=str)
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_every_site_is_hit_in_every_direction_that_has_a_value_there(
    point: Point, direction: str
) -> None:
    strike = _strike(SPEC, point)
    reachable = {
        s.what  # type: ignore[attr-defined]
        for s in _sites(strike)
        if direction_value(direction, s, Source(b"")) is not None  # type: ignore[arg-type]
    }
    assert reachable, (point, direction)
    hit = {b.spec_ref for b in _builds(f"{PREFIXES[point]}-{direction}", strike)}  # type: ignore[attr-defined]
    assert hit == reachable


RANGES = {
    "length-past-frame": lambda v, w, room: room < v < (1 << (8 * w - 1) if w > 1 else 256),
    "length-negative": lambda v, w, room: v > room and v >= 1 << (8 * w - 1) and v < 1 << (8 * w),
    "length-edge": lambda v, w, room: (
        v > room and v in ((1 << (8 * w - 1)) - 1, 1 << (8 * w - 1), (1 << (8 * w)) - 1)
    ),
    "length-absurd": lambda v, w, room: w == 4 and v > room and (1 << 28) <= v < (1 << 31),
}


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_each_directions_value_is_in_its_range_and_a_lie(direction: str) -> None:
    rnd = random.Random(direction)
    for site in _sites(_strike(SPEC, Point.DELIVER)) + _sites(_strike(SPEC, Point.START)):
        for _ in range(50):
            value = direction_value(direction, site, Source(rnd.randbytes(16)))  # type: ignore[arg-type]
            if value is None:
                continue
            assert RANGES[direction](value, site.width, site.room), (site, value)  # type: ignore[attr-defined]


def _refused(strike: Strike, built: object) -> bool:
    reader = strike.codec.reader(strike.frame_max or None)
    data = b"".join(step.render(1) for step in built.steps)  # type: ignore[attr-defined]
    try:
        frames = list(reader.feed(data))
    except RemoteProtocolError:
        return True
    # a size the reader waits on (the frame's own, past what was sent) decodes nothing more
    return len(frames) < len(built.steps)  # type: ignore[attr-defined]


@pytest.mark.parametrize("point", list(PREFIXES), ids=str)
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_every_case_is_a_frame_a_decoder_cannot_read(point: Point, direction: str) -> None:
    strike = _strike(SPEC, point)
    for built in _builds(f"{PREFIXES[point]}-{direction}", strike, 200):
        assert _refused(strike, built), built.note  # type: ignore[attr-defined]


def test_the_reactions_are_501_tolerating_502_and_silent_before_connection_open() -> None:
    for point, prefix in PREFIXES.items():
        for direction in DIRECTIONS:
            reaction = _op(f"{prefix}-{direction}").reaction(SPEC)
            if point is Point.START:  # 2.2.4
                assert reaction.outcome is OutcomeKind.SOCKET_CLOSE
                assert not reaction.accepts("connection-close", 501)
                continue
            assert reaction.outcome is OutcomeKind.CONNECTION_CLOSE
            assert [c.value for c in reaction.codes] == [501]
            assert reaction.accepts("connection-close", 502)
            assert not reaction.accepts("connection-close", 505)
            assert not reaction.accepts(OutcomeKind.REPLY, None)


def test_a_reply_with_no_length_and_no_frame_max_is_cut_short_instead() -> None:
    strike = _strike(SPEC, Point.REPLY, frame_max=0, reply="queue.bind-ok")
    assert not _sites(strike)
    for built in _builds("reply-length-negative", strike, 20):
        assert _refused(strike, built)


def test_body_size_lies_are_absurd_negative_or_at_an_edge_and_end_in_505() -> None:
    strike = _strike(SPEC, Point.DELIVER)
    sizes = set()
    for built in _builds("body-size-lies", strike, 300):
        frames = list(strike.codec.reader().feed(b"".join(s.render(1) for s in built.steps)))  # type: ignore[attr-defined]
        header = next(f for f in frames if isinstance(f, ContentHeader))
        sizes.add(header.body_size)
        assert header.body_size >= 1 << 28
        assert isinstance(frames[-2], MethodFrame)  # the method, then a body with no header
    assert any(s >= 1 << 63 for s in sizes) and any(s < 1 << 31 for s in sizes)
    assert {(1 << 31) - 1, 1 << 31, (1 << 32) - 1, (1 << 64) - 1} <= sizes
    reaction = _op("body-size-lies").reaction(SPEC)
    assert [c.value for c in reaction.codes] == [505]


def test_nested_server_properties_are_hundreds_deep_within_frame_min_size() -> None:
    strike = _strike(SPEC, Point.START)
    depths = []
    for built in _builds("nested-server-properties", strike, 30):
        (step,) = built.steps  # type: ignore[attr-defined]
        assert len(step.render(0)) <= 4096
        payload = step.payload
        depth = int(re.search(r"nested (\d+)", built.note).group(1))  # type: ignore[union-attr, attr-defined]
        depths.append(depth)
        start = strike.frames[0]
        # the table is well formed (decoded here without our decoder's depth limit's help)
        with pytest.raises(RemoteProtocolError, match="nested deeper"):
            decode_table(payload, 6, "rabbit")
        assert isinstance(start, MethodFrame)
    assert min(depths) >= 400
    # taking it or, a depth limit's refusal before connection.open, the socket closed (2.2.4)
    reaction = _op("nested-server-properties").reaction(SPEC)
    assert reaction.outcome is OutcomeKind.SOCKET_CLOSE and reaction.or_reply
    assert reaction.accepts("reply", None) and reaction.accepts("socket-close", None)


def test_tune_limit_edges_are_valid_values_the_peers_agreement_leaves() -> None:
    op = _op("tune-limit-edges")
    assert op.scope is Special.IGNORE
    assert op.reaction(SPEC).outcome is OutcomeKind.REPLY
    codec = codec_for(SPEC)
    seen: dict[str, set[int]] = {}
    for ours in ((0, 0, 0), (2047, 131072, 60)):
        tune = codec.method("connection.tune", 0, channel_max=ours[0], frame_max=ours[1],
                            heartbeat=ours[2])  # fmt: skip
        strike = Strike(SPEC, codec, 0, (tune,), 0, frozenset(), "", "")
        for built in _builds("tune-limit-edges", strike, 100):
            (sent,) = built.frames  # type: ignore[attr-defined]
            for name in ("channel-max", "frame-max", "heartbeat"):
                seen.setdefault(f"{name}@{ours[0]}", set()).add(int(sent[name]))
            if ours[0]:  # the agreement: never above the script's own, never 0 for it
                assert 0 < sent["channel-max"] <= 2047 and 0 < sent["frame-max"] <= 131072
            assert sent["frame-max"] == 0 or sent["frame-max"] >= 4096
    assert seen["frame-max@0"] == {0, (1 << 31) - 1, 1 << 31, (1 << 32) - 1}
    assert seen["channel-max@0"] == {0, 65535}
    assert seen["heartbeat@0"] == {0, 65535}


def test_a_new_method_or_field_in_the_xml_is_a_site_with_no_code_change(tmp_path: Path) -> None:
    xml = Path(PROTOCOLS["0-9-1"].paths[0]).read_text()
    field = '<field name = "amqpfuzz-note" domain = "longstr"/>'
    method = (
        '<method name = "amqpfuzz-note" index = "99" label = "a test">'
        '<chassis name = "client" implement = "MUST"/>'
        '<field name = "note" domain = "longstr"/><field name = "short" domain = "shortstr"/>'
        "</method>"
    )
    declare_ok = (
        '<method name = "declare-ok" synchronous = "1" index = "11" label = "confirms a queue'
    )
    assert declare_ok in xml
    head, tail = xml.split(declare_ok, 1)
    fields_end = tail.index("</method>")
    xml = (
        head
        + declare_ok
        + tail[:fields_end]
        + field
        + "</method>"
        + method
        + tail[fields_end + 9 :]
    )
    path = tmp_path / "amqp0-9-1.xml"
    path.write_text(xml)
    spec = load_family_file(path, "0-9-1")
    codec = codec_for(spec)
    frames = (codec.method("queue.amqpfuzz-note", 1, note=b"n", short="s"),)
    strike = Strike(spec, codec, 4096, frames, 1, frozenset({1}), "c", "q")  # type: ignore[arg-type]
    found = {s.what for s in _sites(strike)}  # type: ignore[attr-defined]
    assert {"queue.amqpfuzz-note/note", "queue.amqpfuzz-note/short"} <= found
    declared = (codec.method("queue.declare-ok", 1, queue="q", amqpfuzz_note=b"x"),)
    strike = Strike(spec, codec, 4096, declared, 1, frozenset({1}), "c", "q")  # type: ignore[arg-type]
    assert "queue.declare-ok/amqpfuzz-note" in {s.what for s in _sites(strike)}  # type: ignore[attr-defined]
    hit = {b.spec_ref for b in _builds("reply-length-absurd", strike, 200)}  # type: ignore[attr-defined]
    assert "queue.declare-ok/amqpfuzz-note" in hit
