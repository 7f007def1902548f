"""Wireshark's AMQP dissector (tshark): for every 0-10 control and command the codec encodes,
tshark names the same class and method and shows the same field values.

The corpus is drawn here from a seeded ``random.Random``
(the same on every run): every control and command :data:`EXAMPLES` times, each field present
half of the time (required ones too: the frames are encoded unchecked, tshark does not mind),
integers at their bounds a third of the time, text with and without non-ASCII characters, maps
of values of the types whose width tshark knows, arrays of str16, sequence-sets; commands with
and without sync, header entries and bodies; and an execution.result carrying each coded struct
:data:`EXAMPLES` times. tshark dissects frame by frame (it joins neither frames into segments
nor segments into commands), so each segment goes in one frame and each frame in one TCP
packet; tshark starts slowly, so the whole corpus goes into one capture (``text2pcap``) that it
reads once (``-T json``). Compared in each packet:

* the frame header: ``amqp.format`` (the version), ``amqp.frame-position`` (the four flags),
  ``amqp.type``, ``amqp.length``, ``amqp.track-number``, ``amqp.channel``;
* ``amqp.class`` and the class's method field (``amqp.<class>.method``) are our codes; a
  command's session header (``amqp.session.header``, ``.sync``) is ours;
* the packing flags (``amqp.struct.packing``) are our octets;
* the fields tshark shows are exactly ours: a bit always (``1`` or ``0``), any other field
  exactly when we sent it, under tshark's name (``amqp.<class>.<method>.<field>`` unless
  :data:`RENAMES` says otherwise). Integers by value (64-bit tags are shown in hex), str8 and
  str16 as tshark 4.0 reads text (as ASCII: an octet over 0x7f is U+FFFD), binary as
  colon-separated hex, uuids, datetimes as tshark's UTC date; a map by its number of entries
  (the JSON keeps no entry values); an array by its type code, count and str16 items; a
  sequence-set by its presence (tshark shows no ranges); a struct-typed field (xid) and a
  struct32 (execution.result's value, a header entry) field by field, with its code and size;
* execution.exception's command-code is shown as a method of the class its class-code names;
  for a class tshark does not know, or none sent, not at all, with an "Invalid class code" note;
* a header segment: each entry's code, size and fields; a body segment: its presence.

tshark does not show the packing flags of dtx.select and dtx.recover (which have no arguments)
nor of exchange-bound-result (whose bits it shows); that is checked as such.

tshark 4.0's faults, each excluded narrowly and each required to be seen (:data:`FAULTS`, at
least :data:`AT_LEAST` times), so that the test fails, to be updated, once tshark is fixed:

* a tx command's code is read one octet late (from the session header's size, always 1), and
  its session header one octet late too;
* exchange.bind's, unbind's and bound's binding-key shows as the one character whose code is
  its size octet;
* stream.qos's consume-rate shows under prefetch-size's name (it is compared there);
* message.subscribe's arguments map is read 4 octets early, its size taken for its entry
  count: only its presence is compared, and a packet with a non-empty one may be malformed;
* in a struct32, dtx.xa-result's and dtx.recover-result's packing flags show as two octets of
  padding and their one field is read whether it was sent or not (past the struct when not:
  the packet may be malformed); none of dtx.get-timeout-result's fields is shown;
* a map value of type code 0xd0-0xdf or 0xf0-0xff (bin72, dec64, void, bit) is taken for 5
  octets whatever its width: the corpus's maps hold none.

The JSON cannot show the last fault nor what the subscribe map's fault does to its count:
:func:`test_tshark_faults_are_still_there` finds both in tshark's text (``-V``).

The counts of comparisons are checked, so that the test cannot pass by comparing nothing: each
control and command :data:`EXAMPLES` times, each field of each control, command and struct
(those tshark shows at all) at least :data:`AT_LEAST` times with a value sent, or its fault seen.
``test_tshark_registers_every_field_name_we_compare`` checks every name against tshark's own
list, and ``test_tshark_names_every_class_control_and_command_by_our_codes`` tshark's tables of
classes and methods against the model.

tshark and text2pcap must be installed (``make setup`` installs Debian's ``tshark``, which brings
``text2pcap`` in ``wireshark-common``): the tests fail, never skip, without them.
"""

from __future__ import annotations

import datetime
import functools
import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz import strategies as afs
from amqpfuzz.spec.amqp010.codec import (
    Array,
    Bit,
    Command,
    Control,
    Dec64,
    Frame,
    Header,
    SequenceSet,
    Str8,
    Struct,
    UInt8,
    UInt16,
    UInt32,
    codec_for,
)
from amqpfuzz.spec.amqp010.codec.types import FieldPlan, Layout, WireType
from amqpfuzz.strategies import Case
from tests.helpers.tshark import capture, dissect, run, tool

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

