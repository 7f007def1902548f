"""Replaying a stateful program's steps, as its reproducer keeps them, without Hypothesis."""

from __future__ import annotations

from collections.abc import Callable

from ....brokers import Target
from ...base import Broken, ProgramStep
from .model import Program

__all__ = ["replay_program"]


def replay_program(
    steps: list[ProgramStep], target: Target, prefix: str, timeout: float = 10.0
) -> Broken | None:
    """Run a stateful program's steps again (without Hypothesis); the invariant it breaks
    now, if any. Its queues are named under ``prefix``, numbered as they were."""
    program = Program(target, prefix, timeout=timeout)
    program.open()
    names: list[str] = []
    try:
        for step in steps:
            kind = step["step"]
            if kind == "declare":
                names.append(program.declare(step.get("exclusive", False)))
            elif kind in ("publish", "count", "get", "purge", "consume", "exclusive"):
                queue = _replayed_name(step["queue"], program)
                method: Callable[[str], None] = {  # type: ignore[assignment]
                    "publish": program.publish,
                    "count": program.count,
                    "get": program.get,
                    "purge": program.purge,
                    "consume": program.consume_all,
                    "exclusive": program.exclusive_refused,
                }[kind]
                if kind == "publish":
                    program.publish(queue, bytes.fromhex(step["body"]))
                else:
                    method(queue)
            elif kind == "settle":
                program.settle(step["how"], step.get("requeue", False))
            elif kind == "tx":
                program.tx(step["action"])
            elif kind == "confirms":
                program.confirms(
                    _replayed_name(step["queue"], program),
                    [bytes.fromhex(b) for b in step["bodies"]],
                )
    except Broken as exc:
        return exc
    finally:
        program.close()
    return None


def _replayed_name(recorded: str, program: Program) -> str:
    """Queues are numbered in order of declaration; the replay's own prefix replaces the run's."""
    number = recorded.rsplit("q", 1)[-1]
    return f"{program.prefix}q{number}"
