"""``amqpfuzz report``: a real run through the installed command, and bad input as one line
with exit status 2 (most of it found before Spark starts)."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from amqpfuzz.fuzzer.cli import cli
from amqpfuzz.fuzzer.spark import FAST_START
from amqpfuzz.reports.cli import ReportFailed, execute
from tests.helpers.report_records import at, case, first_night, write

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent))


def _one_line_error(result: object, expected: str) -> None:
    err = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 2, err  # type: ignore[attr-defined]
    assert err.count("\n") == 1 and err.startswith("amqpfuzz: error: "), err
    assert expected in err and "Traceback" not in err


@pytest.mark.slow
def test_report_command_writes_tables_and_says_where_the_page_is(tmp_path: Path) -> None:
    inputs, output = tmp_path / "in", tmp_path / "out"
    first_night(inputs)
    assert AMQPFUZZ
    done = subprocess.run(
        [
            AMQPFUZZ,
            "report",
            "--in",
            str(inputs / "machine1"),
            "--in",
            str(inputs / "machine2"),
            "--in",
            str(inputs / "machine3"),
            "--out",
            str(output),
            "--conf",  # a JVM that starts faster (no optimising compiler) for a few records
            f"spark.driver.extraJavaOptions={FAST_START}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "Spark's own output belongs in its log, not on the console"
    lines = done.stdout.splitlines()
    assert lines[0] == "processed 11 records of 2026-01-10"
    assert lines[1].startswith("night 2026-01-10: 11 cases, 4 failures (2 new, 0 regressed")
    assert lines[-1] == f"html: {output / 'report.html'}"
    assert (output / "report.html").is_file()
    assert sorted(p.name for p in output.iterdir() if p.is_dir()) == [
        "conformance",
        "coverage",
        "deviations",
        "divergences",
        "ingest",
        "runs",
        "scenarios",
        "signatures",
    ]


def test_missing_directory(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["report", "--in", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]
    )
    _one_line_error(result, f"{tmp_path / 'nowhere'}: no such directory")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--master", "local[1]", "--remote", "sc://localhost"], "not both"),
        (["--conf", "novalue"], "--conf takes KEY=VALUE"),
    ],
)
def test_usage_errors(tmp_path: Path, extra: list[str], expected: str) -> None:
    result = CliRunner().invoke(cli, ["report", "--in", str(tmp_path), "--out", "x", *extra])
    assert result.exit_code == 2 and expected in result.stderr


@pytest.mark.slow
def test_spark_connect_that_cannot_be_had_is_one_line(tmp_path: Path) -> None:
    # Nothing listens there: one line, at once (the Connect client would retry for minutes). A
    # process of its own: asking for Spark Connect changes the process's environment.
    assert AMQPFUZZ
    done = subprocess.run(
        [
            AMQPFUZZ,
            "report",
            "--in",
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
            "--remote",
            "sc://127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("amqpfuzz: error: ")
    assert "cannot reach Spark Connect at sc://127.0.0.1:9: Connection refused" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_corrupt_file_is_one_line_and_status_2(spark: SparkSession, tmp_path: Path) -> None:
    write(tmp_path, "r1", "w1", [case(run_id="r1", worker="w1", ts=at("2026-01-01"))])
    (tmp_path / "records-r1-zz.jsonl").write_bytes(b"\x1f\x8b\x08\x00 gzip, not records\n")
    with pytest.raises(ReportFailed) as raised:
        execute(spark, [str(tmp_path)], str(tmp_path / "out"), dt.timedelta(minutes=10))
    assert raised.value.exit_code == 2
    assert "records-r1-zz.jsonl: not a record file" in raised.value.format_message()


@pytest.mark.slow
def test_the_spark_submit_script_runs_as_a_file() -> None:
    # spark-submit runs it by path, which puts reports/ first on sys.path: our html.py must
    # not shadow the standard library's html there.
    script = Path(__file__).resolve().parents[2] / "reports" / "submit.py"
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "--in DIR" in done.stdout and "--html FILE" in done.stdout
