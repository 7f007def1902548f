"""The Hypothesis state machine that makes stateful 1.0 programs: rules that send, receive
and settle, detach a receiving link, reconnect and (once, on a throwaway broker) restart the
broker, each a step of :class:`~.model.Program`; the program drains every node at its end."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from ....brokers import Target
from .model import OUTCOMES, Program

__all__ = ["machine_for"]

NODES = 3
RECONNECT_ODDS = 4  # a reconnect rule drawn acts once in this many
RESTART_ODDS = 8  # a restart rule drawn acts once in this many (a restart takes seconds)


@contextlib.contextmanager
def machine_for(
    target: Target,
    prefix: str,
    on_program: Callable[[Program], None],
    timeout: float = 10.0,
    avoid: frozenset[str] = frozenset(),
    restart: Callable[[], object] | None = None,
) -> Iterator[type[RuleBasedStateMachine]]:
    """The state machine class bound to ``target``; no step named in ``avoid`` is taken; with
    ``restart`` (which kills and restarts the broker), a program may restart it once."""

    def unless(step: str) -> Callable[[Any], Any]:
        return precondition(lambda self: step not in avoid)

    class Machine10(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.program = Program(target, f"{prefix}{time.monotonic_ns() % 10**9}-", timeout)
            self.program.restart = restart
            on_program(self.program)

        @initialize()
        def connect(self) -> None:
            self.program.open()

        @unless("send")
        @rule(
            node=st.integers(0, NODES - 1),
            count=st.integers(1, 20),
            sure=st.booleans(),
            durable=st.booleans(),
            exactly=st.integers(0, 3),
        )
        def send(self, node: int, count: int, sure: bool, durable: bool, exactly: int) -> None:
            # one at-least-once send in four asks for exactly-once, until that hung once
            once = exactly == 3 and "exactly-once" not in avoid
            self.program.send(node, count, sure, durable, once)

        @unless("detach")
        @rule(node=st.integers(0, NODES - 1))
        def detach(self, node: int) -> None:
            if node in self.program.receivers:
                self.program.detach(node)

        @unless("reconnect")
        @rule(odds=st.integers(0, RECONNECT_ODDS - 1))
        def reconnect(self, odds: int) -> None:
            if odds == RECONNECT_ODDS - 1:  # (shrinking goes to 0: away from a reconnect)
                self.program.reconnect()

        @unless("restart")
        @precondition(lambda self: restart is not None and not self.program.restarted)
        @rule(odds=st.integers(0, RESTART_ODDS - 1))
        def restart_broker(self, odds: int) -> None:
            # once in RESTART_ODDS (shrinking goes to 0: away from a restart it can do without)
            survivors = [s for m in self.program.nodes.values() for s in m if s.durable and s.sure]
            if odds == RESTART_ODDS - 1 and survivors:
                self.program.restart_broker()

        @unless("receive")
        @rule(
            node=st.integers(0, NODES - 1),
            credit=st.integers(1, 10),
            take=st.integers(1, 5),
            outcome=st.sampled_from(OUTCOMES),
        )
        def receive(self, node: int, credit: int, take: int, outcome: str) -> None:
            waiting = [s for s in self.program.nodes.get(node, []) if s.sure]
            if len(waiting) >= take:  # (what is there depends on the broker: not a precondition)
                self.program.receive(node, credit, take, outcome)

        def teardown(self) -> None:
            try:
                if self.program.broken is None and self.program.connection is not None:
                    self.program.drain()
            finally:
                self.program.close()

    yield Machine10
