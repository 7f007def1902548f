"""The stateful program's model of the broker, and its steps through pika.

Two long-lived connections through pika (a normal client is right here), a publisher and a
consumer, shared by the programs of a round while they stay healthy (:mod:`.clients`), and
connections of a step's own where a step needs one (a consumer whose connection dies, a
confirming publisher). The machine declares queues, publishes one message or hundreds, gets,
consumes with one consumer or several sharing a queue under a prefetch window, acknowledges,
rejects and requeues, abandons deliveries by killing a consumer's connection, purges, runs
transactions and publisher confirms under load, and checks the broker against its model on
every delivery and every count (:mod:`.ledger`):

* no message lost and none invented or delivered twice; per-queue order for a single consumer,
  an increasing part of it for each of several;
* the redelivered flag after a requeue, a reject, or a consumer's connection dying;
* never more unacknowledged deliveries on a channel than its prefetch window (basic.qos rule
  01: the server MUST NOT send more); no zero delivery tag (delivery-tag rule non-zero);
* the message counts in declare-ok, purge-ok and get-ok;
* an exclusive queue refused to the other connection (405 resource-locked);
* transactional publishes invisible until commit and gone after rollback;
* every confirm arriving exactly once, for bursts of hundreds of publishes.

A broken invariant raises :class:`~amqpfuzz.fuzzer.protocols.Broken`, which Hypothesis shrinks
to the shortest program; the steps of that program (``Program.trace``) are written as the
failure's reproducer, and ``amqpfuzz replay`` runs them again without Hypothesis.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import pika.exceptions

from amqpfuzz.spec.amqp091.codec import MethodFrame

from ....brokers import Target
from ...family import Broken
from ...outcome import Outcome
from ..connection import Connection
from .clients import Clients
from .ledger import Ledger, Problem, Stored

__all__ = ["Program", "Stored"]

Step = TypeVar("Step", bound=Callable[..., Any])


def guarded(method: Step) -> Step:
    """A step through pika, which waits for a broker's answer for as long as it takes: a step
    that gets no answer within the program's timeout has its connections cut (so that pika's
    wait ends) and breaks the ``timely answer`` invariant; an error pika raises where the model
    expects none breaks ``no unexpected error``. Nested steps are guarded by the outer one."""

    @functools.wraps(method)
    def step(self: Program, *args: Any, **kwargs: Any) -> Any:
        if self.guarding:
            return method(self, *args, **kwargs)
        self.guarding = True
        cut = threading.Event()
        timer = threading.Timer(self.timeout, self.cut, (cut,))
        timer.start()
        try:
            return method(self, *args, **kwargs)
        except Broken as exc:
            self.broken = exc
            raise
        except (pika.exceptions.AMQPError, OSError) as exc:
            name = self.trace[-1]["step"] if self.trace else method.__name__
            if cut.is_set():
                message = f"no answer within {self.timeout:g} s"
                self.broken = Broken(Broken.HUNG, name, message)
            else:
                self.broken = Broken("no unexpected error", name, f"{type(exc).__name__}: {exc}")
            raise self.broken from None
        finally:
            timer.cancel()
            self.guarding = False

    return step  # type: ignore[return-value]


def sever(connection: Any) -> None:
    """Shut a pika connection's socket under it, as a network failure or a killed client
    would: the broker sees the connection die without a close."""
    transport = getattr(getattr(connection, "_impl", None), "_transport", None)
    sock = getattr(transport, "_sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already shut: nothing more to do
            sock.shutdown(socket.SHUT_RDWR)


@dataclass
class Consumer:
    """One consumer's channel as a step judges it: its prefetch window, the deliveries it has
    not acknowledged yet, the tags it has seen, and its place in the queue's order."""

    channel: Any
    prefetch: int = 0  # 0: no window
    outstanding: list[tuple[int, Stored]] = field(default_factory=list)
    tags: set[int] = field(default_factory=set)
    last_seq: int = -1


