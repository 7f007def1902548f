"""The 0-10 codec: what it takes from the model, every type's values, every struct, control and
command round trip with drawn values, byte layouts the specification states, the streaming
reader fed in chunks of every size, each decode error typed with its offset and category, the
assembler's refusals, the checked encoder's refusals, and the unchecked builder."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqpfuzz.spec.amqp010.codec import (
    MAX_DEPTH,
    WHOLE,
    Array,
    AssemblyError,
    Bit,
    ByteRanges,
    Command,
    Control,
    Dec32,
    Dec64,
    DecodeError,
    Frame,
    FramingError,
    Header,
    Opaque,
    SequenceSet,
    Str8,
    Struct,
    UInt8,
    UInt16,
    UnknownCodeError,
    codec_for,
    raw,
)
from amqpfuzz.spec.amqp010.codec.errors import CONNECTION_CATEGORIES, EXECUTION_CATEGORIES
from amqpfuzz.spec.amqp010.codec.types import MEANINGS, Layout, WireType, code_width
from amqpfuzz.spec.amqp010.codec.values import PYTHON_TYPES, TYPE_NAMES
from amqpfuzz.spec.errors import LocalProtocolError, RemoteProtocolError

codec = codec_for()
spec = codec.spec
types = codec.types
CODED = sorted(t.name for t in types.types.values() if t.code is not None)
STRUCTS = [s.qualified for s in spec.structs]
CONTROLS = [c.qualified for c in spec.controls]
COMMANDS = [c.qualified for c in spec.commands]
FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- values drawn per type, from the model ------------------------------------------------------

MODES = {"accept-mode": 0, "acquire-mode": 0}  # message.transfer's required fields
TEXT_LIMIT = 40  # characters: at most 160 octets in any of the character sets, under a str8's 255
LATIN = bytes(range(256)).decode("iso8859-15")


def plain(t: WireType, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of type ``t`` as a field holds them (plain Python values)."""
    if t.kind == "integer":
        bits = 8 * t.width
        low, high = (
            (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.signed else (0, (1 << bits) - 1)
        )
        return st.integers(low, high)
    if t.kind == "float":
        return st.floats(width=32 if t.width == 4 else 64, allow_nan=False)
    if t.kind == "boolean":
        return st.booleans()
    if t.kind == "text":
        alphabet = st.sampled_from(LATIN) if "8859" in t.detail else st.characters(codec="utf-8")
        if t.fixed:
            return alphabet
        return st.text(alphabet, max_size=TEXT_LIMIT)
    if t.kind == "binary":
        return st.binary(min_size=t.width, max_size=t.width) if t.fixed else st.binary(max_size=60)
    if t.kind == "uuid":
        return st.uuids()
    if t.kind == "decimal":
        kind, bits = (Dec32, 32) if t.width == 5 else (Dec64, 64)
        return st.builds(
            kind, st.integers(0, 255), st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        )
    if t.kind == "void":
        return st.none()
    if t.kind == "bit":
        return st.just(Bit())
    if t.kind == "sequence-set":
        pairs = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**31 - 1)).map(
            lambda p: (p[0], (p[0] + p[1]) % 2**32)
        )
        return st.lists(pairs, max_size=4).map(SequenceSet)
    if t.kind == "byte-ranges":
        pairs = st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)).map(sorted)
        return st.lists(pairs.map(tuple), max_size=3).map(ByteRanges)
    if t.kind == "struct32":
        coded = [s for s in STRUCTS if types.layout(s).code is not None]
        return st.sampled_from(coded).flatmap(lambda name: struct_of(name, depth + 1))
    if depth >= 2:  # maps, lists and arrays inside one another: two deep is enough
        return st.just({} if t.kind == "map" else [] if t.kind == "list" else Array("str16"))
    if t.kind == "map":
        return st.dictionaries(st.text(max_size=8), typed(depth + 1), max_size=3)
    if t.kind == "list":
        return st.lists(typed(depth + 1), max_size=3)
    assert t.kind == "array", t
    return st.sampled_from(CODED).flatmap(
        lambda name: st.lists(as_typed(types.type(name), depth + 1), max_size=3).map(
            lambda items: Array(name, tuple(items))
        )
    )


def as_typed(t: WireType, depth: int) -> st.SearchStrategy[Any]:
    """Values of ``t`` as a map, list or array item holds them: in the Python type that says
    the type (a UInt16, a Str8...)."""
    python = PYTHON_TYPES[t.name]
    values = plain(t, depth)
    if python in (int, float, str, bytes, bool) or not issubclass(python, (int, float, str, bytes)):
        return values
    return values.map(python)