case_methods = functools.partial(afs.case_methods, protocol="0-10")
malformed_case_builder = functools.partial(afs.malformed_case_builder, protocol="0-10")
valid_case_builder = functools.partial(afs.valid_case_builder, protocol="0-10")

codec = codec_for()
spec = codec.spec
types = codec.types
CONTROLS = [c.qualified for c in spec.controls]
COMMANDS = [c.qualified for c in spec.commands]
EXAMPLES = 30  # of each control and command in the corpus
SEED = 20240610
AT_LEAST = 5  # comparisons of each field of each control and command, with a value sent

# -- tshark's names ---------------------------------------------------------------------------

ARGS = "amqp.method.arguments"
# tshark's name of a field, where it is not amqp.<class>.<method or struct>.<field>:
# (qualified name or "<class>.*", field) -> name
RENAMES: dict[tuple[str, str], str] = {
    ("connection.*", "server-properties"): f"{ARGS}.server_properties",
    ("connection.*", "client-properties"): f"{ARGS}.client_properties",
    ("connection.*", "mechanisms"): f"{ARGS}.mechanisms",
    ("connection.*", "locales"): f"{ARGS}.locales",
    ("connection.*", "mechanism"): f"{ARGS}.mechanism",
    ("connection.*", "response"): f"{ARGS}.response",
    ("connection.*", "locale"): f"{ARGS}.locale",
    ("connection.*", "challenge"): f"{ARGS}.challenge",
    ("connection.*", "channel-max"): f"{ARGS}.channel_max",
    ("connection.*", "max-frame-size"): f"{ARGS}.frame_max",
    ("connection.*", "heartbeat-min"): f"{ARGS}.heartbeat_min",
    ("connection.*", "heartbeat-max"): f"{ARGS}.heartbeat_max",
    ("connection.*", "heartbeat"): f"{ARGS}.heartbeat",
    ("connection.*", "virtual-host"): f"{ARGS}.virtual_host",
    ("connection.*", "capabilities"): f"{ARGS}.capabilities",
    ("connection.*", "insist"): f"{ARGS}.insist",
    ("connection.*", "known-hosts"): f"{ARGS}.known_hosts_bytes",
    ("connection.*", "host"): f"{ARGS}.host",
    ("connection.*", "reply-code"): f"{ARGS}.reply_code",
    ("connection.*", "reply-text"): f"{ARGS}.reply_text",
    ("session.*", "name"): "amqp.session.attach.name",
    ("session.*", "force"): "amqp.session.attach.force",
    ("session.*", "timeout"): "amqp.session.timeout",
    ("session.*", "commands"): "amqp.session.expected.commands",
    ("session.*", "fragments"): "amqp.session.expected.fragments",
    ("session.command-point", "command-id"): "amqp.session.command_point.command_id",
    ("session.command-point", "command-offset"): "amqp.session.command_point.command_offset",
    ("execution.*", "command-id"): "amqp.execution.command_id",
    ("execution.exception", "class-code"): "amqp.class",
    ("execution.result", "value"): "amqp.struct32",
    ("message.*", "transfers"): "amqp.message.accept.transfers",
    ("message.acquired", "transfers"): "amqp.message.acquired.transfers",
    ("message.*", "destination"): "amqp.message.destination",
    ("message.transfer", "destination"): "amqp.message.transfer.destination",
    ("message.*", "accept-mode"): "amqp.message.transfer.accept-mode",
    ("message.*", "acquire-mode"): "amqp.message.transfer.acquire-mode",
    ("message.*", "resume-id"): "amqp.message.resume.id",
    ("message.reject", "code"): "amqp.message.reject.reject-code",
    ("message.subscribe", "resume-ttl"): "amqp.message.subscribe.resume_ttl",
    ("message.set-flow-mode", "flow-mode"): "amqp.message.flow-mode",
    ("message.flow", "unit"): "amqp.message.flow.credit-unit",
    (
        "message.delivery-properties",
        "priority",
    ): "amqp.message.delivery-properties.delivery-priority",
    ("message.message-resume-result", "offset"): "amqp.message.resume-result.offset",
    ("message.reply-to", "exchange"): "amqp.message.message-properties.reply-to.exchange",
    ("message.reply-to", "routing-key"): "amqp.message.message-properties.reply-to.routing-key",
    ("exchange.exchange-query-result", "type"): "amqp.exchange.declare.type",
    ("queue.queue-query-result", "alternate-exchange"): "amqp.queue.declare.alternate-exchange",
    ("dtx.*", "xid"): "amqp.dtx.xid",
    ("exchange.*", "exchange"): "amqp.exchange.declare.exchange",
    ("exchange.query", "name"): "amqp.exchange.declare.exchange",
    ("exchange.*", "queue"): "amqp.exchange.bind.queue",
    ("exchange.*", "binding-key"): "amqp.exchange.bind.binding-key",
    ("exchange.*", "arguments"): "amqp.exchange.declare.arguments",
    ("queue.*", "queue"): "amqp.queue.declare.queue",
    ("queue.*", "arguments"): "amqp.queue.declare.arguments",
    ("file.*", "queue"): "amqp.queue.declare.queue",
    ("stream.*", "queue"): "amqp.queue.declare.queue",
    ("stream.deliver", "queue"): "amqp.stream.deliver.queue",
    ("file.*", "consumer-tag"): "amqp.file.consumer-tag",
    ("file.deliver", "consumer-tag"): "amqp.file.deliver.consumer-tag",
    ("stream.*", "consumer-tag"): "amqp.stream.consumer-tag",
    ("stream.deliver", "consumer-tag"): "amqp.stream.deliver.consumer-tag",
    ("file.*", "identifier"): "amqp.file.identifier",
    ("file.open-ok", "staged-size"): "amqp.file.open_ok.staged-size",
}


