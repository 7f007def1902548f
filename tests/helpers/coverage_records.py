"""Hand-made coverage records (the broker's own code covered, as campaigns write them beside
their records), made by the real ``coverage_record()`` and written by the real RecordWriter;
only the time stamp is set by hand, so that a test can say which night a point belongs to.

The nights are those of :mod:`tests.helpers.report_records`: ``first_night`` measures run r1's
RabbitMQ from both its machines, ``night_of`` the RabbitMQ run of each of the three nights."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from amqpfuzz.fuzzer.records import RecordWriter, coverage_record
from tests.helpers.report_records import NIGHT, NIGHTS, RABBIT, at

# the modules measured: (module, its set or None (for steering only), relevant lines)
MODULES = (
    ("rabbit_reader", "0-9-1", 10),
    ("rabbit_channel", "0-9-1", 8),
    ("rabbit_router", None, 4),
)
Unreached = Mapping[str, Sequence[tuple[str, int]]]


def point(
    *,
    run_id: str,
    worker: str,
    seq: int,
    ts: str,
    elapsed_s: float,
    covered: Mapping[str, int] | None = None,
    target: Mapping[str, str] = RABBIT,
    lines: Mapping[str, list[int]] | None = None,
    unreached: Unreached | None = None,
) -> dict[str, Any]:
    """A point of a run's coverage (a final one with ``lines``, each module's count theirs)."""
    if lines is not None:
        covered = {m: len(ls) for m, ls in lines.items()}
    counts = covered or {}
    modules = [
        {"module": m, "set": s, "covered": counts.get(m, 0), "relevant": r} for m, s, r in MODULES
    ]
    item = coverage_record(
        run_id=run_id,
        worker=worker,
        seq=seq,
        seed="1234",
        target=target,
        how="erlang-cover",
        elapsed_s=elapsed_s,
        modules=modules,
        lines=lines,
        unreached={m: [list(f) for f in fs] for m, fs in (unreached or {}).items()},
    )
    item["ts"] = ts
    return item


def write(directory: Path, run_id: str, worker: str, items: Iterable[dict[str, Any]]) -> Path:
    """One worker's finished coverage file; returns its path."""
    with RecordWriter(directory, run_id, worker, stem="coverage") as writer:
        for item in items:
            writer.write(item)
    return writer.path


def first_night(directory: Path) -> None:
    """Run r1's RabbitMQ measured on machines m1 and m2 (report_records.first_night's): the
    night's lines are the union of the two final records', the functions never reached those
    both list; the answers are spelled out in test_report_broker.py."""
    r1 = {"run_id": "r1"}
    m1 = [
        point(**r1, worker="m1-11", seq=1, ts=at(NIGHT, 0), elapsed_s=0.0,
              covered={"rabbit_reader": 2}),
        point(**r1, worker="m1-11", seq=2, ts=at(NIGHT, 5), elapsed_s=5.0,
              covered={"rabbit_reader": 4, "rabbit_channel": 2, "rabbit_router": 1}),
        point(**r1, worker="m1-11", seq=3, ts=at(NIGHT, 6), elapsed_s=6.0,
              lines={"rabbit_reader": [1, 2, 3, 4], "rabbit_channel": [1, 2],
                     "rabbit_router": [1]},
              unreached={"rabbit_reader": [("auth_fail/5", 3), ("become/2", 2)],
                         "rabbit_channel": [("a/1", 2), ("b/2", 1)]}),
    ]  # fmt: skip
    m2 = [
        point(**r1, worker="m2-22", seq=1, ts=at(NIGHT, 0), elapsed_s=0.0,
              covered={"rabbit_reader": 3}),
        # rabbit_router: no line entered (no key), rabbit_channel: none (an empty list)
        point(**r1, worker="m2-22", seq=2, ts=at(NIGHT, 4), elapsed_s=4.0,
              lines={"rabbit_reader": [3, 4, 5, 6, 7], "rabbit_channel": []},
              unreached={"rabbit_reader": [("auth_fail/5", 3)],
                         "rabbit_channel": [("a/1", 2), ("c/3", 4)],
                         "rabbit_router": [("route/2", 4)]}),
    ]  # fmt: skip
    write(directory / "machine1", "r1", "m1-11", m1)
    write(directory / "machine2", "r1", "m2-22", m2)


def night_of(directory: Path, night: str) -> None:
    """The night's RabbitMQ run (report_records.night_of's) measured by its one worker: each
    night covers one line more of rabbit_reader than the night before."""
    more = NIGHTS.index(night)
    run_id, worker = f"{night}-rabbitmq", "rabbitmq-host-1"
    reader = list(range(1, 4 + more))
    items = [
        point(run_id=run_id, worker=worker, seq=1, ts=at(night, 0), elapsed_s=0.0,
              covered={"rabbit_reader": 1}),
        point(run_id=run_id, worker=worker, seq=2, ts=at(night, 5), elapsed_s=5.0,
              covered={"rabbit_reader": 2, "rabbit_channel": 1}),
        point(run_id=run_id, worker=worker, seq=3, ts=at(night, 9), elapsed_s=9.0,
              lines={"rabbit_reader": reader, "rabbit_channel": [1, 2], "rabbit_router": [1]},
              unreached={"rabbit_reader": [("auth_fail/5", 3)], "rabbit_channel": [("a/1", 2)]}),
    ]  # fmt: skip
    write(directory, run_id, worker, items)
