"""Result records: the contract between the fuzzer and the nightly reports.

One JSON object per line, one file per worker process. A writer appends and flushes every
record, so a killed run loses at most the line it was writing; while a file is being written
its name ends in ``.part``, and :meth:`RecordWriter.close` renames it atomically to
``records-<run>-<worker>.jsonl``. The fields below are the core the reports rely on
(``SCHEMA_VERSION`` says which set); more may be added, never renamed or retyped.

The broker's own code coverage goes to ``coverage-<run>-<worker>.jsonl`` files beside them, one
record per point of a run's coverage over time (:func:`coverage_record`, :data:`COVERAGE_FIELDS`):
a record per target every few seconds, and a last one (``final``) with the lines themselves and
the functions never entered.

Schema 2 made the reactions (``expected``, ``observed``) protocol-neutral: beside the outcome
and 0-9-1's reply code and class/method ids they carry the ``scope`` that closed (connection,
channel, session, link) and the ``condition`` (AMQP 1.0's error symbol). Readers take schema 1
records as schema 2 ones without those two fields (the scope follows from the outcome).

Schema 3 added the verdict ``flaky`` (a failure that did not happen again every time it was
replayed from its reproducer) and the ``confirmation`` of a failure or a flaky one: how its
replays went (``runs``, ``reproduced``, ``rate``, what the run ``found`` and what each replay
saw, ``replays``). Readers take schema 1 and 2 records as they are: no flaky verdict, no
confirmation.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import uuid
from collections.abc import Iterator, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from amqpfuzz.spec import AmqpfuzzError, OutcomeKind

from ..protocols.outcome import Outcome, in_words

__all__ = [
    "COVERAGE_FIELDS",
    "COVERAGE_SCHEMA",
    "FIELDS",
    "OUTCOMES",
    "RECORD_KINDS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "TOOL_VERSION",
    "VERDICTS",
    "RecordError",
    "coverage_record",
    "describe",
    "reaction_of",
    "read_records",
    "record",
    "worker_name",
]

SCHEMA_VERSION = 3
SCHEMA_VERSIONS = (1, 2, 3)  # what readers accept
RECORD_KINDS = ("fuzz", "stateful", "scenario", "differential", "client")
OUTCOMES = tuple(kind.value for kind in OutcomeKind)
VERDICTS = ("pass", "fail", "error", "skip", "xfail", "xpass", "flaky")
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
    "confirmation": "object {runs, reproduced, rate, found, replays} or null (schema 3)",
}


COVERAGE_SCHEMA = 1
# A coverage record's fields (the module rows: {module, set, covered, relevant}; ``set`` is the
# named set a module counts in, or null for one measured for steering only).
COVERAGE_FIELDS: Mapping[str, str] = {
    "schema_version": "int",
    "run_id": "string",
    "worker": "string",
    "seq": "int",
    "ts": "string (ISO 8601, UTC)",
    "tool_version": "string",
    "seed": "string",
    "target": "object {label, url, product, version, protocol}",
    "how": "string: erlang-cover, coverage.py or jacoco",
    "elapsed_s": "float: seconds into the campaign",
    "final": "bool: the campaign's last point",
    "modules": "array of {module, set, covered, relevant}",
    "lines": "object module -> covered line numbers (final records only)",
    "unreached": "object module -> [[function, relevant lines], ...] (final records only)",
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
    confirmation: Mapping[str, Any] | None = None,
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
        "confirmation": dict(confirmation) if confirmation else None,
        **extra,
    }


def coverage_record(
    *,
    run_id: str,
    worker: str,
    seq: int,
    seed: str,
    target: Mapping[str, Any],
    how: str,
    elapsed_s: float,
    modules: list[Mapping[str, Any]],
    lines: Mapping[str, list[int]] | None = None,
    unreached: Mapping[str, list[list[Any]]] | None = None,
) -> dict[str, Any]:
    """One coverage record (a final one when it has ``lines``)."""
    found = {
        "schema_version": COVERAGE_SCHEMA,
        "run_id": run_id,
        "worker": worker,
        "seq": seq,
        "ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "tool_version": TOOL_VERSION,
        "seed": seed,
        "target": dict(target),
        "how": how,
        "elapsed_s": round(elapsed_s, 3),
        "final": lines is not None,
        "modules": [dict(m) for m in modules],
    }
    if lines is not None:
        found["lines"] = {m: list(ls) for m, ls in lines.items()}
        found["unreached"] = {m: [list(f) for f in fs] for m, fs in (unreached or {}).items()}
    return found


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


def reaction_of(outcome: Outcome) -> dict[str, Any]:
    """An expected or observed reaction in the record contract's shape (schema 2): the outcome,
    the scope it closed, the protocol's code (a reply code, or an error condition), the method
    at fault where the protocol says (0-9-1's class and method ids), and the reply's name
    where there is one. The one place the contract's words are made."""
    scope = outcome.kind.scope
    found: dict[str, Any] = {
        "outcome": outcome.kind.value,
        "scope": scope.value if scope is not None else None,
        "reply_code": outcome.reply_code,
        "condition": outcome.condition,
        "class_id": outcome.method[0] if outcome.method else None,
        "method_id": outcome.method[1] if outcome.method else None,
    }
    if outcome.reply is not None:
        found["reply"] = outcome.reply
    return found


def describe(reaction: Mapping[str, Any]) -> str:
    """``channel-close 404``, ``reply queue.declare-ok``, ``link-close amqp:invalid-field``: a
    reaction (as :func:`reaction_of` makes it) in a few words."""
    code = reaction.get("reply_code")
    if code is None:
        code = reaction.get("condition")
    reply = reaction.get("reply")
    return in_words(str(reaction["outcome"]), str(reply) if reply else None, code)
