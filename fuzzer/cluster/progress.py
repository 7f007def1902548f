"""A Spark campaign's live progress, without accumulators (Spark Connect has none): each shard's
task keeps what it has done so far in a file of its own beside the output,
``OUT/_progress-<run>/shard-<i>.attempt-<a>.json`` (hidden from Spark's readers, the report's
too), replaced whole at most twice a second,
and the driver reads them all: the newest attempt of each shard counts, so a retried shard's
counts start again from its retry. It works the same over a classic session and over Spark
Connect, wherever the driver sees the output path (a local path, or a mount the executors
share): the driver makes the directory, a task writes only where it finds it, and the driver
removes it when the job ends. Elsewhere (HDFS, object storage, a Connect
server's own disk) the driver counts the shards done as Spark counts its tasks, and knows the
cases and failures when the job ends, from the shards' summaries.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.events import FailureFound, Progress

__all__ = ["ShardTicker", "SparkProgress", "read_progress"]

_FILE = re.compile(r"shard-(\d+)\.attempt-(\d+)\.json")


@dataclass
class SparkProgress:
    """What the driver knows while the job runs: shards done of all, cases, failures, and
    the distinct failure signatures found."""

    shards: int
    done: int = 0
    cases: int = 0
    failures: int = 0
    signatures: int = 0


@dataclass
class ShardTicker:
    """A shard's progress file, kept by its task: ``directory`` None keeps none (an output
    path the task cannot write with Python's own files), nor does a directory the task does
    not find (the driver's, not shared with this executor; or already removed)."""

    directory: str | None
    shard: int
    attempt: int = 0
    every: float = 0.5
    cases: int = 0
    failures: int = 0
    signatures: set[str] = field(default_factory=set)
    _written: float = 0.0

    def start(self) -> None:
        self._write(done=False)

    def event(self, event: Any) -> None:
        """A broker shard's engine event: its totals, a failure found."""
        if isinstance(event, Progress):
            self.cases, self.failures = event.cases, event.failures
        elif isinstance(event, FailureFound) and not event.flaky:
            self.signatures.add(event.signature)
        else:
            return
        self._tick()

    def case(self, failed: bool, signature: str | None) -> None:
        """A client shard's case judged."""
        self.cases += 1
        if failed and signature is not None:
            self.failures += 1
            self.signatures.add(signature)
        self._tick()

    def finish(self) -> None:
        self._write(done=True)

    def _tick(self) -> None:
        if time.monotonic() - self._written >= self.every:
            self._write(done=False)

    def _write(self, done: bool) -> None:
        if self.directory is None or not Path(self.directory).is_dir():
            return
        self._written = time.monotonic()
        path = Path(self.directory) / f"shard-{self.shard}.attempt-{self.attempt}.json"
        state = {"cases": self.cases, "failures": self.failures,
                 "signatures": sorted(self.signatures), "done": done}  # fmt: skip
        scratch = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            scratch.write_text(json.dumps(state), encoding="utf-8")
            os.replace(scratch, path)  # whole, never half written, for the driver's reads
        except OSError as exc:  # the progress is the driver's view, not the shard's work
            print(f"amqpfuzz: shard {self.shard}: no progress file ({exc})", file=sys.stderr)
            self.directory = None  # (the executor's log has the line)


def read_progress(directory: Path, shards: int) -> SparkProgress:
    """The shards' progress as their files say: each shard's newest attempt."""
    newest: dict[int, tuple[int, Path]] = {}
    for path in directory.glob("shard-*.attempt-*.json") if directory.is_dir() else ():
        matched = _FILE.fullmatch(path.name)
        if matched is not None:
            shard, attempt = int(matched[1]), int(matched[2])
            if attempt >= newest.get(shard, (-1, path))[0]:
                newest[shard] = (attempt, path)
    now = SparkProgress(shards)
    found: set[str] = set()
    for _, path in newest.values():
        state = json.loads(path.read_text(encoding="utf-8"))
        now.done += bool(state["done"])
        now.cases += int(state["cases"])
        now.failures += int(state["failures"])
        found.update(state["signatures"])
    now.signatures = len(found)
    return now
