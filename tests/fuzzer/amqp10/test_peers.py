"""The AMQP 1.0 peers amqpfuzz starts itself: RabbitMQ with its 1.0 plugin (1.0 and 0-9-1 on
one port, the protocol header decides) and Qpid Proton's example broker (1.0 only). Each is
spoken to through our own codec: the SASL layer, then the AMQP header and ``open``."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import Broker, refuses, throwaway
from amqpfuzz.spec.amqp10.codec import SASL, Frame, FrameReader, Header, Symbol, codec_for

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

CODEC = codec_for("1.0")


def exchange(
    sock: socket.socket, reader: FrameReader, data: bytes, count: int
) -> list[Header | Frame]:
    """Send ``data``; the next ``count`` headers and frames the peer sends back."""
    sock.sendall(data)
    got: list[Header | Frame] = []
    deadline = time.monotonic() + 10
    while len(got) < count:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        assert chunk, f"the peer closed the socket after {got}"
        got += reader.feed(chunk)
    return got


def login(broker: Broker, mechanism: str) -> tuple[list[str], Frame]:
    """The mechanisms the peer offers, and its ``open`` once we logged in with ``mechanism``
    and sent our ``open``."""
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sasl = CODEC.reader()
        header, mechanisms = exchange(sock, sasl, Header(SASL).encode(), 2)
        assert header == Header(SASL)
        assert isinstance(mechanisms, Frame) and mechanisms.name == "sasl-mechanisms"
        offered = [str(m) for m in mechanisms.body["sasl-server-mechanisms"].items]
        response = b"\x00guest\x00guest" if mechanism == "PLAIN" else b""
        init = CODEC.composite("sasl-init", mechanism=Symbol(mechanism), initial_response=response)
        (outcome,) = exchange(sock, sasl, CODEC.frame(init), 1)
        assert isinstance(outcome, Frame) and outcome.name == "sasl-outcome"
        assert outcome.body["code"] == 0, f"{mechanism} refused: {outcome.body}"
        opening = Header().encode() + CODEC.frame(CODEC.composite("open", container_id="amqpfuzz"))
        header, opened = exchange(sock, CODEC.reader(), opening, 2)
        assert header == Header()
        assert isinstance(opened, Frame)
        return offered, opened


@pytest.mark.parametrize(
    ("kind", "mechanism"), [("qpid-proton", "ANONYMOUS"), ("rabbitmq", "PLAIN")]
)
def test_each_1_0_peer_logs_in_and_opens(kind: str, mechanism: str) -> None:
    with throwaway(kind) as broker:
        offered, opened = login(broker, mechanism)
        assert mechanism in offered
        assert opened.name == "open" and opened.channel == 0
        assert refuses(kind, "1.0") is None


def test_rabbitmq_serves_0_9_1_beside_1_0(rabbitmq: Broker) -> None:
    with socket.create_connection(("127.0.0.1", rabbitmq.port), timeout=10) as sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        start = sock.recv(7)
        assert start[0] == 1 and start[1:3] == b"\x00\x00", f"not a 0-9-1 method frame: {start!r}"
    assert login(rabbitmq, "ANONYMOUS")[1].name == "open"


def test_a_1_0_only_broker_is_refused_a_0_9_1_run_in_one_line() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("amqpfuzz")), "run", "--broker", "qpid-proton"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "amqpfuzz: error: a throwaway qpid-proton does not serve AMQP 0-9-1 (it serves 1.0)"
    ]