def typed(depth: int) -> st.SearchStrategy[Any]:
    return st.sampled_from(CODED).flatmap(lambda name: as_typed(types.type(name), depth))


def fields_of(layout: Layout, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Values for a layout's fields: each optional field present or not, bits True or left
    out, an enum domain's field one of its choices, a struct-typed field a struct of its own."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in layout.fields:
        if f.struct is not None:
            value: st.SearchStrategy[Any] = struct_of(f.struct, depth + 1)
        elif f.choices:
            value = st.sampled_from(sorted(f.choices.values()))
        else:
            assert f.type is not None
            value = st.just(True) if f.is_bit else plain(f.type, depth)
        required = (f.required and not f.is_bit) or not layout.pack
        parts[f.name] = value if required else st.none() | value
    return st.fixed_dictionaries(parts)


def struct_of(name: str, depth: int = 0) -> st.SearchStrategy[Struct]:
    return fields_of(types.layout(name), depth).map(lambda fields: Struct(name, fields))


def commands_of(name: str) -> st.SearchStrategy[Command]:
    declared = spec.command(name).segments
    header: st.SearchStrategy[Any] = st.none()
    body: st.SearchStrategy[Any] = st.none()
    if declared is not None and declared.header:
        entries = st.lists(st.sampled_from(declared.entries), unique=True).flatmap(
            lambda names: st.tuples(*(struct_of(n) for n in names))
        )
        header = entries if declared.header_required else st.none() | entries
    if declared is not None and declared.body:
        body = st.none() | st.binary(max_size=300)
    return st.builds(
        Command,
        st.just(name),
        fields_of(types.layout(name)),
        st.integers(0, 0xFFFF),
        st.booleans(),
        header,
        body,
    )


# -- what the codec takes from the model ----------------------------------------------------------


def test_every_type_has_a_meaning_and_its_code_says_its_width() -> None:
    """A type code's range implies its width (so that a reader can step over a code it does
    not know): every coded type of the XML agrees, and every type has a meaning."""
    assert set(MEANINGS) == {t.name for t in spec.types}
    for t in spec.types:
        if t.code is None:
            continue
        assert code_width(t.code) == (
            t.is_fixed,
            t.fixed_width if t.is_fixed else t.variable_width,
        ), t
    assert code_width(0xB3) is None and code_width(0xE0) is None


def test_every_coded_type_has_a_python_type_that_says_it() -> None:
    assert set(TYPE_NAMES.values()) == set(CODED)
    for name in CODED:
        assert TYPE_NAMES[PYTHON_TYPES[name]] == name


def test_no_struct_control_or_command_has_a_boolean_field() -> None:
    """Equality of structs, controls and commands takes False for a field left out (a clear
    bit): sound only while no field is a boolean, whose False is sent."""
    for member in (*spec.structs, *spec.controls, *spec.commands):
        assert all(f.ref.primitive != "boolean" for f in member.fields), member.qualified


def test_header_entries_are_coded_structs_of_four_octets_of_size() -> None:
    """A header segment's entries are struct32s: each entry struct has a code, and its own
    layout (size 4, code) is the struct32 layout."""
    entries = {e for c in spec.commands if c.segments for e in c.segments.entries}
    assert entries
    for name in entries:
        layout = types.layout(name)
        assert layout.code is not None and layout.size == 4, name
        value = Struct(name, {})
        assert codec.encoder.struct32(value, False) == codec.encode_struct(value, False)


def test_categories_are_the_xml_s_reactions() -> None:
    assert set(spec.domain("connection.close-code").choices) >= CONNECTION_CATEGORIES
    assert set(spec.domain("execution.error-code").choices) >= EXECUTION_CATEGORIES


def test_codec_for_refuses_another_family() -> None:
    with pytest.raises(LocalProtocolError):
        codec_for("0-9-1")


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MEANINGS))
@FAST
@given(data=st.data())
def test_every_type_round_trips(name: str, data: st.DataObject) -> None:
    t = types.type(name)
    value = data.draw(plain(t))
    assert codec.decode_value(codec.encode_value(value, name), name) == value
    if t.code is not None:
        item = data.draw(as_typed(t, 0))
        back = codec.decode_value(codec.encode_value(item))
        assert back == item and type(back) is type(item)


@pytest.mark.parametrize("name", STRUCTS)
@FAST
@given(data=st.data())
def test_every_struct_round_trips(name: str, data: st.DataObject) -> None:
    value = data.draw(struct_of(name))
    assert codec.decode_struct(name, codec.encode_struct(value)) == value
    if types.layout(name).code is not None:
        assert codec.decode_value(codec.encode_value(value, "struct32"), "struct32") == value


