"""Every kind of reproducer replays with ``amqpfuzz replay``: a fuzz case's bytes and a stateful
program's steps, on real brokers; and stateful programs reach an ``amqps://`` target."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import Broker, throwaway
from amqpfuzz.fuzzer.records import load_reproducer, read_records

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"


def amqpfuzz(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    wide = {**os.environ, "COLUMNS": "400"}  # the summary's paths on one line each
    return subprocess.run(
        [AMQPFUZZ, *args], capture_output=True, text=True, timeout=timeout, check=False, env=wide
    )


def records_in(out: Path) -> list[dict[str, object]]:
    return [r for path in sorted(out.glob("records-*.jsonl")) for r in read_records(path)]


def first_failure(broker: Broker, operator: str, examples: int, out: Path) -> Path:
    """The reproducer of the first failure of a run of ``operator`` alone, without the
    broker's profile (which must fail)."""
    done = amqpfuzz(
        "run", "--url", broker.url, "--operators", operator, "--valid-share", "0",
        "--max-examples", str(examples), "--profile", "none", "--out", str(out), "--seed", "1",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [r for r in records_in(out) if r["verdict"] == "fail"]
    return Path(str(failed[0]["reproducer"]))


def test_a_case_reproducer_replays_with_the_command(rabbitmq: Broker, tmp_path: Path) -> None:
    # without its profile, RabbitMQ's answer to an unknown class (it drops the socket) fails
    reproducer = str(first_failure(rabbitmq, "unknown-class", 20, tmp_path))
    assert load_reproducer(reproducer)["kind"] == "case"
    again = amqpfuzz("replay", reproducer, "--url", rabbitmq.url)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "still failing: reaction:-:unknown-class:connection-close/503->" in again.stdout


def test_a_reproducer_found_on_a_throwaway_broker_replays_as_printed(tmp_path: Path) -> None:
    """GarageMQ goes down on an unknown class (triage replays the case alone, twice, on the
    restarted broker: confirmed). Its reproducer names the broker it was found on; the replay
    command the summary prints, pasted into a shell here once that broker is gone, starts a
    throwaway GarageMQ of its own and still fails (status 1)."""
    done = amqpfuzz(
        "run", "--broker", "garagemq", "--operators", "unknown-class", "--valid-share", "0",
        "--max-examples", "20", "--profile", "none", "--out", str(tmp_path), "--seed", "1",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (record,) = [r for r in records_in(tmp_path) if r["verdict"] == "fail"]
    assert record["confirmation"]["rate"] == "2/2"  # type: ignore[index]
    reproducer = str(record["reproducer"])
    data = load_reproducer(reproducer)
    assert data["broker"]["kind"] == "garagemq" and data["verdict"] == "fail"
    printed = next(line for line in done.stdout.splitlines() if reproducer in line)
    command = printed.split("│")[-2].strip()
    assert command.endswith(f" replay {reproducer}"), printed
    again = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "replaying on a throwaway garagemq" in again.stdout
    assert "still failing: liveness:-:unknown-class:" in again.stdout


def test_a_case_past_the_inline_size_is_kept_compressed_and_replays(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    """RabbitMQ takes a body frame past frame-max (131,072 octets): the failing case's bytes
    are kept once, compressed, in a file of a few kilobytes; its steps name their sizes; and
    the file replays the failure."""
    reproducer = first_failure(rabbitmq, "above-frame-max", 30, tmp_path)
    data = load_reproducer(reproducer)
    assert "bytes_hex" not in data and reproducer.stat().st_size < 64 * 1024
    sizes = [step["size"] for step in data["steps"]]
    assert max(sizes) > 131072 and all("hex" not in step for step in data["steps"])
    assert len(zlib.decompress(base64.b64decode(data["bytes_zlib"]))) >= sum(sizes)
    again = amqpfuzz("replay", str(reproducer), "--url", rabbitmq.url)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "still failing: reaction:-:above-frame-max:connection-close/501->" in again.stdout


def test_a_program_reproducer_replays_with_the_command(
    fresh_garagemq: Broker, rabbitmq: Broker, tmp_path: Path
) -> None:
    """GarageMQ never answers tx.select: a stateful run finds it, shrinks the program to that
    one step, replays it from its reproducer before it reports it (every time a failure), and
    the reproducer replays the hang with the command the summary prints (on a URL: GarageMQ's,
    status 1) but not on RabbitMQ, which answers (status 0). The run is three rounds of
    programs, not a time: a step that misses the timeout on a loaded machine is flaky (its
    replays answer), and the rounds after it still find the hang."""
    done = amqpfuzz(
        "run", "--url", fresh_garagemq.url, "--kind", "stateful", "--duration", "120",
        "--max-examples", "60", "--timeout", "1", "--seed", "3", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [r for r in records_in(tmp_path) if r["verdict"] == "fail"]
    assert failed and {r["kind"] for r in failed} == {"stateful"}
    signatures = [r["failure"]["signature"] for r in failed]  # type: ignore[index]
    signature = "stateful:timely answer:tx"
    assert signature in signatures, signatures
    record = failed[signatures.index(signature)]
    assert record["confirmation"]["rate"] == "3/3"  # type: ignore[index]
    reproducer = str(record["reproducer"])
    data = load_reproducer(reproducer)
    # shrunk to the step that hangs (and, if the budget ran out first, little before it)
    assert data["kind"] == "program" and data["steps"][-1] == {"step": "tx", "action": "select"}
    assert len(data["steps"]) <= 3, data["steps"]
    assert data["verdict"] == "fail" and data["timeout"] == 1.0
    printed = next(line for line in done.stdout.splitlines() if reproducer in line)
    command = printed.split("│")[-2].strip()  # the summary's replay cell, as printed
    assert command.endswith(f" replay {reproducer}"), printed
    still = subprocess.run(  # pasted into a shell here: the file's URL and its timeout (1 s)
        command, shell=True, capture_output=True, text=True, timeout=120
    )
    assert still.returncode == 1, still.stdout + still.stderr
    assert f"still failing: {signature}" in still.stdout
    fixed = amqpfuzz("replay", reproducer, "--url", rabbitmq.url, "--timeout", "1")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed" in fixed.stdout


def test_a_stateful_run_reaches_an_amqps_target(tmp_path: Path) -> None:
    """The publisher and consumer connections go through TLS, verified with the CA file."""
    with throwaway("rabbitmq", tls=True) as broker:
        assert broker.tls_url is not None and broker.ca_file is not None
        done = amqpfuzz(
            "run", "--url", broker.tls_url, "--ca-file", str(broker.ca_file),
            "--kind", "stateful", "--duration", "6", "--seed", "2", "--out", str(tmp_path),
        )  # fmt: skip
        plain = amqpfuzz(  # the certificate is checked: without the CA, no connection
            "run", "--url", broker.tls_url, "--kind", "stateful", "--duration", "1",
            "--out", str(tmp_path / "untrusted"),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = records_in(tmp_path)
    assert records and {r["kind"] for r in records} == {"stateful"}
    assert all(r["verdict"] == "pass" for r in records)
    assert sum(int(r["programs"]) for r in records) >= 3  # type: ignore[call-overload]
    assert {r["target"]["url"] for r in records} == {  # type: ignore[index]
        broker.tls_url.replace("guest:guest", "guest")
    }
    assert plain.returncode == 2 and "CERTIFICATE_VERIFY_FAILED" in plain.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"format": 1, "kind": "bogus"}, "unknown kind of reproducer"),
        ({"format": 1, "kind": "program", "steps": "no"}, "needs a list of steps"),
        ({"format": 1, "kind": "case"}, "no bytes_hex"),
        ({"format": 1, "kind": "case", "bytes_zlib": "eJw="}, "bytes_zlib is not base64 of zlib"),
        ({"format": 2}, "not an amqpfuzz reproducer"),
    ],
)
def test_a_file_that_is_no_reproducer_is_one_line(
    content: dict[str, object], says: str, tmp_path: Path
) -> None:
    path = tmp_path / "repro.json"
    path.write_text(json.dumps(content))
    done = amqpfuzz("replay", str(path), "--url", "amqp://127.0.0.1:1/")
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
