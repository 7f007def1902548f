"""Records aggregated per second by the nightly Spark job, at two input sizes.

What is measured
    The whole job, ``amqpfuzz.reports.run(spark, inputs, output)``: listing, reading and parsing
    every line, de-duplication, all seven tables written as Parquet, and the HTML page. Input is
    synthetic records written by the real ``RecordWriter`` (``record()`` for each), spread over
    several files as several workers would leave them: ``--records`` (1,000,000 by default)
    in one directory, then the same again plus as many more from a second run in another.
    About one case in ten fails, with a few dozen signatures; a fifth of them are differential.

How
    Records are generated into a temporary directory before any timing. One local Spark
    session (``local[2]``, as the command line builds it) serves every measurement; a warm-up
    job on 50,000 records runs first so that the JVM's start-up and compilation are not charged
    to the first size. Each time is the best of ``--rounds`` (2) ``time.perf_counter`` around
    ``run()`` into an empty output, the sizes taking turns round by round, so that a slow spell
    of a shared machine hits both alike and the best round filters it out. (A nightly
    ``amqpfuzz report`` starts its own JVM and compiles as it goes: expect a first run on a
    fresh JVM to take some 10 to 20 s longer.)

The floor
    Beside each job, in the same round, the time Spark takes only to read the same record files
    with the same schema (:data:`amqpfuzz.reports.schema.RECORD`), parse every field and count
    the lines: no job can beat it, and on a shared machine whose speed swings from run to run
    the job's time against it is the figure that holds still.

Output
    One JSON object per line on stdout: ``seconds`` and ``records_per_s`` for each size (with
    the target of 50,000 records per second), ``floor_seconds`` and ``floor_ratio`` (the job's
    time over the floor's; target at the smaller size: at most 3), then ``time_ratio`` of the
    larger size to the smaller (target: at most 2.3). ``--quick`` runs 20,000 and 40,000 records (a smoke test of
    the script, not a measurement). Nothing here asserts anything about timing.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from amqpfuzz.fuzzer.records import RecordWriter, record
from amqpfuzz.fuzzer.spark import local_session
from amqpfuzz.reports import run
from amqpfuzz.reports.schema import RECORD

TARGET_RATE = 50_000
WARM_UP = 50_000
TARGET_RATIO = 2.3
TARGET_FLOOR_RATIO = 3.0  # the whole job against the floor, at the smaller size
WORKERS = 4  # files per run

SPEC_REFS = (
    "connection.tune/frame-max/minimum",
    "channel.open/state",
    "exchange.declare/type/typed",
    "queue.declare/queue/reserved",
    "queue.bind",
    "basic.publish/mandatory/unroutable",
    "basic.consume",
    "basic.ack",
    "tx.select",
    "confirm.select",
)
MUTATIONS = (None, None, "frame-end", "frame-size", "unknown-method", "table-type", "bad-channel")
TARGETS = (
    {"label": "rabbitmq-3.10", "product": "RabbitMQ", "version": "3.10.8"},
    {"label": "garagemq", "product": "GarageMQ", "version": "0.1"},
)


def _emit(figure: str, value: float, **extra: Any) -> None:
    print(json.dumps({"bench": "report", "figure": figure, "value": value, **extra}), flush=True)


def generate(directory: Path, run_id: str, count: int, seed: int) -> None:
    """``count`` records of run ``run_id`` in WORKERS files under ``directory``."""
    rng = random.Random(seed)
    per_worker = -(-count // WORKERS)
    written = 0
    for w in range(WORKERS):
        target = {**TARGETS[w % len(TARGETS)], "url": "amqp://localhost:5672/", "protocol": "0-9-1"}
        with RecordWriter(directory, run_id, f"bench{w}-{seed}") as writer:
            for _ in range(min(per_worker, count - written)):
                failing = rng.random() < 0.1
                signature = f"sig-{rng.randrange(40):02d}" if failing else None
                writer.write(
                    record(
                        run_id=run_id,
                        worker=writer.worker,
                        seq=writer.next_seq(),
                        seed=str(seed),
                        target=target,
                        kind="differential" if rng.random() < 0.2 else "fuzz",
                        spec_ref=rng.choice(SPEC_REFS),
                        mutation=rng.choice(MUTATIONS),
                        expected={
                            "outcome": "connection-close",
                            "reply_code": 501,
                            "class_id": 10,
                            "method_id": 50,
                        },
                        observed={
                            "outcome": "reply" if failing else "connection-close",
                            "reply_code": None if failing else 501,
                            "class_id": 10,
                            "method_id": 50,
                        },
                        verdict="fail" if failing else "pass",
                        duration_s=rng.uniform(0.0005, 0.004),
                        failure={
                            "oracle": "reply-code",
                            "signature": signature,
                            "message": "expected connection.close 501 frame-error",
                        }
                        if failing
                        else None,
                        reproducer=f"repro/{signature}-{writer.seq}.amqpcase" if failing else None,
                    )
                )
                written += 1


def floor(spark: SparkSession, inputs: list[str]) -> float:
    """Seconds Spark takes only to read the same record files with the record schema, parse
    every field of every line and count them: what no report job can be faster than."""
    files = sorted(str(p) for d in inputs for p in Path(d).glob("records-*.jsonl"))
    start = time.perf_counter()
    frame = spark.read.schema(RECORD).json(files)
    # every field parsed: the largest hash of all of them (a bare count(), or a count of a
    # struct, which is never null, lets Spark skip the parsing)
    frame.agg(F.max(F.xxhash64(*frame.columns))).collect()
    return time.perf_counter() - start


def measure(spark: SparkSession, inputs: list[str], scratch: Path) -> float:
    output = scratch / "out"
    shutil.rmtree(output, ignore_errors=True)
    start = time.perf_counter()
    run(spark, inputs, str(output))
    return time.perf_counter() - start


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> None:
    """The script; a caller that already has a session (the smoke test) may lend it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="20k and 40k records (smoke test)")
    parser.add_argument("--records", type=int, default=1_000_000, help="the smaller size")
    parser.add_argument("--rounds", type=int, default=2, help="best of this many runs per size")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else max(args.rounds, 1)
    size = 20_000 if args.quick else args.records
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-bench-report-") as tmp:
        scratch = Path(tmp)
        first, second, warm = scratch / "a", scratch / "b", scratch / "warm"
        generate(first, "bench-a", size, seed=1)
        generate(second, "bench-b", size, seed=2)
        if not args.quick:
            generate(warm, "bench-warm", WARM_UP, seed=3)
        session = spark or local_session()
        try:
            if not args.quick:
                measure(session, [str(warm)], scratch)
            sizes = {size: [str(first)], 2 * size: [str(first), str(second)]}
            seconds = {records: float("inf") for records in sizes}
            floors = {records: float("inf") for records in sizes}
            for _ in range(rounds):
                for records, inputs in sizes.items():
                    seconds[records] = min(seconds[records], measure(session, inputs, scratch))
                    floors[records] = min(floors[records], floor(session, inputs))
            for records in sizes:
                _emit("seconds", round(seconds[records], 3), records=records, rounds=rounds)
                _emit(
                    "records_per_s",
                    round(records / seconds[records]),
                    records=records,
                    target=TARGET_RATE,
                )
            for records in sizes:
                _emit("floor_seconds", round(floors[records], 3), records=records, rounds=rounds)
                target = TARGET_FLOOR_RATIO if records == size else None
                ratio = seconds[records] / floors[records]
                _emit("floor_ratio", round(ratio, 3), records=records, target=target)
            ratio = seconds[2 * size] / seconds[size]
            _emit("time_ratio", round(ratio, 3), records=[size, 2 * size], target=TARGET_RATIO)
        finally:
            if spark is None:
                session.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
