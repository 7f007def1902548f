"""Frames generated per second, beside the round-trip rate of a raw socket to RabbitMQ.

What is measured
    *Generation*: cases drawn per second by Hypothesis from ``amqpfuzz.strategies`` the way a
    campaign draws them (``fuzz_batches``: a batch of cases per test example), with the
    generate phase only (no shrinking, no database), for a valid mix (``valid_share=1``: any
    channel-level client method with its content) and a malformed mix (``valid_share=0``:
    every operator), each case rendered to the bytes the fuzzer sends; for each protocol family
    (0-9-1, 1.0, 0-10: :data:`PROTOCOLS`).

    *Round trip*: synchronous ``basic.qos``/``qos-ok`` round trips per second over one raw
    socket (our codec, TCP_NODELAY) to a throwaway RabbitMQ started by this script: the ceiling
    of any client that waits for each answer.

Both run in the same process, one after the other, best of several rounds each. Output: one
JSON object per line; the ratios of each generation rate to the round-trip rate carry the
target (1.0: generation must never be what limits a worker). ``--quick`` is a smoke test.
Nothing here asserts anything about timing.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from roundtrip import best, options, round_trip_rate

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.brokers import throwaway

BATCH = 50
TARGET = 1.0
PROTOCOLS = ("0-9-1", "1.0", "0-10")


def emit(figure: str, value: float, **extra: Any) -> None:
    print(
        json.dumps(
            {"bench": "strategies", "figure": figure, "value": float(f"{value:.3g}"), **extra}
        ),
        flush=True,
    )


def generation_rate(kind: str, examples: int, protocol: str = "0-9-1") -> float:
    """Cases per second drawn and rendered to bytes, in batches of BATCH per example."""
    share = 1.0 if kind == "valid" else 0.0
    count = 0

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(afs.fuzz_batches(BATCH, protocol=protocol, valid_share=share, frame_max=131072))
    def draw(batch: list[Any]) -> None:
        nonlocal count
        for case in batch:
            bytes(case.render(1))
        count += len(batch)

    start = time.perf_counter()
    draw()
    return count / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> int:
    args = options(__doc__, argv)
    rounds, examples, calls = (1, 2, 200) if args.quick else (max(1, args.rounds), 60, 5000)

    with throwaway("rabbitmq") as broker:
        ceiling = best(lambda: round_trip_rate(broker.url, calls), rounds)
    emit("round_trips_per_s", ceiling, impl="raw-socket", broker="rabbitmq")
    for protocol in PROTOCOLS:
        for kind in ("valid", "malformed"):
            rate = best(lambda k=kind, p=protocol: generation_rate(k, examples, p), rounds)
            emit("cases_generated_per_s", rate, mix=kind, batch=BATCH, protocol=protocol)
            ratio = rate / ceiling
            emit(f"{kind}_generation_vs_round_trip", ratio, target=TARGET, protocol=protocol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
