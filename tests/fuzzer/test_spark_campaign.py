"""Campaigns on Spark over a classic session (local mode, ``spark-submit``; real throwaway
brokers): shards run as tasks, their records, the broker's code covered and reproducers
written by Spark's committer where the nightly report reads them. The same job over Spark
Connect, and its faults (a task killed mid-shard, a shard that cannot reach its broker), are
``test_spark_connect.py``'s."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.fuzzer.cluster import job, run_on_spark
from amqpfuzz.fuzzer.cluster.progress import SparkProgress
from amqpfuzz.fuzzer.records import load_reproducer
from amqpfuzz.fuzzer.spark import CAMPAIGN_CONF, FAST_START, local_session

pytestmark = pytest.mark.slow
AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"


def records_of(out: Path, output: str = "records") -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for part in sorted(out.glob(f"spark-*/output={output}/part-*.txt"))
        for line in part.read_text().splitlines()
    ]


def shard_of(record: dict[str, Any]) -> str:
    return str(record["worker"]).rsplit("-", 1)[-1]  # host-pid-s<index>


def test_a_spark_campaign_writes_each_record_once_where_the_report_reads_it(
    tmp_path: Path,
) -> None:
    out, report = tmp_path / "out", tmp_path / "report"
    done = subprocess.run(
        [AMQPFUZZ, "run", "--spark", "local[2]", "--broker", "rabbitmq",
         "--broker", "qpid-broker-j", "--duration", "4", "--seed", "11", "--no-shrink",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "shards 2/2 done: " in done.stdout
    records = records_of(out)
    assert records and len({r["record_id"] for r in records}) == len(records)
    assert {shard_of(r) for r in records} == {"s0", "s1"}
    assert {r["seed"] for r in records} == {"11", "12"}  # a seed per shard
    assert len({r["run_id"] for r in records}) == 1
    for record in records:
        if record.get("reproducer"):
            assert load_reproducer(record["reproducer"])["kind"]  # put in place by the driver
    (totals,) = out.glob("run-*.json")
    assert json.loads(totals.read_text())["protocol"] == "0-9-1"
    # each shard's throwaway broker measured (by default) as its kind is: a RabbitMQ's modules
    # by Erlang's cover, a Broker-J's classes by JaCoCo's agent in its JVM; its points, and a
    # final record
    coverage = records_of(out, "coverage")
    assert {(shard_of(c), c["final"]) for c in coverage} == {
        ("s0", False), ("s0", True), ("s1", False), ("s1", True),
    }  # fmt: skip
    how = {shard_of(c): c["how"] for c in coverage}
    assert how == {"s0": "erlang-cover", "s1": "jacoco"}, how
    assert all(c["target"]["protocol"] == "0-9-1" for c in coverage)
    reported = subprocess.run(
        [AMQPFUZZ, "report", "--in", str(out), "--out", str(report), "--conf", f"spark.driver.extraJavaOptions={FAST_START}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert f"processed {len(records):,} records" in reported.stdout
    # each broker's known deviations (its bundled profile's) are on the page with their reasons
    page = (report / "report.html").read_text()
    for shard in ("s0", "s1"):
        reasons = Counter(
            r["deviation"] for r in records if r["verdict"] == "xfail" and shard_of(r) == shard
        )
        assert reasons, f"a campaign meets the deviations its profile records ({shard})"
        assert 'id="deviations"' in page and escape(reasons.most_common(1)[0][0]) in page
    # the shards' coverage read like a plain run's coverage files
    broker = page[page.index('id="broker-coverage"') :]
    for kind in ("rabbitmq", "qpid-broker-j"):
        assert f"throwaway {kind} · AMQP 0-9-1" in broker[: broker.index("<h2")]


@pytest.fixture(scope="module")
def spark_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local session for the module's tests that run shards in this process."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = local_session("local[2]", CAMPAIGN_CONF, app_name="t-spark",
                            log=tmp_path_factory.mktemp("spark") / "spark.log")  # fmt: skip
    yield session
    session.stop()


def test_client_campaigns_on_spark_a_shard_per_client_and_seed_read_by_the_report(
    spark_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client library per shard (amqpfuzz playing the broker to its shim on the executor):
    each shard's records once, its reproducers put in place, its outcome in its summary; the
    nightly report reads the clients as targets, with their library's version (an older pika
    asked for by version beside today's: two targets)."""
    from amqpfuzz.fuzzer.clients.campaign import ClientSettings
    from amqpfuzz.fuzzer.clients.shims import version
    from amqpfuzz.fuzzer.cluster import plan_clients
    from amqpfuzz.reports.job import run as report

    out = tmp_path / "out"
    settings = ClientSettings(duration=3.0, seed=40, timeout=2.0, shrink=False, out=out)
    clients = ("pika", "rabbitmq-c", "pika@1.3.2")
    shards = plan_clients("clients00001", settings, clients)
    assert [(s.client, s.settings.seed) for s in shards] == list(
        zip(clients, (40, 41, 42), strict=True)
    )
    # the shards done as Spark's status tracker counts the tasks (the progress files apart):
    # what the driver shows of an output it cannot see (HDFS); 3 tasks on 2 cores
    monkeypatch.setattr(job, "read_progress", lambda _, shards: SparkProgress(shards))
    shown: list[SparkProgress] = []
    result = run_on_spark(spark_local, shards, str(out), progress=shown.append, poll=0.2)
    assert {1, 2} & {p.done for p in shown[:-1]} and all(p.done <= 3 for p in shown), shown
    assert shown[-1].done == 3
    assert not result.errors
    records = records_of(out)
    assert len({r["record_id"] for r in records}) == len(records)
    by_client = Counter(r["target"]["label"] for r in records)
    assert set(by_client) == set(clients)
    assert {r["kind"] for r in records} == {"client"}
    for summary in result.summaries:
        found = summary["outcome"]
        assert found["cases"] == by_client[found["client"]] > 0  # every case recorded, once
        asked = found["client"].partition("@")[2]
        assert found["version"] == (asked or version(found["client"]))
        for name in found["reproducers"].values():
            assert load_reproducer(out / "reproducers" / name)["kind"] == "client"
    summary = report(spark_local, [str(out)], str(tmp_path / "report"))
    assert summary.records == len(records)
    page = (tmp_path / "report" / "report.html").read_text()
    targets = page[page.index('id="targets"') : page.index('id="new"')]
    assert all(f"<td>{client}</td>" in targets for client in clients)
    for found in ("pika", "rabbitmq-c", "1.3.2"):  # the runs: each with its library's version
        assert escape(f"{version(found) if found != '1.3.2' else found} · AMQP 0-9-1") in page


