"""The integrity oracle on what a 0-9-1 client's application got of a message's properties:
each header table entry by the type it travelled under, in the shims' JSON form."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqpfuzz.fuzzer.clients.judge import judge
from amqpfuzz.fuzzer.clients.shims import shim_common
from amqpfuzz.fuzzer.protocols.amqp091.serving.delivered import differs as compare
from amqpfuzz.fuzzer.protocols.served import Exchange, Message
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec.tables import FieldValue, decode_table, encode_table
from amqpfuzz.strategies.amqp091.serving import SCRIPT_BLOB, script_builder
from amqpfuzz.strategies.amqp091.source import table_generator
from amqpfuzz.strategies.source import Source


def differs(sent: dict[str, Any], shown: dict[str, Any]) -> tuple[str, str] | None:
    """What differs where a shim shows ``shown`` as a message's properties."""
    return compare(sent, {"event": "message", "properties": shown})


HEADERS = {
    "bool": True,
    "int8": FieldValue("b", -5),
    "uint8": FieldValue("B", 200),
    "int16": FieldValue("s", -300),
    "uint16": FieldValue("u", 60000),
    "int32": 7,
    "uint32": FieldValue("i", 4000000000),
    "int64": FieldValue("l", 2**62 + 1),
    "float": FieldValue("f", 1.5),
    "double": 0.1,
    "decimal": Decimal(12345).scaleb(-3),
    "text": "héllo",
    "octets": b"\xff\x00",
    "stamp": FieldValue("T", 1_700_000_000),
    "void": None,
    "nested": {"deep": [FieldValue("f", -2.25), "x"]},
}
FAITHFUL = {  # as the shim contract writes what a faithful library hands its application
    "bool": True,
    "int8": -5,
    "uint8": 200,
    "int16": -300,
    "uint16": 60000,
    "int32": 7,
    "uint32": 4000000000,
    "int64": 2**62 + 1,
    "float": 1.5,
    "double": 0.1,
    "decimal": "12345E-3",
    "text": "héllo",
    "octets": "hex:ff00",
    "stamp": 1_700_000_000,
    "void": None,
    "nested": {"deep": [-2.25, "x"]},
}


def test_a_faithful_application_differs_in_nothing() -> None:
    assert (
        differs({"headers": HEADERS, "priority": 3}, {"headers": FAITHFUL, "priority": 3}) is None
    )
    # what a shim leaves out is not compared; text may come as octets and octets as text
    assert differs({"headers": HEADERS, "priority": 3}, {}) is None
    octets = {**FAITHFUL, "text": "hex:" + "héllo".encode().hex(), "octets": "hex:ff00"}
    assert differs({"headers": HEADERS}, {"headers": octets}) is None


@pytest.mark.parametrize(
    ("entry", "shown", "what"),
    [
        ("float", 1, "headers:f"),  # a 32-bit float handed over as an integer
        ("double", 0, "headers:d"),
        ("int64", float(2**62), "headers:l"),  # rounded to a double's precision
        ("uint8", -56, "headers:B"),  # read as signed
        ("decimal", "12345E-2", "headers:D"),
        ("octets", "\ufffd\x00", "headers:x"),  # decoded as text, lossy
        ("stamp", "2023-11-14", "headers:T"),
        ("void", "", "headers:V"),
        ("bool", "true", "headers:t"),
    ],
)
def test_an_entry_handed_over_otherwise_is_named_by_its_type_code(
    entry: str, shown: Any, what: str
) -> None:
    found = differs({"headers": HEADERS}, {"headers": {**FAITHFUL, entry: shown}})
    assert found is not None and found[0] == what
    assert f"headers.{entry}" in found[1]


