"""Campaigns against real throwaway brokers: verdicts, reproducers, broker-down, cleanup."""

from __future__ import annotations

import collections
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target, throwaway
from amqpfuzz.fuzzer.engine.campaign import Campaign, CampaignSettings, Stats, TargetRun
from amqpfuzz.fuzzer.engine.events import Emitter
from amqpfuzz.fuzzer.engine.replay import replay
from amqpfuzz.fuzzer.recording import RecordHandler
from amqpfuzz.fuzzer.records import RecordWriter, load_reproducer, read_records
from amqpfuzz.spec.amqp091.codec import codec_for
from amqpfuzz.strategies import operators

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process


def campaign(
    broker: Broker, out: Path, profile: str | None = None, **options: Any
) -> tuple[Stats, list[dict[str, Any]]]:
    # valid cases of one method and malformed ones alone, unless a test asks for traffic
    shares = {"traffic_share": 0.0, "state_share": 0.0}
    config = CampaignSettings(
        **{"duration": 60.0, "seed": 1, "timeout": 3.0, "shrink": False, **shares, **options}
    )
    run = TargetRun(parse_target(broker.url), broker=broker, profile_name=profile)
    records = RecordHandler(RecordWriter(out, "t"))
    fuzz = Campaign(
        [run], config, out=out, run_id="t", prefix=f"amqpfuzz-test-{out.name}-",
        emit=Emitter(records),
    )  # fmt: skip
    fuzz.start()
    stats = fuzz.run()
    return stats, list(read_records(records.close()))


def test_valid_campaign_on_rabbitmq_has_no_failures(rabbitmq: Broker, tmp_path: Path) -> None:
    stats, records = campaign(rabbitmq, tmp_path, max_examples=600, valid_share=1.0)
    assert stats.cases == len(records) == 600
    assert stats.failures == 0, stats.signatures
    verdicts = collections.Counter(r["verdict"] for r in records)
    assert set(verdicts) <= {"pass", "xfail"} and verdicts["pass"] > 400
    xfails = [r for r in records if r["verdict"] == "xfail"]
    # each names the profile's entry that matched, and its reason
    assert all(r["deviation"] and r["profile"] == "rabbitmq-3.10" for r in xfails)
    assert all(r["deviation_entry"].split()[0] in ("signature", "rule", "operator") for r in xfails)
    assert {r["mutation"] for r in records} == {None}
    assert len({r["spec_ref"] for r in records}) > 15  # most client methods were sent