def field_key(owner: str, name: str) -> str:
    """tshark's name of field ``name`` of a control, command or struct."""
    cls, member = owner.split(".", 1)
    renamed = RENAMES.get((owner, name), RENAMES.get((f"{cls}.*", name)))
    return renamed or f"amqp.{cls}.{member}.{name}"


def method_key(cls: str) -> str:
    return f"amqp.{cls}.method"


# -- what we expect tshark to show ----------------------------------------------------------


def as_tshark_shows(text: str) -> str:
    """A string as tshark 4.0 shows a str8 or str16 field: read as ASCII, an octet over 0x7f
    is U+FFFD (``é``, two octets of UTF-8, shows as two)."""
    return "".join(c if c < "\x80" else "\ufffd" * len(c.encode()) for c in text)


def as_date(seconds: int) -> str:
    """A datetime as tshark shows an absolute time: ``Jan  1, 1970 00:00:07.000000000 UTC``."""
    when = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return f"{when:%b} {when.day:2d}, {when:%Y %H:%M:%S}.000000000 UTC"


def shown(t: WireType, value: Any) -> str:
    """Our value of a text, binary, uuid or datetime field as tshark's JSON writes it."""
    if t.kind == "text":
        return as_tshark_shows(value)
    if t.kind == "binary":
        return str(value.hex(":"))
    if t.name == "datetime":
        return as_date(value)
    return str(value)


def number(text: str) -> int:
    """An integer as tshark shows it: decimal, or hex (``0x...``) for some 64-bit fields."""
    return int(text, 16) if text.startswith("0x") else int(text)


# -- the corpus -----------------------------------------------------------------------------

TEXTS = ["", "a", "queue-1", "amq.direct", "é", "naïve café", "x" * 40, "\x01\x7f", "中文"]
MAP_VALUES: list[Any] = [
    1,
    -5,
    "s",
    Str8("t"),
    b"\x00\x01",
    UInt8(3),
    UInt16(4),
    UInt32(5),
    True,
    1.5,
]


def draw(rnd: random.Random, t: WireType) -> Any:
    """A value of type ``t`` for the corpus: boundaries a third of the time."""
    if t.kind == "integer":
        bits = 8 * t.width
        low, high = (
            (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.signed else (0, (1 << bits) - 1)
        )
        if t.name == "datetime":
            low, high = 0, 4102444800  # tshark shows a date: years 1970 to 2100
        return rnd.choice((low, high, rnd.randint(low, high)))
    if t.kind == "text":
        return rnd.choice(TEXTS)
    if t.kind == "binary":
        return rnd.randbytes(t.width if t.fixed else rnd.choice((0, 1, 5, 20)))
    if t.kind == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128))
    if t.kind == "map":
        return {f"k{i}": rnd.choice(MAP_VALUES) for i in range(rnd.choice((0, 1, 3)))}
    if t.kind == "array":
        return Array("str16", tuple(rnd.choice(TEXTS) for _ in range(rnd.choice((0, 1, 2)))))
    if t.kind == "sequence-set":
        ranges = []
        for _ in range(rnd.choice((0, 1, 3))):
            low = rnd.getrandbits(32)
            ranges.append((low, (low + rnd.randrange(100)) % 2**32))
        return SequenceSet(ranges)
    if t.kind == "struct32":
        coded = [s for s in types.layouts.values() if s.kind == "struct" and s.code is not None]
        return draw_struct(rnd, rnd.choice(coded))
    raise AssertionError(f"no draw for {t.name}")


def draw_fields(rnd: random.Random, layout: Layout) -> dict[str, Any]:
    """Each field present half of the time (required ones too: tshark does not mind)."""
    fields: dict[str, Any] = {}
    for f in layout.fields:
        if rnd.random() < 0.5:
            continue
        if f.is_bit:
            fields[f.name] = True
        elif f.struct is not None:
            fields[f.name] = draw_struct(rnd, types.layout(f.struct))
        elif f.choices:
            fields[f.name] = rnd.choice(sorted(f.choices.values()))
        else:
            assert f.type is not None
            fields[f.name] = draw(rnd, f.type)
    return fields


