"""Stateful programs on a 0-8/0-9/0-9-1 broker through pika: the model and its steps, the
state machine that makes programs, and the replay of a program's steps."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ....brokers import Target
from ...family import Broken, ProgramStep
from .machine import machine_for
from .model import Program, Stored
from .replay import replay_program

if TYPE_CHECKING:
    from hypothesis.stateful import RuleBasedStateMachine

__all__ = ["PROGRAMS", "Program", "Stored", "machine_for", "replay_program"]


class Amqp091Programs:
    """The family's stateful programs (they never restart the broker: ``restart`` is not
    theirs to use)."""

    @contextmanager
    def machine(
        self,
        target: Target,
        prefix: str,
        on_program: Callable[[Any], None],
        timeout: float,
        avoid: frozenset[str],
        restart: Callable[[], object] | None,
    ) -> Iterator[type[RuleBasedStateMachine]]:
        with machine_for(target, prefix, on_program, timeout, avoid) as machine:
            yield machine

    def replay(
        self,
        steps: list[ProgramStep],
        target: Target,
        prefix: str,
        timeout: float,
        restart: Callable[[], object] | None,
    ) -> Broken | None:
        return replay_program(steps, target, prefix, timeout)


PROGRAMS = Amqp091Programs()
