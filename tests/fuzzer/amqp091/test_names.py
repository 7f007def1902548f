"""What a case may create is read from the bytes it sends, and cleaned up as sent."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, settings

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.brokers import Broker, Target, parse_target
from amqpfuzz.fuzzer.engine.runner import Runner
from amqpfuzz.fuzzer.protocols import Outcome
from amqpfuzz.fuzzer.protocols.amqp091 import Connection
from amqpfuzz.fuzzer.protocols.amqp091.names import created_names
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec import codec_for, raw
from amqpfuzz.spec.amqp091.model import ZERO_VALUES
from amqpfuzz.strategies import Case
from amqpfuzz.strategies.amqp091.wire import wire_frame

SPEC = load("0-9-1")
CODEC = codec_for(SPEC)
FIND = settings(max_examples=5000, database=None, suppress_health_check=list(HealthCheck))


def names(case_steps: list[afs.WireFrame]) -> list[tuple[str, str | bytes]]:
    return list(created_names(SPEC, CODEC.frame_method, case_steps))


def test_declarations_are_read_from_their_bytes() -> None:
    steps = [
        wire_frame(CODEC, CODEC.method("queue.declare", 1, queue="p-q", durable=True)),
        wire_frame(CODEC, CODEC.method("exchange.declare", 1, exchange="p-x", type="topic")),
        wire_frame(CODEC, CODEC.method("queue.bind", 1, queue="p-q", exchange="p-x")),
    ]
    assert names(steps) == [("queue", "p-q"), ("exchange", "p-x")]
    declare = SPEC.method("exchange.declare")
    cut = afs.WireFrame(CODEC.frame_method, 1, raw.method_payload(40, 10, b"\x00\x00\x09ab"))
    junk = raw.arguments(declare, [0, raw.Raw(raw.shortstr(b"p-\xed\xa0\x80")), "direct"])
    assert declare.fields[1].name == "exchange"
    broken = afs.WireFrame(CODEC.frame_method, 1, raw.method_payload(40, 10, junk))
    assert names([cut, broken]) == [("exchange", b"p-\xed\xa0\x80")]  # cut: no name to read


@pytest.mark.slow
def test_a_name_that_is_not_utf8_is_ours_and_deleted_as_sent(rabbitmq: Broker) -> None:
    # RabbitMQ creates an exchange whose name holds a UTF-16 surrogate; the runner deletes it
    case: Case = find(
        afs.malformed_cases(["invalid-utf8"], prefix="amqpfuzz-names-"),
        lambda c: (
            c.spec_ref == "exchange.declare/exchange"
            and any(isinstance(n, bytes) and b"\xed\xa0\x80" in n for _, n in names(list(c.steps)))
        ),
        settings=FIND,
    )
    ((_, name),) = names(list(case.steps))
    assert isinstance(name, bytes) and name.startswith(b"amqpfuzz-names-")
    target = parse_target(rabbitmq.url)
    runner = Runner(target, prefix="amqpfuzz-names-").start()
    runner.run([case])
    runner.close()
    assert ("exchange", name) in runner.created and exists(target, name)
    assert runner.cleanup() >= 1
    assert not exists(target, name)


def exists(target: Target, name: bytes) -> bool:
    """A passive declare of the exchange with these very bytes. (RabbitMQ's refusal quotes the
    name in its reply text, which is then not UTF-8 either.)"""
    connection = Connection.open(target)
    assert connection.open_channel(1) is None
    declare = SPEC.method("exchange.declare")
    values = {"exchange": raw.Raw(raw.shortstr(name)), "type": "direct", "passive": True}
    arguments = raw.arguments(
        declare, [values.get(f.name, ZERO_VALUES[f.type]) for f in declare.fields]
    )
    connection.send(raw.frame(CODEC.frame_method, 1, raw.method_payload(40, 10, arguments)))
    answer = connection.wait(1, ("exchange.declare-ok",), 5.0)
    connection.abort()
    return not isinstance(answer, Outcome)


@pytest.mark.slow
def test_cleanup_deletes_names_in_rounds_past_refusals(rabbitmq: Broker) -> None:
    """More names than a round's channels, with a refusal and a name already gone among them:
    every one that exists is deleted, the refused one is said to be left, and the channel the
    refusal closed is opened again for the rounds after it."""
    target = parse_target(rabbitmq.url)
    queues = [f"amqpfuzz-rounds-{i:03}" for i in range(25)]
    # exclusive to their connection (resource-locked), on channels of the second round that
    # the first left open
    locked = [f"amqpfuzz-rounds-{i:03}-locked" for i in (4, 5)]
    owner = Connection.open(target)
    assert owner.open_channel(1) is None
    for queue in queues:
        assert not isinstance(owner.call(CODEC.method("queue.declare", 1, queue=queue)), Outcome)
    for queue in locked:
        declare = CODEC.method("queue.declare", 1, queue=queue, exclusive=True)
        assert not isinstance(owner.call(declare), Outcome)
    cleaner = Connection.open(target)
    missing = "amqpfuzz-rounds-003-missing"  # not-found: gone already, not left over
    left = cleaner.delete_entities([*queues, *locked, missing], [], timeout=5.0, window=4)
    cleaner.close()
    owner.close()
    assert left == locked
    check = Connection.open(target)
    for channel, queue in enumerate(queues, 1):
        assert check.open_channel(channel) is None
        answer = check.call(CODEC.method("queue.declare", channel, queue=queue, passive=True))
        assert isinstance(answer, Outcome) and answer.reply_code == 404, f"{queue} is left"
    check.close()
