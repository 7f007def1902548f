"""The Spark path's overhead: a local[2] Spark campaign beside a plain run, on one machine.

What is measured, in one run on the same two cores, one after the other:

* *plain*: ``amqpfuzz run --broker rabbitmq --workers 2`` (one throwaway RabbitMQ, two worker
  processes);
* *spark*: ``amqpfuzz run --spark local[2] --broker rabbitmq --broker rabbitmq`` (two shards,
  each on a throwaway RabbitMQ its task starts).

Both with the same ``--duration``, ``--no-shrink``, ``--profile none``. The figure for each is
cases judged (the records written) per second of wall-clock time, start to end, as a user waits
for it: broker start, Spark's start and its writing of the records included. Their ratio is the
Spark path's overhead (target: at least 0.8). ``--quick`` is a smoke test of a few seconds.
Nothing here asserts anything about timing.
"""

from __future__ import annotations

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

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
TARGET = 0.8


def emit(figure: str, value: float, **extra: Any) -> None:
    line = {"bench": "spark_campaign", "figure": figure, "value": round(value, 2), **extra}
    print(json.dumps(line), flush=True)


def cases_per_s(args: list[str], seed: int) -> float:
    """Records written per second of wall-clock time by ``amqpfuzz run ARGS``."""
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-bench-") as out:
        started = time.perf_counter()
        done = subprocess.run(
            [AMQPFUZZ, "run", *args, "--seed", str(seed), "--no-shrink", "--profile", "none",
             "--out", out],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise SystemExit(f"amqpfuzz run {' '.join(args)} failed: {done.stderr.strip()}")
        files = [
            *Path(out).glob("records-*.jsonl"),
            *Path(out).glob("spark-*/output=records/*.txt"),
        ]
        cases = sum(len(f.read_text().splitlines()) for f in files)
    return cases / elapsed


def main(argv: Sequence[str] | None = None) -> int:
    args = options(__doc__, argv)
    duration = "5" if args.quick else "60"
    plain = cases_per_s(["--broker", "rabbitmq", "--workers", "2", "--duration", duration],
                        args.seed)  # fmt: skip
    emit("cases_per_s", plain, impl="plain", workers=2, duration_s=float(duration))
    spark = cases_per_s(
        ["--spark", "local[2]", "--broker", "rabbitmq", "--broker", "rabbitmq", "--duration",
         duration], args.seed,
    )  # fmt: skip
    emit("cases_per_s", spark, impl="spark", shards=2, duration_s=float(duration))
    emit("spark_vs_plain", spark / plain, target=TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
