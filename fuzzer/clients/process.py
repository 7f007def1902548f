"""A client shim as a process amqpfuzz runs: started, read, measured, restarted, ended.

A shim is long-lived: it connects, does what its application does, reports it as JSON lines
(see ``shims/README`` for the contract) and reconnects for the next case. This module reads
those lines on a thread of its own (:meth:`ShimProcess.events`), tells the serving peer what
the current case reported so far as it comes (:meth:`ShimProcess.hearing`), keeps the tail of
what the shim wrote on stderr (a crash's traceback or panic), measures its resident memory, and
ends it with the process that started it: it runs in a process group of its own and, on Linux,
dies with its parent (``PR_SET_PDEATHSIG``), so a killed campaign leaves no shim behind.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from amqpfuzz.spec import AmqpfuzzError

from ..children import die_with_parent
from .frames import frame_of

__all__ = ["Died", "Hearing", "ShimError", "ShimProcess"]

FINAL = ("closed", "error")  # the events that end a case
_RUBY = re.compile(r"^\S+:\d+:in .*\(([A-Z][\w:]*)\)$")
_OUT_OF_MEMORY = re.compile(
    r"OutOfMemoryError|out of memory|memory allocation of \d+ bytes failed|^MemoryError"
)
STDERR_KEPT = 400
DEEPEST = 20_000  # levels of a shim's JSON line read at most (threads have 8 MiB of stack)
_DEEP = threading.Lock()  # lines of a shim's stderr kept: a JVM's stack of a deep recursion is long


class ShimError(AmqpfuzzError):
    """A shim that cannot be run (one line)."""


@dataclass(frozen=True)
class Died:
    """How a shim ended: its exit status (negative: the signal), what it said last and where
    (:func:`frame_of`: the innermost frame of its stack that is not the runtime's)."""

    status: int
    last: str
    where: str = ""

    @property
    def cause(self) -> str:
        """A crash in a few stable words: the signal, or the exception or panic named, and the
        frame it came from (``in shim <file>:<function>`` for the shim's own code)."""
        said = self.out_of_memory or self.last.startswith(("panic:", "fatal error:"))
        if self.status < 0 and not said:  # (a Rust shim aborts after its panic, or on no memory)
            with contextlib.suppress(ValueError):
                return signal.Signals(-self.status).name
            return f"signal {-self.status}"
        return f"{self._named()} in {self.where}" if self.where else self._named()

    def _named(self) -> str:
        if self.last.startswith(("panic:", "fatal error:")) or " panicked at " in self.last:
            return self.last.split(" panicked at ")[0][:80]
        ruby = _RUBY.search(self.last)  # path:line:in `where': message (Class)
        if ruby is not None:
            return ruby.group(1)
        named = self.last.split(":", 1)[0].split(" [", 1)[0].split(" {", 1)[0]  # (Node's codes)
        named = named.removeprefix("Exception in thread ").split('" ')[-1]  # (Java's thread)
        return named.strip()[:80] or f"exit {self.status}"

    @property
    def out_of_memory(self) -> bool:
        """Whether its runtime said it ran out of memory (a JVM's OutOfMemoryError, Go's
        "out of memory", a Rust allocation that failed, Python's MemoryError)."""
        return _OUT_OF_MEMORY.search(self.last) is not None

    @property
    def in_shim(self) -> bool:
        """Whether it died in the shim's own code, not the library's."""
        return self.where.startswith("shim ")


class ShimProcess:
    """One running shim."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = env
        self.started = 0
        self._start()

    def _start(self) -> None:
        self.connections = 0  # since this start
        try:
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
                preexec_fn=functools.partial(
                    die_with_parent, os.getpid()
                ),  # the child has no threads before it execs
            )
        except OSError as exc:
            raise ShimError(f"cannot start the client {self.command[0]}: {exc.strerror}") from None
        self.started += 1
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.said: dict[int, list[dict[str, Any]]] = {}  # by case, as they come (the last few)
        self.stderr: deque[str] = deque(maxlen=STDERR_KEPT)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()
        self._draining = threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True)
        self._draining.start()

    def _pump(self, stream: Any) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                event = _parsed(line)
            except ValueError:
                event = {"event": "noise", "text": line[:200]}
            if not isinstance(event, dict):
                event = {"event": "noise", "text": line[:200]}
            case = event.get("case")
            if isinstance(case, int) and not isinstance(case, bool):
                self.said.setdefault(case, []).append(event)
                self.said.pop(case - 3, None)
            self.lines.put(event)
        self.lines.put(None)

    def _drain(self, stream: Any) -> None:
        for raw in stream:
            self.stderr.append(raw.decode("utf-8", "replace").rstrip())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def events(self, until: float) -> tuple[list[dict[str, Any]], bool]:
        """The shim's events of its current case (its connection's number since it started)
        up to the case's final event, or until the monotonic time ``until``; and whether a
        final event came. What a case said after its time was up is left out of the next."""
        current = self.connections - 1
        out: list[dict[str, Any]] = []
        while True:
            left = until - time.monotonic()
            try:
                event = (
                    self.lines.get(timeout=max(0.0, left)) if left > 0 else self.lines.get_nowait()
                )
            except queue.Empty:
                return out, False
            if event is None:
                self.lines.put(None)  # the stream ended: say so to every later reader
                return out, False
            case = event.get("case")
            if isinstance(case, int) and case < current:
                continue  # a late word of a case already judged
            out.append(event)
            if event.get("event") in FINAL:
                return out, True

    def hearing(self, waits: Callable[[dict[str, Any]], bool]) -> Hearing:
        """What the current case (the connection last accepted) reports, as it comes;
        ``waits``: an event after which the shim's application waits for the peer."""
        return Hearing(self.said.setdefault(self.connections - 1, []), waits)

    def died(self, wait: float = 0.0) -> Died | None:
        """How the shim ended, if it has (waiting ``wait`` seconds for it)."""
        try:
            status = self.proc.wait(timeout=wait) if wait else self.proc.poll()
        except subprocess.TimeoutExpired:
            return None
        if status is None:
            return None
        self._draining.join(timeout=0.5)  # its last lines (a child it left may hold the pipe)
        said = list(self.stderr)
        return Died(status, _what_ended(said), frame_of(said))

    def rss(self) -> int:
        """Resident memory of the shim's process group, in bytes (0 once it ended)."""
        total = 0
        for pid in _group(self.proc.pid):
            with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total

    def restart(self, before: Callable[[], object] = lambda: None) -> None:
        """Ends the shim and starts it again (``before`` runs in between)."""
        self.stop()
        before()
        self._start()

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


