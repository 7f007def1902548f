"""Client campaigns on Spark: a shard per client library and seed, each task amqpfuzz playing a
hostile broker to that client's shim on its executor, its rows as a broker shard's are.

A shard names its client (a bundled shim, resolved and built on the executor, or anyone's
shim command) rather than carrying a command line: the executor's paths are its own. Its
summary row has the broker shards' ``targets`` (what the driver's progress counts) and the
client's ``outcome`` (what the client summary table shows).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..clients.campaign import ClientSettings, Outcome, run_clients
from ..clients.judge import Judged
from ..clients.targets import ClientTarget, client_targets
from ..engine.verdicts import Verdict
from .task import Row, records_rows, reproducer_rows

__all__ = ["ClientShard", "outcome_of", "plan_clients", "run_client_shard"]


@dataclass(frozen=True)
class ClientShard:
    """One task's client campaign: the bundled client ``client`` (or, with ``command``,
    anyone's shim, ``client`` its name), with ``settings`` (its seed among them)."""

    index: int
    run_id: str
    settings: ClientSettings
    client: str
    command: str | None = None

    @property
    def where(self) -> str:
        return f"client {self.client}"

    def target(self) -> ClientTarget:
        protocol = self.settings.protocol
        if self.command is not None:
            return client_targets((), (self.command,), protocol)[0]
        return client_targets((self.client,), (), protocol)[0]


def plan_clients(
    run_id: str,
    settings: ClientSettings,
    clients: tuple[str, ...],
    commands: tuple[str, ...] = (),
    shards: int = 1,
) -> list[ClientShard]:
    """Every client, ``shards`` times each, seeds counting up from the run's."""
    named: list[tuple[str, str | None]] = [(name, None) for name in clients]
    named += [(ClientTarget.of_command(c).name, c) for c in commands]
    found: list[ClientShard] = []
    for name, command in named:
        for _ in range(shards):
            index = len(found)
            seeded = replace(settings, seed=settings.seed + index)
            found.append(ClientShard(index, run_id, seeded, name, command))
    return found


def run_client_shard(
    shard: ClientShard, out: str, tick: Callable[[bool, str | None], None] | None = None
) -> list[Row]:
    """Run ``shard``'s campaign; its records (reproducers under ``out``/reproducers),
    reproducers and summary as rows. ``tick`` gets each case as it is judged (failed, its
    signature): the task's progress."""
    client = shard.target()
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-shard-") as scratch:
        settings = replace(shard.settings, out=Path(scratch))
        worker = f"{socket.gethostname()}-{os.getpid()}-s{shard.index}"

        def on_case(_: ClientTarget, judged: Judged, verdict: Verdict) -> None:
            if tick is not None:
                tick(verdict.verdict == "fail", judged.signature)

        (outcome,) = run_clients([client], settings, on_case, run_id=shard.run_id, worker=worker)
        rows = [
            row
            for path in sorted(Path(scratch).glob("records-*.jsonl"))
            for row in records_rows(path, Path(scratch) / "reproducers", out)
        ]
        rows += reproducer_rows(Path(scratch) / "reproducers")
    return [*rows, _summary(shard, outcome)]


def _summary(shard: ClientShard, outcome: Outcome) -> Row:
    reproducers = {s: p.name for s, p in outcome.reproducers.items()}
    summary: dict[str, Any] = {
        "shard": shard.index,
        "where": shard.where,
        "seed": shard.settings.seed,
        "targets": [
            {
                "label": outcome.client.label,
                "cases": outcome.cases,
                "failures": sum(outcome.failures.values()),
                "signatures": dict(outcome.failures),
            }
        ],
        "outcome": {
            "client": outcome.client.label,
            "version": outcome.client.version,
            "cases": outcome.cases,
            "restarts": outcome.restarts,
            "failures": dict(outcome.failures),
            "known": dict(outcome.known),
            "messages": outcome.messages,
            "reproducers": reproducers,
            "elapsed": outcome.elapsed,
            "flaky": dict(outcome.flaky),
            "confirmations": outcome.confirmations,
        },
    }
    return "summaries", f"shard-{shard.index}", json.dumps(summary)


def outcome_of(summary: dict[str, Any], reproducers: Path | str) -> Outcome:
    """A client shard's outcome again, from its summary row (its reproducers where the
    driver put them)."""
    found = summary["outcome"]
    name, _, at = str(found["client"]).partition("@")
    client = ClientTarget(name, (), version=found["version"], at=at or None)
    return Outcome(
        client,
        cases=found["cases"],
        restarts=found["restarts"],
        failures=Counter(found["failures"]),
        known=Counter(found["known"]),
        messages=dict(found["messages"]),
        reproducers={s: Path(reproducers) / n for s, n in found["reproducers"].items()},
        elapsed=found["elapsed"],
        flaky=Counter(found.get("flaky", {})),
        confirmations=dict(found.get("confirmations", {})),
    )
