"""``amqpfuzz run``: fuzz brokers with valid and malformed cases, or stateful programs.

Every target is checked first (reachable, the login accepted, a protocol amqpfuzz can drive) so
that bad input is one line and exit status 2 before anything starts; then each worker process
(:mod:`.workers`) runs the engine with its own seed, entity prefix and record file, and this
process shows the progress its events tell and prints the summary.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import uuid
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, family_of
from amqpfuzz.strategies import family_for as strategy_family
from amqpfuzz.strategies import operators as catalogue

from ..brokers import BROKERS, Broker, Target, parse_target, refuses, throwaway
from ..brokers.profiles import find_profile
from ..engine.campaign import CampaignSettings
from ..engine.corpus import Corpus, CorpusError
from ..engine.events import (
    BrokerDown,
    CorpusSaved,
    CoverageReached,
    CoverageSampled,
    FailureFound,
    RunFinished,
)
from ..engine.events import (
    Progress as Counts,
)
from ..engine.programs import ProgramSettings
from ..protocols.families import driver_for
from ..recording import write_coverage, write_totals
from .console import BadInput, Progress, make_console, target_options, url_targets
from .measured import Agent, probes_for
from .summary import joined, summarize
from .workers import WorkerJob, supervise

__all__ = ["preflight", "run_command"]


def preflight(
    targets: Iterable[Target], protocol: str, timeout: float, profile: str | None = None
) -> list[str]:
    """Raise (one line, exit 2) for a target that cannot be fuzzed in ``protocol``:
    UnsupportedProtocol, ConnectionFailed. Else what the run should say first: the notice of
    each target's profile (a broker that announces a protocol it does not really speak)."""
    driver = driver_for(protocol)
    notices = []
    for target in targets:
        announced = driver.describe(target, timeout)
        found = find_profile(profile, announced.product, announced.version, protocol)
        if found is not None and found.notice:
            notices.append(f"note: {target.safe_url}: {found.notice} (profile {found.name})")
    return notices


