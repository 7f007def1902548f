"""Stateful 1.0 programs through python-qpid-proton: the program, its model and its steps
(:mod:`.model`), the state machine that makes programs (:mod:`.machine`), and the replay of a
program's steps (:mod:`.replay`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ....brokers import Target
from ...family import Broken, ProgramStep
from .machine import machine_for
from .model import Program
from .replay import replay_program

if TYPE_CHECKING:
    from hypothesis.stateful import RuleBasedStateMachine

__all__ = ["PROGRAMS", "Program", "machine_for", "replay_program"]


class Amqp10Programs:
    """The family's stateful programs; on a throwaway broker, ``restart`` lets a program kill
    and restart it once."""

    def machine(
        self,
        target: Target,
        prefix: str,
        on_program: Callable[[Any], None],
        timeout: float,
        avoid: frozenset[str],
        restart: Callable[[], object] | None,
    ) -> AbstractContextManager[type[RuleBasedStateMachine]]:
        return machine_for(target, prefix, on_program, timeout, avoid, restart)

    def replay(
        self,
        steps: list[ProgramStep],
        target: Target,
        prefix: str,
        timeout: float,
        restart: Callable[[], object] | None,
    ) -> Broken | None:
        return replay_program(steps, target, prefix, timeout, restart)


PROGRAMS = Amqp10Programs()
