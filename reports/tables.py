"""The nightly tables built from the facts, and how they are written and read.

The tables are small (a row per run, per target and spec_ref, per signature...), so each is
computed by Spark, collected once, and then both rendered into the page and written: rows are
plain dicts whose times are microseconds since the epoch (a datetime crossing between Python
and the JVM would pass through local time zones).

Every table is partitioned by ``run_date`` (the UTC date of its run's first record) and written
with dynamic partition overwrite: processing a night again replaces that night's partitions and
leaves the other nights alone, so the same input always gives the same output.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from .facts import by_signature, divergence, flaky_failure
from .listing import InputFile
from .read import FileStats, Ingest
from .schema import TABLES, VERDICT_COLUMNS

__all__ = [
    "Rows",
    "collect",
    "conformance",
    "deviations",
    "divergences",
    "flaky",
    "frame",
    "health_row",
    "ingest_health",
    "read_table",
    "rejected",
    "rejects",
    "runs",
    "scenarios",
    "spec_class",
    "write_rows",
    "write_table",
]

Rows = list[dict[str, Any]]


def spec_class(spec_ref: Column) -> Column:
    """The part of a spec_ref before its first ``.`` or ``/``: ``queue.declare/...`` -> queue."""
    return F.regexp_extract(spec_ref, r"^([^./]*)", 1)


def _cases_if(condition: Column) -> Column:
    """How many records the facts matching ``condition`` stand for."""
    return F.sum(F.when(condition, F.col("n")).otherwise(0)).cast("long")


def runs(facts: DataFrame) -> DataFrame:
    """One row per run and target: how long, how many cases, how fast, how many failures.

    A run lasts from the start of its earliest case (its record's time less its duration) to
    its last record; all the run's workers count together.
    """
    grouped = facts.groupBy("run_date", "run_id", "target_label").agg(
        F.max("target_product").alias("target_product"),
        F.max("target_version").alias("target_version"),
        F.max("target_protocol").alias("target_protocol"),
        F.max("tool_version").alias("tool_version"),
        F.count_distinct("worker").alias("workers"),
        F.min("start_us").alias("start_us"),
        F.max("last_us").alias("end_us"),
        F.sum("n").alias("cases"),
        _cases_if(F.col("verdict") == "fail").alias("failures"),
        _cases_if(F.col("verdict") == "error").alias("errors"),
        _cases_if(F.col("verdict") == "pass").alias("passes"),
        _cases_if(F.col("verdict") == "xfail").alias("xfails"),
        _cases_if(F.col("verdict") == "xpass").alias("xpasses"),
        _cases_if(F.col("verdict") == "skip").alias("skips"),
        _cases_if(F.col("verdict") == "flaky").alias("flaky"),
    )
    duration = (F.col("end_us") - F.col("start_us")) / 1e6
    return grouped.select(
        "run_id",
        "target_label",
        "target_product",
        "target_version",
        "target_protocol",
        "tool_version",
        "workers",
        F.col("start_us").alias("started"),
        F.col("end_us").alias("finished"),
        duration.alias("duration_s"),
        "cases",
        F.when(duration > 0, F.col("cases") / duration).alias("cases_per_s"),
        "failures",
        "errors",
        "passes",
        "xfails",
        "xpasses",
        "skips",
        "flaky",
        "run_date",
    )


def conformance(facts: DataFrame) -> DataFrame:
    """Target x spec_ref: how many cases ended in each verdict."""
    return (
        facts.groupBy(
            "run_date",
            "target_label",
            "target_product",
            "target_version",
            "target_protocol",
            "spec_ref",
        )
        .agg(
            *(_cases_if(F.col("verdict") == v).alias(v) for v in VERDICT_COLUMNS),
            F.sum("n").alias("total"),
        )
        .withColumn("spec_class", spec_class(F.col("spec_ref")))
        .select(*TABLES["conformance"].fieldNames())
    )


def deviations(facts: DataFrame) -> DataFrame:
    """The profile entries behind tonight's xfails (a known deviation that happened) and
    xpasses (one that no longer did): per target and entry, how many cases, of which kinds and
    spec_refs (the first few). Records from before entries were named have ``entry`` null."""
    known = facts.filter(F.col("verdict").isin("xfail", "xpass"))
    return (
        known.groupBy(
            "run_date",
            "target_label",
            "target_protocol",
            "profile",
            F.col("deviation_entry").alias("entry"),
            "reason",
            "verdict",
        )
        .agg(
            F.array_sort(F.collect_set("kind")).alias("kinds"),
            F.slice(F.array_sort(F.collect_set("spec_ref")), 1, 5).alias("spec_refs"),
            F.sum("n").alias("occurrences"),
            F.min("first_us").alias("first_seen"),
            F.max("last_us").alias("last_seen"),
        )
        .select(*TABLES["deviations"].fieldNames())
    )


def scenarios(facts: DataFrame) -> DataFrame:
    """Scenario records: per target and scenario file (or rule), each verdict it had and what
    the broker did."""
    return (
        facts.filter(F.col("kind") == "scenario")
        .groupBy(
            "run_date",
            "target_label",
            "target_protocol",
            "spec_ref",
            F.coalesce("scenario", "spec_ref").alias("scenario"),
            "verdict",
            "observed_outcome",
            "observed_reply_code",
            "observed_reply",
            "reason",
        )
        .agg(F.sum("n").alias("occurrences"))
        .select(*TABLES["scenarios"].fieldNames())
    )


def flaky(facts: DataFrame) -> DataFrame:
    """Flaky failures (their replays did not all fail), per night and signature: how often,
    where, and of the smallest case the rate its replays reproduced it at and what they saw."""
    return (
        by_signature(facts, flaky_failure())
        .select(
            "signature",
            F.col("best.oracle").alias("oracle"),
            F.col("best.spec_ref").alias("spec_ref"),
            F.col("best.message").alias("message"),
            "occurrences",
            "targets",
            F.col("best.rate").alias("rate"),
            F.coalesce(F.col("best.replays"), F.array().cast("array<string>")).alias("replays"),
            F.col("best.reproducer").alias("reproducer"),
            F.col("best.expected").alias("expected"),
            F.col("best.observed").alias("observed"),
            F.col("first_us").alias("first_seen"),
            F.col("last_us").alias("last_seen"),
            "run_date",
        )
        .select(*TABLES["flaky"].fieldNames())
    )


def divergences(facts: DataFrame) -> DataFrame:
    """Differential records where the brokers did not agree (any verdict but pass and skip)."""
    keys = [
        "run_date",
        "target_label",
        "spec_ref",
        "mutation",
        "verdict",
        "expected_outcome",
        "expected_reply_code",
        "observed_outcome",
        "observed_reply_code",
        "signature",
        "alone",
    ]
    return (
        facts.filter(divergence())
        .groupBy(*keys)
        .agg(
            F.sum("n").alias("occurrences"),
            F.min("first_us").alias("first_seen"),
            F.max("last_us").alias("last_seen"),
            F.min("best").reproducer.alias("reproducer"),
        )
        .select(*TABLES["divergences"].fieldNames())
    )


def ingest_health(ingest: Ingest) -> Rows:
    """One row per record file found: its state, and what its lines held (zero for unread
    files). (The coverage files' rows are :func:`amqpfuzz.reports.broker.health`'s.)"""
    return [
        health_row(f, ingest.stats.get(f.path), ingest.night_of_file(f.path))
        for f in ingest.files
        if f.contents == "records"
    ]


def health_row(f: InputFile, st: FileStats | None, night: dt.date) -> dict[str, Any]:
    """A file's row of the ingest table."""
    counts = (st.lines, st.records, st.duplicates, st.torn, st.malformed) if st else (0,) * 5
    names = ("lines", "records", "duplicates", "torn_lines", "malformed_lines")
    return {
        "file": f.path,
        "state": f.state,
        "bytes": f.size,
        "modified": f.modified_us,
        "read": f.read,
        **dict(zip(names, counts, strict=True)),
        "contents": f.contents,
        "run_date": night,
    }


def collect(frame: DataFrame) -> Rows:
    return [row.asDict(recursive=True) for row in frame.collect()]


def frame(spark: SparkSession, name: str, rows: Iterable[dict[str, Any]]) -> DataFrame:
    """Table ``name`` of ``rows`` (times in microseconds)."""
    schema = TABLES[name]
    times = [f.name for f in schema if isinstance(f.dataType, TimestampType)]
    raw = StructType(
        [StructField(f.name, LongType() if f.name in times else f.dataType) for f in schema]
    )
    data = [tuple(row[f] for f in schema.fieldNames()) for row in rows]
    made = spark.createDataFrame(data, raw)
    # (Spark Connect refuses withColumns of nothing.)
    return made.withColumns({t: F.timestamp_micros(t) for t in times}) if times else made


def write_rows(spark: SparkSession, output: str, name: str, rows: Rows) -> None:
    """Write ``rows`` as table ``name``; no rows, nothing written (a table directory without a
    single file is one that Parquet readers cannot tell the schema of)."""
    if rows:
        write_table(frame(spark, name, rows), output, name)


def rejects(spark: SparkSession, ingest: Ingest) -> DataFrame | None:
    """The torn and malformed lines themselves, kept apart from the records (the text of a
    line that is JSON but not a record is not kept: the reader has parsed it)."""
    if ingest.bad_lines is None:
        return None
    return rejected(spark, ingest.bad_lines, ingest.stats, ingest.night_of_file)


def rejected(
    spark: SparkSession,
    bad_lines: DataFrame,
    stats: Mapping[str, FileStats],
    night_of: Callable[[str], dt.date],
) -> DataFrame:
    """The ``rejects`` rows of ``bad_lines`` (file as Spark's key, text), each torn or
    malformed as its file's ``stats`` say."""
    files = [
        (st.key, path, st.torn_text, night_of(path))
        for path, st in stats.items()
        if st.torn or st.malformed
    ]
    info = spark.createDataFrame(files, "key string, path string, torn_text string, run_date date")
    torn = F.col("torn_text").isNotNull() & (F.col("text") == F.col("torn_text"))
    return bad_lines.join(F.broadcast(info), F.col("file") == F.col("key")).select(
        F.col("path").alias("file"),
        F.when(torn, "torn").otherwise("malformed").alias("reason"),
        "text",
        "run_date",
    )


def write_table(table: DataFrame, output: str, name: str) -> None:
    """Replace the nights ``table`` holds in table ``name``; other nights stay as they were."""
    (
        table.select(*TABLES[name].fieldNames())
        .coalesce(1)  # the tables are small: one task writes every night's file
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("run_date")
        .parquet(table_path(output, name))
    )


def table_path(output: str, name: str) -> str:
    return f"{output.rstrip('/')}/{name}"


def read_table(spark: SparkSession, output: str, name: str) -> DataFrame:
    """Table ``name`` as written so far (empty if there is none yet)."""
    schema = TABLES[name]
    try:
        frame = spark.read.schema(schema).parquet(table_path(output, name))
        frame.columns  # noqa: B018 -- resolving the plan is what finds a missing path
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" not in str(exc):
            raise
        return spark.createDataFrame([], schema)
    return frame
