"""Wireshark's AMQP dissector (tshark): for every performative and SASL frame that our
strategies generate, tshark names the same performative and field values.

The frames are drawn the way :func:`amqpfuzz.strategies.composites` and
:func:`amqpfuzz.strategies.connection_frames_of` draw them (a 512-octet blob read through
:class:`Values` or :func:`connection_frames`), from blobs of a seeded ``random.Random`` so that
the corpus is the same on every run and covers every frame type many times. tshark starts slowly,
so the whole corpus goes into one capture (``text2pcap``: one TCP packet per protocol header or
frame) and tshark reads it once (``-T json``); each packet's ``amqp`` layer is then compared with
the frame we encoded:

* the frame header: ``amqp.length``, ``amqp.doff``, ``amqp.type``, ``amqp.channel``;
* the descriptor: ``amqp.performative`` (open..close) or ``amqp.sasl.method`` is our code;
* the arguments tshark shows are exactly our non-null fields, each under its name: a null field
  is one tshark leaves out;
* a field of a primitive type shows our value as tshark writes it: decimal integers, booleans
  ``0``/``1``, binary as colon-separated hex, strings and symbols as they are;
* an array (a ``multiple`` field) shows as many items as ours; tshark's JSON keeps no item
  values (they are only in PDML's display text);
* a map (``properties``, ``unsettled``, ``info``) is only checked to be there, for the same
  reason;
* a field of any type (``source``, ``target``, ``state``) shows under the name of the
  composite we sent (``amqp.delivery-state.accepted``, ``amqp.tx.coordinator``...), its own
  fields not compared;
* an ``error`` shows its ``condition`` and ``description`` as ours (``amqp.error.*``).

Field names: tshark's name is ``amqp.performative.arguments.`` (``amqp.sasl.`` for a SASL
frame) and our name in camelCase (``next-outgoing-id`` -> ``nextOutgoingId``), with the
exceptions in :data:`RENAMES`; ``test_tshark_registers_every_field_name_we_compare`` checks every
name against tshark's own list. Counts of the comparisons made are checked per frame type and
field, so that the comparison cannot pass by comparing nothing.

tshark 4.0's known faults, each excluded narrowly where it would fail the comparison:

* a string field is read as ASCII (``proto_tree_add_item(..., ENC_NA)`` in
  ``dissect_amqp_1_0_variable``), so every octet of a non-ASCII character's UTF-8 shows as
  U+FFFD: the expected text is made the same way (:func:`as_tshark_shows`), the value still
  compared;
* an empty binary inside a list, map or array fails an assertion in tshark ("tvbuff.c: failed
  assertion len > 0", a "dissector bug") and the rest of the frame is not dissected: for such a
  performative only the header and descriptor are compared, and tshark is required to report
  the bug (so that the exclusion fails, to be dropped, once tshark is fixed); in a transfer's
  message the fault comes after the performative, which is compared in full;
* tshark dissects each transfer frame's payload as whole message sections (it does not join the
  frames of a delivery), so the frames of a delivery split over transfers may be marked
  malformed: that is allowed where our decoder cannot read the payload as whole sections either,
  the performative still compared;
* ``received``'s ``section-offset`` (a ulong) is registered as an 8-bit field, so tshark adds a
  note and a malformed mark inside the state when it is sent in 8 octets; only the state's name
  is compared, so this needs no exclusion.

tshark and text2pcap must be installed (``make setup`` installs Debian's ``tshark``, which brings
``text2pcap`` in ``wireshark-common``): the tests fail, never skip, without them.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.spec.amqp10.codec import (
    SASL,
    Array,
    Composite,
    DecodeError,
    Described,
    Frame,
    Header,
    codec_for,
)
from amqpfuzz.spec.amqp10.codec.types import FieldInfo
from amqpfuzz.strategies.amqp10 import FAMILY
from amqpfuzz.strategies.amqp10.context import Context
from amqpfuzz.strategies.amqp10.valid import connection_frames
from amqpfuzz.strategies.amqp10.values import Values
from amqpfuzz.strategies.source import Source
from tests.helpers.tshark import dissect, run, tool

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

codec = codec_for()
FRAMES = tuple(
    n for n in codec.types.composites if codec.types.provides(n, ("frame", "sasl-frame"))
)
EXAMPLES = 120  # frames of each type in the corpus
# whole connections, a third each with SASL PLAIN, ANONYMOUS and none, half of them with frames
# of at most 512 octets (connection_frames_of's frame_max) so that more transfers are split
CONNECTIONS = 60
SEED = 20240601
AT_LEAST = 10  # comparisons of each field of each frame type with a value sent

# -- tshark's names -------------------------------------------------------------------------------

ARGUMENTS = "amqp.performative.arguments."
SASL_ARGUMENTS = "amqp.sasl."
# Where tshark's name is not the prefix and our name in camelCase: (frame or "*", field) -> name.
RENAMES = {
    ("*", "idle-time-out"): ARGUMENTS + "idleTimeout",
    ("*", "initial-delivery-count"): ARGUMENTS + "initDeliveryCount",
    ("*", "offered-capabilities"): "amqp.arguments.offeredCapabilities",
    ("sasl-mechanisms", "sasl-server-mechanisms"): SASL_ARGUMENTS + "mechanisms",
    ("sasl-init", "initial-response"): SASL_ARGUMENTS + "initResponse",
    ("sasl-init", "hostname"): ARGUMENTS + "hostname",  # open's field, reused
    ("sasl-outcome", "code"): SASL_ARGUMENTS + "saslCode",
    ("sasl-outcome", "additional-data"): SASL_ARGUMENTS + "addData",
}
# A field of any type shows under the name of the composite sent in it.
DESCRIBED = {
    "source": ARGUMENTS + "source",
    "target": ARGUMENTS + "target",
    "coordinator": "amqp.tx.coordinator",
    "received": "amqp.delivery-state.received",
    "accepted": "amqp.delivery-state.accepted",
    "rejected": "amqp.delivery-state.rejected",
    "released": "amqp.delivery-state.released",
    "modified": "amqp.delivery-state.modified",
    "declared": "amqp.tx.declared",
    "transactional-state": "amqp.tx.transactionalState",
}
# The composites whose fields tshark shows inside the field that holds them.
NESTED = {"error": "amqp.error."}
SCALARS = ("boolean", "ubyte", "ushort", "uint", "ulong", "string", "symbol", "binary")
DISSECTOR_BUG = 'failed assertion "len > 0"'
EMPTY_BINARY = "empty binary in a list, map or array"


def camel(name: str) -> str:
    first, *rest = name.split("-")
    return first + "".join(part.title() for part in rest)


def field_key(where: str, name: str) -> str:
    """tshark's name of field ``name`` of composite ``where`` (a frame or a nested composite)."""
    renamed = RENAMES.get((where, name), RENAMES.get(("*", name)))
    if renamed is not None:
        return renamed
    if where in NESTED:
        return NESTED[where] + camel(name)
    sasl = codec.types.provides(where, ("sasl-frame",))
    return (SASL_ARGUMENTS if sasl else ARGUMENTS) + camel(name)


