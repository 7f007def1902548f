"""Each table of a hand-made night, row by row, against answers worked out by hand.

The night (report_records.first_night): run r1 against RabbitMQ from machines m1 and m2, run r2
against GarageMQ from m3. sig-A fails on all three workers and both brokers and must be one
signature; r2 ships a run-r2.json with the coverage totals.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual, assertSchemaEqual

from amqpfuzz.fuzzer.records import TOOL_VERSION
from amqpfuzz.reports import Summary
from amqpfuzz.reports.schema import TABLES
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

NIGHT = dt.date(2026, 1, 10)
First = tuple[Path, Path, Summary]


def test_runs(spark: SparkSession, first_night: First) -> None:
    _, out, _ = first_night
    common = {"target_protocol": "0-9-1", "tool_version": TOOL_VERSION, "run_date": NIGHT}
    expected = [
        Row(
            run_id="r1",
            target_label="rabbitmq",
            target_product="RabbitMQ",
            target_version="3.10.8",
            workers=2,
            started="2026-01-10 00:59:59.000",
            finished="2026-01-10 01:00:05.000",
            duration_s=6.0,
            cases=7,
            cases_per_s=7 / 6,
            failures=2,
            errors=1,
            passes=3,
            xfails=0,
            xpasses=0,
            skips=1,
            flaky=0,
            **common,
        ),
        Row(
            run_id="r2",
            target_label="garagemq",
            target_product="GarageMQ",
            target_version="0.1",
            workers=1,
            started="2026-01-10 01:00:09.500",
            finished="2026-01-10 01:00:13.000",
            duration_s=3.5,
            cases=4,
            cases_per_s=4 / 3.5,
            failures=2,
            errors=0,
            passes=1,
            xfails=1,
            xpasses=0,
            skips=0,
            flaky=0,
            **common,
        ),
    ]
    actual = table(spark, out, "runs").select(*TABLES["runs"].fieldNames())
    assertDataFrameEqual(actual, [Row(**{k: r[k] for k in actual.columns}) for r in expected])


def _verdicts(
    pass_: int = 0, fail: int = 0, error: int = 0, skip: int = 0, xfail: int = 0, xpass: int = 0
) -> dict[str, int]:
    counts = {
        "pass": pass_,
        "fail": fail,
        "error": error,
        "skip": skip,
        "xfail": xfail,
        "xpass": xpass,
        "flaky": 0,
    }
    return {**counts, "total": sum(counts.values())}


def test_conformance_matrix(spark: SparkSession, first_night: First) -> None:
    _, out, _ = first_night
    rabbit = ("rabbitmq", "RabbitMQ", "3.10.8", "0-9-1")
    garage = ("garagemq", "GarageMQ", "0.1", "0-9-1")
    cells = [
        (rabbit, "queue.declare", "queue", _verdicts(pass_=2)),
        (rabbit, "queue.declare/queue/reserved", "queue", _verdicts(fail=2)),
        (rabbit, "basic.publish", "basic", _verdicts(pass_=1, error=1)),
        (rabbit, "channel.open/state", "channel", _verdicts(skip=1)),
        (garage, "channel.open/state", "channel", _verdicts(pass_=1)),
        (garage, "exchange.declare", "exchange", _verdicts(fail=1, xfail=1)),
        (garage, "queue.declare/queue/reserved", "queue", _verdicts(fail=1)),
    ]
    columns = TABLES["conformance"].fieldNames()
    expected = [
        dict(zip(columns[:6], (*target, ref, cls), strict=True)) | counts | {"run_date": NIGHT}
        for target, ref, cls, counts in cells
    ]
    actual = table(spark, out, "conformance").select(*columns)
    assertDataFrameEqual(actual, [Row(**{c: e[c] for c in columns}) for e in expected])


def test_one_signature_per_defect_across_machines_and_brokers(
    spark: SparkSession, first_night: First
) -> None:
    _, out, _ = first_night
    columns = TABLES["signatures"].fieldNames()
    expected = [
        (
            "sig-A",
            "new",
            "reply-code",
            "queue.declare/queue/reserved",
            "sig-A happened",
            3,
            ["garagemq", "rabbitmq"],
            "repro/a-small.case",
            "reply",  # what the smallest case required, and what the broker did
            "reply",
            "0-9-1",
            "2026-01-10 01:00:01.000",
            "2026-01-10 01:00:12.000",
            3,
            1,
            NIGHT,
        ),
        (
            "sig-D",
            "new",
            "reply-code",
            "exchange.declare",
            "sig-D happened",
            1,
            ["garagemq"],
            "repro/d.case",
            "reply",
            "reply",
            "0-9-1",
            "2026-01-10 01:00:11.000",
            "2026-01-10 01:00:11.000",
            1,
            1,
            NIGHT,
        ),
    ]
    actual = table(spark, out, "signatures").select(*columns)
    assertDataFrameEqual(actual, [Row(**dict(zip(columns, e, strict=True))) for e in expected])


def test_coverage_against_what_the_run_file_names(spark: SparkSession, first_night: First) -> None:
    """run-r2.json names what there was to exercise; r1 has none, and the night's names are
    r2's. Exercised: methods by spec_ref or its part before ``/``, rules by spec_ref, scenario
    files, mutations; the rest is listed as not exercised."""
    _, out, _ = first_night
    expected = [
        Row(dimension="methods", exercised=4, total=6, uncovered=["queue.bind", "queue.purge"]),
        Row(dimension="rules", exercised=2, total=3, uncovered=["basic.publish/mandatory"]),
        Row(dimension="scenario_files", exercised=1, total=2, uncovered=["queue-bind.yaml"]),
        Row(dimension="mutation_operators", exercised=2, total=4,
            uncovered=["frame-type", "unknown-class"]),
    ]  # fmt: skip
    actual = table(spark, out, "coverage")
    assert {r.totals_from for r in actual.collect()} == {"run-file"}
    assert {r.run_date for r in actual.collect()} == {NIGHT}
    assertDataFrameEqual(actual.select("dimension", "exercised", "total", "uncovered"), expected)


def test_known_deviations(spark: SparkSession, first_night: First) -> None:
    """The one xfail: its profile's entry, reason and case count."""
    _, out, _ = first_night
    (row,) = table(spark, out, "deviations").collect()
    assert (row.target_label, row.profile, row.entry, row.verdict, row.occurrences) == (
        "garagemq",
        "garagemq-0.1",
        "rule exchange.declare/type",
        "xfail",
        1,
    )
    assert row.reason == "GarageMQ takes any exchange type"
    assert (row.kinds, row.spec_refs) == (["differential"], ["exchange.declare"])


