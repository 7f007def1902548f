"""A broker process of ours (:class:`Broker`), whatever the broker: the throwaway brokers
(:mod:`.processes`) say how to configure, start and stop theirs.

A :class:`Broker` starts its server as a child process in its own process group, on a free
port (another if one it chose was taken before the server bound it) and with its own data
directory, waits until it speaks AMQP, watches the process so that a crash is seen at once
(:attr:`Broker.crashed`), keeps its log for failure reports (:meth:`Broker.log_tail`),
restarts on the same port and data (durability scenarios need that), instruments its code for
coverage where it is measured, and removes everything on :meth:`Broker.remove`. A guardian
process (:meth:`Broker.guard`) and ``owner.json`` in its directory see that nothing outlives
its owner.
"""

from __future__ import annotations

import contextlib
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
from pathlib import Path
from types import TracebackType

from ..coverage import CoverageError, Plan, Probe, plan_for
from .errors import BrokerError
from .guardian import OWNER, clean_up

__all__ = ["Broker", "boot_id", "free_port", "log_tail"]

GUARDIAN = Path(__file__).with_name("guardian.py")


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
    family: str | None = None  # the protocol family it is started for, if one (throwaway)

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
        self._logged = 0  # the log's length when it was last started

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
        self._logged = logged
        while not (_answers_amqp(self.port) and self.ready()):
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

    def ready(self) -> bool:
        """Whether the broker, already answering a protocol header, is ready to serve."""
        return True

    def logged_since_start(self) -> str:
        """What the broker has logged since this start."""
        try:
            with self.log_path.open("rb") as file:
                file.seek(self._logged)
                return file.read().decode(errors="replace")
        except OSError:
            return ""

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


def boot_id() -> str:
    """This boot of the machine: a broker of an earlier boot is gone, whatever its pid says."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
