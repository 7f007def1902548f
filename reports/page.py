"""What the HTML report shows, gathered from the tables in the output (small: a night's rows
and one row per night for the trends), as plain Python values for :mod:`.html` to render."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .tables import read_table

__all__ = ["Page", "Trend", "gather"]

TREND_NIGHTS = 60  # the trend charts show at most this many nights, the latest ones
STATUS_ORDER = {"new": 0, "regressed": 1, "recurring": 2, "fixed": 3}


@dataclass(frozen=True, slots=True)
class Trend:
    night: dt.date
    cases: int
    failures: int
    signatures: int
    cases_per_s: float


@dataclass(frozen=True, slots=True)
class Page:
    night: dt.date
    headline: dict[str, float]
    trends: list[Trend]
    signatures: list[dict[str, Any]]  # new, regressed, recurring, fixed; most frequent first
    heat_rows: list[str]  # targets
    heat_columns: list[str]  # spec classes
    heat: dict[tuple[str, str], tuple[int, int, int]]  # failing, judged, total
    coverage: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    divergences: list[dict[str, Any]]
    ingest: list[dict[str, Any]]


def _rows(frame: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.collect()]


def _trends(spark: SparkSession, output: str, night: dt.date) -> list[Trend]:
    runs = (
        read_table(spark, output, "runs")
        .filter(F.col("run_date") <= night)
        .groupBy("run_date")
        .agg(
            F.sum("cases").alias("cases"),
            F.sum("failures").alias("failures"),
            F.sum("duration_s").alias("duration_s"),
        )
    )
    sigs = (
        read_table(spark, output, "signatures")
        .filter((F.col("run_date") <= night) & (F.col("occurrences") > 0))
        .groupBy("run_date")
        .agg(F.count("*").alias("signatures"))
    )
    rows = (
        runs.join(sigs, "run_date", "left")
        .orderBy(F.col("run_date").desc())
        .limit(TREND_NIGHTS)
        .collect()
    )
    return [
        Trend(
            night=r.run_date,
            cases=r.cases,
            failures=r.failures,
            signatures=r.signatures or 0,
            cases_per_s=r.cases / r.duration_s if r.duration_s else 0.0,
        )
        for r in reversed(rows)
    ]


def _heat(
    spark: SparkSession, output: str, night: dt.date
) -> dict[tuple[str, str], tuple[int, int, int]]:
    rows = (
        read_table(spark, output, "conformance")
        .filter(F.col("run_date") == night)
        .groupBy("target_label", "spec_class")
        .agg(
            F.sum(F.col("fail") + F.col("error")).alias("failing"),
            F.sum(F.col("total") - F.col("skip")).alias("judged"),
            F.sum("total").alias("total"),
        )
        .collect()
    )
    return {
        (r.target_label or "?", r.spec_class or "?"): (r.failing, r.judged, r.total) for r in rows
    }


def _night(spark: SparkSession, output: str, name: str, night: dt.date) -> DataFrame:
    return read_table(spark, output, name).filter(F.col("run_date") == night).drop("run_date")


def gather(spark: SparkSession, output: str, night: dt.date) -> Page:
    """Everything the page for ``night`` shows, read back from the tables in ``output``."""
    runs = sorted(
        _rows(_night(spark, output, "runs", night)),
        key=lambda r: (r["target_label"] or "", r["run_id"]),
    )
    signatures = sorted(
        _rows(_night(spark, output, "signatures", night)),
        key=lambda r: (STATUS_ORDER[r["status"]], -r["occurrences"], r["signature"]),
    )
    ingest = sorted(_rows(_night(spark, output, "ingest", night)), key=lambda r: r["file"])
    heat = _heat(spark, output, night)
    cases = sum(r["cases"] for r in runs)
    duration = sum(r["duration_s"] for r in runs)
    statuses = [s["status"] for s in signatures]
    headline: dict[str, float] = {
        "cases": cases,
        "failures": sum(r["failures"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "signatures": sum(1 for s in signatures if s["occurrences"] > 0),
        "new": statuses.count("new"),
        "regressed": statuses.count("regressed"),
        "fixed": statuses.count("fixed"),
        "cases_per_s": cases / duration if duration else 0.0,
        "runs": len({r["run_id"] for r in runs}),
        "targets": len({r["target_label"] for r in runs}),
        "records": sum(r["records"] for r in ingest),
        "torn_lines": sum(r["torn_lines"] for r in ingest),
        "duplicates": sum(r["duplicates"] for r in ingest),
        "malformed_lines": sum(r["malformed_lines"] for r in ingest),
    }
    divergences = (
        _night(spark, output, "divergences", night)
        .orderBy(F.col("occurrences").desc(), "spec_ref", "target_label")
        .limit(100)
    )
    return Page(
        night=night,
        headline=headline,
        trends=_trends(spark, output, night),
        signatures=signatures,
        heat_rows=sorted({t for t, _ in heat}),
        heat_columns=sorted({c for _, c in heat}),
        heat=heat,
        coverage=_rows(_night(spark, output, "coverage", night)),
        runs=runs,
        divergences=_rows(divergences),
        ingest=ingest,
    )