@dataclass
class Program:
    """The model and the clients one state-machine run works with."""

    target: Target
    prefix: str
    clients: Clients | None = None  # shared with the round's other programs; else its own
    publisher: Any = None
    consumer: Any = None
    pub: Any = None  # publisher channel
    txc: Any = None  # the publisher's transactional channel
    con: Any = None  # consumer channel
    queues: dict[str, Ledger] = field(default_factory=dict)
    unacked: dict[int, tuple[str, Stored]] = field(default_factory=dict)
    exclusive: set[str] = field(default_factory=set)
    transacted: bool = False
    pending_tx: list[tuple[str, Stored]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    counter: int = 0  # queues declared
    published: int = 0  # messages published (their sequence numbers)
    timeout: float = 10.0  # seconds a step may wait for the broker
    guarding: bool = False
    broken: Broken | None = None  # the invariant this program found broken, if any
    others: list[Any] = field(default_factory=list)  # connections of a step's own, to cut
    closed: bool = False
    owns: bool = False  # the clients are this program's alone (a replay): closed with it

    # -- connections ----------------------------------------------------------------------

    def open(self) -> None:
        if self.clients is None:
            self.clients, self.owns = Clients(self.target), True
        self.publisher, self.consumer = self.clients.take()
        self.pub = self.publisher.channel()
        self.txc = self.publisher.channel()  # transactions have a channel of their own
        self.con = self.consumer.channel()

    def cut(self, done: threading.Event) -> None:
        """End the pika connections' waits: their sockets shut (a hung broker's step)."""
        done.set()
        for connection in (self.publisher, self.consumer, *self.others):
            sever(connection)

    def close(self) -> None:
        """Delete every queue this program declared (only those), close its channels, and hand
        its connections on to the next program, or close them if this one went wrong. Guarded
        as a step is: pika waits for a broker's answer for as long as it takes, so connections
        that have not finished after the program's timeout are cut (and not handed on)."""
        if self.closed:
            return
        self.closed = True
        cleaning: list[Any] = []
        stop = threading.Event()

        def watchdog() -> None:
            if stop.wait(max(self.timeout, 1.0)):
                return
            while not stop.wait(0.2):  # cut every connection in play, until the close ends
                for connection in (self.publisher, self.consumer, *self.others, *cleaning):
                    sever(connection)

        guard = threading.Thread(target=watchdog, daemon=True, name="amqpfuzz-close")
        guard.start()
        try:
            self._close(cleaning)
        finally:
            stop.set()
            guard.join()

    def _close(self, cleaning: list[Any]) -> None:
        for connection in self.others:
            with contextlib.suppress(Exception):  # a step's own connection, maybe severed
                connection.close()
        clients = self.clients
        if clients is None or self.publisher is None:
            return
        keep = self.broken is None
        try:
            self.delete(self.publisher)
            for channel in (self.pub, self.txc, self.con):
                if channel.is_open:
                    channel.close()
        except (pika.exceptions.AMQPError, OSError):
            keep = False  # this connection went wrong: it is not handed on
            if self.broken is None or self.broken.invariant != Broken.HUNG:
                with (
                    contextlib.suppress(pika.exceptions.AMQPError, OSError),
                    contextlib.closing(clients.open()) as fresh,
                ):
                    cleaning.append(fresh)
                    self.delete(fresh)  # what this program declared goes, all the same
        if not keep or self.owns:
            clients.close()

    def delete(self, connection: Any) -> None:
        """Delete the queues this program declared (only those)."""
        channel = connection.channel()
        for name in self.queues:
            channel.queue_delete(name)
        channel.close()

    def step(self, name: str, **args: Any) -> None:
        self.trace.append(
            {"step": name, **{k: (v.hex() if isinstance(v, bytes) else v) for k, v in args.items()}}
        )

    def check(self, invariant: str, ok: bool, message: str) -> None:
        if not ok:
            self.fail(invariant, message)

    def fail(self, invariant: str, message: str) -> NoReturn:
        step = self.trace[-1]["step"] if self.trace else "start"
        raise Broken(invariant, step, message)

    def stored(self, body: bytes) -> Stored:
        self.published += 1
        return Stored(body, seq=self.published)

    def judge(
        self, queue: str, consumer: Consumer, tag: int, body: bytes, redelivered: bool,
        strict: bool = True,
    ) -> Stored:  # fmt: skip
        """One delivery against the model: every invariant, the moment it arrives."""
        if self.clients is not None and consumer.channel.connection is self.consumer:
            self.clients.deliveries += 1  # over the long-lived consumer connection
        self.check("non-zero delivery tag", tag != 0, "a delivery with tag 0")
        self.check("delivery tags unique", tag not in consumer.tags, f"tag {tag} came twice")
        consumer.tags.add(tag)
        found = self.queues[queue].take(body, redelivered, strict)
        if isinstance(found, Problem):
            self.fail(found.invariant, found.message)
        if found.redelivered is False:
            self.check(
                "order",
                found.seq > consumer.last_seq,
                f"{body!r} came after a message published later",
            )
            consumer.last_seq = found.seq
        consumer.outstanding.append((tag, found))
        window = consumer.prefetch
        self.check(
            "prefetch window",
            not window or len(consumer.outstanding) <= window,
            f"{len(consumer.outstanding)} deliveries unacknowledged with prefetch-count {window}",
        )
        return found

    # -- the steps (called by the machine's rules and by replay) -----------------------------

    @guarded
    def declare(self, exclusive: bool = False) -> str:
        self.counter += 1
        name = f"{self.prefix}q{self.counter}"
        self.step("declare", exclusive=exclusive)
        ok = self.pub.queue_declare(name, exclusive=exclusive)
        self.check(
            "declare-ok count",
            ok.method.message_count == 0,
            f"a new queue holds {ok.method.message_count} messages",
        )
        self.queues[name] = Ledger()
        if exclusive:
            self.exclusive.add(name)
        return name

    @guarded
    def publish(self, queue: str, body: bytes) -> None:
        """Publish on the transactional channel while a transaction is open, else plainly.
        The body goes out after its sequence number (``7:``): no two messages alike, so that
        each delivery names the one message it is."""
        self.step("publish", queue=queue, body=body)
        self.send(queue, b"%d:%s" % (self.published + 1, body))

    @guarded
    def publish_many(self, queue: str, count: int) -> None:
        """``count`` messages at once, each body its own (``m`` and its sequence number)."""
        self.step("publish_many", queue=queue, count=count)
        for _ in range(count):
            self.send(queue, b"m%d" % (self.published + 1))

    def send(self, queue: str, body: bytes) -> None:
        message = self.stored(body)
        if self.transacted:
            self.txc.basic_publish("", queue, body)
            self.pending_tx.append((queue, message))
        else:
            self.pub.basic_publish("", queue, body)
            self.queues[queue].append(message)

    @guarded
    def count(self, queue: str) -> None:
        """passive declare: the count must become what the model holds. A broker acts on a
        queue asynchronously (a requeue, a publish routed by another process), so the count
        is asked again, for a while, until it agrees or the broker has had time enough."""
        self.step("count", queue=queue)
        self.settled(queue)

    def settled(self, queue: str) -> None:
        want = len(self.queues[queue])
        deadline = time.monotonic() + 3
        while True:
            got = self.pub.queue_declare(queue, passive=True).method.message_count
            if got == want or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.check("declare-ok count", got == want, f"{got} messages where {want} are ready")

    @guarded
    def get(self, queue: str) -> None:
        self.step("get", queue=queue)
        self.settled(queue)  # the publisher's messages visible before the other connection asks
        method, _, body = self.con.basic_get(queue, auto_ack=False)
        ready = self.queues[queue]
        if method is None:
            self.check("no message lost", not ready, f"get-empty while {len(ready)} are ready")
            return
        found = self.judge(queue, Consumer(self.con), method.delivery_tag, body, method.redelivered)
        self.check(
            "get-ok count",
            method.message_count == len(ready),
            f"get-ok says {method.message_count} remain, the model {len(ready)}",
        )
        self.unacked[method.delivery_tag] = (queue, found)

    @guarded
    def settle(self, how: str, requeue: bool = False) -> None:
        """ack, reject or nack the oldest unacknowledged delivery."""
        if not self.unacked:
            return
        tag = min(self.unacked)
        self.step("settle", how=how, requeue=requeue)
        queue, message = self.unacked.pop(tag)
        if how == "ack":
            self.con.basic_ack(tag)
        elif how == "reject":
            self.con.basic_reject(tag, requeue=requeue)
        else:
            self.con.basic_nack(tag, requeue=requeue)
        if how != "ack" and requeue:
            # a requeued message goes back to its place at the head, marked redelivered
            self.queues[queue].requeue([message])

    @guarded
    def purge(self, queue: str) -> None:
        self.step("purge", queue=queue)
        self.settled(queue)
        ok = self.con.queue_purge(queue)
        want = len(self.queues[queue])
        self.check(
            "purge-ok count",
            ok.method.message_count == want,
            f"purge-ok says {ok.method.message_count}, the model {want}",
        )
        self.queues[queue].clear()

    @guarded
    def consume_all(self, queue: str) -> None:
        """A single consumer (automatic acknowledgement) receives every ready message, in
        order, then cancels."""
        self.step("consume", queue=queue)
        self.consume(queue, 1, 0, 0)

    @guarded
    def share(self, queue: str, consumers: int, prefetch: int, ack_every: int) -> None:
        """``consumers`` consumers of ``queue``, each on a channel of its own on the consumer
        connection with a prefetch window of ``prefetch``, acknowledging (multiple) every
        ``ack_every`` deliveries, until every ready message has come."""
        self.step("share", queue=queue, consumers=consumers, prefetch=prefetch, ack_every=ack_every)
        self.consume(queue, consumers, prefetch, ack_every)

    def consume(self, queue: str, consumers: int, prefetch: int, ack_every: int) -> None:
        """Consume every ready message (``prefetch`` 0: automatic acknowledgement, on the
        consumer channel), each delivery judged as it arrives."""
        self.settled(queue)
        want = len(self.queues[queue])
        arrived: list[tuple[int, Any, bytes]] = []
        auto = prefetch == 0
        team: list[Consumer] = []
        tags: list[str] = []
        for index in range(consumers):
            channel = self.con if consumers == 1 and auto else self.consumer.channel()
            if not auto:
                channel.basic_qos(prefetch_count=prefetch)
            team.append(Consumer(channel, prefetch))
            tags.append(
                channel.basic_consume(
                    queue,
                    lambda ch, m, p, b, i=index: arrived.append((i, m, b)),
                    auto_ack=auto,
                )
            )
        received = 0
        deadline = time.monotonic() + 5 + want / 1000
        while received < want and time.monotonic() < deadline:
            self.consumer.process_data_events(time_limit=0.02)
            received += self.receive(queue, team, arrived, ack_every, auto)
        self.consumer.process_data_events(time_limit=0.02)  # anything more is one too many
        received += self.receive(queue, team, arrived, ack_every, auto)
        for index, (consumer, tag) in enumerate(zip(team, tags, strict=True)):
            # an automatically acknowledged consumer's deliveries that came with the cancel
            arrived.extend((index, m, b) for m, _, b in consumer.channel.basic_cancel(tag))
            received += self.receive(queue, team, arrived, ack_every, auto)
            if consumer.channel is not self.con:
                consumer.channel.close()
        self.check("no message lost", received >= want, f"consumed {received} of {want}")

    def receive(
        self, queue: str, team: list[Consumer], arrived: list[Any], every: int, auto: bool
    ) -> int:
        """Judge the deliveries that arrived; acknowledge as the step says."""
        batch = list(arrived)
        arrived.clear()
        for index, method, body in batch:
            consumer = team[index]
            self.judge(
                queue, consumer, method.delivery_tag, body, method.redelivered, len(team) == 1
            )
            if auto:
                consumer.outstanding.clear()
        for consumer in team:
            if consumer.outstanding and (len(consumer.outstanding) >= every or not batch):
                consumer.channel.basic_ack(consumer.outstanding[-1][0], multiple=True)
                consumer.outstanding.clear()
        return len(batch)

    @guarded
    def abandon(self, queue: str, prefetch: int, acked: int) -> None:
        """A consumer on a connection of its own takes a prefetch window of deliveries,
        acknowledges the first ``acked`` of them (and takes as many more), then its connection
        dies without a close: every delivery it did not acknowledge comes again, redelivered."""
        self.step("abandon", queue=queue, prefetch=prefetch, acked=acked)
        self.settled(queue)
        assert self.clients is not None  # (open() made them)
        doomed = self.clients.open()
        self.others.append(doomed)
        channel = doomed.channel()
        channel.basic_qos(prefetch_count=prefetch)
        consumer = Consumer(channel, prefetch)
        arrived: list[tuple[Any, bytes]] = []
        before = self.pub.queue_declare(queue, passive=True).method.consumer_count
        channel.basic_consume(queue, lambda ch, m, p, b: arrived.append((m, b)))
        ledger = self.queues[queue]

        def receive() -> None:
            doomed.process_data_events(time_limit=0.02)
            for method, body in arrived:
                self.judge(queue, consumer, method.delivery_tag, body, method.redelivered)
            arrived.clear()

        def window(count: int) -> None:
            deadline = time.monotonic() + 5
            while len(consumer.outstanding) < count and time.monotonic() < deadline:
                receive()

        window(min(prefetch, len(ledger)))
        acked = min(acked, len(consumer.outstanding))
        for tag, _ in consumer.outstanding[:acked]:
            channel.basic_ack(tag)
        del consumer.outstanding[:acked]
        channel.basic_qos(prefetch_count=prefetch)  # a round trip behind the acks: all taken
        window(len(consumer.outstanding) + min(acked, len(ledger)))
        receive()  # one more is beyond the window
        sever(doomed)
        # what the broker sent the dying connection that it never read comes again marked
        # redelivered, and which those were only the broker knows: every other message of the
        # queue may come either way; those it held come again redelivered
        ledger.unsure(len(ledger))
        ledger.requeue([message for _, message in consumer.outstanding])
        # until the broker has seen the connection die, its consumer still takes what is
        # published next (and gives it back redelivered): wait for the consumer to be gone
        deadline = time.monotonic() + 5
        while self.pub.queue_declare(queue, passive=True).method.consumer_count > before:
            if time.monotonic() > deadline:
                ledger.lingering = True  # what comes next may come either way
                break
            time.sleep(0.01)

    @guarded
    def exclusive_refused(self, queue: str) -> None:
        """Another connection must not use an exclusive queue: 405 resource-locked."""
        self.step("exclusive", queue=queue)
        try:
            self.con.queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            self.check(
                "exclusive refused", exc.reply_code == 405, f"closed with {exc.reply_code}, not 405"
            )
            self.con = self.consumer.channel()
            # the closed channel's deliveries go back to their queues, marked redelivered
            back: dict[str, list[Stored]] = {}
            for name, message in self.unacked.values():
                back.setdefault(name, []).append(message)
            self.unacked.clear()
            for name, messages in back.items():
                self.queues[name].requeue(messages)
            return
        self.check("exclusive refused", False, "another connection could use an exclusive queue")

    @guarded
    def tx(self, action: str) -> None:
        self.step("tx", action=action)
        if action == "select" and not self.transacted:
            self.txc.tx_select()
            self.transacted = True
        elif action == "commit" and self.transacted:
            self.txc.tx_commit()
            for queue, message in self.pending_tx:
                self.published += 1  # its place in the queue is taken now, not when sent
                message.seq = self.published
                self.queues[queue].append(message)
            self.pending_tx.clear()
        elif action == "rollback" and self.transacted:
            self.txc.tx_rollback()
            self.pending_tx.clear()

    @guarded
    def confirms(self, queue: str, bodies: list[bytes] | int) -> None:
        """On a connection of its own in confirm mode, every publish is confirmed exactly
        once (basic.ack with single or multiple tags; our raw connection, to see them all).
        ``bodies``: the messages, or how many to publish in one burst (``c`` and a number)."""
        if isinstance(bodies, int):
            self.step("confirms", queue=queue, count=bodies)
            bodies = [b"c%d" % (self.published + n + 1) for n in range(bodies)]
        else:
            self.step("confirms", queue=queue, bodies=[b.hex() for b in bodies])
        self.settled(queue)  # the publisher's own messages go first
        connection = Connection.open(self.target, protocol="0-9-1-rabbit")
        codec = connection.codec
        try:
            if connection.open_channel(1) is not None:
                self.check("confirms once", False, "could not open a channel")
            select = connection.call(codec.method("confirm.select", 1))
            self.check(
                "confirms once", isinstance(select, MethodFrame), f"confirm.select: {select}"
            )
            burst = bytearray()
            for body in bodies:
                publish = codec.method("basic.publish", 1, routing_key=queue)
                content = codec.content(1, body, frame_max=connection.frame_max)
                burst += codec.encode_all([publish, *content])
                self.queues[queue].append(self.stored(body))
            connection.send(bytes(burst))
            acks: list[tuple[int, bool]] = []
            deadline = time.monotonic() + 5 + len(bodies) / 1000
            while _confirmed(acks) < len(bodies) and time.monotonic() < deadline:
                _, end = connection.collect(
                    1, ("basic.ack",), max(0.0, deadline - time.monotonic())
                )
                if isinstance(end, Outcome):
                    break
                acks.append((end["delivery_tag"], end["multiple"]))
            _, late = connection.collect(1, ("basic.ack",), 0.1)  # a duplicate, late
            if isinstance(late, MethodFrame):
                acks.append((late["delivery_tag"], late["multiple"]))
            seen = _confirmed_tags(acks)
            self.check(
                "confirms once",
                sorted(seen) == list(range(1, len(bodies) + 1)),
                f"confirmed tags {_ranges(seen)} for {len(bodies)} publishes",
            )
        finally:
            connection.close()


def _confirmed_tags(acks: list[tuple[int, bool]]) -> list[int]:
    tags: list[int] = []
    for tag, multiple in acks:
        if multiple:
            tags.extend(t for t in range(max(tags, default=0) + 1, tag + 1))
        else:
            tags.append(tag)
    return tags


def _confirmed(acks: list[tuple[int, bool]]) -> int:
    return len(set(_confirmed_tags(acks)))


def _ranges(tags: list[int]) -> str:
    """Tags as runs (``1-200, 202``): a burst's confirms in a line a person can read."""
    runs: list[list[int]] = []
    for tag in tags:
        if runs and tag == runs[-1][1] + 1:
            runs[-1][1] = tag
        else:
            runs.append([tag, tag])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs) or "none"
