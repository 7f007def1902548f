"""Fuzz cases per second against a throwaway RabbitMQ, beside the ceiling and a naive pika loop.

What is measured (one run, one broker, the same machine):

* ``round_trips_per_s``: the ceiling, synchronous round trips over one raw socket.
* ``channel_cases_per_s``: malformed cases whose reaction is a channel exception (the operators
  that break a rule with a soft on-failure code: a queue that does not exist, a reserved name,
  a commit outside a transaction, an unknown delivery tag), run by the fuzzer's runner: one
  reused connection, a fresh channel per case, a probe behind each, several in flight.
* ``connection_cases_per_s``: malformed cases whose reaction is a connection exception (broken
  frames), on spare connections prepared ahead, several at once.
* ``campaign_cases_per_s``: a whole campaign with the default mix (valid cases, walks of valid
  traffic, every operator), as ``amqpfuzz run`` runs one: Hypothesis draws the batches, every
  case is judged and recorded, from the same seed every time; ``campaign_frames_per_s`` the
  frames it put on the wire meanwhile (every byte the runner sent: channel openings, cases,
  probes, closes), beside ``round_trips_per_s``, since a default case is often a walk of many
  methods and cases per second alone no longer say how busy the wire is.
* ``broker_channel_lifecycles_per_s``: what the broker itself can do for such cases: channel.open
  and a method that closes the channel, pipelined as deep as it goes (no probes, no checks).
* ``naive_channel_cases_per_s`` / ``naive_connection_cases_per_s``: the same work with pika, the
  obvious way: a new channel per channel-level case, a new connection per connection-level case.

The AMQP 1.0 figures (``amqp10_*``, bench/rates10.py) come from the same broker's 1.0 plugin:
the ceiling (a link attached and detached, awaited, over one raw socket), link-level and
connection-level malformed cases through the runner, and python-qpid-proton's naive loop.

Cases are drawn before the clock starts (bench/strategies.py measures generation). Each figure is
the best of a few rounds. One JSON line per figure; the ratios carry their targets.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import rates10
from hypothesis.control import BuildContext
from hypothesis.internal.conjecture.data import ConjectureData
from roundtrip import best, options, round_trip_rate

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.brokers import parse_target, throwaway
from amqpfuzz.fuzzer.engine.campaign import Campaign, CampaignSettings, TargetRun
from amqpfuzz.fuzzer.engine.events import Emitter
from amqpfuzz.fuzzer.engine.runner import Runner
from amqpfuzz.fuzzer.protocols.amqp091 import Connection
from amqpfuzz.fuzzer.recording import RecordHandler
from amqpfuzz.fuzzer.records import RecordWriter
from amqpfuzz.spec.amqp091.codec import codec_for
from amqpfuzz.strategies import Case

CHANNEL_OPERATORS = ["missing-entity", "reserved-name", "not-transacted", "unknown-delivery-tag"]
CONNECTION_OPERATORS = [
    "frame-end",
    "unknown-frame-type",
    "heartbeat-channel",
    "header-alone",
    "body-alone",
]


def emit(figure: str, value: float, **extra: Any) -> None:
    record = {"bench": "throughput", "figure": figure, "value": round(value, 2), **extra}
    print(json.dumps(record), flush=True)


def draw(operators: list[str], frame_max: int, count: int) -> list[Case]:
    """Cases drawn from the real strategy, outside any timing."""
    strategy = afs.malformed_cases(operators, frame_max=frame_max, prefix="amqpfuzz-bench-")
    rnd = random.Random(0)
    cases: list[Case] = []
    while len(cases) < count:
        data = ConjectureData(random=rnd, prefix=(), max_choices=100)
        with BuildContext(data, wrapped_test=None):
            cases.append(data.draw(strategy))
    return cases


def runner_rate(url: str, cases: list[Case]) -> float:
    runner = Runner(parse_target(url), prefix="amqpfuzz-bench-", timeout=5.0).start()
    try:
        runner.run(cases[:20])  # warm: channels and spare connections ready, as in a campaign
        start = time.perf_counter()
        for i in range(0, len(cases), 50):
            results = runner.run(cases[i : i + 50])
            assert all(r.outcome.kind != "timeout" for r in results), "the broker hung"
        return len(cases) / (time.perf_counter() - start)
    finally:
        runner.close()
        runner.cleanup()


def frames_in(data: bytes) -> int:
    """The whole 0-9-1 frames ``data`` holds, read from its start (a frame a case broke ends
    the count: what follows it cannot be told apart)."""
    count, at = 0, 0
    while at + 8 <= len(data):
        if data[at : at + 4] == b"AMQP":  # a protocol header, not a frame
            at += 8
            continue
        size = int.from_bytes(data[at + 3 : at + 7], "big")
        end = at + 7 + size
        if end >= len(data) or data[end] != 0xCE:
            break
        count, at = count + 1, end + 1
    return count


def campaign_rate(url: str, seconds: float) -> tuple[float, float]:
    """Cases and frames per second of a default campaign, records written, no shrinking."""
    frames = [0]
    running = Runner.run

    def counted(self: Runner, *args: Any, **kwargs: Any) -> Any:
        results = running(self, *args, **kwargs)
        frames[0] += sum(frames_in(sent.data) for sent in self.traffic)
        return results

    with tempfile.TemporaryDirectory(prefix="amqpfuzz-bench-") as out, _patched(counted):
        records = RecordHandler(RecordWriter(out, "bench"))
        settings = CampaignSettings(duration=seconds, seed=7, shrink=False)
        run = TargetRun(parse_target(url))
        campaign = Campaign(
            [run], settings, out=Path(out), run_id="bench", prefix="amqpfuzz-bench-",
            emit=Emitter(records),
        )  # fmt: skip
        campaign.start()
        stats = campaign.run()
        records.close()
    return stats.cases / stats.elapsed, frames[0] / stats.elapsed


@contextlib.contextmanager
def _patched(run: Any) -> Any:
    """The runner's ``run`` replaced while the block runs (the bench counts what it sends)."""
    original = Runner.run
    Runner.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        Runner.run = original  # type: ignore[method-assign]


