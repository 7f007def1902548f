"""Flaky failures in the nightly report: a column of the runs and targets, a table and a section
of their own (each with the rate its replays reproduced it at and what they saw), never counted
as failures; schema 2 records (no flaky verdict, no confirmation) still read."""

from __future__ import annotations

import datetime as dt
from html import escape
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertSchemaEqual

from amqpfuzz.reports import run
from amqpfuzz.reports.schema import TABLES
from tests.helpers.report_records import NIGHT, at, case, write
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # Spark

FLAKY = "reaction:exchange.*:valid:reply->connection-close/504"
SURE = "reaction:-:frame-end:connection-close/501->socket-close"
REPLAYS = {
    "runs": 3,
    "reproduced": 0,
    "rate": "0/3",
    "found": "connection-close 504 CHANNEL_ERROR - expected 'channel.open'",
    "replays": ["reply exchange.declare-ok", "reply exchange.declare-ok", "timeout"],
}


@pytest.fixture(scope="module")
def night(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    inputs = tmp_path_factory.mktemp("flaky-in")
    output = tmp_path_factory.mktemp("flaky-out")
    flaky = [
        case(run_id="f1", worker="w1", ts=at(NIGHT, s), verdict="flaky", signature=FLAKY,
             spec_ref="exchange.declare", reproducer=f"out/reproducers/repro-{s}.json",
             reproducer_size=900 + s, confirmation=REPLAYS, seq=s)
        for s in (1, 2)
    ]  # fmt: skip
    sure = case(
        run_id="f1", worker="w1", ts=at(NIGHT, 3), verdict="fail", signature=SURE, seq=3,
        mutation="frame-end", confirmation={**REPLAYS, "reproduced": 3, "rate": "3/3"},
    )  # fmt: skip
    write(inputs, "f1", "w1", [case(run_id="f1", worker="w1", ts=at(NIGHT, 0)), *flaky, sure])
    older = case(run_id="f2", worker="w2", ts=at(NIGHT, 4), verdict="fail", signature=SURE)
    older["schema_version"] = 2
    del older["confirmation"]
    write(inputs, "f2", "w2", [older])
    run(spark, [str(inputs)], str(output))
    return output


def test_a_flaky_failure_has_a_table_of_its_own(spark: SparkSession, night: Path) -> None:
    (row,) = table(spark, night, "flaky").collect()
    assert (row.signature, row.occurrences, row.targets) == (FLAKY, 2, ["rabbitmq"])
    assert row.rate == "0/3" and row.reproducer == "out/reproducers/repro-1.json"
    assert sorted(row.replays) == ["reply exchange.declare-ok", "timeout"]
    assert row.run_date == dt.date.fromisoformat(NIGHT)
    assertSchemaEqual(spark.read.parquet(str(night / "flaky")).schema, TABLES["flaky"])


def test_flaky_is_counted_apart_from_failures(spark: SparkSession, night: Path) -> None:
    runs = {r.run_id: r for r in table(spark, night, "runs").collect()}
    assert (runs["f1"].failures, runs["f1"].flaky, runs["f2"].failures) == (1, 2, 1)
    signatures = {r.signature for r in table(spark, night, "signatures").collect()}
    assert signatures == {SURE}  # a flaky one is no failure signature


def test_the_page_shows_them_with_their_rate(night: Path) -> None:
    page = (night / "report.html").read_text()
    section = page[page.index('<h2 id="flaky">') : page.index('<h2 id="deviations">')]
    assert escape(FLAKY) in section and "0/3" in section and "timeout" in section
    assert "replay out/reproducers/repro-1.json" in section
    assert 'data-figure="flaky">2<' in page and 'data-figure="failures">2<' in page
