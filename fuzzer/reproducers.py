"""Reproducers: one JSON file per failure, enough to replay it against any broker.

A reproducer holds the exact bytes sent (in hex, step by step, with what each step is), what the
case needed before it ran (an open channel, a channel not open), the reaction the specification
requires, what the broker did, the seed, and the blob Hypothesis drew (drawing it again gives
the same case). Credentials never go in: the target is its safe URL.
``amqpfuzz replay FILE [--url URL]`` sends the bytes again and says whether the failure is still
there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amqpfuzz.spec import AmqpfuzzError
from amqpfuzz.strategies import Case, Reaction, WireFrame

from .oracles import Failure
from .runner import Result, Runner, own_channel
from .targets import Target
from .transport import Outcome

__all__ = ["Replay", "ReproducerError", "load_reproducer", "replay", "write_reproducer"]

FORMAT = 1


class ReproducerError(AmqpfuzzError):
    """A reproducer file that cannot be read."""


def _reaction(reaction: Reaction) -> dict[str, Any]:
    return {
        "outcome": reaction.outcome,
        "codes": [{"name": c.name, "value": c.value} for c in reaction.codes],
        "responses": list(reaction.responses),
        "or_reply": reaction.or_reply,
        "tolerated": [{"name": c.name, "value": c.value} for c in reaction.tolerated],
        "text": str(reaction),
    }


def write_reproducer(
    directory: Path,
    result: Result,
    *,
    target: Target,
    seed: str,
    protocol: str,
    frame_max: int,
    record_id: str,
) -> Path:
    """Write ``result``'s reproducer into ``directory``; returns its path."""
    case, failure = result.case, result.failure
    assert failure is not None
    channel = own_channel(case)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"repro-{record_id}.json"
    data = {
        "format": FORMAT,
        "record_id": record_id,
        "target": target.safe_url,
        "protocol": protocol,
        "frame_max": frame_max,
        "seed": seed,
        "spec_ref": case.spec_ref,
        "mutation": case.mutation,
        "channel": case.channel,
        "case": repr(case),
        "steps": [{"label": step.label, "hex": step.render(channel).hex()} for step in case.steps],
        # rendered on the channel a replay runs it on (see Runner.run_alone)
        "bytes_hex": case.render(channel).hex(),
        "channel_number": channel,
        "expected": _reaction(case.expected),
        "observed": result.outcome.as_record() | {"text": result.outcome.text},
        "failure": failure.as_record(),
        "blob_hex": case.blob.hex(),
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    temporary = path.with_suffix(".json.part")
    temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def load_reproducer(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReproducerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReproducerError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or "bytes_hex" not in data:
        raise ReproducerError(f"{path}: not an amqpfuzz reproducer")
    try:
        bytes.fromhex(data["bytes_hex"])
    except (TypeError, ValueError):
        raise ReproducerError(f"{path}: bytes_hex is not hexadecimal") from None
    return data


@dataclass(frozen=True)
class Replay:
    """What replaying a reproducer came to."""

    outcome: Outcome
    failure: Failure | None
    signature: str

    @property
    def reproduced(self) -> bool:
        """The same failure (by signature) happened again."""
        return self.failure is not None and self.failure.signature == self.signature


def replay(data: dict[str, Any], target: Target, *, timeout: float = 5.0) -> Replay:
    """Send a reproducer's bytes to ``target`` the way the fuzzer sent them (a connection of
    their own, the probe, the same oracles), and say what came of it."""
    from amqpfuzz.spec.amqp091 import load

    protocol = data.get("protocol", "0-9-1")
    spec = load(protocol)
    expected = data["expected"]
    try:
        reaction = Reaction(
            expected["outcome"],
            tuple(spec.constant(c["name"]) for c in expected["codes"]),
            tuple(expected["responses"]),
            bool(expected["or_reply"]),
            tuple(spec.constant(c["name"]) for c in expected["tolerated"]),
        )
    except (KeyError, TypeError) as exc:
        raise ReproducerError(f"the reproducer's expected reaction is unreadable: {exc}") from None
    step = WireFrame(
        0, 0, b"", note="the recorded bytes", verbatim=bytes.fromhex(data["bytes_hex"])
    )
    case = Case((step,), reaction, data["spec_ref"], data["mutation"], data["channel"])
    runner = Runner(target, protocol=protocol, timeout=timeout, in_flight=1)
    try:
        result = runner.run_alone(case)
    finally:
        runner.close()
    return Replay(result.outcome, result.failure, data["failure"]["signature"])