@pytest.mark.parametrize("name", CONTROLS)
@FAST
@given(data=st.data())
def test_every_control_round_trips(name: str, data: st.DataObject) -> None:
    fields = data.draw(fields_of(types.layout(name)))
    channel = data.draw(st.integers(0, 0xFFFF))
    control = Control(name, fields, channel)
    size = data.draw(st.sampled_from([0xFFFF, 4096, 13, 40]))
    assert codec.decode(codec.encode(control, size)) == [control]


@pytest.mark.parametrize("name", COMMANDS)
@FAST
@given(data=st.data())
def test_every_command_round_trips(name: str, data: st.DataObject) -> None:
    command = data.draw(commands_of(name))
    size = data.draw(st.sampled_from([0xFFFF, 4096, 13, 64]))
    frames = codec.frames(command, size)
    assert all(f.size <= size for f in frames)
    assert codec.decode(b"".join(f.encode() for f in frames)) == [command]


def test_the_model_s_every_member_is_exercised() -> None:
    assert len(CONTROLS) == len(spec.controls) > 20
    assert len(COMMANDS) == len(spec.commands) > 50
    assert len(STRUCTS) == len(spec.structs) > 15


# -- byte layouts the specification states -----------------------------------------------------


def test_protocol_header() -> None:
    # "AMQP", protocol class 1, instance 1, major 0, minor 10
    assert Header().encode() == b"AMQP\x01\x01\x00\x0a"
    assert codec.decode(b"AMQP\x01\x01\x00\x0a", expect_header=True) == [Header()]


def test_frame_header() -> None:
    frame = Frame(WHOLE, 1, 1, 0x0102, b"xy")
    assert (
        frame.encode()
        == bytes.fromhex(
            "0f"  # version 0, reserved 0, first-segment, last-segment, first-frame, last-frame
            "01"  # segment type: command
            "000e"  # size, header included: 12 + 2
            "00"  # reserved
            "01"  # reserved nibble, track: command
            "0102"  # channel
            "00000000"  # reserved
        )
        + b"xy"
    )


def test_connection_start_as_a_broker_sends_it() -> None:
    """connection.start with server-properties {"product": "qpidd"} (a str16), mechanisms PLAIN
    and ANONYMOUS, locales en_US, built octet by octet from the layout rules."""
    properties = (
        "00000001"  # count: one entry
        "07"
        + b"product".hex()  # key: str8
        + "95"  # type code: str16
        + "0005"
        + b"qpidd".hex()
    )
    mechanisms = "95000000020005" + b"PLAIN".hex() + "0009" + b"ANONYMOUS".hex()
    locales = "95000000010005" + b"en_US".hex()
    payload = (
        "01"  # class: connection
        "01"  # control: start
        "0700"  # packing flags: fields 0, 1, 2 present (bits 0-2 of the first octet)
        + f"{len(properties) // 2:08x}"
        + properties  # server-properties: map, 4-octet size
        + f"{len(mechanisms) // 2:08x}"
        + mechanisms  # mechanisms: array of str16
        + f"{len(locales) // 2:08x}"
        + locales  # locales: array of str16
    )
    frame = f"0f00{12 + len(payload) // 2:04x}0000000000000000" + payload  # control track 0
    control = codec.control(
        "connection.start",
        server_properties={"product": "qpidd"},
        mechanisms=["PLAIN", "ANONYMOUS"],
        locales=["en_US"],
    )
    assert codec.encode(control).hex() == frame
    assert codec.decode(bytes.fromhex(frame)) == [control]


def test_message_transfer_with_header_and_body() -> None:
    """Three segments, each one frame: the command (first-segment), its header, its body
    (last-segment); every frame on the command track."""
    command = codec.command(
        "message.transfer",
        {"destination": "q", "accept-mode": 1, "acquire-mode": 0},
        channel=1,
        sync=True,
        header=[codec.struct("message.delivery-properties", priority=4, delivery_mode=2)],
        body=b"hi",
    )
    arguments = (
        "0401"  # class message, command transfer
        "0101"  # session header: size 1, flags: sync
        "0700"  # packing flags: destination, accept-mode, acquire-mode
        "0171"  # destination: str8 "q"
        "01"  # accept-mode: none
        "00"  # acquire-mode: pre-acquired
    )
    entry = (
        "00000006"  # struct32 size
        "0401"  # class message, struct delivery-properties
        "1800"  # packing flags: priority (field 3), delivery-mode (field 4)
        "04"  # priority: medium
        "02"  # delivery-mode: persistent
    )
    assert (
        codec.encode(command).hex()
        == (
            "0b"
            "01"
            "0016"
            "00"
            "01"
            "0001"
            "00000000" + arguments + "03"  # first-segment, first and last frame
            "02"
            "0016"
            "00"
            "01"
            "0001"
            "00000000"  # header: no segment flag
             + entry + "07"
            "03"
            "000e"
            "00"
            "01"
            "0001"
            "00000000"  # body: last-segment
             + b"hi".hex()
        )
    )


