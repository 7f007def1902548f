"""The guardian of a throwaway broker: it ends the broker when its owner ends, SIGKILL included.

Run by path, in a session of its own (a signal to the owner's process group does not reach it),
with the standard library only. Its standard input is a pipe whose other end only the owner
holds: when the owner releases the broker it writes ``done`` and closes the pipe, and the
guardian exits; when the owner dies without that, the pipe closes all the same, and the guardian
kills the broker's process group (whatever process the owner last started: ``owner.json`` in the
broker's directory says), runs the broker's own cleanup command (RabbitMQ's private epmd), and
removes the directory.

``python guardian.py DIRECTORY``
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

OWNER = "owner.json"


def running(pid: int) -> bool:
    """True while process ``pid`` exists and has not ended (a zombie has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _works_in(pid: int, directory: Path) -> bool:
    """Whether process ``pid`` is still the broker (it runs in its directory): a pid the
    system gave to another process since is left alone."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")).resolve() == directory.resolve()
    except OSError:
        return False


def reap(directory: Path) -> None:
    """End what ``directory``'s broker left: its process group, its helpers, its files."""
    try:
        state = json.loads((directory / OWNER).read_text())
    except (OSError, ValueError):
        state = {}
    pid = state.get("pid")
    if isinstance(pid, int) and running(pid) and _works_in(pid, directory):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    cleanup = state.get("cleanup")
    if isinstance(cleanup, list) and cleanup:
        clean_up([str(c) for c in cleanup])
    shutil.rmtree(directory, ignore_errors=True)


def clean_up(command: list[str]) -> None:
    """Run the broker's cleanup command. RabbitMQ's epmd refuses to stop while it still lists
    the node ("not allowed"), which it forgets a moment after the node's end: tried again for
    a while."""
    for _ in range(40):
        try:
            done = subprocess.run(command, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return
        if b"not allowed" not in done.stdout + done.stderr:
            return
        time.sleep(0.25)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the owner's Ctrl-C is the owner's
    directory = Path(argv[1])
    told = sys.stdin.buffer.read()  # until the owner closes its end, or dies
    if told.startswith(b"done"):
        return 0
    reap(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
