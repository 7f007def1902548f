"""``amqpfuzz run --spark MASTER``: the campaign split into shards, run as a Spark job.

Each ``--url`` and each ``--broker`` (a throwaway broker the shard starts on its executor) is
fuzzed by ``--shards`` shards, each with its own seed and the whole ``--duration``; with
``--client``, each client library is, by as many shards (amqpfuzz playing the broker to it). The driver
shows the shards done, cases, failures and distinct signatures as the shards go (from the
progress files they keep in the output: :mod:`amqpfuzz.fuzzer.cluster.progress`), writes the
run's totals beside the output, and prints the summary; a shard that could not run is one line.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..clients.campaign import ClientSettings, Differential, Outcome
from ..cluster import ClientShard, Shard, SparkRun, plan, plan_clients, run_on_spark
from ..cluster.clients import outcome_of
from ..cluster.job import SUBMITTED, SparkProgress
from ..engine.campaign import CampaignSettings
from ..engine.events import RunFinished, TargetSummary
from ..recording import write_totals
from ..spark import CAMPAIGN_CONF, SessionError, failure_line, local_session, remote_session
from .console import BadInput
from .serve import summary as client_summary
from .summary import summarize

__all__ = ["run_spark", "run_spark_clients"]


def run_spark(
    master: str,
    run_id: str,
    settings: CampaignSettings,
    *,
    urls: tuple[str, ...],
    brokers: tuple[str, ...],
    shards: int,
    out: str,
    profile: str | None,
    allow_remote: bool,
    console: Console,
    coverage: bool = True,
    flaky_fails: bool = False,
) -> int:
    """Run the shards on ``master``; the exit status (1: failures found; flaky ones too with
    ``flaky_fails``). ``coverage``: each throwaway broker's own code measured where it can
    be."""
    work = plan(
        run_id, settings, urls=urls, brokers=brokers, shards=shards, profile=profile,
        allow_remote=allow_remote, coverage=coverage,
    )  # fmt: skip
    result = _job(master, run_id, work, out, console, settings.seed)
    if result.here:  # (on this machine's file system)
        write_totals(result.output.rsplit("/spark-", 1)[0], run_id, settings.protocol)
    return _summary(result, console, settings.seed, flaky_fails)


def run_spark_clients(
    master: str,
    run_id: str,
    settings: ClientSettings,
    *,
    clients: tuple[str, ...],
    commands: tuple[str, ...],
    shards: int,
    console: Console,
) -> int:
    """A client campaign on ``master``: a shard per client and seed; the client summary of
    them all (a client's shards together), the exit status (1: failures found)."""
    work = plan_clients(run_id, settings, clients, commands, shards)
    result = _job(master, run_id, work, str(settings.out), console, settings.seed)
    for error in result.errors:
        console.print(f"amqpfuzz: error: {error}", highlight=False, markup=False)
    if result.errors and not result.summaries:
        raise BadInput(result.errors[0])
    base = result.output.rsplit("/spark-", 1)[0]
    merged: dict[str, Outcome] = {}
    for found in result.summaries:
        outcome = outcome_of(found, f"{base}/reproducers")
        merged[outcome.client.label] = (
            merged[outcome.client.label].merge(outcome)
            if outcome.client.label in merged
            else outcome
        )
    outcomes = Differential(list(merged.values()))
    for table in client_summary(outcomes):
        console.print(table)
    console.print(f"records in {result.output}", highlight=False)
    return 1 if result.errors or any(o.failures for o in outcomes) else 0


def _job(
    master: str,
    run_id: str,
    work: Sequence[Shard | ClientShard],
    out: str,
    console: Console,
    seed: int,
) -> SparkRun:
    """The shards run on ``master``'s session (made here, stopped after; ``sc://``: a Spark
    Connect server's), their progress shown as they go."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this interpreter
    try:
        if master == SUBMITTED:
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.appName(f"amqpfuzz-run-{run_id}").getOrCreate()
        elif master.startswith("sc://"):  # its executors' Python is the server's
            spark = remote_session(master, app_name=f"amqpfuzz-run-{run_id}")
        else:
            # the driver plans shards and reads summaries: the records never pass through it
            spark = local_session(master, CAMPAIGN_CONF, app_name=f"amqpfuzz-run-{run_id}")
    except SessionError as exc:
        raise BadInput(str(exc)) from None
    console.print(
        f"amqpfuzz run {run_id} on Spark ({master}): {len(work)} shard(s), seeds "
        f"{seed}..{seed + len(work) - 1}: " + ", ".join(sorted({s.where for s in work})),
        highlight=False,
    )
    shown = _Shown(console)
    try:
        return run_on_spark(spark, work, out, progress=shown)
    except (PySparkException, Py4JError) as exc:  # the job, not a shard (a shard's is a row)
        raise BadInput(f"the Spark job failed: {failure_line(exc)}") from None
    finally:
        shown.close()
        spark.stop()


class _Shown:
    """The driver's progress line: live on a terminal; otherwise a line when a shard ends,
    and one every few seconds (CI logs), and always the last."""

    def __init__(self, console: Console, every: float = 5.0) -> None:
        self.console, self.every = console, every
        self._live: Live | None = None
        self._last: tuple[float, int] = (0.0, -1)  # when a line was printed, shards done then
        self._said = ""

    def __call__(self, now: SparkProgress) -> None:
        line = Text(
            f"shards {now.done}/{now.shards} done: {now.cases} cases, {now.failures} "
            f"failures, {now.signatures} signatures"
        )
        finished = now.done == now.shards
        if self.console.is_terminal and not finished:
            if self._live is None:
                self._live = Live(line, console=self.console, transient=True)
                self._live.start()
            self._live.update(line)
            return
        if line.plain == self._said:
            return
        if finished or now.done != self._last[1] or time.monotonic() - self._last[0] >= self.every:
            self.close()
            self.console.print(line)
            self._last, self._said = (time.monotonic(), now.done), line.plain

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def _summary(result: SparkRun, console: Console, seed: int, flaky_fails: bool) -> int:
    """The plain run's summary, from the shards' summaries; a shard's error, one line each."""
    base = result.output.rsplit("/spark-", 1)[0]
    finished = [
        RunFinished(result.output, "fuzz", tuple(_target(t, base) for t in shard["targets"]))
        for shard in result.summaries
    ]
    for error in result.errors:
        console.print(f"amqpfuzz: error: {error}", highlight=False, markup=False)
    if result.errors and not finished:
        raise BadInput(result.errors[0])
    where = f"records in {result.output}"
    status = summarize(finished, [], False, console, seed, where, flaky_fails=flaky_fails)
    return max(status, 1 if result.errors else 0)


def _target(found: dict[str, Any], base: str) -> TargetSummary:
    reproducers = {s: f"{base}/reproducers/{name}" for s, name in found["reproducers"].items()}
    return TargetSummary(
        label=found["label"],
        cases=found["cases"],
        failures=found["failures"],
        xfails=found["xfails"],
        elapsed=found["elapsed"],
        signatures=found["signatures"],
        reproducers=reproducers,
        broker_down=found["broker_down"],
        first_seen=found["first_seen"],
        flaky=found.get("flaky", 0),
        flaky_signatures=found.get("flaky_signatures", {}),
        confirmations=found.get("confirmations", {}),
        alone=found.get("alone", {}),
    )
