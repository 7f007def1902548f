"""Client conformance scenarios against the real 1.0 clients: ``amqpfuzz scenarios --client``
plays the client files (amqpfuzz the peer), one connection each, a verdict and a record per
file and client."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.records import read_records

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"

pytestmark = pytest.mark.slow


def test_client_files_are_played_against_each_client_and_recorded(tmp_path: Path) -> None:
    chosen = "aborted or remote-channel or max-frame-size#2 or links#27"
    done = subprocess.run(
        [AMQPFUZZ, "scenarios", "--client", "proton", "--client", "rhea", "-k", chosen,
         "--out", str(tmp_path), "--timeout", "3"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "client conformance (AMQP 1.0)" in done.stdout
    records = [r for f in tmp_path.glob("records-*.jsonl") for r in read_records(f)]
    assert {r["kind"] for r in records} == {"scenario"}
    cells = {(r["target"]["label"], r["spec_ref"]): r for r in records}
    files = {ref for _, ref in cells}
    assert files == {
        "transport:performatives/transfer/aborted#1",
        "transport:performatives/begin/remote-channel#1",
        "transport:performatives/open/max-frame-size#2",
        "transport:links#27",
    }
    assert len(records) == 8  # each file, once per client
    for (client, ref), found in cells.items():
        assert found["target"]["protocol"] == "1.0" and found["target"]["version"]
        assert found["verdict"] in ("pass", "fail", "skip"), (client, ref)
        assert found["scenario"].startswith("1.0/")
    aborted = cells[("proton", "transport:performatives/transfer/aborted#1")]
    assert aborted["expected"]["outcome"] == "reply"  # carry on, deliver nothing of it
    oversized = cells[("proton", "transport:performatives/open/max-frame-size#2")]
    assert oversized["expected"]["condition"] == "amqp:connection:framing-error"
    # python-qpid-proton closes the connection with framing-error on a frame over its maximum
    assert oversized["verdict"] == "pass"
    assert oversized["observed"]["condition"] == "amqp:connection:framing-error"
    # proton discards an aborted delivery's data; that it rounds the file's message times (a
    # known deviation of its profile) does not decide a file about something else
    assert cells[("proton", "transport:links#27")]["verdict"] == "pass"
    failing = [r for r in records if r["verdict"] == "fail"]
    assert (done.returncode == 1) == bool(failing)
    for record in failing:
        assert record["failure"]["signature"].startswith(f"scenario:{record['target']['label']}:")


def test_the_0_9_1_client_files_are_played_against_0_9_1_clients(tmp_path: Path) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "scenarios", "--client", "pika", "--client", "rabbitmq-c", "--out",
         str(tmp_path), "--timeout", "3"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "client conformance (AMQP 0-9-1)" in done.stdout
    records = [r for f in tmp_path.glob("records-*.jsonl") for r in read_records(f)]
    support = [r for r in records if r["spec_ref"] == "connection.start/client-support"]
    assert {r["target"]["label"] for r in support} == {"pika", "rabbitmq-c"}
    for record in support:  # a version the client cannot handle: the socket, without a word
        assert record["expected"]["outcome"] == "socket-close"
        assert record["verdict"] in ("pass", "fail")
        assert (record["verdict"] == "pass") == (record["observed"]["outcome"] == "socket-close")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--client", "pika", "-k", "nothing-is-named-so"], "no client scenario of AMQP 0-9-1"),
        (["--client", "proton", "--broker", "rabbitmq"], "give no --url or --broker"),
        (["--client", "proton", "--protocol", "0-9-1"], "--client proton speaks AMQP 1.0"),
    ],
)
def test_what_a_client_scenario_run_refuses_is_one_line(
    args: list[str], says: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "scenarios", *args, "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert says in line
