"""Throwaway brokers: a private RabbitMQ, GarageMQ, Qpid Proton example broker, Qpid Broker-J or
ActiveMQ Artemis (the last two in :mod:`.jvm`) on a free port, with its own data directory.

Each is a :class:`~.broker.Broker` that says how to configure, start and stop its server: the
Broker starts the Debian-packaged server as a child process, waits until it speaks AMQP,
watches the process so that a crash is seen at once (:attr:`Broker.crashed`), keeps its log
for failure reports (:meth:`Broker.log_tail`), restarts on the same port and data (durability
scenarios need that) and removes everything on :meth:`Broker.remove`. It is a context
manager::

    with throwaway("rabbitmq") as broker:
        fuzz(broker.url)

RabbitMQ runs ``/usr/lib/rabbitmq/bin/rabbitmq-server`` directly (not Debian's wrapper, which
switches to the rabbitmq user) as the current user, with ``HOME`` in its data directory for
the Erlang cookie and a private epmd on its own port, so that nothing outlives it; its AMQP 1.0
plugin is enabled, so that it serves 1.0 on the same port (the protocol header decides). The Qpid
Proton example broker (Debian's ``libqpid-proton11-dev-examples``), the reference
implementation's own peer, serves 1.0 only: it runs under this Python, whose
``python-qpid-proton`` it imports, and keeps its queues in memory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..coverage import ErlangCover, Probe, PythonCoverage
from ..coverage.python import resolve
from .broker import Broker, boot_id, free_port
from .errors import BrokerError
from .guardian import OWNER, reap
from .guardian import running as process_running
from .jvm import Artemis, BrokerJ
from .tls import make_certificates

__all__ = [
    "BROKERS",
    "RABBITMQCTL",
    "GarageMQ",
    "QpidProton",
    "RabbitMQ",
    "refuses",
    "sweep",
    "throwaway",
]

RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
RABBITMQCTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"
GARAGEMQ_CONFIG = "/etc/garagemq/config.yaml"
PROTON_BROKER = "/usr/share/proton/examples/python/broker.py"


class RabbitMQ(Broker):
    kind = "rabbitmq"
    executable = RABBITMQ_SERVER
    more_ports = ("dist_port", "epmd_port")
    serves_tls = True
    protocols = ("0-9-1", "0-9", "0-8", "1.0")

    def __init__(
        self,
        port: int | None = None,
        directory: Path | None = None,
        *,
        tls: bool = False,
        coverage: str | None = None,
    ) -> None:
        super().__init__(port, directory, tls=tls, coverage=coverage)
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node = f"amqpfuzz{self.port}@localhost"
        self._probe: Probe | None = None

    def choose_ports(self) -> None:
        super().choose_ports()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node = f"amqpfuzz{self.port}@localhost"
        self._probe = None

    @property
    def probe(self) -> Probe | None:
        """Erlang's cover in the node, its cookie in the node's HOME (its directory)."""
        if self.plan is not None and self._probe is None:
            self._probe = ErlangCover(self.plan, self.node, self.directory, self.epmd_port)
        return self._probe

    def configure(self) -> None:
        (self.directory / "enabled_plugins").write_text("[rabbitmq_amqp1_0].\n")
        (self.directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = {self.port}\n"
            "loopback_users = none\n"
            # a fuzz campaign must not stop at a disk alarm on a nearly full build machine
            "disk_free_limit.absolute = 1\n"
            "log.console = true\n"
            "log.console.level = warning\n"
            # thousands of connections a fuzzer breaks on purpose: their log lines cost the
            # broker more than the connections do (the reaction is in the records)
            "log.connection.level = none\n"
            "log.file = false\n" + self._tls_configuration()
        )

    def _tls_configuration(self) -> str:
        if self.tls_port is None:
            return ""
        tls = self.directory / "tls"
        if not (tls / "ca.pem").exists():  # a restart keeps the certificates it had
            make_certificates(tls)
        return (
            f"listeners.ssl.default = {self.tls_port}\n"
            f"ssl_options.cacertfile = {tls / 'ca.pem'}\n"
            f"ssl_options.certfile = {tls / 'server.pem'}\n"
            f"ssl_options.keyfile = {tls / 'server.key'}\n"
            "ssl_options.verify = verify_none\n"
            "ssl_options.fail_if_no_peer_cert = false\n"
        )

    def environment(self) -> dict[str, str]:
        # any value of RABBITMQ_ALLOW_INPUT starts an Erlang shell that quits on our closed stdin
        env = {k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")}
        env.update(
            HOME=str(self.directory),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            ERL_EPMD_PORT=str(self.epmd_port),
            RABBITMQ_MNESIA_BASE=str(self.directory / "mnesia"),
            RABBITMQ_LOG_BASE=str(self.directory / "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self.directory / "enabled_plugins"),
            RABBITMQ_CONFIG_FILE=str(self.directory / "rabbitmq"),
            RABBITMQ_PID_FILE=str(self.directory / "rabbitmq.pid"),
            # no scheduler spins waiting for work: brokers that share a few cores with the
            # fuzzer (and with each other) leave them to whoever has work to do
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none",
        )
        return env

    def command(self) -> list[str]:
        return [RABBITMQ_SERVER]

    def shutdown(self, process: subprocess.Popen[bytes]) -> None:
        # a clean stop writes durable queues to disk, which a restart must find again
        done = subprocess.run(
            [RABBITMQCTL, "-n", self.node, "stop"],
            env=self.environment(),
            capture_output=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            super().shutdown(process)

    def cleanup_command(self) -> list[str]:
        """Its private epmd, which outlives the node."""
        epmd = shutil.which("epmd") or "/usr/lib/erlang/bin/epmd"
        return [epmd, "-port", str(self.epmd_port), "-kill"]


class GarageMQ(Broker):
    kind = "garagemq"
    executable = "garagemq"

    def __init__(
        self,
        port: int | None = None,
        directory: Path | None = None,
        *,
        tls: bool = False,
        coverage: str | None = None,
    ) -> None:
        super().__init__(port, directory, tls=tls, coverage=coverage)
        self.admin_port = free_port()

    def choose_ports(self) -> None:
        super().choose_ports()
        self.admin_port = free_port()

    def configure(self) -> None:
        lines = Path(GARAGEMQ_CONFIG).read_text().splitlines()
        out, section = [], ""
        for line in lines:
            if line and not line.startswith(" "):
                section = line.split(":")[0]
            key = line.strip().split(":")[0]
            if key == "port" and section == "tcp":
                line = line.split("port:")[0] + f"port: {self.port}"
            elif key == "port" and section == "admin":
                line = line.split("port:")[0] + f"port: {self.admin_port}"
            elif key == "defaultPath" and section == "db":
                line = line.split("defaultPath:")[0] + f"defaultPath: {self.directory / 'db'}"
            out.append(line)
        (self.directory / "garagemq.yaml").write_text("\n".join(out) + "\n")

    def command(self) -> list[str]:
        return [
            "garagemq",
            "--config",
            str(self.directory / "garagemq.yaml"),
            "--log-file",
            "stdout",
            "--log-level",
            "warning",
        ]


class QpidProton(Broker):
    """Qpid Proton's example broker: AMQP 1.0 only, any credentials (SASL ANONYMOUS or PLAIN)."""

    kind = "qpid-proton"
    executable = PROTON_BROKER
    protocols = ("1.0",)

    def command(self) -> list[str]:
        broker = [PROTON_BROKER, "-a", f"127.0.0.1:{self.port}"]
        if self.plan is None:
            return [sys.executable, *broker]
        roots = {"script": str(Path(PROTON_BROKER).parent), "proton": _proton_directory()}
        patterns = resolve((m for _, modules in self.plan.sets for m in modules), roots)
        run = [sys.executable, "-m", "amqpfuzz.fuzzer.coverage.pyrun", str(self._measured)]
        return [*run, json.dumps(patterns), *broker]

    @property
    def _measured(self) -> Path:
        return self.directory / "coverage"

    @property
    def probe(self) -> Probe | None:
        """coverage.py in the broker's process (:mod:`amqpfuzz.fuzzer.coverage.pyrun`)."""
        return None if self.plan is None else PythonCoverage(self.plan, self._measured)

    def environment(self) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1"}


