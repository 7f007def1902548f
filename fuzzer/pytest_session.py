"""What the pytest plugin keeps for one pytest process: its brokers, targets and engine.

One :class:`AmqpSession` per process (the serial run, or each pytest-xdist worker): it starts
the throwaway broker once (each worker its own, so that scenarios that restart it disturb no
other worker), reaches every target, and opens the conformance run and the fuzz campaign on
first use, each with this process's record file and entity prefix. Imported only when the
plugin is used.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .brokers import Broker, throwaway
from .campaign import Campaign, CampaignSettings, TargetRun
from .conformance import ConformanceRun, ScenarioTarget
from .pytest_plugin import Options
from .records import write_totals
from .targets import Target, parse_target
from .transport import Connection, Outcome

__all__ = ["AmqpSession", "RawChannel", "pika_connection", "preflight"]


def preflight(options: Options, timeout: float = 5.0) -> list[Target]:
    """The --amqp-url targets, each reached and logged into (ConnectionFailed if not)."""
    targets = [parse_target(u, allow_remote=options.allow_remote) for u in options.urls]
    for target in targets:
        Connection.open(target, timeout=timeout).close()
    return targets


def _place(target: Target) -> str:
    """``host:port`` (and the virtual host if not ``/``): a target's name among several."""
    vhost = "" if target.vhost == "/" else f"/{target.vhost}"
    return f"{target.host}:{target.port}{vhost}"


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
        self.failures: dict[tuple[str, str], str] = {}  # (target, signature) -> reproducer

    @property
    def worker(self) -> str:
        """This process's name in its record files: host, pid and pytest-xdist worker."""
        return f"{socket.gethostname()}-{self.options.worker}"

    @property
    def out(self) -> Path:
        assert self.options.results is not None
        return Path(self.options.results)

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
            targets = [ScenarioTarget(t, profile_name=self.options.profile) for t in reached]
            if kind is not None:
                self._broker = self._stack.enter_context(throwaway(kind))
                target = parse_target(self._broker.url, label=f"throwaway {kind}")
                targets.append(
                    ScenarioTarget(target, broker=self._broker, profile_name=self.options.profile)
                )
            self._targets = targets
        return self._targets

    # -- the engine ------------------------------------------------------------------------

    def conformance(self, scenarios: list[Any]) -> ConformanceRun:
        """The conformance run of this process's scenario items (targets described)."""
        if self._conformance is None:
            run = ConformanceRun(
                self.targets(),
                scenarios,
                out=self.out,
                run_id=self.options.run_id,
                prefix=self.options.prefix,
                timeout=self.timeout,
                worker=f"{self.worker}-scenarios",
            )
            run.start()
            write_totals(self.out, self.options.run_id)
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
                duration=None, seed=self.options.seed, shrink=False, restarts=1000
            )
            campaign = Campaign(
                runs,
                settings,
                out=self.out,
                run_id=self.options.run_id,
                prefix=self.options.prefix,
                worker=f"{self.worker}-fuzz",
                listener=self._listen,
            )
            campaign.start()
            write_totals(self.out, self.options.run_id)
            self._campaign = campaign
        return self._campaign

    def _listen(self, event: str, data: dict[str, Any]) -> None:
        if event == "failure":  # the latest: Hypothesis replays the smallest case last
            self.failures[(data["target"], data["signature"])] = data["reproducer"]

    def close(self) -> None:
        """Move the record files into place, delete what the run declared, stop the broker."""
        try:
            if self._campaign is not None:
                self._campaign.finish()
            if self._conformance is not None:
                self._conformance.finish()
        finally:
            self._stack.close()


@dataclass
class RawChannel:
    """An open channel of a raw :class:`~.transport.Connection` (the ``amqp_channel``
    fixture): ``call("queue.declare", queue="q")`` sends a method and waits for its reply."""

    connection: Connection
    number: int

    def call(self, method: str, timeout: float = 5.0, **arguments: Any) -> Any:
        """The reply frame, or the :class:`~.transport.Outcome` that came instead (a close,
        a timeout)."""
        frame = self.connection.codec.method(method, self.number, **arguments)
        return self.connection.call(frame, timeout)

    def send(self, method: str, **arguments: Any) -> None:
        """Send a method and wait for nothing (an asynchronous method)."""
        self.connection.send_frame(self.connection.codec.method(method, self.number, **arguments))

    @property
    def closed(self) -> Outcome | None:
        """How the broker closed the channel, if it did."""
        return self.connection.closed_channels.get(self.number) or self.connection.ended


def pika_connection(target: Target) -> Any:
    """A ``pika.BlockingConnection`` to ``target`` (its credentials, TLS context, vhost)."""
    import pika

    context = target.ssl_context()
    parameters = pika.ConnectionParameters(
        host=target.host,
        port=target.port,
        virtual_host=target.vhost,
        credentials=pika.PlainCredentials(target.user, target.password),
        ssl_options=pika.SSLOptions(context, target.host) if context is not None else None,
    )
    return pika.BlockingConnection(parameters)
