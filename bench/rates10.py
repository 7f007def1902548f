"""The AMQP 1.0 figures of bench/throughput.py, against RabbitMQ's 1.0 plugin.

* ``link_round_trips_per_s``: the ceiling, over one raw socket on an open session: a link
  attached and detached in one write, both answers awaited, one after the other.
* link-level and connection-level malformed cases, run by the fuzzer's runner (a fresh session
  per case on shared connections; connections of their own prepared ahead).
* ``naive_link_cases_per_s``: python-qpid-proton the obvious way: a new connection per case,
  a link attached on it, the connection closed.
"""

from __future__ import annotations

import random
import time

from proton.utils import BlockingConnection

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.runner import Runner
from amqpfuzz.fuzzer.protocols.amqp10 import Connection
from amqpfuzz.fuzzer.protocols.families import driver_for
from amqpfuzz.spec.amqp10.codec import UInt
from amqpfuzz.strategies import Case, malformed_case_builder

PREFIX = "amqpfuzz-bench-"
# at session scope, answered by RabbitMQ 3.10 without taking its connection down (its answers
# to handle-in-use and to some unknown-disposition cases do: a reset, or a hang, whose timeout
# would be the figure)
LINK_OPERATORS = ["unattached-handle"]
CONNECTION_OPERATORS = ["frame-size-small", "doff-small", "unknown-constructor"]


def draw(operators: list[str], count: int, seed: int = 0) -> list[Case]:
    """Cases read from seeded blobs by the real builder, outside any timing."""
    build = malformed_case_builder(operators, protocol="1.0", prefix=PREFIX)
    randomly = random.Random(seed)
    return [build(randomly.randbytes(512)) for _ in range(count)]


def link_round_trip_rate(url: str, count: int) -> float:
    """Links attached and detached one after the other on one session, each awaited."""
    connection = Connection.open(parse_target(url))
    try:
        assert connection.open_session(1) is None
        codec = connection.codec
        source = codec.composite("source", address=f"{PREFIX}ceiling")
        attach = codec.composite(
            "attach", name="ceiling", handle=UInt(0), role=True, source=source,
            target=codec.composite("target"),
        )  # fmt: skip
        link = codec.frame(attach, 1) + codec.frame(
            codec.composite("detach", handle=UInt(0), closed=True), 1
        )
        start = time.perf_counter()
        for _ in range(count):
            connection.send(link)
            for name in ("attach", "detach"):
                reply = connection.wait(1, (name,), 5.0)
                if getattr(reply, "name", None) != name:
                    raise RuntimeError(f"expected {name}, got {reply}")
        return count / (time.perf_counter() - start)
    finally:
        connection.close()
        driver_for("1.0").delete(parse_target(url), [("node", f"{PREFIX}ceiling")], 5.0)


def runner_rate(url: str, cases: list[Case]) -> float:
    """Cases a second through the runner, in batches of 100, as a campaign sends them."""
    runner = Runner(parse_target(url), protocol="1.0", prefix=PREFIX, timeout=5.0).start()
    try:
        runner.run(cases[:20])  # warm: sessions begun ahead and spare connections ready
        start = time.perf_counter()
        for i in range(0, len(cases), 100):
            results = runner.run(cases[i : i + 100])
            assert all(r.outcome.kind != "timeout" for r in results), "the broker hung"
        return len(cases) / (time.perf_counter() - start)
    finally:
        runner.close()
        runner.cleanup()


def naive_link_rate(url: str, count: int) -> float:
    """A new python-qpid-proton connection per case, a link opened and closed on it."""
    target = parse_target(url)
    address = f"amqp://{target.user}:{target.password}@{target.host}:{target.port}"
    start = time.perf_counter()
    for _ in range(count):
        connection = BlockingConnection(address, timeout=5)
        connection.create_sender(f"{PREFIX}naive")  # the link goes with the connection (a
        connection.close()  # closed link's detach RabbitMQ 3.10 answers as only detached)
    rate = count / (time.perf_counter() - start)
    driver_for("1.0").delete(target, [("node", f"{PREFIX}naive")], 5.0)
    return rate


__all__ = [
    "CONNECTION_OPERATORS",
    "LINK_OPERATORS",
    "draw",
    "link_round_trip_rate",
    "naive_link_rate",
    "runner_rate",
]
