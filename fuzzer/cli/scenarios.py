"""``amqpfuzz scenarios``: play the specification's scenario files on brokers, print the table.

With ``--list`` it only lists the files (``--json`` for machines). Otherwise every chosen
scenario runs on every target (``--url`` and ``--broker`` may be repeated and mixed; with
neither, a throwaway RabbitMQ), and the conformance table shows, per rule, each target's
verdict and what the broker did. Exit status 1 if a scenario fails outside its target's
profile, errs, or passes where the profile records a deviation (the profile is out of date).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from amqpfuzz.scenarios import PROTOCOLS, Scenario, load_all, select
from amqpfuzz.spec import DEFAULT_PROTOCOL, family_of

from ..brokers import BROKERS, parse_target, refuses, throwaway
from ..brokers.profiles import find_profile
from ..engine.conformance import ConformanceRun, ScenarioTarget, failing
from ..engine.events import Emitter, ScenarioJudged
from ..recording import RecordHandler, write_totals
from ..records import RecordWriter
from .console import BadInput, make_console, target_options, url_targets

__all__ = ["scenarios_command"]

_STYLE = {
    "pass": "green",
    "fail": "bold red",
    "error": "bold red",
    "xpass": "bold yellow",
    "xfail": "yellow",
    "skip": "dim",
}


@click.command("scenarios")
@click.option("--url", "urls", multiple=True, help="Broker URL (repeat to compare brokers).")
@click.option(
    "--broker",
    "kinds",
    multiple=True,
    type=click.Choice(list(BROKERS)),
    help="A throwaway broker (repeatable; default: rabbitmq when no --url).",
)
@click.option(
    "--profile", help="Expectation profile: a bundled name, a path, or 'none' (default: by broker)."
)
@click.option("--protocol", type=click.Choice(list(PROTOCOLS)), help="Only this protocol's files.")
@click.option("-k", "keyword", help="Select by name: words with and/or/not, as pytest's -k.")
@click.option("--list", "listing", is_flag=True, help="List the scenario files; run nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --list: JSON for machines.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="amqpfuzz-out",
    show_default=True,
    help="Where the records go.",
)
@click.option(
    "--jobs", type=click.IntRange(1, 32), default=4, show_default=True, help="Scenarios at once."
)
@click.option(
    "--timeout", type=float, default=5.0, show_default=True, help="Seconds a reply may take."
)
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="NAME",
    help="Play the client files against this bundled client library instead (repeat), "
    "amqpfuzz being its peer.",
)
@target_options
def scenarios_command(**options: Any) -> None:
    """Run the specification's scenarios on brokers (or, with --client, on client libraries):
    a conformance table."""
    clients = options.pop("clients")
    if clients:
        if options["urls"] or options["kinds"]:
            raise BadInput(
                "--client plays the client files: amqpfuzz is the peer; give no --url or --broker"
            )
        if options["listing"]:
            raise BadInput("--list lists every file (the client files have the capability client)")
        from .client_scenarios import play_clients

        sys.exit(
            play_clients(clients, options["protocol"], options["keyword"], options["out"],
                         options["timeout"], options["profile"])
        )  # fmt: skip
    sys.exit(_scenarios(**options))


def _scenarios(
    urls: tuple[str, ...],
    kinds: tuple[str, ...],
    profile: str | None,
    protocol: str | None,
    keyword: str | None,
    listing: bool,
    as_json: bool,
    out: str,
    jobs: int,
    timeout: float,
    allow_remote: bool,
    ca_file: str | None,
    insecure: bool,
) -> int:
    console = make_console()
    everything = select(keyword, load_all(protocol))
    if listing:
        _list(everything, console, as_json)
        return 0
    chosen = [s for s in everything if not s.for_client]  # (amqpfuzz scenarios --client)
    if as_json:
        raise BadInput("--json goes with --list")
    if not chosen:
        raise BadInput(f"-k {keyword!r} selects no scenario (see amqpfuzz scenarios --list)")
    if profile:
        find_profile(profile)  # a bad name or file is bad input, said now
    for kind in kinds:  # (files that exchange protocol headers only are judged on any)
        why = refuses(kind, protocol or DEFAULT_PROTOCOL)
        if why and not any(s.negotiates_only for s in chosen):
            raise BadInput(why)
    targets = [
        ScenarioTarget(target, profile_name=profile)
        for target in url_targets(urls, allow_remote, ca_file, insecure)
    ]
    run_id = uuid.uuid4().hex[:12]
    with contextlib.ExitStack() as stack:
        for kind in kinds or (() if urls else ("rabbitmq",)):
            family = family_of(protocol) if protocol else None
            broker = stack.enter_context(throwaway(kind, family=family))
            target = parse_target(broker.url, label=f"throwaway {kind}")
            targets.append(ScenarioTarget(target, broker=broker, profile_name=profile))
        with Progress(
            TextColumn("scenarios"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[last]}"),
            console=make_console(stderr=True),
            transient=True,
        ) as progress:
            task = progress.add_task("", total=len(chosen) * len(targets), last="")

            def advance(event: object) -> None:
                if isinstance(event, ScenarioJudged) and event.scenario is not None:
                    progress.update(task, advance=1, last=f"{event.verdict} {event.scenario.name}")

            records = RecordHandler(RecordWriter(Path(out), run_id))
            conformance = ConformanceRun(
                targets,
                chosen,
                run_id=run_id,
                prefix=f"amqpfuzz-{run_id[:8]}-{secrets.token_hex(2)}-",
                timeout=timeout,
                jobs=jobs,
                emit=Emitter(records, advance),
                protocol=protocol or DEFAULT_PROTOCOL,
            )
            try:
                verdicts = conformance.run()
            finally:
                path = records.close()
        write_totals(out, run_id, protocol or DEFAULT_PROTOCOL)
    _report(targets, chosen, verdicts, console)
    console.print(f"records: {path}", highlight=False)
    return 1 if failing(verdicts) else 0


def _list(chosen: list[Scenario], console: Console, as_json: bool) -> None:
    items = [
        {
            "file": f"{s.protocol}/{s.path.name}",
            "protocol": s.protocol,
            "spec_ref": s.spec_ref,
            "on_failure": s.on_failure,
            "capabilities": sorted(s.capabilities),
            "runnable": s.runnable,
            "probe": s.probe,
        }
        for s in chosen
    ]
    if as_json:
        click.echo(json.dumps(items, indent=2))
        return
    table = Table(title=f"{len(items)} scenario files", title_justify="left")
    for column in ("file", "spec reference", "on failure", "capabilities"):
        table.add_column(column, overflow="fold")
    for item in items:
        note = "" if item["runnable"] else " (not runnable)"
        table.add_row(
            str(item["file"]) + note,
            str(item["spec_ref"]),
            str(item["on_failure"] or ""),
            ", ".join(item["capabilities"]),  # type: ignore[arg-type]
        )
    console.print(table)


def _report(
    targets: list[ScenarioTarget],
    chosen: list[Scenario],
    verdicts: list[ScenarioJudged],
    console: Console,
) -> None:
    cells = {(v.scenario.path, v.target.url): v for v in verdicts if v.scenario is not None}
    table = Table(title="conformance", title_justify="left")
    table.add_column("rule", overflow="fold")
    for target in targets:
        profile = f" ({target.profile.name})" if target.profile else ""
        table.add_column(f"{target.label}{profile}", overflow="fold")
    for scenario in chosen:
        ref = scenario.spec_ref
        if scenario.protocol != DEFAULT_PROTOCOL:  # the default needs no name
            ref = f"{scenario.protocol} {ref}"
        row = [ref + (" (probe)" if scenario.probe else "")]
        for target in targets:
            verdict = cells[(scenario.path, target.target.safe_url)]
            row.append(f"[{_STYLE[verdict.verdict]}]{verdict.cell}[/]")
        table.add_row(*row)
    console.print(table)
    for verdict in failing(verdicts):
        assert verdict.scenario is not None
        console.print(
            f"[{_STYLE[verdict.verdict]}]{verdict.verdict.upper()}[/] {verdict.target.label}: "
            f"{verdict.scenario.protocol}/{verdict.scenario.path.name} {verdict.message}",
            highlight=False,
        )
    for target in targets:
        mine = [v for v in verdicts if v.target.url == target.target.safe_url]
        counts = Counter(v.verdict for v in mine)
        summary = ", ".join(f"{counts[k]} {k}" for k in _STYLE if counts[k])
        console.print(f"{target.label} ({target.target.safe_url}): {summary}", highlight=False)
        skipped = Counter(v.reason.split(":")[0] for v in mine if v.verdict == "skip")
        for reason, count in skipped.items():
            console.print(f"  {count} skipped: {reason}", highlight=False)
