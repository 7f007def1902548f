"""How much of RabbitMQ's own code a campaign reaches over time, with feedback and without.

Measured as a broker developer would, with Erlang's ``cover`` in a throwaway RabbitMQ (the lines
``amqpfuzz run`` writes to its ``coverage-*.jsonl``, a point every five seconds), in two module
sets fixed here, whatever wider sets the tool measures:

* ``0-9-1``: rabbit_reader, rabbit_channel, rabbit_binary_parser, rabbit_framing_amqp_0_9_1,
  rabbit_command_assembler, rabbit_binary_generator, rabbit_basic, rabbit_exchange,
  rabbit_amqqueue, rabbit_access_control (3,856 relevant lines in RabbitMQ 3.10.8);
* ``1.0``: the rabbitmq_amqp1_0 plugin's reader, session process, session, incoming and outgoing
  link, message, link util and util, with amqp10_binary_parser and amqp10_framing (996).

Per protocol, at 30, 60, 120 and 300 s: a default campaign (``amqpfuzz run --protocol P``, each
on a throwaway broker of its own, ``--no-shrink``) with feedback and the same campaign with
``--no-feedback``, the same seeds (``--rounds`` of them, counting up from ``--seed``; each
figure the median); beside them a naive loop of valid operations through the real client
(pika; python-qpid-proton for 1.0) and a bare handshake (a connection and a channel, or a
session, opened and closed: the lines every client reaches). Then the campaign's cases per
second with coverage measured beside ``--no-coverage`` (a minute each).

``--broker qpid-broker-j`` or ``--broker artemis`` measures a JVM broker instead, with JaCoCo's
agent in its JVM, in the class set ``sets.toml`` names for the protocol (Broker-J: its
``0-8/0-9/0-9-1``, ``0-10`` and ``1.0`` plugins; Artemis: its AMQP module), its relevant lines
as JaCoCo counts them; the naive loop is pika (0-9-1), python-qpid-proton (1.0) or, for 0-10,
the bare handshake again and again.

One JSON line per figure: ``lines`` per workload and point, then the ratios the targets are set
on: ``lines_at_300`` (0-9-1 >= 2,000; 1.0 >= 700), ``growth_300_vs_120`` (>= 1.03),
``feedback_vs_blind`` (lines beyond the bare handshake's, feedback over none, >= 1.15) and
``rate_coverage_on_vs_off`` (>= 0.7). ``--quick`` is a smoke test (0-9-1 only, a few seconds,
one seed, the campaigns side by side). ``$AMQPFUZZ`` may name another tree's command.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from amqpfuzz.fuzzer.brokers import throwaway
from amqpfuzz.fuzzer.coverage import Measure
from amqpfuzz.fuzzer.coverage.measure import ModuleCount
from amqpfuzz.fuzzer.coverage.plans import plan_for
from amqpfuzz.fuzzer.records import read_records

AMQPFUZZ = shlex.split(
    os.environ.get("AMQPFUZZ")
    or shutil.which("amqpfuzz", path=str(Path(sys.executable).parent))
    or "amqpfuzz"
)
SETS = {
    "0-9-1": (
        "rabbit_reader", "rabbit_channel", "rabbit_binary_parser", "rabbit_framing_amqp_0_9_1",
        "rabbit_command_assembler", "rabbit_binary_generator", "rabbit_basic", "rabbit_exchange",
        "rabbit_amqqueue", "rabbit_access_control",
    ),
    "1.0": (
        "rabbit_amqp1_0_reader", "rabbit_amqp1_0_session_process", "rabbit_amqp1_0_session",
        "rabbit_amqp1_0_incoming_link", "rabbit_amqp1_0_outgoing_link", "rabbit_amqp1_0_message",
        "rabbit_amqp1_0_link_util", "rabbit_amqp1_0_util", "amqp10_binary_parser", "amqp10_framing",
    ),
}  # fmt: skip
FAMILIES = {"0-9-1": "amqp091", "1.0": "amqp10", "0-10": "amqp010"}
POINTS = (30.0, 60.0, 120.0, 300.0)
TARGETS = {"0-9-1": 2000, "1.0": 700}  # RabbitMQ's
# the protocols each broker is measured in here
PROTOCOLS = {"rabbitmq": ("0-9-1", "1.0"), "qpid-broker-j": ("0-9-1", "0-10", "1.0"),
             "artemis": ("1.0",)}  # fmt: skip


def in_set(broker: str, protocol: str) -> Callable[[dict[str, Any]], bool]:
    """Whether a module of a coverage point is in the protocol's set: RabbitMQ's modules named
    above, or a JVM broker's classes in the first set its plan names for the protocol."""
    if broker == "rabbitmq":
        wanted = set(SETS[protocol])
        return lambda module: module["module"] in wanted
    label = jvm_set(broker, protocol)
    return lambda module: module.get("set") == label


