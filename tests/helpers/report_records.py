"""Hand-made record sets, written by the real RecordWriter from real record() dicts; only the
time stamp is set by hand, so that a test can say which night a record belongs to."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from amqpfuzz.fuzzer.records import RecordWriter, record

RABBIT = {
    "label": "rabbitmq",
    "url": "amqp://localhost/",
    "product": "RabbitMQ",
    "version": "3.10.8",
    "protocol": "0-9-1",
}
GARAGE = {
    "label": "garagemq",
    "url": "amqp://localhost:5673/",
    "product": "GarageMQ",
    "version": "0.1",
    "protocol": "0-9-1",
}
CLOSE_501 = {"outcome": "connection-close", "reply_code": 501, "class_id": 0, "method_id": 0}
REPLY = {"outcome": "reply", "reply_code": None, "class_id": 50, "method_id": 11}


def at(night: str, seconds: float = 0.0) -> str:
    """An ISO time stamp ``seconds`` after 01:00 UTC of ``night`` (YYYY-MM-DD)."""
    moment = dt.datetime.fromisoformat(f"{night}T01:00:00+00:00") + dt.timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds")


def case(
    *,
    run_id: str,
    worker: str,
    ts: str,
    target: dict[str, str] = RABBIT,
    spec_ref: str = "queue.declare",
    verdict: str = "pass",
    signature: str | None = None,
    reproducer: str | None = None,
    kind: str = "fuzz",
    mutation: str | None = None,
    duration_s: float = 0.5,
    seq: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    failure = (
        {"oracle": "reply-code", "signature": signature, "message": f"{signature} happened"}
        if signature
        else None
    )
    item = record(
        run_id=run_id,
        worker=worker,
        seq=seq,
        seed="1234",
        target=target,
        kind=kind,
        spec_ref=spec_ref,
        mutation=mutation,
        expected=CLOSE_501 if mutation else REPLY,
        observed=REPLY if verdict == "fail" else (CLOSE_501 if mutation else REPLY),
        verdict=verdict,
        duration_s=duration_s,
        failure=failure,
        reproducer=reproducer,
        **extra,
    )
    item["ts"] = ts
    return item


def write(directory: Path, run_id: str, worker: str, items: Iterable[dict[str, Any]]) -> Path:
    """One worker's finished file; returns its path."""
    with RecordWriter(directory, run_id, worker) as writer:
        for item in items:
            writer.write(item)
    return writer.path


NIGHT = "2026-01-10"


def first_night(directory: Path) -> None:
    """Two runs on one night: run r1 against RabbitMQ from two machines, run r2 against
    GarageMQ with its totals file. The same defect (sig-A) fails on both machines and both
    brokers; the right answers are spelled out in test_tables.py."""
    m1 = [
        case(run_id="r1", worker="m1-11", ts=at(NIGHT, 0), duration_s=0.5),
        case(
            run_id="r1",
            worker="m1-11",
            ts=at(NIGHT, 1),
            spec_ref="queue.declare/queue/reserved",
            verdict="fail",
            signature="sig-A",
            reproducer="repro/a-big.case",
            reproducer_size=900,
            mutation="frame-end",
        ),
        case(
            run_id="r1",
            worker="m1-11",
            ts=at(NIGHT, 2),
            spec_ref="basic.publish",
            mutation="frame-size",
        ),
        case(
            run_id="r1",
            worker="m1-11",
            ts=at(NIGHT, 3),
            spec_ref="channel.open/state",
            verdict="skip",
        ),
    ]
    m2 = [
        case(run_id="r1", worker="m2-22", ts=at(NIGHT, 0), duration_s=1.0),
        case(
            run_id="r1",
            worker="m2-22",
            ts=at(NIGHT, 4),
            spec_ref="queue.declare/queue/reserved",
            verdict="fail",
            signature="sig-A",
            reproducer="repro/a-small.case",
            reproducer_size=120,
        ),
        case(
            run_id="r1", worker="m2-22", ts=at(NIGHT, 5), spec_ref="basic.publish", verdict="error"
        ),
    ]
    m3 = [
        case(
            run_id="r2",
            worker="m3-33",
            ts=at(NIGHT, 10),
            target=GARAGE,
            kind="scenario",
            spec_ref="channel.open/state",
            scenario="channel-open-state.yaml",
            observed_reply="channel.open-ok",
        ),
        case(
            run_id="r2",
            worker="m3-33",
            ts=at(NIGHT, 11),
            target=GARAGE,
            kind="differential",
            spec_ref="exchange.declare",
            verdict="fail",
            signature="sig-D",
            reproducer="repro/d.case",
            alone="garagemq",
        ),
        case(
            run_id="r2",
            worker="m3-33",
            ts=at(NIGHT, 12),
            target=GARAGE,
            spec_ref="queue.declare/queue/reserved",
            verdict="fail",
            signature="sig-A",
            reproducer="repro/a-garage.case",
            reproducer_size=500,
        ),
        case(
            run_id="r2",
            worker="m3-33",
            ts=at(NIGHT, 13),
            target=GARAGE,
            kind="differential",
            spec_ref="exchange.declare",
            verdict="xfail",
            deviation="GarageMQ takes any exchange type",
            deviation_entry="rule exchange.declare/type",
            profile="garagemq-0.1",
        ),
    ]
    write(directory / "machine1", "r1", "m1-11", m1)
    write(directory / "machine2", "r1", "m2-22", m2)
    write(directory / "machine3", "r2", "m3-33", m3)
    (directory / "machine3" / "run-r2.json").write_text(json.dumps(RUN_R2))


# run r2's totals file: what there was to exercise, named (a small world, worked out by hand)
EXERCISABLE = {
    "methods": ["basic.publish", "channel.open", "exchange.declare", "queue.bind",
                "queue.declare", "queue.purge"],
    "rules": ["basic.publish/mandatory", "channel.open/state", "queue.declare/queue/reserved"],
    "scenario_files": ["channel-open-state.yaml", "queue-bind.yaml"],
    "mutation_operators": ["frame-end", "frame-size", "frame-type", "unknown-class"],
}  # fmt: skip
RUN_R2 = {
    "run_id": "r2",
    "protocol": "0-9-1",
    "totals": {dimension: len(names) for dimension, names in EXERCISABLE.items()},
    "exercisable": EXERCISABLE,
}


NIGHTS = ("2026-03-01", "2026-03-02", "2026-03-03")
# Which signatures fail on which target, night by night (GarageMQ is not run on night 2).
FAILING = {
    NIGHTS[0]: {"rabbitmq": ("sig-A", "sig-B"), "garagemq": ("sig-G",)},
    NIGHTS[1]: {"rabbitmq": ("sig-B", "sig-C")},
    NIGHTS[2]: {"rabbitmq": ("sig-A", "sig-C"), "garagemq": ("sig-G",)},
}


def night_of(directory: Path, night: str) -> None:
    """One night's files: per target a passing case, then one failure per failing signature
    (its reproducer named after signature and night)."""
    for label, failing in FAILING[night].items():
        target = RABBIT if label == "rabbitmq" else GARAGE
        run_id, worker = f"{night}-{label}", f"{label}-host-1"
        items = [case(run_id=run_id, worker=worker, ts=at(night, 0), target=target)]
        items += [
            case(
                run_id=run_id,
                worker=worker,
                ts=at(night, 60 * (i + 1)),
                target=target,
                spec_ref="basic.publish/mandatory",
                verdict="fail",
                signature=sig,
                reproducer=f"repro/{sig}-{night}.case",
                mutation="frame-end",
            )
            for i, sig in enumerate(failing)
        ]
        write(directory, run_id, worker, items)
