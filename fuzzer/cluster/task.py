"""One shard on an executor: the unchanged engine, its records, coverage records and
reproducers handed back as rows.

The task starts its throwaway broker on its executor's machine (or parses its URL), its code
measured where amqpfuzz can measure it (a throwaway RabbitMQ's or Qpid Proton broker's, unless
the shard says not to), runs the campaign with a record writer in a directory of its own, and
then yields its output as rows of ``(output, name, line)``: ``records`` (a record, its
reproducer's path made the final one under the output path), ``coverage`` (a record of the
broker's code covered, as the plain run's ``coverage-*.jsonl`` files hold them),
``reproducers`` (a reproducer file's name and content as one JSON line) and ``summaries`` (what
the shard came to). Nothing is written to the output path here: Spark writes the rows, so
that the output of a task attempt that died is never committed, and a retried shard's records
are there once.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from amqpfuzz.spec import family_of

from ..brokers import Target, parse_target, throwaway
from ..engine.campaign import Campaign, TargetRun
from ..engine.events import Emitter, RunFinished, TargetSummary
from ..recording import RecordHandler
from ..records import RecordWriter
from .shards import Shard

__all__ = ["Row", "records_rows", "reproducer_rows", "run_shard"]

Row = tuple[str, str, str]  # (output, name, one line of text)


def run_shard(shard: Shard, out: str, tick: Callable[[Any], None] | None = None) -> Iterator[Row]:
    """Run ``shard``; its records (reproducers under ``out``/reproducers), reproducers and
    summary as rows. ``tick`` gets the engine's events as they come (the task's progress)."""
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-shard-") as scratch:
        finished: list[RunFinished] = []
        records, coverage = _campaign(shard, Path(scratch), finished.append, tick)
        # (the throwaway broker is gone by now: the rows are written without it)
        yield from records_rows(records, Path(scratch) / "reproducers", out)
        if coverage is not None:
            yield from _coverage(coverage)
        yield from reproducer_rows(Path(scratch) / "reproducers")
        yield _summary(shard, finished)


def _campaign(
    shard: Shard,
    scratch: Path,
    done: Callable[[RunFinished], None],
    tick: Callable[[Any], None] | None,
) -> tuple[Path, Path | None]:
    """The shard's campaign, its records written under ``scratch``; their file, and the
    coverage records' (None: its broker's code was not measured)."""
    with contextlib.ExitStack() as stack:
        if shard.broker is not None:
            family = family_of(shard.settings.protocol)
            measured = family if shard.coverage else None
            broker = stack.enter_context(throwaway(shard.broker, coverage=measured, family=family))
            target: Target = parse_target(broker.url, label=f"throwaway {broker.kind}")
        else:
            broker = None
            target = parse_target(str(shard.url), allow_remote=shard.allow_remote)
        worker = f"{socket.gethostname()}-{os.getpid()}-s{shard.index}"
        writer = RecordWriter(scratch, shard.run_id, worker)

        def keep(event: Any) -> None:
            if isinstance(event, RunFinished):
                done(event)
            if tick is not None:
                tick(event)

        handler = RecordHandler(writer)
        emit = Emitter(handler, keep)
        probe = broker.probe if broker is not None else None
        run = TargetRun(target, broker=broker, profile_name=shard.profile, coverage=probe)
        # the shard's own throwaway broker may be restarted to confirm a hang on it fresh
        settings = replace(shard.settings, fresh_hangs=broker is not None)
        campaign = Campaign(
            [run], settings, out=scratch, run_id=shard.run_id, prefix=shard.prefix,
            emit=emit,
        )  # fmt: skip
        try:
            campaign.start()
            campaign.run()
        except BaseException:
            campaign.finish()
            raise
        finally:
            records = handler.close()
    return records, handler.coverage.path if handler.coverage is not None else None


def records_rows(path: Path, scratch: Path, out: str) -> Iterator[Row]:
    """A record file's records as rows, a reproducer under ``scratch`` moved to ``out``'s."""
    final = f"{out.rstrip('/')}/reproducers"
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            found = record.get("reproducer")
            if isinstance(found, str) and found.startswith(str(scratch)):
                record["reproducer"] = f"{final}/{Path(found).name}"
            yield "records", str(record["record_id"]), json.dumps(record, separators=(",", ":"))


def _coverage(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                name = f"{record['worker']}-{record['seq']}"
                yield "coverage", name, json.dumps(record, separators=(",", ":"))


def reproducer_rows(directory: Path) -> Iterator[Row]:
    """Each reproducer file in ``directory``, its name and content, as one row."""
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        line = json.dumps({"name": path.name, "content": data}, separators=(",", ":"))
        yield "reproducers", path.name, line


def _summary(shard: Shard, finished: list[RunFinished]) -> Row:
    targets = [t for run in finished for t in run.targets]
    summary: dict[str, Any] = {
        "shard": shard.index,
        "where": shard.where,
        "seed": shard.settings.seed,
        "targets": [_target(t) for t in targets],
    }
    return "summaries", f"shard-{shard.index}", json.dumps(summary)


def _target(t: TargetSummary) -> dict[str, Any]:
    return {
        "label": t.label,
        "cases": t.cases,
        "failures": t.failures,
        "xfails": t.xfails,
        "elapsed": t.elapsed,
        "signatures": dict(t.signatures),
        "reproducers": {s: Path(p).name for s, p in t.reproducers.items()},
        "broker_down": t.broker_down,
        "first_seen": dict(t.first_seen),
        "flaky": t.flaky,
        "flaky_signatures": dict(t.flaky_signatures),
        "confirmations": {s: dict(c) for s, c in t.confirmations.items()},
        "alone": dict(t.alone),
    }
