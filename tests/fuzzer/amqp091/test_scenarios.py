"""Scenario files played on real brokers: the runner, its verdicts, profiles, records, the CLI.

The two whole runs play every scenario file on a throwaway RabbitMQ and a throwaway GarageMQ of
their own (the restart scenarios restart it; GarageMQ hangs on two scenarios and is restarted).
The smaller tests change one thing of a real scenario file, so that each kind of check is seen
to fail.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target, throwaway
from amqpfuzz.fuzzer.brokers.profiles import find_profile
from amqpfuzz.fuzzer.engine.conformance import ConformanceRun, ScenarioTarget, failing
from amqpfuzz.fuzzer.engine.events import Emitter, ScenarioJudged
from amqpfuzz.fuzzer.protocols import Outcome
from amqpfuzz.fuzzer.protocols.amqp091 import Connection
from amqpfuzz.fuzzer.protocols.amqp091.scenarios import Player
from amqpfuzz.fuzzer.recording import RecordHandler
from amqpfuzz.fuzzer.records import RecordWriter, read_records
from amqpfuzz.scenarios import SCENARIOS, Scenario, load_all, load_scenario

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

TIMEOUT = 3.0


def play_all(
    targets: list[ScenarioTarget], scenarios: list[Scenario], out: Path, jobs: int = 4
) -> tuple[list[ScenarioJudged], list[dict[str, object]]]:
    """Every verdict of a conformance run, and the records its events became."""
    run_id = secrets.token_hex(6)
    records = RecordHandler(RecordWriter(out, run_id))
    run = ConformanceRun(
        targets,
        scenarios,
        run_id=run_id,
        prefix=f"amqpfuzz-test-{secrets.token_hex(3)}-",
        timeout=TIMEOUT,
        jobs=jobs,
        emit=Emitter(records),
    )
    verdicts = run.run()
    return verdicts, list(read_records(records.close()))


def edited(tmp_path: Path, name: str, old: str, new: str, protocol: str = "0-9-1") -> Scenario:
    """A real scenario file with one piece of text replaced, loaded from a copy."""
    source = (SCENARIOS / protocol / f"{name}.yaml").read_text()
    assert old in source, f"{name} has no {old!r}"
    folder = tmp_path / protocol
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(source.replace(old, new, 1))
    return load_scenario(path)


def scenario(name: str, protocol: str = "0-9-1") -> Scenario:
    return load_scenario(SCENARIOS / protocol / f"{name}.yaml")


def url_target(broker: Broker, profile: str | None = None) -> ScenarioTarget:
    """The broker as a user's URL: amqpfuzz may not restart it."""
    return ScenarioTarget(parse_target(broker.url), profile_name=profile)