def test_packing_flags_of_fields_past_the_eighth_go_in_the_second_octet() -> None:
    # resume-ttl is delivery-properties' twelfth field: bit 3 of the second flag octet
    value = codec.struct("message.delivery-properties", priority=0, delivery_mode=1, resume_ttl=5)
    assert codec.encode_struct(value).hex() == ("0000000e0401180800010000000000000005")


def test_session_header_and_bit_fields_are_flags_alone() -> None:
    # the session header: size 1, then its flags octet (sync, bit 0)
    sync = codec.encoder.struct(types.session_header, {"sync": True})
    assert sync == b"\x01\x01"
    assert codec.encoder.struct(types.session_header, {}) == b"\x01\x00"
    # session.flush: three bit fields, no octets after the flags
    assert codec.encoder.control("session.flush", {"confirmed": True}) == b"\x02\x0c\x02\x00"


def test_sized_struct_xid() -> None:
    # dtx.xid: a 2-octet size, no code, 2 flag octets, format, then two vbin8
    xid = codec.struct("dtx.xid", format=0, global_id=b"gid", branch_id=b"bid")
    assert codec.encode_struct(xid).hex() == "000e0700000000000367696403626964"


@pytest.mark.parametrize(
    ("value", "type_name", "wire"),
    [
        (SequenceSet([(1, 3), (7, 7)]), "sequence-set", "001000000001000000030000000700000007"),
        (SequenceSet([(0xFFFFFFFE, 1)]), "sequence-set", "0008fffffffe00000001"),
        (ByteRanges([(0, 9)]), "byte-ranges", "001000000000000000000000000000000009"),
        ({"k": UInt8(1)}, "map", "0000000800000001016b0201"),
        ([Str8("a"), None], "list", "0000000800000002850161f0"),
        (Array("uint16", (1, 2)), "array", "00000009120000000200010002"),
        (Dec32(2, -1), "dec32", "02ffffffff"),
        (uuid.UUID(int=1), "uuid", "00" * 15 + "01"),
        ("é", "str16", "0002c3a9"),
        ("é", "str8-utf16", "0200e9"),
        ("€", "str8-latin", "01a4"),
        ("x", "char-utf32", "00000078"),
        ("€", "char", "a4"),
    ],
)
def test_value_layouts(value: Any, type_name: str, wire: str) -> None:
    assert codec.encode_value(value, type_name).hex() == wire
    assert codec.decode_value(bytes.fromhex(wire), type_name) == value


# -- the streaming reader ------------------------------------------------------------------------


def _stream() -> tuple[bytes, list[Any]]:
    items: list[Any] = [
        codec.control("connection.tune", channel_max=9, max_frame_size=4096),
        codec.command("queue.declare", {"queue": "q", "durable": True}, channel=2, sync=True),
        codec.command(
            "message.transfer",
            {"destination": "", "accept-mode": 0, "acquire-mode": 0},
            channel=2,
            header=[codec.struct("message.message-properties", content_length=99)],
            body=bytes(range(99)),
        ),
        codec.control("session.attach", channel=5, name=b"s", force=True),
    ]
    data = Header().encode() + b"".join(codec.encode(item, 40) for item in items)
    return data, [Header(), *items]


def test_the_reader_gives_the_same_for_chunks_of_every_size() -> None:
    data, expected = _stream()
    for size in range(1, len(data) + 1):
        reader = codec.reader()
        found = []
        for at in range(0, len(data), size):
            found += reader.feed(data[at : at + size])
        reader.close()
        assert found == expected, size


def test_interleaved_channels_and_tracks_assemble_apart() -> None:
    transfer = codec.command(
        "message.transfer", {"accept-mode": 0, "acquire-mode": 0}, channel=1, body=b"z" * 50
    )
    control = codec.control("session.flush", channel=1, completed=True)
    other = codec.command("tx.select", channel=7)
    frames = codec.frames(transfer, 20)
    # a control (control track) and a command of another channel between a command's frames
    mixed = frames[:2] + codec.frames(control) + codec.frames(other) + frames[2:]
    data = b"".join(f.encode() for f in mixed)
    assert codec.decode(data) == [control, other, transfer]


