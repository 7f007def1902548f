"""Encode and decode rates of the amqpfuzz AMQP 1.0 codec beside proton's Python binding.

What is measured
    One mix of four frames on channel 1, built once before timing:

    (a) a transfer (handle, delivery-id, delivery-tag, message-format, settled) carrying a
        message of four sections: a header (durable), properties (message-id, to, subject,
        content-type), application-properties (three string keys to int and string values)
        and a data section of 100 octets;
    (b) an attach (name, handle, role, snd- and rcv-settle-mode, a source and a target with
        their addresses, initial-delivery-count, max-message-size);
    (c) a flow with its link fields (handle, delivery-count, link-credit);
    (d) a disposition (role, first, last, settled, state accepted).

    *Encode* makes each frame's bytes, the 8-octet frame header included:

    * amqpfuzz: ``Codec.frame(performative, 1, payload)`` from :class:`Composite` objects, the
      transfer's payload made by ``Codec.message(sections)`` from the section objects;
    * proton: the frame header packed with ``struct``, the performative written as a
      described list into a new ``proton.Data`` with its ``put_*`` calls (``put_described``,
      ``enter``, ``put_ulong``, ``put_list``, ``put_uint``...; about a fifth faster than
      ``put_object`` of a prebuilt ``proton.Described``) and ``Data.encode()``, the transfer's
      payload by ``encode()`` of a prebuilt ``proton.Message`` with the same values.

    *Decode* turns our four frames' bytes (the same input for both) back into objects:

    * amqpfuzz: ``Codec.decode_frame(data)`` (which checks the header, the performative's
      fields and types), and for the transfer ``Codec.sections(frame.payload)``;
    * proton: the header unpacked with ``struct``, ``Data().decode(body)``, then ``rewind()``,
      ``next()``, ``get_object()`` (the performative as ``proton.Described`` of a list), and for
      the transfer ``Message().decode(payload)``. Proton's ``Message`` keeps the properties
      section's fields in C until they are read; they are not read here, so proton's decode does
      less Python work than ours, which gives every field as a Python value.

How
    A check runs first that both sides mean the same frames: proton's bytes decode with our
    codec to the same performatives and sections as ours, and proton reads the same values from
    our bytes as from its own. Each figure is mixes (all four frames) per second, the best of
    ``--rounds`` rounds of ``time.perf_counter`` around a loop long enough for a round to last
    0.25 s, the garbage collector off during a round; the two implementations take turns round
    by round, so that a slow spell of a shared machine hits both alike.

Output
    One JSON object per line on stdout: ``encode_mix_per_s`` and ``decode_mix_per_s`` for each
    implementation, then ``encode_ratio_vs_proton`` and ``decode_ratio_vs_proton`` (ours over
    proton's) with the ratio we aim for (``target``). ``--quick`` runs a very short version (a
    smoke test of the script, not a measurement); ``--seed`` is accepted and unused (the mix is
    fixed). Nothing here asserts anything about timing.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

import proton
from roundtrip import options
from timing import best_rates, emitter

from amqpfuzz.spec.amqp10.codec import (
    Codec,
    Composite,
    Described,
    Symbol,
    UByte,
    UInt,
    ULong,
    codec_for,
)

TARGET_RATIO = 1.0
IMPLS = ("amqpfuzz", "proton")
ROUND_TIME = 0.25  # seconds a round lasts at least (--quick: QUICK_ROUND_TIME)
QUICK_ROUND_TIME = 0.005

_HEAD = struct.Struct(">IBBH")  # size, data offset (2 words), type (0: AMQP), channel
CHANNEL = 1

# the values of the mix, shared by both sides
HANDLE = 0
DELIVERY_ID = 42
DELIVERY_TAG = DELIVERY_ID.to_bytes(4, "big")
MESSAGE_ID = "msg-0000000042"
TO = "orders"
SUBJECT = "order.created"
CONTENT_TYPE = "application/octet-stream"
APPLICATION_PROPERTIES: dict[str, Any] = {
    "x-attempt": 1,
    "x-source": "checkout-service",
    "x-priority": 5,
}
BODY = bytes(range(100))
LINK_NAME = "orders-sender"
SOURCE_ADDRESS = "client-1"
TARGET_ADDRESS = "orders"
SND_SETTLE_MODE = 2  # mixed
RCV_SETTLE_MODE = 0  # first
MAX_MESSAGE_SIZE = 1 << 20
WINDOW = 2048
LINK_CREDIT = 100

# descriptor codes (the agreement check compares them with the specification's)
TRANSFER, ATTACH, FLOW, DISPOSITION, SOURCE, TARGET, ACCEPTED = (
    0x14,
    0x12,
    0x13,
    0x15,
    0x28,
    0x29,
    0x24,
)


# -- amqpfuzz ---------------------------------------------------------------------------------


def amqpfuzz_mix(codec: Codec) -> tuple[list[tuple[Composite, list[Any] | None]]]:
    """Each performative with the sections of its message (None: no payload)."""
    c = codec.composite
    transfer = c(
        "transfer",
        handle=UInt(HANDLE),
        delivery_id=UInt(DELIVERY_ID),
        delivery_tag=DELIVERY_TAG,
        message_format=UInt(0),
        settled=False,
    )
    sections: list[Any] = [
        c("header", durable=True),
        c(
            "properties",
            message_id=MESSAGE_ID,
            to=TO,
            subject=SUBJECT,
            content_type=Symbol(CONTENT_TYPE),
        ),
        Described("application-properties", dict(APPLICATION_PROPERTIES)),
        Described("data", BODY),
    ]
    attach = c(
        "attach",
        name=LINK_NAME,
        handle=UInt(HANDLE),
        role=False,
        snd_settle_mode=UByte(SND_SETTLE_MODE),
        rcv_settle_mode=UByte(RCV_SETTLE_MODE),
        source=c("source", address=SOURCE_ADDRESS),
        target=c("target", address=TARGET_ADDRESS),
        initial_delivery_count=UInt(0),
        max_message_size=ULong(MAX_MESSAGE_SIZE),
    )
    flow = c(
        "flow",
        next_incoming_id=UInt(1),
        incoming_window=UInt(WINDOW),
        next_outgoing_id=UInt(1),
        outgoing_window=UInt(WINDOW),
        handle=UInt(HANDLE),
        delivery_count=UInt(0),
        link_credit=UInt(LINK_CREDIT),
    )
    disposition = c(
        "disposition",
        role=True,
        first=UInt(DELIVERY_ID),
        last=UInt(DELIVERY_ID),
        settled=True,
        state=c("accepted"),
    )
    return ([(transfer, sections), (attach, None), (flow, None), (disposition, None)],)


# -- proton -----------------------------------------------------------------------------------


def proton_message() -> proton.Message:
    return proton.Message(
        durable=True,
        id=MESSAGE_ID,
        address=TO,
        subject=SUBJECT,
        content_type=CONTENT_TYPE,
        properties=dict(APPLICATION_PROPERTIES),
        body=BODY,
        inferred=True,  # bytes as a data section, not an amqp-value
    )


def _open(d: proton.Data, code: int) -> None:
    d.put_described()
    d.enter()
    d.put_ulong(code)
    d.put_list()
    d.enter()


def _close(d: proton.Data) -> None:
    d.exit()
    d.exit()


def put_transfer(d: proton.Data) -> None:
    _open(d, TRANSFER)
    d.put_uint(HANDLE)
    d.put_uint(DELIVERY_ID)
    d.put_binary(DELIVERY_TAG)
    d.put_uint(0)
    d.put_bool(False)
    _close(d)


def put_attach(d: proton.Data) -> None:
    _open(d, ATTACH)
    d.put_string(LINK_NAME)
    d.put_uint(HANDLE)
    d.put_bool(False)
    d.put_ubyte(SND_SETTLE_MODE)
    d.put_ubyte(RCV_SETTLE_MODE)
    _open(d, SOURCE)
    d.put_string(SOURCE_ADDRESS)
    _close(d)
    _open(d, TARGET)
    d.put_string(TARGET_ADDRESS)
    _close(d)
    d.put_null()  # unsettled
    d.put_null()  # incomplete-unsettled
    d.put_uint(0)
    d.put_ulong(MAX_MESSAGE_SIZE)
    _close(d)


def put_flow(d: proton.Data) -> None:
    _open(d, FLOW)
    for value in (1, WINDOW, 1, WINDOW, HANDLE, 0, LINK_CREDIT):
        d.put_uint(value)
    _close(d)


def put_disposition(d: proton.Data) -> None:
    _open(d, DISPOSITION)
    d.put_bool(True)
    d.put_uint(DELIVERY_ID)
    d.put_uint(DELIVERY_ID)
    d.put_bool(True)
    _open(d, ACCEPTED)
    _close(d)
    _close(d)


PUTS: tuple[Callable[[proton.Data], None], ...] = (
    put_transfer,
    put_attach,
    put_flow,
    put_disposition,
)


def proton_frame(put: Callable[[proton.Data], None], payload: bytes = b"") -> bytes:
    d = proton.Data()
    put(d)
    body = d.encode()
    return _HEAD.pack(8 + len(body) + len(payload), 2, 0, CHANNEL) + body + payload


def proton_read(data: bytes) -> tuple[Any, proton.Message | None]:
    """A frame's performative (``proton.Described``) and its message, if it has one."""
    _size, doff, _kind, _channel = _HEAD.unpack_from(data)
    start = doff * 4
    d = proton.Data()
    used = d.decode(data[start:])
    d.rewind()
    d.next()
    performative = d.get_object()
    payload = data[start + used :]
    if not payload:
        return performative, None
    message = proton.Message()
    message.decode(payload)
    return performative, message