def draw_struct(rnd: random.Random, layout: Layout) -> Struct:
    return Struct(layout.name, draw_fields(rnd, layout))


def corpus(rnd: random.Random) -> list[Control | Command]:
    """Every control and command :data:`EXAMPLES` times, and an execution.result carrying each
    coded struct :data:`EXAMPLES` times."""
    items: list[Control | Command] = []
    for layout in types.layouts.values():
        if layout.kind == "struct" and layout.code is not None:
            for _ in range(EXAMPLES):
                fields = {"command-id": rnd.getrandbits(32), "value": draw_struct(rnd, layout)}
                items.append(Command("execution.result", fields, rnd.getrandbits(16)))
    for name in CONTROLS:
        for _ in range(EXAMPLES):
            items.append(Control(name, draw_fields(rnd, types.layout(name)), rnd.getrandbits(16)))
    for name in COMMANDS:
        declared = spec.command(name).segments
        for _ in range(EXAMPLES):
            header = body = None
            if declared is not None and declared.header and rnd.random() < 0.9:
                entries = [e for e in declared.entries if rnd.random() < 0.8]
                header = tuple(draw_struct(rnd, types.layout(e)) for e in entries)
            if declared is not None and declared.body and rnd.random() < 0.7:
                body = rnd.randbytes(rnd.choice((0, 1, 30)))
            fields = draw_fields(rnd, types.layout(name))
            sync = rnd.random() < 0.5
            items.append(Command(name, fields, rnd.getrandbits(16), sync, header, body))
    return items


# -- comparing one packet -------------------------------------------------------------------

# keys beside the fields, not fields: packing flags, an expert note, a struct32's code parts
AUXILIARY = ("amqp.struct.packing", "_ws.expert", "amqp.struct32.class", "amqp.struct32.struct")
# the dtx results tshark reads as if they had no packing flags (see the module's docstring)
DTX_PADDED = ("dtx.xa-result", "dtx.recover-result")
DTX_UNREAD = "dtx.get-timeout-result"
# structs whose packing flags tshark does not show (their fields it shows)
FLAGS_NOT_SHOWN = frozenset({"exchange.exchange-bound-result"})


def is_field_key(key: str) -> bool:
    return not (key in AUXILIARY or key.endswith((".size", "_tree", "_size")))


def items_of(node: Any) -> list[Any]:
    """A JSON value tshark gives once as itself and twice or more as a list."""
    return node if isinstance(node, list) else [node]


class Packet:
    """One packet's comparison: the counts it adds, the faults it saw, and whether a fault
    allows tshark to have marked it malformed."""

    def __init__(self, counts: Counter[str], faults: Counter[str]) -> None:
        self.counts, self.faults = counts, faults
        self.may_be_malformed = False


def compare_frame(frame: Frame, layer: dict[str, Any], packet: Packet) -> None:
    """The frame header: format (version), flags, segment type, size, track, channel."""
    assert layer["amqp.format"] == "0"
    assert layer["amqp.frame-position"] == str(frame.flags)
    assert layer["amqp.type"] == str(frame.type)
    assert layer["amqp.length"] == str(frame.size)
    assert layer["amqp.track-number"] == str(frame.track)
    assert layer["amqp.channel"] == str(frame.channel)
    packet.counts["frame header"] += 1


def flags_of(layout: Layout, fields: dict[str, Any]) -> bytes:
    bits = 0
    for f in layout.fields:
        if fields.get(f.name) is not None and fields.get(f.name) is not False:
            bits |= 1 << f.index
    return bits.to_bytes(layout.pack, "little")


def compare_fields(
    owner: str, fields: dict[str, Any], args: dict[str, Any], packet: Packet
) -> None:
    """Our fields of a control, command or struct against what tshark shows of them: a bit
    always (set or not), every other field exactly when we sent it."""
    layout = types.layout(owner)
    if owner in FLAGS_NOT_SHOWN:
        assert "amqp.struct.packing" not in args, owner
    elif layout.pack:
        assert args.get("amqp.struct.packing") == "0x" + flags_of(layout, fields).hex(), owner
    args = dict(args)
    if owner == "stream.qos":
        consume_rate(fields, args, packet)
    expected: set[str] = set()
    for f in layout.fields:
        key = field_key(owner, f.name)
        value = fields.get(f.name)
        label = f"{owner}.{f.name}"
        if f.is_bit:
            expected.add(key)
            assert args.get(key) == ("1" if value else "0"), f"{label}: {args.get(key)!r}"
            packet.counts[label] += bool(value)
            continue
        if (owner, f.name) == ("stream.qos", "consume-rate"):
            continue  # compared by consume_rate
        if (owner, f.name) == ("execution.exception", "command-code"):
            key = command_code_key(fields, args, packet)
        if value is None or key is None:
            continue
        expected.add(key)
        assert key in args, f"{label} = {value!r}: tshark shows no {key} in {sorted(args)}"
        if (owner, f.name) in FAULTY:
            FAULTY[owner, f.name](value, args[key], packet)
            packet.counts[f"{label} (tshark fault)"] += 1
            continue
        compare_value(owner, f, value, args, key, packet)
        packet.counts[label] += 1
    shown_keys = {k for k in args if is_field_key(k)}
    assert shown_keys == expected, (
        f"{owner}: tshark shows {sorted(shown_keys)}, ours {sorted(expected)}"
    )


