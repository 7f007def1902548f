"""The nightly job: record files in, Parquet tables and the HTML report out.

:func:`run` is handed its session and never builds one, so the same function runs in local
mode (the CLI), under ``spark-submit`` on a cluster (``submit.py``) and over Spark Connect.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from amqpfuzz.spec import DEFAULT_PROTOCOL

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


@dataclass(frozen=True, slots=True)
class _History:
    """Earlier nights, as the output holds them."""

    sightings: list[signatures.Sighting]  # signatures that failed, per night
    ran: list[tuple[dt.date, str]]  # (night, target label) pairs
    trends: list[page.Trend]


def _history(spark: SparkSession, output: str, nights: Sequence[dt.date]) -> _History:
    """Read before the job overwrites anything (Spark reads lazily, and the same paths are
    about to be written); the nights being processed are left out."""
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
            "expected",
            "observed",
            "protocol",
        )
    )
    runs = tables.collect(
        tables.read_table(spark, output, "runs", except_nights=nights).select(
            "run_date", "target_label", "cases", "failures", "duration_s"
        )
    )
    failing = Counter(s.run_date for s in sightings)
    return _History(
        sightings=sightings,
        ran=[(r["run_date"], r["target_label"]) for r in runs],
        trends=page.trends(runs, failing),
    )


# The tables are small: each of their Spark jobs is mostly a job's fixed cost (scheduling,
# a commit), which jobs running side by side from threads of the driver share.
SIDE_BY_SIDE = 4


def _tables(ingest: read.Ingest, past: _History, protocol: str) -> dict[str, tables.Rows]:
    """Every table's rows for the nights read (rejects aside: they stay in Spark); the
    independent Spark jobs run side by side."""
    facts = ingest.facts

    def covered() -> tables.Rows:
        found = []
        for spoken in coverage.protocols(facts, protocol):
            named = coverage.universes(ingest.run_dates, ingest.totals, spoken)
            found += coverage.coverage(facts, named, spoken, protocol)
        return found

    jobs: dict[str, Callable[[], Any]] = {
        "runs": lambda: tables.collect(tables.runs(facts)),
        "tonight": lambda: signatures.collect_sightings(signatures.night_signatures(facts)),
        "conformance": lambda: tables.collect(tables.conformance(facts)),
        "deviations": lambda: tables.collect(tables.deviations(facts)),
        "scenarios": lambda: tables.collect(tables.scenarios(facts)),
        "coverage": covered,
        "divergences": lambda: tables.collect(tables.divergences(facts)),
    }
    with ThreadPoolExecutor(SIDE_BY_SIDE, thread_name_prefix="amqpfuzz-table") as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        done = {name: future.result() for name, future in futures.items()}
    runs, tonight = done.pop("runs"), done.pop("tonight")
    ran = past.ran + [(r["run_date"], r["target_label"]) for r in runs]
    judged = signatures.statuses(past.sightings + tonight, ran, ingest.nights)
    return {
        "runs": runs,
        "conformance": done["conformance"],
        "deviations": done["deviations"],
        "scenarios": done["scenarios"],
        "signatures": signatures.as_rows(judged),
        "coverage": done["coverage"],
        "divergences": done["divergences"],
        "ingest": tables.ingest_health(ingest),
    }


def _write(spark: SparkSession, output: str, made: dict[str, tables.Rows]) -> None:
    """Each table written, side by side (each to its own path)."""

    def write(name: str) -> None:
        with read.step(f"write {name}"):
            tables.write_rows(spark, output, name, made[name])

    with ThreadPoolExecutor(SIDE_BY_SIDE, thread_name_prefix="amqpfuzz-write") as pool:
        for future in [pool.submit(write, name) for name in made]:
            future.result()


def run(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    *,
    settle: dt.timedelta = read.SETTLE,
    now: dt.datetime | None = None,
    protocol: str = DEFAULT_PROTOCOL,
    html_to: str | None = None,
) -> Summary:
    """Read the record files under ``inputs``; (re)write their nights' tables under ``output``;
    render the latest night's page, written to ``html_to`` (a local file), by default
    ``output``/report.html when ``output`` is a local path.

    Raises :class:`~amqpfuzz.reports.read.ReportInputError` for input no report can be made of.
    """
    with read.step("read"):
        ingest = read.ingest(spark, inputs, now=now, settle=settle)
    try:
        nights = ingest.nights
        with read.step("history"):
            past = _history(spark, output, nights)
        with read.step("tables"):
            made = _tables(ingest, past, protocol)
        with read.step("write"):
            _write(spark, output, made)
        rejected = tables.rejects(spark, ingest)
        if rejected is not None:
            with read.step("write rejects"):
                tables.write_table(rejected, output, "rejects")
    finally:
        ingest.release()
    night = nights[-1]
    shown = page.build(night, made, past.trends, protocol)
    text = html.render(shown)
    html_path = html_to or (str(local_path(output) / "report.html") if is_local(output) else None)
    if html_path is not None:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(text, encoding="utf-8")
    return Summary(
        nights=tuple(nights),
        night=night,
        records=sum(st.records for st in ingest.stats.values()),
        failures=int(shown.headline["failures"]),
        headline=shown.headline,
        html=text,
        html_path=html_path,
    )