def jvm_set(broker: str, protocol: str) -> str:
    plan = plan_for(broker, FAMILIES[protocol])
    if plan is None or not plan.sets:
        raise SystemExit(f"coverage: nothing of {broker} is measured for {protocol}")
    return plan.sets[0][0]


def emit(**line: Any) -> None:
    print(json.dumps({"bench": "coverage", **line}), flush=True)


# -- campaigns --------------------------------------------------------------------------------


BROKER = ["rabbitmq"]  # the kind measured (--broker)
EXTRA: list[str] = []  # flags every campaign gets (--quick: failures as found, not replayed)


def start(protocol: str, seed: int, seconds: float, out: str, *flags: str) -> subprocess.Popen[str]:
    command = [
        *AMQPFUZZ, "run", "--broker", BROKER[0], "--protocol", protocol, "--duration", f"{seconds:g}",
        "--seed", str(seed), "--no-shrink", "--out", out, *flags, *EXTRA,
    ]  # fmt: skip
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def finished(process: subprocess.Popen[str], seconds: float) -> None:
    out, err = process.communicate(timeout=seconds + 600)
    if process.returncode not in (0, 1):
        raise SystemExit(f"coverage: a campaign failed ({process.returncode}): {err or out}")


def read_curve(out: str, protocol: str) -> list[tuple[float, int]]:
    """(seconds into the campaign, lines of the protocol's set) at each point it wrote."""
    wanted = in_set(BROKER[0], protocol)
    found = []
    for path in sorted(Path(out).glob("coverage-*.jsonl")):
        for point in read_records(path):
            modules = point.get("modules") or []
            lines = sum(int(m["covered"]) for m in modules if wanted(m))
            found.append((float(point["elapsed_s"]), lines))
    if not found:
        raise SystemExit(f"coverage: the campaign in {out} wrote no coverage")
    return sorted(found)


def at(curve: list[tuple[float, int]], point: float, last: bool = False) -> int:
    """Lines by ``point`` seconds (the last point written by then; the first, if none), or
    (``last``: the campaign's budget was ``point``) at its end."""
    before = [lines for when, lines in curve if last or when <= point + 1.0]
    return max(before) if before else curve[0][1]


def rate(out: str) -> float:
    """Cases judged per second, first record to last."""
    times = [
        dt.datetime.fromisoformat(str(r["ts"]))
        for path in sorted(Path(out).glob("records-*.jsonl"))
        for r in read_records(path)
    ]
    if len(times) < 2:
        raise SystemExit(f"coverage: the campaign in {out} wrote too few records")
    return len(times) / max((max(times) - min(times)).total_seconds(), 1e-3)


def unreached(out: str, protocol: str) -> set[str]:
    """The functions of the protocol's set no point of the campaign saw entered."""
    member = in_set(BROKER[0], protocol)
    return {
        f"{module}:{function}"
        for path in sorted(Path(out).glob("coverage-*.jsonl"))
        for point in read_records(path)
        if point.get("final")
        for module, functions in (point.get("unreached") or {}).items()
        if member({"module": module, "set": set_of(module)})
        for function, lines in functions
        if lines
    }