def test_the_reader_refuses_frames_over_the_agreed_maximum() -> None:
    reader = codec.reader(expect_header=False)
    reader.max_frame_size = 4096
    frames = codec.frames(codec.command("message.transfer", MODES, body=b"x" * 5000))
    with pytest.raises(FramingError) as e:
        reader.feed(b"".join(f.encode() for f in frames))
    assert e.value.offset == frames[0].size + 2  # the body's frame, its size field


# -- decode errors: typed, with their offset in the stream and their category ------------------

TUNE = codec.encode_control("connection.tune", channel_max=1)  # 0f 00 0010 ... 0105 0100 0001
DECLARE = codec.encode_command("queue.declare", {"queue": "ab"})  # ... 0801 0100 0100 026162


def _patched(data: bytes, at: int, octets: bytes) -> bytes:
    return data[:at] + octets + data[at + len(octets) :]


def _control(payload: bytes) -> bytes:
    return raw.frame(payload, type=0, track=0)


def _command(payload: bytes) -> bytes:
    return raw.frame(payload, type=1, track=1)


ERRORS: list[tuple[str, bytes, type[RemoteProtocolError], int, str]] = [
    ("size under 12", raw.frame(size=11), FramingError, 2, "framing-error"),
    ("version 1", raw.frame(b"xx", version=1), FramingError, 0, "framing-error"),
    ("reserved bits", raw.frame(b"xx", flags=0x1F), FramingError, 0, "framing-error"),
    ("segment type 4", raw.frame(b"xx", type=4), FramingError, 1, "framing-error"),
    ("reserved octet 4", raw.frame(b"xx", reserved=(1, 0, 0)), FramingError, 4, "framing-error"),
    ("beside the track", raw.frame(b"xx", reserved=(0, 1, 0)), FramingError, 5, "framing-error"),
    ("track 2", raw.frame(b"xx", track=2), FramingError, 5, "framing-error"),
    ("reserved tail", raw.frame(b"xx", reserved=(0, 0, 1)), FramingError, 8, "framing-error"),
    ("control on track 1", raw.frame(TUNE[12:], track=1), FramingError, 5, "framing-error"),
    ("unfinished frame", TUNE[:-1], FramingError, len(TUNE) - 1, "framing-error"),
    # a control's faults close the connection
    ("flag for no field", _patched(TUNE, 14, b"\x10"), DecodeError, 14, "framing-error"),
    ("unknown control", _control(raw.control(1, 0x7F)), UnknownCodeError, 12, "framing-error"),
    ("control code cut", _control(b"\x01"), DecodeError, 12, "framing-error"),
    ("octets after a control", _control(TUNE[12:] + b"\x00"), DecodeError, 18, "framing-error"),
    ("uint16 cut short", _control(TUNE[12:-1]), DecodeError, 16, "framing-error"),
    # a command's are execution exceptions
    ("unknown command", _command(raw.command(8, 0x7F)), UnknownCodeError, 12, "not-implemented"),
    ("unknown class", _command(raw.command(0x7F, 1)), UnknownCodeError, 12, "not-implemented"),
    ("str8 past its end", _patched(DECLARE, 18, b"\x09"), DecodeError, 18, "illegal-argument"),
    ("not UTF-8", _patched(DECLARE, 20, b"\xff"), DecodeError, 20, "illegal-argument"),
    (
        "required left out",
        _command(raw.command(8, 1, b"\x00\x00")),
        DecodeError,
        16,
        "illegal-argument",
    ),
    # the session header's size says 3: its one flag octet ends before it
    ("session header size", _patched(DECLARE, 14, b"\x03"), DecodeError, 16, "illegal-argument"),
]


def _command_with(name: str, fields: bytes) -> bytes:
    layout = types.layout(name)
    assert layout.code is not None
    return _command(raw.command(layout.class_code, layout.code, fields))


