"""Replaying a stateful 1.0 program's steps, as its reproducer keeps them, without
Hypothesis."""

from __future__ import annotations

from collections.abc import Callable

from ....brokers import Target
from ...family import Broken, NotReplayable, ProgramStep
from .model import Program

__all__ = ["replay_program"]


def replay_program(
    steps: list[ProgramStep],
    target: Target,
    prefix: str,
    timeout: float = 10.0,
    restart: Callable[[], object] | None = None,
) -> Broken | None:
    """The program's steps again, without Hypothesis; the invariant it breaks now, if any. A
    program that restarts the broker needs ``restart``."""
    if restart is None and any(step["step"] == "restart" for step in steps):
        raise NotReplayable(
            "the program restarts the broker: replay it on a throwaway broker (--broker KIND)"
        )
    program = Program(target, prefix, timeout, restart=restart)
    try:
        for step in steps:
            kind = step["step"]
            if kind == "open":
                program.open()
            elif kind == "send":
                durable, exactly = bool(step.get("durable")), bool(step.get("exactly"))
                node, count, sure = int(step["node"]), int(step["count"]), bool(step["sure"])
                program.send(node, count, sure, durable, exactly)
            elif kind == "detach":
                program.detach(int(step["node"]))
            elif kind == "reconnect":
                program.reconnect()
            elif kind == "restart":
                program.restart_broker()
            elif kind == "receive":
                program.receive(
                    int(step["node"]), int(step["credit"]), int(step["take"]), str(step["outcome"])
                )
            elif kind == "drain":
                program.drain()
    except Broken as exc:
        return exc
    finally:
        program.close()
    return None