def _positive(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None and value <= 0:
        raise BadInput(f"{param.opts[0]} must be more than zero, not {value:g}")
    return value


@click.command("run")
@click.option("--url", "urls", multiple=True, help="Broker URL (repeat for differential runs).")
@click.option(
    "--broker",
    "kinds",
    type=click.Choice(list(BROKERS)),
    multiple=True,
    help="Fuzz a throwaway broker (repeat with --spark: a broker per shard).",
)
@click.option(
    "--duration",
    type=float,
    default=60.0,
    show_default=True,
    callback=_positive,
    help="Seconds of fuzzing.",
)
@click.option("--max-examples", type=int, callback=_positive, help="Stop after this many cases.")
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
@click.option(
    "--protocol", type=click.Choice(list(PROTOCOLS)), default=DEFAULT_PROTOCOL, show_default=True
)
@click.option(
    "--profile", help="Expectation profile: a bundled name, a path, or 'none' (default: by broker)."
)
@click.option("--operators", help="Comma-separated mutation operators (default: all).")
@click.option(
    "--valid-share",
    type=click.FloatRange(0, 1),
    default=0.15,
    show_default=True,
    help="Share of valid cases of one method.",
)
@click.option(
    "--traffic-share",
    type=click.FloatRange(0, 1),
    help="Share of valid traffic in state: walks of methods that build on what they made "
    "[default: 0.3; with --operators, 0: the operators alone].",
)
@click.option(
    "--state-share",
    type=click.FloatRange(0, 1),
    default=0.2,
    show_default=True,
    help="Share of malformed cases sent after valid traffic, on a channel in state.",
)
@click.option(
    "--timeout",
    type=float,
    default=5.0,
    show_default=True,
    help="Seconds before a silent broker is hanging (a case's time, with --client: a client "
    "has 2 s of it at most to answer amqpfuzz's closing close).",
)
@target_options
@click.option("--no-shrink", is_flag=True, help="Keep failures as found.")
@click.option(
    "--confirm",
    type=click.IntRange(0, 100),
    default=3,
    show_default=True,
    help="Replays of each new failure from its reproducer before it is reported: one that "
    "does not happen again every time is flaky (0: report failures as found).",
)
@click.option(
    "--flaky-fails",
    is_flag=True,
    help="Exit 1 for flaky failures too (they are shown apart, and do not fail a run, by default).",
)
@click.option(
    "--coverage/--no-coverage",
    default=True,
    show_default=True,
    help="Measure the broker's own code coverage (a throwaway RabbitMQ's with Erlang's cover, "
    "the Qpid Proton broker's with coverage.py, Broker-J's and Artemis's with JaCoCo; a --url "
    "RabbitMQ's with --coverage-node, a --url JVM broker's with --coverage-agent).",
)
@click.option(
    "--coverage-node",
    metavar="NODE",
    help="The Erlang node (name@host) of the first --url RabbitMQ, to measure its coverage: "
    "modules already compiled for coverage are measured as they are, the others compiled once "
    "(and left so). ERL_EPMD_PORT is honoured.",
)
@click.option(
    "--erlang-cookie-file",
    type=click.Path(dir_okay=False),
    help="The --coverage-node's Erlang cookie [default: ~/.erlang.cookie].",
)
@click.option(
    "--coverage-agent",
    metavar="HOST:PORT",
    help="JaCoCo's agent (output=tcpserver) in the first --url JVM broker (Qpid Broker-J, "
    "ActiveMQ Artemis), to measure its coverage, with --coverage-jars.",
)
@click.option(
    "--coverage-jars",
    multiple=True,
    type=click.Path(exists=True),
    metavar="PATH",
    help="With --coverage-agent: the jars (or their directories) that broker runs (repeat).",
)
@click.option(
    "--feedback/--no-feedback",
    default=True,
    show_default=True,
    help="Steer by what cases reach: new lines of the broker's code where they are measured, "
    "new reactions elsewhere.",
)
@click.option(
    "--corpus",
    type=click.Path(file_okay=False),
    help="Start from the seeds of a corpus (a directory of seed files, as a run writes to "
    "OUT/corpus/PROTOCOL): each is sent as it is, then mutated with the run's own seeds.",
)
@click.option(
    "--spark",
    "master",
    metavar="MASTER",
    help="Run as a Spark job on MASTER (local[N], spark://..., yarn, sc://...): a campaign per "
    "shard, on the executors.",
)
@click.option(
    "--shards",
    type=click.IntRange(1, 10_000),
    default=1,
    show_default=True,
    help="With --spark: shards (seeds) per --url and per --broker.",
)
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="NAME",
    help="Fuzz a client library instead: amqpfuzz plays a hostile broker to its bundled shim "
    "(repeat: each case served to every client; see `amqpfuzz client list`).",
)
@click.option(
    "--client-command",
    "client_commands",
    multiple=True,
    metavar="CMD",
    help="Fuzz any client: a shim command speaking the shims' JSON lines ('{url}' where the "
    "URL goes, else appended).",
)
def run_command(**options: Any) -> None:
    """Fuzz brokers (or, with --client, client libraries), judged by the specification."""
    clients, commands = options.pop("clients"), options.pop("client_commands")
    if clients or commands:
        from .serve import serve_clients

        sys.exit(serve_clients(clients, commands, options))
    sys.exit(_run(**options))


