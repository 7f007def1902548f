"""``amqpfuzz run``, ``amqpfuzz replay`` and ``amqpfuzz broker``: fuzz, replay, throwaway brokers.

``run`` checks every target first (reachable, the login accepted) so that bad input is one
line and exit status 2 before anything starts; then each worker process runs a
:class:`~.campaign.Campaign` with its own seed, entity prefix and record file, and reports its
progress to this process, which shows it and prints the summary. Ctrl-C stops every worker
cleanly: the records written so far stay, their files moved into place.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import secrets
import sys
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from amqpfuzz.spec import protocols_of

from .brokers import KINDS, Broker, detach, detached, stop_detached, throwaway
from .campaign import Campaign, CampaignSettings, TargetRun
from .console import BadInput, Progress, summary_table, target_options, url_targets
from .control import RemoteBroker, Restarts
from .profiles import find_profile
from .records import write_totals
from .reproducers import load_reproducer, replay
from .targets import Target, parse_target
from .transport import Connection

__all__ = ["broker_group", "replay_command", "run_command"]


@dataclass
class WorkerJob:
    """What one worker process needs (picklable: targets carry their passwords in memory)."""

    index: int
    targets: list[Target]
    config: CampaignSettings
    out: str
    run_id: str
    prefix: str
    profile: str | None
    kind: str
    broker: RemoteBroker | None = None  # the parent's throwaway broker, restartable on request
    extra: dict[str, Any] = field(default_factory=dict)


def _worker(job: WorkerJob, events: Any) -> None:
    """One worker: its campaign, its events sent to the parent."""

    def listen(event: str, data: dict[str, Any]) -> None:
        events.put((job.index, event, data))

    runs = [TargetRun(t, broker=job.broker, profile_name=job.profile) for t in job.targets]
    campaign = Campaign(
        runs,
        job.config,
        out=Path(job.out),
        run_id=job.run_id,
        prefix=job.prefix,
        worker=f"{os.uname().nodename}-{os.getpid()}-w{job.index}",
        listener=listen,
    )
    stateful: dict[str, Any] = {"programs": 0, "failures": 0, "signatures": {}, "reproducers": {}}
    try:
        campaign.start()
        if job.kind == "all":  # the budget is shared: half for each kind of campaign
            job.config.duration = (job.config.duration or 60.0) / 2
            campaign.config.duration = job.config.duration
            campaign.restart_clock()
        if job.kind in ("fuzz", "all"):
            stats = campaign.run()
        else:
            campaign.finish()
            stats = campaign.stats
        if job.kind in ("stateful", "all"):
            from .stateful import run_stateful

            stateful = run_stateful(job, listen)
    except KeyboardInterrupt:
        campaign.finish()
        stats = campaign.stats
    except Exception as exc:  # reported to the parent, which prints one line
        campaign.finish()
        listen("error", {"message": f"{type(exc).__name__}: {exc}"})
        return
    listen(
        "done",
        {
            "targets": [run.label for run in runs],
            "cases": stats.cases,
            "programs": stateful["programs"],
            "failures": stats.failures + stateful["failures"],
            "xfails": stats.xfails,
            "divergences": stats.divergences,
            "elapsed": stats.elapsed,
            "signatures": {**stats.signatures, **stateful["signatures"]},
            "broker_down": stats.broker_down,
            "reproducers": {
                **{s: str(p) for s, (_, p, _) in campaign.first_failures.items()},
                **stateful["reproducers"],
            },
        },
    )


def _preflight(targets: list[Target], protocol: str, timeout: float) -> None:
    """Raise ConnectionFailed (one line, exit 2) for a target that cannot be fuzzed."""
    for target in targets:
        Connection.open(target, protocol=protocol, timeout=timeout).close()


@click.command("run")
@click.option("--url", "urls", multiple=True, help="Broker URL (repeat for differential runs).")
@click.option("--broker", "kind", type=click.Choice(list(KINDS)), help="Fuzz a throwaway broker.")
@click.option("--duration", type=float, default=60.0, show_default=True, help="Seconds of fuzzing.")
@click.option("--max-examples", type=int, help="Stop after this many cases.")
@click.option(
    "--seed", type=int, help="Hypothesis seed (printed; the same seed draws the same cases)."
)
@click.option(
    "--kind",
    "campaign_kind",
    type=click.Choice(["fuzz", "stateful", "all"]),
    default="fuzz",
    show_default=True,
)
@click.option(
    "--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Worker processes."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="amqpfuzz-out",
    show_default=True,
    help="Records and reproducers.",
)
@click.option("--protocol", type=click.Choice(list(protocols_of("amqp091"))), default="0-9-1", show_default=True)
@click.option(
    "--profile", help="Expectation profile: a bundled name, a path, or 'none' (default: by broker)."
)
@click.option("--operators", help="Comma-separated mutation operators (default: all).")
@click.option(
    "--valid-share",
    type=click.FloatRange(0, 1),
    default=0.25,
    show_default=True,
    help="Share of valid cases.",
)
@click.option(
    "--timeout",
    type=float,
    default=5.0,
    show_default=True,
    help="Seconds before a silent broker is hanging.",
)
@target_options
@click.option("--no-shrink", is_flag=True, help="Keep failures as found.")
def run_command(**options: Any) -> None:
    """Fuzz brokers: valid and malformed cases, judged by the specification."""
    code = _run(**options)
    sys.exit(code)


def _run(
    urls: tuple[str, ...],
    kind: str | None,
    duration: float,
    max_examples: int | None,
    seed: int | None,
    campaign_kind: str,
    workers: int,
    out: str,
    protocol: str,
    profile: str | None,
    operators: str | None,
    valid_share: float,
    timeout: float,
    allow_remote: bool,
    ca_file: str | None,
    insecure: bool,
    no_shrink: bool,
) -> int:
    console = Console(stderr=False)
    if urls and kind:
        raise BadInput("give --url or --broker, not both")
    if profile:
        find_profile(profile)  # a bad name or file is bad input, said now
    seed = seed if seed is not None else secrets.randbelow(2**32)
    run_id = uuid.uuid4().hex[:12]
    chosen = tuple(o.strip() for o in operators.split(",")) if operators else None
    if chosen:
        from amqpfuzz.strategies import mutations

        known = {op.name for op in mutations(protocol)}
        unknown = [o for o in chosen if o not in known]
        if unknown:
            raise BadInput(f"unknown operators: {', '.join(unknown)} (see amqpfuzz mutations)")
    config = CampaignSettings(
        duration=duration,
        max_examples=max_examples,
        seed=seed,
        operators=chosen,
        valid_share=valid_share,
        timeout=timeout,
        protocol=protocol,
        shrink=not no_shrink,
    )
    with contextlib.ExitStack() as stack:
        own: Broker | None = None
        if urls:
            targets = url_targets(urls, allow_remote, ca_file, insecure)
        else:
            own = stack.enter_context(throwaway(kind or "rabbitmq"))
            targets = [parse_target(own.url, label=f"throwaway {own.kind}")]
        _preflight(targets, protocol, timeout)
        console.print(
            f"amqpfuzz run {run_id}: seed {seed}, {len(targets)} target(s): "
            + ", ".join(t.safe_url for t in targets),
            highlight=False,
        )
        jobs = [
            WorkerJob(
                index=i,
                targets=targets,
                config=CampaignSettings(**{**asdict(config), "seed": seed + i}),
                out=out,
                run_id=run_id,
                prefix=f"amqpfuzz-{run_id[:8]}-w{i}-",
                profile=profile,
                kind=campaign_kind,
            )
            for i in range(workers)
        ]
        write_totals(out, run_id, protocol)
        results = _supervise(jobs, console, own)
    return _summarize(results, console, seed)


def _supervise(
    jobs: list[WorkerJob], console: Console, broker: Broker | None
) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    restarts = None if broker is None else Restarts(broker, context, events, len(jobs))
    for job in jobs:
        job.broker = None if restarts is None else restarts.handle(job.index)
    processes = [context.Process(target=_worker, args=(job, events), daemon=False) for job in jobs]
    for process in processes:
        process.start()
    counts = {job.index: (0, 0, 0) for job in jobs}
    done: dict[int, dict[str, Any]] = {}
    interrupted = False
    with Progress(console) as progress:
        try:
            while len(done) < len(jobs):
                try:
                    index, event, data = events.get(timeout=0.5)
                except queue.Empty:
                    if not any(p.is_alive() for p in processes) and events.empty():
                        break
                    continue
                if event == "progress":
                    counts[index] = (data["cases"], data["failures"], data["xfails"])
                elif event == "failure":
                    progress.note(f"failure: {data['signature']}")
                elif event == "restart":
                    progress.note(f"the broker went down; its log ends:\n{data['log']}")
                elif event == "recover" and restarts is not None:
                    if restarts.serve(index, data):
                        progress.note("the broker was restarted; fuzzing goes on")
                elif event == "error":
                    progress.note(f"worker {index}: {data['message']}")
                    done[index] = {"error": data["message"]}
                elif event == "done":
                    done[index] = data
                    counts[index] = (data["cases"], data["failures"], data["xfails"])
                totals = [sum(c[k] for c in counts.values()) for k in range(3)]
                progress.update(*totals)
        except KeyboardInterrupt:
            interrupted = True
            progress.note("interrupted: stopping the workers, keeping every record")
    for process in processes:
        process.join(60)
        if process.is_alive():
            process.terminate()
    if interrupted:
        for data in done.values():
            data["interrupted"] = True
        done.setdefault(-1, {"interrupted": True})
    return list(done.values())


def _summarize(results: list[dict[str, Any]], console: Console, seed: int) -> int:
    errors = [r["error"] for r in results if "error" in r]
    interrupted = any(r.get("interrupted") for r in results)
    finished = [r for r in results if "cases" in r]
    rows: dict[str, dict[str, Any]] = {}
    signatures: dict[str, tuple[int, str]] = {}
    for result in finished:
        for label in result["targets"]:
            row = rows.setdefault(
                label,
                {
                    "target": label,
                    "cases": 0,
                    "programs": 0,
                    "rate": 0.0,
                    "failures": 0,
                    "xfails": 0,
                    "divergences": 0,
                },
            )
            row["cases"] += result["cases"]
            row["programs"] += result.get("programs", 0)
            row["rate"] += result["cases"] / max(result["elapsed"], 1e-9)
            row["failures"] += result["failures"]
            row["xfails"] += result["xfails"]
            row["divergences"] += result["divergences"]
        for signature, count in result["signatures"].items():
            seen, path = signatures.get(signature, (0, result["reproducers"].get(signature, "")))
            signatures[signature] = (seen + count, path or result["reproducers"].get(signature, ""))
    for table in summary_table(list(rows.values()), signatures):
        console.print(table)
    down = [r["broker_down"] for r in finished if r.get("broker_down")]
    for message in down:
        console.print(f"broker down: {message}", highlight=False)
    console.print(f"seed {seed}; records in the --out directory", highlight=False)
    if errors:
        raise BadInput(errors[0])
    if interrupted:
        return 130
    return 1 if signatures or down else 0


@click.command("replay")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--url", help="Replay against this broker (default: the one in the file, if local).")
@click.option("--allow-remote", is_flag=True)
@click.option("--timeout", type=float, default=5.0, show_default=True)
def replay_command(path: str, url: str | None, allow_remote: bool, timeout: float) -> None:
    """Replay a reproducer: exit 1 if the failure still happens, 0 if it does not."""
    data = load_reproducer(path)
    if url is None:
        recorded = str(data.get("target", ""))
        if not recorded:
            raise BadInput(f"{path}: names no target; give --url")
        url = recorded  # the safe URL has no password: guest's default then
    target = parse_target(url, allow_remote=allow_remote)
    _preflight([target], data.get("protocol", "0-9-1"), timeout)
    result = replay(data, target, timeout=timeout)
    click.echo(f"expected: {data['expected']['text']}")
    click.echo(f"observed: {result.outcome}")
    if result.reproduced:
        click.echo(f"still failing: {result.signature}")
        sys.exit(1)
    if result.failure is not None:
        click.echo(f"a different failure now: {result.failure.signature}")
        sys.exit(1)
    click.echo("fixed: the broker now reacts as the specification requires")
    sys.exit(0)


@click.group("broker")
def broker_group() -> None:
    """Throwaway brokers for fuzzing: start, stop, list."""


@broker_group.command("start")
@click.argument("kind", type=click.Choice(list(KINDS)))
@click.option("--port", type=click.IntRange(1, 65535), help="Port (default: a free one).")
def broker_start(kind: str, port: int | None) -> None:
    """Start a throwaway broker that runs until `amqpfuzz broker stop`."""
    broker = KINDS[kind](port)
    broker.start()
    detach(broker)
    click.echo(f"{kind}-{broker.port}  {broker.url}  (data and log in {broker.directory})")


@broker_group.command("stop")
@click.argument("names", nargs=-1)
@click.option("--all", "stop_all", is_flag=True, help="Stop every broker started here.")
def broker_stop(names: tuple[str, ...], stop_all: bool) -> None:
    """Stop throwaway brokers (by the name `broker list` shows) and delete their data."""
    if stop_all:
        names = tuple(str(b["name"]) for b in detached())
    if not names:
        raise BadInput("name a broker to stop (see amqpfuzz broker list), or say --all")
    for name in names:
        if not stop_detached(name):
            raise BadInput(f"no broker named {name!r} (see amqpfuzz broker list)")
        click.echo(f"stopped {name}")


@broker_group.command("list")
def broker_list() -> None:
    """The throwaway brokers started with `amqpfuzz broker start`."""
    found = detached()
    if not found:
        click.echo("no brokers")
    for state in found:
        status = "running" if state["running"] else "stopped"
        click.echo(f"{state['name']}  {status}  {state['url']}  log {state['log']}")