def channel_lifecycle_rate(url: str, count: int) -> float:
    """What the broker itself can do: channel.open then a method that closes the channel
    with 404, pipelined as deep as it goes on two connections, no probes, no checks. The
    ceiling for channel-level cases, whose every case costs the broker a channel."""
    codec = codec_for()
    connections = [Connection.open(parse_target(url)) for _ in range(2)]
    per = count // len(connections)
    start = time.perf_counter()
    for connection in connections:
        frames = []
        for channel in range(1, per + 1):
            frames.append(codec.method("channel.open", channel))
            name = f"amqpfuzz-bench-missing-{channel}"
            frames.append(codec.method("queue.declare", channel, queue=name, passive=True))
        connection.send(codec.encode_all(frames))
    for connection in connections:
        for channel in range(1, per + 1):
            connection.wait(channel, ("-",), 10.0)  # returns at the channel's close
    rate = per * len(connections) / (time.perf_counter() - start)
    for connection in connections:
        connection.close()
    return rate


def naive_channel_rate(url: str, count: int) -> float:
    """A new pika channel per case; each case a passive declare of a queue that does not
    exist (404, the channel closes)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        start = time.perf_counter()
        for i in range(count):
            channel = connection.channel()
            with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):  # the reaction
                channel.queue_declare(f"amqpfuzz-bench-missing-{i}", passive=True)
        return count / (time.perf_counter() - start)
    finally:
        connection.close()


def naive_connection_rate(url: str, count: int) -> float:
    """A new pika connection per case; each case a frame with a broken end octet written to
    pika's socket, then pika reads the broker's connection.close."""
    bad = bytes.fromhex("01000100000005003c000a00ff")  # basic.qos cut short, end octet 0xff
    parameters = pika.URLParameters(url)
    start = time.perf_counter()
    for _ in range(count):
        connection = pika.BlockingConnection(parameters)
        connection._impl._transport._sock.sendall(bad)  # what pika itself would never send
        try:
            while connection.is_open:
                connection.process_data_events(time_limit=1)
        except pika.exceptions.AMQPConnectionError:
            pass  # the reaction this case is after
    return count / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> int:
    args = options(__doc__, argv)
    rounds, cases, naive = (1, 100, 30) if args.quick else (max(1, args.rounds), 2000, 300)
    seconds = 3.0 if args.quick else 20.0

    with throwaway("rabbitmq") as broker:
        url = broker.url
        ceiling = best(lambda: round_trip_rate(url, 20 * naive), rounds)
        lifecycles = best(lambda: channel_lifecycle_rate(url, 2 * naive), rounds)
        channel_cases = draw(CHANNEL_OPERATORS, 131072, cases)
        connection_cases = draw(CONNECTION_OPERATORS, 131072, cases // 2)
        channel = best(lambda: runner_rate(url, channel_cases), rounds)
        connection = best(lambda: runner_rate(url, connection_cases), rounds)
        naive_channel = best(lambda: naive_channel_rate(url, naive), rounds)
        naive_connection = best(lambda: naive_connection_rate(url, naive // 3), rounds)
        campaigns = [campaign_rate(url, seconds) for _ in range(rounds)]
        campaign = max(cases for cases, _ in campaigns)
        frames = max(frames for _, frames in campaigns)
        # AMQP 1.0, on the same broker (its 1.0 plugin serves the same port)
        link_ceiling = best(lambda: rates10.link_round_trip_rate(url, 20 * naive), rounds)
        link_cases = rates10.draw(rates10.LINK_OPERATORS, cases)
        link = best(lambda: rates10.runner_rate(url, link_cases), rounds)
        cases10 = rates10.draw(rates10.CONNECTION_OPERATORS, cases // 2)
        connection10 = best(lambda: rates10.runner_rate(url, cases10), rounds)
        naive_link = best(lambda: rates10.naive_link_rate(url, naive // 3), rounds)

    emit("round_trips_per_s", ceiling, impl="raw-socket")
    emit("broker_channel_lifecycles_per_s", lifecycles, impl="raw-socket")
    emit("channel_cases_per_s", channel, impl="amqpfuzz")
    emit("connection_cases_per_s", connection, impl="amqpfuzz")
    emit("campaign_cases_per_s", campaign, impl="amqpfuzz", mix="default")
    emit("campaign_frames_per_s", frames, impl="amqpfuzz", mix="default")
    emit("naive_channel_cases_per_s", naive_channel, impl="pika")
    emit("naive_connection_cases_per_s", naive_connection, impl="pika")
    emit("channel_cases_vs_round_trip", channel / ceiling, target=0.3)
    emit("channel_cases_vs_broker_lifecycles", channel / lifecycles)
    emit("channel_cases_vs_naive_pika", channel / naive_channel, target=1.5)
    emit("connection_cases_vs_naive_pika", connection / naive_connection, target=2.0)
    # issue 12's target: three times the default campaign's rate when it was filed (282 cases
    # a second beside 2,900 channel-level ones, a ratio of 0.097)
    emit("campaign_cases_vs_channel_cases", campaign / channel, target=0.29)
    emit("campaign_frames_vs_round_trip", frames / ceiling)
    emit("amqp10_link_round_trips_per_s", link_ceiling, impl="raw-socket")
    emit("amqp10_link_cases_per_s", link, impl="amqpfuzz")
    emit("amqp10_connection_cases_per_s", connection10, impl="amqpfuzz")
    emit("amqp10_naive_link_cases_per_s", naive_link, impl="python-qpid-proton")
    emit("amqp10_link_cases_vs_round_trip", link / link_ceiling, target=0.3)
    emit("amqp10_link_cases_vs_naive_proton", link / naive_link, target=2.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
