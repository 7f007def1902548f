"""Reproducer files: one JSON file per failure, enough to replay it against any broker.

Four kinds (``kind``): a fuzz ``case`` (the exact bytes sent, in hex, and each step's label
and size, what the case needed before it ran, the reaction the specification requires, what the broker did, the
seed and the blob Hypothesis drew), the ``traffic`` of a crash that needs several cases (every
byte on every connection, in the order it went out), a stateful ``program`` (its steps, the
invariant it broke) and a ``client`` campaign's server script (the blob it is read from, the
operators and valid share that read it, the client it failed). Files are written atomically (a ``.part`` file renamed into place), and credentials
never go in: the target is its safe URL. Bytes are hex up to ``INLINE`` octets; more (a frame
past frame-max, mostly one octet repeated) are kept zlib-compressed in base64 (``bytes_zlib``,
or a traffic segment's ``zlib``), which keeps a minute of such failures in megabytes rather than
hundreds of them. What a reproducer holds is made, and replayed, by
:mod:`amqpfuzz.fuzzer.engine.replay` (a client's by :mod:`amqpfuzz.fuzzer.clients.campaign`);
this module only writes and reads the files.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shlex
import shutil
import sys
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amqpfuzz.spec import AmqpfuzzError

__all__ = [
    "FORMAT", "INLINE", "REPRODUCER_KINDS", "ReproducerError", "load_reproducer", "pack",
    "replay_command", "unpack", "write_reproducer",
]  # fmt: skip

FORMAT = 1
REPRODUCER_KINDS = ("case", "program", "traffic", "client")
INLINE = 64 * 1024  # octets kept as readable hex; more are kept compressed


def pack(data: bytes, key: str = "") -> dict[str, str]:
    """``data`` under ``KEYhex`` (up to INLINE octets) or ``KEYzlib`` (base64 of zlib)."""
    if len(data) <= INLINE:
        return {f"{key}hex": data.hex()}
    return {f"{key}zlib": base64.b64encode(zlib.compress(data)).decode("ascii")}


def unpack(item: Mapping[str, Any], key: str = "") -> bytes:
    """The octets :func:`pack` kept under ``key`` (KeyError: neither; ValueError: unreadable)."""
    if f"{key}hex" in item:
        return bytes.fromhex(item[f"{key}hex"])
    try:
        return zlib.decompress(base64.b64decode(item[f"{key}zlib"], validate=True))
    except (binascii.Error, zlib.error) as exc:
        raise ValueError(f"{key}zlib is not base64 of zlib data ({exc})") from None


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
            unpack(data, "bytes_")
        except KeyError:
            raise ReproducerError(f"{path}: not an amqpfuzz reproducer (no bytes_hex)") from None
        except (TypeError, ValueError) as exc:
            why = exc if "zlib" in str(exc) else "bytes_hex is not hexadecimal"
            raise ReproducerError(f"{path}: {why}") from None
    elif kind == "traffic":
        traffic = data.get("traffic")
        if not isinstance(traffic, list) or not all(
            isinstance(s, dict) and "connection" in s and ("hex" in s or "zlib" in s)
            for s in traffic
        ):
            raise ReproducerError(f"{path}: a traffic reproducer needs its traffic")
    elif kind == "program":
        steps = data.get("steps")
        if not isinstance(steps, list) or not all(
            isinstance(s, dict) and "step" in s for s in steps
        ):
            raise ReproducerError(f"{path}: a program reproducer needs a list of steps")
    elif kind == "client":
        try:
            bytes.fromhex(data["blob"])
            float(data["valid_share"])
            named = isinstance(data["protocol"], str) and isinstance(data["client"], str)
        except (KeyError, TypeError, ValueError):
            named = False
        if not named:
            raise ReproducerError(
                f"{path}: a client reproducer needs its protocol, client, blob and valid_share"
            )
    else:
        raise ReproducerError(f"{path}: unknown kind of reproducer {kind!r}")
    return data


def replay_command(path: Path | str, *options: str) -> str:
    """The command that replays the reproducer at ``path``, as it can be pasted into a shell in
    the directory this process runs in: the ``amqpfuzz`` of this environment (by its name where
    the shell finds this one by it, else by its path), the file relative to here where it is
    below, and ``options`` (``--client NAME``) after it, each quoted as the shell needs."""
    return shlex.join([_program(), "replay", _shown(Path(path)), *options])


def _program() -> str:
    """How a shell here reaches this environment's ``amqpfuzz``."""
    ours = Path(sys.executable).parent / "amqpfuzz"
    if not ours.exists():
        return "amqpfuzz"  # (an interpreter without the console script: the user's own)
    found = shutil.which("amqpfuzz")
    if found is not None and os.path.samefile(found, ours):
        return "amqpfuzz"
    return _shown(ours)


def _shown(path: Path) -> str:
    """``path`` relative to the working directory where it is below it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)
