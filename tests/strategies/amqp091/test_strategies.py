"""Valid generation: frames decode to what was generated, asserts hold, boundaries are reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pamqp.frame
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz import strategies as afs
from amqpfuzz.spec import PROTOCOLS, load_file, protocols_of
from amqpfuzz.spec.amqp091 import Spec, load
from amqpfuzz.spec.amqp091.asserts import violation
from amqpfuzz.spec.amqp091.codec import (
    ContentBody,
    ContentHeader,
    FieldValue,
    MethodFrame,
    codec_for,
    decode_table,
    encode_table,
)

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
FIND = settings(
    max_examples=3000, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.mark.parametrize("protocol", protocols_of("amqp091"))
@SETTINGS
@given(data=st.data())
def test_valid_frames_decode_to_what_was_generated(protocol: str, data: st.DataObject) -> None:
    frames = data.draw(afs.frame_sequences(chassis=None, protocol=protocol, frame_max=4096))
    codec = codec_for(protocol)
    wire = codec.encode_all(frames)
    decoded = codec.decode_all(wire)
    assert [_plain(f) for f in decoded] == [_plain(f) for f in frames]
    # and no value breaks its field's asserts
    for frame in frames:
        if isinstance(frame, MethodFrame):
            for fld, value in zip(frame.method.fields, frame.values, strict=True):
                assert violation(fld.asserts, value) is None, (frame, fld.name)


def _plain(frame: Any) -> Any:
    """A frame with FieldValue-wrapped table entries compared by their plain values."""
    if isinstance(frame, MethodFrame):
        return (frame.channel, frame.method, tuple(_unwrap(v) for v in frame.values))
    if isinstance(frame, ContentHeader):
        return (frame.channel, frame.class_id, frame.body_size, _unwrap(frame.properties))
    return frame


def _unwrap(value: Any) -> Any:
    if isinstance(value, FieldValue):
        inner = _unwrap(value.value)
        if value.code == "T" and isinstance(inner, int):
            import datetime as dt

            return dt.datetime.fromtimestamp(inner, dt.UTC) if inner < 253402300800 else inner
        if value.code == "s" and isinstance(inner, bytes):
            return inner.decode("utf-8", "replace")
        return inner
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


_PAMQP_NAMES = {"no_wait": "nowait", "global": "global_"}


@pytest.mark.filterwarnings("ignore:This command is deprecated:DeprecationWarning")
@SETTINGS
@given(frame=afs.method_frames(chassis=None))
def test_pamqp_reads_valid_frames_to_the_same_scalars(frame: MethodFrame) -> None:
    data = codec_for().encode(frame)
    consumed, channel, theirs = pamqp.frame.unmarshal(data)
    assert consumed == len(data) and channel == frame.channel
    assert theirs.name.lower() == frame.name.replace("-", "").lower()
    for fld, value in zip(frame.method.fields, frame.values, strict=True):
        if fld.reserved or fld.type not in ("bit", "octet", "short", "long", "shortstr"):
            continue  # pamqp turns long strings, timestamps and tables into other types
        name = _PAMQP_NAMES.get(fld.attr, fld.attr)
        if frame.name == "exchange.declare" and name == "type":
            name = "exchange_type"
        assert getattr(theirs, name) == value, (frame, fld.name)


@SETTINGS
@given(frames=afs.content(frame_max=4096, max_body=10000))
def test_content_splits_by_frame_max(frames: list[Any]) -> None:
    header, *bodies = frames
    assert isinstance(header, ContentHeader)
    assert all(isinstance(b, ContentBody) and 0 < len(b.payload) <= 4096 - 8 for b in bodies)
    assert sum(len(b.payload) for b in bodies) == header.body_size
    assert all(len(codec_for().encode(f)) <= 4096 for f in frames)


@pytest.mark.parametrize("dialect", ["rabbit", "amqp"])
@SETTINGS
@given(data=st.data())
def test_tables_round_trip_exactly_in_both_dialects(dialect: str, data: st.DataObject) -> None:
    table = data.draw(afs.field_tables(dialect=dialect, typed=True))
    encoded = encode_table(table, dialect)
    decoded, _ = decode_table(encoded, 0, dialect, typed=True)
    assert decoded == table and encode_table(decoded, dialect) == encoded
    plain_table = data.draw(afs.field_tables(dialect=dialect))
    assert decode_table(encode_table(plain_table, dialect), 0, dialect)[0] == _unwrap(plain_table)


# -- boundaries are reached, not hoped for ---------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 127, 128, 255])
def test_short_string_lengths_reach_the_edges(size: int) -> None:
    found = find(afs.domain_values("shortstr"), lambda s: len(s.encode()) == size, settings=FIND)
    assert len(found.encode()) == size


@pytest.mark.parametrize("size", [0, 1, 126, 127])
def test_queue_names_reach_the_length_assert(size: int) -> None:
    found = find(afs.domain_values("queue-name"), lambda s: len(s) == size, settings=FIND)
    assert len(found) == size and violation(load().domain("queue-name").asserts, found) is None


@pytest.mark.parametrize(
    ("wire", "value"),
    [("octet", 255), ("short", 65535), ("long", 2**32 - 1), ("longlong", 2**64 - 1), ("short", 0)],
)
def test_integer_extremes(wire: str, value: int) -> None:
    assert find(afs.domain_values(wire), lambda v: v == value, settings=FIND) == value


def test_empty_and_large_tables_and_frame_size_edges() -> None:
    assert find(afs.domain_values("table"), lambda t: t == {}, settings=FIND) == {}
    key = find(afs.field_tables(), lambda t: any(len(k) == 128 for k in t), settings=FIND)
    assert any(len(k) == 128 for k in key)
    for size in (0, 4096 - 8, 4096 - 7):
        frames = find(
            afs.content(frame_max=4096), lambda fs, n=size: fs[0].body_size == n, settings=FIND
        )
        assert frames[0].body_size == size


def test_notnull_is_honoured() -> None:
    @SETTINGS
    @given(afs.arguments("exchange.declare"))
    def check(arguments: dict[str, Any]) -> None:
        assert arguments["exchange"] != ""  # notnull in exchange.declare

    check()


def test_prefix_names_every_entity() -> None:
    @SETTINGS
    @given(afs.method_frames(chassis="client", prefix="af-run1-"))
    def check(frame: MethodFrame) -> None:
        for fld, value in zip(frame.method.fields, frame.values, strict=True):
            if fld.domain in ("queue-name", "exchange-name") or fld.name == "routing-key":
                assert value == "" or value.startswith("af-run1-"), (frame, fld.name)

    check()


# -- reachability --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [m.full_name for m in load().methods if m.sent_by("client")])
def test_every_client_method_is_reachable(name: str) -> None:
    frame = find(afs.method_frames(chassis="client"), lambda f: f.name == name, settings=FIND)
    assert frame.name == name


# -- a new method and domain in a spec file need no code --------------------------------------------


def test_extra_method_and_domain_get_strategies(tmp_path: Path) -> None:
    text = PROTOCOLS["0-9-1"].paths[0].read_text()
    text = text.replace(
        '<domain name = "bit"',
        '<domain name = "ticket-id" type = "shortstr"><assert check = "length" value = "8" />'
        '<assert check = "notnull" /></domain>\n  <domain name = "bit"',
    ).replace(
        '<method name = "recover-ok"',
        '<method name = "peek" synchronous = "1" index = "200">\n'
        '      <chassis name = "server" implement = "MAY" />\n'
        '      <field name = "ticket" domain = "ticket-id" />\n'
        '      <field name = "depth" domain = "long" />\n'
        "    </method>\n"
        '    <method name = "recover-ok"',
    )
    path = tmp_path / "extended.xml"
    path.write_text(text)
    spec = load_file(path)
    assert isinstance(spec, Spec)

    @SETTINGS
    @given(afs.method_frames("basic.peek", protocol=spec))
    def check(frame: MethodFrame) -> None:
        ticket = frame["ticket"]
        assert 1 <= len(ticket) <= 8
        codec = codec_for(spec)
        assert codec.decode(codec.encode(frame)) == frame

    check()
    values = afs.domain_values("ticket-id", protocol=spec)
    assert find(values, lambda v: len(v) == 8, settings=FIND)


# -- eager argument checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: afs.method_frames("basic.nope"), "no such method"),
        (lambda: afs.method_frames(protocol="0-10"), "strategies exist for"),
        (lambda: afs.method_frames(chassis="broker"), "chassis"),
        (lambda: afs.method_frames(channel=70000), "channel"),
        (lambda: afs.content("queue"), "content classes"),
        (lambda: afs.content(frame_max=100), "frame-min-size"),
        (lambda: afs.field_tables(dialect="qpid"), "dialect"),
        (lambda: afs.field_tables(max_depth=-1), "max_depth"),
        (lambda: afs.domain_values("colour"), "no such domain"),
        (lambda: afs.malformed_cases(["no-such-op"]), "known operators"),
    ],
)
def test_factories_check_their_arguments_at_once(factory: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        factory()
