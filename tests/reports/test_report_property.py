"""The tables do not depend on how records are split across files, in what order they lie, or
whether a file was copied twice: checked against a plain-Python aggregation of the same records.

Spark is slow to start a job, so Hypothesis tries only a few examples."""

from __future__ import annotations

import datetime as dt
import random
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from amqpfuzz.fuzzer.records import VERDICTS
from amqpfuzz.reports import run
from amqpfuzz.reports.coverage import installed
from tests.helpers.report_records import GARAGE, RABBIT, at, case, write
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

NIGHT = "2026-04-01"
NAMED = installed("0-9-1")  # what the report knows without a run file
BIG = 2**62

items = st.fixed_dictionaries(
    {
        "run": st.sampled_from(["p1", "p2"]),
        "worker": st.sampled_from(["w1", "w2", "w3"]),
        "target": st.sampled_from([RABBIT, GARAGE]),
        "spec_ref": st.sampled_from(
            ["queue.declare", "queue.declare/queue/reserved", "basic.publish", "tx.select/01"]
        ),
        "verdict": st.sampled_from(VERDICTS),
        "signature": st.sampled_from(["s1", "s2", "s3"]),
        # two operators, and a name that is none (counted for nothing)
        "mutation": st.sampled_from([None, "frame-end", "size-larger", "no-such-operator"]),
        "offset": st.integers(0, 3000),
        "duration": st.sampled_from([0.0, 0.25, 1.5]),
        "size": st.sampled_from([None, 10, 200]),
    }
)


def _record(i: int, item: dict[str, Any]) -> dict[str, Any]:
    failing = item["verdict"] == "fail"
    return case(
        run_id=item["run"],
        worker=item["worker"],
        ts=at(NIGHT, item["offset"]),
        target=item["target"],
        spec_ref=item["spec_ref"],
        verdict=item["verdict"],
        mutation=item["mutation"],
        duration_s=item["duration"],
        signature=item["signature"] if failing else None,
        reproducer=f"repro/{item['signature']}-{i % 3}.case" if failing else None,
        reproducer_size=item["size"],
    )


def _micros(ts: str) -> int:
    moment = dt.datetime.fromisoformat(ts) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return moment // dt.timedelta(microseconds=1)


def reference(records: list[dict[str, Any]]) -> dict[str, Any]:
    """What the tables must say, by plain iteration over the distinct records."""
    runs: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"cases": 0, "failures": 0, "errors": 0, "workers": set(), "start": BIG, "end": 0}
    )
    cells: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: dict.fromkeys(VERDICTS, 0))
    sigs: dict[str, dict[str, Any]] = {}
    for r in records:
        end = _micros(r["ts"])
        start = end - round(r["duration_s"] * 1e6)
        one = runs[(r["run_id"], r["target"]["label"])]
        one["cases"] += 1
        one["failures"] += r["verdict"] == "fail"
        one["errors"] += r["verdict"] == "error"
        one["workers"].add(r["worker"])
        one["start"], one["end"] = min(one["start"], start), max(one["end"], end)
        cells[(r["target"]["label"], r["spec_ref"])][r["verdict"]] += 1
        if r["verdict"] == "fail":
            order = (False, r["reproducer_size"] or BIG, BIG, r["reproducer"], r["record_id"])
            sig = sigs.setdefault(
                r["failure"]["signature"], {"n": 0, "targets": set(), "best": order}
            )
            sig["n"] += 1
            sig["targets"].add(r["target"]["label"])
            sig["best"] = min(sig["best"], order)
    return {
        "runs": {
            key: (
                v["cases"],
                v["failures"],
                v["errors"],
                len(v["workers"]),
                (v["end"] - v["start"]) / 1e6,
            )
            for key, v in runs.items()
        },
        "conformance": {key: tuple(v[x] for x in VERDICTS) for key, v in cells.items()},
        "signatures": {s: (v["n"], sorted(v["targets"]), v["best"][3]) for s, v in sigs.items()},
        # what there was to exercise: the specification's and the scenario files (no run file;
        # no operators: only a run file names them)
        "methods": len({r["spec_ref"].split("/")[0] for r in records} & set(NAMED["methods"])),
        "rules": len({r["spec_ref"] for r in records} & set(NAMED["rules"])),
        "mutations": len({r["mutation"] for r in records} & set(NAMED["mutation_operators"])),
    }


def actual(spark: SparkSession, output: Path) -> dict[str, Any]:
    got: dict[str, Any] = {}
    got["runs"] = {
        (r.run_id, r.target_label): (r.cases, r.failures, r.errors, r.workers, r.duration_s)
        for r in table(spark, output, "runs").collect()
    }
    got["conformance"] = {
        (r.target_label, r.spec_ref): tuple(r[x] for x in VERDICTS)
        for r in table(spark, output, "conformance").collect()
    }
    sigs = table(spark, output, "signatures").collect() if (output / "signatures").exists() else []
    got["signatures"] = {r.signature: (r.occurrences, r.targets, r.reproducer) for r in sigs}
    coverage = {r.dimension: r.exercised for r in table(spark, output, "coverage").collect()}
    got["methods"], got["rules"] = coverage["methods"], coverage["rules"]
    got["mutations"] = coverage["mutation_operators"]
    return got


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    drawn=st.lists(items, min_size=1, max_size=25),
    files=st.integers(1, 4),
    copied=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_tables_do_not_depend_on_files_or_order(
    spark: SparkSession, drawn: list[dict[str, Any]], files: int, copied: bool, seed: int
) -> None:
    records = [_record(i, item) for i, item in enumerate(drawn)]
    shuffled = random.Random(seed).sample(records, len(records))
    with tempfile.TemporaryDirectory() as tmp:
        inputs, output = Path(tmp) / "in", Path(tmp) / "out"
        parts = [shuffled[i::files] for i in range(files)]
        paths = [write(inputs, "split", f"f{i}", part) for i, part in enumerate(parts) if part]
        if copied:  # the same file uploaded twice
            (inputs / "again").mkdir()
            (inputs / "again" / paths[0].name).write_bytes(paths[0].read_bytes())
        run(spark, [str(inputs)], str(output))
        got = actual(spark, output)
    want = reference(records)
    for key in ("conformance", "signatures", "methods", "rules", "mutations"):
        assert got[key] == want[key], key
    assert got["runs"].keys() == want["runs"].keys()
    for key, values in want["runs"].items():
        assert got["runs"][key][:4] == values[:4], key
        assert abs(got["runs"][key][4] - values[4]) < 1e-6, key
