"""Throwaway brokers: a private RabbitMQ, GarageMQ or Qpid Proton example broker on a free port,
with its own data directory.

A :class:`Broker` starts the Debian-packaged server as a child process, waits until it speaks
AMQP, watches the process so that a crash is seen at once (:attr:`Broker.crashed`), keeps its
log for failure reports (:meth:`Broker.log_tail`), restarts on the same port and data
(durability scenarios need that) and removes everything on :meth:`stop`. It is a context
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
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from ..coverage import CoverageError, ErlangCover, Plan, Probe, PythonCoverage, plan_for
from ..coverage.python import resolve
from .errors import BrokerError
from .guardian import OWNER, clean_up, reap
from .guardian import running as process_running
from .tls import make_certificates

__all__ = [
    "BROKERS",
    "RABBITMQCTL",
    "Broker",
    "BrokerError",
    "GarageMQ",
    "QpidProton",
    "RabbitMQ",
    "free_port",
    "log_tail",
    "process_running",
    "refuses",
    "throwaway",
]

GUARDIAN = Path(__file__).with_name("guardian.py")
RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
RABBITMQCTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"
GARAGEMQ_CONFIG = "/etc/garagemq/config.yaml"
PROTON_BROKER = "/usr/share/proton/examples/python/broker.py"


def free_port() -> int:
    """A TCP port on the loopback interface that nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PORT_TRIES = 3  # starts on fresh ports when one we chose was taken before the broker bound it
_IN_USE = (b"eaddrinuse", b"address already in use")


class _PortTaken(Exception):
    """The broker could not bind a port: someone took it after we found it free."""


def _port_taken(log: Path, since: int) -> bool:
    """Whether what the broker logged after offset ``since`` says a port was in use."""
    try:
        with log.open("rb") as file:
            file.seek(since)
            written = file.read().lower()
    except OSError:
        return False
    return any(words in written for words in _IN_USE)


