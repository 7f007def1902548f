"""What amqpfuzz starts ends with the process that started it, SIGKILL included."""

from __future__ import annotations

import contextlib
import ctypes
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:  # pragma: no cover - runs in the child
    """A ``preexec_fn``: the kernel kills the child when its parent ends (Linux; kept across
    exec). It is the end of the thread that started the child that counts: start a child
    that should outlive a thread from one that lives as long as the process."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
