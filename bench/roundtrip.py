"""The round-trip ceiling the benchmarks compare with: synchronous basic.qos/qos-ok round trips
per second over one raw socket (our codec, TCP_NODELAY) after the handshake. Any client that
waits for each answer is bounded by it. Also what the broker benchmarks share: their options and
best-of-rounds."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.protocols.amqp091 import Connection


def round_trip_rate(url: str, calls: int) -> float:
    """The bare ceiling: after the handshake, only sendall and recv on the socket."""
    connection = Connection.open(parse_target(url))
    try:
        assert connection.open_channel(1) is None
        codec = connection.codec
        qos = codec.encode(codec.method("basic.qos", 1, prefetch_count=0))
        qos_ok = codec.encode(codec.method("basic.qos-ok", 1))
        sock = connection.sock
        sock.settimeout(5.0)
        start = time.perf_counter()
        for _ in range(calls):
            sock.sendall(qos)
            reply = sock.recv(64)
            while len(reply) < len(qos_ok):
                reply += sock.recv(64)
            if reply != qos_ok:
                raise RuntimeError(f"expected basic.qos-ok, got {reply!r}")
        return calls / (time.perf_counter() - start)
    finally:
        connection.close()


def options(doc: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """``--quick`` (a smoke test), ``--rounds`` (each figure is the best of them), ``--seed``."""
    parser = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a very short run (smoke test)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="where a bench draws from seeds")
    return parser.parse_args(argv)


def best(fn: Callable[[], float], rounds: int) -> float:
    return max(fn() for _ in range(rounds))
