"""Stateful 1.0 programs through python-qpid-proton on both real peers: a program that holds
on one peer breaks its invariant on the other, each named as the program sees it; and a
stateful run that finds one writes a program reproducer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target, throwaway
from amqpfuzz.fuzzer.protocols import driver_for

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
SENT = [{"step": "open"}, {"step": "send", "node": 0, "count": 3, "sure": True}]


def receive(outcome: str, take: int = 1, credit: int = 2) -> dict[str, object]:
    return {"step": "receive", "node": 0, "credit": credit, "take": take, "outcome": outcome}


@pytest.fixture(scope="module", params=("qpid-proton", "rabbitmq"))
def peer(request: pytest.FixtureRequest) -> Iterator[Broker]:
    with throwaway(request.param) as broker:
        yield broker


def replay(peer: Broker, steps: list[dict[str, object]], name: str) -> object:
    target = parse_target(peer.url)
    return driver_for("1.0").replay_program(steps, target, f"amqpfuzz-p10-{name}-", 2.0)


def test_accepted_messages_are_all_there_and_in_order(peer: Broker) -> None:
    steps = [*SENT, receive("accepted", take=2), receive("rejected"), {"step": "drain"}]
    assert replay(peer, steps, "accept") is None


def test_a_released_message_comes_again(peer: Broker) -> None:
    """Messaging 3.4.4: released, the message is delivered again (its delivery-count the
    same). The Proton example broker drops it: lost."""
    broken = replay(peer, [*SENT, receive("released"), {"step": "drain"}], "release")
    if peer.kind == "rabbitmq":
        assert broken is None
    else:
        assert broken is not None
        assert (broken.invariant, broken.step) == ("no message lost", "drain")  # type: ignore[attr-defined]


def test_modified_with_delivery_failed(peer: Broker) -> None:
    """Messaging 3.4.5: the delivery-count goes up. RabbitMQ 3.10's plugin does not know the
    modified outcome and ends the session; the Proton broker drops the message."""
    broken = replay(peer, [*SENT, receive("modified"), {"step": "drain"}], "modified")
    assert broken is not None
    if peer.kind == "rabbitmq":
        assert broken.invariant == "no unexpected error"  # type: ignore[attr-defined]
        assert "amqp:invalid-field" in broken.message  # type: ignore[attr-defined]
    else:
        assert broken.invariant == "no message lost"  # type: ignore[attr-defined]


def test_a_stateful_1_0_run_writes_its_program(tmp_path: Path) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "run", "--kind", "stateful", "--protocol", "1.0", "--broker", "qpid-proton",
         "--duration", "10", "--timeout", "2", "--seed", "4", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    reproducers = [json.loads(p.read_text()) for p in (tmp_path / "reproducers").glob("*.json")]
    assert reproducers and all(r["kind"] == "program" for r in reproducers)
    assert all(r["protocol"] == "1.0" and r["steps"][0] == {"step": "open"} for r in reproducers)
    assert all(r["failure"]["signature"].startswith("stateful:") for r in reproducers)