# -- every file, both brokers ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rabbitmq", "garagemq"])
def test_every_scenario_file_runs_with_a_verdict_the_profile_explains(
    kind: str, tmp_path: Path
) -> None:
    scenarios = [s for s in load_all() if not s.for_client]  # (a client's: scenarios --client)
    with throwaway(kind) as broker:  # its own broker: scenarios restart it, two hang GarageMQ
        target = ScenarioTarget(parse_target(broker.url), broker=broker)
        verdicts, records = play_all([target], scenarios, tmp_path)
    problems = [f"{v.scenario.name}: {v.verdict} {v.message}" for v in failing(verdicts)]
    assert not problems
    profile = target.profile
    assert profile is not None and profile.product.lower() == kind
    for verdict in verdicts:
        s = verdict.scenario
        if verdict.verdict == "skip":
            assert verdict.played is None and verdict.reason
            assert not s.runnable or s.protocol in target.unsupported, s.name
            continue
        assert verdict.played is not None
        if verdict.verdict == "xfail":  # the check failed, and the profile says why
            assert verdict.played.status == "fail" and verdict.played.line
            deviation = target.deviation(None, rule=s.spec_ref, protocol=s.protocol)
            assert deviation is not None and verdict.reason == deviation.reason
        else:
            assert verdict.verdict == verdict.played.status == "pass", s.name
    ran = {v.scenario.name for v in verdicts if v.scenario.protocol == "0-9-1" and v.played}
    assert ran == {s.name for s in scenarios if s.protocol == "0-9-1" and s.runnable}
    # no deviation of the profiles is stale: each rule they name failed as recorded (the 1.0
    # files, on a RabbitMQ with its 1.0 plugin, by the 1.0 profile), but a race's, which fails
    # now and then
    profiles = {profile, target.profile_for("1.0")} - {None}
    named = [d for p in profiles if p for d in p.deviations if d.rule]
    recorded = {(d.rule, d.protocol) for d in named if not d.sometimes}
    races = {(d.rule, d.protocol) for d in named if d.sometimes}
    xfailed = {(v.scenario.spec_ref, v.scenario.protocol) for v in verdicts if v.verdict == "xfail"}
    assert xfailed - races == recorded
    # one record per scenario, of the contract's scenario kind, the rule as its spec_ref
    assert sorted((r["scenario"], r["verdict"]) for r in records) == sorted(  # type: ignore[type-var]
        (f"{v.scenario.protocol}/{v.scenario.name}", v.verdict) for v in verdicts
    )
    assert all(r["kind"] == "scenario" and r["target"]["product"] for r in records)  # type: ignore[index]
    assert {r["spec_ref"] for r in records} == {s.spec_ref for s in scenarios}
    cells = {(v.scenario.protocol, v.scenario.name): v for v in verdicts}
    minimum = cells[("0-9-1", "queue.declare.minimum-queues")].played
    assert minimum is not None and minimum.notes["count"] == 1000
    # neither speaks 0-10: the file that exchanges protocol headers only is judged, and passes
    assert "0-10" in target.unsupported
    assert cells[("0-10", "connection.start.protocol-name")].verdict == "pass"
    assert cells[("0-10", "message.priority-levels")].verdict == "skip"
    persistence = cells[("0-9-1", "queue.declare.durable.persistence")]
    assert persistence.verdict == "pass"  # the broker really restarted in between
    if kind == "garagemq":  # it stops answering queue.declare: seen, restarted, the run went on
        hang = cells[("0-9-1", "basic.cancel.01")]
        assert hang.played is not None and hang.played.observed.kind == "broker-down"
        assert "restarted" in hang.played.message and hang.played.notes["broker_log"]
        assert all(
            v.scenario.protocol in target.unsupported
            for v in verdicts
            if v.scenario.protocol == "0-9"
        )
    else:  # RabbitMQ answers a 0-9 header with connection.start: the 0-9 files run
        assert set(target.unsupported) == {"0-10"}
        greeting = cells[("0-9-1", "protocol-header.0-9")].played
        assert greeting is not None and "connection.start" in greeting.notes["greeting"]


# -- each check can fail ---------------------------------------------------------------------------


