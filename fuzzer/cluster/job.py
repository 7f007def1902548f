"""The driver's side of a Spark campaign: the job, its progress, and its output.

The job is a DataFrame's: a row per shard (``spark.range`` with a partition each), and each
task runs its shard inside ``mapInArrow``, handing back its output as Arrow batches of
``(output, name, line)`` rows (the shards' plans travel with the task's function). Spark's text
writer commits them under ``OUT/spark-<run>/`` partitioned by ``output``: ``output=records``
(JSON lines the nightly report reads like any record file), ``output=coverage`` (the broker's
code covered, read like any ``coverage-*.jsonl`` file), ``reproducers``, ``summaries`` and
``errors``. The same job runs over a classic session (``local[N]``, a cluster's master,
``spark-submit``) and over Spark Connect (``sc://``): it uses neither the RDD API nor
accumulators. Spark commits a task's files only when the attempt succeeds, so a task killed
mid-shard and retried leaves each record once. Afterwards the driver puts each reproducer in
``OUT/reproducers/`` (where the records say it is) and the run's totals beside them, when the
output path is on its file system.

The live progress comes from the files the shards keep in the output (:mod:`.progress`), and
the shards done at least from Spark's own count of the tasks completed.
A shard that cannot go on (its broker does not start, its URL does not answer) hands back one
line in an ``errors`` row instead of failing the job: the other shards finish.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

import pyarrow as pa
from py4j.protocol import Py4JError
from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from amqpfuzz.spec import AmqpfuzzError

from .clients import ClientShard, run_client_shard
from .progress import ShardTicker, SparkProgress, read_progress
from .shards import Shard
from .task import Row, run_shard

__all__ = ["SUBMITTED", "SparkProgress", "SparkRun", "run_on_spark"]

SUBMITTED = "submitted"  # --spark's value under spark-submit: the session it made

COLUMNS = ("output", "name", "line")
SCHEMA = StructType([StructField(c, StringType()) for c in COLUMNS])
BATCH = 2000  # rows per Arrow batch a task hands back


@dataclass
class SparkRun:
    """What a Spark campaign came to: per shard its summary, the shards' errors, where the
    output is (``here``: whether it is on the driver's file system too)."""

    output: str
    summaries: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    here: bool = True


def _local(out: str) -> Path | None:
    """The output path as a path of a file system (None: HDFS, object storage)."""
    parsed = urlparse(out)
    if parsed.scheme in ("", "file"):
        return Path(os.path.abspath(parsed.path if parsed.scheme else out))
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
    target = f"{where}/spark-{shards[0].run_id}"
    ticks = None
    made = local is not None and not local.exists()
    if local is not None:  # made here: a task writes progress only where the driver sees it
        ticks = f"{where}/_progress-{shards[0].run_id}"  # (`_`: hidden from Spark's readers)
        Path(ticks).mkdir(parents=True, exist_ok=True)
    plans = list(shards)

    def shard_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from _batches(_rows(plans[index], where, ticks))

    frame = spark.range(len(plans), numPartitions=len(plans)).mapInArrow(shard_batches, SCHEMA)
    stop = threading.Event()
    watcher = None
    tasks = _Tasks(spark, f"amqpfuzz-{shards[0].run_id}")
    if progress is not None:
        watcher = threading.Thread(
            target=_watch, args=(ticks, tasks, len(plans), progress, stop, poll), daemon=True,
            name="amqpfuzz-spark-progress",
        )  # fmt: skip
        watcher.start()
    try:
        frame.select("output", "line").write.partitionBy("output").mode("error").text(target)
    except BaseException:
        if tasks.connect:  # the server's job goes on unless it is told to stop
            spark.interruptAll()
        raise
    finally:
        stop.set()
        tasks.close()
        if watcher is not None:
            watcher.join()
        if ticks is not None:
            shutil.rmtree(ticks, ignore_errors=True)
        if made and local is not None and not any(local.iterdir()):
            local.rmdir()  # made for the progress only: the output is a server's, elsewhere
    result = _collect(spark, target, local)
    if progress is not None:
        progress(_final(result, len(plans)))
    return result


def _watch(
    ticks: str | None,
    tasks: _Tasks,
    shards: int,
    progress: Callable[[SparkProgress], None],
    stop: threading.Event,
    poll: float,
) -> None:
    """Hand ``progress`` the shards' progress each time it changes, until ``stop``: from their
    files (``ticks``: where the driver sees them), the shards done at least as Spark counts its
    tasks (an output the driver cannot see has no files for it)."""
    seen = None
    while not stop.wait(poll):
        try:
            now = read_progress(Path(ticks), shards) if ticks else SparkProgress(shards)
            now.done = min(shards, max(now.done, tasks.done()))
        except (OSError, ValueError, KeyError):  # a file system whose renames are not atomic
            continue  # (some NFS) showed a file half written: read again at the next poll
        except Py4JError:  # the driver's JVM is going: the job's end says the rest
            return
        if now != seen and (seen is not None or now.cases or now.done):
            progress(now)
            seen = now


class _Tasks:
    """The job's tasks completed, as Spark reports them: a Connect session's progress
    messages, a classic session's status tracker."""

    def __init__(self, spark: SparkSession, group: str) -> None:
        self.spark, self.group = spark, group
        self.connect = type(spark).__module__.startswith("pyspark.sql.connect")
        self.completed = 0
        if self.connect:
            spark.registerProgressHandler(cast(Any, self))  # called as a ProgressHandler is
        else:  # (the thread that runs the job: its jobs are the group's)
            spark.sparkContext.setJobGroup(group, "amqpfuzz campaign shards")

    def __call__(self, stages: Iterable[Any] | None, *_: Any, **__: Any) -> None:
        """A Connect progress message (on the thread that waits for the job)."""
        found = max((stage.num_completed_tasks for stage in stages or ()), default=0)
        self.completed = max(self.completed, found)  # (the job's one stage: a task per shard)

    def done(self) -> int:
        if not self.connect:
            tracker = self.spark.sparkContext.statusTracker()
            for job in tracker.getJobIdsForGroup(self.group):
                for stage in getattr(tracker.getJobInfo(job), "stageIds", ()):
                    info = tracker.getStageInfo(stage)
                    if info is not None:
                        self.completed = max(self.completed, info.numCompletedTasks)
        return self.completed

    def close(self) -> None:
        if self.connect:
            self.spark.removeProgressHandler(cast(Any, self))
        else:  # (no group again: a later job of the session's is not this one's)
            for name in ("spark.jobGroup.id", "spark.job.description"):
                self.spark.sparkContext.setLocalProperty(name, cast(str, None))


def _final(result: SparkRun, shards: int) -> SparkProgress:
    """The progress at the end, from what the shards committed."""
    targets = [t for s in result.summaries for t in s["targets"]]
    found = {signature for t in targets for signature in t["signatures"]}
    return SparkProgress(
        shards, len(result.summaries) + len(result.errors), sum(t["cases"] for t in targets),
        sum(t["failures"] for t in targets), len(found),
    )  # fmt: skip


def _batches(rows: Iterable[Row]) -> Iterator[pa.RecordBatch]:
    """``rows`` as Arrow batches of the job's schema."""
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == BATCH:
            yield _batch(chunk)
            chunk = []
    if chunk:
        yield _batch(chunk)


def _batch(rows: list[Row]) -> pa.RecordBatch:
    columns = [pa.array([row[i] for row in rows], pa.string()) for i in range(len(COLUMNS))]
    return pa.RecordBatch.from_arrays(columns, names=list(COLUMNS))


def _rows(shard: Shard | ClientShard, out: str, ticks: str | None) -> list[Row]:
    """A shard's rows, its progress kept under ``ticks``; a shard that cannot go on, one
    ``errors`` row that says why."""
    context = TaskContext.get()
    ticker = ShardTicker(ticks, shard.index, context.attemptNumber() if context else 0)
    ticker.start()
    try:
        if isinstance(shard, ClientShard):
            rows = run_client_shard(shard, out, ticker.case)
        else:
            rows = list(run_shard(shard, out, ticker.event))
    except AmqpfuzzError as exc:  # its first line: a broker's error goes on with its log
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        rows = [("errors", f"shard-{shard.index}", f"shard {shard.index} ({shard.where}): {why}")]
    ticker.finish()  # (an attempt that fails otherwise is not done: its retry will be)
    return rows


# what only the nightly report reads: the driver leaves it where it was committed
_REPORTED = ("records", "coverage")


def _written(spark: SparkSession, target: str, here: bool) -> list[tuple[str, str]]:
    """The committed rows but the records and coverage records, as (output, line): read
    straight from the files when they are on this machine (a Spark job to read a few lines
    costs seconds), through Spark otherwise."""
    if not here:
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
    """The committed output: summaries and errors for the driver; reproducers put in place
    when the output is on this machine (a Connect server's may be on its own)."""
    here = local is not None and (Path(target) / "_SUCCESS").is_file()
    result = SparkRun(target, here=here)
    for output, line in _written(spark, target, here):
        if output == "summaries":
            result.summaries.append(json.loads(line))
        elif output == "errors":
            result.errors.append(line)
        elif output == "reproducers" and local is not None and here:
            data = json.loads(line)
            path = local / "reproducers" / Path(str(data["name"])).name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data["content"], indent=2) + "\n", encoding="utf-8")
    result.summaries.sort(key=lambda s: int(s["shard"]))
    return result