# -- the timed operations ---------------------------------------------------------------------
#
# Each runs the operation once over the whole mix; the loop that repeats it is shared.


def encoders(codec: Codec) -> dict[str, Callable[[], object]]:
    (mix,) = amqpfuzz_mix(codec)
    message = proton_message()
    (put_first, *puts_rest) = PUTS

    def encode_amqpfuzz() -> object:
        frame, sections = codec.frame, codec.message
        return [
            frame(performative, CHANNEL, sections(parts) if parts is not None else b"")
            for performative, parts in mix
        ]

    def encode_proton() -> object:
        return [proton_frame(put_first, message.encode())] + [
            proton_frame(put) for put in puts_rest
        ]

    return {"amqpfuzz": encode_amqpfuzz, "proton": encode_proton}


def decoders(codec: Codec, data: Sequence[bytes]) -> dict[str, Callable[[], object]]:
    first, *rest = data

    def decode_amqpfuzz() -> object:
        decode_frame = codec.decode_frame
        transfer = decode_frame(first)
        return [transfer, codec.sections(transfer.payload)] + [decode_frame(f) for f in rest]

    def decode_proton() -> object:
        return [proton_read(f) for f in data]

    return {"amqpfuzz": decode_amqpfuzz, "proton": decode_proton}


def _plain(value: Any) -> Any:
    """Proton's values as comparable plain ones (a memoryview as bytes, a Described as a pair)."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, proton.Described):
        return (int(value.descriptor), _plain(value.value))
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def _proton_values(data: bytes) -> Any:
    """What proton reads from a frame, as plain values taken while its ``Data`` lives (its
    binary values are views of the ``Data``'s own buffer, freed with it)."""
    _size, doff, _kind, _channel = _HEAD.unpack_from(data)
    d = proton.Data()
    used = d.decode(data[doff * 4 :])
    d.rewind()
    d.next()
    performative = _plain(d.get_object())
    payload = data[doff * 4 + used :]
    if not payload:
        return performative, None
    message = proton.Message()
    message.decode(payload)
    fields = ("durable", "id", "address", "subject", "content_type", "properties", "body")
    return performative, {f: _plain(getattr(message, f)) for f in fields}


def check_agreement(codec: Codec) -> list[bytes]:
    """Our bytes of the mix, after checking that both sides mean the same frames.

    Not about timing: a benchmark of libraries that encode different things measures nothing.
    """
    ours = encoders(codec)["amqpfuzz"]()
    theirs = encoders(codec)["proton"]()
    assert isinstance(ours, list) and isinstance(theirs, list)
    for name, code in zip(
        ("transfer", "attach", "flow", "disposition", "source", "target", "accepted"),
        (TRANSFER, ATTACH, FLOW, DISPOSITION, SOURCE, TARGET, ACCEPTED),
        strict=True,
    ):
        if codec.types.descriptor_of(name) != code:
            raise RuntimeError(f"{name} is not 0x{code:02x}")
    for mine, other in zip(ours, theirs, strict=True):
        a, b = codec.decode_frame(mine), codec.decode_frame(other)
        if a.body != b.body or codec.sections(a.payload) != codec.sections(b.payload):
            raise RuntimeError(f"proton encodes a different frame: {other!r} vs {mine!r}")
        if _proton_values(mine) != _proton_values(other):
            raise RuntimeError(f"proton reads {mine!r} differently from {other!r}")
    return ours


emit = emitter("codec10")


def main(argv: Sequence[str] | None = None) -> int:
    args = options(__doc__, argv)
    rounds, min_time = (2, QUICK_ROUND_TIME) if args.quick else (max(args.rounds, 1), ROUND_TIME)

    codec = codec_for("1.0")
    data = check_agreement(codec)
    rates: dict[str, dict[str, float]] = {}
    for op, fns in (("encode", encoders(codec)), ("decode", decoders(codec, data))):
        rates[op] = best_rates(fns, rounds, min_time)
        for impl in IMPLS:
            emit(f"{op}_mix_per_s", round(rates[op][impl], 1), impl=impl)
    for op in ("encode", "decode"):
        ratio = rates[op]["amqpfuzz"] / rates[op]["proton"]
        emit(f"{op}_ratio_vs_proton", round(ratio, 3), target=TARGET_RATIO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
