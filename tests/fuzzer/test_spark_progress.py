"""The parts of a Spark campaign that need no Spark: the progress files the shards keep and the
driver reads, and a failed job said in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.cluster.progress import ShardTicker, SparkProgress, read_progress
from amqpfuzz.fuzzer.engine.events import FailureFound, Progress
from amqpfuzz.fuzzer.spark import failure_line


def found(signature: str, flaky: bool = False) -> FailureFound:
    return FailureFound("t", signature, "case", "r.json", flaky=flaky)


def test_the_driver_sums_each_shards_newest_attempt(tmp_path: Path) -> None:
    ticks = str(tmp_path / "_progress")
    Path(ticks).mkdir()  # (the driver makes it)
    killed = ShardTicker(ticks, 0, attempt=0, every=0.0)
    killed.start()
    killed.event(Progress(cases=500, failures=9, xfails=0))
    killed.event(found("a"))
    assert read_progress(Path(ticks), 2) == SparkProgress(2, 0, 500, 9, 1)
    retried = ShardTicker(ticks, 0, attempt=1, every=0.0)
    retried.start()  # the retry starts again: the killed attempt no longer counts
    assert read_progress(Path(ticks), 2) == SparkProgress(2, 0, 0, 0, 0)
    retried.event(Progress(cases=40, failures=2, xfails=1))
    retried.event(found("a"))
    retried.event(found("b", flaky=True))  # not a failure: its replays did not all fail
    client = ShardTicker(ticks, 1, every=0.0)
    client.start()
    client.case(failed=True, signature="a")
    client.case(failed=True, signature="c")
    client.case(failed=False, signature="d")  # a known deviation's signature: not a failure
    client.finish()
    assert read_progress(Path(ticks), 2) == SparkProgress(2, 1, 43, 4, 2)
    retried.finish()
    assert read_progress(Path(ticks), 2).done == 2
    assert sorted(p.name for p in Path(ticks).iterdir()) == [
        "shard-0.attempt-0.json", "shard-0.attempt-1.json", "shard-1.attempt-0.json",
    ]  # fmt: skip


def test_a_shard_writes_at_most_every_interval_but_always_its_end(tmp_path: Path) -> None:
    ticks = tmp_path / "_progress"
    ticks.mkdir()
    ticker = ShardTicker(str(ticks), 3, every=3600.0)
    ticker.start()
    for cases in range(1, 50):
        ticker.event(Progress(cases=cases, failures=0, xfails=0))
    state = json.loads((ticks / "shard-3.attempt-0.json").read_text())
    assert (state["cases"], state["done"]) == (0, False)  # the start's, none since
    ticker.finish()
    state = json.loads((ticks / "shard-3.attempt-0.json").read_text())
    assert (state["cases"], state["done"]) == (49, True)


def test_no_directory_keeps_no_file(tmp_path: Path) -> None:
    # an output path on HDFS (None), or a directory of the driver's this executor does not
    # share (or the driver removed at the job's end): the shard counts all the same
    for directory in (None, str(tmp_path / "_progress-elsewhere")):
        ticker = ShardTicker(directory, 0, every=0.0)
        ticker.start()
        ticker.case(failed=True, signature="a")
        ticker.finish()
        assert (ticker.cases, ticker.failures) == (1, 1)
    assert not list(tmp_path.iterdir())
    assert read_progress(tmp_path / "_progress-elsewhere", 4) == SparkProgress(4)


class Failed(Exception):
    pass


def test_a_failed_job_is_the_tasks_own_exception_in_one_line() -> None:
    worker = Failed(
        "\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most "
        "recent call last):\n"
        '  File "worker.py", line 4207, in invoke_udf\n'
        "    func = read_udfs(\n"
        "ModuleNotFoundError: No module named 'amqpfuzz'\n"
        " SQLSTATE: 38000"
    )
    assert failure_line(worker) == (
        "ModuleNotFoundError: No module named 'amqpfuzz' (the executors' Python needs amqpfuzz "
        "installed: PYSPARK_PYTHON)"
    )
    assert failure_line(Failed("\n[PATH_NOT_FOUND] Path does not exist: /x. SQLSTATE: 42K03\n"
                               "JVM stacktrace: ...")) == (
        "[PATH_NOT_FOUND] Path does not exist: /x."
    )  # fmt: skip
    assert failure_line(Failed("")) == "Failed"


def test_a_progress_file_that_cannot_be_written_does_not_stop_the_shard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "shard-2.attempt-0.json").mkdir()  # where its file goes, a directory
    ticker = ShardTicker(str(tmp_path), 2, every=0.0)
    ticker.start()
    ticker.case(failed=False, signature=None)
    ticker.finish()
    assert ticker.cases == 1 and ticker.directory is None
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("amqpfuzz: shard 2: no progress file (")
