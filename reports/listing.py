"""Listing a report's input: which files, in which state.

Everything goes through Spark (the listing too), so the same code reads a local directory, HDFS
or object storage. The listing comes back to the driver, which decides what to read: finished
``records-*.jsonl`` files always, and the part files a Spark campaign's job committed under
``output=records``; ``*.jsonl.part`` files once they have not changed for the settle time
(older ones are abandoned runs whose records still count). The broker's coverage files
(``coverage-*.jsonl``, and a Spark campaign's ``output=coverage``) and the runs' totals
(``run-*.json``) are listed with them, under the same rules.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from amqpfuzz.fuzzer.spark import failure_line
from amqpfuzz.spec import AmqpfuzzError

__all__ = ["INPUT_GLOB", "SETTLE", "InputFile", "ReportInputError", "list_inputs"]

# What a fuzzer leaves in its directory: finished files, files being written, run totals, the
# broker's coverage; and what a Spark campaign's job committed (its records' part files under
# `output=records`, its coverage records' under `output=coverage`).
INPUT_GLOB = (
    "{records-*.jsonl,records-*.jsonl.part,coverage-*.jsonl,coverage-*.jsonl.part,run-*.json,"
    "part-*.txt}"
)
SPARK_RECORDS = "/output=records/"
SPARK_COVERAGE = "/output=coverage/"
SETTLE = dt.timedelta(minutes=10)


class ReportInputError(AmqpfuzzError):
    """Input the report cannot be made from: says which directory or file."""


@dataclass(frozen=True, slots=True)
class InputFile:
    path: str  # as Spark lists it (a URI: file:/..., hdfs://...)
    size: int
    modified_us: int  # microseconds since the epoch
    state: str  # complete | abandoned | writing | totals

    @property
    def read(self) -> bool:
        return self.state in ("complete", "abandoned")

    @property
    def contents(self) -> str:
        """What it holds: ``records``, ``coverage`` (the broker's) or ``totals`` (a run file)."""
        if self.state == "totals":
            return "totals"
        name = self.path.rsplit("/", 1)[-1]
        if name.startswith("coverage-") or SPARK_COVERAGE in self.path:
            return "coverage"
        return "records"


def _state(name: str, modified_us: int, settled_before_us: int) -> str:
    if name.endswith(".json"):
        return "totals"
    if name.endswith(".part"):
        return "abandoned" if modified_us < settled_before_us else "writing"
    return "complete"


def list_inputs(
    spark: SparkSession, inputs: Sequence[str], now: dt.datetime, settle: dt.timedelta = SETTLE
) -> list[InputFile]:
    """The record and totals files under ``inputs`` (recursively), each with its state."""
    try:
        rows = (
            spark.read.format("binaryFile")  # lists without reading: no `content` is selected
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", INPUT_GLOB)
            .load(list(inputs))
            .select("path", "length", F.unix_micros("modificationTime").alias("modified"))
            .collect()
        )
    except AnalysisException as exc:
        raise ReportInputError(failure_line(exc)) from None
    settled_before = int((now - settle).timestamp() * 1_000_000)
    files = [
        InputFile(r.path, r.length, r.modified, _state(r.path, r.modified, settled_before))
        for r in rows
        if not r.path.rsplit("/", 1)[-1].startswith("part-")
        or SPARK_RECORDS in r.path
        or SPARK_COVERAGE in r.path
    ]
    return sorted(files, key=lambda f: f.path)
