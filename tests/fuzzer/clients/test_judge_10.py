"""The client oracles on what a 1.0 client's application got: a message known by its
message-id, its body octet for octet where the peer knows how a shim shows it."""

from __future__ import annotations

import pytest

from amqpfuzz.fuzzer.clients.judge import judge
from amqpfuzz.fuzzer.protocols.served import Exchange, Message
from amqpfuzz.spec.amqp10 import load
from amqpfuzz.spec.amqp10.codec import codec_for
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
