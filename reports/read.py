"""Reading the record files of many machines and nights: which files, which lines, once each.

Everything goes through Spark (the listing too), so the same code reads a local directory, HDFS
or object storage. The listing comes back to the driver, which decides what to read: finished
``records-*.jsonl`` files always, and the part files a Spark campaign's job committed under
``output=records``; ``*.jsonl.part`` files once they have not changed for the settle time
(older ones are abandoned runs whose records still count).

The lines are read in three passes, each parsing a line once with the explicit schema (Spark's
JSON reader parses only the fields a pass uses):

1. text only: per file its lines and bytes, which tell whether the file ends with a newline;
2. record ids: which records were read more than once (a retried upload, a copied file),
   found in the text and confirmed by parsing only the lines they name;
3. everything, aggregated at once into *facts*: one row per distinct combination of the fields
   the tables group by, with counts, times and the smallest reproducer. Each record counts
   once; every table is then computed from the facts, which are small and cached.

A line that is not a record is never fatal: the last line of a file that does not end with a
newline is *torn* (a writer killed mid-line); any other is *malformed*. Both are counted and kept
apart. A file none of whose lines is a record is not a record file at all, and that is an error.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from amqpfuzz.spec import AmqpfuzzError

from .schema import RECORD, TOTALS

__all__ = [
    "FACT_KEYS",
    "FileStats",
    "Ingest",
    "InputFile",
    "ReportInputError",
    "ingest",
    "list_inputs",
]

# What a fuzzer leaves in its directory: finished files, files being written, run totals; and
# what a Spark campaign's job committed (its records' part files under `output=records`).
INPUT_GLOB = "{records-*.jsonl,records-*.jsonl.part,run-*.json,part-*.txt}"
SPARK_RECORDS = "/output=records/"
SETTLE = dt.timedelta(minutes=10)
CORRUPT = "_corrupt_line"
RECORD_ID = r'"record_id"\s*:\s*"([^"\\]*)"'
_MAX = 2**62  # sorts records without a size after those with one

# The fields the tables group by; a fact is one distinct combination of them.
FACT_KEYS = (
    "run_id",
    "worker",
    "target_label",
    "target_product",
    "target_version",
    "target_protocol",
    "tool_version",
    "kind",
    "spec_ref",
    "mutation",
    "scenario",
    "verdict",
    "expected_outcome",
    "expected_reply_code",
    "observed_outcome",
    "observed_reply_code",
    "signature",
    "deviation_entry",
    "profile",
    "reason",
    "observed_reply",
)


log = logging.getLogger("amqpfuzz.reports")


@contextmanager
def step(name: str) -> Iterator[None]:
    """Log how long a step of the job took (DEBUG): where a slow night spends its time."""
    start = time.perf_counter()
    yield
    log.debug("%s: %.2f s", name, time.perf_counter() - start)


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


@dataclass(frozen=True, slots=True)
class FileStats:
    """What the lines of one file held."""

    key: str  # the path as Spark's file metadata spells it (URL-encoded)
    lines: int  # blank lines included
    records: int  # counted: records not already read elsewhere
    duplicates: int
    torn: int
    malformed: int
    run_ids: tuple[str, ...]
    torn_text: str | None


@dataclass
class Ingest:
    """The input, read: ``facts`` (cached) has one row per distinct combination of
    :data:`FACT_KEYS` and ``run_date``; ``n`` says how many records it stands for."""

    files: list[InputFile]
    stats: dict[str, FileStats]  # by the listed path
    run_dates: dict[str, dt.date]  # the UTC date of each run's first record
    # run_id -> the totals of its run-<id>.json, under "protocol" the protocol they are of, and
    # under "exercisable" the names they count (a dimension's list, or None: an older file)
    totals: dict[str, dict[str, Any]]
    facts: DataFrame
    bad_lines: DataFrame | None  # file (Spark's key), text; None when every line was a record
    _cached: list[DataFrame] = field(default_factory=list)

    @property
    def nights(self) -> list[dt.date]:
        return sorted(set(self.run_dates.values()))

    def night_of_file(self, path: str) -> dt.date:
        """A file's night: that of its runs, else of a run its name names, else the latest."""
        stats = self.stats.get(path)
        dates = [self.run_dates[r] for r in stats.run_ids] if stats else []
        if not dates:
            name = path.rsplit("/", 1)[-1]
            dates = [d for run, d in self.run_dates.items() if name.startswith(f"records-{run}-")]
        return min(dates) if dates else self.nights[-1]

    def release(self) -> None:
        for frame in self._cached:
            frame.unpersist()
        self._cached.clear()


