"""The driver's side of a Spark campaign: the job, its progress, and its output.

The shards go out one per task (``parallelize`` with a partition each); each task's rows are
written by Spark's text writer under ``OUT/spark-<run>/`` partitioned by ``output``:
``output=records`` (JSON lines the nightly report reads like any record file),
``output=coverage`` (the broker's code covered, read like any ``coverage-*.jsonl`` file),
``reproducers``, ``summaries`` and ``errors``. Spark commits a task's files only when the
attempt succeeds, so a task killed mid-shard and retried leaves each record once. Afterwards
the driver puts each reproducer in ``OUT/reproducers/`` (where the records say it is) and the
run's totals beside them, when the output path is on its file system.

A shard that cannot go on (its broker does not start, its URL does not answer) hands back one
line in an ``errors`` row instead of failing the job: the other shards finish.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark import AccumulatorParam
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from amqpfuzz.spec import AmqpfuzzError

from .clients import ClientShard, run_client_shard
from .shards import Shard
from .task import Row, run_shard

__all__ = ["SUBMITTED", "SparkProgress", "SparkRun", "run_on_spark"]

SUBMITTED = "submitted"  # --spark's value under spark-submit: the session it made

SCHEMA = StructType(
    [StructField("output", StringType()), StructField("name", StringType()),
     StructField("line", StringType())]
)  # fmt: skip


@dataclass
class SparkProgress:
    """What the driver knows while the job runs: shards done of all, cases, failures, and
    the distinct failure signatures of the shards done."""

    shards: int
    done: int = 0
    cases: int = 0
    failures: int = 0
    signatures: int = 0


@dataclass
class SparkRun:
    """What a Spark campaign came to: per shard its summary, the shards' errors, where the
    output is."""

    output: str
    summaries: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Union(AccumulatorParam):  # type: ignore[type-arg]
    """An accumulator of a set: the signatures found."""

    def zero(self, value: set[str]) -> set[str]:
        return set()

    def addInPlace(self, value1: set[str], value2: set[str]) -> set[str]:
        value1 |= value2
        return value1


def _local(out: str) -> Path | None:
    """The output path on this machine's file system, or None (HDFS, object storage)."""
    parsed = urlparse(out)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else out).resolve()
    return None


def run_on_spark(
    spark: SparkSession,
    shards: Sequence[Shard | ClientShard],
    out: str,
    progress: Callable[[SparkProgress], None] | None = None,
    poll: float = 0.5,
) -> SparkRun:
    """Run ``shards`` on the session's executors and write their output under ``out``."""
    if not shards:
        raise AmqpfuzzError("a Spark campaign needs at least one shard")
    local = _local(out)
    where = str(local) if local is not None else out.rstrip("/")
    run_id = shards[0].run_id
    sc = spark.sparkContext
    cases, failures, done = sc.accumulator(0), sc.accumulator(0), sc.accumulator(0)
    signatures = sc.accumulator(set(), _Union())

    def shard_rows(_: int, items: Any) -> Any:
        for shard in items:
            rows = _rows(shard, where)
            for output, _name, line in rows:
                if output == "summaries":
                    for target in json.loads(line)["targets"]:
                        cases.add(target["cases"])
                        failures.add(target["failures"])
                        signatures.add(set(target["signatures"]))
            done.add(1)
            yield from rows

    rdd = sc.parallelize(shards, len(shards)).mapPartitionsWithIndex(shard_rows)
    frame = spark.createDataFrame(rdd, SCHEMA)
    target = f"{where}/spark-{run_id}"
    stop = threading.Event()
    watcher = None
    if progress is not None:

        def watch() -> None:
            seen = None
            while not stop.wait(poll):
                now = SparkProgress(
                    len(shards), done.value, cases.value, failures.value, len(signatures.value)
                )
                if now != seen:
                    progress(now)
                    seen = now

        watcher = threading.Thread(target=watch, daemon=True, name="amqpfuzz-spark-progress")
        watcher.start()
    try:
        frame.select("output", "line").write.partitionBy("output").mode("errorifexists").text(
            target
        )
    finally:
        stop.set()
        if watcher is not None:
            watcher.join()
    if progress is not None:
        progress(SparkProgress(len(shards), done.value, cases.value, failures.value,
                               len(signatures.value)))  # fmt: skip
    return _collect(spark, target, local)


def _rows(shard: Shard | ClientShard, out: str) -> list[Row]:
    """A shard's rows; a shard that cannot go on, one ``errors`` row that says why."""
    try:
        if isinstance(shard, ClientShard):
            return run_client_shard(shard, out)
        return list(run_shard(shard, out))
    except AmqpfuzzError as exc:  # its first line: a broker's error goes on with its log
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return [("errors", f"shard-{shard.index}", f"shard {shard.index} ({shard.where}): {why}")]


# what only the nightly report reads: the driver leaves it where it was committed
_REPORTED = ("records", "coverage")


def _written(spark: SparkSession, target: str, local: Path | None) -> list[tuple[str, str]]:
    """The committed rows but the records and coverage records, as (output, line): read
    straight from the files when they are on this machine (a Spark job to read a few lines
    costs seconds)."""
    if local is None:
        written = spark.read.text(target)  # with the partition column `output`
        wanted = written.where(~written.output.isin(*_REPORTED))
        return [(r.output, r.value) for r in wanted.collect()]
    found = []
    for part in sorted(Path(target).glob("output=*/part-*")):
        output = part.parent.name.split("=", 1)[1]
        if output not in _REPORTED:
            found += [(output, line) for line in part.read_text(encoding="utf-8").splitlines()]
    return found


def _collect(spark: SparkSession, target: str, local: Path | None) -> SparkRun:
    """The committed output: summaries and errors for the driver; reproducers put in place."""
    result = SparkRun(target)
    for output, line in _written(spark, target, local):
        if output == "summaries":
            result.summaries.append(json.loads(line))
        elif output == "errors":
            result.errors.append(line)
        elif output == "reproducers" and local is not None:
            data = json.loads(line)
            path = local / "reproducers" / Path(str(data["name"])).name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data["content"], indent=2) + "\n", encoding="utf-8")
    result.summaries.sort(key=lambda s: int(s["shard"]))
    return result
