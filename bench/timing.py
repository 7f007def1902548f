"""What the codec benchmarks share: rates of functions measured side by side, and their output.

Each rate is the best of several rounds; a round repeats a function for at least ``min_time``
seconds with the garbage collector off, and the implementations take turns round by round, so
that a slow spell of a shared machine falls on all of them rather than on whichever happened to
be running.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_rates", "emitter"]


def _round(fn: Callable[[], object], repeat: int) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()


def _calibrate(fn: Callable[[], object], min_time: float) -> int:
    """How many repetitions of ``fn`` make a round last at least ``min_time``."""
    repeat = 1
    while (elapsed := _round(fn, repeat)) < min_time:
        repeat = max(repeat * 2, int(repeat * min_time / max(elapsed, 1e-9) * 1.1))
    return repeat


def best_rates(
    fns: dict[str, Callable[[], object]], rounds: int, min_time: float, per_call: int = 1
) -> dict[str, float]:
    """Units per second of each function (``per_call`` units a call): the best of ``rounds``
    rounds of at least ``min_time`` seconds, the functions taking turns."""
    repeats = {impl: _calibrate(fn, min_time) for impl, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for impl, fn in fns.items():
            best[impl] = min(best[impl], _round(fn, repeats[impl]))
    return {impl: per_call * repeats[impl] / best[impl] for impl in fns}


def emitter(bench: str) -> Callable[..., None]:
    """Prints one JSON line per figure: ``emit(figure, value, impl=..., target=...)``."""

    def emit(
        figure: str, value: float, *, impl: str | None = None, target: float | None = None
    ) -> None:
        record: dict[str, Any] = {"bench": bench, "figure": figure}
        if impl is not None:
            record["impl"] = impl
        record["value"] = value
        if target is not None:
            record["target"] = target
        print(json.dumps(record), flush=True)

    return emit