BROKERS: dict[str, type[Broker]] = {
    "rabbitmq": RabbitMQ,
    "garagemq": GarageMQ,
    "qpid-proton": QpidProton,
    "qpid-broker-j": BrokerJ,
    "artemis": Artemis,
}


def refuses(kind: str, protocol: str) -> str | None:
    """Why a throwaway broker of ``kind`` cannot be fuzzed with ``protocol`` (None: it can)."""
    served = BROKERS[kind].protocols
    if protocol in served:
        return None
    return f"a throwaway {kind} does not serve AMQP {protocol} (it serves {', '.join(served)})"


def _proton_directory() -> str:
    """Where the proton package this Python imports lives (not imported here)."""
    found = importlib.util.find_spec("proton")
    if found is None or found.origin is None:
        raise BrokerError(
            "qpid-proton: python-qpid-proton is not installed (make check installs it)"
        )
    return str(Path(found.origin).parent)


@contextlib.contextmanager
def throwaway(
    kind: str = "rabbitmq",
    port: int | None = None,
    *,
    tls: bool = False,
    coverage: str | None = None,
    family: str | None = None,
) -> Iterator[Broker]:
    """A started broker of ``kind``, stopped and removed on leaving the block; with ``tls``,
    a TLS listener too (:attr:`Broker.tls_url`, verified with :attr:`Broker.ca_file`); with
    ``coverage`` (a protocol family), its code measured as :mod:`amqpfuzz.fuzzer.coverage`
    says (:attr:`Broker.probe`) where it can be; ``family`` (else ``coverage``'s), the protocol
    family it is started for, where a broker is configured for one (Broker-J's 1.0 nodes)."""
    try:
        broker = BROKERS[kind](port, tls=tls, coverage=coverage)
    except KeyError:
        raise BrokerError(f"unknown broker {kind!r}; known: {', '.join(BROKERS)}") from None
    broker.family = family or coverage
    sweep()
    try:
        broker.guard().start()
        yield broker
    finally:
        broker.remove()


def sweep(base: Path | None = None) -> list[Path]:
    """Remove what throwaway brokers of dead owners left (a machine that crashed, a guardian
    that was killed too): their processes, helpers and directories. Brokers started on
    purpose to outlive their command (``amqpfuzz broker start``) are not guarded, and stay."""
    removed = []
    for directory in (base or Path(tempfile.gettempdir())).glob("amqpfuzz-*-*"):
        try:
            state = json.loads((directory / OWNER).read_text())
        except (OSError, ValueError):
            continue
        if not state.get("guarded"):
            continue
        alive = [p for p in (state.get("owner"), state.get("guardian")) if isinstance(p, int)]
        if state.get("boot") == boot_id() and any(process_running(p) for p in alive):
            continue
        reap(directory)
        removed.append(directory)
    return removed
