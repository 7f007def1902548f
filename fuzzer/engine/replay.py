"""What is kept of a failure, and replaying it: every kind of reproducer replays.

A fuzz case's reproducer holds its exact bytes, rendered on the channel a replay runs it on (a
connection of its own, as the runner runs such cases), the reaction required and the one seen;
replaying sends the same bytes the same way and judges them with the same oracles. A crash that
needs several cases holds their traffic (every byte on every connection, in order); replaying
sends it again and asks whether the broker survives. A stateful program's reproducer holds its
steps; replaying runs them again through the driver's client and checks the same invariants.
Either way the answer is the failure's signature now (None: fixed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL
from amqpfuzz.strategies import Case, Placement, Reaction

from ..brokers import Target
from ..protocols import Broken, ProgramStep
from ..protocols.families import driver_for, programs_for
from ..records import reaction_of
from ..records.reproducers import INLINE, ReproducerError, pack, unpack, write_reproducer
from . import signatures
from .runner import Result, Runner
from .traffic import as_data, from_data, send, survives

__all__ = [
    "Replay", "case_of", "replay", "run_alone", "write_case", "write_program", "write_traffic",
]  # fmt: skip


def write_case(
    directory: Path,
    result: Result,
    *,
    target: Target,
    seed: str,
    protocol: str,
    frame_max: int,
    record_id: str,
    prefix: str = "",
    more: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> Path:
    """Write the reproducer of a failed case as ``repro-<record_id>.json`` (``prefix``: the
    run's, which its names start with; ``more``: what else it says, such as the broker it
    was found on and how its replays went; ``name``: another file name)."""
    case, failure = result.case, result.failure
    assert failure is not None
    channel = driver_for(protocol).own_channel(case)
    data = {
        "kind": "case",
        "record_id": record_id,
        "target": target.safe_url,
        "protocol": protocol,
        "frame_max": frame_max,
        "seed": seed,
        "prefix": prefix,
        "spec_ref": case.spec_ref,
        "mutation": case.operator,
        "level": case.level,
        "channel": case.placement.value,
        "case": repr(case),
        "steps": _steps(case, channel),
        # rendered on the channel a replay runs it on (see Runner.run_alone)
        **pack(case.render(channel), "bytes_"),
        "channel_number": channel,
        "expected": case.expected.as_dict(),
        "observed": reaction_of(result.outcome) | {"text": result.outcome.text},
        "failure": failure.as_record(),
        "blob_hex": case.blob.hex(),
        **(more or {}),
    }
    return write_reproducer(directory, name or f"repro-{record_id}", data)


def _steps(case: Case, channel: int) -> list[dict[str, Any]]:
    """Each step's label and size; and its bytes in hex when the whole case is kept in hex
    (a larger case's bytes are kept once, compressed)."""
    rendered = [(step.label, step.render(channel)) for step in case.steps]
    inline = sum(len(data) for _, data in rendered) <= INLINE
    return [
        {"label": label, "size": len(data)} | ({"hex": data.hex()} if inline else {})
        for label, data in rendered
    ]


def write_traffic(
    directory: Path,
    result: Result,
    *,
    target: Target,
    seed: str,
    protocol: str,
    record_id: str,
    more: Mapping[str, Any] | None = None,
) -> Path:
    """Write the reproducer of a crash that needs several cases: their traffic, in order."""
    failure = result.failure
    assert failure is not None
    data = {
        "kind": "traffic",
        "record_id": record_id,
        "target": target.safe_url,
        "protocol": protocol,
        "seed": seed,
        "spec_ref": result.case.spec_ref,
        "failure": failure.as_record(),
        "connections": len({s.connection for s in result.traffic}),
        "traffic": as_data(result.traffic),
        **(more or {}),
    }
    return write_reproducer(directory, f"repro-{record_id}", data)


def write_program(
    directory: Path,
    steps: list[ProgramStep],
    broken: Broken,
    *,
    target: Target,
    seed: str,
    protocol: str,
    record_id: str,
    more: Mapping[str, Any] | None = None,
) -> Path:
    """Write the reproducer of a stateful program that broke an invariant."""
    data = {
        "kind": "program",
        "record_id": record_id,
        "target": target.safe_url,
        "protocol": protocol,
        "seed": seed,
        "invariant": broken.invariant,
        "step": broken.step,
        "message": broken.message,
        "failure": {
            "oracle": "stateful",
            "signature": signatures.program(broken.invariant, broken.step),
            "message": broken.message,
        },
        "steps": steps,
        **(more or {}),
    }
    return write_reproducer(directory, f"repro-{record_id}", data)


@dataclass(frozen=True)
class Replay:
    """What replaying a reproducer came to: the recorded failure's signature, the one now
    (None: the broker now does what the specification requires), and both in words."""

    signature: str
    now: str | None
    expected: str
    observed: str
    # replayed with nothing else at the broker (the command a user runs; a campaign's hang
    # replayed on its throwaway broker restarted): only then is a broker found down its doing
    alone: bool = True

    @property
    def reproduced(self) -> bool:
        """The same failure (by signature) happened again; or a hang, replayed alone, left the
        whole broker unanswering (the same case's liveness failure: the hang, worse; which of
        the two a replay sees depends on whether the probe after it meets the stuck part)."""
        if self.now == self.signature:
            return True
        return (
            self.alone
            and self.signature.startswith("hang:")
            and self.now is not None
            and self.now.startswith("liveness:")
            and self.now.endswith("->broker-down")
            and _case_part(self.now) == _case_part(self.signature)
        )


def _case_part(signature: str) -> str:
    """A signature without its oracle and what was observed: method, operator, expected."""
    return signature.split(":", 1)[-1].rsplit("->", 1)[0]


def replay(
    data: dict[str, Any],
    target: Target,
    *,
    timeout: float = 5.0,
    restart: Callable[[], object] | None = None,
    created: set[Any] | None = None,
) -> Replay:
    """Replay a reproducer (as :func:`~amqpfuzz.fuzzer.records.load_reproducer` reads it)
    against ``target``; ``restart`` kills and restarts it (a throwaway broker), for a program
    that restarts the broker; ``created``: where a case's names go to be deleted later (else
    they are deleted at once)."""
    try:
        signature = str(data["failure"]["signature"])
    except (KeyError, TypeError):
        raise ReproducerError("the reproducer names no failure signature") from None
    if data.get("kind", "case") == "program":
        return _replay_program(data, target, signature, timeout, restart)
    if data.get("kind") == "traffic":
        return _replay_traffic(data, target, signature, timeout)
    return _replay_case(data, target, signature, timeout, created)


def _replay_case(
    data: dict[str, Any], target: Target, signature: str, timeout: float, created: set[Any] | None
) -> Replay:
    """The recorded bytes on a connection of their own, the probe, the same oracles."""
    protocol = str(data.get("protocol", DEFAULT_PROTOCOL))
    case = case_of(data)
    # the run's prefix: what the bytes declare with it is deleted again afterwards
    prefix = str(data.get("prefix", ""))
    result = run_alone(case, target, protocol, timeout, prefix, created)
    now = result.failure.signature if result.failure is not None else None
    return Replay(signature, now, str(case.expected), str(result.outcome))


def case_of(data: dict[str, Any]) -> Case:
    """The case a case reproducer holds: its recorded bytes, as the steps its driver reads."""
    driver = driver_for(str(data.get("protocol", DEFAULT_PROTOCOL)))
    try:
        reaction = Reaction.from_dict(data["expected"], driver.code)
    except (KeyError, TypeError) as exc:
        raise ReproducerError(f"the reproducer's expected reaction is unreadable: {exc}") from None
    steps, frames = driver.recorded(unpack(data, "bytes_"))
    return Case(
        steps,
        reaction,
        str(data["spec_ref"]),
        data.get("mutation"),
        Placement(data["channel"]),
        level=data.get("level") or _level(data),
        frames=frames if data.get("mutation") is None else (),
    )


def run_alone(
    case: Case,
    target: Target,
    protocol: str,
    timeout: float,
    prefix: str,
    created: set[Any] | None = None,
) -> Result:
    """``case`` on a connection of its own, on a runner of its own (nothing a campaign's runner
    is sending meanwhile is touched), what it declared under ``prefix`` deleted afterwards; or,
    given ``created``, added to it for whoever holds it to delete later (a campaign's runner
    deletes its names once, at its end: a broker that does not answer a delete costs one
    timeout then, not one per replay)."""
    runner = Runner(target, protocol=protocol, timeout=timeout, in_flight=1, prefix=prefix)
    try:
        return runner.run_alone(case)
    finally:
        runner.close()
        if created is None:
            runner.cleanup()
        else:
            created.update(runner.created)


def _level(data: dict[str, Any]) -> str | None:
    """Reproducers written before they kept the operator's level: a signature that names the
    spec reference was a rule-breaking operator's."""
    if data.get("mutation") is None:
        return None
    parts = str(data["failure"]["signature"]).split(":")
    return "rule" if len(parts) > 2 and parts[1] == data.get("spec_ref") else None


def _replay_program(
    data: dict[str, Any],
    target: Target,
    signature: str,
    timeout: float,
    restart: Callable[[], object] | None,
) -> Replay:
    """The program's steps again, through the driver's client, the same invariants checked."""
    protocol = str(data.get("protocol", DEFAULT_PROTOCOL))
    prefix = f"amqpfuzz-replay-{time.monotonic_ns() % 10**9}-"
    steps = list(data["steps"])
    if not any(isinstance(s, dict) and s.get("step") == "restart" for s in steps):
        restart = None  # (only the families that restart take it)
    broken = programs_for(protocol).replay(steps, target, prefix, timeout, restart)
    now = signatures.program(broken.invariant, broken.step) if broken is not None else None
    observed = f"{broken.invariant} in {broken.step}: {broken.message}" if broken else "held"
    return Replay(signature, now, f"every invariant holds ({signature} broke)", observed)


def _replay_traffic(data: dict[str, Any], target: Target, signature: str, timeout: float) -> Replay:
    """The traffic again, on as many connections, in the same order; then: is the broker
    still there?"""
    driver = driver_for(str(data.get("protocol", DEFAULT_PROTOCOL)))
    try:
        traffic = from_data(data["traffic"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ReproducerError(f"the reproducer's traffic is unreadable: {exc}") from None
    send(driver, target, traffic, timeout)
    down = not survives(driver, target, timeout, None)
    observed = "the broker stopped accepting connections" if down else "the broker is still up"
    return Replay(signature, signature if down else None, "the broker stays up", observed)
