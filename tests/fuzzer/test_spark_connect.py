"""Campaigns over Spark Connect: a real Connect server started from pyspark's own jars (a task
tried twice: ``local[2,2]``), ``amqpfuzz run --spark sc://…`` and ``amqpfuzz report --remote``
against it, as a user runs them; a task killed mid-shard is retried and its records are there
once; a shard that cannot reach its broker is one line and the others finish; client shards run
as broker shards do.

A Connect session changes its process's environment (pyspark marks it Connect-only), which the
classic sessions of other tests must not inherit: the command lines run in processes of their
own, and the session made here is undone after its test."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from amqpfuzz.fuzzer.brokers import free_port
from amqpfuzz.fuzzer.cluster import job, plan, run_on_spark
from amqpfuzz.fuzzer.cluster.progress import SparkProgress
from amqpfuzz.fuzzer.engine.campaign import CampaignSettings
from amqpfuzz.fuzzer.records import load_reproducer
from amqpfuzz.fuzzer.spark import CAMPAIGN_CONF, SessionError, connect_server, remote_session
from tests.fuzzer.test_spark_campaign import AMQPFUZZ, records_of, shard_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server on a free port for the module's tests; its URL."""
    log = tmp_path_factory.mktemp("connect") / "server.log"
    with connect_server(free_port(), master="local[2,2]", conf=CAMPAIGN_CONF, log=log) as server:
        yield server.url


@pytest.fixture
def session(connect: str) -> Iterator[Any]:
    """A Connect session in this process, for one test: the environment pyspark marks as
    Connect-only is put back after it."""
    before = set(os.environ)
    spark = remote_session(connect, app_name="t-spark-connect")
    yield spark
    spark.stop()
    for name in set(os.environ) - before:
        if name.startswith("SPARK_"):
            del os.environ[name]


def amqpfuzz(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AMQPFUZZ, *args], capture_output=True, text=True, timeout=timeout)


