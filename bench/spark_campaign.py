"""The Spark path's overhead: Spark campaigns beside a plain run, on one machine.

What is measured, in one run on the same two cores, one after the other:

* *plain*: ``amqpfuzz run --broker rabbitmq --workers 2`` (one throwaway RabbitMQ, two worker
  processes);
* *spark*: ``amqpfuzz run --spark local[2] --broker rabbitmq --broker rabbitmq`` (two shards,
  each on a throwaway RabbitMQ its task starts), over a classic session;
* *connect*: the same over Spark Connect, ``--spark sc://…``, on a ``local[2]`` Connect server
  started before the run (as a cluster's is up before anyone submits to it; its start is not
  counted).

All with the same ``--duration``, ``--no-shrink``, ``--profile none`` and ``--no-coverage`` (the
brokers' coverage compile is the same work on either path, and is not what is measured here). The figure for each is
cases judged (the records written) per second of wall-clock time, start to end, as a user waits
for it: broker start, Spark's start and its writing of the records included. Their ratio is the
Spark path's overhead (target: at least 0.8 of the plain run, for either session). Beside it, for each, the cases per second while
fuzzing (records between the first's and the last's time stamps), which leaves the starts out:
what is left of the difference is two brokers sharing the cores where the plain run has one.
``--quick`` is a smoke test of a few seconds.
Nothing here asserts anything about timing.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roundtrip import options

from amqpfuzz.fuzzer.brokers import free_port
from amqpfuzz.fuzzer.spark import CAMPAIGN_CONF, connect_server

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
TARGET = 0.8


def emit(figure: str, value: float, **extra: Any) -> None:
    line = {"bench": "spark_campaign", "figure": figure, "value": round(value, 2), **extra}
    print(json.dumps(line), flush=True)


def cases_per_s(args: list[str], seed: int) -> tuple[float, float]:
    """Records written per second of wall-clock time by ``amqpfuzz run ARGS``; and per second
    of fuzzing (from the first record to the last)."""
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-bench-") as out:
        started = time.perf_counter()
        done = subprocess.run(
            [AMQPFUZZ, "run", *args, "--seed", str(seed), "--no-shrink", "--profile", "none",
             "--no-coverage", "--out", out],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise SystemExit(f"amqpfuzz run {' '.join(args)} failed: {done.stderr.strip()}")
        files = [
            *Path(out).glob("records-*.jsonl"),
            *Path(out).glob("spark-*/output=records/*.txt"),
        ]
        stamps = sorted(
            dt.datetime.fromisoformat(json.loads(line)["ts"])
            for f in files
            for line in f.read_text().splitlines()
        )
    fuzzing = (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else 0.0
    return len(stamps) / elapsed, len(stamps) / fuzzing if fuzzing > 0 else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    args = options(__doc__, argv)
    duration = "2" if args.quick else "60"
    plain, plain_fuzzing = cases_per_s(
        ["--broker", "rabbitmq", "--workers", "2", "--duration", duration], args.seed
    )
    emit("cases_per_s", plain, impl="plain", workers=2, duration_s=float(duration))
    emit("fuzzing_cases_per_s", plain_fuzzing, impl="plain", workers=2)
    spark, spark_fuzzing = cases_per_s(
        ["--spark", "local[2]", "--broker", "rabbitmq", "--broker", "rabbitmq", "--duration",
         duration], args.seed,
    )  # fmt: skip
    emit("cases_per_s", spark, impl="spark", shards=2, duration_s=float(duration))
    emit("fuzzing_cases_per_s", spark_fuzzing, impl="spark", shards=2)
    emit("spark_vs_plain", spark / plain, target=TARGET)
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-bench-") as logs:
        log = Path(logs) / "connect.log"
        with connect_server(free_port(), conf=CAMPAIGN_CONF, log=log) as server:
            connect, connect_fuzzing = cases_per_s(
                ["--spark", server.url, "--broker", "rabbitmq", "--broker", "rabbitmq",
                 "--duration", duration], args.seed,
            )  # fmt: skip
    emit("cases_per_s", connect, impl="connect", shards=2, duration_s=float(duration))
    emit("fuzzing_cases_per_s", connect_fuzzing, impl="connect", shards=2)
    emit("connect_vs_plain", connect / plain, target=TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
