"""Result records: appended and flushed per record, moved into place atomically, readable after
a kill (at most the last line lost)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.fuzzer.records import (
    FIELDS,
    SCHEMA_VERSION,
    RecordError,
    RecordWriter,
    read_records,
    record,
)


def _record(seq: int) -> dict[str, object]:
    return record(
        run_id="r1",
        worker="w1",
        seq=seq,
        seed="1",
        target={
            "label": "t",
            "url": "amqp://guest@localhost:5672/%2F",
            "product": "",
            "version": "",
            "protocol": "0-9-1",
        },
        kind="fuzz",
        spec_ref="queue.declare",
        expected={"outcome": "reply", "reply_code": None, "class_id": None, "method_id": None},
        observed={"outcome": "reply", "reply_code": None, "class_id": None, "method_id": None},
        verdict="pass",
        duration_s=0.001,
    )


def test_every_core_field_is_there() -> None:
    item = _record(1)
    assert set(FIELDS) <= set(item)
    assert item["schema_version"] == SCHEMA_VERSION == 3 and len(str(item["record_id"])) == 32


def test_writer_flushes_each_record_and_finishes_atomically(tmp_path: Path) -> None:
    writer = RecordWriter(tmp_path, "r1", "w1")
    writer.write(_record(1))
    assert writer.part.exists() and not writer.path.exists()
    assert len(writer.part.read_text().splitlines()) == 1  # flushed, not buffered
    writer.write(_record(2))
    final = writer.close()
    assert final.exists() and not writer.part.exists()
    assert [r["seq"] for r in read_records(final)] == [1, 2]


def test_a_torn_last_line_is_dropped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "records-r1-w1.jsonl.part"
    path.write_text(json.dumps(_record(1)) + "\n" + json.dumps(_record(2))[:40])
    assert [r["seq"] for r in read_records(path)] == [1]


def test_a_corrupt_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "records-r1-w1.jsonl"
    path.write_text(json.dumps(_record(1)) + "\nnot json\n" + json.dumps(_record(3)) + "\n")
    with pytest.raises(RecordError, match=r"records-r1-w1\.jsonl:2: not a JSON record"):
        list(read_records(path))
    assert [r["seq"] for r in read_records(path, strict=False)] == [1, 3]


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        record(**{**_kwargs(), "kind": "other"})
    with pytest.raises(ValueError, match="verdict"):
        record(**{**_kwargs(), "verdict": "maybe"})


def _kwargs() -> dict[str, object]:
    item = _record(1)
    keep = (
        "run_id",
        "worker",
        "seq",
        "seed",
        "target",
        "kind",
        "spec_ref",
        "expected",
        "observed",
        "verdict",
        "duration_s",
    )
    return {k: item[k] for k in keep}


def test_writers_of_one_run_write_its_totals_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-xdist's workers of one plugin run write the same run's totals: another writer
    coming between this one's write and its move does not make either fail."""
    from amqpfuzz.fuzzer import recording
    from amqpfuzz.fuzzer.recording import write_totals

    moves: list[str] = []
    real = os.replace

    def replace(source: Any, destination: Any) -> None:
        if not moves:  # the other writer, just now
            moves.append("other")
            write_totals(tmp_path, "samerun00001", "0-9-1")
        moves.append(str(source))
        real(source, destination)

    monkeypatch.setattr(recording.os, "replace", replace)
    write_totals(tmp_path, "samerun00001", "0-9-1")
    assert len(moves) == 3 and moves[1] != moves[2]  # two part files, each moved
    (totals,) = tmp_path.glob("run-*.json")
    assert json.loads(totals.read_text())["run_id"] == "samerun00001"
    assert not list(tmp_path.glob("*.part"))