def test_a_reply_that_is_not_the_expected_one_fails_at_its_line(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    wrong = edited(
        tmp_path,
        "queue.declare.passive.passive",
        "close: channel, code: not-found",
        "close: channel, code: resource-locked",
    )
    (verdict,), _ = play_all([url_target(rabbitmq)], [wrong], tmp_path / "out")
    assert verdict.verdict == "fail" and verdict.played is not None
    assert verdict.played.expected.reply_code == 405
    assert verdict.played.observed.kind == "channel-close"
    assert verdict.played.observed.reply_code == 404
    lines = wrong.path.read_text().splitlines()
    assert verdict.played.line == 1 + next(i for i, x in enumerate(lines) if "resource-locked" in x)
    assert "expected channel-close 405" in verdict.message


def test_field_matchers_eventually_and_deliveries_fail_when_the_broker_does_otherwise(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    cases = [
        edited(tmp_path, "queue.bind.unique", "message_count: 1}", "message_count: 2}"),
        edited(tmp_path, "basic.08", "count: 4, bodies: [m1, m2, m3, m4]", "count: 5"),
        edited(
            tmp_path,
            "connection.start.server-properties.required-fields",
            "has_keys: [host,",
            "has_keys: [no-such-key, host,",
        ),
    ]
    # no profile: RabbitMQ's records that it lacks "host", which would make that one an xfail
    verdicts, _ = play_all([url_target(rabbitmq, "none")], cases, tmp_path / "out", jobs=1)
    messages = {v.scenario.name: v.message for v in verdicts}
    assert all(v.verdict == "fail" for v in verdicts), messages
    assert "message_count: 1, expected 2" in messages["queue.bind.unique"]
    assert "expected 5 deliveries" in messages["basic.08"]
    assert "no-such-key" in messages["connection.start.server-properties.required-fields"]


def test_a_deviation_that_no_longer_happens_is_an_xpass_that_fails_the_run(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    stale = tmp_path / "stale.toml"
    stale.write_text(
        'product = "RabbitMQ"\nversions = ["3"]\n[[deviation]]\n'
        'rule = "queue.declare/passive/passive"\nreason = "once refused passive declares"\n'
    )
    target = ScenarioTarget(parse_target(rabbitmq.url), profile_name=str(stale))
    (verdict,), records = play_all(
        [target], [scenario("queue.declare.passive.passive")], tmp_path / "out"
    )
    assert verdict.verdict == "xpass" and failing([verdict]) == [verdict]
    assert "did not happen" in verdict.reason and records[0]["verdict"] == "xpass"


def test_a_url_target_skips_restarts_and_what_a_scenario_made_is_deleted(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    target = url_target(rabbitmq)
    (skipped,), _ = play_all(
        [target], [scenario("queue.declare.durable.persistence")], tmp_path / "out"
    )
    assert skipped.verdict == "skip" and "restart" in skipped.reason
    prefix = f"amqpfuzz-test-{secrets.token_hex(3)}-"
    played = Player(
        scenario("queue.bind.transient-exchange"), target.target, prefix=prefix, timeout=TIMEOUT
    ).play()
    assert played.status == "pass" and not played.notes.get("not_deleted")
    # RabbitMQ 3.10 now and then answers a durable queue's delete before the queue is gone
    # from its tables (CI saw a passive declare right after find it): gone within seconds
    connection = Connection.open(target.target)
    channels = iter(range(1, 100))
    for kind, name in [("queue", f"{prefix}q"), ("exchange", f"{prefix}x")]:
        for _ in range(20):
            number = next(channels)
            assert connection.open_channel(number) is None
            declare = connection.codec.method(
                f"{kind}.declare", number, **{kind: name, "passive": True}
            )
            reply = connection.call(declare)
            if isinstance(reply, Outcome):
                break
            time.sleep(0.25)
        assert isinstance(reply, Outcome) and reply.reply_code == 404, (name, reply)
    connection.close()


def test_a_url_target_that_stops_serving_ends_the_run_for_it(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    target = url_target(fresh_garagemq)  # amqpfuzz may not restart it
    chosen = [scenario("basic.cancel.01"), scenario("queue.declare.passive.passive")]
    verdicts, _ = play_all([target], chosen, tmp_path / "out", jobs=1)
    hang, after = verdicts
    assert hang.played is not None and hang.played.observed.kind == "broker-down"
    assert hang.verdict == "xfail"  # garagemq-0.1 records the hang
    assert after.verdict == "error" and "stopped serving" in after.message


# -- the command ---------------------------------------------------------------------------------


def amqpfuzz(*args: str) -> subprocess.CompletedProcess[str]:
    command = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent))
    assert command is not None
    return subprocess.run(
        [command, *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_list_json_names_every_file_with_its_protocol_reference_and_capabilities() -> None:
    done = amqpfuzz("scenarios", "--list", "--json")
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)
    assert len(items) == len(load_all())
    durable = next(i for i in items if i["spec_ref"] == "queue.declare/durable/persistence")
    assert durable["protocol"] == "0-9-1" and "restart" in durable["capabilities"]
    chosen = json.loads(
        amqpfuzz("scenarios", "--list", "--json", "-k", "reserved and not exchange").stdout
    )
    assert [i["spec_ref"] for i in chosen] == ["queue.declare/queue/reserved"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-k", "no-such-scenario"], "selects no scenario"),
        (["-k", "queue and"], "-k"),
        (["--url", "amqp://guest:secret@127.0.0.1:1/"], "cannot connect"),
        (["--url", "http://example.org/"], "scheme"),
        (["--profile", "no-such-profile"], "no profile"),
    ],
)
def test_bad_input_is_one_line_and_status_2(args: list[str], says: str) -> None:
    done = amqpfuzz("scenarios", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "secret" not in done.stderr
    assert "Traceback" not in done.stderr


def test_the_command_prints_the_table_writes_records_and_fails_only_outside_the_profile(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    done = amqpfuzz(
        "scenarios", "--url", rabbitmq.url, "-k", "queue.declare.queue", "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "queue.declare/queue/reserved" in done.stdout and "xfail" in done.stdout
    assert "guest:guest" not in done.stdout
    (records,) = tmp_path.glob("records-*.jsonl")
    verdicts = {r["spec_ref"]: r["verdict"] for r in read_records(records)}
    assert verdicts["queue.declare/queue/syntax"] == "xfail"  # rabbitmq-3.10 records it
    assert list(tmp_path.glob("run-*.json"))
    without = amqpfuzz(
        "scenarios",
        "--url",
        rabbitmq.url,
        "-k",
        "queue.declare.queue.syntax",
        "--profile",
        "none",
        "--out",
        str(tmp_path),
    )
    assert without.returncode == 1 and "FAIL" in without.stdout
    assert find_profile("rabbitmq-3.10") is not None
