"""Reading the record files of many machines and nights: which files, which lines, once each.

Everything goes through Spark (the listing too), so the same code reads a local directory, HDFS
or object storage. The listing comes back to the driver, which decides what to read: finished
``records-*.jsonl`` files always, and the part files a Spark campaign's job committed under
``output=records``; ``*.jsonl.part`` files once they have not changed for the settle time
(older ones are abandoned runs whose records still count). The broker's coverage files
(``coverage-*.jsonl``, and a Spark campaign's ``output=coverage``) are listed with them, under
the same rules, and read apart (:mod:`.broker`): the passes below read record files only.

The lines are read in two passes (and more, rarely), each parsing a line at most once with the
explicit schema (Spark's JSON reader parses only the fields a pass uses):

1. text only: per record id (as the text names it, hashed), the ids found on more than one
   line; and per file its blank lines (which the JSON reader skips);
2. only if there are such ids: which records were read more than once (a retried upload, a
   copied file), confirmed by parsing only the lines whose ids hash alike;
3. everything, aggregated at once into *facts*: one row per file and distinct combination of
   the fields the tables group by, with counts, times and the smallest reproducer. Each
   record counts once; every table is then computed from the facts, which are small and
   cached;
4. only the files with a line that is not a record, again as text: whether they end with a
   newline, and if not, their last line.

A line that is not a record is never fatal: the last line of a file that does not end with a
newline is *torn* (a writer killed mid-line); any other is *malformed*. Both are counted and kept
apart. A file none of whose lines is a record is not a record file at all, and that is an error.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Row, SparkSession
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
    "divergence",
    "flaky_failure",
    "ingest",
    "list_inputs",
    "signed_failure",
    "step",
    "utc_date",
]

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

    @property
    def contents(self) -> str:
        """What it holds: ``records``, ``coverage`` (the broker's) or ``totals`` (a run file)."""
        if self.state == "totals":
            return "totals"
        name = self.path.rsplit("/", 1)[-1]
        if name.startswith("coverage-") or SPARK_COVERAGE in self.path:
            return "coverage"
        return "records"


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
    """The input, read: ``facts`` (of cached groups) has one row per file and distinct
    combination of :data:`FACT_KEYS`, with its ``run_date``; ``n`` says how many records it
    stands for (a record read in several files counts in one of them)."""

    files: list[InputFile]  # every file listed: records, coverage, totals
    stats: dict[str, FileStats]  # by the listed path (record files)
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
        if not r.path.rsplit("/", 1)[-1].startswith("part-")
        or SPARK_RECORDS in r.path
        or SPARK_COVERAGE in r.path
    ]
    return sorted(files, key=lambda f: f.path)


def _is_record(get: Callable[[str], Column], ts_us: Column | None = None) -> Column:
    """A line is a record when it has the identity fields and a readable time stamp
    (``ts_us``, when the caller has it already)."""
    required = ("schema_version", "record_id", "run_id", "verdict")
    present = [get(name).isNotNull() for name in required]
    stamped = (_micros(get("ts")) if ts_us is None else ts_us).isNotNull()
    return _all(*present, stamped)


def _micros(ts: Column) -> Column:
    """A record's time stamp in microseconds since the epoch; null if it is not one."""
    return F.unix_micros(F.try_to_timestamp(ts))


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
        .withColumn("ts_us", _micros(F.col("ts")))
        .withColumns(
            {"file": F.col("_metadata.file_path"), "is_record": _is_record(F.col, F.col("ts_us"))}
        )
    )


