"""The Hypothesis state machine that makes stateful programs: rules over queues, messages,
settlements, transactions and confirms, each a step of :class:`~.model.Program`."""

from __future__ import annotations

import time
from collections.abc import Callable

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule

from ....brokers import Target
from .model import Program

__all__ = ["machine_for"]


bodies = st.binary(min_size=0, max_size=64)


def machine_for(
    target: Target,
    prefix: str,
    on_program: Callable[[Program], None],
    timeout: float = 10.0,
) -> type[RuleBasedStateMachine]:
    """A state machine class bound to a target (Hypothesis instantiates it per program)."""

    class BrokerMachine(RuleBasedStateMachine):
        queues = Bundle("queues")

        def __init__(self) -> None:
            super().__init__()
            self.program = Program(
                target, f"{prefix}{time.monotonic_ns() % 10**9}-", timeout=timeout
            )
            on_program(self.program)

        @initialize()
        def connect(self) -> None:
            self.program.open()

        @rule(target=queues, exclusive=st.booleans())
        def declare(self, exclusive: bool) -> str:
            return self.program.declare(exclusive)

        @rule(queue=queues, body=bodies)
        def publish(self, queue: str, body: bytes) -> None:
            self.program.publish(queue, body)

        @rule(queue=queues)
        def count(self, queue: str) -> None:
            self.program.count(queue)

        @rule(queue=queues)
        def get(self, queue: str) -> None:
            if queue not in self.program.exclusive:
                self.program.get(queue)

        @rule(how=st.sampled_from(["ack", "reject", "nack"]), requeue=st.booleans())
        def settle(self, how: str, requeue: bool) -> None:
            self.program.settle(how, requeue)

        @rule(queue=queues)
        def purge(self, queue: str) -> None:
            if queue not in self.program.exclusive:
                self.program.purge(queue)

        @rule(queue=queues)
        def consume(self, queue: str) -> None:
            if queue not in self.program.exclusive and not self.program.unacked:
                self.program.consume_all(queue)

        @rule(queue=queues)
        def exclusive_refused(self, queue: str) -> None:
            if queue in self.program.exclusive:
                self.program.exclusive_refused(queue)

        @rule(action=st.sampled_from(["select", "commit", "rollback"]))
        def tx(self, action: str) -> None:
            self.program.tx(action)

        @rule(queue=queues, sent=st.lists(bodies, min_size=1, max_size=5))
        def confirms(self, queue: str, sent: list[bytes]) -> None:
            if queue not in self.program.exclusive:  # the confirming connection is another
                self.program.confirms(queue, sent)

        def teardown(self) -> None:
            self.program.close()

    return BrokerMachine
