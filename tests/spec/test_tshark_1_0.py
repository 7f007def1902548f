"""The 1.0 codec against Wireshark's AMQP dissector: tshark reads our frames as we wrote them.

A corpus of every performative and SASL frame, drawn by the project's own value generators
from seeded blobs, is written to one capture (``text2pcap``) and read once by ``tshark -T
json``. For each frame, tshark must name the same performative (or SASL method) and channel,
and every scalar field it shows must hold our value: integers in decimal, booleans as 0 and 1,
binary as colon-separated hex, strings as they are. tshark shows no list, map, array or
described value in its JSON (their items are only in its text tree), so those fields are not
compared; a null field must not be shown. Field names map by rule (``next-outgoing-id`` is
``nextOutgoingId``) with the few exceptions tshark makes (:data:`NAMES`).

tshark 4.0 shows a UTF-8 string's octets over 0x7f as replacement characters, so a string
that is not ASCII is compared by its ASCII characters only (proton's differential test checks
those octets byte for byte).
"""

from __future__ import annotations

import collections
import json
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings

from amqpfuzz.spec.amqp10.codec import Composite, Header, codec_for
from amqpfuzz.strategies import connection_frames_of
from amqpfuzz.strategies.amqp10.values import Values
from amqpfuzz.strategies.source import Source

codec = codec_for()
FRAMES = [n for n in codec.types.composites if codec.types.provides(n, ("frame", "sasl-frame"))]
ARGUMENTS = "amqp.performative.arguments."
# where tshark's names do not follow from ours by rule
NAMES = {
    "idle-time-out": ARGUMENTS + "idleTimeout",
    "initial-delivery-count": ARGUMENTS + "initDeliveryCount",
    "offered-capabilities": "amqp.arguments.offeredCapabilities",
    "sasl-server-mechanisms": "amqp.sasl.mechanisms",
    "initial-response": "amqp.sasl.initResponse",
    "additional-data": "amqp.sasl.addData",
    "code": "amqp.sasl.saslCode",
}


def tshark_name(frame: str, field: str) -> str:
    if field in NAMES:
        return NAMES[field]
    head, *rest = field.split("-")
    camel = head + "".join(part.title() for part in rest)
    if frame.startswith("sasl") and not (frame == "sasl-init" and field == "hostname"):
        return "amqp.sasl." + camel
    return ARGUMENTS + camel


def shown(value: Any) -> str | None:
    """Our value as tshark's JSON shows it (None: tshark does not show such values)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return ":".join(f"{b:02x}" for b in value)
    if isinstance(value, str):
        return value
    return None


def dissect(packets: list[bytes], tmp_path: Path) -> list[dict[str, Any]]:
    """tshark's layers of each packet, sent client to broker on port 5672."""
    dump = tmp_path / "in.txt"
    with dump.open("w") as out:
        for packet in packets:
            for at in range(0, len(packet), 16):
                out.write(f"{at:06x}  {packet[at : at + 16].hex(' ')}\n")
            out.write("\n")
    capture = tmp_path / "out.pcap"
    subprocess.run(["text2pcap", "-q", "-T", "40000,5672", str(dump), str(capture)], check=True)
    done = subprocess.run(
        ["tshark", "-r", str(capture), "-d", "tcp.port==5672,amqp", "-T", "json",
         "--no-duplicate-keys"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [p["_source"]["layers"] for p in json.loads(done.stdout)]


def corpus(count: int, seed: int = 1) -> list[tuple[Composite, int]]:
    """``count`` frames of every performative and SASL frame, from seeded blobs (some mostly
    zero, for the plainest values), each on a channel of its own."""
    values, rnd = Values(codec), random.Random(seed)
    found = []
    for name in FRAMES:
        for _ in range(count):
            zeros = rnd.choice((0.0, 0.5, 0.9))
            blob = bytes(0 if rnd.random() < zeros else rnd.randrange(256) for _ in range(512))
            sasl = codec.types.provides(name, ("sasl-frame",))
            found.append((values.of(name)(Source(blob)), 0 if sasl else rnd.randrange(0x10000)))
    return found


def test_tshark_reads_every_performative_and_sasl_frame_as_we_wrote_it(tmp_path: Path) -> None:
    frames = corpus(12)
    packets = [Header().encode()] + [codec.frame(body, channel) for body, channel in frames]
    layers = dissect(packets, tmp_path)
    assert len(layers) == len(packets)
    compared: collections.Counter[str] = collections.Counter()
    problems = []
    for (body, channel), layer in zip(frames, layers[1:], strict=True):
        amqp = layer["amqp"]
        code = str(codec.types.descriptor_of(body.name))
        if codec.types.provides(body.name, ("sasl-frame",)):
            assert amqp["amqp.sasl.method"] == code, body
        else:
            assert amqp["amqp.performative"] == code, body
            assert amqp["amqp.channel"] == str(channel), body
        arguments = amqp.get("amqp.method.arguments") or {}
        for field in codec.types.fields[body.name]:
            ours, theirs = body[field.name], arguments.get(tshark_name(body.name, field.name))
            if ours is None:
                if theirs is not None:
                    problems.append(f"{body.name}.{field.name}: null shown as {theirs!r}")
                continue
            expected = shown(ours)
            if expected is None or (theirs is None and expected == ""):
                continue  # a compound value, or an empty string or binary tshark leaves out
            if isinstance(ours, str) and not ours.isascii():
                expected = "".join(c for c in expected if c.isascii())
                theirs = "".join(c for c in str(theirs) if c.isascii())
            if theirs != expected:
                problems.append(f"{body.name}.{field.name}: ours {expected!r}, tshark {theirs!r}")
            compared[body.name] += 1
    assert not problems, problems[:10]
    # every frame type with a scalar field had many compared (end and close have only an
    # error, sasl-mechanisms only an array)
    assert set(compared) == set(FRAMES) - {"end", "close", "sasl-mechanisms"}, compared
    assert sum(compared.values()) > 20 * len(compared), compared


@settings(max_examples=5, deadline=None)
@given(connection_frames_of())
def test_tshark_reads_a_whole_connection_frame_by_frame_as_our_reader(items: list[bytes]) -> None:
    reader = codec.reader()
    ours = [getattr(x, "name", "header") for item in items for x in reader.feed(item)]
    with tempfile.TemporaryDirectory() as tmp:
        layers = dissect(items, Path(tmp))
    names = {str(codec.types.descriptor_of(n)): n for n in FRAMES}
    theirs = []
    for layer in layers:
        amqp = layer["amqp"]
        if "amqp.init.protocol" in amqp:
            theirs.append("header")
        else:
            theirs.append(names[amqp.get("amqp.performative") or amqp["amqp.sasl.method"]])
    assert theirs == ours