def compare_value(
    owner: str, f: FieldPlan, value: Any, args: dict[str, Any], key: str, packet: Packet
) -> None:
    label = f"{owner}.{f.name}"
    node = args[key]
    if f.struct is not None:
        compare_fields(f.struct, value.fields, node, packet)
        return
    t = f.type
    assert t is not None
    if t.kind == "integer" and t.name != "datetime":
        assert number(node) == value, f"{label}: tshark {node!r}, ours {value!r}"
    elif t.kind in ("text", "binary", "uuid") or t.name == "datetime":
        assert node == shown(t, value), f"{label}: tshark {node!r}, ours {value!r}"
    elif t.kind == "map":
        count = 0 if node == "" else len(items_of(node["amqp.field"]))
        assert count == len(value), f"{label}: tshark {node!r}, ours {value!r}"
    elif t.kind == "array":
        tree = args.get(key + "_tree", node)
        assert tree["amqp.array.element_count"] == str(len(value.items)), f"{label}: {tree!r}"
        assert tree["amqp.array.type"] == str(types.type(value.type).code)
        strings = items_of(tree["amqp.array.string"]) if value.items else []
        assert strings == list(value.items), f"{label}: tshark {strings!r}, ours {value!r}"
    elif t.kind == "sequence-set":
        assert node == "", f"{label}: {node!r}"
    elif t.kind == "struct32":
        compare_struct32(
            value, node, args[key.replace("amqp.struct32", "amqp.struct32_tree")], packet
        )
    else:
        raise AssertionError(f"{label}: no comparison for {t.name}")


def compare_struct32(value: Struct, code: str, tree: dict[str, Any], packet: Packet) -> None:
    """A struct32 (a command's result, a header entry): its code, then its fields."""
    layout = types.layout(value.name)
    assert number(code) == layout.class_code << 8 | (layout.code or 0), f"{value!r}: {code}"
    assert tree["amqp.struct32.class"] == str(layout.class_code)
    assert tree["amqp.struct32.struct"] == str(layout.code)
    if value.name in DTX_PADDED or value.name == DTX_UNREAD:
        dtx_result(value, tree, packet)
        return
    compare_fields(value.name, dict(value.fields), tree, packet)
    packet.counts[f"{value.name} (struct32)"] += 1


# -- tshark 4.0's faults, each excluded narrowly and required to be there ------------------


def binding_key(value: str, node: str, packet: Packet) -> None:
    """exchange.bind/unbind/bound's binding-key: tshark shows the one character whose code is
    the str8's size octet (it reads the size as the text)."""
    size = len(value.encode("utf-8"))
    assert node == chr(size).strip("\x00"), f"binding-key {value!r}: tshark {node!r}"
    packet.faults["binding-key shows its size octet"] += bool(size)


def subscribe_arguments(value: dict[str, Any], node: Any, packet: Packet) -> None:
    """message.subscribe's arguments: tshark reads the map 4 octets early (its size taken for
    its count), so that only its presence is compared (the fault itself:
    :func:`test_tshark_faults_are_still_there`); a packet it runs past may be malformed."""
    packet.may_be_malformed = bool(value)
    packet.faults["subscribe arguments read from the map's size"] += 1


FAULTY = {
    ("exchange.bind", "binding-key"): binding_key,
    ("exchange.unbind", "binding-key"): binding_key,
    ("exchange.bound", "binding-key"): binding_key,
    ("message.subscribe", "arguments"): subscribe_arguments,
}


def consume_rate(fields: dict[str, Any], args: dict[str, Any], packet: Packet) -> None:
    """stream.qos's consume-rate: tshark shows it under prefetch-size's name, after the
    prefetch-size if one was sent; compared there, and taken out of the way."""
    rate = fields.get("consume-rate")
    if rate is None:
        return
    key = field_key("stream.qos", "prefetch-size")
    values = items_of(args.pop(key))
    assert len(values) == 1 + (fields.get("prefetch-size") is not None), values
    assert number(values.pop()) == rate
    if values:
        args[key] = values[0]
    packet.faults["consume-rate shown as prefetch-size"] += 1
    packet.counts["stream.qos.consume-rate (tshark fault)"] += 1


