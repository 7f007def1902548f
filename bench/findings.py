"""Distinct failure signatures found over time by a default campaign on a throwaway GarageMQ.

``amqpfuzz run --broker garagemq --profile none`` with every other setting at its default, as a
user runs it, but ``--no-shrink`` (shrinking comes after the budget and changes nothing here),
for 120 s. GarageMQ crashes on several inputs: the campaign restarts it for the whole budget.
The records tell when each distinct failure signature was first found. One JSON line per point
(10, 30, 60 and 120 s of fuzzing, counted from the first record): distinct signatures so far, of
them crashes (liveness, counted when first found), flaky signatures apart (failures whose replays
did not all fail: not counted among the signatures), and the records written so far. A change that
finds less shows as a lower curve; ``$AMQPFUZZ`` may name another tree's command, for the curve
before a change. ``--seed`` picks the campaign's seed (the curve is the median of ``--rounds``
runs with seeds from it); ``--quick`` is a smoke test of 12 s (failures as found, not replayed).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from roundtrip import options

from amqpfuzz.fuzzer.records import read_records

# the command under test: this tree's, unless $AMQPFUZZ names another (an older tree's, to
# draw the curve before a change beside the curve after it)
AMQPFUZZ = shlex.split(
    os.environ.get("AMQPFUZZ")
    or shutil.which("amqpfuzz", path=str(Path(sys.executable).parent))
    or "amqpfuzz"
)
POINTS = (10, 30, 60, 120)


def curve(
    seed: int, seconds: float, points: Sequence[float], *flags: str
) -> list[dict[str, float]]:
    """One campaign's figures at each point."""
    broker = ("--broker", "garagemq", "--profile", "none", "--seed", str(seed), *flags)
    return campaign(broker, seconds, points)


def campaign(
    args: Sequence[str], seconds: float, points: Sequence[float], keep: Path | None = None
) -> list[dict[str, float]]:
    """``amqpfuzz run ARGS`` for ``seconds`` (failures as found, not shrunk): its figures at
    each point (``keep``: its records and reproducers kept there)."""
    with contextlib.ExitStack() as stack:
        out = str(keep) if keep else stack.enter_context(tempfile.TemporaryDirectory())
        done = subprocess.run(
            [*AMQPFUZZ, "run", *args, "--duration", f"{seconds:g}", "--no-shrink", "--out", out],
            capture_output=True, text=True, timeout=seconds + 600, check=False,
            env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        if done.returncode not in (0, 1):
            raise SystemExit(f"findings: the campaign failed ({done.returncode}): {done.stderr}")
        records = [
            r for path in sorted(Path(out).glob("records-*.jsonl")) for r in read_records(path)
        ]
    if not records:
        raise SystemExit("findings: the campaign wrote no records")
    return over_time(records, points)


def over_time(
    records: Sequence[dict[str, object]], points: Sequence[float]
) -> list[dict[str, float]]:
    """What a campaign's records had found at each point (seconds from the first record):
    distinct failure signatures, crashes among them, flaky signatures apart, records."""
    times = [dt.datetime.fromisoformat(str(r["ts"])) for r in records]
    start = min(times)
    first: dict[str, float] = {}
    flaky: dict[str, float] = {}
    for record, at in sorted(zip(records, times, strict=True), key=lambda pair: pair[1]):
        failure = record.get("failure")
        if record.get("verdict") in ("fail", "flaky") and isinstance(failure, dict):
            # a crash is recorded once, at the end, with the time it was first found
            found = record.get("found_s", (at - start).total_seconds())
            kept = first if record["verdict"] == "fail" else flaky
            kept.setdefault(str(failure["signature"]), float(found))  # type: ignore[arg-type]
    flaky = {s: t for s, t in flaky.items() if s not in first}  # (confirmed later: a failure)
    elapsed = [(at - start).total_seconds() for at in times]
    crashes = ("liveness:", "crash:")
    return [
        {
            "at_s": point,
            "signatures": sum(1 for t in first.values() if t <= point),
            "crashes": sum(1 for s, t in first.items() if t <= point and s.startswith(crashes)),
            "flaky": sum(1 for t in flaky.values() if t <= point),
            "records": sum(1 for t in elapsed if t <= point),
        }
        for point in points
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = options(__doc__ or "", argv)
    seed = args.seed
    points = (5.0, 10.0) if args.quick else POINTS
    rounds = 1 if args.quick else max(1, args.rounds)
    # (the smoke test reports failures as found: replaying each crash three times, on a broker
    # restarted each time, is most of what a 12 s campaign on GarageMQ would cost)
    flags = ("--confirm", "0") if args.quick else ()
    runs = [curve(seed + n, max(points) + 1, points, *flags) for n in range(rounds)]
    for index, point in enumerate(points):
        line: dict[str, object] = {
            "bench": "findings",
            "broker": "garagemq",
            "profile": "none",
            "at_s": point,
        }
        for figure in ("signatures", "crashes", "flaky", "records"):
            line[figure] = statistics.median(run[index][figure] for run in runs)
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
