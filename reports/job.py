"""The nightly job: record files (and the broker's coverage files) in, Parquet tables and the
HTML report out.

:func:`run` is handed its session and never builds one, so the same function runs in local
mode (the CLI), under ``spark-submit`` on a cluster (``submit.py``) and over Spark Connect.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from amqpfuzz.spec import DEFAULT_PROTOCOL

from . import broker, coverage, html, page, read, signatures, tables

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
    broker: tables.Rows  # the broker's code covered per night, target and set


_Read = tuple[list[signatures.Sighting], tables.Rows, tables.Rows]


def _read_history(spark: SparkSession, output: str) -> _Read:
    """Every night the output holds: the signatures that failed, the runs, the broker's code
    covered per target and set. Read (and collected) before the job overwrites anything: Spark
    reads lazily, and the same paths are about to be written."""
    sightings = signatures.collect_sightings(
        tables.read_table(spark, output, "signatures")
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
        tables.read_table(spark, output, "runs").select(
            "run_date", "target_label", "cases", "failures", "duration_s"
        )
    )
    return sightings, runs, broker.history(spark, output)


def _history(read: _Read, nights: Sequence[dt.date], measured: Sequence[dt.date]) -> _History:
    """The earlier nights: those read, less the nights being processed (``measured``: those
    of the broker's coverage being processed)."""
    sightings = [s for s in read[0] if s.run_date not in nights]
    runs = [r for r in read[1] if r["run_date"] not in nights]
    failing = Counter(s.run_date for s in sightings)
    return _History(
        sightings=sightings,
        ran=[(r["run_date"], r["target_label"]) for r in runs],
        trends=page.trends(runs, failing),
        broker=[r for r in read[2] if r["run_date"] not in measured],
    )


@dataclass(frozen=True, slots=True)
class _Measured:
    """The broker's coverage being processed, and each of its runs' night."""

    found: broker.CoverageInput
    dates: dict[str, dt.date]
    latest: dt.date  # the night of a coverage file of no known run


def _tables(
    spark: SparkSession,
    output: str,
    ingest: read.Ingest,
    measured: _Measured,
    past: _History,
    protocol: str,
) -> dict[str, tables.Rows]:
    """Every table's rows for the nights read (rejects aside: they stay in Spark), each
    written as soon as it is made (each to its own path); the independent Spark jobs run
    side by side. The broker's coverage points are written as Spark made them (a point every
    few seconds per worker: they may be many); their rows here are only those the page
    draws (:func:`.broker.curves`)."""
    facts = ingest.facts
    futures: dict[str, Future[tables.Rows]] = {}
    found = measured.found
    records = (
        broker.with_nights(found.records, measured.dates) if found.records is not None else None
    )

    def points() -> tables.Rows:
        if records is None:
            return []
        made = broker.points(records)
        with read.step("write broker_coverage_points"):
            tables.write_table(made, output, "broker_coverage_points")
        return broker.curves(made)

    def covered() -> tables.Rows:
        found = []
        for spoken, nights in sorted(coverage.seen(facts, protocol).items()):
            named = coverage.universes(ingest.run_dates, ingest.totals, spoken)
            found += coverage.coverage(nights, named, spoken)
        return found

    def signed() -> tables.Rows:
        tonight = signatures.collect_sightings(signatures.night_signatures(facts))
        # submitted first, so already taken by a thread of its own: waiting cannot deadlock
        runs = futures["runs"].result()
        ran = past.ran + [(r["run_date"], r["target_label"]) for r in runs]
        return signatures.as_rows(signatures.statuses(past.sightings + tonight, ran, ingest.nights))

    makers: dict[str, Callable[[], tables.Rows]] = {
        "runs": lambda: tables.collect(tables.runs(facts)),
        "signatures": signed,
        "conformance": lambda: tables.collect(tables.conformance(facts)),
        "deviations": lambda: tables.collect(tables.deviations(facts)),
        "scenarios": lambda: tables.collect(tables.scenarios(facts)),
        "coverage": covered,
        "divergences": lambda: tables.collect(tables.divergences(facts)),
        "flaky": lambda: tables.collect(tables.flaky(facts)),
        "ingest": lambda: (
            tables.ingest_health(ingest) + broker.health(found, measured.dates, measured.latest)
        ),
        "broker_coverage": lambda: broker.module_rows(records) if records is not None else [],
        "broker_coverage_points": points,
    }

    def make(name: str) -> tables.Rows:
        rows = makers[name]()
        if name != "broker_coverage_points":  # (written as made)
            with read.step(f"write {name}"):
                tables.write_rows(spark, output, name, rows)
        return rows

    with ThreadPoolExecutor(len(makers), thread_name_prefix="amqpfuzz-table") as pool:
        for name in makers:
            futures[name] = pool.submit(make, name)
        return {name: future.result() for name, future in futures.items()}


def _discard(covered: Future[broker.CoverageInput]) -> None:
    """Release what reading the coverage files cached, once it is done (if it did not fail)."""
    with contextlib.suppress(Exception):  # (its own error: the caller's is the one raised)
        covered.result().release()


def _write_rejects(
    spark: SparkSession, output: str, ingest: read.Ingest, measured: _Measured
) -> None:
    """The torn and malformed lines of record and coverage files alike."""
    found = [
        tables.rejects(spark, ingest),
        broker.rejects(spark, measured.found, measured.dates, measured.latest),
    ]
    frames = [frame for frame in found if frame is not None]
    if frames:
        rejected = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        with read.step("write rejects"):
            tables.write_table(rejected, output, "rejects")


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
    """Read the record files (and the broker's coverage files) under ``inputs``; (re)write their
    nights' tables under ``output``;
    render the latest night's page, written to ``html_to`` (a local file), by default
    ``output``/report.html when ``output`` is a local path.

    Raises :class:`~amqpfuzz.reports.read.ReportInputError` for input no report can be made of.
    """
    # The history's few small jobs, and the coverage files' (small too), run beside the
    # ingest's large ones.
    with ThreadPoolExecutor(2, thread_name_prefix="amqpfuzz-history") as pool:
        history = pool.submit(_read_history, spark, output)
        files = read.list_inputs(spark, inputs, now or dt.datetime.now(dt.UTC), settle)
        covered = pool.submit(broker.read_coverage, spark, files)
        try:
            with read.step("read"):
                ingest = read.ingest(spark, inputs, settle=settle, files=files)
        except BaseException:
            _discard(covered)
            raise
        try:
            with read.step("history"):
                earlier = history.result()
            with read.step("read coverage"):
                found = covered.result()
        except BaseException:
            ingest.release()
            _discard(covered)
            raise
    try:
        nights = ingest.nights
        try:
            measured = _Measured(found, found.run_dates(ingest.run_dates), nights[-1])
            past = _history(earlier, nights, sorted(set(measured.dates.values())))
            with read.step("tables"):
                made = _tables(spark, output, ingest, measured, past, protocol)
            _write_rejects(spark, output, ingest, measured)
        finally:
            found.release()
    finally:
        with read.step("release"):
            ingest.release()
    night = nights[-1]
    with read.step("page"):
        shown = page.build(night, made, past.trends, protocol, broker_history=past.broker)
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
