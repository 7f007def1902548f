"""``amqpfuzz run --client NAME``: client campaigns, amqpfuzz playing a hostile broker.

Each client named (a bundled shim by ``--client``, anyone's by ``--client-command``) gets the
whole ``--duration``; the end is a table per client and its failure signatures, each with its
replay command, and exit status 1 when something failed (2: bad input).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from rich.table import Table

from ..clients.campaign import (
    ClientSettings,
    Differential,
    client_profile,
    run_clients,
    serving_of,
)
from ..clients.judge import Judged
from ..clients.targets import ClientTarget, client_targets
from ..engine.verdicts import Verdict
from ..records import replay_command
from .console import BadInput, make_console

__all__ = ["serve_clients"]


def serve_clients(
    names: tuple[str, ...], commands: tuple[str, ...], options: dict[str, Any]
) -> int:
    protocol = options["protocol"]
    # one line, before any shim starts: a family that plays no server, an operator it lacks
    serving = serving_of(protocol)
    if options["urls"] or options["kinds"]:
        raise BadInput("--client plays the broker itself: give no --url or --broker")
    master, shards = options.get("master"), options.get("shards", 1)
    if master is None and shards != 1:
        raise BadInput("--shards splits a Spark campaign: give --spark MASTER")
    clients = client_targets(names, commands, protocol)
    operators = (
        tuple(o.strip() for o in options["operators"].split(","))
        if options.get("operators")
        else None
    )
    serving.scripts(protocol, operators, options["valid_share"])
    settings = ClientSettings(
        protocol=protocol,
        duration=options["duration"],
        max_cases=options.get("max_examples"),
        seed=options["seed"] if options.get("seed") is not None else int(time.time()),
        timeout=options["timeout"],
        valid_share=options["valid_share"],
        operators=operators,
        out=Path(options["out"]),
        profile=options.get("profile"),
        shrink=not options["no_shrink"],
        confirm=options.get("confirm", 3),
    )
    for client in clients:  # a profile that cannot be read: one line before anything starts
        client_profile(client.name, settings.profile)
    console = make_console()
    if master is not None:
        from .spark import run_spark_clients  # (pyspark loads only for a run on Spark)

        return run_spark_clients(
            master, uuid.uuid4().hex[:12], settings, clients=names, commands=commands,
            shards=shards, console=console,
        )  # fmt: skip
    console.print(
        f"amqpfuzz: client campaign, seed {settings.seed}, {settings.duration:g} s per client: {', '.join(c.label for c in clients)}"
    )
    seen: set[str] = set()

    def on_case(client: ClientTarget, judged: Judged, verdict: Verdict) -> None:
        if judged.failed and judged.signature not in seen:
            seen.add(judged.signature)
            if verdict.verdict == "xfail":
                console.print(f"  [yellow]known deviation[/] {judged.signature}")
            elif verdict.verdict == "flaky":
                console.print(f"  [magenta]flaky[/] {judged.signature}")
            else:
                console.print(f"  [red]new failure[/] {judged.signature}")

    outcomes = run_clients(clients, settings, on_case)
    for table in summary(outcomes):
        console.print(table)
    flaky = options.get("flaky_fails") and any(o.flaky for o in outcomes)
    return 1 if any(o.failures for o in outcomes) or outcomes.divergences or flaky else 0


def summary(outcomes: Differential) -> list[Table]:
    """A row per client, every failure signature with its replay command, the flaky ones apart
    (with the rate their replays failed at), then where the clients' reactions differed."""
    rows = Table(title="amqpfuzz clients", title_justify="left")
    columns = ("client", "version", "cases", "cases/s", "failures", "signatures", "flaky", "known deviations", "restarts")  # fmt: skip
    for column in columns:
        rows.add_column(column, justify="left" if column in ("client", "version") else "right")
    failures = Table(title="failures", title_justify="left")
    flaky = Table(
        title="flaky: failures that did not happen again every time they were replayed "
        "(not counted as failures)",
        title_justify="left",
    )
    for table in (failures, flaky):
        table.add_column("signature", overflow="fold")
        table.add_column("seen", justify="right")
        if table is flaky:
            table.add_column("reproduced")
            table.add_column("the replays saw", overflow="fold")
        table.add_column("what", overflow="fold")
        table.add_column("replay", overflow="fold")
    for o in outcomes:
        rate = o.cases / o.elapsed if o.elapsed else 0.0
        rows.add_row(
            o.client.label,
            o.client.version or "-",
            str(o.cases),
            f"{rate:.1f}",
            str(sum(o.failures.values())),
            str(len(o.failures)),
            str(sum(o.flaky.values())),
            str(sum(o.known.values())),
            str(o.restarts),
        )
        for signature, count in o.failures.items():
            replay = replay_command(o.reproducers[signature], "--client", o.client.label)
            failures.add_row(signature, str(count), o.messages[signature][:200], replay)
        for signature, count in o.flaky.items():
            confirmation = o.confirmations.get(signature, {})
            saw = "; ".join(dict.fromkeys(str(s) for s in confirmation.get("replays", ())))
            replay = replay_command(o.reproducers[signature], "--client", o.client.label)
            flaky.add_row(
                signature, str(count), str(confirmation.get("rate", "?")), saw,
                o.messages[signature][:200], replay,
            )  # fmt: skip
    tables = [rows]
    if any(o.failures for o in outcomes):
        tables.append(failures)
    if any(o.flaky for o in outcomes):
        tables.append(flaky)
    if outcomes.divergences:
        differ = Table(title="where the clients differ", title_justify="left")
        differ.add_column("operator")
        differ.add_column("reactions", overflow="fold")
        differ.add_column("cases", justify="right")
        for signature, count in outcomes.divergences.most_common():
            _, operator, shown = signature.split(":", 2)
            differ.add_row(operator, shown.replace(",", ", "), str(count))
        tables.append(differ)
    return tables