def command_code_key(fields: dict[str, Any], args: dict[str, Any], packet: Packet) -> str | None:
    """execution.exception's command-code: tshark shows it as a method of the class that
    class-code names; for a class it does not know (or none), not at all, with an
    "Invalid class code" note. Not a fault: a code means nothing without its class."""
    names = {c.code: c.name for c in spec.classes}
    cls = fields.get("class-code")
    if cls in names:
        return method_key(names[cls])
    if fields.get("command-code") is not None:
        assert "Invalid class code" in args["_ws.expert"]["_ws.expert.message"]
        packet.counts["execution.exception.command-code (no class)"] += 1
    return None


def dtx_result(value: Struct, tree: dict[str, Any], packet: Packet) -> None:
    """dtx's results in a struct32: tshark shows xa-result's and recover-result's packing flags
    as two octets of padding and reads their one field whether it was sent or not (past the
    struct when not: the packet is malformed); it shows none of get-timeout-result's fields
    (not even its packing flags). Only what it does show of the field is compared."""
    layout = types.layout(value.name)
    fields = dict(value.fields)
    if value.name == DTX_UNREAD:
        assert set(tree) == {"amqp.struct32.class", "amqp.struct32.struct"}, tree
        packet.faults["dtx.get-timeout-result not read"] += 1
        return
    assert tree["amqp.struct32.padding"] == flags_of(layout, fields).hex(":"), tree
    packet.faults[f"{value.name} flags read as padding"] += 1
    field = layout.fields[0]
    if fields.get(field.name) is None:
        packet.may_be_malformed = True
        return
    if value.name == "dtx.xa-result":
        assert tree["amqp.dtx.xa-status"] == str(fields[field.name]), tree
    else:  # recover-result's in-doubt: an array, shown inline
        assert tree["amqp.array.element_count"] == str(len(fields[field.name].items)), tree
    packet.counts[f"{value.name}.{field.name}"] += 1


# -- comparing a packet ---------------------------------------------------------------------


def compare_item(
    item: Control | Command, frame: Frame, layer: dict[str, Any], packet: Packet
) -> None:
    """A control's or command's segment (one frame) against tshark's packet of it."""
    compare_frame(frame, layer, packet)
    layout = types.layout(item.name)
    cls = item.name.split(".")[0]
    assert layer["amqp.class"] == str(layout.class_code)
    packet.counts[f"{item.name} (code)"] += 1
    if cls == "tx" and isinstance(item, Command):
        # tshark reads a tx command's code one octet late (from the session header's size, 1)
        # and its session header one octet late too (our sync octet, then the first packing
        # flags octet); tx commands have no arguments, and it shows none
        assert layer[method_key(cls)] == "1"
        late = bytes((int(item.sync),)) + flags_of(layout, {})[:1]
        assert layer["amqp.session.header"] == "0x" + late.hex()
        assert ARGS not in layer
        packet.faults["tx code read from the session header"] += 1
        return
    assert layer[method_key(cls)] == str(layout.code), f"{item.name}: {layer[method_key(cls)]}"
    if isinstance(item, Command):
        assert layer["amqp.session.header"] == f"0x01{int(item.sync):02x}"
        assert layer["amqp.session.header.sync"] == str(int(item.sync))
    if ARGS not in layer:  # dtx.select and dtx.recover: no arguments, no packing flags shown
        assert not layout.fields, f"{item.name}: tshark shows no arguments"
        return
    compare_fields(item.name, dict(item.fields), layer[ARGS], packet)


def compare_header(
    entries: tuple[Struct, ...], frame: Frame, layer: dict[str, Any], packet: Packet
) -> None:
    """A header segment (one frame): its entries' codes, sizes and fields."""
    compare_frame(frame, layer, packet)
    codes = items_of(layer.get("amqp.struct32", []))
    trees = items_of(layer.get("amqp.struct32_tree", []))
    sizes = items_of(layer.get("amqp.struct32_size", []))
    assert len(codes) == len(trees) == len(sizes) == len(entries), layer
    for entry, code, tree, size in zip(entries, codes, trees, sizes, strict=True):
        assert int(size) == len(codec.encoder.struct32(entry, check=False)) - 4
        compare_struct32(entry, code, tree, packet)
    packet.counts["header segment"] += 1


def compare_body(frame: Frame, layer: dict[str, Any], packet: Packet) -> None:
    compare_frame(frame, layer, packet)
    assert layer["amqp.message-body"] == ""
    packet.counts["body segment"] += 1


# -- the corpus's packets -------------------------------------------------------------------


def packets_of(items: list[Control | Command]) -> list[tuple[Any, Frame, Control | Command]]:
    """Each segment of each item as one frame: (what it carries, the frame, the item); what it
    carries is the item for its control or command segment, its header entries, or its body."""
    found: list[tuple[Any, Frame, Control | Command]] = []
    for item in items:
        frames = codec.frames(item, check=False)  # required fields are left out too
        parts: list[Any] = [item]
        if isinstance(item, Command) and item.header is not None:
            parts.append(item.header)
        if isinstance(item, Command) and item.body is not None:
            parts.append(item.body)
        assert len(frames) == len(parts), f"{item!r}: one frame a segment"
        found += [(part, frame, item) for part, frame in zip(parts, frames, strict=True)]
    return found


