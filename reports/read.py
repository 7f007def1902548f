"""Reading the record files of many machines and nights: which files, which lines, once each.

The files are listed by :mod:`.listing` (the broker's coverage files with them, read apart by
:mod:`.broker`: the passes below read record files only), their lines read by :mod:`.lines`,
and aggregated into facts by :mod:`.facts`; this module runs the passes and checks the input.

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
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from . import facts as facts_of
from . import lines
from .listing import SETTLE, InputFile, ReportInputError, list_inputs
from .schema import TOTALS

__all__ = [
    "SETTLE",
    "FileStats",
    "Ingest",
    "InputFile",
    "ReportInputError",
    "ingest",
    "list_inputs",
    "step",
    "utc_date",
]

log = logging.getLogger("amqpfuzz.reports")


@contextmanager
def step(name: str) -> Iterator[None]:
    """Log how long a step of the job took (DEBUG): where a slow night spends its time."""
    start = time.perf_counter()
    yield
    log.debug("%s: %.2f s", name, time.perf_counter() - start)


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
    torn_lines = lines.torn(spark, suspects) if suspects else {}
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
            scanned = pool.submit(lines.scan_text, spark, to_read)
            groups = facts_of.groups(lines.records(spark, to_read), None).persist(
                StorageLevel.MEMORY_AND_DISK
            )
            cached.append(groups)
            with step("read: records"):  # the first action on the groups: they are made
                per_file = _per_file(groups)
            with step("read: text"):
                blank, hashes = scanned.result()
        if hashes:
            with step("read: duplicates"):
                owners = lines.duplicated(spark, to_read, hashes)
                cached.append(owners)
                if not owners.isEmpty():  # else ids that only hash alike
                    groups.unpersist()
                    groups = facts_of.groups(lines.records(spark, to_read), owners)
                    groups = groups.persist(StorageLevel.MEMORY_AND_DISK)
                    cached.append(groups)
                    per_file = _per_file(groups)
        stats, firsts = _file_stats(spark, per_file, blank)
        _check(files, stats, inputs)
        run_dates = {run: utc_date(first_us) for run, first_us in firsts.items()}
        facts = facts_of.facts(groups, run_dates)
    except BaseException:
        for frame in cached:
            frame.unpersist()
        raise
    bad = None
    if any(st.torn or st.malformed for st in stats.values()):
        bad = (
            lines.records(spark, to_read)
            .filter(~F.col("is_record"))
            .select("file", F.col(lines.CORRUPT).alias("text"))
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
