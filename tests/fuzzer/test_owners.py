"""Nothing amqpfuzz starts outlives the process that started it, SIGKILL included: throwaway
brokers (their process group, RabbitMQ's private epmd, their directory) and worker processes;
and what a machine crash left is swept by the next start."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import process_running
from amqpfuzz.fuzzer.brokers.processes import sweep

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
TEMP = Path(tempfile.gettempdir())


def owned_by(pid: int, timeout: float = 60) -> tuple[Path, dict[str, object]]:
    """The throwaway broker directory whose owner is ``pid`` (once its broker has started)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in TEMP.glob("amqpfuzz-*-*/owner.json"):
            try:
                state = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if state.get("owner") == pid and state.get("pid"):
                return path.parent, state
        time.sleep(0.2)
    raise AssertionError(f"no throwaway broker owned by {pid} within {timeout} s")


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(check: object, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return bool(check())  # type: ignore[operator]


def assert_nothing_left(directory: Path, state: dict[str, object], others: list[int]) -> None:
    pid = int(state["pid"])  # type: ignore[call-overload]
    ports = [int(c) for c in (state.get("cleanup") or [])[2:3]]  # type: ignore[index]
    assert gone(lambda: not group_alive(pid)), f"the broker's processes ({pid}) live on"
    assert gone(lambda: not any(process_running(p) for p in others)), "a worker lives on"
    assert gone(lambda: not any(listening(p) for p in ports)), "the broker's epmd lives on"
    assert gone(lambda: not directory.exists()), f"{directory} is still there"


def test_a_sigkilled_run_leaves_no_broker_epmd_or_worker(tmp_path: Path) -> None:
    run = subprocess.Popen(
        [AMQPFUZZ, "run", "--broker", "rabbitmq", "--workers", "2", "--duration", "120",
         "--out", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        directory, state = owned_by(run.pid)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("records-*.part")) and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = [p for p in children(run.pid) if p not in (state["pid"], state["guardian"])]
        assert len(workers) >= 2, workers  # two workers (and multiprocessing's tracker)
        run.kill()  # SIGKILL, to the command alone
        run.wait(10)
        assert_nothing_left(directory, state, workers)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["scenarios", "pytest"])
def test_a_sigkilled_scenario_run_or_pytest_session_leaves_no_broker(
    how: str, tmp_path: Path
) -> None:
    if how == "scenarios":
        command = [AMQPFUZZ, "scenarios", "--broker", "garagemq", "--out", str(tmp_path)]
    else:
        (tmp_path / "conftest.py").write_text(
            "from hypothesis import settings\n"
            "settings.register_profile('long', max_examples=100000, database=None)\n"
        )
        command = [
            sys.executable, "-m", "pytest", "--amqp-broker", "garagemq", "--amqp-fuzz",
            "--hypothesis-profile", "long", "-k", "basic.qos", "-p", "no:cacheprovider",
            f"--amqp-results={tmp_path / 'results'}", str(tmp_path),
        ]  # fmt: skip
    run = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        directory, state = owned_by(run.pid)
        time.sleep(1)  # at work on it
        assert run.poll() is None, "it ended before it could be killed"
        run.kill()
        run.wait(10)
        assert_nothing_left(directory, state, [])
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)


OWNER = """
import sys, time
from amqpfuzz.fuzzer.brokers import throwaway

with throwaway("garagemq") as broker:
    print(broker.directory, flush=True)
    time.sleep(600)
"""


def test_what_a_dead_owner_and_guardian_left_is_swept(tmp_path: Path) -> None:
    """As after a machine crash: the owner and its guardian gone, the broker left running.
    (Its directory is in the test's own temporary directory: a throwaway started by a test on
    another xdist worker sweeps the real one, and would remove it before it is looked at.)"""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    try:
        assert owner.stdout is not None
        directory = Path(owner.stdout.readline().strip())
        state = json.loads((directory / "owner.json").read_text())
        os.kill(state["guardian"], signal.SIGKILL)
        owner.kill()
        owner.wait(10)
        assert gone(lambda: not process_running(state["guardian"]))
        assert process_running(state["pid"]) and directory.exists()  # left behind
        # beside it, a broker of an earlier boot (only its directory is left) and one started
        # to outlive its command on purpose (not guarded)
        earlier = Path(tempfile.mkdtemp(prefix="amqpfuzz-garagemq-", dir=tmp_path))
        (earlier / "owner.json").write_text(json.dumps({"guarded": True, "boot": "earlier"}))
        detached = Path(tempfile.mkdtemp(prefix="amqpfuzz-garagemq-", dir=tmp_path))
        (detached / "owner.json").write_text(json.dumps({"guarded": False, "boot": "earlier"}))
        sweep()  # the real temporary directory, as every throwaway start does: not ours
        assert directory.exists()
        assert set(sweep(tmp_path)) == {directory, earlier}
        assert_nothing_left(directory, state, [])
        assert detached.exists() and not earlier.exists()
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
