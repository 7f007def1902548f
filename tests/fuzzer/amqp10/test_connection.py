"""The raw 1.0 connection on both real peers: login (SASL PLAIN or ANONYMOUS, or none), open,
sessions filed by our channel whatever the peer numbers its own, an ``end`` answered, a
session error read as its outcome, a polite close; and one clear error for each way the
handshake fails."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target, throwaway
from amqpfuzz.fuzzer.protocols import AuthenticationFailed, ConnectionFailed, Outcome, Unreachable
from amqpfuzz.fuzzer.protocols.amqp10 import Connection
from amqpfuzz.spec.amqp10.codec import UInt

PEERS = ("qpid-proton", "rabbitmq")


@pytest.fixture(scope="module", params=PEERS)
def peer(request: pytest.FixtureRequest) -> Iterator[Broker]:
    with throwaway(request.param) as broker:
        yield broker


@pytest.mark.slow
def test_login_open_sessions_and_close(peer: Broker) -> None:
    connection = Connection.open(parse_target(peer.url))
    # the Proton broker offers ANONYMOUS alone; RabbitMQ offers PLAIN too, taken for the login
    assert connection.mechanism == ("ANONYMOUS" if peer.kind == "qpid-proton" else "PLAIN")
    assert connection.peer_open is not None and 512 <= connection.frame_max <= 131072
    for channel in (1, 7):
        assert connection.open_session(channel) is None, f"session on channel {channel}"
    assert connection.open_channels == {1, 7}
    # each of the peer's begins named our channel, whatever channel the peer sent it on
    assert set(connection.peers.values()) == {1, 7}
    connection.send(connection.ending(7))
    reply = connection.wait(7, ("end",), 5.0)
    assert not isinstance(reply, Outcome) and reply.body["error"] is None
    assert connection.open_channels == {1}
    connection.close()
    assert connection.ended is not None and connection.ended.kind == "connection-close"
    assert connection.ended.condition is None


@pytest.mark.slow
def test_no_sasl_layer_where_the_peer_allows_it(rabbitmq: Broker) -> None:
    connection = Connection.open(parse_target(rabbitmq.url), sasl=None)
    assert connection.mechanisms == () and connection.open_session(1) is None
    connection.close()


@pytest.mark.slow
def test_a_session_error_is_its_outcome(rabbitmq: Broker) -> None:
    """A flow on a handle no link is attached to: RabbitMQ ends that session with an error
    (transport 2.7.4 requires amqp:session:unattached-handle; RabbitMQ 3.10 says
    amqp:invalid-field), read as a session-close; the connection and its other session live
    on."""
    connection = Connection.open(parse_target(rabbitmq.url))
    assert connection.open_session(1) is None and connection.open_session(2) is None
    flow = connection.codec.composite(
        "flow",
        next_incoming_id=UInt(0),
        incoming_window=UInt(10),
        next_outgoing_id=UInt(0),
        outgoing_window=UInt(10),
        handle=UInt(9),
        delivery_count=UInt(0),
        link_credit=UInt(5),
    )
    connection.send(connection.codec.frame(flow, 1))
    outcome = connection.wait(1, ("end",), 5.0)
    assert isinstance(outcome, Outcome), outcome
    assert outcome.kind == "session-close" and outcome.condition == "amqp:invalid-field"
    assert connection.closed_channels[1] == outcome
    assert connection.alive and connection.open_channels == {2}
    connection.close()


@pytest.mark.slow
def test_a_connection_error_is_its_outcome() -> None:
    """The same flow on the Proton broker: it closes the whole connection (amqp:invalid-field,
    "no such handle"), read as a connection-close with its condition."""
    with throwaway("qpid-proton") as broker:
        connection = Connection.open(parse_target(broker.url))
        assert connection.open_session(1) is None
        detach = connection.codec.composite("detach", handle=UInt(9), closed=True)
        connection.send(connection.codec.frame(detach, 1))
        outcome = connection.wait(1, ("end",), 5.0)
        assert isinstance(outcome, Outcome) and outcome.kind == "connection-close"
        assert outcome.condition == "amqp:invalid-field" and "no such handle" in outcome.text
        assert not connection.alive


@pytest.mark.slow
def test_a_refused_login(rabbitmq: Broker) -> None:
    url = rabbitmq.url.replace("guest:guest", "guest:wrong")
    with pytest.raises(AuthenticationFailed, match="refused the PLAIN login") as info:
        Connection.open(parse_target(url))
    assert "wrong" not in str(info.value)


@pytest.mark.slow
def test_a_broker_that_does_not_speak_1_0(garagemq: Broker) -> None:
    with pytest.raises(ConnectionFailed, match=r"does not speak AMQP 1\.0"):
        Connection.open(parse_target(garagemq.url), timeout=5.0)


def test_nothing_listening() -> None:
    with pytest.raises(Unreachable, match="cannot connect"):
        Connection.open(parse_target("amqp://127.0.0.1:1/"), timeout=2.0)