def _run(
    urls: tuple[str, ...],
    kinds: tuple[str, ...],
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
    traffic_share: float | None,
    state_share: float,
    timeout: float,
    allow_remote: bool,
    ca_file: str | None,
    insecure: bool,
    no_shrink: bool,
    confirm: int,
    flaky_fails: bool,
    coverage: bool,
    coverage_node: str | None,
    erlang_cookie_file: str | None,
    coverage_agent: str | None,
    coverage_jars: tuple[str, ...],
    feedback: bool,
    corpus: str | None,
    master: str | None,
    shards: int,
) -> int:
    console = make_console()
    if master is None and urls and kinds:
        raise BadInput("give --url or --broker, not both (both together with --spark)")
    if master is None and len(kinds) > 1:
        raise BadInput("one --broker at a time (several with --spark)")
    if master is None and shards != 1:
        raise BadInput("--shards splits a Spark campaign: give --spark MASTER")
    if master is not None and campaign_kind != "fuzz":
        raise BadInput("--spark runs fuzz campaigns (--kind fuzz)")
    if coverage_node and not urls:
        raise BadInput("--coverage-node measures a --url RabbitMQ: give its --url")
    if coverage_node and not coverage:
        raise BadInput("--coverage-node and --no-coverage contradict each other")
    if coverage_agent and not urls:
        raise BadInput("--coverage-agent measures a --url JVM broker: give its --url")
    if coverage_agent and not coverage:
        raise BadInput("--coverage-agent and --no-coverage contradict each other")
    if coverage_agent and not coverage_jars:
        raise BadInput("--coverage-agent needs --coverage-jars: the jars the broker runs")
    if coverage_jars and not coverage_agent:
        raise BadInput("--coverage-jars goes with --coverage-agent")
    kind = kinds[0] if kinds else None
    driver_for(protocol)  # a protocol amqpfuzz cannot drive is bad input, said now
    for each in kinds or (() if urls else ("rabbitmq",)):
        if why := refuses(each, protocol):
            raise BadInput(why)
    if profile:
        find_profile(profile, protocol=protocol)  # a bad name or file: bad input, said now
    if corpus is not None:
        if master is not None:
            raise BadInput("--corpus starts a plain run from seeds: a Spark campaign reads none")
        try:  # a bad seed file: one line now, not a worker's failure later
            Corpus.load(Path(corpus), strategy_family(protocol).blob)
        except CorpusError as exc:
            raise BadInput(f"--corpus: {exc}") from None
    if traffic_share is None:  # operators asked for by name: them, not valid traffic besides
        traffic_share = 0.0 if operators else 0.3
    if valid_share + traffic_share + state_share > 1:
        raise BadInput("--valid-share, --traffic-share and --state-share add up to more than 1")
    seed = seed if seed is not None else secrets.randbelow(2**32)
    run_id = uuid.uuid4().hex[:12]
    chosen = tuple(o.strip() for o in operators.split(",")) if operators else None
    if chosen:
        known = {op.name for op in catalogue(protocol)}
        unknown = [o for o in chosen if o not in known]
        if unknown:
            raise BadInput(f"unknown operators: {', '.join(unknown)} (see amqpfuzz mutations)")
    # --kind all shares the budget: half for each kind of campaign
    share = 2 if campaign_kind == "all" else 1
    fuzz = CampaignSettings(
        duration=duration / share,
        max_examples=max_examples,
        seed=seed,
        operators=chosen,
        valid_share=valid_share,
        traffic_share=traffic_share,
        state_share=state_share,
        timeout=timeout,
        protocol=protocol,
        shrink=not no_shrink,
        feedback=feedback,
        corpus=corpus,
        confirm=confirm,
    )
    if master is not None:
        from .spark import run_spark  # (pyspark loads only for a run on Spark)

        if urls:
            preflight(
                url_targets(urls, allow_remote, ca_file, insecure), protocol, timeout, profile
            )
        return run_spark(
            master, run_id, fuzz, urls=urls, brokers=kinds or (() if urls else ("rabbitmq",)),
            shards=shards, out=out, profile=profile, allow_remote=allow_remote, console=console,
            coverage=coverage, flaky_fails=flaky_fails,
        )  # fmt: skip
    programs = ProgramSettings(
        duration=duration / share,
        max_programs=max_examples // 20 if max_examples else None,
        seed=seed,
        protocol=protocol,
        timeout=timeout,
        shrink_budget=min(20.0, duration / share),
        confirm=confirm,
    )
    with contextlib.ExitStack() as stack:
        own: Broker | None = None
        family = family_of(protocol)
        if urls:
            targets = url_targets(urls, allow_remote, ca_file, insecure)
        else:
            measured = family if coverage else None
            own = stack.enter_context(
                throwaway(kind or "rabbitmq", coverage=measured, family=family)
            )
            targets = [parse_target(own.url, label=f"throwaway {own.kind}")]
        notices = preflight(targets, protocol, timeout, profile)
        agent = Agent.parse(coverage_agent, coverage_jars) if coverage_agent else None
        probes, said = probes_for(stack, targets, own, family, coverage, coverage_node,
                                  erlang_cookie_file, agent)  # fmt: skip
        notices += said
        console.print(
            f"amqpfuzz run {run_id}: seed {seed}, {len(targets)} target(s): "
            + ", ".join(t.safe_url for t in targets),
            highlight=False,
        )
        for notice in notices:
            console.print(notice, highlight=False, markup=False, soft_wrap=True)
        # the run's own broker, that no other worker uses: a program may restart it, and a
        # hang is confirmed on it restarted
        alone = own is not None and workers == 1
        jobs = [
            WorkerJob(
                index=i,
                targets=targets,
                out=out,
                run_id=run_id,
                prefix=f"amqpfuzz-{run_id[:8]}-w{i}-",
                profile=profile,
                coverage=probes,
                fuzz=replace(fuzz, seed=seed + i, corpus_part=(i, workers), fresh_hangs=alone)
                if campaign_kind != "stateful"
                else None,
                programs=replace(programs, seed=seed + i, restarts=alone)
                if campaign_kind != "fuzz"
                else None,
            )
            for i in range(workers)
        ]
        write_totals(out, run_id, protocol)
        with Progress(console) as progress:
            watch = _Watch(progress)
            finished, errors, interrupted = supervise(jobs, own, watch)
    if watch.reached:
        write_coverage(out, run_id, joined(watch.reached))
    return summarize(
        finished, errors, interrupted, console, seed, coverage=watch.reached,
        flaky_fails=flaky_fails,
    )  # fmt: skip


