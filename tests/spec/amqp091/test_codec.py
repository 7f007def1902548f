"""The wire codec: round trips, streaming, malformed input, the checked and unchecked encoders."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqpfuzz.spec import LocalProtocolError, RemoteProtocolError, protocols_of
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec import (
    Codec,
    ContentBody,
    ContentHeader,
    FieldValue,
    Heartbeat,
    MethodFrame,
    ProtocolHeader,
    codec_for,
    decode_table,
    encode_table,
    raw,
)
from amqpfuzz.spec.amqp091.codec.tables import (
    DIALECTS,
    GRAMMARS,
    MAX_DEPTH,
    WRITTEN,
    defined_codes,
)
from amqpfuzz.spec.errors import (
    FrameError,
    SyntaxFieldError,
    UnknownMethodError,
)
from tests.helpers.wire_values import plain_tables, typed_tables, value_for, values_for

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALL_METHODS = [(p, m.full_name) for p in protocols_of("amqp091") for m in load(p).methods]


@pytest.mark.parametrize(
    ("protocol", "name"), ALL_METHODS, ids=[f"{p}:{n}" for p, n in ALL_METHODS]
)
@SETTINGS
@given(data=st.data())
def test_every_method_round_trips_byte_exact(protocol: str, name: str, data: st.DataObject) -> None:
    codec = codec_for(protocol, typed_tables=True)
    method = codec.spec.method(name)
    values = data.draw(values_for(method))
    channel = data.draw(st.integers(0, 0xFFFF))
    frame = MethodFrame(channel, method, values)
    encoded = codec.encode(frame)
    decoded = codec.decode(encoded)
    assert decoded == frame
    assert codec.encode(decoded) == encoded


@pytest.mark.parametrize("dialect", ["rabbit", "amqp"])
@SETTINGS
@given(data=st.data())
def test_typed_tables_round_trip_in_both_dialects(dialect: str, data: st.DataObject) -> None:
    table = data.draw(typed_tables(dialect))
    encoded = encode_table(table, dialect)
    decoded, end = decode_table(encoded, 0, dialect, typed=True)
    assert end == len(encoded)
    assert encode_table(decoded, dialect) == encoded
    assert decoded == table


@pytest.mark.parametrize("dialect", ["rabbit", "amqp"])
@SETTINGS
@given(table=plain_tables())
def test_plain_tables_round_trip_to_equal_values(dialect: str, table: dict[str, Any]) -> None:
    decoded, _ = decode_table(encode_table(table, dialect), 0, dialect)
    assert decoded == table


def test_dialects_disagree_on_four_letters() -> None:
    int16 = {"n": FieldValue("U", -2)}
    assert encode_table(int16, "amqp") == b"\x00\x00\x00\x05\x01nU\xff\xfe"
    with pytest.raises(LocalProtocolError, match="'U' is not defined in the rabbit dialect"):
        encode_table(int16, "rabbit")
    # 's' is a short string to the specification and a signed short to RabbitMQ
    data = b"\x00\x00\x00\x05\x01ns\x00\x01"
    assert decode_table(data, 0, "rabbit")[0] == {"n": 1}
    with pytest.raises(FrameError):
        decode_table(data, 0, "amqp")  # a short string of length 0 then a stray byte
    assert decode_table(b"\x00\x00\x00\x05\x01ns\x01a", 0, "amqp")[0] == {"n": "a"}
    big = 2**64 - 1
    assert decode_table(encode_table({"n": big}, "amqp"), 0, "amqp")[0] == {"n": big}
    with pytest.raises(LocalProtocolError):
        encode_table({"n": big}, "rabbit")
    assert encode_table({"b": b"\x00"}, "rabbit")[6:7] == b"x"
    assert encode_table({"b": b"\x00"}, "amqp")[6:7] == b"S"


# 'L' as RabbitMQ 3.10.8's rabbit_binary_parser:parse_table/1 reads it (Value:64/signed, the
# grammar's long-long-int, section 4.2.1), and 'U', which it has no clause for
_PARSE_TABLE = frozenset("STbBsuIidflLtDFAxV")


def test_the_rabbit_dialect_reads_what_rabbitmq_decodes() -> None:
    assert frozenset(DIALECTS["rabbit"]) == _PARSE_TABLE
    signed = b"\x00\x00\x00\x0b\x01nL\xff\xff\xff\xff\xff\xff\xff\xfe"
    assert decode_table(signed, 0, "rabbit")[0] == {"n": -2}
    assert decode_table(signed, 0, "amqp")[0] == {"n": -2}  # the grammar's long-long-int too
    typed, _ = decode_table(signed, 0, "rabbit", typed=True)
    assert typed == {"n": FieldValue("L", -2)}
    assert encode_table(typed, "rabbit") == signed
    # what RabbitMQ writes (rabbit_binary_generator): every 64-bit integer as 'l', never 'L'
    assert "L" not in WRITTEN["rabbit"] and "L" in WRITTEN["amqp"]
    assert encode_table({"n": -(2**40)}, "rabbit")[6:7] == b"l"


def test_a_code_is_undefined_only_where_grammar_and_dialect_both_leave_it_out() -> None:
    assert GRAMMARS["0-9-1"] == frozenset(DIALECTS["amqp"])
    rabbit = defined_codes("0-9-1", "rabbit")
    assert {"L", "U", "l", "s", "x"} <= rabbit  # 'U' the grammar's, 'x' RabbitMQ's
    assert defined_codes("0-9-1-rabbit", "rabbit") == rabbit
    assert defined_codes("0-9", "rabbit") == frozenset(DIALECTS["rabbit"])  # 0-9 adds none
    assert "U" not in defined_codes("0-8", "rabbit") and "x" not in defined_codes("0-9", "amqp")


def test_content_header_and_bodies_split_by_frame_max() -> None:
    codec = codec_for()
    frames = codec.content(3, b"x" * 25, frame_max=18, content_type="a/b", delivery_mode=2)
    header, *bodies = frames
    assert isinstance(header, ContentHeader) and header.body_size == 25
    assert [len(b.payload) for b in bodies if isinstance(b, ContentBody)] == [10, 10, 5]
    wire = codec.encode_all(frames)
    assert codec.decode_all(wire) == frames
    assert all(len(codec.encode(b)) <= 18 for b in bodies)


@SETTINGS
@given(data=st.data())
def test_every_property_subset_round_trips(data: st.DataObject) -> None:
    codec = codec_for(typed_tables=True)
    basic = codec.spec.amqp_class("basic")
    chosen = data.draw(st.lists(st.sampled_from(basic.properties), unique_by=lambda f: f.name))
    values = data.draw(st.tuples(*(value_for(f) for f in chosen)))
    props = {f.attr: v for f, v in zip(chosen, values, strict=True)}
    header = ContentHeader(1, 60, data.draw(st.integers(0, 2**64 - 1)), props)
    encoded = codec.encode(header)
    assert codec.decode(encoded) == header


@SETTINGS
@given(data=st.data())
def test_reader_gives_the_same_frames_for_every_chunking(data: st.DataObject) -> None:
    codec = codec_for()
    frames: list[Any] = [ProtocolHeader(b"AMQP\x00\x00\x09\x01")]
    frames.append(codec.method("connection.tune", 0, channel_max=7, frame_max=4096))
    frames.extend(codec.content(1, data.draw(st.binary(max_size=100)), frame_max=40))
    frames.append(Heartbeat())
    frames.append(codec.method("basic.deliver", 1, consumer_tag="c", delivery_tag=9))
    wire = codec.encode_all(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=12)))
    reader = codec.reader()
    got: list[Any] = []
    for start, stop in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        got += reader.feed(wire[start:stop])
    assert got == frames
    assert reader.pending == 0


@settings(max_examples=300, deadline=None)
@given(blob=st.binary(max_size=200), frame_type=st.sampled_from([1, 2, 3, 8, 0, 9]))
def test_arbitrary_bytes_raise_only_our_errors(blob: bytes, frame_type: int) -> None:
    codec = codec_for()
    for candidate in (blob, raw.frame(frame_type, 1, blob), raw.frame(1, 1, b"\x00<\x00(" + blob)):
        try:
            codec.reader().feed(candidate)
        except RemoteProtocolError as exc:
            assert 0 <= exc.offset <= len(candidate)
    for dialect in ("rabbit", "amqp"):
        with contextlib.suppress(RemoteProtocolError):
            decode_table(blob, 0, dialect)
    with contextlib.suppress(RemoteProtocolError):
        codec.decode_payload(frame_type, 0, blob)


# -- malformed frames: the error category and the offset ------------------------------------

PUBLISH = codec_for().method("basic.publish", 1, exchange="ex", routing_key="rk")


def _decode_error(data: bytes, **reader_args: Any) -> RemoteProtocolError:
    with pytest.raises(RemoteProtocolError) as info:
        codec_for().reader(**reader_args).feed(data)
    return info.value


def test_bad_frame_end() -> None:
    good = codec_for().encode(PUBLISH)
    error = _decode_error(good[:-1] + b"\x00")
    assert isinstance(error, FrameError) and error.offset == len(good) - 1


def test_unknown_frame_type_is_seen_from_the_header_alone() -> None:
    error = _decode_error(b"\x05\x00\x01\xff\xff\xff\xff")
    assert isinstance(error, FrameError) and "unknown frame type 5" in str(error)


def test_frame_larger_than_frame_max() -> None:
    error = _decode_error(raw.frame(3, 1, b"x" * 100), frame_max=50)
    assert error.category == "frame-error" and "exceeds frame-max 50" in str(error)


def test_unknown_class_and_method() -> None:
    for payload in (raw.method_payload(61, 40), raw.method_payload(60, 41)):
        error = _decode_error(raw.frame(1, 1, payload))
        assert isinstance(error, UnknownMethodError) and error.category == "command-invalid"


def test_truncated_arguments_and_overrunning_string() -> None:
    good = codec_for().encode(PUBLISH)
    payload = good[7:-1]
    error = _decode_error(raw.frame(1, 1, payload[:-3]))
    assert isinstance(error, FrameError) and "end early" in str(error)
    lying = raw.method_payload(60, 40, raw.short(0) + raw.shortstr("ex", length=200))
    error = _decode_error(raw.frame(1, 1, lying))
    assert isinstance(error, FrameError) and error.offset == 7 + 7  # at the string's first byte


def test_invalid_utf8_in_a_short_string_is_a_syntax_error() -> None:
    payload = raw.method_payload(
        60, 40, raw.short(0) + raw.shortstr(b"\xff\xfe") + raw.shortstr("") + raw.bits()
    )
    error = _decode_error(raw.frame(1, 1, payload))
    assert isinstance(error, SyntaxFieldError) and error.category == "syntax-error"
    assert error.offset == 7 + 7


def test_invalid_table_type_code() -> None:
    method = load("0-9-1").method("queue.declare")
    bad_table = raw.Raw(raw.table([raw.TableEntry(b"k", b"Q", b"")]))
    error = _decode_error(raw.method_frame(method, 1, [0, "q", *[False] * 5, bad_table]))
    assert isinstance(error, SyntaxFieldError) and "type code b'Q'" in str(error)


def test_deeply_nested_tables_are_refused_not_recursed() -> None:
    table: dict[str, Any] = {}
    for _ in range(MAX_DEPTH + 5):
        table = {"t": table}
    with pytest.raises(SyntaxFieldError, match="nested deeper"):
        decode_table(encode_table(table))


def test_heartbeat_rules() -> None:
    error = _decode_error(raw.heartbeat(0, b"x"))
    assert isinstance(error, FrameError) and "payload" in str(error)
    error = _decode_error(raw.heartbeat(3))  # section 4.2.7: an invalid heartbeat is 501
    assert isinstance(error, FrameError) and error.category == "frame-error"
    assert "channel 3" in str(error)


def test_property_flags_with_undefined_bits() -> None:
    payload = raw.content_header(60, 0, flags=0x0002)  # bit 1: basic defines 14 properties
    error = _decode_error(raw.frame(2, 1, payload))
    assert isinstance(error, SyntaxFieldError) and "does not define" in str(error)


def test_header_for_a_class_without_content() -> None:
    error = _decode_error(raw.frame(2, 1, raw.content_header(50, 0)))
    assert isinstance(error, FrameError) and "no content" in str(error)


def test_stream_offsets_count_from_the_start_of_the_stream() -> None:
    codec = codec_for()
    good = codec.encode(PUBLISH)
    reader = codec.reader()
    assert reader.feed(good) == [PUBLISH]
    with pytest.raises(FrameError) as info:
        reader.feed(good[:-1] + b"\x01")
    assert info.value.offset == 2 * len(good) - 1
    with pytest.raises(FrameError):  # the reader stays broken
        reader.feed(good)


def test_server_protocol_header_opens_the_stream() -> None:
    frames = codec_for().reader().feed(b"AMQP\x00\x00\x09\x01")
    assert frames == [ProtocolHeader(b"AMQP\x00\x00\x09\x01")]
    assert repr(frames[0]) == "ProtocolHeader(AMQP 0 0 9 1)"


# -- the checked encoder refuses what the wire cannot carry ---------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"exchange": "e" * 256}, "field 'exchange' .shortstr.: 256 bytes exceed 255"),
        ({"routing_key": b"bytes"}, "field 'routing-key' .shortstr.: needs a str"),
        ({"reserved_1": 70000}, "field 'reserved-1' .short.: 70000 is outside"),
    ],
)
def test_checked_encoder_names_the_bad_field(arguments: dict[str, Any], message: str) -> None:
    codec = codec_for()
    with pytest.raises(LocalProtocolError, match=message):
        codec.encode(codec.method("basic.publish", 1, **arguments))


def test_checked_encoder_refuses_bad_channel_and_unknown_names() -> None:
    codec = codec_for()
    with pytest.raises(LocalProtocolError, match="channel 70000"):
        codec.encode(codec.method("basic.publish", 70000))
    with pytest.raises(LocalProtocolError, match="no field colour"):
        codec.method("basic.publish", 1, colour="red")
    with pytest.raises(LocalProtocolError, match="no property colour"):
        codec.encode(ContentHeader(1, 60, 0, {"colour": "red"}))
    with pytest.raises(LocalProtocolError, match="property priority"):
        codec.encode(ContentHeader(1, 60, 0, {"priority": 300}))
    with pytest.raises(ValueError, match="dialect"):
        Codec(load(), "qpid")


# -- the unchecked builder writes exactly what it is told -----------------------------------


def test_raw_builder() -> None:
    assert raw.frame(1, 2, b"abc") == b"\x01\x00\x02\x00\x00\x00\x03abc\xce"
    assert (
        raw.frame(9, 70000, b"", size=5, end=0)
        == b"\x09" + struct.pack(">HI", 70000 & 0xFFFF, 5) + b"\x00"
    )
    assert raw.shortstr("ab", length=9) == b"\x09ab"
    assert raw.shortstr(b"\xff" * 300)[:1] == bytes((300 & 0xFF,))
    assert raw.longstr(b"a") == b"\x00\x00\x00\x01a"
    assert raw.bits(True, False, True) == b"\x05"
    assert raw.table([raw.TableEntry(b"k", b"Z", b"12")]) == b"\x00\x00\x00\x05\x01kZ12"
    assert raw.heartbeat(1, b"x") == b"\x08\x00\x01\x00\x00\x00\x01x\xce"
    publish = load().method("basic.publish")
    # the unchecked and the checked encoders agree on a valid frame
    valid = raw.method_frame(publish, 1, [0, "ex", "rk", False, False])
    assert valid == codec_for().encode(PUBLISH)
    truncated = raw.method_frame(publish, 1, [0, "ex"])
    assert truncated == raw.frame(1, 1, raw.method_payload(60, 40, b"\x00\x00\x02ex"))
    assert raw.arguments(publish, [0, raw.Raw(b"\x01"), "", True]) == b"\x00\x00\x01\x00\x01"


def test_reprs_read_well() -> None:
    assert repr(PUBLISH) == (
        "basic.publish(ch=1, exchange='ex', routing_key='rk', mandatory=False, immediate=False)"
    )
    assert repr(Heartbeat()) == "heartbeat()"
    assert "size=3" in repr(ContentHeader(1, 60, 3, {"priority": 1}))
    assert PUBLISH["routing_key"] == "rk" and PUBLISH.arguments["exchange"] == "ex"


def test_decode_wants_exactly_one_frame() -> None:
    codec = codec_for()
    data = codec.encode(Heartbeat())
    assert codec.decode(data) == Heartbeat()
    with pytest.raises(FrameError, match="2 more bytes"):
        codec.decode(data + b"\x01\x00")
    with pytest.raises(FrameError, match="found 2"):
        codec.decode(data + data)


@pytest.mark.parametrize("not_a_table", [[], (), "", 0, [("a", 1)]])
def test_only_mappings_are_tables(not_a_table: Any) -> None:
    codec = codec_for()
    with pytest.raises(LocalProtocolError, match="must be a mapping"):
        codec.encode(codec.method("queue.declare", 1, arguments=not_a_table))
