"""Reading what machines really leave behind: a torn last line, a duplicated file, records
repeated in one file, a malformed line, abandoned and still-growing ``.part`` files (of records
and of the broker's coverage alike); and input no report can be made of."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from amqpfuzz.fuzzer.records import RecordWriter
from amqpfuzz.reports import ReportInputError, run
from tests.helpers import coverage_records as measured
from tests.helpers.report_records import at, case, write
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

NIGHT = "2026-02-01"


def _part(
    directory: Path, worker: str, items: list[dict], tail: str, age_s: float, stem: str = "records"
) -> Path:
    """A file a writer left unfinished: its records, then ``tail`` without a newline."""
    writer = RecordWriter(directory, "r1", worker, stem=stem)
    for item in items:
        writer.write(item)
    assert writer._file is not None
    writer._file.write(tail)
    writer._file.close()
    writer._file = None  # abandoned: never moved into place
    moment = time.time() - age_s
    os.utime(writer.part, (moment, moment))
    return writer.part


@pytest.fixture(scope="module")
def messy(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    inputs, output = tmp_path_factory.mktemp("messy-in"), tmp_path_factory.mktemp("messy-out")
    a = inputs / "a"
    recs = [case(run_id="r1", worker="w1", ts=at(NIGHT, i)) for i in range(3)]
    first = write(a, "r1", "w1", recs)
    (inputs / "b").mkdir()
    shutil.copy(first, inputs / "b" / first.name)  # a retried upload of the same file
    torn = '{"schema_version":1,"record_id":"3f2a","run_id":"r1","wor'
    _part(
        a,
        "w2",
        [case(run_id="r1", worker="w2", ts=at(NIGHT, 10 + i)) for i in range(2)],
        torn,
        age_s=3600,
    )
    _part(a, "w3", [case(run_id="r1", worker="w3", ts=at(NIGHT, 20))], "", age_s=0)
    twice = case(run_id="r1", worker="w4", ts=at(NIGHT, 31), verdict="fail", signature="sig-T")
    w4 = write(a, "r1", "w4", [case(run_id="r1", worker="w4", ts=at(NIGHT, 30)), twice, twice])
    lines = w4.read_text().splitlines(keepends=True)
    w4.write_text(lines[0] + "not json at all\n\n" + "".join(lines[1:]))
    _coverage(inputs)
    run(spark, [str(inputs)], str(output))
    return inputs, output


def _coverage(inputs: Path) -> None:
    """Coverage files as messy: one copied (a retried upload) before a line in it was broken,
    one abandoned with a torn last line."""
    points = [
        measured.point(run_id="r1", worker="w1", seq=i, ts=at(NIGHT, 5 * i), elapsed_s=5.0 * i,
                       covered={"rabbit_reader": i})
        for i in (1, 2)
    ]  # fmt: skip
    first = measured.write(inputs / "a", "r1", "w1", points)
    shutil.copy(first, inputs / "b" / first.name)
    lines = first.read_text().splitlines(keepends=True)
    first.write_text(lines[0] + "\n{garbage\n" + lines[1])
    tail = '{"schema_version":1,"run_id":"r1","worker":"w2","seq":2,"ts":"2026-02'
    abandoned = measured.point(run_id="r1", worker="w2", seq=1, ts=at(NIGHT, 1), elapsed_s=0.0)
    _part(inputs / "a", "w2", [abandoned], tail, age_s=3600, stem="coverage")


def test_each_file_is_accounted_for(spark: SparkSession, messy: tuple[Path, Path]) -> None:
    inputs, output = messy

    def row(
        path: str,
        state: str,
        lines: int,
        records: int,
        dups: int = 0,
        torn: int = 0,
        malformed: int = 0,
    ) -> Row:
        contents = path.split("/")[1].split("-")[0]
        return Row(
            file=f"file:{inputs}/{path}",
            state=state,
            read=state != "writing",
            lines=lines,
            records=records,
            duplicates=dups,
            torn_lines=torn,
            malformed_lines=malformed,
            contents=contents,
            run_date=dt.date(2026, 2, 1),
        )

    expected = [
        row("a/coverage-r1-w1.jsonl", "complete", 4, 2, malformed=1),  # and a blank line
        row("a/coverage-r1-w2.jsonl.part", "abandoned", 2, 1, torn=1),
        row("b/coverage-r1-w1.jsonl", "complete", 2, 0, dups=2),
        row("a/records-r1-w1.jsonl", "complete", 3, 3),
        row("a/records-r1-w2.jsonl.part", "abandoned", 3, 2, torn=1),
        row("a/records-r1-w3.jsonl.part", "writing", 0, 0),
        row("a/records-r1-w4.jsonl", "complete", 5, 2, dups=1, malformed=1),
        row("b/records-r1-w1.jsonl", "complete", 3, 0, dups=3),
    ]
    actual = table(spark, output, "ingest").select(*expected[0].__fields__)
    assertDataFrameEqual(actual, expected)


def test_every_record_counts_once(spark: SparkSession, messy: tuple[Path, Path]) -> None:
    _, output = messy
    runs = table(spark, output, "runs").collect()
    assert [(r.run_id, r.cases, r.failures, r.workers) for r in runs] == [("r1", 7, 1, 3)]
    (sig,) = table(spark, output, "signatures").collect()
    assert (sig.signature, sig.occurrences) == ("sig-T", 1)


def test_torn_and_malformed_lines_are_kept_apart(
    spark: SparkSession, messy: tuple[Path, Path]
) -> None:
    inputs, output = messy
    expected = [
        Row(
            file=f"file:{inputs}/a/records-r1-w2.jsonl.part",
            reason="torn",
            text='{"schema_version":1,"record_id":"3f2a","run_id":"r1","wor',
        ),
        Row(
            file=f"file:{inputs}/a/records-r1-w4.jsonl", reason="malformed", text="not json at all"
        ),
    ]
    records = table(spark, output, "rejects").filter("file LIKE '%/records-%'")
    assertDataFrameEqual(records.drop("run_date"), expected)


def test_coverage_records_count_once_and_their_bad_lines_are_kept(
    spark: SparkSession, messy: tuple[Path, Path]
) -> None:
    """A coverage file's torn and malformed lines are rejects like a record file's; a copied
    coverage record is one point of the curve, not two."""
    inputs, output = messy
    rejected = table(spark, output, "rejects").filter("file LIKE '%/coverage-%'")
    expected = [
        Row(file=f"file:{inputs}/a/coverage-r1-w1.jsonl", reason="malformed", text="{garbage"),
        Row(
            file=f"file:{inputs}/a/coverage-r1-w2.jsonl.part",
            reason="torn",
            text='{"schema_version":1,"run_id":"r1","worker":"w2","seq":2,"ts":"2026-02',
        ),
    ]
    assertDataFrameEqual(rejected.drop("run_date"), expected)
    points = table(spark, output, "broker_coverage_points").filter("set = '0-9-1'")
    assert sorted((p.worker, p.seq, p.covered) for p in points.collect()) == [
        ("w1", 1, 1), ("w1", 2, 2), ("w2", 1, 0),
    ]  # fmt: skip
    (reader,) = table(spark, output, "broker_coverage").filter("module = 'rabbit_reader'").collect()
    # no final record: the most a point counted, and the functions never reached not known
    assert (reader.covered, reader.lines, reader.unreached, reader.finals) == (2, None, None, 0)


def test_a_file_of_something_else_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    write(tmp_path, "r1", "w1", [case(run_id="r1", worker="w1", ts=at(NIGHT))])
    stranger = tmp_path / "records-r9-w9.jsonl"
    stranger.write_text("hello\nworld\n")
    with pytest.raises(ReportInputError, match=r"records-r9-w9\.jsonl: not a record file"):
        run(spark, [str(tmp_path)], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("empty", r"no record files \(records-\*\.jsonl\) in "),
        ("growing", "no finished record files in .*: 1 still being written"),
        ("torn only", "no records in "),
        ("missing", "Path does not exist"),
    ],
)
def test_no_report_without_records(
    spark: SparkSession, tmp_path: Path, setup: str, message: str
) -> None:
    inputs = tmp_path / "in"
    if setup != "missing":
        inputs.mkdir()
    if setup in ("growing", "torn only"):
        _part(inputs, "w1", [], '{"schema_version":1,"rec', age_s=0 if setup == "growing" else 3600)
    with pytest.raises(ReportInputError, match=message):
        run(spark, [str(inputs)], str(tmp_path / "out"))


def test_schema_1_and_schema_2_records_are_read_alike(spark: SparkSession, tmp_path: Path) -> None:
    """Records from before the reactions were protocol-neutral (schema 1: no scope, no
    condition) count as the newer ones do."""
    newer = case(run_id="r1", worker="w1", ts=at(NIGHT, 1), verdict="fail", signature="sig-S")
    newer["observed"] = {
        "outcome": "channel-close",
        "scope": "channel",
        "reply_code": 404,
        "condition": None,
        "class_id": 50,
        "method_id": 10,
    }
    older = case(run_id="r1", worker="w1", ts=at(NIGHT, 2), verdict="fail", signature="sig-S")
    older["schema_version"] = 1
    older["observed"] = {"outcome": "channel-close", "reply_code": 404, "class_id": 50,
                         "method_id": 10}  # fmt: skip
    write(tmp_path, "r1", "w1", [newer, older])
    output = tmp_path / "out"
    run(spark, [str(tmp_path)], str(output))
    runs = table(spark, output, "runs").collect()
    assert [(r.run_id, r.cases, r.failures) for r in runs] == [("r1", 2, 2)]
    (sig,) = table(spark, output, "signatures").collect()
    assert (sig.signature, sig.occurrences) == ("sig-S", 2)