def compared_fields() -> list[tuple[str, str]]:
    """Every (owner, field) the corpus compares: every field of every control and command, and
    of every struct that travels in a struct32, a header or a struct-typed field, but those
    tshark does not show at all (see the module's docstring)."""
    unread = {"session.header", "session.command-fragment", DTX_UNREAD}
    return [
        (layout.name, f.name)
        for layout in types.layouts.values()
        if layout.name not in unread
        for f in layout.fields
    ]


# -- the tests ------------------------------------------------------------------------------


def test_tshark_names_every_class_control_and_command_by_our_codes() -> None:
    """tshark's tables of 0-10 classes and methods (``tshark -G values``) are ours: every class
    by its code, every control and command by its class's method field and its code."""
    names: dict[str, dict[int, str]] = {}
    for line in run(tool("tshark"), "-G", "values").splitlines():
        parts = line.split("\t")
        if parts[0] == "V" and (parts[1] == "amqp.class" or parts[1] in METHOD_FIELDS):
            names.setdefault(parts[1], {})[int(parts[2])] = parts[3]
    assert {c: n.lower() for c, n in names.pop("amqp.class").items()} == {
        c.code: c.name for c in spec.classes
    }
    ours: dict[str, dict[int, str]] = {}
    for member in (*spec.controls, *spec.commands):
        ours.setdefault(method_key(member.class_name), {})[member.code] = member.qualified
    assert names == ours


METHOD_FIELDS = {method_key(c.name) for c in spec.classes}


def test_tshark_registers_every_field_name_we_compare() -> None:
    """Every name the comparison looks for is one of tshark's (``tshark -G fields``), so that
    :data:`RENAMES` cannot point at a field tshark does not have."""
    registered = set()
    for line in run(tool("tshark"), "-G", "fields").splitlines():
        parts = line.split("\t")
        if parts[0] == "F":
            registered.add(parts[2])
    wanted = {
        "amqp.format",
        "amqp.frame-position",
        "amqp.type",
        "amqp.length",
        "amqp.track-number",
        "amqp.channel",
        "amqp.class",
        "amqp.session.header",
        "amqp.session.header.sync",
        "amqp.struct.packing",
        "amqp.struct32",
        "amqp.struct32_size",
        "amqp.struct32.class",
        "amqp.struct32.struct",
        "amqp.struct32.padding",
        "amqp.array.type",
        "amqp.array.element_count",
        "amqp.array.string",
        "amqp.message-body",
        "amqp.dtx.xa-status",
        "amqp.field",
        *METHOD_FIELDS,
    }
    skipped = {("stream.qos", "consume-rate"), ("execution.exception", "command-code")}
    wanted |= {
        field_key(owner, name)
        for owner, name in compared_fields()
        if (owner, name) not in skipped and owner not in DTX_PADDED
    }
    assert wanted - registered == set()


def test_every_control_and_command_reads_the_same_in_tshark(tmp_path: Path) -> None:
    """A seeded corpus: every control and command :data:`EXAMPLES` times with drawn fields
    (each field present half of the time) on drawn channels, commands with and without sync,
    header entries and bodies; and an execution.result with each coded struct. Each segment
    goes in one frame, each frame in one packet: tshark shows each with our frame header, class
    and code, session header, packing flags and field values (see the module's docstring)."""
    items = corpus(random.Random(SEED))
    planned = packets_of(items)
    layers = dissect([Header().encode()] + [frame.encode() for _, frame, _ in planned], tmp_path)
    assert layers[0]["amqp"]["amqp.init.version_minor"] == "10"
    counts: Counter[str] = Counter()
    faults: Counter[str] = Counter()
    for (part, frame, item), packet in zip(planned, layers[1:], strict=True):
        layer = packet["amqp"]
        assert isinstance(layer, dict), f"one AMQP frame per packet, not {layer!r}"
        compared = Packet(counts, faults)
        if part is item:
            compare_item(item, frame, layer, compared)
        elif isinstance(part, tuple):
            compare_header(part, frame, layer, compared)
        else:
            compare_body(frame, layer, compared)
        malformed = "_ws.malformed" in packet
        assert malformed <= compared.may_be_malformed, f"tshark found {item!r} malformed"
    for name in CONTROLS + COMMANDS:
        extra = EXAMPLES * len(types.structs_by_code) if name == "execution.result" else 0
        assert counts[f"{name} (code)"] == EXAMPLES + extra, name
    for owner, name in compared_fields():
        label = f"{owner}.{name}"
        done = counts[label] + counts[f"{label} (tshark fault)"]
        if (owner, name) == ("execution.exception", "command-code"):
            done += counts[f"{label} (no class)"]
        assert done >= AT_LEAST, f"{label}: compared {done} times"
    assert counts["header segment"] >= EXAMPLES and counts["body segment"] >= EXAMPLES
    for fault in FAULTS:
        assert faults[fault] >= AT_LEAST, f"tshark fault {fault!r} seen {faults[fault]} times"
    assert set(faults) == set(FAULTS)