def campaigns(
    protocol: str, seeds: Sequence[int], seconds: float, together: bool
) -> tuple[dict[str, list[list[tuple[float, int]]]], dict[str, set[str]]]:
    """Per workload (``feedback``, ``blind``), each seed's curve, and the functions of the set
    no seed's campaign entered. ``together``: the two of a seed side by side (the same load
    on both)."""
    curves: dict[str, list[list[tuple[float, int]]]] = {"feedback": [], "blind": []}
    never: dict[str, set[str]] = {}
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="amqpfuzz-cov-") as scratch:
            runs = {"feedback": (), "blind": ("--no-feedback",)}
            outs = {name: str(Path(scratch) / name) for name in runs}
            if together:
                started = {n: start(protocol, seed, seconds, outs[n], *f) for n, f in runs.items()}
                for process in started.values():
                    finished(process, seconds)
            else:
                for name, flags in runs.items():
                    finished(start(protocol, seed, seconds, outs[name], *flags), seconds)
            for name in runs:
                curves[name].append(read_curve(outs[name], protocol))
                missed = unreached(outs[name], protocol)
                never[name] = never[name] & missed if name in never else missed
    return curves, never


def rates(protocol: str, seed: int, seconds: float, together: bool) -> tuple[float, float]:
    """Cases per second with the broker's coverage measured, and without."""
    with tempfile.TemporaryDirectory(prefix="amqpfuzz-rate-") as scratch:
        on, off = str(Path(scratch) / "on"), str(Path(scratch) / "off")
        if together:
            both = [start(protocol, seed, seconds, on), start(protocol, seed, seconds, off,
                                                             "--no-coverage")]  # fmt: skip
            for process in both:
                finished(process, seconds)
        else:
            finished(start(protocol, seed, seconds, on), seconds)
            finished(start(protocol, seed, seconds, off, "--no-coverage"), seconds)
        return rate(on), rate(off)


# -- clients doing ordinary things -----------------------------------------------------------


def set_of(module: str) -> str | None:
    """The set a module of the broker measured is in (RabbitMQ's: none, the names above)."""
    if BROKER[0] == "rabbitmq":
        return None
    for family in set(FAMILIES.values()):
        plan = plan_for(BROKER[0], family)
        found = plan.set_of(module) if plan is not None else None
        if found is not None:
            return found
    return None


def measured(protocol: str, points: Sequence[float]) -> tuple[int, list[int], int]:
    """On a throwaway broker: the set's lines after a bare handshake, then at each point
    while a naive client loop runs there; and the set's relevant lines."""
    kind = BROKER[0]
    wanted = in_set(kind, protocol)
    bare, naive = {
        "0-9-1": (handshake_pika, naive_pika),
        "1.0": (handshake_proton, naive_proton),
        "0-10": (handshake_010, naive_010),
    }[protocol]
    family = FAMILIES[protocol]
    with throwaway(kind, coverage=family, family=family) as broker:
        probe = broker.probe
        assert probe is not None
        measure = Measure(probe)

        def members() -> list[ModuleCount]:
            return [c for c in measure.counts() if wanted({"module": c.module, "set": c.set})]

        def lines() -> int:
            measure.take()
            return sum(c.covered for c in members())

        bare(broker.url)
        handshake = lines()
        found: list[int] = []
        begun = time.monotonic()

        def going() -> bool:
            now = time.monotonic() - begun
            while len(found) < len(points) and now >= points[len(found)]:
                found.append(lines())
            return len(found) < len(points)

        naive(broker.url, going)
        while going():
            time.sleep(0.2)
        relevant = sum(c.relevant for c in members())
    return handshake, found, relevant


def handshake_010(url: str) -> None:
    """A 0-10 connection and a session, opened and closed (amqpfuzz's own client: there is
    no 0-10 client library on PyPI)."""
    from amqpfuzz.fuzzer.brokers.targets import parse_target
    from amqpfuzz.fuzzer.protocols.amqp010.connection import Connection

    connection = Connection.open(parse_target(url), timeout=10)
    try:
        connection.open_session(1)
    finally:
        connection.close()


