"""Valid 1.0 traffic through the engine on both real 1.0 peers (RabbitMQ's plugin and the Proton
broker): walks that wait for the peer's credit and deliveries within a case pass, but where the
peer's profile records a deviation; malformed cases after a walk meet a session in state; and
the nodes the walks made are deleted again."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pika
import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target, throwaway
from amqpfuzz.fuzzer.brokers.profiles import Profile, find_profile
from amqpfuzz.fuzzer.engine.runner import Runner
from amqpfuzz.fuzzer.protocols.amqp10.nodes import queue_of
from amqpfuzz.strategies import Case, case_builder

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

PREFIX = "amqpfuzz-tt10-"


@pytest.fixture(scope="module")
def proton() -> Iterator[Broker]:
    with throwaway("qpid-proton") as broker:
        yield broker


@pytest.fixture(params=("qpid-proton", "rabbitmq"))
def peer(request: pytest.FixtureRequest) -> Broker:
    broker: Broker = request.getfixturevalue(
        "proton" if request.param == "qpid-proton" else "rabbitmq"
    )
    return broker


def profile_of(peer: Broker) -> Profile:
    if peer.kind == "rabbitmq":
        found = find_profile(None, "RabbitMQ", "3.10.8", "1.0")
    else:
        found = find_profile(None, "", "", "1.0", kind="qpid-proton")
    assert found is not None
    return found


def cases(
    runner: Runner, peer: Broker, count: int, seed: int, operators: list[str] | None = None,
    **shares: float,
) -> list[Case]:  # fmt: skip
    """``count`` cases of seeded blobs, as a campaign draws them for ``peer`` (its profile's
    traffic table, the frame size it took)."""
    profile = profile_of(peer)
    build = case_builder(
        protocol="1.0", prefix=PREFIX, traffic=dict(profile.traffic) if profile.traffic else None,
        frame_max=runner.frame_max, operators=operators,
        **{"valid_share": 0.0, "traffic_share": 1.0, "state_share": 0.0, **shares},
    )  # fmt: skip
    rnd = random.Random(seed)
    return [build(rnd.randbytes(512)) for _ in range(count)]


def test_traffic_passes_but_for_the_peers_recorded_deviations(peer: Broker) -> None:
    """Every shape of traffic, on a session of its own per case: the failures there are (the
    Proton broker's: none; RabbitMQ's: a session's end lost now and then) are each a
    deviation of the peer's profile; what went each way shows the walks did their work."""
    profile = profile_of(peer)
    runner = Runner(parse_target(peer.url), protocol="1.0", timeout=3.0, broker=peer, prefix=PREFIX)
    runner.start()
    try:
        drawn = cases(runner, peer, 80, seed=11)
        results = runner.run(drawn)
    finally:
        runner.close()
    unexplained = [
        r.failure.signature
        for r in results
        if r.failure is not None
        and profile.deviation(r.failure.signature, r.case.spec_ref, r.case.operator) is None
    ]
    assert not unexplained, Counter(unexplained)
    assert sum(r.failure is None for r in results) >= 70
    came = Counter(getattr(f, "name", None) for r in results for f in r.outcome.frames)
    assert came["transfer"] > 10 and came["disposition"] > 10 and came["flow"] > 10, came
    shapes = {r.case.note.split(":")[0] for r in results if r.failure is None}
    assert len(shapes) >= 7, shapes
    # what the walks made is deleted again (RabbitMQ: each queue an address names)
    made = sorted(str(name) for _, name in runner.created)
    assert made and runner.cleanup() == len(made)
    if peer.kind == "rabbitmq":
        queues = [q for q in map(queue_of, made) if q]
        connection = pika.BlockingConnection(pika.URLParameters(peer.url))
        for queue in queues[:20]:
            channel = connection.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker):
                channel.queue_declare(str(queue), passive=True)
        connection.close()


def test_a_malformed_case_after_a_walk_meets_a_session_in_state(peer: Broker) -> None:
    """Frame headers broken after a walk, on connections of their own: every segment of the
    walk goes (no await of it fails), then the frame the operator broke, and the peer closes
    the connection for it (or drops the socket, as RabbitMQ does for a broken frame header).
    The Proton broker sends a close first; now and then the socket's reset overtakes it (the
    peer closes with our bytes unread, and the reset drops what we had not read yet), so a
    few cases may see only the socket go: most must see the close."""
    runner = Runner(parse_target(peer.url), protocol="1.0", timeout=3.0, broker=peer, prefix=PREFIX)
    runner.start()
    try:
        broken = ["frame-size-small", "doff-small", "doff-past-end"]
        drawn = cases(runner, peer, 24, 12, broken, traffic_share=0.0, state_share=1.0)
        walked = [c for c in drawn if c.waits]
        results = runner.run(walked)
    finally:
        runner.close()
        runner.cleanup()
    assert len(walked) >= 12
    for result in results:
        assert "not met" not in result.outcome.text, result.outcome
        assert result.case.render(0)[-20:] and result.data.endswith(result.case.steps[-1].render(0))
    kinds = Counter(str(r.outcome.kind) for r in results)
    if peer.kind == "qpid-proton":
        assert set(kinds) <= {"connection-close", "socket-close"}, kinds
        assert kinds["connection-close"] > kinds["socket-close"], kinds
    else:
        assert set(kinds) == {"socket-close"}, kinds


def test_a_whole_connection_of_traffic_opens_and_is_proved_alive(proton: Broker) -> None:
    """The connection shape: a client's own handshake (SASL ANONYMOUS or none), an open with
    its fields drawn, a session and a short walk; the runner's session behind it answers."""
    chooser = case_builder(protocol="1.0", prefix=PREFIX, traffic_share=1.0, valid_share=0.0)
    rnd = random.Random(13)
    drawn = [chooser(chooser.aim(rnd.randbytes(512), "traffic connection")) for _ in range(8)]
    runner = Runner(
        parse_target(proton.url), protocol="1.0", timeout=3.0, broker=proton, prefix=PREFIX
    )
    runner.start()
    try:
        results = runner.run(drawn)
    finally:
        runner.close()
        runner.cleanup()
    assert all(r.case.placement == "header" for r in results)
    assert [r.verdict for r in results] == ["pass"] * len(results), [r.outcome for r in results]