def test_a_missing_extra_or_nested_entry_differs_and_floats_compare_at_their_width() -> None:
    missing = {k: v for k, v in FAITHFUL.items() if k != "text"}
    assert differs({"headers": HEADERS}, {"headers": missing}) == (
        "headers:S",
        "header headers.text delivered as nothing: the entry is missing",
    )
    extra = differs({"headers": HEADERS}, {"headers": {**FAITHFUL, "zz": 1}})
    assert extra is not None and extra[0] == "headers:F"
    nested = differs({"headers": HEADERS}, {"headers": {**FAITHFUL, "nested": {"deep": [-2, "x"]}}})
    assert nested is not None and nested[0] == "headers:f" and "nested.deep[0]" in nested[1]
    # a 32-bit float printed at its own precision (Go, JavaScript) is the same float
    top = {"headers": {"f": FieldValue("f", 3.4028234663852886e38)}}
    assert differs(top, {"headers": {"f": 3.4028235e38}}) is None
    assert (
        differs({"headers": {"f": FieldValue("f", float("inf"))}}, {"headers": {"f": "+Inf"}})
        is None
    )


def test_plain_properties_compare_as_sent() -> None:
    sent = {"delivery-mode": 2, "content-type": "text/plain", "timestamp": 2**40}
    assert (
        differs(sent, {"delivery-mode": 2, "content-type": "text/plain", "timestamp": 2**40})
        is None
    )
    assert differs(sent, {"delivery-mode": 1})[0] == "delivery-mode"  # type: ignore[index]
    assert differs(sent, {"timestamp": float(2**40) + 0.5})[0] == "timestamp"  # type: ignore[index]


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=64, max_size=512))
def test_every_drawn_table_read_by_a_faithful_library_differs_in_nothing(blob: bytes) -> None:
    table = table_generator("rabbit", False, 2)(Source(blob))
    read, _ = decode_table(encode_table(table, "rabbit"), 0, "rabbit")
    assert differs({"headers": table}, {"headers": shim_common.jsonable(read)}) is None


def test_the_judge_names_the_property_in_the_signature() -> None:
    script = script_builder(load("0-9-1"), (), {}, 1.0)(bytes(SCRIPT_BLOB))
    sent = Message("deliver", 1, 1, b"hi", {"headers": HEADERS}, differs=compare)
    ex = Exchange(messages=[sent], ended="server-close")
    shown = {**FAITHFUL, "float": 1}
    events = [
        {"event": "message", "via": "deliver", "body": "6869", "properties": {"headers": shown}},
        {"event": "closed", "by": "server"},
    ]
    judged = judge("pika", script, ex, events, True, None, 0, 1 << 30, 320)
    assert judged.signature == "integrity:pika:valid:reply->delivered/headers:f"
    assert "headers.float" in judged.message


def test_what_a_language_cannot_hold_as_sent_is_read_in_its_contracted_form() -> None:
    assert differs({"headers": {"t": {}}}, {"headers": {"t": []}}) is None  # PHP's empty array
    assert differs({"timestamp": 2**64 - 1}, {"timestamp": str(2**64 - 1)}) is None
    assert differs({"timestamp": 2**64 - 1}, {"timestamp": str(2**64 - 2)}) is not None


def test_messages_with_one_body_are_told_apart_by_their_properties() -> None:
    script = script_builder(load("0-9-1"), (), {}, 1.0)(bytes(SCRIPT_BLOB))
    first = Message("deliver", 1, 1, b"", {"app-id": "one"}, differs=compare)
    second = Message("deliver", 1, 2, b"", {"app-id": ""}, differs=compare)
    ex = Exchange(messages=[first, second], ended="server-close")

    def signature(*shown: str) -> str:
        events: list[dict[str, Any]] = [
            {"event": "message", "via": "deliver", "delivery_tag": tag, "body": "",
             "properties": {"app-id": app}}
            for tag, app in enumerate(shown, 1)
        ]  # fmt: skip
        events.append({"event": "closed", "by": "server"})
        return judge("php-amqplib", script, ex, events, True, None, 0, 1 << 30, 320).signature

    assert signature("one", "") == ""
    assert signature("", "one") == ""  # a tag is a hint, not a requirement
    assert signature("one", "two") == "integrity:php-amqplib:valid:reply->delivered/app-id"
