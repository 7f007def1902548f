"""Result records: the contract between the fuzzer and the nightly reports.

One JSON object per line, one file per worker process. A writer appends and flushes every
record, so a killed run loses at most the line it was writing; while a file is being written
its name ends in ``.part``, and :meth:`RecordWriter.close` renames it atomically to
``records-<run>-<worker>.jsonl``. The fields below are the core the reports rely on
(``SCHEMA_VERSION`` says which set); more may be added, never renamed or retyped.

Schema 2 made the reactions (``expected``, ``observed``) protocol-neutral: beside the outcome
and 0-9-1's reply code and class/method ids they carry the ``scope`` that closed (connection,
channel, session, link) and the ``condition`` (AMQP 1.0's error symbol). Readers take schema 1
records as schema 2 ones without those two fields (the scope follows from the outcome).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import socket
import uuid
from collections.abc import Iterator, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL, AmqpfuzzError

__all__ = [
    "FIELDS",
    "OUTCOMES",
    "RECORD_KINDS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "TOOL_VERSION",
    "VERDICTS",
    "RecordError",
    "exercisable",
    "read_records",
    "record",
    "worker_name",
    "write_totals",
]

SCHEMA_VERSION = 2
SCHEMA_VERSIONS = (1, 2)  # what readers accept
RECORD_KINDS = ("fuzz", "stateful", "scenario", "differential")
SCOPES = ("connection", "channel", "session", "link")
OUTCOMES = (
    "reply",
    *(f"{scope}-close" for scope in SCOPES),
    "socket-close",
    "timeout",
    "broker-down",
    "bad-frame",
)
VERDICTS = ("pass", "fail", "error", "skip", "xfail", "xpass")
TOOL_VERSION = version("amqpfuzz")

# Every field of the core contract, with the JSON type the reports read it as.
FIELDS: Mapping[str, str] = {
    "schema_version": "int",
    "record_id": "string",
    "run_id": "string",
    "worker": "string",
    "seq": "int",
    "ts": "string (ISO 8601, UTC)",
    "duration_s": "float",
    "tool_version": "string",
    "seed": "string",
    "target": "object {label, url, product, version, protocol}",
    "kind": "string: " + ", ".join(RECORD_KINDS),
    "spec_ref": "string",
    "mutation": "string or null",
    "expected": "object {outcome, scope, reply_code, condition, class_id, method_id}",
    "observed": "object {outcome, scope, reply_code, condition, class_id, method_id}",
    "verdict": "string: " + ", ".join(VERDICTS),
    "failure": "object {oracle, signature, message} or null",
    "reproducer": "string or null",
}


class RecordError(AmqpfuzzError):
    """A record file that cannot be read: says which file and line."""


def record(
    *,
    run_id: str,
    worker: str,
    seq: int,
    seed: str,
    target: Mapping[str, Any],
    kind: str,
    spec_ref: str,
    expected: Mapping[str, Any],
    observed: Mapping[str, Any],
    verdict: str,
    duration_s: float,
    mutation: str | None = None,
    failure: Mapping[str, Any] | None = None,
    reproducer: str | None = None,
    record_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One record of the contract; ``extra`` fields (the case's text, ...) ride along."""
    if kind not in RECORD_KINDS:
        raise ValueError(f"kind {kind!r} is not one of {RECORD_KINDS}")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} is not one of {VERDICTS}")
    return {
        "schema_version": SCHEMA_VERSION,
        "record_id": record_id or uuid.uuid4().hex,
        "run_id": run_id,
        "worker": worker,
        "seq": seq,
        "ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "duration_s": round(duration_s, 6),
        "tool_version": TOOL_VERSION,
        "seed": seed,
        "target": dict(target),
        "kind": kind,
        "spec_ref": spec_ref,
        "mutation": mutation,
        "expected": dict(expected),
        "observed": dict(observed),
        "verdict": verdict,
        "failure": dict(failure) if failure else None,
        "reproducer": reproducer,
        **extra,
    }


def worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def read_records(path: Path | str, *, strict: bool = True) -> Iterator[dict[str, Any]]:
    """The records of one file. A torn last line (a killed writer) is skipped; any other
    line that is not a JSON object is a RecordError naming the file and line (or skipped
    when not ``strict``)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from None
    torn_tail = lines[-1] != ""  # a complete file ends with a newline
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) and torn_tail:
                return  # the line a killed writer was writing
            if strict:
                raise RecordError(f"{path}:{number}: not a JSON record") from None
            continue
        if not isinstance(item, dict) or "schema_version" not in item:
            if strict:
                raise RecordError(f"{path}:{number}: not a result record")
            continue
        yield item


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


@functools.cache
def exercisable(protocol: str) -> dict[str, tuple[str, ...]]:
    """What there is to exercise in ``protocol``, by coverage dimension, named as records name
    it: ``methods`` a client may send (1.0: performatives) and ``rules`` their traffic can
    exercise (1.0: MUST sentences), both from the specification; ``scenario_files``
    (``protocol/name``); ``mutation_operators``."""
    from amqpfuzz.scenarios import PROTOCOLS, load_all
    from amqpfuzz.spec import reach
    from amqpfuzz.strategies import operators

    found = reach(protocol)
    # a protocol without files of its own (0-8, RabbitMQ's 0-9-1) is played 0-9-1's
    scenarios = load_all(protocol if protocol in PROTOCOLS else DEFAULT_PROTOCOL)
    return {
        "methods": found.methods,
        "rules": found.rules,
        "scenario_files": tuple(f"{s.protocol}/{s.name}" for s in scenarios),
        "mutation_operators": tuple(str(o.name) for o in operators(protocol)),
    }