def log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of a broker's log."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _answers_amqp(port: int) -> bool:
    """True once the port accepts a connection and answers a protocol header."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"AMQP\x00\x00\x09\x01")
            sock.settimeout(2)
            return len(sock.recv(8)) > 0
    except OSError:
        return False


class Broker:
    """A broker process of ours. Subclasses say how to configure, start and stop it."""

    kind = ""
    executable = ""
    more_ports: tuple[str, ...] = ()  # ports besides AMQP's, kept for `amqpfuzz broker stop`
    serves_tls = False  # whether it can have a TLS listener (amqps://) beside the plain one
    protocols: tuple[str, ...] = ("0-9-1", "0-9", "0-8")  # what it can be fuzzed with

    def __init__(
        self,
        port: int | None = None,
        directory: Path | None = None,
        *,
        tls: bool = False,
        coverage: str | None = None,
    ) -> None:
        if tls and not self.serves_tls:
            raise BrokerError(f"{self.kind}: amqpfuzz cannot give it a TLS listener")
        self.tls_port = free_port() if tls else None
        self.port = port or free_port()
        # ports it was not given may be chosen again until it has served on them once (another
        # process can take a free port between our probe and the broker's bind)
        self._may_move = port is None
        self._own_directory = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix=f"amqpfuzz-{self.kind}-"))
        self.log_path = self.directory / "broker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._crashed = threading.Event()
        self.exit_code: int | None = None
        self._guardian: tuple[subprocess.Popen[bytes], int] | None = None
        self.crashed_at: float | None = None  # when its process ended unasked (monotonic)
        # its code measured while it serves this protocol family (sets.toml), if it can be
        self.plan: Plan | None = plan_for(self.kind, coverage) if coverage else None
        self.coverage_notes: list[str] = []  # what instrumenting it did, in a few words

    # -- what callers use ------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    @property
    def tls_url(self) -> str | None:
        """The TLS listener's URL (verify it with :attr:`ca_file`), if it has one."""
        if self.tls_port is None:
            return None
        return f"amqps://guest:guest@127.0.0.1:{self.tls_port}/%2F"

    @property
    def ca_file(self) -> Path | None:
        """The certificate of the private CA that signed the TLS listener's certificate."""
        return self.directory / "tls" / "ca.pem" if self.tls_port is not None else None

    @property
    def crashed(self) -> bool:
        """True as soon as the process has ended without being asked to."""
        return self._crashed.is_set()

    def start(self, timeout: float = 60) -> Broker:
        for attempt in range(PORT_TRIES):
            try:
                self._start(timeout)
            except _PortTaken as taken:
                if not self._may_move or attempt == PORT_TRIES - 1:
                    raise BrokerError(str(taken)) from None
                self.cleanup()  # its helpers on the old ports (RabbitMQ's epmd)
                self.choose_ports()
                continue
            self._may_move = False
            break
        return self

    def choose_ports(self) -> None:
        """New free ports for all it listens on (its AMQP port was taken while it started)."""
        self.port = free_port()
        if self.tls_port is not None:
            self.tls_port = free_port()

    def _start(self, timeout: float) -> None:
        if shutil.which(self.executable) is None:
            raise BrokerError(
                f"{self.kind}: {self.executable} is not installed (make check installs it)"
            )
        self._crashed.clear()
        self.crashed_at = None
        self._stopping = False
        self.directory.mkdir(parents=True, exist_ok=True)
        self.configure()
        log = self.log_path.open("ab")
        logged = log.tell()
        self.process = subprocess.Popen(
            self.command(),
            env=self.environment(),
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole, never orphaned
        )
        log.close()
        self._write_owner()
        threading.Thread(target=self._watch, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not _answers_amqp(self.port):
            if self.process.poll() is not None:
                ended = (
                    f"{self.kind} exited with status {self.process.returncode} while starting; "
                    f"last log lines: {self.log_tail(5)}"
                )
                if _port_taken(self.log_path, logged):
                    raise _PortTaken(ended)
                raise BrokerError(ended)
            if time.monotonic() > deadline:
                self.stop()
                raise BrokerError(
                    f"{self.kind} did not answer on port {self.port} in {timeout:.0f} s"
                )
            time.sleep(0.2)
        self._instrument()

    @property
    def probe(self) -> Probe | None:
        """How its coverage is measured (None: it is not)."""
        return None

    def _instrument(self) -> None:
        """Instrument its code for coverage, after every start (a restarted node has lost
        its instrumented modules, and what they counted: the run keeps that)."""
        probe = self.probe
        if probe is None:
            return
        try:
            self.coverage_notes = probe.prepare()
        except CoverageError as exc:
            self.stop()
            raise BrokerError(f"{self.kind}: its coverage cannot be measured: {exc}") from None

    def stop(self, timeout: float = 30) -> None:
        """Stop the process group and wait for it; idempotent."""
        self._stopping = True
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            self.shutdown(process)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        if process is not None:
            self.exit_code = process.returncode
        self.cleanup()

    def restart(self, timeout: float = 60) -> Broker:
        """Stop and start again on the same port with the same data (durable state stays)."""
        self.stop()
        return self.start(timeout)

    def recover(self, timeout: float = 60) -> Broker:
        """Start again after the broker stopped serving: a hung process is killed at once
        (no graceful stop to wait for), then started on the same port with the same data."""
        self.kill()
        self.stop()
        return self.start(timeout)

    def kill(self) -> None:
        """Kill the broker as a crash would (SIGKILL to its process group)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def remove(self) -> None:
        """Stop and delete the data directory, if this broker created it. One whose data
        goes with it is killed: a clean stop (seconds, for RabbitMQ) would only save to disk
        what is deleted next."""
        if self._own_directory:
            self._stopping = True
            self.kill()
        self.stop()
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.release()

    # -- nothing outlives its owner ----------------------------------------------------------

    def guard(self) -> Broker:
        """Have a guardian process end this broker (its process group, its helpers, its
        directory) if this process ends without removing it, SIGKILL included."""
        if self._guardian is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            read, write = os.pipe()  # neither end is inherited by other children
            try:
                guardian = subprocess.Popen(
                    [sys.executable, "-I", str(GUARDIAN), str(self.directory)],
                    stdin=read,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # a signal to our process group spares it
                )
            finally:
                os.close(read)
            self._guardian = (guardian, write)
            self._write_owner()
        return self

    def release(self) -> None:
        """Tell the guardian the broker is taken care of (removed, or detached on purpose)."""
        if self._guardian is not None:
            guardian, pipe = self._guardian
            self._guardian = None
            with contextlib.suppress(OSError):
                os.write(pipe, b"done")
            os.close(pipe)
            with contextlib.suppress(subprocess.TimeoutExpired):
                guardian.wait(10)
        self._write_owner()

    def _write_owner(self) -> None:
        """``owner.json``: what a guardian, or the next run's sweep, needs to end the broker."""
        if not self.directory.exists():
            return
        guardian = self._guardian[0].pid if self._guardian else None
        state = {
            "kind": self.kind,
            "pid": self.process.pid if self.process else None,
            "owner": os.getpid(),
            "guardian": guardian,
            "guarded": guardian is not None,
            "boot": boot_id(),
            "cleanup": self.cleanup_command(),
        }
        part = self.directory / (OWNER + ".part")
        part.write_text(json.dumps(state) + "\n")
        part.replace(self.directory / OWNER)

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log_path, lines)

    def __enter__(self) -> Broker:
        return self.start() if self.process is None else self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "running" if self.process and self.process.poll() is None else "stopped"
        return f"<{type(self).__name__} port={self.port} {state} {self.directory}>"

    # -- what subclasses provide ------------------------------------------------------------

    def configure(self) -> None:
        """Write the configuration files into :attr:`directory`."""

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def shutdown(self, process: subprocess.Popen[bytes]) -> None:
        """Ask the process to stop."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)

    def cleanup_command(self) -> list[str] | None:
        """A command that stops the helpers the broker leaves behind, if it has any."""
        return None

    def cleanup(self) -> None:
        """Stop helpers the broker left behind."""
        command = self.cleanup_command()
        if command:
            clean_up(command)

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        process.wait()
        if not self._stopping and process is self.process:
            self.crashed_at = time.monotonic()
            self._crashed.set()


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
) -> Iterator[Broker]:
    """A started broker of ``kind``, stopped and removed on leaving the block; with ``tls``,
    a TLS listener too (:attr:`Broker.tls_url`, verified with :attr:`Broker.ca_file`); with
    ``coverage`` (a protocol family), its code measured as :mod:`amqpfuzz.fuzzer.coverage`
    says (:attr:`Broker.probe`) where it can be."""
    try:
        broker = BROKERS[kind](port, tls=tls, coverage=coverage)
    except KeyError:
        raise BrokerError(f"unknown broker {kind!r}; known: {', '.join(BROKERS)}") from None
    sweep()
    try:
        broker.guard().start()
        yield broker
    finally:
        broker.remove()


def boot_id() -> str:
    """This boot of the machine: a broker of an earlier boot is gone, whatever its pid says."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


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
