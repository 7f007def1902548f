"""Campaigns on a broker that crashes and hangs: GarageMQ, whose channel code dereferences nil on
many malformed frames (and on some valid declares), and which never answers tx.select. The
campaign runs its whole budget across the crashes, records each distinct crash once with a
reproducer that brings a fresh GarageMQ down again, and records hangs."""

from __future__ import annotations

import collections
import contextlib
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
        "run", "--broker", "garagemq", "--duration", "15", "--profile", "none", "--seed", "1",
        "--timeout", "2", "--confirm", "1", "--no-shrink", "--out", str(tmp_path),
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


def _deadlocked(broker: Broker) -> None:
    """Leave GarageMQ's queues locked, as an earlier case of a run can: a queue.delete of an
    exclusive queue that a consumer reads and a binding holds is never answered, and from then
    on no queue.delete is, on any connection."""
    import threading

    import pika

    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    channel = connection.channel()
    channel.exchange_declare("amqpfuzz-lock-x", "topic")
    channel.queue_declare("amqpfuzz-lock-q", exclusive=True)
    channel.basic_consume("amqpfuzz-lock-q", lambda *_: None, consumer_tag="amqpfuzz-lock-c")
    channel.queue_bind("amqpfuzz-lock-q", "amqpfuzz-lock-x", "#")

    def delete() -> None:
        with contextlib.suppress(pika.exceptions.AMQPError):  # (ended by the broker's restart)
            channel.queue_delete("amqpfuzz-lock-q")

    stuck = threading.Thread(target=delete, daemon=True)
    stuck.start()
    stuck.join(1.0)
    assert stuck.is_alive(), "GarageMQ answered the queue.delete that locks its queues"


def test_a_hang_an_earlier_case_left_is_confirmed_on_the_broker_restarted(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    """A case that hangs only because the broker's state is stuck (GarageMQ's queues locked by
    an earlier case) is not the case's failure: with ``fresh_hangs`` its replays meet the
    broker restarted, as ``amqpfuzz replay FILE`` meets a fresh one, and it is flaky, 0/3.
    Without it, the replays meet the stuck broker and call it a failure, 3/3."""
    from amqpfuzz.fuzzer.engine.campaign import Campaign
    from amqpfuzz.fuzzer.engine.events import CaseJudged, Emitter
    from amqpfuzz.fuzzer.engine.state import CampaignSettings, TargetRun

    case = find(valid_cases(["queue.delete"], prefix="amqpfuzz-lock-"), lambda c: True)

    def judged(fresh: bool, out: Path) -> tuple[CaseJudged, int | None]:
        _deadlocked(fresh_garagemq)
        run = TargetRun(parse_target(fresh_garagemq.url), broker=fresh_garagemq)
        config = CampaignSettings(duration=None, timeout=1.0, shrink=False, fresh_hangs=fresh)
        campaign = Campaign([run], config, out=out, run_id="r", prefix="amqpfuzz-lock-",
                            emit=Emitter())  # fmt: skip
        campaign.start()
        before = fresh_garagemq.process.pid if fresh_garagemq.process else None
        (event,) = [e for e in campaign.run_batch([case]) if isinstance(e, CaseJudged)]
        campaign.finish()
        after = fresh_garagemq.process.pid if fresh_garagemq.process else None
        return event, (after if after != before else None)

    stuck, restarted = judged(False, tmp_path / "stuck")
    assert stuck.verdict == "fail", stuck.extra
    assert stuck.extra["confirmation"]["rate"] == "3/3" and restarted is None
    fresh_garagemq.recover()  # (the locks end with the process)
    fresh, restarted = judged(True, tmp_path / "fresh")
    assert fresh.failure is not None and fresh.failure["oracle"] == "hang"
    assert fresh.verdict == "flaky", fresh.extra
    assert fresh.extra["confirmation"]["rate"] == "0/3" and restarted is not None
    assert load_reproducer(str(fresh.reproducer))["verdict"] == "flaky"
