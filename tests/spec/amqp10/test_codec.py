"""The 1.0 codec: every encoding of the type system, composites, frames, messages, transfers, the
streaming reader and its errors, and the unchecked builder."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqpfuzz.spec.amqp10.codec import (
    MAX_DEPTH,
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    DecodeError,
    Described,
    Float,
    FramingError,
    Header,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    codec_for,
    raw,
)
from amqpfuzz.spec.errors import LocalProtocolError, RemoteProtocolError

codec = codec_for()

# value, the bytes the specification gives it (the smallest encoding)
ENCODINGS: list[tuple[Any, str]] = [
    (None, "40"),
    (True, "41"),
    (False, "42"),
    (UByte(255), "50ff"),
    (UShort(258), "600102"),
    (UInt(0), "43"),
    (UInt(255), "52ff"),
    (UInt(256), "7000000100"),
    (ULong(0), "44"),
    (ULong(7), "5307"),
    (ULong(2**64 - 1), "80ffffffffffffffff"),
    (Byte(-1), "51ff"),
    (Short(-2), "61fffe"),
    (Int(-128), "5480"),
    (Int(128), "7100000080"),
    (Long(127), "557f"),
    (-129, "81ffffffffffffff7f"),
    (Float(1.0), "723f800000"),
    (1.0, "823ff0000000000000"),
    (Decimal32(b"\x01\x02\x03\x04"), "7401020304"),
    (Decimal64(bytes(range(8))), "840001020304050607"),
    (Decimal128(bytes(range(16))), "94" + bytes(range(16)).hex()),
    (Char("A"), "7300000041"),
    (Timestamp(1), "830000000000000001"),
    (uuid.UUID(int=1), "98" + "00" * 15 + "01"),
    (b"ab", "a0026162"),
    (b"x" * 256, "b000000100" + "78" * 256),
    ("é", "a102c3a9"),
    ("y" * 300, "b10000012c" + "79" * 300),
    (Symbol("ab"), "a3026162"),
    (Symbol("z" * 256), "b300000100" + "7a" * 256),
    ([], "45"),
    ([None, True], "c003024041"),
    ([b"q" * 300], "d00000013500000001b00000012c" + "71" * 300),
    ({Symbol("k"): None}, "c10502a3016b40"),
    ({"k" * 300: None}, "d10000013600000002b10000012c" + "6b" * 300 + "40"),
    (Array("symbol", (Symbol("a"), Symbol("bc"))), "e00702a30161026263"),
    (Array("uint", (UInt(1), UInt(256))), "e00a02700000000100000100"),
    (Array("boolean", (True, False)), "e00402560100"),
    (Array("ubyte", (UByte(1),) * 300), "f0000001310000012c50" + "01" * 300),
    (Described(Symbol("x"), None), "00a3017840"),
]


@pytest.mark.parametrize(("value", "hex_"), ENCODINGS, ids=[h[:8] for _, h in ENCODINGS])
def test_every_encoding_as_the_specification_lays_it_out(value: Any, hex_: str) -> None:
    data = codec.encode(value)
    assert data.hex() == hex_
    back = codec.decode(data)
    assert back == value
    if type(value) is not int:  # a plain int is a long, and comes back typed
        assert type(back) is type(value)


def test_every_constructor_of_the_model_is_covered() -> None:
    seen = {bytes.fromhex(h)[0] for _, h in ENCODINGS}
    seen |= {0x56, 0x53}  # boolean's octet form in arrays; the descriptor's smallulong
    assert set(codec.types.constructors) <= seen | {0x98, 0xE0}


def test_forced_encodings_and_the_octet_boolean() -> None:
    assert codec.encoder.encoded_as(0x70, UInt(3)).hex() == "7000000003"
    assert codec.decode(bytes.fromhex("5601")) is True
    assert codec.decode(bytes.fromhex("7000000003")) == 3
    with pytest.raises(DecodeError, match="boolean"):
        codec.decode(bytes.fromhex("5602"))


def test_a_composite_is_a_described_list_without_its_trailing_nulls() -> None:
    begin = codec.composite("begin", next_outgoing_id=0, incoming_window=2, outgoing_window=3)
    data = codec.encode(begin)
    assert data.hex() == "005311c00704404352025203"
    back = codec.decode(data)
    assert back.name == "begin"
    assert back["handle-max"] == 0xFFFFFFFF  # the default, applied on decode
    assert back["incoming-window"] == 2 and type(back["incoming-window"]) is UInt


def test_defaults_that_are_choices_are_their_values() -> None:
    attach = codec.decode(codec.encode(codec.composite("attach", name="l", handle=0, role=True)))
    assert attach["snd-settle-mode"] == 2  # mixed
    assert attach["rcv-settle-mode"] == 0  # first
    source = codec.decode(codec.encode(codec.composite("source")))
    assert source["expiry-policy"] == "session-end" and source["durable"] == 0


def test_every_composite_round_trips_with_its_mandatory_fields() -> None:
    for name, infos in codec.types.fields.items():
        fields = {f.name: _sample(f.primitive, f.requires) for f in infos if f.mandatory}
        data = codec.encode(Composite(name, fields))
        back = codec.decode(data)
        assert isinstance(back, Composite) and back.name == name
        assert {k: back[k] for k in fields} == fields


def _sample(primitive: str | None, requires: tuple[str, ...]) -> Any:
    if primitive is None:
        return b"txn" if "txn-id" in requires else "x"
    return {
        "string": "x",
        "symbol": Symbol("PLAIN"),
        "uint": UInt(1),
        "ulong": ULong(1),
        "ushort": UShort(1),
        "ubyte": UByte(0),
        "boolean": True,
        "binary": b"t",
    }[primitive]


def test_the_checked_encoder_refuses_what_the_specification_forbids() -> None:
    with pytest.raises(LocalProtocolError, match="mandatory field 'container-id'"):
        codec.encode(codec.composite("open"))
    with pytest.raises(LocalProtocolError, match="handle"):
        codec.encode(codec.composite("attach", name="l", handle="zero", role=True))
    with pytest.raises(LocalProtocolError, match="ASCII"):
        codec.encode(Symbol("é"))
    with pytest.raises(LocalProtocolError, match="out of range"):
        codec.encode(UInt(-1))
    with pytest.raises(LocalProtocolError, match="no field"):
        codec.composite("open", nonsense=1)
    with pytest.raises(LocalProtocolError, match="every element"):
        codec.encode(Array("symbol", (Symbol("a"), 1)))


def test_unchecked_composites_send_what_the_checked_one_refuses() -> None:
    bad = Composite("attach", {"name": "l", "handle": "zero", "role": None})
    data = codec.encoder.composite(bad, check=False)
    assert data.hex() == "005312c00a02a1016ca1047a65726f"
    with pytest.raises(DecodeError, match="handle is handle"):
        codec.decode(data)
    assert codec.lenient.value(data)["handle"] == "zero"


FRAMES = [
    (codec.composite("open", container_id="c"), 0),
    (codec.composite("begin", next_outgoing_id=1, incoming_window=10, outgoing_window=10), 3),
    (codec.composite("flow", incoming_window=1, next_outgoing_id=0, outgoing_window=1), 3),
    (codec.composite("close", error=codec.composite("error", condition=Symbol("amqp:x"))), 0),
    (codec.composite("sasl-init", mechanism=Symbol("ANONYMOUS")), 0),
]


@pytest.mark.parametrize(("body", "channel"), FRAMES, ids=[b.name for b, _ in FRAMES])
def test_frames_round_trip_through_the_reader_in_any_chunks(body: Composite, channel: int) -> None:
    data = Header().encode() + codec.frame(body, channel) + codec.frame(None, 0)
    for chunk in (1, 3, 7, len(data)):
        reader = codec.reader()
        found = []
        for start in range(0, len(data), chunk):
            found += reader.feed(data[start : start + chunk])
        header, frame, empty = found
        assert header == Header()
        assert frame.body is not None and frame.body.name == body.name
        assert frame.channel == channel
        assert frame.type == (1 if body.name.startswith("sasl") else 0)
        assert empty.body is None


def test_a_sasl_outcome_is_followed_by_a_protocol_header() -> None:
    outcome = codec.composite("sasl-outcome", code=UByte(0))
    data = Header(3).encode() + codec.frame(outcome) + Header(0).encode()
    found = codec.reader().feed(data)
    assert [type(x).__name__ for x in found] == ["Header", "Frame", "Header"]
    assert found[2].protocol_id == 0


def test_the_reader_enforces_the_maximum_frame_size() -> None:
    reader = codec.reader(max_frame_size=512)
    big = codec.frame(codec.composite("open", container_id="c" * 600))
    with pytest.raises(FramingError, match="over the maximum of 512") as caught:
        reader.feed(Header().encode() + big)
    assert caught.value.offset == 8  # the frame's place in the stream
    assert caught.value.category == "amqp:connection:framing-error"


@pytest.mark.parametrize(
    ("data", "error", "text"),
    [
        (raw.frame(b"", size=7), FramingError, "header alone"),
        (raw.frame(b"", doff=1), FramingError, "under 2"),
        (raw.frame(b"", doff=5, extended=b""), FramingError, "past a frame"),
        (raw.frame(b"", type=9), FramingError, "unknown frame type"),
        (b"XMQP\x00\x01\x00\x00", FramingError, "protocol header"),
        (raw.frame(raw.fixed(0xFF)), DecodeError, "unknown constructor 0xff"),
        (raw.frame(raw.described(raw.fixed(0x53, b"\x10"), raw.compound(0xC0, [], size=9))), DecodeError, "runs past"),
        (raw.frame(raw.described(raw.fixed(0x53, b"\x10"), raw.compound(0xC0, [b"\x40"], count=0))), DecodeError, "end before its size"),
        (raw.frame(raw.described(raw.fixed(0x53, b"\x10"), raw.compound(0xC0, [raw.variable(0xA1, b"\xff")]))), DecodeError, "not utf-8"),
        (raw.frame(raw.described(raw.fixed(0x53, b"\x10"), raw.compound(0xC0, [b"\x40"]))), DecodeError, "mandatory field 'container-id'"),
        (raw.frame(raw.described(raw.fixed(0x53, b"\x99"), raw.compound(0xC0, []))), DecodeError, "not one"),
        (raw.frame(raw.nested(MAX_DEPTH + 5)), DecodeError, "nested deeper"),
        (raw.frame(raw.array(0xE0, b"\xa3", [b"\x01a", b"\x05b"])), DecodeError, "runs past"),
    ],
)  # fmt: skip
def test_broken_bytes_raise_typed_errors_with_offsets(
    data: bytes, error: type[RemoteProtocolError], text: str
) -> None:
    stream = data if data.startswith(b"XMQP") else Header().encode() + data
    with pytest.raises(error, match=text) as caught:
        codec.reader().feed(stream)
    assert 0 <= caught.value.offset <= len(stream)
    assert caught.value.category.startswith("amqp:")


def test_a_message_and_its_sections() -> None:
    sections = [
        codec.composite("header", durable=True),
        Described("message-annotations", {Symbol("x-opt"): 1}),
        codec.composite("properties", message_id=ULong(9), to="q", subject="s"),
        Described("application-properties", {"k": "v"}),
        Described("amqp-value", [1, "two"]),
        Described("footer", {Symbol("f"): b"1"}),
    ]
    payload = codec.message(sections)
    back = codec.sections(payload)
    assert [getattr(s, "name", None) or s.descriptor for s in back] == [
        "header",
        "message-annotations",
        "properties",
        "application-properties",
        "amqp-value",
        "footer",
    ]
    assert back[3].value == {"k": "v"} and back[2]["message-id"] == 9


def test_a_large_delivery_is_split_into_transfers_and_joined_again() -> None:
    transfer = codec.composite("transfer", handle=0, delivery_id=0, delivery_tag=b"t")
    payload = codec.message([Described("data", bytes(range(256)) * 20)])
    frames = codec.transfer_frames(1, transfer, payload, max_frame_size=512)
    assert all(len(f) <= 512 for f in frames) and len(frames) > 5
    read = codec.reader().feed(Header().encode() + b"".join(frames))[1:]
    assert [f.body["more"] for f in read] == [True] * (len(read) - 1) + [False]
    assert codec.sections(codec.joined(read)) == codec.sections(payload)


@given(st.binary(max_size=200), st.integers(1, 16))
def test_any_bytes_fed_to_the_reader_raise_only_our_errors(data: bytes, chunk: int) -> None:
    """Whatever arrives, the reader gives headers and frames or a remote protocol error with
    the condition a peer must answer and where it was found; never an IndexError,
    struct.error, RecursionError or UnicodeError."""
    frame = Header().encode() + struct.pack(">I", len(data) + 4) + data
    for stream in (data, Header().encode() + data, frame):
        reader = codec.reader()
        try:
            for start in range(0, len(stream), chunk):
                reader.feed(stream[start : start + chunk])
        except RemoteProtocolError as e:
            assert e.category in ("amqp:decode-error", "amqp:connection:framing-error")
            assert 0 <= e.offset <= len(stream)


@given(st.binary(max_size=300))
def test_any_bytes_decoded_as_values_raise_only_our_errors(data: bytes) -> None:
    for decoder in (codec.decoder, codec.lenient):
        try:
            decoder.values(data)
        except DecodeError as e:
            assert 0 <= e.offset <= len(data)
