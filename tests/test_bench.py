"""The benchmark scripts run and print their figures as JSON lines (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

BENCH = Path(__file__).resolve().parents[1] / "bench"


def quick_run(bench: str, timeout: float) -> list[dict[str, Any]]:
    """The JSON lines of ``bench/<bench>.py --quick`` (which must exit 0)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{bench}.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_codec_bench_prints_every_figure() -> None:
    lines = quick_run("codec", timeout=120)
    figures = {(r["figure"], r.get("impl")) for r in lines}
    for op in ("encode", "decode"):
        for impl in ("amqpfuzz", "pamqp", "pika"):
            assert (f"{op}_frames_per_s", impl) in figures
        ratio = next(r for r in lines if r["figure"] == f"{op}_ratio_vs_pamqp")
        assert ratio["value"] > 0 and ratio["target"] == 1.5
    assert all(r["bench"] == "codec" and r["value"] > 0 for r in lines)


def test_codec10_bench_prints_every_figure() -> None:
    lines = quick_run("codec10", timeout=120)
    figures = {(r["figure"], r.get("impl")) for r in lines}
    for op in ("encode", "decode"):
        for impl in ("amqpfuzz", "proton"):
            assert (f"{op}_mix_per_s", impl) in figures
        ratio = next(r for r in lines if r["figure"] == f"{op}_ratio_vs_proton")
        assert ratio["value"] > 0 and ratio["target"] == 1.0
    assert all(r["bench"] == "codec10" and r["value"] > 0 for r in lines)


def test_strategies_bench_prints_generation_beside_round_trips() -> None:
    lines = quick_run("strategies", timeout=300)
    (trips,) = [r for r in lines if r["figure"] == "round_trips_per_s"]
    assert trips["value"] > 0
    generated = {(r["protocol"], r["mix"]) for r in lines if r["figure"] == "cases_generated_per_s"}
    protocols = ("0-9-1", "1.0", "0-10")
    assert generated == {(p, m) for p in protocols for m in ("valid", "malformed")}
    for mix in ("valid", "malformed"):
        ratios = [r for r in lines if r["figure"] == f"{mix}_generation_vs_round_trip"]
        assert {r["protocol"] for r in ratios} == set(protocols)
        assert all(r["target"] == 1.0 and r["value"] > 0 for r in ratios)


def test_findings_clients_bench_prints_both_versions_of_a_client() -> None:
    lines = quick_run("findings_clients", timeout=300)
    pika = metadata.version("pika")
    assert {(r["client"], r["version"]) for r in lines} == {("pika", pika), ("pika", "1.3.2")}
    assert all(r["bench"] == "findings_clients" and "error" not in r for r in lines)
    assert {r["at_s"] for r in lines} == {5.0, 10.0}
    assert all(r["records"] > 0 and r["signatures"] >= 0 for r in lines)


def test_findings_bench_prints_signatures_over_time() -> None:
    lines = quick_run("findings", timeout=300)
    assert [r["at_s"] for r in lines] == [5.0, 10.0]
    assert all(r["bench"] == "findings" and r["broker"] == "garagemq" for r in lines)
    assert lines[-1]["signatures"] >= lines[0]["signatures"] >= 1  # GarageMQ fails at once
    assert all(r["crashes"] <= r["signatures"] for r in lines)


def test_coverage_bench_prints_lines_over_time_and_its_ratios() -> None:
    lines = quick_run("coverage", timeout=600)
    assert all(r["bench"] == "coverage" and r["protocol"] == "0-9-1" for r in lines)
    workloads = {r["workload"] for r in lines if "workload" in r}
    assert workloads == {"handshake", "naive-pika", "feedback", "blind"}
    handshake = next(r["lines"] for r in lines if r.get("workload") == "handshake")
    for workload in ("naive-pika", "feedback", "blind"):  # more than a bare handshake reaches
        last = [r for r in lines if r.get("workload") == workload][-1]
        assert last["at_s"] == 6.0 and last["lines"] > handshake > 0
    figures = {r["figure"]: r for r in lines if "figure" in r}
    assert set(figures) == {
        "lines_at_6", "growth_6_vs_3", "feedback_vs_blind", "cases_per_s",
        "rate_coverage_on_vs_off", "functions_only_feedback_entered",
    }  # fmt: skip
    assert figures["feedback_vs_blind"]["target"] == 1.15
    assert figures["rate_coverage_on_vs_off"]["value"] > 0


def test_spark_campaign_bench_prints_the_rates_and_their_ratios() -> None:
    lines = quick_run("spark_campaign", timeout=600)
    for figure in ("cases_per_s", "fuzzing_cases_per_s"):
        rates = {r["impl"]: r["value"] for r in lines if r["figure"] == figure}
        assert set(rates) == {"plain", "spark", "connect"} and all(v > 0 for v in rates.values())
    for name in ("spark_vs_plain", "connect_vs_plain"):
        (ratio,) = [r for r in lines if r["figure"] == name]
        assert ratio["target"] == 0.8 and ratio["value"] > 0


def test_every_benchmark_imports_what_it_uses() -> None:
    """The benchmarks not run above (they take minutes on a broker) still import: a change of
    the API they use fails here, not on the next person to measure."""
    code = (
        "import importlib, sys; sys.path.insert(0, sys.argv[1]); "
        "[importlib.import_module(name) for name in sys.argv[2:]]"
    )
    names = sorted(p.stem for p in BENCH.glob("*.py"))
    done = subprocess.run(
        [sys.executable, "-c", code, str(BENCH), *names], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_clients_bench_prints_both_ways_and_their_ratio() -> None:
    lines = quick_run("clients", timeout=120)
    assert all(r["bench"] == "clients" and r["client"] == "pika" for r in lines)
    ways = {r["way"]: r["value"] for r in lines if r["figure"] == "cases_per_s"}
    assert set(ways) == {"long-lived", "fresh-process"} and all(v > 0 for v in ways.values())
    (ratio,) = [r for r in lines if r["figure"] == "long_lived_vs_fresh"]
    assert ratio["value"] > 0 and ratio["target"] == 5.0
