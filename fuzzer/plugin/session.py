"""What the pytest plugin keeps for one pytest process: its brokers, targets and engine.

One :class:`AmqpSession` per process (the serial run, or each pytest-xdist worker): it starts
the throwaway broker once (each worker its own, so that scenarios that restart it disturb no
other worker), reaches every target, and opens the conformance run and the fuzz campaign on
first use. The plugin is a handler of the engine's events, like the command line: the records
go to this process's record files (one for scenarios, one for fuzz cases) through a
:class:`~amqpfuzz.fuzzer.records.RecordHandler`, and the items read the verdicts from the
events. Imported only when the plugin is used.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from amqpfuzz.spec import family_of

from ..brokers import Broker, Target, parse_target, throwaway
from ..clients.campaign import ClientSettings, Lane, serving_of
from ..clients.campaign import Outcome as Served
from ..clients.targets import ClientTarget
from ..engine.campaign import Campaign, CampaignSettings, TargetRun
from ..engine.conformance import ConformanceRun, ScenarioTarget
from ..engine.events import Emitter, FailureFound, Judged
from ..protocols import Outcome
from ..protocols.amqp091 import Connection
from ..protocols.families import driver_for
from ..recording import RecordHandler, write_totals
from ..records import RecordWriter
from .options import Options

__all__ = ["AmqpSession", "Gate", "RawChannel", "preflight"]


def preflight(options: Options, timeout: float = 5.0) -> list[Target]:
    """The --amqp-url targets, each reached and logged into (ConnectionFailed if not)."""
    targets = [parse_target(u, allow_remote=options.allow_remote) for u in options.urls]
    driver = driver_for(options.protocol)
    for target in targets:
        driver.connect(target, timeout=timeout).close()
    return targets


def _place(target: Target) -> str:
    """``host:port`` (and the virtual host if not ``/``): a target's name among several."""
    vhost = "" if target.vhost == "/" else f"/{target.vhost}"
    return f"{target.host}:{target.port}{vhost}"


class Gate:
    """Between the campaign and its record file while a fuzz item's Hypothesis test runs.

    Hypothesis generates examples until one fails, then shrinks it (running smaller ones, which
    fail or not) and replays the smallest last. Each example is one batch of the campaign. The
    gate passes every batch through until one fails; from then on it holds only the latest
    failing batch (the smallest, once Hypothesis is done) and drops the shrinking's other runs,
    with the reproducers they wrote: one ``fail`` record per failure found, not one per attempt.
    """

    def __init__(self, records: RecordHandler, failing: tuple[str, ...] = ("fail",)) -> None:
        self.records = records
        self.failing = failing  # the verdicts that fail an item (flaky too, when strict)
        self.open = True  # not in a fuzz item: everything goes through
        self.failed = False
        self.batch: list[Judged] = []
        self.held: list[Judged] = []

    def __call__(self, event: Any) -> None:
        if self.open or not isinstance(event, Judged):
            self.records(event)
        else:
            self.batch.append(event)

    @contextlib.contextmanager
    def item(self) -> Iterator[Gate]:
        """One fuzz item's Hypothesis test; the failure found is recorded at its end."""
        self.open, self.failed, self.held, self.batch = False, False, [], []
        try:
            yield self
        finally:
            for event in self.held:
                self.records(event)
            self.open, self.held = True, []

    def end_batch(self) -> None:
        """One example's batch is judged: record it, hold it or drop it."""
        batch, self.batch = self.batch, []
        failing = any(e.verdict in self.failing for e in batch)
        if not self.failed and not failing:
            for event in batch:
                self.records(event)
            return
        if not failing:  # a shrinking attempt that no longer fails
            return
        self.failed = True
        kept = {e.reproducer for e in batch if e.reproducer}
        for event in self.held:  # the smaller one wins: the larger one's files go
            if event.reproducer and event.reproducer not in kept:
                Path(event.reproducer).unlink(missing_ok=True)
        self.held = batch