def _scan_text(spark: SparkSession, paths: Sequence[str]) -> tuple[dict[str, int], list[int]]:
    """One pass over the text, cheaper than parsing: per file (Spark's key) its blank lines,
    which the JSON reader skips; and the hashes of the record ids found on more than one line
    (the id the line's first ``"record_id"`` names): candidates for duplicates, usually none.
    A line has an id or is blank or neither, so one grouping finds both."""
    rows = (
        spark.read.text(list(paths))
        .select(
            _id_hash(F.regexp_extract("value", RECORD_ID, 1)).alias("id_hash"),
            F.when(F.trim("value") == "", F.col("_metadata.file_path")).alias("blank_in"),
        )
        .groupBy("id_hash", "blank_in")
        .agg(F.count("*").alias("lines"))
        .filter(
            (F.col("id_hash").isNotNull() & (F.col("lines") > 1)) | F.col("blank_in").isNotNull()
        )
        .collect()
    )
    blank = {r.blank_in: r.lines for r in rows if r.blank_in is not None}
    return blank, [r.id_hash for r in rows if r.id_hash is not None]


def _torn(spark: SparkSession, keys: Sequence[str]) -> dict[str, str]:
    """Of the files ``keys`` (Spark's), those whose last line is not a record and has no
    newline after it, with that line: torn by a writer killed while writing it."""
    rows = (
        spark.read.text([unquote(k) for k in keys])
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
    return _last_lines(spark, open_ended) if open_ended else {}


def _id_hash(record_id: Column) -> Column:
    """A record id as a number to group by (cheaper than its text); null for none."""
    return F.when(record_id != "", F.xxhash64(record_id))


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


def _duplicated(spark: SparkSession, paths: Sequence[str], hashes: list[int]) -> DataFrame:
    """Record ids read more than once, each with the file whose copy counts (the first by
    name), found by parsing only the lines whose id hashes as a candidate's; none may be."""
    candidates = spark.createDataFrame([(h,) for h in hashes], "id_hash long")
    return (
        _records(spark, paths)
        .filter("is_record")
        .join(
            F.broadcast(candidates), _id_hash(F.col("record_id")) == F.col("id_hash"), "left_semi"
        )
        .groupBy("record_id")
        .agg(F.count("*").alias("copies"), F.min("file").alias("owner"))
        .filter("copies > 1")
        .select("record_id", "owner")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )


def smallest_first(prefix: str = "") -> Column:
    """The order of reproducers: one that exists, then the smallest file, the shortest case,
    and the path last (then the other fields of the struct it leads) so that the choice never
    depends on reading order. ``prefix``: of the columns' names."""
    return F.struct(
        F.col(f"{prefix}reproducer").isNull().alias("missing"),
        F.coalesce(f"{prefix}reproducer_size", F.lit(_MAX)).alias("size"),
        F.coalesce(f"{prefix}case_size", F.lit(_MAX)).alias("case_size"),
        F.col(f"{prefix}reproducer"),
    )


def _detail() -> dict[str, Column]:
    """What the choice of the smallest reproducer, and its row, read of a judged record beside
    FACT_KEYS, by the name each has in that row (reactions in words: only judged records pay
    for the text)."""
    return {
        "oracle": F.col("oracle"),
        "message": F.col("message"),
        "reproducer": F.col("reproducer"),
        "expected": _reaction("expected"),
        "observed": _reaction("observed"),
        "reproducer_size": F.col("reproducer_size"),
        "case_size": F.col("case_size"),
        "rate": F.col("confirmation.rate"),
        "replays": F.array_distinct(F.col("confirmation.replays")),
    }


def _reaction(which: str) -> Column:
    """A reaction in words: ``connection-close 501``, ``session-close amqp:decode-error``."""
    return F.concat_ws(
        " ",
        F.col(f"{which}.outcome"),
        F.col(f"{which}.reply_code").cast("string"),
        F.col(f"{which}.condition"),
    )


def _flat(lines: DataFrame) -> DataFrame:
    """The fields the groups are made of, flat, derived ones included."""
    return lines.select(
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
        "expected",
        "observed",
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
        "confirmation",
        "ts_us",
        F.round(F.coalesce("duration_s", F.lit(0.0)) * 1e6).cast("long").alias("duration_us"),
    )


def signed_failure() -> Column:
    """A failure with a signature: what the signatures table counts."""
    return (F.col("verdict") == "fail") & F.col("signature").isNotNull()


def flaky_failure() -> Column:
    """A failure whose replays did not all fail (schema 3): what the flaky table counts."""
    return (F.col("verdict") == "flaky") & F.col("signature").isNotNull()


def divergence() -> Column:
    """A differential case whose targets did not agree: what the divergences table counts."""
    return (F.col("kind") == "differential") & ~F.col("verdict").isin("pass", "skip")


def _groups(lines: DataFrame, owners: DataFrame | None) -> DataFrame:
    """Pass 3: per file and distinct combination of FACT_KEYS (and, for a judged record, of
    what its row in a table would show), everything the tables need.

    ``n`` counts each record once over all files: a duplicated record only in its owner file,
    and there only once.
    """
    flat = _flat(lines)
    if owners is None:
        counted = F.count(F.when(F.col("is_record"), 1))
    else:
        flat = flat.join(owners, "record_id", "left")
        single = F.col("is_record") & F.col("owner").isNull()
        counted = F.count(F.when(single, 1)) + F.count_distinct(
            F.when(F.col("owner") == F.col("file"), F.col("record_id"))
        )
    # The smallest reproducer of each group is a min over a struct of strings, which only a
    # sort-based aggregation computes. So the records are first grouped by hash, with the
    # fields that choice reads as keys of judged records only (the few): the min then runs
    # over those groups, not over every record.
    # the records whose reproducer a table shows
    judged = signed_failure() | flaky_failure() | divergence()
    detail = [F.when(judged, column).alias(f"_{name}") for name, column in _detail().items()]
    best = F.struct(
        smallest_first("_").alias("order"),
        F.col("_oracle").alias("oracle"),
        "spec_ref",
        *(
            F.col(f"_{name}").alias(name)
            for name in ("message", "reproducer", "expected", "observed", "rate", "replays")
        ),
        F.col("target_protocol").alias("protocol"),
    )
    fine = flat.groupBy("file", "is_record", *FACT_KEYS, *detail).agg(
        F.count("*").alias("lines"),
        counted.alias("n"),
        F.min("ts_us").alias("first_us"),
        F.max("ts_us").alias("last_us"),
        F.min(F.col("ts_us") - F.col("duration_us")).alias("start_us"),
    )
    # A hash of the keys, first among them: grouping by it too changes no group, and it lets
    # the sort that the min needs compare a number, not some twenty strings.
    key = F.xxhash64("file", "is_record", *FACT_KEYS).alias("_key")
    return (
        fine.groupBy(key, "file", "is_record", *FACT_KEYS)
        .agg(
            F.sum("lines").alias("lines"),
            F.sum("n").alias("n"),
            F.min("first_us").alias("first_us"),
            F.max("last_us").alias("last_us"),
            F.min("start_us").alias("start_us"),
            F.min(F.when(judged, best)).alias("best"),
        )
        .drop("_key")
        # few rows (distinct combinations, not records): as one partition, what is made of
        # them (the file stats, every table) needs no shuffle
        .repartition(1)
    )


def _per_file(groups: DataFrame) -> list[Row]:
    """Per file and run (null for lines that are not records): lines, records, first time."""
    return (
        groups.groupBy("file", F.when(F.col("is_record"), F.col("run_id")).alias("run"))
        .agg(
            F.sum(F.when(F.col("is_record"), F.col("lines")).otherwise(0)).alias("record_lines"),
            F.sum("n").alias("counted"),
            F.sum(F.when(~F.col("is_record"), F.col("lines")).otherwise(0)).alias("bad"),
            F.min("first_us").alias("first_us"),
        )
        .collect()
    )


def _file_stats(
    spark: SparkSession, rows: list[Row], blank: dict[str, int]
) -> tuple[dict[str, FileStats], dict[str, int]]:
    """What each file held; and when each run began (its first record's time, microseconds)."""
    runs: dict[str, int] = {}
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # record lines, counted, bad
    run_ids: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        counts = tally[r.file]
        counts[0] += r.record_lines
        counts[1] += r.counted
        counts[2] += r.bad
        if r.run is not None:
            run_ids[r.file].add(r.run)
            runs[r.run] = min(runs.get(r.run, r.first_us), r.first_us)
    # Only a file with a line that is not a record can have a torn one: the few are re-read.
    suspects = [key for key, (_, _, bad) in tally.items() if bad]
    torn_lines = _torn(spark, suspects) if suspects else {}
    stats = {}
    for key in tally.keys() | blank.keys():
        record_lines, counted, bad = tally.get(key, [0, 0, 0])
        torn_text = torn_lines.get(key)
        torn = int(torn_text is not None)
        stats[unquote(key)] = FileStats(
            key=key,
            lines=record_lines + bad + blank.get(key, 0),
            records=counted,
            duplicates=record_lines - counted,
            torn=torn,
            malformed=bad - torn,
            run_ids=tuple(sorted(run_ids.get(key, ()))),
            torn_text=torn_text,
        )
    return stats, runs


def _facts(groups: DataFrame, run_dates: dict[str, dt.date]) -> DataFrame:
    """The groups of records that count, each with its run's date."""
    dates = F.create_map(*(F.lit(x) for pair in run_dates.items() for x in pair))
    return groups.filter(F.col("is_record") & (F.col("n") > 0)).select(
        *FACT_KEYS,
        "n",
        "first_us",
        "last_us",
        "start_us",
        "best",
        dates[F.col("run_id")].alias("run_date"),
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
    record_files = [f for f in files if f.contents == "records"]
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


def utc_date(micros: int) -> dt.date:
    """The UTC date of a time in microseconds since the epoch."""
    return (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)).date()


def ingest(
    spark: SparkSession,
    inputs: Sequence[str],
    *,
    now: dt.datetime | None = None,
    settle: dt.timedelta = SETTLE,
    files: list[InputFile] | None = None,
) -> Ingest:
    """List (unless the caller has: ``files``), read, check and count; the caller must
    :meth:`Ingest.release` the result. The coverage files listed are in :attr:`Ingest.files`,
    not read here."""
    if files is None:
        files = list_inputs(spark, inputs, now or dt.datetime.now(dt.UTC), settle)
    to_read = [f.path for f in files if f.read and f.contents == "records"]
    if not to_read:
        _check(files, {}, inputs)
    cached: list[DataFrame] = []
    try:
        # The text pass and the records' pass run side by side (each fills the other's idle
        # core), the latter on the bet that no record was read twice: if one was, its groups
        # are made again, counting each record once.
        with ThreadPoolExecutor(1, thread_name_prefix="amqpfuzz-text") as pool:
            scanned = pool.submit(_scan_text, spark, to_read)
            groups = _groups(_records(spark, to_read), None).persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(groups)
            with step("read: records"):  # the first action on the groups: they are made
                per_file = _per_file(groups)
            with step("read: text"):
                blank, hashes = scanned.result()
        if hashes:
            with step("read: duplicates"):
                owners = _duplicated(spark, to_read, hashes)
                cached.append(owners)
                if not owners.isEmpty():  # else ids that only hash alike
                    groups.unpersist()
                    groups = _groups(_records(spark, to_read), owners)
                    groups = groups.persist(StorageLevel.MEMORY_AND_DISK)
                    cached.append(groups)
                    per_file = _per_file(groups)
        stats, firsts = _file_stats(spark, per_file, blank)
        _check(files, stats, inputs)
        run_dates = {run: utc_date(first_us) for run, first_us in firsts.items()}
        facts = _facts(groups, run_dates)
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
        totals=_read_totals(spark, [f.path for f in files if f.contents == "totals"]),
        facts=facts,
        bad_lines=bad,
        _cached=cached,
    )