def naive_010(url: str, going: Callable[[], bool]) -> None:
    """For 0-10 the naive loop is the bare handshake, again and again."""
    while going():
        handshake_010(url)


def handshake_pika(url: str) -> None:
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(url))
    connection.channel().close()
    connection.close()


def naive_pika(url: str, going: Callable[[], bool]) -> None:
    """Random valid operations through pika, one after another, as an ordinary client does."""
    import pika

    rnd = random.Random(1)
    while going():
        connection = pika.BlockingConnection(pika.URLParameters(url))
        channel = connection.channel()
        queue = channel.queue_declare("", exclusive=True).method.queue
        mode = rnd.choice(("plain", "tx", "confirm"))
        if mode == "tx":
            channel.tx_select()
        elif mode == "confirm":
            try:
                channel.confirm_delivery()
            except pika.exceptions.MethodNotImplemented:  # Broker-J offers no confirms
                mode = "plain"
        for _ in range(50):
            if not going():
                break
            step = rnd.choice(("publish", "get", "ack", "consume", "bind", "qos", "declare"))
            if step == "publish":
                channel.basic_publish("", queue, b"x" * rnd.randrange(100))
            elif step == "get":
                method, _, _ = channel.basic_get(queue)
                if method is not None and rnd.random() < 0.5:
                    channel.basic_ack(method.delivery_tag)
            elif step == "ack":
                channel.basic_recover(requeue=True)
            elif step == "consume":
                tag = channel.basic_consume(queue, lambda *a: None, auto_ack=True)
                connection.process_data_events(0)
                channel.basic_cancel(tag)
            elif step == "bind":
                channel.queue_bind(queue, "amq.direct", routing_key=rnd.choice("abc"))
            elif step == "qos":
                channel.basic_qos(prefetch_count=rnd.randrange(10))
            else:
                channel.exchange_declare("amq.topic", "topic", passive=True)
            if mode == "tx" and rnd.random() < 0.3:
                channel.tx_commit()
        connection.close()


def handshake_proton(url: str) -> None:
    from proton.utils import BlockingConnection

    # (the link goes with its connection: RabbitMQ 3.10 answers a closing detach without
    # closed=true, its profile's deviation, and python-qpid-proton would wait out its timeout)
    connection = BlockingConnection(url.replace("%2F", "").rstrip("/"), timeout=10)
    connection.create_receiver(node("topic", "amqpfuzz-bench"))
    connection.close()


def node(kind: str, name: str) -> str:
    """A 1.0 address: RabbitMQ 3.10's plugin wants /queue/ or /topic/ before the name; the JVM
    brokers create a queue of the name itself."""
    return f"/{kind}/{name}" if BROKER[0] == "rabbitmq" else name


def naive_proton(url: str, going: Callable[[], bool]) -> None:
    """Random valid sends and receives through python-qpid-proton's blocking client. A
    connection RabbitMQ 3.10 stops answering (now and then it settles nothing more, or answers
    none of a session's frames) is given up after 10 s, as an ordinary client would, and
    another opened; how many were is said at the end."""
    from proton import Message, Timeout
    from proton.utils import BlockingConnection

    rnd = random.Random(1)
    address = url.replace("%2F", "").rstrip("/")
    given_up = 0
    while going():
        connection = BlockingConnection(address, timeout=10)
        name = node("queue", f"amqpfuzz-bench-{rnd.randrange(4)}")
        try:
            sender = connection.create_sender(name)
            receiver = connection.create_receiver(name, credit=10)
            for _ in range(50):
                if not going():
                    break
                if rnd.random() < 0.5:
                    sender.send(Message(body="x" * rnd.randrange(100)), timeout=10)
                    continue
                try:
                    receiver.receive(timeout=0.05)
                except Timeout:  # nothing there yet
                    continue
                # (released, not proton's default modified: RabbitMQ 3.10 does not know that
                # outcome and ends the session, its profile's deviation)
                released = functools.partial(receiver.release, delivered=False)
                settle = (receiver.accept, released, receiver.reject)
                rnd.choice(settle)()
            connection.close()
        except Timeout:
            given_up += 1
            # (its close frees the connection even when it goes unanswered, and raises then)
            with contextlib.suppress(Timeout):
                connection.close()
    print(f"naive proton loop: {given_up} connections given up", file=sys.stderr)


