"""Deep stateful programs: long-lived connections, hundreds of deliveries, prefetch consumers
sharing a queue, redelivery after a consumer's connection dies, confirms under load; every
delivery judged by the model's ledger (whose checks are shown to fail here too)."""

from __future__ import annotations

import pytest

from amqpfuzz.fuzzer.brokers import Broker
from amqpfuzz.fuzzer.brokers.targets import parse_target
from amqpfuzz.fuzzer.protocols import Broken
from amqpfuzz.fuzzer.protocols.amqp091.programs import Program
from amqpfuzz.fuzzer.protocols.amqp091.programs.clients import Clients
from amqpfuzz.fuzzer.protocols.amqp091.programs.ledger import Ledger, Problem, Stored
from amqpfuzz.fuzzer.protocols.amqp091.programs.model import Consumer


def ledger_of(*bodies: bytes) -> Ledger:
    ledger = Ledger()
    for seq, body in enumerate(bodies, 1):
        ledger.append(Stored(body, seq=seq))
    return ledger


@pytest.mark.parametrize(
    ("delivered", "invariant"),
    [
        ((b"b",), "order"),  # the second message first
        ((b"x",), "none invented"),
        ((b"a", b"b", b"a"), "none invented"),  # delivered twice: the ledger no longer holds it
    ],
)
def test_the_ledger_refuses_a_wrong_delivery(delivered: tuple[bytes, ...], invariant: str) -> None:
    ledger = ledger_of(b"a", b"b")
    results = [ledger.take(body, False) for body in delivered]
    assert isinstance(results[-1], Problem) and results[-1].invariant == invariant, results


def test_a_requeue_expects_the_redelivered_flag_and_frees_the_order() -> None:
    ledger = ledger_of(b"a", b"b", b"c")
    first, second = ledger.take(b"a", False), ledger.take(b"b", False)
    assert isinstance(first, Stored) and isinstance(second, Stored)
    ledger.requeue([first, second])
    assert ledger.loose
    missing = ledger.take(b"b", False)  # it was delivered before: the flag must say so
    assert isinstance(missing, Problem) and missing.invariant == "redelivered flag"
    assert isinstance(ledger.take(b"a", True), Stored)  # any order among those that came back
    assert isinstance(ledger.take(b"c", False), Stored) and not ledger.loose


def test_a_requeued_message_goes_back_to_its_place_not_to_the_head() -> None:
    """a and b delivered; a requeued (it is the head again), then b (a channel closed): b goes
    back after a, where it was, as RabbitMQ puts it (at the head it broke 'order' falsely)."""
    ledger = ledger_of(b"a", b"b", b"c")
    first, second = ledger.take(b"a", False), ledger.take(b"b", False)
    assert isinstance(first, Stored) and isinstance(second, Stored)
    ledger.requeue([first])
    ledger.requeue([second])
    assert not ledger.loose
    assert [m.body for m in ledger.ready] == [b"a", b"b", b"c"]
    assert isinstance(ledger.take(b"a", True), Stored)
    assert isinstance(ledger.take(b"b", True), Stored) and isinstance(
        ledger.take(b"c", False), Stored
    )


def test_every_delivery_is_judged_against_the_prefetch_window() -> None:
    program = Program(parse_target("amqp://guest:guest@127.0.0.1:1/"), "p-")
    program.queues["q"] = ledger_of(b"a", b"b", b"c")
    consumer = Consumer(channel=None, prefetch=2)
    program.judge("q", consumer, 1, b"a", False)
    program.judge("q", consumer, 2, b"b", False)
    with pytest.raises(Broken, match="prefetch window"):
        program.judge("q", consumer, 3, b"c", False)  # a third before any acknowledgement
    with pytest.raises(Broken, match="non-zero delivery tag"):
        program.judge("q", Consumer(None), 0, b"c", False)


def deep(program: Program) -> None:
    """Hundreds of messages through three prefetch consumers, a consumer that dies holding
    its window, a single consumer, a confirmed burst and a transaction."""
    queue = program.declare(False)
    program.publish_many(queue, 300)
    program.share(queue, 3, 10, 4)
    program.publish_many(queue, 200)
    program.abandon(queue, 15, 5)
    program.count(queue)
    program.get(queue)
    program.settle("reject", True)
    program.consume_all(queue)
    program.confirms(queue, 150)
    program.tx("select")
    program.publish(queue, b"in a transaction")
    program.tx("commit")
    program.share(queue, 2, 25, 25)


@pytest.mark.slow
def test_programs_deliver_hundreds_of_messages_over_one_consumer_connection(
    rabbitmq: Broker,
) -> None:
    target = parse_target(rabbitmq.url)
    with Clients(target) as clients:
        for number in range(3):
            program = Program(target, f"amqpfuzz-deep{number}-", clients=clients, timeout=10)
            program.open()
            try:
                deep(program)
            finally:
                program.close()
            assert program.broken is None
        assert clients.opened == 1  # the same two connections served all three programs
        assert clients.programs == 3
        assert clients.deliveries >= 3 * 600, clients.deliveries  # over that one connection


@pytest.mark.slow
def test_a_broker_that_forgets_a_dead_consumers_deliveries_is_caught(garagemq: Broker) -> None:
    """GarageMQ delivers again what a dead connection held, but without the redelivered flag
    (which the spec's redelivered rule asks the server to set when it can)."""
    program = Program(parse_target(garagemq.url), "amqpfuzz-dead-", timeout=10)
    program.open()
    try:
        queue = program.declare(False)
        program.publish_many(queue, 20)
        program.abandon(queue, 5, 0)
        with pytest.raises(Broken) as broken:
            program.get(queue)
    finally:
        program.close()
    assert broken.value.invariant == "redelivered flag", broken.value


class _Wedged:
    """A pika connection whose broker never answers: ``channel()`` waits on its socket until
    the socket is shut under it (as the program's guard does), then fails as pika would."""

    def __init__(self) -> None:
        import socket
        from types import SimpleNamespace

        self.sock, self.peer = socket.socketpair()
        self._impl = SimpleNamespace(_transport=SimpleNamespace(_sock=self.sock))
        self.is_open = True

    def channel(self) -> None:
        import pika

        self.sock.recv(1)  # nothing comes: b"" once the socket is shut
        raise pika.exceptions.StreamLostError("the socket was shut")

    def close(self) -> None:
        self.is_open = False


def test_a_program_s_close_on_a_broker_that_stopped_answering_ends() -> None:
    """Closing a program deletes its queues through pika, which waits for an answer for as long
    as it takes: on a broker that stopped answering, the close is guarded like a step (its
    connections cut after the timeout, the fresh one it opens to delete too) and ends."""
    import time
    from types import SimpleNamespace

    from amqpfuzz.fuzzer.brokers import parse_target
    from amqpfuzz.fuzzer.protocols.amqp091.programs.model import Program

    publisher, fresh = _Wedged(), _Wedged()
    clients = SimpleNamespace(open=lambda: fresh, close=lambda: None)
    program = Program(
        parse_target("amqp://127.0.0.1:5672/"), "p-", clients=clients,  # type: ignore[arg-type]
        publisher=publisher, consumer=_Wedged(), timeout=0.3, queues={"p-q1": None},  # type: ignore[dict-item]
    )  # fmt: skip
    started = time.monotonic()
    program.close()
    assert time.monotonic() - started < 5.0
    assert program.closed and publisher.sock.recv(1) == b"" and fresh.sock.recv(1) == b""