def _state(name: str, modified_us: int, settled_before_us: int) -> str:
    if name.endswith(".json"):
        return "totals"
    if name.endswith(".part"):
        return "abandoned" if modified_us < settled_before_us else "writing"
    return "complete"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"\s*SQLSTATE: \w+\.?$", "", line)


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
        raise ReportInputError(_first_line(exc)) from None
    settled_before = int((now - settle).timestamp() * 1_000_000)
    files = [
        InputFile(r.path, r.length, r.modified, _state(r.path, r.modified, settled_before))
        for r in rows
        if not r.path.rsplit("/", 1)[-1].startswith("part-") or SPARK_RECORDS in r.path
    ]
    return sorted(files, key=lambda f: f.path)


def _is_record(get: Callable[[str], Column]) -> Column:
    """A line is a record when it has the identity fields and a readable time stamp."""
    required = ("schema_version", "record_id", "run_id", "verdict")
    present = [get(name).isNotNull() for name in required]
    stamped = F.try_to_timestamp(get("ts")).isNotNull()
    return _all(*present, stamped)


def _all(*conditions: Column) -> Column:
    result = conditions[0]
    for condition in conditions[1:]:
        result = result & condition
    return result


def _records(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The lines as records: JSON source, explicit schema; ``is_record`` says which are."""
    schema = StructType([*RECORD.fields, StructField(CORRUPT, StringType())])
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .json(list(paths))
        .withColumns({"file": F.col("_metadata.file_path"), "is_record": _is_record(F.col)})
    )


def _text_stats(spark: SparkSession, paths: Sequence[str]) -> dict[str, tuple[int, str | None]]:
    """Per file (Spark's key): its line count and, when it does not end with a newline, its
    last line (the only one that can be torn)."""
    rows = (
        spark.read.text(list(paths))
        .groupBy(F.col("_metadata.file_path").alias("file"))
        .agg(
            F.count("*").alias("lines"),
            F.sum(F.octet_length("value")).alias("bytes"),
            F.max(F.col("_metadata.file_size")).alias("size"),
        )
        .collect()
    )
    # Without a final newline a file's bytes are its lines' bytes plus one fewer newline.
    open_ended = [r.file for r in rows if r.bytes + r.lines == r.size + 1]
    last = _last_lines(spark, open_ended) if open_ended else {}
    return {r.file: (r.lines, last.get(r.file)) for r in rows}


def _last_lines(spark: SparkSession, keys: Sequence[str]) -> dict[str, str]:
    """The last line of each file that is not a record (files are few: killed writers)."""
    rec = F.from_json("last", RECORD)
    rows = (
        spark.read.text([unquote(k) for k in keys])
        .select(
            F.col("_metadata.file_path").alias("file"),
            # Increasing within a file, and a file's later splits are read after its earlier
            # ones, so the greatest id of a file is its last line.
            F.monotonically_increasing_id().alias("line"),
            "value",
        )
        .groupBy("file")
        .agg(F.max_by("value", "line").alias("last"))
        .withColumn("is_record", _is_record(lambda name: rec[name]))
        .filter(~F.col("is_record") & (F.trim("last") != ""))
        .collect()
    )
    return {r.file: r.last for r in rows}


def _duplicated(spark: SparkSession, paths: Sequence[str]) -> DataFrame | None:
    """Record ids read more than once, each with the file whose copy counts (the first by
    name); None when there are none, the usual case.

    Candidates come from a scan of the text (the id the line's first ``"record_id"`` names),
    which is cheaper than parsing; only lines with a candidate id are then parsed to confirm.
    """
    candidates = (
        spark.read.text(list(paths))
        .select(F.regexp_extract("value", RECORD_ID, 1).alias("record_id"))
        .filter(F.col("record_id") != "")
        .groupBy("record_id")
        .count()
        .filter("count > 1")
        .select("record_id")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        if candidates.isEmpty():
            return None
        owners = (
            _records(spark, paths)
            .filter("is_record")
            .join(candidates, "record_id", "left_semi")
            .groupBy("record_id")
            .agg(F.count("*").alias("copies"), F.min("file").alias("owner"))
            .filter("copies > 1")
            .select("record_id", "owner")
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
    finally:
        candidates.unpersist()
    if owners.isEmpty():
        owners.unpersist()
        return None
    return owners


def smallest_first() -> Column:
    """The order of reproducers: one that exists, then the smallest file, the shortest case,
    and the path and record id last so that the choice never depends on reading order."""
    return F.struct(
        F.col("reproducer").isNull().alias("missing"),
        F.coalesce("reproducer_size", F.lit(_MAX)).alias("size"),
        F.coalesce("case_size", F.lit(_MAX)).alias("case_size"),
        F.col("reproducer"),
        F.col("record_id"),
    )


def _reaction(which: str) -> Column:
    """A reaction in words: ``connection-close 501``, ``session-close amqp:decode-error``."""
    return F.concat_ws(
        " ",
        F.col(f"{which}.outcome"),
        F.col(f"{which}.reply_code").cast("string"),
        F.col(f"{which}.condition"),
    )


def _groups(lines: DataFrame, owners: DataFrame | None) -> DataFrame:
    """Pass 3: per file and distinct combination of FACT_KEYS, everything the tables need.

    ``n`` counts each record once over all files: a duplicated record only in its owner file,
    and there only once.
    """
    flat = lines.select(
        "file",
        "is_record",
        "record_id",
        "run_id",
        "worker",
        F.col("target.label").alias("target_label"),
        F.col("target.product").alias("target_product"),
        F.col("target.version").alias("target_version"),
        F.col("target.protocol").alias("target_protocol"),
        "tool_version",
        "kind",
        "spec_ref",
        "mutation",
        "scenario",
        "verdict",
        F.col("expected.outcome").alias("expected_outcome"),
        F.col("expected.reply_code").alias("expected_reply_code"),
        F.col("observed.outcome").alias("observed_outcome"),
        F.col("observed.reply_code").alias("observed_reply_code"),
        _reaction("expected").alias("expected_text"),
        _reaction("observed").alias("observed_text"),
        F.col("failure.signature").alias("signature"),
        F.col("failure.oracle").alias("oracle"),
        F.col("failure.message").alias("message"),
        "deviation_entry",
        "profile",
        # the profile's reason for an xfail or xpass; a scenario's reason (why it was skipped)
        F.coalesce("deviation", F.when(F.col("kind") == "scenario", F.col("reason"))).alias(
            "reason"
        ),
        "observed_reply",
        "reproducer",
        "reproducer_size",
        F.length("case").alias("case_size"),
        F.unix_micros(F.try_to_timestamp("ts")).alias("ts_us"),
        F.round(F.coalesce("duration_s", F.lit(0.0)) * 1e6).cast("long").alias("duration_us"),
    )
    if owners is None:
        counted = F.count(F.when(F.col("is_record"), 1))
    else:
        flat = flat.join(owners, "record_id", "left")
        single = F.col("is_record") & F.col("owner").isNull()
        counted = F.count(F.when(single, 1)) + F.count_distinct(
            F.when(F.col("owner") == F.col("file"), F.col("record_id"))
        )
    judged = F.col("signature").isNotNull() | (F.col("kind") == "differential")
    best = F.struct(
        smallest_first().alias("order"),
        "oracle",
        "spec_ref",
        "message",
        "reproducer",
        F.col("expected_text").alias("expected"),
        F.col("observed_text").alias("observed"),
        F.col("target_protocol").alias("protocol"),
    )
    return flat.groupBy("file", "is_record", *FACT_KEYS).agg(
        F.count("*").alias("lines"),
        counted.alias("n"),
        F.min("ts_us").alias("first_us"),
        F.max("ts_us").alias("last_us"),
        F.min(F.col("ts_us") - F.col("duration_us")).alias("start_us"),
        F.min(F.when(judged, best)).alias("best"),
    )


def _file_stats(groups: DataFrame, text: dict[str, tuple[int, str | None]]) -> dict[str, FileStats]:
    rows = (
        groups.groupBy("file")
        .agg(
            F.sum(F.when(F.col("is_record"), F.col("lines")).otherwise(0)).alias("record_lines"),
            F.sum("n").alias("counted"),
            F.sum(F.when(~F.col("is_record"), F.col("lines")).otherwise(0)).alias("bad"),
            F.array_sort(F.collect_set(F.when(F.col("is_record"), F.col("run_id")))).alias(
                "run_ids"
            ),
        )
        .collect()
    )
    stats = {}
    for r in rows:
        lines, torn_text = text.get(r.file, (0, None))
        torn = int(torn_text is not None)
        stats[unquote(r.file)] = FileStats(
            key=r.file,
            lines=lines,
            records=r.counted,
            duplicates=r.record_lines - r.counted,
            torn=torn,
            malformed=r.bad - torn,
            run_ids=tuple(r.run_ids),
            torn_text=torn_text,
        )
    return stats


def _facts(groups: DataFrame) -> DataFrame:
    return (
        groups.filter("is_record")
        .groupBy(*FACT_KEYS)
        .agg(
            F.sum("n").alias("n"),
            F.min("first_us").alias("first_us"),
            F.max("last_us").alias("last_us"),
            F.min("start_us").alias("start_us"),
            F.min("best").alias("best"),
        )
        .filter("n > 0")
    )


def _read_totals(spark: SparkSession, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
    if not paths:
        return {}
    named = F.regexp_extract(F.col("_metadata.file_path"), r"run-([^/]+)\.json$", 1)
    rows = (
        spark.read.schema(TOTALS)
        .option("multiLine", "true")
        .json(list(paths))
        .select(F.coalesce("run_id", named).alias("run_id"), "protocol", "totals", "exercisable")
        .filter(F.col("totals").isNotNull())
        .collect()
    )
    return {
        unquote(r.run_id): r.totals.asDict()
        | {"protocol": r.protocol, "exercisable": r.exercisable.asDict() if r.exercisable else {}}
        for r in rows
    }


def _check(files: list[InputFile], stats: dict[str, FileStats], inputs: Sequence[str]) -> None:
    where = ", ".join(inputs)
    record_files = [f for f in files if f.state != "totals"]
    if not record_files:
        raise ReportInputError(f"no record files (records-*.jsonl) in {where}")
    if not any(f.read for f in record_files):
        raise ReportInputError(
            f"no finished record files in {where}: {len(record_files)} still being written"
        )
    for path, st in stats.items():
        if st.records + st.duplicates == 0 and st.malformed:
            raise ReportInputError(f"{path}: not a record file (no line is a result record)")
    if not any(st.records for st in stats.values()):
        raise ReportInputError(f"no records in {where}")


def _utc_date(micros: int) -> dt.date:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)).date()


def ingest(
    spark: SparkSession,
    inputs: Sequence[str],
    *,
    now: dt.datetime | None = None,
    settle: dt.timedelta = SETTLE,
) -> Ingest:
    """List, read, check and count; the caller must :meth:`Ingest.release` the result."""
    files = list_inputs(spark, inputs, now or dt.datetime.now(dt.UTC), settle)
    to_read = [f.path for f in files if f.read]
    if not to_read:
        _check(files, {}, inputs)
    cached: list[DataFrame] = []
    try:
        with step("read: text"):
            text = _text_stats(spark, to_read)
        with step("read: duplicates"):
            owners = _duplicated(spark, to_read)
        if owners is not None:
            cached.append(owners)
        groups = _groups(_records(spark, to_read), owners).persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(groups)
        # Groups are small (distinct combinations, not records): read as one partition, the
        # aggregations made of them (and of the facts) need no shuffle.
        with step("read: records"):
            stats = _file_stats(groups.coalesce(1), text)
        _check(files, stats, inputs)
        facts = _facts(groups.coalesce(1))
        firsts = facts.groupBy("run_id").agg(F.min("first_us").alias("first_us")).collect()
        run_dates = {r.run_id: _utc_date(r.first_us) for r in firsts}
        dates = spark.createDataFrame(list(run_dates.items()), "run_id string, run_date date")
        facts = facts.join(F.broadcast(dates), "run_id").persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(facts)
    except BaseException:
        for frame in cached:
            frame.unpersist()
        raise
    bad = None
    if any(st.torn or st.malformed for st in stats.values()):
        bad = (
            _records(spark, to_read)
            .filter(~F.col("is_record"))
            .select("file", F.col(CORRUPT).alias("text"))
        )
    return Ingest(
        files=files,
        stats=stats,
        run_dates=run_dates,
        totals=_read_totals(spark, [f.path for f in files if f.state == "totals"]),
        facts=facts,
        bad_lines=bad,
        _cached=cached,
    )
