"""AMQP 1.0 client campaigns end to end: amqpfuzz's serving 1.0 peer against the three real 1.0
client libraries through their shims (python-qpid-proton, Node's rhea, uamqp's C core): valid
scripts taken by all three, broken ones judged with the condition and scope the specification
requires, their reactions compared, and a failure's reproducer served again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.clients.campaign import ClientSettings, run_clients
from amqpfuzz.fuzzer.clients.shims import SHIMS
from amqpfuzz.fuzzer.clients.targets import ClientTarget, client_targets
from amqpfuzz.fuzzer.records import read_records

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
CLIENTS = ("proton", "rhea", "uamqp")  # the differential's three
EVERY_10 = tuple(n for n, s in SHIMS.items() if s.protocol == "1.0")

pytestmark = pytest.mark.slow


def _records(out: Path) -> list[dict[str, object]]:
    return [r for f in sorted(out.glob("records-*.jsonl")) for r in read_records(f)]


@pytest.mark.parametrize("name", EVERY_10)
def test_each_1_0_client_takes_valid_scripts(name: str, tmp_path: Path) -> None:
    settings = ClientSettings(
        protocol="1.0", shrink=False, max_cases=4, duration=60, seed=2, valid_share=1.0,
        out=tmp_path,
    )  # fmt: skip
    (client,) = client_targets((name,), (), "1.0")
    (outcome,) = run_clients([client], settings)
    assert outcome.cases == 4
    assert not outcome.failures, outcome.messages
    records = _records(tmp_path)
    # (uamqp's drain in its session flows is its bundled profile's deviation: an xfail)
    assert {r["verdict"] for r in records} <= {"pass", "xfail"}
    assert all(r["verdict"] == "pass" or r["deviation"] for r in records)
    target = records[0]["target"]
    assert target["protocol"] == "1.0" and target["version"]  # type: ignore[index]
    # every case saw the client's own message come back, and the script's own deliveries
    events = [e for r in records for e in r["observed"]["events"]]  # type: ignore[index]
    assert events.count("message") >= 4 and events.count("closed") == 4


def test_broken_frames_are_judged_by_condition_and_scope_across_the_three_clients(
    tmp_path: Path,
) -> None:
    settings = ClientSettings(
        protocol="1.0", shrink=False, max_cases=6, duration=120, seed=5, valid_share=0.0,
        operators=("unattached-handle", "doff-small"), out=tmp_path, timeout=3.0,
    )  # fmt: skip
    clients = client_targets(CLIENTS, (), "1.0")
    outcomes = run_clients(clients, settings)
    assert [o.cases for o in outcomes] == [6, 6, 6]
    records = _records(tmp_path)
    judged = [r for r in records if r["kind"] == "client"]
    assert len(judged) == 18
    for record in judged:
        expected = record["expected"]
        if record["mutation"] == "unattached-handle":  # a session error, by its condition
            assert expected["outcome"] == "session-close"  # type: ignore[index]
            assert expected["condition"] == "amqp:session:unattached-handle"  # type: ignore[index]
        else:
            assert expected["condition"] == "amqp:connection:framing-error"  # type: ignore[index]
    # a failure's signature names the client, the operator, what was required and seen
    for outcome in outcomes:
        for signature in outcome.failures:
            _, name, operator, _ = signature.split(":", 3)
            assert name == outcome.client.name and operator in settings.operators  # type: ignore[operator]
    # where the three reacted differently, a differential record says who did what
    for record in (r for r in records if r["kind"] == "differential"):
        assert set(record["observed"]["reactions"]) == set(CLIENTS)  # type: ignore[index]


def test_run_replay_and_bad_input_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [AMQPFUZZ, "run", "--protocol", "1.0", "--client", "proton", "--duration", "6",
         "--seed", "3", "--operators", "invalid-utf8", "--valid-share", "0", "--no-shrink",
         "--out", str(out)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "amqpfuzz clients" in done.stdout
    # python-qpid-proton's binding dies decoding a container-id that is not UTF-8
    (reproducer,) = out.glob("reproducers/client-*.json")
    data = json.loads(reproducer.read_text())
    assert data["protocol"] == "1.0" and data["operator"] == "invalid-utf8"
    again = subprocess.run(
        [AMQPFUZZ, "replay", str(reproducer)], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 1 and f"still failing: {data['signature']}" in again.stdout
    wrong = subprocess.run(
        [AMQPFUZZ, "run", "--protocol", "1.0", "--client", "pika", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 2
    (line,) = wrong.stderr.strip().splitlines()
    assert f"--client pika speaks AMQP 0-9-1, not 1.0 (for 1.0: {', '.join(EVERY_10)})" in line


def test_anyones_shim_needs_no_protocol() -> None:
    client = ClientTarget.of_command("my-shim {url}")
    client.speaks("1.0")
    client.speaks("0-9-1")
