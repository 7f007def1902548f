"""The AMQP 1.0 client shims (python-qpid-proton, rhea, uamqp, go-amqp, protonj2, qpid-jms,
fe2o3-amqp): the registry says they speak 1.0, each runs one case of the 1.0 shim contract
against a real Qpid Proton broker (its own message comes back), and each ends a case cleanly
when the peer closes the socket at once."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from amqpfuzz.fuzzer.brokers import Broker, throwaway
from amqpfuzz.fuzzer.clients import builds, shims
from amqpfuzz.fuzzer.clients.shims import SHIMS

CLIENTS = ("proton", "rhea", "uamqp", "go-amqp", "protonj2", "qpid-jms", "fe2o3-amqp")
# what uamqp cannot show (its module says why): the begin answered
NO_SESSION = {"uamqp"}
NO_SETTLED = {"fe2o3-amqp"}  # (fe2o3-amqp does not tell whether a delivery came settled)
JMS = {"qpid-jms"}  # (JMS hides its links, and makes its own message-id)


def test_the_three_1_0_shims_say_so_and_the_others_speak_0_9_1() -> None:
    assert {n for n, s in SHIMS.items() if s.protocol == "1.0"} == set(CLIENTS)
    assert {s.protocol for n, s in SHIMS.items() if n not in CLIENTS} == {"0-9-1"}
    assert shims.Shim("x", "C", "x", ("deb", "x"), (), (), "none", (), ()).protocol == "0-9-1"


@pytest.fixture(scope="module")
def proton_broker() -> Iterator[Broker]:
    """A Qpid Proton example broker (AMQP 1.0 only, SASL ANONYMOUS): a test that cannot start
    it fails."""
    with throwaway("qpid-proton") as broker:
        yield broker


def _run(name: str, url: str, linger: float = 1) -> tuple[list[dict[str, Any]], float]:
    builds.build([name])
    started = time.monotonic()
    done = subprocess.run(
        shims.command(name, url, once=True, linger=linger),
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(e["case"] == 0 for e in events), events
    return events, took


@pytest.mark.slow
@pytest.mark.parametrize("name", CLIENTS)
def test_the_shim_runs_one_case_of_the_1_0_contract(name: str, proton_broker: Broker) -> None:
    events, took = _run(name, f"amqp://127.0.0.1:{proton_broker.port}")
    kinds = [e["event"] for e in events]
    steps = ["connecting", "connected", "session", "receiving", "sending"]
    if name in NO_SESSION:
        steps.remove("session")
    assert kinds[: len(steps)] == steps, kinds
    connected = events[1]
    assert set(connected) >= {"container_id", "properties"}
    assert all(isinstance(v, str) for v in connected["properties"].values())
    assert name in JMS or events[steps.index("receiving")]["link"]
    assert {"event": "confirm", "case": 0, "outcome": "accepted"} in events
    # its own message, back from the broker (any message of another shim left is not its)
    (message,) = [
        e
        for e in events
        if e["event"] == "message" and e["application_properties"] == {"shim": name}
    ]
    assert message["body"] == {"value": "amqpfuzz-shim-0"}
    if name in JMS:  # (JMS sets its own message-id and no content-type)
        assert message["properties"]["message-id"].startswith("ID:")
    else:
        assert message["properties"]["message-id"] == "amqpfuzz-shim-0"
        assert message["properties"]["content-type"] == "text/plain"
    assert name in JMS or isinstance(message["annotations"], dict)  # (JMS shows none)
    assert isinstance(message["header"], dict)
    assert "settled" in message or name in NO_SETTLED
    assert events[-1] == {
        "event": "closed",
        "case": 0,
        "by": "client",
        "condition": None,
        "description": None,
    }
    assert kinds.count("closed") + kinds.count("error") == 1
    assert 1 <= took < 15, took


@pytest.fixture
def closing_peer() -> Iterator[int]:
    """A peer in a thread that accepts connections and closes each at once, without a word."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", CLIENTS)
def test_a_socket_closed_at_once_ends_the_case_cleanly(name: str, closing_peer: int) -> None:
    events, took = _run(name, f"amqp://127.0.0.1:{closing_peer}", linger=30)
    assert [e["event"] for e in events] == ["connecting", "closed"], events
    assert events[-1]["by"] == "socket"
    assert took < 5, took  # neither the connect timeout nor --linger: the socket's end
