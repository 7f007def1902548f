"""Replaying a stateful program's steps, as its reproducer keeps them, without Hypothesis."""

from __future__ import annotations

from typing import Any

from ....brokers import Target
from ...family import Broken, ProgramStep
from .model import Program

__all__ = ["replay_program"]

# the steps that act on one queue, and the arguments each takes besides it
ON_QUEUE: dict[str, tuple[str, ...]] = {
    "publish": ("body",),
    "publish_many": ("count",),
    "count": (),
    "get": (),
    "purge": (),
    "consume": (),
    "share": ("consumers", "prefetch", "ack_every"),
    "abandon": ("prefetch", "acked"),
    "exclusive": (),
}


def replay_program(
    steps: list[ProgramStep], target: Target, prefix: str, timeout: float = 10.0
) -> Broken | None:
    """Run a stateful program's steps again (without Hypothesis); the invariant it breaks
    now, if any. Its queues are named under ``prefix``, numbered as they were."""
    program = Program(target, prefix, timeout=timeout)
    program.open()
    try:
        for step in steps:
            kind = step["step"]
            if kind == "declare":
                program.declare(step.get("exclusive", False))
            elif kind in ON_QUEUE:
                queue = _replayed_name(step["queue"], program)
                args: list[Any] = [step[name] for name in ON_QUEUE[kind]]
                if kind == "publish":
                    args = [bytes.fromhex(step["body"])]
                method = "consume_all" if kind == "consume" else kind
                method = "exclusive_refused" if kind == "exclusive" else method
                getattr(program, method)(queue, *args)
            elif kind == "settle":
                program.settle(step["how"], step.get("requeue", False))
            elif kind == "tx":
                program.tx(step["action"])
            elif kind == "confirms":
                sent = step.get("count")
                if sent is None:
                    sent = [bytes.fromhex(b) for b in step["bodies"]]
                program.confirms(_replayed_name(step["queue"], program), sent)
    except Broken as exc:
        return exc
    finally:
        program.close()
    return None


def _replayed_name(recorded: str, program: Program) -> str:
    """Queues are numbered in order of declaration; the replay's own prefix replaces the run's."""
    number = recorded.rsplit("q", 1)[-1]
    return f"{program.prefix}q{number}"
