"""Writing records: one file per worker process.

A :class:`RecordWriter` appends and flushes every record, so a killed run loses at most the
line it was writing; while a file is being written its name ends in ``.part``, and
:meth:`RecordWriter.close` renames it atomically to ``records-<run>-<worker>.jsonl`` (a
coverage file, ``coverage-<run>-<worker>.jsonl``). The
engine never writes a record itself: :class:`amqpfuzz.fuzzer.recording.RecordHandler` turns
each judged event into one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from .contract import RecordError, worker_name

__all__ = ["RecordWriter"]


class RecordWriter:
    """Appends records to this worker's file in ``directory``, one flushed line each."""

    def __init__(
        self,
        directory: Path | str,
        run_id: str,
        worker: str | None = None,
        *,
        stem: str = "records",
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.worker = worker or worker_name()
        self.path = self.directory / f"{stem}-{run_id}-{self.worker}.jsonl"
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