def summaries_of(out: Path) -> list[dict[str, Any]]:
    return sorted(records_of(out, "summaries"), key=lambda s: int(s["shard"]))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A Connect server started as the README says (``amqpfuzz spark-connect``): its URL and
    the command's process."""
    port = free_port()
    command = subprocess.Popen(
        [AMQPFUZZ, "spark-connect", "--port", str(port), "--log", str(tmp_path / "connect.log"),
         "--conf", "spark.driver.memory=1g"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert command.stdout is not None
        said = command.stdout.readline()
        assert said.startswith(f"Spark Connect at sc://127.0.0.1:{port} "), said
        yield f"sc://127.0.0.1:{port}", command
    finally:
        command.kill()
        command.wait()


def _servers(port: int) -> list[int]:
    """The Connect server processes on ``port``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (
                f"spark.connect.grpc.binding.port={port}".encode()
                in (entry / "cmdline").read_bytes()
            ):
                found.append(int(entry.name))
        except OSError:
            continue  # it ended while we looked
    return found


def test_a_campaign_over_spark_connect_and_its_report(
    served: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    connect, command = served
    out, report = tmp_path / "out", tmp_path / "report"
    done = amqpfuzz("run", "--spark", connect, "--broker", "rabbitmq", "--shards", "2",
                    "--duration", "5", "--seed", "21", "--no-shrink", "--no-coverage",
                    "--out", str(out))  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"on Spark ({connect}): 2 shard(s)" in done.stdout
    records = records_of(out)
    assert records and len({r["record_id"] for r in records}) == len(records)
    assert {shard_of(r) for r in records} == {"s0", "s1"}
    assert {r["seed"] for r in records} == {"21", "22"}
    # the progress came from the shards' files, and was live: cases before the last line
    lines = [line for line in done.stdout.splitlines() if line.startswith("shards ")]
    cases = sum(t["cases"] for s in summaries_of(out) for t in s["targets"])
    assert lines[-1].startswith(f"shards 2/2 done: {cases} cases, ") and cases == len(records)
    live = [int(line.split(": ")[1].split(" cases")[0]) for line in lines[:-1]]
    assert any(0 < n < cases for n in live), lines  # cases counted while the shards ran
    assert not list(out.glob("_progress-*"))  # the driver removed them
    for record in records:
        if record.get("reproducer"):
            assert load_reproducer(record["reproducer"])["kind"]
    (totals,) = out.glob("run-*.json")
    assert json.loads(totals.read_text())["protocol"] == "0-9-1"
    reported = amqpfuzz("report", "--in", str(out), "--out", str(report), "--remote", connect)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert f"processed {len(records):,} records" in reported.stdout
    # both shards: the run's two workers, every case of each
    (run,) = pq.read_table(report / "runs").to_pylist()
    assert (run["target_label"], run["workers"], run["cases"]) == (
        "throwaway rabbitmq", 2, len(records),
    )  # fmt: skip
    # the server ends with the command that started it, SIGKILL included
    port = int(connect.rsplit(":", 1)[1])
    assert _servers(port)
    command.kill()
    command.wait()
    deadline = time.monotonic() + 30
    while _servers(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _servers(port)


def _parent(pid: int) -> int:
    return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


def _ours(pid: int) -> bool:
    """Whether this process started ``pid`` (through the Connect server it started and the
    server's Python daemon): other Spark jobs on the machine are not touched."""
    for _ in range(8):
        pid = _parent(pid)
        if pid == os.getpid():
            return True
        if pid <= 1:
            return False
    return False


def _shard_workers() -> set[int]:
    """This test's PySpark worker processes running a shard: those with a child that is not
    Python (the shard's throwaway broker; the PySpark daemon's children are Python workers)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if "python" in (entry / "comm").read_text():
                continue
            parent = _parent(int(entry.name))
            command = (Path("/proc") / str(parent) / "cmdline").read_bytes()
            if b"pyspark.daemon" in command and _ours(parent):
                found.add(parent)
        except (OSError, ValueError, IndexError):
            continue  # it ended while we looked
    return found


def test_a_task_killed_mid_shard_is_retried_and_its_records_are_there_once(
    session: Any, tmp_path: Path
) -> None:
    # (over AMQP 1.0: a shard's family is its settings'; 0-9-1's are the first test's)
    settings = CampaignSettings(
        duration=6.0, seed=3, valid_share=1.0, traffic_share=0.0, state_share=0.0, shrink=False,
        protocol="1.0",
    )  # fmt: skip
    shards = plan("killed000001", settings, brokers=("rabbitmq", "rabbitmq"), coverage=False)
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            workers = _shard_workers()
            if workers:
                time.sleep(6.0)  # mid-shard: its broker starting or up, its campaign running
                worker = sorted(workers)[0]
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    result = run_on_spark(session, shards, str(tmp_path / "out"))
    killer.join(5)
    assert killed, "no task's process was killed"
    assert result.errors == []
    records = records_of(tmp_path / "out")
    assert len({r["record_id"] for r in records}) == len(records)
    workers = {(shard_of(r), r["worker"]) for r in records}
    assert sorted(s for s, _ in workers) == ["s0", "s1"]  # one attempt's records per shard
    assert {r["target"]["protocol"] for r in records} == {"1.0"}
    assert all(f"-{killed[0]}-" not in w for _, w in workers)  # none of the killed attempt's
    cases = Counter(shard_of(r) for r in records)
    for summary in result.summaries:
        (target,) = summary["targets"]
        assert cases[f"s{summary['shard']}"] == target["cases"]  # every case judged, once


def test_a_shard_that_cannot_reach_its_broker_is_one_line_and_the_others_finish(
    session: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (over AMQP 0-10, the other shard on a throwaway Broker-J, unmeasured; the command line
    # refuses a URL it cannot reach before any shard starts, so the job is run here)
    settings = CampaignSettings(
        duration=2.0, seed=5, valid_share=1.0, traffic_share=0.0, state_share=0.0, shrink=False,
        confirm=0, protocol="0-10",
    )  # fmt: skip
    nobody = f"amqp://guest:guest@127.0.0.1:{free_port()}/"
    shards = plan(
        "unreached001", settings, urls=(nobody,), brokers=("qpid-broker-j",), coverage=False
    )
    # the shards done as the Connect server's progress messages count the tasks (the progress
    # files apart): what the driver shows of an output it cannot see
    monkeypatch.setattr(job, "read_progress", lambda _, shards: SparkProgress(shards))
    shown: list[SparkProgress] = []
    result = run_on_spark(session, shards, str(tmp_path / "out"), progress=shown.append)
    assert 1 in [p.done for p in shown[:-1]], shown  # the unreachable one, while the other runs
    assert (shown[-1].done, shown[-1].cases) == (2, result.summaries[0]["targets"][0]["cases"])
    (error,) = result.errors
    assert error.startswith("shard 0 (amqp://guest@127.0.0.1:") and "\n" not in error
    assert "guest:guest" not in error
    (summary,) = result.summaries
    assert summary["shard"] == 1 and summary["targets"][0]["cases"] > 0
    records = records_of(tmp_path / "out")
    assert {shard_of(r) for r in records} == {"s1"}
    assert {(r["target"]["product"], r["target"]["protocol"]) for r in records} == {
        ("Apache Qpid Broker-J Core", "0-10")
    }


def test_client_shards_over_spark_connect(connect: str, tmp_path: Path) -> None:
    """A client library per shard, as broker shards run: each shard's records once, every
    case in its summary, the client summary table printed by the driver."""
    out = tmp_path / "out"
    done = amqpfuzz("run", "--spark", connect, "--client", "pika", "--client", "amqp091-go",
                    "--duration", "3", "--seed", "40", "--out", str(out))  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    records = records_of(out)
    assert len({r["record_id"] for r in records}) == len(records)
    by_client = Counter(r["target"]["label"] for r in records)
    assert set(by_client) == {"pika", "amqp091-go"}
    for summary in summaries_of(out):
        found = summary["outcome"]
        assert found["cases"] == by_client[found["client"]] > 0
        assert found["client"] in done.stdout


def test_a_port_taken_is_one_error_before_any_server_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = pytest.raises(SessionError, match=f"on 127.0.0.1:{port}: Address already in use")
        with refused, connect_server(port, log=tmp_path / "server.log"):
            pass
    assert not (tmp_path / "server.log").exists()


def test_executors_without_amqpfuzz_are_one_line(tmp_path: Path) -> None:
    """A Connect server whose Python workers cannot import amqpfuzz (a bare environment of the
    same Python): the job fails, and the run says why in one line, exit status 2."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    log = tmp_path / "server.log"
    python = str(bare / "bin" / "python")
    with connect_server(free_port(), conf=CAMPAIGN_CONF, log=log, python=python) as server:
        done = amqpfuzz("run", "--spark", server.url, "--broker", "rabbitmq", "--duration", "2",
                        "--no-coverage", "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "amqpfuzz: error: the Spark job failed: ModuleNotFoundError: No module named 'amqpfuzz' "
        "(the executors' Python needs amqpfuzz installed: PYSPARK_PYTHON)"
    )
