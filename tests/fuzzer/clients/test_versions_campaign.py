"""Client libraries at the versions people ship, end to end: a version asked for (``NAME@VERSION``)
is fetched from the library's registry and built on first use, named in every record and
reproducer; ``replay --client NAME@A..B`` finds the release that fixed a failure; a version that
was never published is one line; and a client whose valid scripts all fail stops the campaign
in one line (its shim's own code named), its records so far kept."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.clients.campaign import ClientSettings, run_clients
from amqpfuzz.fuzzer.clients.targets import client_targets
from amqpfuzz.fuzzer.records import load_reproducer, read_records

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"

pytestmark = pytest.mark.slow


def _amqpfuzz(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AMQPFUZZ, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_an_older_release_is_its_own_target_and_the_replay_finds_the_release_that_fixed_it(
    tmp_path: Path,
) -> None:
    # amqp091-go before 1.9.0 never ends its connection.close when a server's reply comes on a
    # channel it closed (the peer's close waits on the channel's): a hang, gone from 1.9.0 on
    settings = ClientSettings(
        shrink=False, max_cases=1, duration=60, seed=1, valid_share=0.0, timeout=2.0,
        operators=("reply-closed-channel",), out=tmp_path,
    )  # fmt: skip
    (client,) = client_targets(("amqp091-go@1.8.1",), (), "0-9-1")
    assert client.label == "amqp091-go@1.8.1" and client.version == "1.8.1"
    (outcome,) = run_clients([client], settings)
    (signature,) = outcome.failures
    assert signature.startswith("hang:amqp091-go:reply-closed-channel:")
    (record,) = [r for f in tmp_path.glob("records-*.jsonl") for r in read_records(f)]
    assert record["target"]["label"] == "amqp091-go@1.8.1"  # type: ignore[index]
    assert record["target"]["version"] == "1.8.1"  # type: ignore[index]
    reproducer = outcome.reproducers[signature]
    assert load_reproducer(reproducer)["client"] == "amqp091-go@1.8.1"
    # the replay as the campaign printed it: on the version it failed
    again = _amqpfuzz("replay", str(reproducer), "--timeout", "2")
    assert again.returncode == 1 and f"still failing: {signature}" in again.stdout, again.stdout
    # and on each release from 1.8.1 to 1.10.0: fixed from 1.9.0 on
    history = _amqpfuzz(
        "replay", str(reproducer), "--client", "amqp091-go@1.8.1..1.10.0", "--timeout", "2"
    )
    assert history.returncode == 0, history.stdout + history.stderr
    rows = [line.split("│")[1:3] for line in history.stdout.splitlines() if "│" in line]
    verdicts = {version.strip(): verdict.strip() for version, verdict in rows}
    assert verdicts == {"1.8.1": "failing", "1.9.0": "fixed", "1.10.0": "fixed"}, history.stdout
    assert "first version where it changes: 1.9.0 (failing -> fixed)" in history.stdout


@pytest.mark.parametrize(
    ("client", "says"),
    [
        ("amqp091-go@9.9.9", "amqp091-go@9.9.9: github.com/rabbitmq/amqp091-go has published no"),
        ("pika@0.0.1", "pika@0.0.1: pika has published no version 0.0.1 on PyPI"),
        ("bunny@1.0", "bunny@1.0: bunny is Debian's package ruby-bunny"),
    ],
)
def test_a_version_never_published_is_one_line_and_status_2(
    client: str, says: str, tmp_path: Path
) -> None:
    run = _amqpfuzz("run", "--client", client, "--duration", "5", "--out", str(tmp_path))
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"amqpfuzz: error: {says}")


def test_a_shim_that_does_not_fit_its_library_stops_the_campaign_in_one_line(
    tmp_path: Path,
) -> None:
    # aiormq 5.0.0's channel has no get method as the shim calls it: every valid script ends
    # in the shim's own AttributeError, which is the shim's, not the library's
    run = _amqpfuzz(
        "run", "--client", "aiormq@5.0.0", "--valid-share", "1", "--duration", "120",
        "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(
        "amqpfuzz: error: client aiormq@5.0.0 does not work as a client at all: "
        "its first 5 valid scripts all failed (crash:aiormq:valid:reply->AttributeError in shim "
        "aiormq_shim.py:"
    ), line
    assert "in the shim's own code" in line
    records = [r for f in tmp_path.glob("records-*.jsonl") for r in read_records(f)]
    assert len(records) == 5 and all(r["verdict"] == "fail" for r in records)
