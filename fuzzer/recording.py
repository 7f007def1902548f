"""Records of a run: the event handler that makes a record of each judged event, and the run
file that says what there was to exercise (the coverage report's totals).

The engine emits events and never writes a record; a :class:`RecordHandler` is one of its
handlers (the terminal and the pytest items are others). The record contract itself is
:mod:`amqpfuzz.fuzzer.records`, which the reports read without the engine.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any

from amqpfuzz.scenarios import scenario_names
from amqpfuzz.spec import DEFAULT_PROTOCOL, reach
from amqpfuzz.strategies import operators

from .engine.events import CoverageReached, CoverageSampled, Judged
from .records import RecordWriter, coverage_record, record

__all__ = ["RecordHandler", "exercisable", "write_coverage", "write_totals"]


class RecordHandler:
    """An event handler: every :class:`~amqpfuzz.fuzzer.engine.events.Judged` event becomes
    one record in ``writer``'s file, numbered in the order it came; every point of the broker's
    coverage, one record in a coverage file beside it (made when the first comes)."""

    def __init__(self, writer: RecordWriter) -> None:
        self.writer = writer
        self._lock = threading.Lock()
        self.coverage: RecordWriter | None = None

    def __call__(self, event: Any) -> None:
        if isinstance(event, Judged):
            with self._lock:
                self.writer.write(self.record_of(event))
        elif isinstance(event, CoverageSampled | CoverageReached):
            with self._lock:
                self._coverage(event)

    def _coverage(self, event: CoverageSampled | CoverageReached) -> None:
        if self.coverage is None:
            writer = self.writer
            self.coverage = RecordWriter(
                writer.directory, writer.run_id, writer.worker, stem="coverage"
            )
        final = event if isinstance(event, CoverageReached) else None
        self.coverage.write(
            coverage_record(
                run_id=self.coverage.run_id,
                worker=self.coverage.worker,
                seq=self.coverage.next_seq(),
                seed=event.seed,
                target=event.target.as_record(),
                how=event.how,
                elapsed_s=event.elapsed,
                modules=[
                    {"module": m.module, "set": m.set, "covered": m.covered, "relevant": m.relevant}
                    for m in event.modules
                ],
                lines={m: list(ls) for m, ls in final.lines.items()} if final else None,
                unreached=(
                    {m: [list(f) for f in fs] for m, fs in final.unreached.items()}
                    if final
                    else None
                ),
            )
        )

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
        """Move the finished files into place; the records' path."""
        if self.coverage is not None:
            self.coverage.close()
        return self.writer.close()


def write_totals(directory: Path | str, run_id: str, protocol: str = DEFAULT_PROTOCOL) -> Path:
    """``run-<run_id>.json`` beside the records: what there was to exercise in the run (the
    methods a client may send and the rules they carry, the scenario files, the mutation
    operators), counted (``totals``) and named (``exercisable``), for the coverage report."""
    named = exercisable(protocol)
    totals = {dimension: len(names) for dimension, names in named.items()}
    path = Path(directory) / f"run-{run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # a part file of this writer's own: several (pytest-xdist's workers of one run) may write
    # the same totals at once, and each move is atomic
    part = path.with_name(f"{path.name}.{uuid.uuid4().hex[:12]}.part")
    data = {"run_id": run_id, "protocol": protocol, "totals": totals, "exercisable": named}
    part.write_text(json.dumps(data) + "\n")
    os.replace(part, path)
    return path


def write_coverage(
    directory: Path | str,
    run_id: str,
    joined: dict[str, list[tuple[str, str | None, int, int, int]]],
) -> Path:
    """The run file (``run-<run_id>.json``) with the broker's coverage at the run's end added:
    per target, per module, its set, the lines covered and relevant, the functions never
    entered (as :func:`amqpfuzz.fuzzer.cli.summary.joined` joins the workers')."""
    path = Path(directory) / f"run-{run_id}.json"
    data = json.loads(path.read_text()) if path.exists() else {"run_id": run_id}
    data["coverage"] = {
        label: [
            {"module": m, "set": s, "covered": c, "relevant": r, "functions_never_entered": f}
            for m, s, c, r, f in modules
        ]
        for label, modules in joined.items()
    }
    part = path.with_name(f"{path.name}.{uuid.uuid4().hex[:12]}.part")
    part.write_text(json.dumps(data) + "\n")
    os.replace(part, path)
    return path


@functools.cache
def exercisable(protocol: str) -> dict[str, tuple[str, ...]]:
    """What there is to exercise in ``protocol``, by coverage dimension, named as records name
    it: ``methods`` a client may send (1.0: performatives) and ``rules`` their traffic can
    exercise (1.0: MUST sentences), both from the specification; ``scenario_files``
    (``protocol/name``); ``mutation_operators``."""
    found = reach(protocol)
    return {
        "methods": found.methods,
        "rules": found.rules,
        # a protocol without files of its own (0-8, RabbitMQ's 0-9-1) is played 0-9-1's
        "scenario_files": scenario_names(protocol, DEFAULT_PROTOCOL),
        "mutation_operators": tuple(str(o.name) for o in operators(protocol)),
    }