class AmqpSession:
    """The brokers, targets, conformance run and campaign of one pytest process."""

    def __init__(self, options: Options, timeout: float = 5.0) -> None:
        self.options = options
        self.timeout = timeout
        self._stack = contextlib.ExitStack()
        self._broker: Broker | None = None
        self._targets: list[ScenarioTarget] | None = None
        self._conformance: ConformanceRun | None = None
        self._campaign: Campaign | None = None
        self._records: list[RecordHandler] = []
        self.gate: Gate | None = None
        self.failures: dict[tuple[str, str], str] = {}  # (target, signature) -> reproducer
        self._lanes: dict[str, Lane] = {}

    @property
    def worker(self) -> str:
        """This process's name in its record files: host and pytest-xdist worker."""
        return f"{socket.gethostname()}-{self.options.worker}"

    @property
    def out(self) -> Path:
        assert self.options.results is not None
        return Path(self.options.results)

    def _record_handler(self, kind: str) -> RecordHandler:
        handler = RecordHandler(
            RecordWriter(self.out, self.options.run_id, f"{self.worker}-{kind}")
        )
        self._records.append(handler)
        return handler

    # -- targets ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the throwaway broker (if one is asked for) and reach every target."""
        self.targets()

    def broker(self) -> Broker | None:
        self.targets()
        return self._broker

    def targets(self) -> list[ScenarioTarget]:
        if self._targets is None:
            reached = preflight(self.options, self.timeout)
            kind = self.options.broker or (None if reached else "rabbitmq")
            if len(reached) + (kind is not None) > 1:  # several: each named in node ids
                reached = [replace(t, label=t.label or _place(t)) for t in reached]
            profile = self.options.profile
            targets = [ScenarioTarget(t, profile_name=profile) for t in reached]
            if kind is not None:
                family = family_of(self.options.protocol)
                self._broker = self._stack.enter_context(throwaway(kind, family=family))
                target = parse_target(self._broker.url, label=f"throwaway {kind}")
                targets.append(ScenarioTarget(target, broker=self._broker, profile_name=profile))
            self._targets = targets
        return self._targets

    # -- the engine ------------------------------------------------------------------------

    def conformance(self, scenarios: list[Any]) -> ConformanceRun:
        """The conformance run of this process's scenario items (targets described)."""
        if self._conformance is None:
            run = ConformanceRun(
                self.targets(),
                scenarios,
                run_id=self.options.run_id,
                prefix=self.options.prefix,
                timeout=self.timeout,
                emit=Emitter(self._record_handler("scenarios")),
                protocol=self.options.protocol,  # what the targets are asked what they are in
            )
            run.start()
            write_totals(self.out, self.options.run_id, self.options.protocol)
            self._conformance = run
        return self._conformance

    def campaign(self) -> Campaign:
        """The fuzz campaign of this process's fuzz items (connected to every target)."""
        if self._campaign is None:
            runs = [
                TargetRun(t.target, broker=t.broker, profile_name=self.options.profile)
                for t in self.targets()
            ]
            # Hypothesis shrinks here, not the campaign; a throwaway broker that goes down is
            # restarted after every case that downs it, so that the next case is judged alone
            settings = CampaignSettings(
                duration=None,
                seed=self.options.seed,
                shrink=False,
                protocol=self.options.protocol,
                fresh_hangs=True,  # (each worker's throwaway broker is its own)
            )
            failing = ("fail", "flaky") if self.options.flaky_fails else ("fail",)
            self.gate = Gate(self._record_handler("fuzz"), failing)
            campaign = Campaign(
                runs,
                settings,
                out=self.out,
                run_id=self.options.run_id,
                prefix=self.options.prefix,
                emit=Emitter(self.gate, self._listen),
            )
            campaign.start()
            write_totals(self.out, self.options.run_id, self.options.protocol)
            self._campaign = campaign
        return self._campaign

    @property
    def client_settings(self) -> ClientSettings:
        """How this process's client items serve their scripts."""
        return ClientSettings(
            protocol=self.options.protocol, seed=self.options.seed, out=self.out, shrink=False
        )

    def lane(self, name: str) -> Lane:
        """The serving peer and shim of a bundled client, started on first use."""
        if name not in self._lanes:
            settings = self.client_settings
            lane = Lane.open(
                Served(ClientTarget.bundled(name)),
                serving_of(settings.protocol),
                settings,
                self.options.run_id,
            )
            self._lanes[name] = self._stack.enter_context(lane)
        return self._lanes[name]

    def _listen(self, event: Any) -> None:
        if isinstance(event, FailureFound):  # the latest: Hypothesis replays the smallest last
            self.failures[(event.target, event.signature)] = event.reproducer

    def close(self) -> None:
        """Move the record files into place, delete what the run declared, stop the broker."""
        try:
            if self._campaign is not None:
                self._campaign.finish()
            if self._conformance is not None:
                self._conformance.finish()
            for handler in self._records:
                handler.close()
        finally:
            self._stack.close()


@dataclass
class RawChannel:
    """An open channel of a raw :class:`~amqpfuzz.fuzzer.protocols.amqp091.Connection` (the
    ``amqp_channel`` fixture): ``call("queue.declare", queue="q")`` sends a method and waits
    for its reply."""

    connection: Connection
    number: int

    def call(self, method: str, timeout: float = 5.0, **arguments: Any) -> Any:
        """The reply frame, or the :class:`~amqpfuzz.fuzzer.protocols.Outcome` that came
        instead (a close, a timeout)."""
        frame = self.connection.codec.method(method, self.number, **arguments)
        return self.connection.call(frame, timeout)

    def send(self, method: str, **arguments: Any) -> None:
        """Send a method and wait for nothing (an asynchronous method)."""
        self.connection.send_frame(self.connection.codec.method(method, self.number, **arguments))

    @property
    def closed(self) -> Outcome | None:
        """How the broker closed the channel, if it did."""
        return self.connection.closed_channels.get(self.number) or self.connection.ended
