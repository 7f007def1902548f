"""bench/report.py --quick runs and prints its figures as JSON lines (no timing is asserted).

It runs in this process, on the suite's Spark session: a JVM of its own would cost more than
the benchmark's smoke test is worth."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

BENCH = Path(__file__).resolve().parents[2] / "bench" / "report.py"


@pytest.mark.slow
def test_report_bench_prints_every_figure(
    spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("bench_report", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--quick"], spark=spark)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(r["bench"] == "report" and r["value"] > 0 for r in lines)
    figures = {(r["figure"], json.dumps(r["records"])) for r in lines}
    assert figures == {
        ("seconds", "20000"),
        ("records_per_s", "20000"),
        ("seconds", "40000"),
        ("records_per_s", "40000"),
        ("floor_seconds", "20000"),
        ("floor_seconds", "40000"),
        ("floor_ratio", "20000"),
        ("floor_ratio", "40000"),
        ("time_ratio", "[20000, 40000]"),
    }
    floor = {r["records"]: r["target"] for r in lines if r["figure"] == "floor_ratio"}
    assert floor == {20000: 3.0, 40000: None}
    rates = [r for r in lines if r["figure"] == "records_per_s"]
    assert {r["target"] for r in rates} == {50_000}
    assert next(r for r in lines if r["figure"] == "time_ratio")["target"] == 2.3
    assert spark.range(3).count() == 3  # the lent session was not stopped