class _Watch:
    """The parent's handler of the workers' events: the live progress line and the notes."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.counts: dict[int, tuple[int, int, int, int, int]] = {}
        self.reached: list[CoverageReached] = []

    def __call__(self, index: int, event: Any) -> None:
        progress = self.progress
        if isinstance(event, Counts):
            counted = (event.cases, event.failures, event.xfails, event.programs, event.flaky)
            self.counts[index] = counted
            totals = [sum(c[k] for c in self.counts.values()) for k in range(5)]
            progress.update(*totals)
        elif isinstance(event, CoverageSampled):
            progress.covered(event.target.label, event.sets())
        elif isinstance(event, CoverageReached):
            self.reached.append(event)
        elif isinstance(event, CorpusSaved):
            steering = event.steering
            progress.note(
                f"feedback ({steering['signal']}): {steering['seeds_kept']} seeds kept, "
                f"{steering['mutants']} cases made of seeds, {steering['aimed']} aimed at the "
                f"arms that reached most ({', '.join(steering['best_arms'][:3])}); corpus: "
                f"{event.directory} ({event.seeds} seeds)"
            )
        elif isinstance(event, FailureFound):
            said = "flaky" if event.flaky else "failure"
            progress.note(f"{said}: {event.signature}")
        elif isinstance(event, BrokerDown):
            progress.note(f"the broker went down; its log ends:\n{event.log}")
        elif event == "restarted":
            progress.note("the broker was restarted; fuzzing goes on")
        elif event == "interrupted":
            progress.note("interrupted: stopping the workers, keeping every record")
        elif isinstance(event, RunFinished) and event.kind == "fuzz":
            # a fuzz campaign's last count stands while the same worker's programs run
            last = self.counts.get(index, (0, 0, 0, 0, 0))
            self.counts[index] = (*last[:3], 0, last[4])
