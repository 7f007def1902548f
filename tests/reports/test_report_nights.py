"""Statuses of failure signatures over three nights processed one after the other, and the
same nights processed again giving the same output."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from amqpfuzz.fuzzer.recording import exercisable
from amqpfuzz.reports import run
from amqpfuzz.reports.schema import TABLES
from tests.helpers.report_records import NIGHTS
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

N1, N2, N3 = (dt.date.fromisoformat(n) for n in NIGHTS)


Nights = tuple[Path, list[Path]]


def test_new_recurring_fixed_regressed(spark: SparkSession, three_nights: Nights) -> None:
    output, _ = three_nights
    expected = [
        # night 1: everything is new
        Row(
            run_date=N1,
            signature="sig-A",
            status="new",
            occurrences=1,
            targets=["rabbitmq"],
            reproducer="repro/sig-A-2026-03-01.case",
            total_occurrences=1,
            nights_seen=1,
        ),
        Row(
            run_date=N1,
            signature="sig-B",
            status="new",
            occurrences=1,
            targets=["rabbitmq"],
            reproducer="repro/sig-B-2026-03-01.case",
            total_occurrences=1,
            nights_seen=1,
        ),
        Row(
            run_date=N1,
            signature="sig-G",
            status="new",
            occurrences=1,
            targets=["garagemq"],
            reproducer="repro/sig-G-2026-03-01.case",
            total_occurrences=1,
            nights_seen=1,
        ),
        # night 2: A gone on RabbitMQ; G not judged (GarageMQ was not run)
        Row(
            run_date=N2,
            signature="sig-A",
            status="fixed",
            occurrences=0,
            targets=["rabbitmq"],
            reproducer="repro/sig-A-2026-03-01.case",
            total_occurrences=1,
            nights_seen=1,
        ),
        Row(
            run_date=N2,
            signature="sig-B",
            status="recurring",
            occurrences=1,
            targets=["rabbitmq"],
            reproducer="repro/sig-B-2026-03-02.case",
            total_occurrences=2,
            nights_seen=2,
        ),
        Row(
            run_date=N2,
            signature="sig-C",
            status="new",
            occurrences=1,
            targets=["rabbitmq"],
            reproducer="repro/sig-C-2026-03-02.case",
            total_occurrences=1,
            nights_seen=1,
        ),
        # night 3: A back, B gone, C again, G again on the next night GarageMQ ran
        Row(
            run_date=N3,
            signature="sig-A",
            status="regressed",
            occurrences=1,
            targets=["rabbitmq"],
            reproducer="repro/sig-A-2026-03-03.case",
            total_occurrences=2,
            nights_seen=2,
        ),
        Row(
            run_date=N3,
            signature="sig-B",
            status="fixed",
            occurrences=0,
            targets=["rabbitmq"],
            reproducer="repro/sig-B-2026-03-02.case",
            total_occurrences=2,
            nights_seen=2,
        ),
        Row(
            run_date=N3,
            signature="sig-C",
            status="recurring",
            occurrences=1,
            targets=["rabbitmq"],
            reproducer="repro/sig-C-2026-03-03.case",
            total_occurrences=2,
            nights_seen=2,
        ),
        Row(
            run_date=N3,
            signature="sig-G",
            status="recurring",
            occurrences=1,
            targets=["garagemq"],
            reproducer="repro/sig-G-2026-03-03.case",
            total_occurrences=2,
            nights_seen=2,
        ),
    ]
    actual = table(spark, output, "signatures").select(*expected[0].__fields__)
    assertDataFrameEqual(actual, expected)
    a3 = table(spark, output, "signatures").filter(
        "signature = 'sig-A' AND run_date = '2026-03-03'"
    )
    (row,) = a3.collect()
    assert (row.first_seen, row.last_seen) == ("2026-03-01 01:01:00.000", "2026-03-03 01:01:00.000")


def test_coverage_totals_from_the_spec_without_a_run_file(
    spark: SparkSession, three_nights: Nights
) -> None:
    output, _ = three_nights
    rows = table(spark, output, "coverage").filter(f"run_date = '{N2}'").collect()
    got = {r.dimension: (r.exercised, r.total, r.totals_from) for r in rows}
    named = exercisable("0-9-1")
    # queue.declare and basic.publish; basic.publish/mandatory names no rule (the spec's is
    # basic.publish/mandatory/01); the operators are named only by a run file (the report
    # loads none of the fuzzer's strategies)
    assert got == {
        "methods": (2, len(named["methods"]), "spec"),
        "rules": (0, len(named["rules"]), "spec"),
        "scenario_files": (0, len(named["scenario_files"]), "spec"),
        "mutation_operators": (0, 0, "spec"),
    }
    (methods,) = [r for r in rows if r.dimension == "methods"]
    assert "basic.qos" in methods.uncovered and "basic.deliver" not in methods.uncovered


def _snapshot(spark: SparkSession, output: Path) -> dict[str, list[Row]]:
    return {
        name: table(spark, output, name).collect() for name in TABLES if (output / name).exists()
    }


def test_processing_nights_again_changes_nothing(spark: SparkSession, three_nights: Nights) -> None:
    output, inputs = three_nights
    before = _snapshot(spark, output)
    page = (output / "report.html").read_bytes()
    files = sorted(p.relative_to(output) for p in output.rglob("*.parquet"))
    # the last two nights again, in one go: night 3's statuses build on night 2's of this run
    run(spark, [str(inputs[1]), str(inputs[2])], str(output))
    after = _snapshot(spark, output)
    # (the nights have no divergences, known deviations or scenarios: no tables of them)
    quiet = {"rejects", "divergences", "deviations", "scenarios", "flaky"}
    assert after.keys() == before.keys() == set(TABLES) - quiet
    for name, rows in before.items():
        assertDataFrameEqual(after[name], rows)
    assert (output / "report.html").read_bytes() == page
    partitions = {p.parent for p in output.rglob("*.parquet")}
    assert len(partitions) == len(files), "one file per table and night, none left over"