@dataclass(frozen=True)
class Hearing:
    """A case's events as its shim reports them (a serving peer's
    :class:`~amqpfuzz.fuzzer.protocols.serving.Heard`)."""

    events: list[dict[str, Any]]  # filled by the shim's reading thread
    waits: Callable[[dict[str, Any]], bool]

    def said(self) -> int:
        return len(self.events)

    def waiting(self) -> bool:
        return any(self.waits(event) for event in list(self.events))


_NAMED = re.compile(r"^[\w.$]*(Error|Exception)\b[^(]*(:|\{|$)")


def _parsed(line: str) -> Any:
    """A shim's JSON line; one nested deeper than Python's recursion limit (the values of a
    message nested thousands deep, as a client delivered them) read with a higher limit, on
    this reading thread's own stack."""
    try:
        return json.loads(line)
    except RecursionError:
        with _DEEP:
            before = sys.getrecursionlimit()
            sys.setrecursionlimit(max(before, DEEPEST))
            try:
                return json.loads(line)
            except RecursionError:
                return {"event": "noise", "text": f"nested past {DEEPEST} levels: {line[:120]}"}
            finally:
                sys.setrecursionlimit(before)


def _what_ended(stderr: list[str]) -> str:
    """The line of a shim's last words that says what ended it: a Go panic's first (a Rust
    panic's message, as ``panic: ...``); else the
    last line that is not a frame of a stack (indented, as Python's, Ruby's and Node's are),
    which is Python's exception and Ruby's first line."""
    lines = [line for line in stderr if line.strip()]
    rust = next((i for i, line in enumerate(lines) if "panicked at " in line), None)
    if rust is not None:  # [thread 'x' | panic: ]panicked at path:line:column:\nmessage
        said = lines[rust].split("panicked at ", 1)[1]
        if said.endswith(":") and rust + 1 < len(lines):
            said = lines[rust + 1]
        return f"panic: {said.strip()}"
    panic = next((line for line in lines if line.startswith(("panic:", "fatal error:"))), None)
    if panic is not None:  # (Go: a panic, or the runtime's fatal error: a stack overflow, say)
        return panic
    allocation = next((line for line in lines if _OUT_OF_MEMORY.search(line)), None)
    if allocation is not None:  # (Rust's: no panic, an abort)
        return allocation
    # (Ruby names the exception at the end of its message's first line; the message's other
    # lines follow it, unindented: amq-protocol's table errors print the data they read)
    ruby = [line for line in lines if _RUBY.search(line)]
    if ruby:
        return ruby[-1]
    # (Node ends its report of an uncaught error with a line naming its own version)
    unindented = [x for x in lines if not x[:1].isspace() and not x.startswith("Node.js v")]
    # (an error Node prints with its fields, as an object: its first line names it)
    named = [x for x in unindented if _NAMED.match(x)]
    return (named or unindented or lines or [""])[-1]


def _group(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(entry)) == pgid:
                    pids.append(int(entry))
    return pids
