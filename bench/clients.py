"""Client cases per second: a long-lived reconnecting shim beside a fresh process per case.

For a Python, a C and a Go shim (pika, rabbitmq-c, amqp091-go) in one run: the same scripts
(the same seed, the default mix), served for ``--seconds`` each way. The long-lived shim is the
campaign's (``run_clients``); the fresh one is the same shim started with ``--once`` for every
case and judged the same way. One JSON line per figure: ``cases_per_s`` per client and way,
then ``long_lived_vs_fresh`` per client (target >= 5). ``--quick`` is a smoke test (a few
seconds, pika only).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amqpfuzz.fuzzer.clients.campaign import (
    ClientSettings,
    play_one,
    run_clients,
    serving_of,
)
from amqpfuzz.fuzzer.clients.process import ShimProcess
from amqpfuzz.fuzzer.clients.targets import ClientTarget

CLIENTS = ("pika", "rabbitmq-c", "amqp091-go")
TARGET = 5.0


def emit(**line: Any) -> None:
    print(json.dumps({"bench": "clients", **line}), flush=True)


def long_lived(name: str, seconds: float, seed: int) -> float:
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-bench-clients-") as out:
        settings = ClientSettings(duration=seconds, seed=seed, out=Path(out), shrink=False)
        (outcome,) = run_clients([ClientTarget.bundled(name)], settings)
    return outcome.cases / outcome.elapsed


def fresh(name: str, seconds: float, seed: int) -> float:
    """A new shim process for every case (``--once``), the same scripts and judgement."""
    serving = serving_of("0-9-1")
    size, build = serving.scripts("0-9-1", None, ClientSettings().valid_share)
    client = ClientTarget.bundled(name, once=True)
    peer = serving.peer("0-9-1")
    rnd = random.Random(f"{seed}:{name}")
    cases, started = 0, time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            shim = ShimProcess(client.argv(peer.url))
            try:
                play_one(peer, shim, client, build(rnd.randbytes(size)), 5.0)
            finally:
                shim.stop()
            cases += 1
    finally:
        peer.close()
    return cases / (time.monotonic() - started)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test of a few seconds")
    parser.add_argument("--seconds", type=float, default=60.0, help="per client and way")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    clients = ("pika",) if args.quick else CLIENTS
    seconds = 4.0 if args.quick else args.seconds
    for name in clients:
        lived = long_lived(name, seconds, args.seed)
        once = fresh(name, seconds, args.seed)
        emit(client=name, figure="cases_per_s", way="long-lived", value=round(lived, 2))
        emit(client=name, figure="cases_per_s", way="fresh-process", value=round(once, 2))
        ratio = lived / once if once else float("inf")
        emit(client=name, figure="long_lived_vs_fresh", value=round(ratio, 2), target=TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
