"""The stateful program's model of the broker, and its steps through pika.

Two connections through pika (a normal client is right here): a publisher and a consumer.
The machine declares queues, publishes, gets, consumes, acknowledges, rejects and requeues,
purges, runs transactions and publisher confirms, and after each step compares the broker with
its model:

* no message lost and none invented; per-queue order for a single consumer;
* the redelivered flag after a requeue;
* the message counts in declare-ok, purge-ok and get-ok;
* an exclusive queue refused to the other connection (405 resource-locked);
* transactional publishes invisible until commit and gone after rollback;
* every confirm arriving exactly once.

A broken invariant raises :class:`~amqpfuzz.fuzzer.protocols.Broken`, which Hypothesis shrinks to the shortest program;
the steps of that program (``Program.trace``) are written as the failure's reproducer, and
``amqpfuzz replay`` runs them again without Hypothesis.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pika.exceptions

from amqpfuzz.spec.amqp091.codec import MethodFrame

from ....brokers import Target
from ...base import Broken, Outcome
from ..clients import pika_connection
from ..connection import Connection

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
                self.broken = Broken("timely answer", name, message)
            else:
                self.broken = Broken("no unexpected error", name, f"{type(exc).__name__}: {exc}")
            raise self.broken from None
        finally:
            timer.cancel()
            self.guarding = False

    return step  # type: ignore[return-value]


@dataclass
class Stored:
    """A message as the model keeps it: its body, and whether it comes again."""

    body: bytes
    redelivered: bool = False


@dataclass
class Program:
    """The model and the two clients one state-machine run works with."""

    target: Target
    prefix: str
    publisher: Any = None
    consumer: Any = None
    pub: Any = None  # publisher channel
    txc: Any = None  # the publisher's transactional channel
    con: Any = None  # consumer channel
    queues: dict[str, deque[Stored]] = field(default_factory=dict)
    unacked: dict[int, tuple[str, Stored]] = field(default_factory=dict)
    exclusive: set[str] = field(default_factory=set)
    transacted: bool = False
    pending_tx: list[tuple[str, Stored]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    counter: int = 0
    timeout: float = 10.0  # seconds a step may wait for the broker
    guarding: bool = False
    broken: Broken | None = None  # the invariant this program found broken, if any

    # -- connections ----------------------------------------------------------------------

    def open(self) -> None:
        options = {"heartbeat": 0, "blocked_connection_timeout": 10, "socket_timeout": 10}
        self.publisher = pika_connection(self.target, **options)
        self.consumer = pika_connection(self.target, **options)
        self.pub = self.publisher.channel()
        self.txc = self.publisher.channel()  # transactions have a channel of their own
        self.con = self.consumer.channel()

    def cut(self, done: threading.Event) -> None:
        """End the pika connections' waits: their sockets shut (a hung broker's step)."""
        done.set()
        for connection in (self.publisher, self.consumer):
            transport = getattr(getattr(connection, "_impl", None), "_transport", None)
            sock = getattr(transport, "_sock", None)
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Delete every queue this program declared (only those), then close."""
        with contextlib.suppress(Exception):
            channel = self.publisher.channel() if self.publisher.is_open else None
            for name in self.queues:
                if channel is not None and channel.is_open:
                    channel.queue_delete(name)
        for connection in (self.publisher, self.consumer):
            with contextlib.suppress(Exception):
                if connection is not None and connection.is_open:
                    connection.close()

    def step(self, name: str, **args: Any) -> None:
        self.trace.append(
            {"step": name, **{k: (v.hex() if isinstance(v, bytes) else v) for k, v in args.items()}}
        )

    def check(self, invariant: str, ok: bool, message: str) -> None:
        if not ok:
            step = self.trace[-1]["step"] if self.trace else "start"
            raise Broken(invariant, step, message)

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
        self.queues[name] = deque()
        if exclusive:
            self.exclusive.add(name)
        return name

    @guarded
    def publish(self, queue: str, body: bytes) -> None:
        """Publish on the transactional channel while a transaction is open, else plainly."""
        self.step("publish", queue=queue, body=body)
        if self.transacted:
            self.txc.basic_publish("", queue, body)
            self.pending_tx.append((queue, Stored(body)))
        else:
            self.pub.basic_publish("", queue, body)
            self.queues[queue].append(Stored(body))

    @guarded
    def count(self, queue: str) -> None:
        """passive declare: the count must become what the model holds. A broker acts on a
        queue asynchronously (a requeue, a publish routed by another process), so the count
        is asked again, for a while, until it agrees or the broker has had time enough."""
        self.step("count", queue=queue)
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
        self.count(queue)  # makes the publisher's messages visible before the other connection asks
        self.trace.pop()
        method, _, body = self.con.basic_get(queue, auto_ack=False)
        ready = self.queues[queue]
        if method is None:
            self.check("no message lost", not ready, f"get-empty while {len(ready)} are ready")
            return
        self.check(
            "none invented", bool(ready), f"got {body!r} from a queue the model says is empty"
        )
        expected = ready.popleft()
        self.check("order", body == expected.body, f"got {body!r}, expected {expected.body!r} next")
        self.check(
            "redelivered flag",
            method.redelivered == expected.redelivered,
            f"redelivered={method.redelivered}, expected {expected.redelivered}",
        )
        self.check(
            "get-ok count",
            method.message_count == len(ready),
            f"get-ok says {method.message_count} remain, the model {len(ready)}",
        )
        self.unacked[method.delivery_tag] = (queue, expected)

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
            self.queues[queue].appendleft(Stored(message.body, redelivered=True))

    @guarded
    def purge(self, queue: str) -> None:
        self.step("purge", queue=queue)
        self.count(queue)
        self.trace.pop()
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
        """A single consumer receives every ready message, in order, then cancels."""
        self.step("consume", queue=queue)
        self.count(queue)
        self.trace.pop()
        ready = self.queues[queue]
        got: list[tuple[Any, bytes]] = []
        tag = self.con.basic_consume(queue, lambda ch, m, p, b: got.append((m, b)), auto_ack=True)
        deadline = time.monotonic() + 5
        while len(got) < len(ready) and time.monotonic() < deadline:
            self.consumer.process_data_events(time_limit=0.05)
        self.con.basic_cancel(tag)
        self.consumer.process_data_events(time_limit=0.05)
        self.check(
            "no message lost", len(got) >= len(ready), f"consumed {len(got)} of {len(ready)}"
        )
        self.check(
            "none invented", len(got) <= len(ready), f"consumed {len(got)}, {len(ready)} were ready"
        )
        for (method, body), expected in zip(got, list(ready), strict=False):
            self.check(
                "order", body == expected.body, f"consumed {body!r}, expected {expected.body!r}"
            )
            self.check(
                "redelivered flag",
                method.redelivered == expected.redelivered,
                f"redelivered={method.redelivered}",
            )
        ready.clear()

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
            for tag in sorted(self.unacked, reverse=True):
                name, message = self.unacked.pop(tag)
                self.queues[name].appendleft(Stored(message.body, redelivered=True))
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
                self.queues[queue].append(message)
            self.pending_tx.clear()
        elif action == "rollback" and self.transacted:
            self.txc.tx_rollback()
            self.pending_tx.clear()

    @guarded
    def confirms(self, queue: str, bodies: list[bytes]) -> None:
        """On a connection of its own in confirm mode, every publish is confirmed exactly
        once (basic.ack with single or multiple tags; our raw connection, to see them all)."""
        self.step("confirms", queue=queue, bodies=[b.hex() for b in bodies])
        self.count(queue)  # the publisher's own messages go first
        self.trace.pop()
        connection = Connection.open(self.target, protocol="0-9-1-rabbit")
        codec = connection.codec
        try:
            if connection.open_channel(1) is not None:
                self.check("confirms once", False, "could not open a channel")
            select = connection.call(codec.method("confirm.select", 1))
            self.check(
                "confirms once", isinstance(select, MethodFrame), f"confirm.select: {select}"
            )
            for body in bodies:
                connection.send_frame(codec.method("basic.publish", 1, routing_key=queue))
                connection.send(
                    codec.encode_all(codec.content(1, body, frame_max=connection.frame_max))
                )
                self.queues[queue].append(Stored(body))
            acks: list[tuple[int, bool]] = []
            deadline = time.monotonic() + 5
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
                f"confirmed tags {seen} for {len(bodies)} publishes",
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