ERRORS += [
    (
        "enum out of its choices",  # message.flow's unit: credit-unit is 0 or 1
        _command_with("message.flow", raw.flags([1]) + b"\x07"),
        DecodeError,
        18,
        "illegal-argument",
    ),
    (
        "sequence-set size not of pairs",
        _command_with("message.accept", raw.flags([0]) + raw.sequence_set([(1, 2)], size=7)),
        DecodeError,
        18,
        "illegal-argument",
    ),
    (
        "sequence range backwards",
        _command_with("message.accept", raw.flags([0]) + raw.sequence_set([(5, 5), (10, 5)])),
        DecodeError,
        28,
        "illegal-argument",
    ),
    (
        "map count lies",
        _command_with("queue.declare", raw.flags([0, 6]) + b"\x01q" + raw.map_of([], count=3)),
        DecodeError,
        20,
        "illegal-argument",
    ),
    (
        "map key twice",
        _command_with(
            "queue.declare",
            raw.flags([0, 6]) + b"\x01q" + raw.map_of([raw.entry("k", 0xF0, b"")] * 2),
        ),
        DecodeError,
        31,
        "illegal-argument",
    ),
    (
        "reserved type code",
        _command_with(
            "queue.declare", raw.flags([0, 6]) + b"\x01q" + raw.map_of([raw.entry("k", 0xB0, b"")])
        ),
        DecodeError,
        30,
        "illegal-argument",
    ),
    (
        "boolean of 2",
        _command_with(
            "queue.declare",
            raw.flags([0, 6]) + b"\x01q" + raw.map_of([raw.entry("k", 0x08, b"\x02")]),
        ),
        DecodeError,
        31,
        "illegal-argument",
    ),
    (
        "array count lies",
        _command_with(
            "queue.declare",
            raw.flags([0, 6])
            + b"\x01q"
            + raw.map_of([raw.entry("k", 0xAA, raw.array_of(0x12, [b"\0\1"], count=5))]),
        ),
        DecodeError,
        31,
        "illegal-argument",
    ),
    (
        "struct size lies",
        _command_with("dtx.forget", raw.flags([0]) + raw.struct(b"\x00\x00", size_width=2, size=9)),
        DecodeError,
        18,
        "illegal-argument",
    ),
    (
        "struct32 of no struct",
        _command_with(
            "execution.result", raw.flags([0, 1]) + b"\0\0\0\1" + raw.struct32(4, 0x7F, b"\0\0")
        ),
        UnknownCodeError,
        26,
        "not-implemented",
    ),
    (
        "octets after a command",
        _command_with("tx.select", b"\x00\x00\x00"),
        DecodeError,
        18,
        "illegal-argument",
    ),
]


def _nested(depth: int) -> bytes:
    value = raw.list_of([])
    for _ in range(depth):
        value = raw.list_of([raw.typed(0xA9, value)])
    return value


ERRORS.append(
    (
        "nested too deep",
        _command_with(
            "queue.declare",
            raw.flags([0, 6])
            + b"\x01q"
            + raw.map_of([raw.entry("k", 0xA9, _nested(MAX_DEPTH + 2))]),
        ),
        DecodeError,
        31 + 9 * (MAX_DEPTH - 1),  # each list: 4 octets of size, 4 of count, 1 type code
        "illegal-argument",
    )
)


@pytest.mark.parametrize(
    ("data", "error", "offset", "category"),
    [pytest.param(*case[1:], id=case[0]) for case in ERRORS],
)
def test_decode_errors_are_typed_with_their_offset(
    data: bytes, error: type[RemoteProtocolError], offset: int, category: str
) -> None:
    with pytest.raises(error) as e:
        codec.decode(data)
    assert type(e.value) is error
    assert (e.value.offset, e.value.category) == (offset, category), e.value
    assert category in CONNECTION_CATEGORIES | EXECUTION_CATEGORIES


def test_error_offsets_count_from_the_stream_across_frames() -> None:
    """A fault in a segment split over frames is placed in the frame that holds it."""
    good = codec.command("queue.declare", {"queue": "q" * 30}, channel=1)
    data = bytearray(codec.encode(good, 20))  # 8 octets of payload a frame
    data[-3] = 0xFF  # the queue name's third octet from the end, in the last frame
    with pytest.raises(DecodeError) as e:
        codec.decode(bytes(data))
    assert e.value.offset == len(data) - 3


def test_a_header_where_a_frame_belongs_and_a_frame_where_a_header_belongs() -> None:
    with pytest.raises(FramingError) as e:
        codec.reader().feed(b"AMQX")
    assert e.value.offset == 0
    with pytest.raises(FramingError):
        codec.reader().feed(TUNE)


# -- the assembler's refusals ----------------------------------------------------------------


def _frames(*specs: tuple[int, int, int, bytes]) -> bytes:
    """Frames of (flags, type, track, payload) on channel 0."""
    return b"".join(raw.frame(p, flags=f, type=t, track=k) for f, t, k, p in specs)


CMD = codec.encoder.command("tx.select", {})
XFER = codec.encoder.command("message.transfer", {"accept-mode": 0, "acquire-mode": 0})
BODY, HEAD = 3, 2