def value_key(where: str, f: FieldInfo, value: Any) -> str:
    """Where tshark shows ``value`` of field ``f``: by the field, or by the composite sent in
    a field of any type."""
    if f.primitive is None and f.composite is None:
        assert isinstance(value, Composite), f"{where}.{f.name} = {value!r}: not a composite"
        return DESCRIBED[value.name]
    return field_key(where, f.name)


def as_tshark_shows(text: str) -> str:
    """A string as tshark 4.0 shows a string field: read as ASCII, an octet over 0x7f is
    U+FFFD (so ``é``, two octets of UTF-8, shows as two)."""
    return "".join(c if c < "\x80" else "\ufffd" * len(c.encode()) for c in text)


def shown(value: Any) -> str:
    """Our value of a primitive field as tshark's JSON writes it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return value.hex(":")
    if isinstance(value, str):
        return as_tshark_shows(value)
    raise AssertionError(f"no text form for {value!r}")


def item_count(node: Any) -> int:
    """The number of items tshark shows for an array: its ``amqp.list`` children."""
    if node == "":
        return 0
    assert isinstance(node, dict) and set(node) == {"amqp.list"}, node
    items = node["amqp.list"]
    return len(items) if isinstance(items, list) else 1


def empty_binary_inside(value: Any, inside: bool = False) -> bool:
    """Whether an empty binary is in a list, map or array of ``value`` (see the module's
    docstring: tshark fails an assertion on it)."""
    if type(value) is bytes:
        return inside and not value
    if isinstance(value, Composite):
        return any(empty_binary_inside(v, inside) for v in value.fields.values())
    if isinstance(value, Described):
        return empty_binary_inside(value.value, inside)
    if isinstance(value, dict):
        return any(
            empty_binary_inside(k, True) or empty_binary_inside(v, True) for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return any(empty_binary_inside(v, True) for v in value)
    if isinstance(value, Array):
        return any(empty_binary_inside(v, True) for v in value.items)
    return False


# -- comparing one frame --------------------------------------------------------------------------


def compare_fields(
    where: str, body: Composite, args: dict[str, Any], counts: Counter[str], decoded: bool
) -> None:
    """Our fields of ``body`` against what tshark shows of them in ``args``. A composite as we
    built it has its null fields missing, and tshark must show exactly its other fields; one
    that our decoder gave back has every field, a null one sent reading as its default, so a
    field tshark leaves out must hold its default there."""
    expected = {}
    for f in codec.types.fields[body.name]:
        value = body[f.name]
        if value is None:
            continue
        key = value_key(where, f, value)
        if decoded and key not in args:
            assert value == f.default, f"{where}.{f.name} = {value!r} is not shown by tshark"
            continue
        expected[key] = f.name
        assert key in args, f"{where}.{f.name} = {value!r}: tshark shows no {key}"
        node = args[key]
        label = f"{where}.{f.name}"
        if f.multiple:
            assert isinstance(value, Array)
            assert item_count(node) == len(value.items), f"{label}: {node!r} for {value!r}"
        elif f.primitive in SCALARS:
            assert node == shown(value), f"{label}: tshark {node!r}, ours {value!r}"
        elif f.composite in NESTED:
            assert isinstance(value, Composite)
            compare_fields(f.composite, value, node or {}, counts, decoded)
        else:  # a map, or a composite in a field of any type: named, not compared
            assert f.primitive == "map" or f.composite is None, f"{label}: {f.type}?"
            label = f"{label} (present)"
        counts[label] += 1
    assert set(args) == set(expected), f"{where}: tshark shows {sorted(args)}, ours {expected}"


def compare_frame(
    frame: bytes,
    body: Composite,
    channel: int,
    packet: dict[str, Any],
    counts: Counter[str],
    *,
    decoded: bool = False,
    payload: bytes = b"",
) -> None:
    """One frame we encoded against tshark's packet of it (``payload``: a transfer's)."""
    layer = packet["amqp"]
    assert isinstance(layer, dict), f"one AMQP frame per packet, not {layer!r}"
    sasl = codec.types.provides(body.name, ("sasl-frame",))
    assert layer["amqp.length"] == str(len(frame))
    assert layer["amqp.doff"] == "2"
    assert layer["amqp.type"] == ("1" if sasl else "0")
    assert layer["amqp.channel"] == str(channel)
    code = layer["amqp.sasl.method" if sasl else "amqp.performative"]
    assert code == str(codec.types.descriptor_of(body.name)), f"{body!r}: tshark says {code}"
    counts[f"{body.name} (descriptor)"] += 1
    malformed = malformed_message(packet)
    fault = payload_fault(payload) if payload else None
    if malformed is not None and fault is not None:
        if fault == EMPTY_BINARY:
            assert malformed.endswith(DISSECTOR_BUG), f"{body!r}'s payload: {malformed}"
        counts[f"{body.name} (payload: {fault})"] += 1
        malformed = None
    if empty_binary_inside(body):
        assert malformed is not None and malformed.endswith(DISSECTOR_BUG), (
            f"tshark dissected {body!r} without its empty-binary fault ({malformed})"
        )
        counts[f"{body.name} (left out: {EMPTY_BINARY})"] += 1
        return
    assert malformed is None, f"tshark found {body!r} malformed: {malformed}"
    args = layer.get("amqp.method.arguments") or {}
    faults = {k: v for k, v in args.items() if k.startswith("_ws.")}
    assert not faults, f"tshark found fault with {body!r}: {faults}"
    compare_fields(body.name, body, args, counts, decoded)


def payload_fault(payload: bytes) -> str | None:
    """What keeps tshark from dissecting a transfer's payload (None: nothing): it dissects
    each transfer's payload as whole message sections, so a delivery split over transfers
    has payloads it fails on (as our decoder does); and the empty-binary fault."""
    try:
        sections = codec.sections(payload)
    except DecodeError:
        return "not whole sections"
    if any(empty_binary_inside(section) for section in sections):
        return EMPTY_BINARY
    return None


def malformed_message(packet: dict[str, Any]) -> str | None:
    """What tshark says when it marks a packet malformed (its ``_ws.malformed`` layer)."""
    if "_ws.malformed" not in packet:
        return None
    message: str = packet["_ws.malformed"]["_ws.expert"]["_ws.expert.message"]
    return message


def name_of(layer: dict[str, Any]) -> str:
    """What tshark read: a protocol header (AMQP or SASL), or the frame its code names
    (in our names: tshark's own are checked against ours by the test of names)."""
    if "amqp.init.protocol" in layer:
        assert layer["amqp.init.protocol"] == "AMQP"
        return "sasl header" if layer["amqp.init.id"] == str(SASL) else "header"
    code = int(layer.get("amqp.performative") or layer["amqp.sasl.method"])
    return next(n for n in FRAMES if codec.types.descriptor_of(n) == code)


# -- the corpus ------------------------------------------------------------------------------------


def blob(rnd: random.Random) -> bytes:
    """A blob such as Hypothesis draws for the strategies: random octets, some blobs mostly
    zeros (null fields, the plainest values), some half, some none."""
    data = bytearray(rnd.randbytes(FAMILY.blob))
    zeros = rnd.choice((0, 4, 7))  # eighths of the octets zeroed
    for at in range(FAMILY.blob):
        if rnd.getrandbits(3) < zeros:
            data[at] = 0
    return bytes(data)


# -- the tests ------------------------------------------------------------------------------------


def test_tshark_names_every_performative_and_sasl_frame_by_our_code() -> None:
    """tshark's table of performative and SASL frame names (``tshark -G values``) has each of
    ours under our descriptor's code (it writes ``sasl.init`` for ``sasl-init``)."""
    names: dict[tuple[str, int], str] = {}
    for line in run(tool("tshark"), "-G", "values").splitlines():
        parts = line.split("\t")
        if parts[0] == "V" and parts[1] in ("amqp.performative", "amqp.sasl.method"):
            names[(parts[1], int(parts[2]))] = parts[3].replace("sasl.", "sasl-")
    ours = {}
    for name in FRAMES:
        sasl = codec.types.provides(name, ("sasl-frame",))
        code = codec.types.descriptor_of(name)
        assert code is not None
        ours[("amqp.sasl.method" if sasl else "amqp.performative", code)] = name
    assert names == ours


def test_tshark_registers_every_field_name_we_compare() -> None:
    """Every name the comparison looks for (``tshark -G fields``): so the rule and
    :data:`RENAMES` cannot point at a field tshark does not have."""
    registered = set()
    for line in run(tool("tshark"), "-G", "fields").splitlines():
        parts = line.split("\t")
        if parts[0] == "F":
            registered.add(parts[2])
    wanted = {"amqp.length", "amqp.doff", "amqp.type", "amqp.channel", "amqp.performative"}
    wanted |= {"amqp.sasl.method", *DESCRIBED.values()}
    for name in (*FRAMES, *NESTED):
        for f in codec.types.fields[name]:
            if f.primitive is not None or f.composite is not None:
                wanted.add(field_key(name, f.name))
            else:
                providers = {p for a in f.requires for p in codec.types.providers.get(a, ())}
                assert providers <= set(DESCRIBED), f"{name}.{f.name}: {providers}"
    assert wanted - registered == set()


def test_every_generated_frame_reads_the_same_in_tshark(tmp_path: Path) -> None:
    """A corpus of every performative and SASL frame, :data:`EXAMPLES` of each with values
    drawn as :func:`composites` draws them, on channels drawn too (0 for SASL frames): tshark
    shows each with our descriptor, channel and field values (see the module's docstring)."""
    values = Values(codec)
    rnd = random.Random(SEED)
    corpus = []
    for name in FRAMES:
        draw = values.of(name)
        sasl = codec.types.provides(name, ("sasl-frame",))
        for _ in range(EXAMPLES):
            body = draw(Source(blob(rnd)))
            channel = 0 if sasl else rnd.randrange(0x10000)
            corpus.append((codec.frame(body, channel), body, channel))
    layers = dissect([Header().encode()] + [frame for frame, _, _ in corpus], tmp_path)
    counts: Counter[str] = Counter()
    for (frame, body, channel), packet in zip(corpus, layers[1:], strict=True):
        compare_frame(frame, body, channel, packet, counts)
    for name in FRAMES:
        assert counts[f"{name} (descriptor)"] == EXAMPLES
        left_out = counts[f"{name} (left out: {EMPTY_BINARY})"]
        assert left_out <= EXAMPLES // 4, f"{name}: {left_out} frames left out"
    for name in (*FRAMES, *NESTED):
        for f in codec.types.fields[name]:
            label = f"{name}.{f.name}"
            done = counts[label] + counts[f"{label} (present)"]
            assert done >= AT_LEAST, f"{label}: compared {done} times"


def test_a_whole_connection_reads_as_the_same_frames_in_tshark(tmp_path: Path) -> None:
    """Whole client connections as :func:`connection_frames_of` gives them (SASL PLAIN,
    ANONYMOUS or none; transfers split over frames), one after another on one TCP stream:
    tshark reads the same protocol headers and the same performatives, on the same channels,
    as our reader, with the field values our reader gives (a field tshark leaves out was sent
    null and reads as its default)."""
    rnd = random.Random(SEED)
    items: list[bytes] = []
    read: list[Header | Frame] = []
    for number in range(CONNECTIONS):
        sasl = ("PLAIN", "ANONYMOUS", None)[number % 3]
        ctx = Context(codec.spec, codec, (131072, 512)[number // 3 % 2])
        connection = connection_frames(Source(blob(rnd)), ctx, sasl)
        reader = codec.reader()
        for item in connection:
            found = reader.feed(item)
            assert len(found) == 1, f"one header or frame per item, not {found}"
            read += found
        items += connection
    layers = dissect(items, tmp_path)
    assert [name_of(packet["amqp"]) for packet in layers] == [
        ("sasl header" if x.protocol_id == SASL else "header") if isinstance(x, Header) else x.name
        for x in read
    ]
    counts: Counter[str] = Counter()
    for item, ours, packet in zip(items, read, layers, strict=True):
        layer = packet["amqp"]
        if isinstance(ours, Header):
            version = ("major", "minor", "revision")
            assert [layer[f"amqp.init.version_{v}"] for v in version] == ["1", "0", "0"]
            continue
        assert ours.body is not None
        compare_frame(
            item, ours.body, ours.channel, packet, counts, decoded=True, payload=ours.payload
        )
    names = [getattr(x, "name", "header") for x in read]
    assert names.count("header") == CONNECTIONS + 2 * CONNECTIONS // 3
    assert names.count("sasl-init") == 2 * CONNECTIONS // 3
    assert names.count("close") == CONNECTIONS
    transfers = [x.body for x in read if isinstance(x, Frame) and x.name == "transfer"]
    split = [t for t in transfers if t is not None and t["more"]]
    assert len(split) >= 3, f"{len(split)} transfers with more to follow"
    assert counts["transfer.more"] >= len(split)
