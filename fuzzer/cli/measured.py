"""How each target of ``amqpfuzz run`` has its own code measured: a throwaway broker's as it was
started, a ``--url`` RabbitMQ's through ``--coverage-node``, a ``--url`` JVM broker's through the
JaCoCo agent ``--coverage-agent`` names, read against the ``--coverage-jars`` it runs."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from ..brokers import Broker, Target
from ..brokers.errors import BrokerError
from ..brokers.jvm import installed, java
from ..coverage import CoverageError, ErlangCover, Probe, cookie_home, plan_for, unavailable
from ..coverage.jvm import JacocoCoverage, kind_of
from .console import BadInput

__all__ = ["Agent", "probes_for"]


@dataclass(frozen=True)
class Agent:
    """A JaCoCo agent serving a --url broker's execution data, and the jars that broker runs."""

    host: str
    port: int
    jars: tuple[str, ...]

    @classmethod
    def parse(cls, address: str, jars: tuple[str, ...]) -> Agent:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadInput(f"--coverage-agent {address}: give HOST:PORT (its tcpserver's)")
        return cls(host, int(port), tuple(str(Path(j).resolve()) for j in jars))


def probes_for(
    stack: contextlib.ExitStack,
    targets: list[Target],
    own: Broker | None,
    family: str,
    wanted: bool,
    node: str | None,
    cookie_file: str | None,
    agent: Agent | None = None,
) -> tuple[tuple[Probe | None, ...], list[str]]:
    """How each target's code coverage is measured, and a line per target on it."""
    if not wanted:
        return (None,) * len(targets), []
    probes: list[Probe | None] = []
    said = []
    for index, target in enumerate(targets):
        probe: Probe | None = None
        notes: list[str] = []
        why = ""
        if own is not None:
            probe = own.probe
            notes = own.coverage_notes
            why = unavailable(own.kind, family)
        elif node is not None and index == 0:
            plan = plan_for("rabbitmq", family)
            if plan is None:
                raise BadInput(f"--coverage-node: {unavailable('rabbitmq', family)}")
            cookie = (
                Path(cookie_file).expanduser() if cookie_file else Path.home() / ".erlang.cookie"
            )
            try:
                home = cookie_home(cookie)
                erlang = ErlangCover(plan, node, home)
                stack.callback(erlang.close)
                notes = erlang.prepare()
            except CoverageError as exc:
                raise BadInput(f"--coverage-node {node}: {exc}") from None
            probe = erlang
        elif agent is not None and index == 0:
            probe, notes = _jacoco(agent, family)
        else:
            why = unavailable(None, family)
        if probe is None:
            said.append(f"coverage: not measured for {target.safe_url}: {why}")
        else:
            said.append(f"coverage: {probe.where} ({probe.plan.how}): {'; '.join(notes)}")
        probes.append(probe)
    return tuple(probes), said


def _jacoco(agent: Agent, family: str) -> tuple[Probe, list[str]]:
    """The --url JVM broker's probe: its kind told by the jars it runs."""
    where = f"--coverage-agent {agent.host}:{agent.port}"
    kind = kind_of(agent.jars)
    if kind is None:
        raise BadInput(f"{where}: --coverage-jars holds neither Qpid Broker-J's nor Artemis's jars")
    plan = plan_for(kind, family)
    if plan is None:
        raise BadInput(f"{where}: {unavailable(kind, family)}")
    try:
        probe = JacocoCoverage(
            plan, agent.port, agent.jars, str(installed("jacoco").home), java(), agent.host
        )
        return probe, [*probe.prepare(), f"its first dump: {_first(probe)}"]
    except (CoverageError, BrokerError) as exc:
        raise BadInput(f"{where}: {exc}") from None


def _first(probe: JacocoCoverage) -> str:
    """A first sample, so that an agent nobody serves is said at once (CoverageError)."""
    sample = probe.sample()
    return f"{len(sample.modules)} classes have run"