FAULTS = (
    "tx code read from the session header",
    "binding-key shows its size octet",
    "consume-rate shown as prefetch-size",
    "subscribe arguments read from the map's size",
    "dtx.xa-result flags read as padding",
    "dtx.recover-result flags read as padding",
    "dtx.get-timeout-result not read",
)


def test_tshark_faults_are_still_there(tmp_path: Path) -> None:
    """The two faults the JSON cannot show, checked in tshark's text (``-V``): a map read from
    its size (message.subscribe's arguments, whose entry count tshark gives as the map's
    size), and map values tshark takes for 5 octets whatever their type code says (void, bit,
    dec64, bin72: codes 0xd0-0xdf and 0xf0-0xff), which the corpus's maps leave out."""
    subscribe = codec.command("message.subscribe", {"arguments": {"a": UInt8(1), "b": UInt8(2)}})
    widths = [
        codec.command("exchange.declare", {"exchange": "x", "arguments": {"a": value}})
        for value in (None, Bit(), Dec64(1, 5))
    ]
    items = (subscribe, *widths)
    pcap = capture([Header().encode()] + [codec.encode(c, check=False) for c in items], tmp_path)
    shown = run(tool("tshark"), "-r", pcap, "-d", "tcp.port==5672,amqp", "-V", "-O", "amqp")
    frames = shown.split("Advanced Message Queuing Protocol")[2:]  # after the protocol header
    assert len(frames) == 4
    size = len(codec.encode_value(subscribe["arguments"], "map")) - 4
    assert f"Extended arguments ({size} entries)" in frames[0]  # ours has 2
    for frame in frames[1:]:
        assert "a (unimplemented type): (value field length: 5 bytes)" in frame


def test_tshark_reads_the_frames_the_strategies_generate(tmp_path: Path) -> None:
    """The 0-10 strategies' own output: three valid cases of every command a case may send,
    each segment in one frame (the command's, then its header and body), and the frame-header
    operators' frames. tshark reads each frame header as ours; each valid case's command with
    our class and code (the tx fault aside) and its sync bit; and in each broken frame the
    format version, segment type or track the operator set."""
    valid = valid_case_builder(prefix="amqpfuzz-t-")
    broken = malformed_case_builder(
        operators=["frame-version", "segment-type-unknown", "track-unknown"], prefix="amqpfuzz-t-"
    )
    rnd = random.Random(SEED)
    cases = [
        valid_case_builder(methods=[name], prefix="amqpfuzz-t-")(rnd.randbytes(512))
        for name in case_methods()
        for _ in range(3)
    ]
    cases += [valid(rnd.randbytes(512)) for _ in range(30)]
    wrong = [broken(rnd.randbytes(512)) for _ in range(30)]
    planned: list[tuple[Case, Frame, int]] = []
    for case in cases:
        frames = codec.decode_frames(case.render(5))
        planned += [(case, f, i) for i, f in enumerate(frames) if isinstance(f, Frame)]
    unchecked = codec.frame_reader(check=False)
    for case in wrong:
        (frame,) = unchecked.feed(case.render(5))
        planned.append((case, frame, 0))
    layers = dissect([Header().encode()] + [case.render(5) for case in cases + wrong], tmp_path)
    counts: Counter[str] = Counter()
    packets = iter(layers[1:])
    for case in cases + wrong:
        layer = next(packets)["amqp"]
        frames = layer if isinstance(layer, list) else [layer]
        mine = [(f, i) for c, f, i in planned if c is case]
        assert len(frames) == len(mine), case
        for shown, (frame, index) in zip(frames, mine, strict=True):
            assert shown["amqp.length"] == str(frame.size)
            assert shown["amqp.channel"] == "5"
            if case.operator is not None:
                version = frame.flags >> 6
                assert shown["amqp.format"] == str(version)
                assert shown["amqp.type"] == str(frame.type)
                assert shown["amqp.track-number"] == str(frame.track)
                counts[case.operator] += 1
                continue
            compare_frame(frame, shown, Packet(Counter(), Counter()))
            if index == 0:
                command = case.spec_ref
                cls = command.split(".")[0]
                layout = types.layout(command)
                assert shown["amqp.class"] == str(layout.class_code), command
                if cls != "tx":  # tshark reads a tx command's code one octet late (above)
                    assert shown[method_key(cls)] == str(layout.code), command
                    assert shown["amqp.session.header.sync"] == "1", command
                counts[command] += 1
    assert set(counts) >= set(case_methods())
    for name in ("frame-version", "segment-type-unknown", "track-unknown"):
        assert counts[name] >= 5, (name, counts[name])
