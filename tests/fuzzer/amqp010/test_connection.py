"""The raw 0-10 connection: the client side of the handshake against a scripted peer whose
bytes are written out from the specification's layout (:mod:`peer010`), sessions attached and
detached, a polite close; and, against the real brokers here (RabbitMQ, GarageMQ), the 0-10
protocol header answered with their own: one clear error that says which and that they closed
the socket, as the specification requires of a peer that does not speak the version asked."""

from __future__ import annotations

import struct

import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target
from amqpfuzz.fuzzer.protocols import ConnectionFailed
from amqpfuzz.fuzzer.protocols.amqp010 import Connection, NotSpoken
from tests.helpers.peer010 import CONNECTION, HEADER, SESSION, Script, scripted


def _str8(data: bytes, at: int) -> tuple[bytes, int]:
    return data[at + 1 : at + 1 + data[at]], at + 1 + data[at]


def test_the_handshake_with_a_scripted_peer() -> None:
    script = Script()
    with scripted(script) as port:
        target = parse_target(f"amqp://guest:secret@127.0.0.1:{port}/%2F")
        connection = Connection.open(target, timeout=5)
        assert script.header == HEADER  # AMQP, class 1, instance 1, version 0-10
        assert connection.mechanism == "PLAIN" and connection.mechanisms == ("PLAIN", "ANONYMOUS")
        assert connection.server_properties["product"] == "scripted"
        # the tune's limits are the connection's: frames of at most 4096 octets from now on
        assert (connection.channel_max, connection.frame_max) == (256, 4096)
        assert connection.open_session(1) is None and connection.open_channels == {1}
        connection.send(connection.ending(1))
        reply = connection.wait(1, ("session.detached",), 5)
        assert reply.name == "session.detached" and reply["code"] == 0
        connection.close()
    sent = [(channel, cls, code) for channel, cls, code, _ in script.received]
    assert sent == [
        (0, CONNECTION, 2),  # start-ok
        (0, CONNECTION, 6),  # tune-ok
        (0, CONNECTION, 7),  # open
        (1, SESSION, 1),  # attach
        (1, SESSION, 7),  # command-point
        (1, SESSION, 3),  # detach
        (0, CONNECTION, 11),  # close
    ]
    # start-ok: client-properties (a map), mechanism (str8), response (vbin32), locale (str8)
    fields = script.received[0][3]
    assert fields[:2] == b"\x0f\x00"
    at = 2 + 4 + struct.unpack(">I", fields[2:6])[0]
    mechanism, at = _str8(fields, at)
    size = struct.unpack(">I", fields[at : at + 4])[0]
    response, at = fields[at + 4 : at + 4 + size], at + 4 + size
    locale, at = _str8(fields, at)
    assert (mechanism, response, locale, at) == (
        b"PLAIN",
        b"\0guest\0secret",
        b"en_US",
        len(fields),
    )
    # tune-ok: channel-max and max-frame-size as tuned, heartbeat 0
    assert script.received[1][3] == b"\x07\x00" + struct.pack(">HHH", 256, 4096, 0)
    # open: the virtual host, a str8
    assert script.received[2][3] == b"\x01\x00\x01/"


def test_anonymous_where_plain_is_not_offered() -> None:
    script = Script(mechanisms=["ANONYMOUS"])
    with scripted(script) as port:
        connection = Connection.open(parse_target(f"amqp://127.0.0.1:{port}/"), timeout=5)
        assert connection.mechanism == "ANONYMOUS"
        connection.close()


def test_no_mechanism_in_common_is_one_clear_error() -> None:
    refused = pytest.raises(ConnectionFailed, match="offers SASL GSSAPI; amqpfuzz logs in with")
    with scripted(Script(mechanisms=["GSSAPI"])) as port, refused:
        Connection.open(parse_target(f"amqp://127.0.0.1:{port}/"), timeout=5)


@pytest.mark.parametrize("closes", [True, False])
def test_another_header_in_answer_says_which_and_whether_the_socket_closed(closes: bool) -> None:
    script = Script(answer=b"AMQP\x00\x00\x09\x01", close_after_header=closes)
    with scripted(script) as port, pytest.raises(NotSpoken) as raised:
        Connection.open(parse_target(f"amqp://127.0.0.1:{port}/"), timeout=5)
    assert raised.value.answered == b"AMQP\x00\x00\x09\x01" and raised.value.closed is closes
    assert "answered the 0-10 protocol header with AMQP 0 0 9 1" in str(raised.value)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rabbitmq", "garagemq"])
def test_the_brokers_here_answer_0_10_with_their_own_header_and_close(
    kind: str, rabbitmq: Broker, garagemq: Broker
) -> None:
    broker = rabbitmq if kind == "rabbitmq" else garagemq
    with pytest.raises(NotSpoken) as raised:
        Connection.open(parse_target(broker.url), timeout=5)
    assert raised.value.answered == b"AMQP\x00\x00\x09\x01" and raised.value.closed