def test_every_operator_meets_the_reaction_rabbitmq_is_known_for(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    # (RabbitMQ closes a connection whose login failed only after 3 s: a longer timeout)
    stats, records = campaign(rabbitmq, tmp_path, max_examples=1500, valid_share=0.0, timeout=5.0)
    by_operator = collections.defaultdict(collections.Counter)
    for item in records:
        by_operator[item["mutation"]][item["verdict"]] += 1
        assert item["observed"]["outcome"] in (
            "reply",
            "channel-close",
            "connection-close",
            "socket-close",
            "bad-frame",
        )
    assert set(by_operator) == {op.name for op in operators("0-9-1")}
    # every reaction RabbitMQ 3.10 shows is either the specification's or documented
    assert stats.failures == 0, stats.signatures
    assert sum(c["pass"] for c in by_operator.values()) > sum(
        c["xfail"] for c in by_operator.values()
    )


def test_failures_write_reproducers_that_replay(rabbitmq: Broker, tmp_path: Path) -> None:
    # without the profile, RabbitMQ's known deviations are plain failures
    stats, records = campaign(
        rabbitmq,
        tmp_path,
        profile="none",
        max_examples=300,
        operators=("frame-end", "unknown-class"),
    )
    failed = [r for r in records if r["verdict"] == "fail"]
    assert failed and stats.failures == len(failed)
    item = next(r for r in failed if r["mutation"] == "unknown-class")
    assert (
        item["failure"]["signature"]
        == "reaction:-:unknown-class:connection-close/503->socket-close"
    )
    data = load_reproducer(item["reproducer"])
    assert bytes.fromhex(data["bytes_hex"]) and data["record_id"] == item["record_id"]
    assert "guest:" not in json.dumps(data)
    target = parse_target(rabbitmq.url)
    again = replay(data, target, timeout=3.0)
    assert again.reproduced, again
    # the same file, but bytes the broker handles as the specification says: fixed
    codec = codec_for()
    data["bytes_hex"] = codec.encode(codec.method("basic.qos", 1, prefetch_count=5)).hex()
    data.update(mutation=None, spec_ref="basic.qos")
    data["expected"] = {
        "outcome": "reply",
        "codes": [],
        "responses": ["basic.qos-ok"],
        "or_reply": False,
        "tolerated": [],
    }
    fixed = replay(data, target, timeout=3.0)
    assert fixed.now is None and not fixed.reproduced and fixed.observed.startswith("reply")


def test_a_killed_broker_is_broker_down_with_a_reproducer(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    threading.Timer(1.5, fresh_garagemq.kill).start()
    stats, records = campaign(fresh_garagemq, tmp_path, duration=20.0, restarts=0, valid_share=1.0)
    assert stats.broker_down
    down = [r for r in records if r["failure"] and r["failure"]["oracle"] == "liveness"]
    assert down, collections.Counter(r["observed"]["outcome"] for r in records)
    assert (
        down[-1]["failure"]["signature"].endswith("->broker-down")
        or "broker-down" in down[-1]["failure"]["message"]
    )
    assert Path(down[-1]["reproducer"]).exists()


def test_a_crashing_garagemq_is_restarted_and_the_crash_recorded(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    # GarageMQ dereferences a nil pointer when a string's length runs past the frame
    _, records = campaign(
        fresh_garagemq, tmp_path, max_examples=60, operators=("string-overrun",), restarts=2
    )
    crashes = [r for r in records if r["failure"] and r["failure"]["oracle"] == "liveness"]
    assert crashes, collections.Counter(r["observed"]["outcome"] for r in records)
    assert "panic" in fresh_garagemq.log_tail(200) or "SIGSEGV" in fresh_garagemq.log_tail(200)


def test_garagemq_meets_malformed_frames_as_its_profile_records(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    # every operator, GarageMQ's own profile (chosen by the product it announces): what is not
    # a crash is a deviation the profile names, so a campaign on it reports only what is new
    _, records = campaign(fresh_garagemq, tmp_path, max_examples=300, valid_share=0.0, restarts=30)
    outside = collections.Counter(
        r["failure"]["signature"]
        for r in records
        if r["verdict"] == "fail" and r["failure"]["oracle"] != "liveness"
    )
    assert not outside, outside
    xfails = [r for r in records if r["verdict"] == "xfail"]
    assert len({r["mutation"] for r in xfails}) >= 10 and all(r["deviation"] for r in xfails)


def test_a_crash_is_pinned_on_the_case_that_does_it_alone(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    # valid cases run beside the crashing ones; each suspect of a crash runs again alone on
    # the restarted broker, twice, so a crash is pinned only on a case that does it by itself
    # (GarageMQ also dies of a valid case: a passive, no-wait declare of a missing exchange).
    # Two batches: the first crashes, whatever the order its cases end in; the next steers
    # away from the crash, so its valid cases are judged (one batch of them all left that to
    # how many valid cases ended before the first crash: none, now and then)
    _, records = campaign(
        fresh_garagemq,
        tmp_path,
        profile="none",
        max_examples=100,
        batch=50,
        operators=("string-overrun",),
        valid_share=0.5,
    )
    crashes = [r for r in records if r["failure"] and r["failure"]["oracle"] == "liveness"]
    pinned = [r for r in crashes if ":unattributed:" not in r["failure"]["signature"]]
    assert pinned, collections.Counter(r["failure"]["signature"] for r in crashes)
    assert "string-overrun" in {r["mutation"] for r in pinned}
    # one record per crash, however often it happened, and its reproducer brings a fresh
    # GarageMQ down again
    assert len({r["failure"]["signature"] for r in crashes}) == len(crashes)
    assert all(r["count"] >= 1 for r in crashes)
    for item in pinned:
        with throwaway("garagemq") as other:
            again = replay(load_reproducer(item["reproducer"]), parse_target(other.url))
        assert again.reproduced, (item["failure"]["signature"], again)
    judged = [r for r in records if r["mutation"] is None and r not in crashes]
    assert judged, "no valid case was judged on its own"
