"""Reproducer files: one JSON file per failure, enough to replay it against any broker.

Three kinds (``kind``): a fuzz ``case`` (the exact bytes sent, in hex, step by step, what the
case needed before it ran, the reaction the specification requires, what the broker did, the
seed and the blob Hypothesis drew), the ``traffic`` of a crash that needs several cases (every
byte on every connection, in the order it went out) and a stateful ``program`` (its steps, the
invariant it broke). Files are written atomically (a ``.part`` file renamed into place), and credentials
never go in: the target is its safe URL. What a reproducer holds is made, and replayed, by
:mod:`amqpfuzz.fuzzer.engine.replay`; this module only writes and reads the files.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from amqpfuzz.spec import AmqpfuzzError

__all__ = ["FORMAT", "REPRODUCER_KINDS", "ReproducerError", "load_reproducer", "write_reproducer"]

FORMAT = 1
REPRODUCER_KINDS = ("case", "program", "traffic")


class ReproducerError(AmqpfuzzError):
    """A reproducer file that cannot be read."""


def write_reproducer(directory: Path, name: str, data: dict[str, Any]) -> Path:
    """Write ``data`` (with its ``kind``) as ``directory/name.json``, atomically."""
    if data.get("kind") not in REPRODUCER_KINDS:
        raise ValueError(f"reproducer kind {data.get('kind')!r} is not one of {REPRODUCER_KINDS}")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    content = {
        "format": FORMAT,
        **data,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    temporary = path.with_name(path.name + ".part")
    temporary.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def load_reproducer(path: Path | str) -> dict[str, Any]:
    """A reproducer's data (ReproducerError, naming the file, for anything else)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReproducerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReproducerError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReproducerError(f"{path}: not an amqpfuzz reproducer")
    kind = data.setdefault("kind", "case")  # files written before there were two kinds
    if kind == "case":
        try:
            bytes.fromhex(data["bytes_hex"])
        except KeyError:
            raise ReproducerError(f"{path}: not an amqpfuzz reproducer (no bytes_hex)") from None
        except (TypeError, ValueError):
            raise ReproducerError(f"{path}: bytes_hex is not hexadecimal") from None
    elif kind == "traffic":
        traffic = data.get("traffic")
        if not isinstance(traffic, list) or not all(
            isinstance(s, dict) and {"connection", "hex"} <= set(s) for s in traffic
        ):
            raise ReproducerError(f"{path}: a traffic reproducer needs its traffic")
    elif kind == "program":
        steps = data.get("steps")
        if not isinstance(steps, list) or not all(
            isinstance(s, dict) and "step" in s for s in steps
        ):
            raise ReproducerError(f"{path}: a program reproducer needs a list of steps")
    else:
        raise ReproducerError(f"{path}: unknown kind of reproducer {kind!r}")
    return data