def test_the_same_campaign_under_spark_submit(tmp_path: Path) -> None:
    """``spark-submit`` with the submit script and ``amqpfuzz run``'s options: the session is
    spark-submit's; the records and totals land as with ``--spark``."""
    import amqpfuzz.fuzzer.cluster.submit as submit

    out = tmp_path / "out"
    python = sys.executable
    done = subprocess.run(
        [str(Path(python).parent / "spark-submit"), "--master", "local[2]", submit.__file__,
         "--broker", "rabbitmq", "--no-coverage", "--duration", "3", "--seed", "2",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr[-3000:]
    assert "shards 1/1 done: " in done.stdout
    records = records_of(out)
    assert records and {shard_of(r) for r in records} == {"s0"}
    assert list(out.glob("run-*.json"))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--spark", "sc://127.0.0.1:9", "--broker", "rabbitmq"],  # (discard: nobody there)
         "cannot reach Spark Connect at sc://127.0.0.1:"),
        (["--shards", "2", "--broker", "rabbitmq"], "--shards splits a Spark campaign"),
        (["--broker", "rabbitmq", "--broker", "garagemq"], "one --broker at a time"),
        (["--spark", "local[2]", "--kind", "stateful"], "--spark runs fuzz campaigns"),
        (["--client", "pika", "--shards", "2"], "--shards splits a Spark campaign"),
    ],
)  # fmt: skip
def test_what_a_spark_run_refuses_is_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "run", *args, "--out", str(tmp_path)], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("amqpfuzz: error: ") and says in line
    assert not list(tmp_path.iterdir())