ASSEMBLY_ERRORS: list[tuple[str, bytes, type[RemoteProtocolError], str]] = [
    ("continuation with no first frame", _frames((0x0D, 1, 1, CMD)), FramingError, "framing-error"),
    (
        "a first frame inside a segment",
        _frames((0x0E, 1, 1, CMD[:2]), (0x0E, 1, 1, CMD)),
        FramingError,
        "framing-error",
    ),
    (
        "segment flags change within a segment",
        _frames((0x0E, 1, 1, CMD[:2]), (0x09, 1, 1, CMD[2:])),
        FramingError,
        "framing-error",
    ),
    ("a body with no command", _frames((0x07, BODY, 1, b"x")), AssemblyError, "command-invalid"),
    ("a header with no command", _frames((0x07, HEAD, 1, b"")), AssemblyError, "command-invalid"),
    (
        "a new command before the last segment",
        _frames((0x0B, 1, 1, XFER), (0x0F, 1, 1, CMD)),
        AssemblyError,
        "command-invalid",
    ),
    (
        "a header after the body",
        _frames((0x0B, 1, 1, XFER), (0x03, BODY, 1, b"x"), (0x07, HEAD, 1, b"")),
        AssemblyError,
        "command-invalid",
    ),
    (
        "a body with first-segment",
        _frames((0x0B, 1, 1, XFER), (0x0F, BODY, 1, b"x")),
        AssemblyError,
        "command-invalid",
    ),
    (
        "a command without first-segment",
        _frames((0x07, 1, 1, CMD)),
        AssemblyError,
        "command-invalid",
    ),
    (
        "a control that is not a whole assembly",
        _frames((0x0B, 0, 0, TUNE[12:])),
        AssemblyError,
        "framing-error",
    ),
    (
        "a body after a command that takes none",
        _frames((0x0B, 1, 1, CMD), (0x07, BODY, 1, b"x")),
        AssemblyError,
        "command-invalid",
    ),
    (
        "a required header left out",
        _frames(
            (0x0B, 1, 1, codec.encoder.command("stream.deliver", {"queue": "q"})),
            (0x07, BODY, 1, b"x"),
        ),
        AssemblyError,
        "command-invalid",
    ),
    (
        "a header entry the command does not take",
        _frames(
            (0x0B, 1, 1, XFER),
            (0x07, HEAD, 1, codec.encoder.header([Struct("file.file-properties")])),
        ),
        DecodeError,
        "illegal-argument",
    ),
]


@pytest.mark.parametrize(
    ("data", "error", "category"), [pytest.param(*c[1:], id=c[0]) for c in ASSEMBLY_ERRORS]
)
def test_the_assembler_refuses_contradictions(
    data: bytes, error: type[RemoteProtocolError], category: str
) -> None:
    with pytest.raises(error) as e:
        codec.decode(data)
    assert type(e.value) is error
    assert e.value.category == category
    assert 0 <= e.value.offset < len(data)


def test_a_stream_that_ends_inside_a_command_is_refused() -> None:
    frames = codec.frames(codec.command("message.transfer", MODES, body=b"abc"))
    with pytest.raises(FramingError):
        codec.decode(b"".join(f.encode() for f in frames[:-1]))


# -- the checked encoder refuses, the unchecked one sends -------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: codec.encode_control("connection.tune", channel_max=70000),
        lambda: codec.encode_control("connection.tune", no_such_field=1),
        lambda: codec.encode_control("connection.close", reply_code=999),
        lambda: codec.encode_control("connection.close"),  # reply-code is required
        lambda: codec.encode_control("connection.open", virtual_host="v" * 256),
        lambda: codec.encode_control("session.flush", completed=1),
        lambda: codec.encode_command("message.accept", {"transfers": [(5, 0x90000000)]}),
        lambda: codec.encode_command("queue.declare", {"queue": "q"}, body=b"x"),
        lambda: codec.encode_command("stream.deliver", {"queue": "q"}),  # header required
        lambda: codec.encode_command("message.transfer", header=[Struct("file.file-properties")]),
        lambda: codec.encode_command("dtx.forget", {"xid": Struct("message.reply-to")}),
        lambda: codec.encode_value(object()),
        lambda: codec.encode_value("€€", "char"),
        lambda: codec.encode_value(Struct("dtx.xid"), "struct32"),  # xid has no code
        lambda: codec.encode_value(Array("uint8", (UInt16(1),)), "array"),
        lambda: codec.encode(codec.control("connection.heartbeat"), 12),
    ],
)
def test_the_checked_encoder_refuses(build: Any) -> None:
    with pytest.raises(LocalProtocolError):
        build()