# -- figures ----------------------------------------------------------------------------------


def run(protocol: str, seeds: Sequence[int], points: Sequence[float], together: bool, rate_s: float) -> None:  # fmt: skip
    bare, naive, relevant = measured(protocol, points)
    broker = BROKER[0]
    emit(protocol=protocol, broker=broker, workload="handshake", lines=bare, relevant=relevant)
    name = {"0-9-1": "naive-pika", "1.0": "naive-proton", "0-10": "naive-handshakes"}[protocol]
    for point, lines in zip(points, naive, strict=True):
        emit(protocol=protocol, broker=broker, workload=name, at_s=point, lines=lines,
             relevant=relevant)  # fmt: skip
    curves, never = campaigns(protocol, seeds, max(points), together)
    median: dict[str, dict[float, float]] = {}
    for workload, runs in curves.items():
        median[workload] = {}
        for point in points:
            each = [at(curve, point, point == points[-1]) for curve in runs]
            median[workload][point] = statistics.median(each)
            emit(protocol=protocol, broker=broker, workload=workload, at_s=point, lines=median[workload][point],
                 each=each, seeds=list(seeds), relevant=relevant)  # fmt: skip
    last, before = points[-1], points[-2]
    emit(protocol=protocol, figure=f"lines_at_{last:g}", value=median["feedback"][last],
         target=TARGETS[protocol] if last >= 300 and broker == "rabbitmq" else None)  # fmt: skip
    emit(protocol=protocol, figure=f"growth_{last:g}_vs_{before:g}",
         value=round(median["feedback"][last] / max(median["feedback"][before], 1), 3),
         target=1.03)  # fmt: skip
    beyond = {w: median[w][last] - bare for w in median}
    emit(protocol=protocol, figure="feedback_vs_blind", beyond_handshake=beyond,
         value=round(beyond["feedback"] / max(beyond["blind"], 1), 3), target=1.15)  # fmt: skip
    emit(protocol=protocol, figure="functions_only_feedback_entered",
         functions=sorted(never["blind"] - never["feedback"]),
         blind_only=sorted(never["feedback"] - never["blind"]))  # fmt: skip
    on, off = rates(protocol, seeds[0], rate_s, together)
    emit(
        protocol=protocol,
        figure="cases_per_s",
        coverage_on=round(on, 1),
        coverage_off=round(off, 1),
    )
    emit(protocol=protocol, figure="rate_coverage_on_vs_off", value=round(on / off, 3), target=0.7)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test of a few seconds")
    parser.add_argument("--rounds", type=int, default=3, help="seeds per campaign (the median)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--broker", choices=list(PROTOCOLS), default="rabbitmq",
                        help="the throwaway broker measured (default: rabbitmq)")  # fmt: skip
    parser.add_argument("--protocol", action="append", choices=list(FAMILIES),
                        help="(default: every one the broker is measured in)")  # fmt: skip
    parser.add_argument("--together", action="store_true",
                        help="a seed's campaigns with and without feedback side by side")  # fmt: skip
    args = parser.parse_args(argv)
    BROKER[0] = args.broker
    EXTRA[:] = ["--confirm", "0"] if args.quick else []
    measured_in = PROTOCOLS[args.broker]
    protocols = args.protocol or ([measured_in[0]] if args.quick else list(measured_in))
    wrong = [p for p in protocols if p not in measured_in]
    if wrong:
        parser.error(f"{args.broker} is measured in {', '.join(measured_in)}, not {wrong[0]}")
    points = (3.0, 6.0) if args.quick else POINTS
    rounds = 1 if args.quick else max(1, args.rounds)
    seeds = [args.seed + n for n in range(rounds)]
    for protocol in protocols:
        run(protocol, seeds, points, args.together or args.quick, 6.0 if args.quick else 60.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
