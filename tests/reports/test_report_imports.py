"""The nightly report reads the record contract and the specification, never the fuzzer's
engine, the strategies or Hypothesis: importing it in a fresh interpreter loads none of them,
and neither does a whole report run as spark-submit runs it (``reports/submit.py`` as a file)
over a night with client scenario records, whose coverage counts the client scenario files
(their ``serve`` steps name server-side operators)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import amqpfuzz.reports
from amqpfuzz.fuzzer.spark import FAST_START
from tests.helpers.report_records import at, case, write

pytestmark = pytest.mark.slow  # a fresh interpreter: a process, and Spark (a JVM)

FORBIDDEN = ("hypothesis", "amqpfuzz.strategies", "amqpfuzz.fuzzer.engine")

NIGHT = "2026-03-03"
PIKA = {
    "label": "pika",
    "url": "amqp://127.0.0.1:40001/",
    "product": "pika",
    "version": "1.3.2",
    "protocol": "0-9-1",
    "language": "python",
}
PROTON = {**PIKA, "label": "qpid-proton", "product": "python-qpid-proton", "protocol": "1.0"}

# Run in the fresh interpreter: a small local session first (so that the script's getOrCreate
# finds it), then reports/submit.py as spark-submit runs it, then what it had loaded.
RUN_SUBMIT = """
import json, runpy, sys
from pyspark.sql import SparkSession
script, inputs, output, java = sys.argv[1:5]
(SparkSession.builder.master("local[2]").appName("amqpfuzz-imports")
 .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "1g")
 .config("spark.driver.extraJavaOptions", java).getOrCreate())
sys.argv = [script, "--in", inputs, "--out", output, "--settle-minutes", "0"]
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as done:
    assert not done.code, done.code
print(json.dumps(sorted(sys.modules)))
"""


def _forbidden(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_importing_the_report_loads_neither_hypothesis_nor_the_engine() -> None:
    code = "import sys, amqpfuzz.reports; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "amqpfuzz.reports.job" in loaded  # (it did import the report)
    assert not _forbidden(loaded)


def test_a_report_over_client_scenarios_loads_neither_hypothesis_nor_the_engine(
    tmp_path: Path,
) -> None:
    records = tmp_path / "in"
    write(records, "r091", "m1", [
        case(run_id="r091", worker="m1", ts=at(NIGHT, 1), spec_ref="queue.declare"),
        case(run_id="r091", worker="m1", ts=at(NIGHT, 2), target=PIKA, kind="scenario",
             spec_ref="connection.start/client-support",
             scenario="0-9-1/connection.start.client-support", seq=1),
    ])  # fmt: skip
    write(records, "r10", "m1", [
        case(run_id="r10", worker="m1", ts=at(NIGHT, 3), target=PROTON, kind="scenario",
             spec_ref="transport:links#27", scenario="1.0/transport-links.27"),
    ])  # fmt: skip
    out = tmp_path / "out"
    script = str(Path(amqpfuzz.reports.__file__).parent / "submit.py")
    done = subprocess.run(
        [sys.executable, "-c", RUN_SUBMIT, script, str(records), str(out), FAST_START],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (out / "report.html").is_file()  # (it did run the report)
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "amqpfuzz.scenarios.amqp091.checker" in loaded  # (it did check the client files)
    assert not _forbidden(loaded)