def test_the_unchecked_encoder_sends_what_the_checked_one_refuses() -> None:
    close = codec.encoder.control("connection.close", {"reply-code": 999}, check=False)
    control = codec.decode(_control(close), check=False)[0]
    assert control == Control("connection.close", {"reply-code": 999})
    with pytest.raises(DecodeError):
        codec.decode(_control(close))
    accept = codec.encoder.command("message.accept", {"transfers": [(5, 0x90000000)]}, check=False)
    assert codec.decode(_command(accept), check=False)[0]["transfers"] == SequenceSet(
        [(5, 0x90000000)]
    )
    tune = codec.encoder.control("connection.tune", {"channel-max": 0x10001}, check=False)
    assert codec.decode(_control(tune))[0]["channel-max"] == 1  # cut to its 16 bits
    text = codec.encoder.command("queue.declare", {"queue": b"\xff"}, check=False)
    assert codec.decode(_command(text), check=False)[0]["queue"] == b"\xff"


def test_enum_fields_take_their_choice_names() -> None:
    by_name = codec.encode_control("connection.close", reply_code="framing-error")
    assert by_name == codec.encode_control("connection.close", reply_code=501)


def test_unknown_type_codes_of_a_known_width_are_stepped_over() -> None:
    item = Opaque(0x93, b"\x00\x02ab")  # 0x90-0x9f: two octets of size
    value = {"a": item, "b": Opaque(0x2F, b"\x01\x02\x03\x04")}
    assert codec.decode_value(codec.encode_value(value, "map"), "map") == value
    array = Array("0x0f", (Opaque(0x0F, b"\x01"), Opaque(0x0F, b"\x02")))
    assert codec.decode_value(codec.encode_value(array, "array"), "array") == array


# -- the unchecked builder ------------------------------------------------------------------


def test_raw_frames_equal_the_codec_s_when_they_tell_the_truth() -> None:
    command = codec.command(
        "message.transfer", {"destination": "d", **MODES}, channel=4, body=b"x" * 30
    )
    checked = codec.encode(command, 20)
    segments = codec.segments(command)
    built = b"".join(
        b"".join(
            raw.segment_frames(
                payload,
                type=kind,
                track=1,
                channel=4,
                max_frame_size=20,
                first=index == 0,
                last=index == len(segments) - 1,
            )
        )
        for index, (kind, payload) in enumerate(segments)
    )
    assert built == checked
    assert raw.header() == Header().encode()
    assert raw.flags([0, 9]) == b"\x01\x02"


def test_raw_builds_what_the_checked_decoder_refuses() -> None:
    # packing flags that claim a field not sent
    with pytest.raises(DecodeError):
        codec.decode(_command_with("queue.declare", raw.flags([0, 1]) + b"\x01q"))
    # a body after a command that takes none, sent as the last segment
    body = raw.segment_frames(b"x", type=BODY, track=1, first=False, last=True)
    first = raw.segment_frames(CMD, type=1, track=1, first=True, last=False)
    with pytest.raises(AssemblyError):
        codec.decode(b"".join(first + body))
    # a lying size in a str8
    assert raw.sized(b"ab", 1, size=9) == b"\x09ab"
    # lengths that lie in a frame are refused by the reader
    with pytest.raises(FramingError):
        codec.decode(raw.frame(b"abc", size=0xFFFF) + b"\x00" * 10)


def test_equality_ignores_fields_left_out() -> None:
    assert Struct("session.header", {"sync": False}) == Struct("session.header", {})
    assert Control("x", {"a": None}, 1) == Control("x", {}, 1)
    assert Control("x", {}, 1) != Control("x", {}, 2)
    assert Command("y", header=()) != Command("y")
    assert 5 in SequenceSet([(0xFFFFFFF0, 10)]) and 11 not in SequenceSet([(0xFFFFFFF0, 10)])
    assert codec.decode_value(codec.encode_value(UInt16(3))) == 3


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(COMMANDS + CONTROLS),
    data=st.data(),
    check=st.booleans(),
)
def test_broken_bytes_raise_only_remote_protocol_errors(
    name: str, data: st.DataObject, check: bool
) -> None:
    """A valid control or command with octets overwritten, cut or added: read, or refused with
    a RemoteProtocolError, never another exception."""
    item = data.draw(
        commands_of(name)
        if name in COMMANDS
        else fields_of(types.layout(name)).map(lambda f: Control(name, f))
    )
    wire = bytearray(codec.encode(item, data.draw(st.sampled_from([0xFFFF, 30]))))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(wire) - 1))
        wire[at] = data.draw(st.integers(0, 255))
    wire = wire[: data.draw(st.integers(0, len(wire)))] + data.draw(st.binary(max_size=4))
    try:
        codec.decode(bytes(wire), check=check)
    except RemoteProtocolError as e:
        assert 0 <= e.offset <= len(wire)