def test_scenarios(spark: SparkSession, first_night: First) -> None:
    """The scenario record: its rule, target, verdict and the reply the broker gave."""
    _, out, _ = first_night
    (row,) = table(spark, out, "scenarios").collect()
    assert (row.target_label, row.spec_ref, row.scenario, row.verdict) == (
        "garagemq",
        "channel.open/state",
        "channel-open-state.yaml",
        "pass",
    )
    assert (row.observed_outcome, row.observed_reply, row.occurrences) == (
        "reply",
        "channel.open-ok",
        1,
    )


def test_differential_divergences(spark: SparkSession, first_night: First) -> None:
    _, out, _ = first_night
    columns = TABLES["divergences"].fieldNames()
    expected = [
        (
            "garagemq",
            "exchange.declare",
            None,
            "fail",
            "reply",
            None,
            "reply",
            None,
            "sig-D",
            "garagemq",
            1,
            "2026-01-10 01:00:11.000",
            "2026-01-10 01:00:11.000",
            "repro/d.case",
            NIGHT,
        ),
        (
            "garagemq",
            "exchange.declare",
            None,
            "xfail",
            "reply",
            None,
            "reply",
            None,
            None,
            None,
            1,
            "2026-01-10 01:00:13.000",
            "2026-01-10 01:00:13.000",
            None,
            NIGHT,
        ),
    ]
    actual = table(spark, out, "divergences").select(*columns)
    assertDataFrameEqual(actual, [Row(**dict(zip(columns, e, strict=True))) for e in expected])


def test_ingest_health(spark: SparkSession, first_night: First) -> None:
    """Every file, its records and the broker's coverage records alike; the summary counts the
    records only."""
    inputs, out, summary = first_night
    expected = [
        Row(
            file=f"file:{inputs}/{path}",
            state="complete",
            read=True,
            lines=lines,
            records=lines,
            duplicates=0,
            torn_lines=0,
            malformed_lines=0,
            contents=path.split("/")[1].split("-")[0],
            run_date=NIGHT,
        )
        for path, lines in (
            ("machine1/coverage-r1-m1-11.jsonl", 3),
            ("machine1/records-r1-m1-11.jsonl", 4),
            ("machine2/coverage-r1-m2-22.jsonl", 2),
            ("machine2/records-r1-m2-22.jsonl", 3),
            ("machine3/records-r2-m3-33.jsonl", 4),
        )
    ]
    actual = table(spark, out, "ingest").drop("bytes", "modified")
    assertDataFrameEqual(actual.select(*expected[0].__fields__), expected)
    assert summary.records == 11 and summary.nights == (NIGHT,)


# (the first night has no flaky failure: test_report_flaky.py checks that table's schema)
@pytest.mark.parametrize("name", [n for n in TABLES if n not in ("rejects", "flaky")])
def test_written_schema_is_the_declared_one(
    spark: SparkSession, first_night: First, name: str
) -> None:
    _, out, _ = first_night
    written = spark.read.parquet(str(out / name))  # as Parquet and partition discovery say
    assertSchemaEqual(written.schema, TABLES[name])
    assert [p.name for p in (out / name).iterdir() if p.is_dir()] == ["run_date=2026-01-10"]


def test_headline_of_the_night(first_night: First) -> None:
    _, _, summary = first_night
    h = summary.headline
    assert (h["cases"], h["failures"], h["errors"], h["signatures"], h["new"]) == (11, 4, 1, 2, 2)
    assert (h["regressed"], h["fixed"], h["runs"], h["targets"]) == (0, 0, 2, 2)
    assert h["cases_per_s"] == pytest.approx(11 / 9.5)
