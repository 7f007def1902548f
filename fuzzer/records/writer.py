"""Writing records: one file per worker process, and the handler that makes records of events.

A :class:`RecordWriter` appends and flushes every record, so a killed run loses at most the
line it was writing; while a file is being written its name ends in ``.part``, and
:meth:`RecordWriter.close` renames it atomically to ``records-<run>-<worker>.jsonl``. The
engine never writes a record itself: a :class:`RecordHandler` turns each judged event into one.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from ..engine.events import Judged
from .contract import RecordError, record, worker_name

__all__ = ["RecordHandler", "RecordWriter"]


class RecordWriter:
    """Appends records to this worker's file in ``directory``, one flushed line each."""

    def __init__(self, directory: Path | str, run_id: str, worker: str | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.worker = worker or worker_name()
        self.path = self.directory / f"records-{run_id}-{self.worker}.jsonl"
        self.part = self.path.with_name(self.path.name + ".part")
        self._file: IO[str] | None = self.part.open("a", encoding="utf-8")
        self.seq = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def write(self, item: Mapping[str, Any]) -> None:
        if self._file is None:
            raise RecordError(f"{self.path}: the writer is closed")
        self._file.write(json.dumps(item, separators=(",", ":"), default=str) + "\n")
        self._file.flush()

    def close(self) -> Path:
        """Move the finished file into place (atomically); returns its final path."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            os.replace(self.part, self.path)
        return self.path

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordHandler:
    """An event handler: every :class:`~amqpfuzz.fuzzer.engine.events.Judged` event becomes
    one record in ``writer``'s file, numbered in the order it came."""

    def __init__(self, writer: RecordWriter) -> None:
        self.writer = writer
        self._lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        if isinstance(event, Judged):
            with self._lock:
                self.writer.write(self.record_of(event))

    def record_of(self, event: Judged) -> dict[str, Any]:
        return record(
            run_id=self.writer.run_id,
            worker=self.writer.worker,
            seq=self.writer.next_seq(),
            seed=event.seed,
            target=event.target.as_record(),
            kind=event.kind,
            spec_ref=event.spec_ref,
            mutation=event.mutation,
            expected=event.expected,
            observed=event.observed,
            verdict=event.verdict,
            duration_s=event.duration_s,
            failure=event.failure,
            reproducer=event.reproducer,
            record_id=event.record_id,
            **event.record_fields(),
        )

    def close(self) -> Path:
        return self.writer.close()
