"""AMQP 0-10 from the command line against the real brokers here, neither of which speaks it:
a campaign ends in one clear line (which header they answered with, and that they closed the
socket), exit status 2, nothing half written; the scenario run judges the negotiation file on
both and skips the rest as "unsupported protocol"."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import Broker
from amqpfuzz.fuzzer.records import read_records

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"


def amqpfuzz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AMQPFUZZ, *args], capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("kind", ["rabbitmq", "garagemq"])
def test_a_0_10_run_on_a_broker_that_does_not_speak_it(
    kind: str, rabbitmq: Broker, garagemq: Broker, tmp_path: Path
) -> None:
    broker = rabbitmq if kind == "rabbitmq" else garagemq
    out = tmp_path / "out"
    done = amqpfuzz("run", "--protocol", "0-10", "--url", broker.url, "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("amqpfuzz: error: ") and "Traceback" not in done.stderr
    assert line.endswith(
        "the broker does not speak AMQP 0-10: it answered the 0-10 protocol header with "
        "AMQP 0 0 9 1 and closed the socket"
    )
    assert "guest:guest" not in line
    assert not list(out.glob("*.part")) and not list(out.glob("records-*"))


def test_0_10_scenarios_judge_the_negotiation_and_skip_the_rest(
    rabbitmq: Broker, garagemq: Broker, tmp_path: Path
) -> None:
    done = amqpfuzz(
        "scenarios", "--protocol", "0-10", "--url", rabbitmq.url, "--url", garagemq.url,
        "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [r for path in tmp_path.glob("records-*.jsonl") for r in read_records(path)]
    verdicts = {(r["target"]["url"], r["spec_ref"]): r for r in records}
    assert len(verdicts) == 6  # three files on two targets
    for url in {str(r["target"]["url"]) for r in records}:
        negotiation = verdicts[(url, "connection.start/protocol-name")]
        assert negotiation["verdict"] == "pass"
        assert negotiation["observed"]["outcome"] == "socket-close"
        priorities = verdicts[(url, "message/priority-levels")]
        assert priorities["verdict"] == "skip"
        assert str(priorities["reason"]).startswith("unsupported protocol: ")
        assert verdicts[(url, "basic/priority-levels")]["verdict"] == "skip"


def test_a_0_10_run_on_a_peer_that_speaks_it_says_what_is_missing(tmp_path: Path) -> None:
    """The scripted 0-10 peer completes the handshake; there are no 0-10 strategies yet, and
    the run says so in one line, exit status 2, after the target was checked."""
    from peer010 import Script, scripted

    script = Script()
    with scripted(script) as port:
        done = amqpfuzz(
            "run", "--protocol", "0-10", "--url", f"amqp://guest:guest@127.0.0.1:{port}/",
            "--out", str(tmp_path),
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "amqpfuzz: error: amqpfuzz cannot fuzz AMQP 0-10 yet: it has no strategies for it "
        "(amqpfuzz scenarios --protocol 0-10 plays its scenario files)"
    ]
    assert [code for _, _, code, _ in script.received][:3] == [2, 6, 7]  # the handshake went
