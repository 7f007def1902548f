"""What amqpfuzz starts ends with the process that started it, SIGKILL included."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1
# loaded in the parent: a child forked from one of several threads must not load a library
_LIBC = ctypes.CDLL("libc.so.6", use_errno=True)


def die_with_parent(parent: int) -> None:  # pragma: no cover - runs in the child
    """A ``preexec_fn`` (with ``functools.partial``, the parent's pid): the kernel kills the
    child when its parent ends (Linux; kept across exec), and a child whose parent ended
    before it asked ends at once. It is the end of the thread that started the child that
    counts: start a child that should outlive a thread from one that lives as long as the
    process."""
    with contextlib.suppress(OSError, AttributeError):
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
