"""Brokers that outlive the command that started them: ``amqpfuzz broker start|list|stop``.

A started broker is noted in a state file (its kind, ports, process and data directory) so that
a later command can list it and stop it, its private epmd included.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from pathlib import Path

from .broker import Broker
from .guardian import running as process_running
from .processes import BROKERS

__all__ = ["detach", "detached", "state_directory", "stop_detached"]


def state_directory() -> Path:
    """Where ``amqpfuzz broker`` keeps track of the brokers it started."""
    base = os.environ.get("AMQPFUZZ_STATE") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "amqpfuzz"
    )
    return Path(base) / "brokers"


def detach(broker: Broker) -> Path:
    """Note a started broker so that a later command can list and stop it."""
    assert broker.process is not None
    directory = state_directory()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{broker.kind}-{broker.port}.json"
    state = {
        "kind": broker.kind,
        "port": broker.port,
        "pid": broker.process.pid,
        "directory": str(broker.directory),
        "url": broker.url,
        "tls_url": broker.tls_url,
        "ca_file": str(broker.ca_file) if broker.ca_file else None,
        "log": str(broker.log_path),
        "ports": {name: getattr(broker, name) for name in broker.more_ports},
    }
    path.write_text(json.dumps(state, indent=2) + "\n")
    broker._stopping = True  # the watcher of this process must not call its exit a crash
    return path


def detached() -> list[dict[str, object]]:
    """The brokers ``amqpfuzz broker start`` left running (and whether they still run)."""
    found = []
    for path in sorted(state_directory().glob("*.json")):
        try:
            state = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        state["name"] = path.stem
        state["running"] = process_running(int(state["pid"]))
        found.append(state)
    return found


def stop_detached(name: str) -> bool:
    """Stop a broker ``amqpfuzz broker start`` left running and remove its data; whether one
    by that name was known."""
    path = state_directory() / f"{name}.json"
    if not path.exists():
        return False
    state = json.loads(path.read_text())
    broker = BROKERS[state["kind"]](int(state["port"]), Path(state["directory"]))
    for name, port in dict(state.get("ports", {})).items():  # its epmd's, to stop that one
        setattr(broker, name, int(port))
    pid = int(state["pid"])
    if process_running(pid):

        class _Adopted:  # just enough of a Popen to stop a process we did not start here
            def __init__(self, pid: int) -> None:
                self.pid = pid

            def poll(self) -> int | None:
                return None if process_running(self.pid) else 0

        broker.shutdown(_Adopted(pid))  # type: ignore[arg-type]
        deadline = time.monotonic() + 30
        while process_running(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if process_running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    broker.cleanup()
    shutil.rmtree(broker.directory, ignore_errors=True)
    path.unlink()
    return True
