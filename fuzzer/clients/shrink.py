"""Shrinking a failing server script with Hypothesis's shrinker, against the client itself.

A client campaign reads each script from a blob drawn outside Hypothesis; the first failure of
a signature hands that blob to Hypothesis (:class:`~amqpfuzz.fuzzer.engine.seeding.Seeded`),
which replays it and then shrinks it (shorter runs of zeros read as the simplest handshake,
fewer messages, the first operator's plainest breakage), serving each candidate to the client's
shim, for as long as the same signature keeps failing and the budget lasts.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from ..engine.seeding import shrinking
from ..protocols.family import ServerScript
from .judge import Judged

__all__ = ["shrink_script"]


def shrink_script(
    play: Callable[[ServerScript], Judged],
    build: Callable[[bytes], ServerScript],
    script: ServerScript,
    signature: str,
    budget: float,
) -> tuple[ServerScript, Judged] | None:
    """The smallest script read from a blob of the same size that still fails with
    ``signature`` when ``play`` serves it, within ``budget`` seconds (None if none did)."""
    smallest: list[tuple[ServerScript, Judged]] = []
    deadline = time.monotonic() + budget
    size = len(script.blob)

    @shrinking(script.blob)
    @given(st.binary(min_size=size, max_size=size))
    def still_fails(blob: bytes) -> None:
        if time.monotonic() > deadline:
            return  # out of time: the smallest so far stands
        candidate = build(blob)
        judged = play(candidate)
        if judged.signature == signature:
            smallest.append((candidate, judged))
            raise AssertionError(signature)

    # the shrunk failure raised once more, or a client that fails now and then (Flaky): the
    # smallest script that failed so far stands either way
    with contextlib.suppress(AssertionError, Flaky):
        still_fails()
    return smallest[-1] if smallest else None
