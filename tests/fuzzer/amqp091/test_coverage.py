"""The broker's own code coverage on a real RabbitMQ: measured and reported over a campaign,
joined across a restart, steering the campaign (a seed that reached new lines is kept, and a
later campaign replays it), and a user's own node measured as it is (never compiled again)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from amqpfuzz.fuzzer.brokers import parse_target, throwaway
from amqpfuzz.fuzzer.coverage import ErlangCover, plan_for
from amqpfuzz.fuzzer.coverage.plans import Plan
from amqpfuzz.fuzzer.engine.campaign import Campaign, CampaignSettings, TargetRun
from amqpfuzz.fuzzer.engine.corpus import Corpus
from amqpfuzz.fuzzer.engine.events import BrokerRestarted, CorpusSaved, Emitter
from amqpfuzz.fuzzer.recording import RecordHandler
from amqpfuzz.fuzzer.records import RecordWriter, read_records

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
SET = "0-9-1"


def campaign(
    broker: Any, out: Path, events: list[Any], **options: Any
) -> tuple[Campaign, RecordHandler]:
    settings = CampaignSettings(**{"seed": 3, "timeout": 3.0, "shrink": False, **options})
    target = TargetRun(parse_target(broker.url), broker=broker, coverage=broker.probe)
    records = RecordHandler(RecordWriter(out, "t"))
    run = Campaign(
        [target], settings, out=out, run_id=out.name, prefix=f"amqpfuzz-cov-{out.name}-",
        emit=Emitter(records, events.append),
    )  # fmt: skip
    return run, records


def in_set(point: dict[str, Any]) -> int:
    return sum(m["covered"] for m in point["modules"] if m["set"] == SET)


@pytest.fixture(scope="module")
def measured() -> Iterator[Any]:
    """A throwaway RabbitMQ whose 0-9-1 modules are compiled for coverage, shared by the tests
    of this module that campaign on it (a compile costs more than the campaigns)."""
    with throwaway("rabbitmq", coverage="amqp091") as broker:
        yield broker


def test_coverage_is_measured_reported_and_joined_across_a_restart(
    measured: Any, tmp_path: Path
) -> None:
    events: list[Any] = []
    broker = measured
    run, records = campaign(broker, tmp_path / "a", events, duration=16.0)
    run.start()
    threading.Timer(7.0, broker.kill).start()  # a crash mid-run: restarted, instrumented
    run.run()
    records.close()
    after = broker.probe.sample()  # the restarted node's modules are measured again
    assert any(isinstance(e, BrokerRestarted) for e in events)
    assert after.modules.get("rabbit_channel") and after.modules["rabbit_channel"].lines
    points = [p for f in (tmp_path / "a").glob("coverage-*.jsonl") for p in read_records(f)]
    points.sort(key=lambda p: p["seq"])
    assert points and points[-1]["final"] and not any(p["final"] for p in points[:-1])
    # a point at least every 10 s, and what was covered before the restart is never lost
    times = [p["elapsed_s"] for p in points]
    assert all(b - a <= 10.0 for a, b in itertools.pairwise(times))
    counts = [in_set(p) for p in points]
    assert counts == sorted(counts) and counts[-1] > 1000
    final = points[-1]
    relevant = sum(m["relevant"] for m in final["modules"] if m["set"] == SET)
    assert relevant > 3000  # the 0-9-1 set's ten modules
    assert {m for m, lines in final["lines"].items() if lines} >= {
        "rabbit_channel",
        "rabbit_reader",
    }
    assert len(final["lines"]["rabbit_channel"]) == next(
        m["covered"] for m in final["modules"] if m["module"] == "rabbit_channel"
    )
    never = {f for f, _ in final["unreached"]["rabbit_channel"]}
    assert never and "handle_method/3" not in never  # functions never entered, by name/arity


def test_a_seed_that_reached_new_lines_is_kept_and_replayed(measured: Any, tmp_path: Path) -> None:
    broker = measured
    events: list[Any] = []
    first, records = campaign(broker, tmp_path / "first", events, duration=8.0)
    first.start()
    first.run()
    records.close()
    (saved,) = [e for e in events if isinstance(e, CorpusSaved)]
    assert saved.steering["signal"] == "lines" and saved.seeds > 0
    seeds = Corpus.load(Path(saved.directory), 512)
    assert seeds and all(s.gain > 0 for s in seeds)  # each reached lines none before had
    # a later campaign started from the corpus sends its seeds first, as they are
    sent: list[bytes] = []
    again, records = campaign(
        broker, tmp_path / "again", [], duration=None, max_examples=len(seeds) + 40,
        corpus=saved.directory,
    )  # fmt: skip
    runs = again._runs
    again._runs = lambda cases: (sent.extend(c.blob for c in cases), runs(cases))[1]  # type: ignore[method-assign]
    again.start()
    again.run()
    records.close()
    assert sent[: len(seeds)] == [s.blob for s in seeds]
    replayed = [r for r in read_records(records.writer.path)][: len(seeds)]
    assert len(replayed) == len(seeds) and all(r["verdict"] != "error" for r in replayed)


def test_a_users_own_node_is_measured_as_it_is_never_compiled_again(tmp_path: Path) -> None:
    with throwaway("rabbitmq") as broker:  # started without coverage: the user's node
        # a channel whose process runs rabbit_channel's code as loaded when it started
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = connection.channel()
        full = plan_for("rabbitmq", "amqp091")
        assert full is not None
        theirs = Plan("rabbitmq", "amqp091", "erlang-cover", (("theirs", ("rabbit_channel",)),))
        cover = ErlangCover(theirs, broker.node, broker.directory, broker.epmd_port)
        assert cover.prepare() == ["1 modules compiled for coverage"]  # someone else did it
        channel.queue_declare("amqpfuzz-cov-user", exclusive=True)
        before = cover.sample().modules["rabbit_channel"].lines
        out = tmp_path / "out"
        done = subprocess.run(
            [AMQPFUZZ, "run", "--url", broker.url, "--coverage-node", broker.node,
             "--erlang-cookie-file", str(broker.directory / ".erlang.cookie"),
             "--duration", "5", "--no-shrink", "--out", str(out)],
            capture_output=True, text=True, timeout=180,
            env={**os.environ, "ERL_EPMD_PORT": str(broker.epmd_port), "COLUMNS": "200"},
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        compiled = len(full.modules) - 1
        assert "1 already compiled, measured as they are" in done.stdout
        assert f"{compiled} modules compiled for coverage" in done.stdout
        # compiling rabbit_channel again would have purged the code this channel runs
        channel.basic_qos(prefetch_count=3)
        assert channel.is_open
        connection.close()
    final = [p for f in out.glob("coverage-*.jsonl") for p in read_records(f) if p["final"]]
    assert len(final) == 1 and set(final[0]["lines"]["rabbit_channel"]) >= before
    run_file = json.loads(next(out.glob("run-*.json")).read_text())
    assert next(iter(run_file["coverage"].values()))  # the run file says it too
