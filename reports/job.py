"""The nightly job: record files in, Parquet tables and the HTML report out.

:func:`run` is handed its session and never builds one, so the same function runs in local
mode (the CLI), under ``spark-submit`` on a cluster (``submit.py``) and over Spark Connect.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import coverage, html, page, read, signatures, tables

__all__ = ["Summary", "is_local", "local_path", "run"]


@dataclass(frozen=True, slots=True)
class Summary:
    """What a run did, for the command line and for callers."""

    nights: tuple[dt.date, ...]
    night: dt.date  # the one the HTML page is about: the latest processed
    records: int
    failures: int
    headline: dict[str, float]
    html: str
    html_path: str | None


def is_local(path: str) -> bool:
    return urlparse(path).scheme in ("", "file")


def local_path(path: str) -> Path:
    return Path(urlparse(path).path if path.startswith("file:") else path)


def _history(
    spark: SparkSession, output: str, nights: Sequence[dt.date]
) -> tuple[list[signatures.Sighting], list[tuple[dt.date, str]]]:
    """Earlier nights' signatures and (night, target) pairs, read before the job overwrites
    anything (Spark reads lazily, and the same paths are about to be written)."""
    sightings = signatures.collect_sightings(
        tables.read_table(spark, output, "signatures", except_nights=nights)
        .filter("occurrences > 0")
        .select(
            "run_date",
            "signature",
            "occurrences",
            "targets",
            F.unix_micros("first_seen").alias("first_us"),
            F.unix_micros("last_seen").alias("last_us"),
            "oracle",
            "spec_ref",
            "message",
            "reproducer",
        )
    )
    return sightings, _ran(tables.read_table(spark, output, "runs", except_nights=nights))


def _ran(frame: DataFrame) -> list[tuple[dt.date, str]]:
    """The (night, target label) pairs of a frame with those columns."""
    pairs = frame.select("run_date", "target_label").distinct().collect()
    return [(r.run_date, r.target_label) for r in pairs]


def run(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    *,
    settle: dt.timedelta = read.SETTLE,
    now: dt.datetime | None = None,
    protocol: str = "0-9-1",
) -> Summary:
    """Read the record files under ``inputs``; (re)write their nights' tables under ``output``;
    render the latest night's page, written to ``output``/report.html when ``output`` is local.

    Raises :class:`~amqpfuzz.reports.read.ReportInputError` for input no report can be made of.
    """
    with read.step("read"):
        ingest = read.ingest(spark, inputs, now=now, settle=settle)
    try:
        nights = ingest.nights
        with read.step("history"):
            past_signatures, past_runs = _history(spark, output, nights)
        facts = ingest.facts
        runs = tables.runs(facts)
        with read.step("runs"):
            tables.write_table(runs, output, "runs")
        with read.step("conformance"):
            tables.write_table(tables.conformance(facts), output, "conformance")
        with read.step("signatures"):
            tonight = signatures.collect_sightings(signatures.night_signatures(facts))
            ran = past_runs + _ran(facts)
            judged = signatures.statuses(past_signatures + tonight, ran, nights)
            tables.write_table(signatures.table(spark, judged), output, "signatures")
        with read.step("coverage"):
            totals = coverage.night_totals(
                ingest.run_dates, ingest.totals, coverage.spec_totals(protocol)
            )
            tables.write_table(coverage.coverage(spark, facts, totals), output, "coverage")
        with read.step("divergences"):
            tables.write_table(tables.divergences(facts), output, "divergences")
        with read.step("ingest"):
            tables.write_table(tables.ingest_health(spark, ingest), output, "ingest")
            rejected = tables.rejects(spark, ingest)
            if rejected is not None:
                tables.write_table(rejected, output, "rejects")
    finally:
        ingest.release()
    night = nights[-1]
    with read.step("html"):
        shown = page.gather(spark, output, night)
        text = html.render(shown)
    html_path = None
    if is_local(output):
        target = local_path(output) / "report.html"
        target.write_text(text, encoding="utf-8")
        html_path = str(target)
    return Summary(
        nights=tuple(nights),
        night=night,
        records=sum(st.records for st in ingest.stats.values()),
        failures=int(shown.headline["failures"]),
        headline=shown.headline,
        html=text,
        html_path=html_path,
    )
