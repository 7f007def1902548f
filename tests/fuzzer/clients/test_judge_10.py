"""The client oracles on what a 1.0 client's application got: a message known by its
message-id, its body octet for octet where the peer knows how a shim shows it."""

from __future__ import annotations

from uuid import UUID

import pytest

from amqpfuzz.fuzzer.clients.judge import judge
from amqpfuzz.fuzzer.protocols.amqp10.serving.delivered import differs, sent_of
from amqpfuzz.fuzzer.protocols.served import Exchange, Message
from amqpfuzz.spec.amqp10 import load
from amqpfuzz.spec.amqp10.codec import (
    Described,
    Long,
    Symbol,
    Timestamp,
    UInt,
    ULong,
    codec_for,
)
from amqpfuzz.strategies.amqp10.serving import SCRIPT_BLOB, script_builder

VALID = script_builder(load("1.0"), codec_for("1.0"), (), {}, 1.0)(bytes(SCRIPT_BLOB))


def _judged(body: object, message_id: str) -> str:
    sent = Message("transfer", 0, 0, b"", {"message-id": "m-1"}, {"value": "hello"})
    ex = Exchange(messages=[sent], ended="server-close")
    events = [
        {"event": "message", "body": body, "properties": {"message-id": message_id}},
        {"event": "closed", "by": "server"},
    ]
    judged = judge("proton", VALID, ex, events, True, None, 0, 1 << 30, "amqp:connection:forced")
    return judged.signature


@pytest.mark.parametrize(
    ("body", "message_id", "signature"),
    [
        ({"value": "hello"}, "m-1", ""),
        ({"value": "hellO"}, "m-1", "integrity:proton:valid:reply->delivered"),
        ({"data": ["68656c6c6f"]}, "m-1", "integrity:proton:valid:reply->delivered"),
        ({"value": "hello"}, "m-2", "integrity:proton:valid:reply->delivered"),
    ],
)
def test_a_message_is_known_by_its_id_and_its_body_octet_for_octet(
    body: object, message_id: str, signature: str
) -> None:
    assert _judged(body, message_id) == signature


@pytest.mark.parametrize(
    ("client", "signature"),
    [
        ("proton", "reaction:proton:handle-in-use:session-close/amqp:session:handle-in-use"
                   "->connection-close/amqp:invalid-field"),
        ("rhea", "reaction:rhea:doff-small:connection-close/amqp:connection:framing-error"
                 "->socket-close"),
        ("uamqp", "client-frames:uamqp:valid:reply->a session flow with drain set (N.N.N)"
                  " [session-flow-drain]"),
    ],
)  # fmt: skip
def test_the_bundled_1_0_profiles_document_each_clients_common_deviation(
    client: str, signature: str
) -> None:
    from amqpfuzz.fuzzer.clients.campaign import client_profile

    profile = client_profile(client, None)
    assert profile is not None and profile.deviation(signature) is not None
    assert profile.deviation(signature.replace(client, "another")) is None


def _sent() -> Message:
    codec = codec_for("1.0")
    payload = codec.message(
        [
            codec.composite(
                "properties", message_id="m-1", user_id=b"\x01\xff", subject="s",
                correlation_id=ULong(2**64 - 1), content_type=Symbol("text/plain"),
                absolute_expiry_time=Timestamp(2**60), group_sequence=UInt(7),
            ),
            Described("application-properties", {"k": Long(-(2**62) - 3), "u": UUID(int=5)}),
            Described("amqp-value", "hello"),
        ]
    )  # fmt: skip
    properties = {**sent_of(codec, payload), "message-id": "m-1"}
    return Message("transfer", 0, 0, payload, properties, {"value": "hello"}, differs)


FAITHFUL_10 = {
    "message-id": "m-1", "user-id": "01ff", "subject": "s", "correlation-id": 2**64 - 1,
    "content-type": "text/plain", "absolute-expiry-time": 2**60, "group-sequence": 7,
}  # fmt: skip
APPLICATION = {"k": -(2**62) - 3, "u": "00000000-0000-0000-0000-000000000005"}


@pytest.mark.parametrize(
    ("properties", "application", "signature"),
    [
        (FAITHFUL_10, APPLICATION, ""),
        ({"message-id": "m-1"}, {}, ""),  # what a shim leaves out is not compared
        # rhea: a 64-bit value past 2^53, and a uuid, as their octets
        ({**FAITHFUL_10, "correlation-id": "hex:ffffffffffffffff"},
         {"k": "hex:" + (-(2**62) - 3).to_bytes(8, "big", signed=True).hex(),
          "u": "hex:" + UUID(int=5).bytes.hex()}, ""),
        ({**FAITHFUL_10, "absolute-expiry-time": float(2**60) + 256}, APPLICATION,
         "integrity:proton:valid:reply->delivered/absolute-expiry-time"),
        ({**FAITHFUL_10, "user-id": "01fe"}, APPLICATION,
         "integrity:proton:valid:reply->delivered/user-id"),
        (FAITHFUL_10, {**APPLICATION, "k": -(2**62)},
         "integrity:proton:valid:reply->delivered/application-properties:long"),
    ],
)  # fmt: skip
def test_a_messages_properties_and_application_properties_are_compared_by_type(
    properties: dict[str, object], application: dict[str, object], signature: str
) -> None:
    ex = Exchange(messages=[_sent()], ended="server-close")
    events = [
        {"event": "message", "body": {"value": "hello"}, "properties": properties,
         "application_properties": application},
        {"event": "closed", "by": "server"},
    ]  # fmt: skip
    judged = judge("proton", VALID, ex, events, True, None, 0, 1 << 30, "amqp:connection:forced")
    assert judged.signature == signature, judged.message
