"""bench/report.py runs and prints its figures as JSON lines (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "report.py"


@pytest.mark.slow
def test_report_bench_prints_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(r["bench"] == "report" and r["value"] > 0 for r in lines)
    figures = {(r["figure"], json.dumps(r["records"])) for r in lines}
    assert figures == {
        ("seconds", "20000"),
        ("records_per_s", "20000"),
        ("seconds", "40000"),
        ("records_per_s", "40000"),
        ("time_ratio", "[20000, 40000]"),
    }
    rates = [r for r in lines if r["figure"] == "records_per_s"]
    assert {r["target"] for r in rates} == {50_000}
    assert next(r for r in lines if r["figure"] == "time_ratio")["target"] == 2.3
