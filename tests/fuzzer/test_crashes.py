"""Campaigns on a broker that crashes and hangs: GarageMQ, whose channel code dereferences nil on
many malformed frames (and on some valid declares), and which never answers tx.select. The
campaign runs its whole budget across the crashes, records each distinct crash once with a
reproducer that brings a fresh GarageMQ down again, and records hangs."""

from __future__ import annotations

import collections
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find

from amqpfuzz.fuzzer.brokers import Broker, parse_target, throwaway
from amqpfuzz.fuzzer.engine.replay import write_case
from amqpfuzz.fuzzer.engine.runner import Runner
from amqpfuzz.fuzzer.records import load_reproducer, read_records
from amqpfuzz.strategies import valid_cases

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"


def amqpfuzz(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    wide = {**os.environ, "COLUMNS": "400"}
    return subprocess.run(
        [AMQPFUZZ, *args], capture_output=True, text=True, timeout=timeout, check=False, env=wide
    )


def records_in(out: Path) -> list[dict[str, Any]]:
    return [r for path in sorted(out.glob("records-*.jsonl")) for r in read_records(path)]


def replays_on_a_fresh_garagemq(reproducer: str) -> subprocess.CompletedProcess[str]:
    with throwaway("garagemq") as broker:
        return amqpfuzz("replay", reproducer, "--url", broker.url, "--timeout", "2")


def test_a_campaign_runs_its_whole_budget_across_many_crashes(tmp_path: Path) -> None:
    done = amqpfuzz(
        "run", "--broker", "garagemq", "--duration", "25", "--profile", "none", "--seed", "1",
        "--timeout", "2", "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "broker down:" not in done.stdout  # it was restarted every time, not given up on
    records = records_in(tmp_path)
    crashes = [r for r in records if r["failure"] and r["failure"]["oracle"] == "liveness"]
    signatures = collections.Counter(r["failure"]["signature"] for r in crashes)
    assert len(signatures) >= 3, signatures  # distinct crashes, not the first one again
    assert set(signatures.values()) == {1}, signatures  # each recorded once
    assert all(r["count"] >= 1 for r in crashes)  # with how often it happened
    row = next(line for line in done.stdout.splitlines() if "throwaway garagemq" in line)
    restarts = int([cell.strip() for cell in row.split("│") if cell.strip()][-1])
    assert restarts >= 10, done.stdout
    # the summary lists them as they were found, each with the command that replays it
    for signature in signatures:
        assert signature in done.stdout
    # every crash reproducer the campaign saw bring its broker down again brings a fresh
    # GarageMQ down (a few, for time); one that did not (a race) says so in its message
    seen_again = [
        r for r in crashes if "did not bring it down again" not in r["failure"]["message"]
    ]
    assert seen_again, crashes
    for item in sorted(seen_again, key=lambda r: -r["count"])[:3]:
        again = replays_on_a_fresh_garagemq(item["reproducer"])
        assert again.returncode == 1, again.stdout + again.stderr
        assert f"still failing: {item['failure']['signature']}" in again.stdout


def test_a_crash_on_a_url_target_ends_the_run_with_traffic_that_replays(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    """No restart is possible: the crash cannot be pinned, so its reproducer is all the
    traffic then in flight, which brings another GarageMQ down."""
    done = amqpfuzz(
        "run", "--url", fresh_garagemq.url, "--operators", "string-overrun", "--valid-share",
        "0", "--duration", "30", "--profile", "none", "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    down = [line for line in done.stdout.splitlines() if line.startswith("broker down:")]
    assert len(down) == 1 and "stopped accepting connections" in down[0], done.stdout
    crashes = [r for r in records_in(tmp_path) if r["failure"] and r["verdict"] == "fail"]
    (crash,) = [r for r in crashes if r["failure"]["oracle"] == "liveness"]
    assert crash["failure"]["signature"] == "liveness:-:unattributed:alive->broker-down"
    data = load_reproducer(crash["reproducer"])
    assert data["kind"] == "traffic" and data["traffic"]
    again = replays_on_a_fresh_garagemq(crash["reproducer"])
    assert again.returncode == 1, again.stdout + again.stderr
    assert "still failing" in again.stdout and "stopped accepting" in again.stdout


class Waits:
    """Counts the waits for the network that ran for most of a timeout with nothing coming:
    by the time each was given, not by the clock."""

    def __init__(self, timeout: float) -> None:
        self.timeout, self.full = timeout, 0

    def __call__(self, original: Any) -> Any:
        def select(r: Any, w: Any, x: Any, timeout: float | None = None) -> Any:
            ready = original(r, w, x, timeout)
            if timeout is not None and timeout >= self.timeout / 2 and not any(ready):
                self.full += 1
            return ready

        return select


def test_hangs_are_findings_and_cost_one_timeout_not_one_each(
    garagemq: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GarageMQ answers the probe but never tx.select: forty such cases, sent together on the
    shared connections, wait for their tx.select-ok until one deadline, not one each. Each is
    a hang, with a reproducer that hangs GarageMQ again."""
    cases = [
        find(valid_cases(["tx.select"], prefix="amqpfuzz-hang-"), lambda c: True) for _ in range(40)
    ]
    runner = Runner(parse_target(garagemq.url), timeout=1.0, prefix="amqpfuzz-hang-").start()
    waits = Waits(runner.timeout)
    monkeypatch.setattr(select, "select", waits(select.select))
    try:
        results = runner.run(cases)
    finally:
        monkeypatch.undo()
        runner.close()
    signatures = {r.failure.signature for r in results if r.failure is not None}
    assert signatures == {"hang:tx.select:valid:reply->timeout"}, signatures
    assert all(r.outcome.kind == "timeout" for r in results)
    assert waits.full <= 2, f"{waits.full} timeouts waited out for 40 cases: one each?"
    path = write_case(
        tmp_path, results[0], target=parse_target(garagemq.url), seed="0",
        protocol="0-9-1", frame_max=runner.frame_max, record_id="hang", prefix=runner.prefix,
    )  # fmt: skip
    again = amqpfuzz("replay", str(path), "--url", garagemq.url, "--timeout", "1")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "still failing: hang:tx.select:valid:reply->timeout" in again.stdout
