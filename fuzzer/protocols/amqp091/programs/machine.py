"""The Hypothesis state machine that makes stateful programs: rules over queues, messages,
settlements, consumers, transactions and confirms, each a step of :class:`~.model.Program`.

Programs are long (hundreds of steps, thousands of messages in a round: ``publish_many`` and
``confirms`` send hundreds at once) and share their connections with the next program of the
round while healthy (:class:`~.clients.Clients`); Hypothesis shrinks a failing one as ever (a
burst's count shrinks with the rest)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, precondition, rule

from ....brokers import Target
from .clients import Clients
from .model import Program

__all__ = ["machine_for"]


bodies = st.binary(min_size=0, max_size=64)


@contextlib.contextmanager
def machine_for(
    target: Target,
    prefix: str,
    on_program: Callable[[Program], None],
    timeout: float = 10.0,
    avoid: frozenset[str] = frozenset(),
) -> Iterator[type[RuleBasedStateMachine]]:
    """A state machine class bound to a target (Hypothesis instantiates it per program); its
    programs share connections until the block ends, and take no step named in ``avoid``."""
    with Clients(target) as clients:
        yield _machine(clients, prefix, on_program, timeout, avoid)


def _machine(
    clients: Clients,
    prefix: str,
    on_program: Callable[[Program], None],
    timeout: float,
    avoid: frozenset[str],
) -> type[RuleBasedStateMachine]:
    def unless(step: str) -> Callable[[Any], Any]:
        """A rule whose step hung before is not taken again (the run knows that hang)."""
        return precondition(lambda self: step not in avoid)

    class BrokerMachine(RuleBasedStateMachine):
        queues = Bundle("queues")

        def __init__(self) -> None:
            super().__init__()
            self.program = Program(
                clients.target,
                f"{prefix}{time.monotonic_ns() % 10**9}-",
                clients=clients,
                timeout=timeout,
            )
            on_program(self.program)

        def shared(self, queue: str) -> bool:
            """A queue the consumer connection may use (not the publisher's exclusive one)."""
            return queue not in self.program.exclusive

        @initialize()
        def connect(self) -> None:
            self.program.open()

        @unless("declare")
        @rule(target=queues, exclusive=st.booleans())
        def declare(self, exclusive: bool) -> str:
            return self.program.declare(exclusive)

        @unless("publish")
        @rule(queue=queues, body=bodies)
        def publish(self, queue: str, body: bytes) -> None:
            self.program.publish(queue, body)

        @unless("publish_many")
        @rule(queue=queues, count=st.integers(1, 300))
        def publish_many(self, queue: str, count: int) -> None:
            self.program.publish_many(queue, count)

        @unless("count")
        @rule(queue=queues)
        def count(self, queue: str) -> None:
            self.program.count(queue)

        @unless("get")
        @rule(queue=queues)
        def get(self, queue: str) -> None:
            if self.shared(queue):
                self.program.get(queue)

        @unless("settle")
        @rule(how=st.sampled_from(["ack", "reject", "nack"]), requeue=st.booleans())
        def settle(self, how: str, requeue: bool) -> None:
            self.program.settle(how, requeue)

        @unless("purge")
        @rule(queue=queues)
        def purge(self, queue: str) -> None:
            if self.shared(queue):
                self.program.purge(queue)

        @unless("consume")
        @rule(queue=queues)
        def consume(self, queue: str) -> None:
            # (not a precondition: what is unacknowledged depends on the broker's answers,
            # and what Hypothesis draws must not)
            if self.shared(queue) and not self.program.unacked:
                self.program.consume_all(queue)

        @unless("share")
        @rule(
            queue=queues,
            consumers=st.integers(1, 3),
            prefetch=st.integers(1, 50),
            ack_every=st.integers(1, 50),
        )
        def share(self, queue: str, consumers: int, prefetch: int, ack_every: int) -> None:
            if self.shared(queue):
                self.program.share(queue, consumers, prefetch, min(ack_every, prefetch))

        @unless("abandon")
        @rule(queue=queues, prefetch=st.integers(1, 20), acked=st.integers(0, 20))
        def abandon(self, queue: str, prefetch: int, acked: int) -> None:
            if self.shared(queue):
                self.program.abandon(queue, prefetch, min(acked, prefetch))

        @unless("exclusive")
        @rule(queue=queues)
        def exclusive_refused(self, queue: str) -> None:
            if not self.shared(queue):
                self.program.exclusive_refused(queue)

        @unless("tx")
        @precondition(lambda self: not self.program.transacted)
        @rule()
        def tx_select(self) -> None:
            self.program.tx("select")

        @unless("tx")
        @precondition(lambda self: self.program.transacted)
        @rule(action=st.sampled_from(["commit", "rollback"]))
        def tx_end(self, action: str) -> None:
            self.program.tx(action)

        @unless("confirms")
        @rule(queue=queues, count=st.integers(1, 200))
        def confirms(self, queue: str, count: int) -> None:
            if self.shared(queue):  # the confirming connection is another
                self.program.confirms(queue, count)

        def teardown(self) -> None:
            self.program.close()

    return BrokerMachine
