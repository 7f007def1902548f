"""What a campaign's blob reads as, arm by arm, and how a blob is aimed at an arm.

A case is read from a blob: its first byte picks a *part* by its share (valid cases of one
method, valid traffic, malformed cases, malformed cases in state), the next byte (two, past 256
arms) an *arm* of that part (a method, a traffic shape, an operator), and the arm reads the
rest. A :class:`Chooser` is that reading. It also tells which arm a blob reads as
(:meth:`Chooser.arm_of`) and rewrites a blob's head so that it reads as another arm while the
rest stays as it was (:meth:`Chooser.aim`): how a campaign spends more of its cases on the arms
that reach new code, and every case it sends is still a blob of the one reading (a reproducer
replays it, the shrinker shrinks it).

Zeros read as the first part's first arm: a zeroed blob is the first method's valid case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis.errors import InvalidArgument

from .cases import Case
from .source import Source

__all__ = ["Arm", "Chooser", "Part"]


@dataclass(frozen=True, slots=True)
class Arm:
    """One way of reading a case: its ``key`` (a method, ``traffic <class>``, an operator's
    name) and the function that reads it from the rest of the blob."""

    key: str
    build: Callable[[Source], Case]


@dataclass(frozen=True, slots=True)
class Part:
    """A share of the cases and the arms it reads them with."""

    name: str
    share: float
    arms: tuple[Arm, ...]


class Chooser:
    """Reads a case from a blob: the part by the first byte, the arm by the next."""

    def __init__(self, parts: Sequence[Part]) -> None:
        shares = [p.share for p in parts]
        if any(not 0.0 <= s <= 1.0 for s in shares) or sum(shares) > 1.001:
            raise InvalidArgument(f"shares={shares!r}: each from 0 to 1, together at most 1")
        # a part with no arms (a family without traffic) or no share reads nothing: the
        # others share its share as they share the rest
        self.parts = tuple(p for p in parts if p.arms and p.share > 0)
        if not self.parts:
            raise InvalidArgument("no arms to read a case with")
        total = sum(p.share for p in self.parts)
        # the first byte's upper bound (exclusive) for each part; the last takes the rest
        bounds, top = [], 0.0
        for part in self.parts:
            top += part.share / total
            bounds.append(round(256 * top))
        bounds[-1] = 256
        self._bounds = tuple(bounds)
        self._where = {
            arm.key: (i, j) for i, part in enumerate(self.parts) for j, arm in enumerate(part.arms)
        }

    @property
    def keys(self) -> tuple[str, ...]:
        """Every arm's key, part by part."""
        return tuple(self._where)

    def __call__(self, blob: bytes) -> Case:
        src = Source(blob)
        part = self.parts[self._part(src.byte())]
        return part.arms[src.below(len(part.arms))].build(src)

    def _part(self, first: int) -> int:
        for index, bound in enumerate(self._bounds):
            if first < bound:
                return index
        return len(self._bounds) - 1

    def used(self, blob: bytes) -> int:
        """How many of ``blob``'s bytes its case reads (past them, a change changes nothing)."""
        src = Source(blob)
        part = self.parts[self._part(src.byte())]
        part.arms[src.below(len(part.arms))].build(src)
        return min(src.pos, len(blob))

    def arm_of(self, blob: bytes) -> str:
        """The key of the arm ``blob`` reads as."""
        src = Source(blob)
        part = self.parts[self._part(src.byte())]
        return part.arms[src.below(len(part.arms))].key

    def aim(self, blob: bytes, key: str) -> bytes:
        """``blob`` rewritten to read as the arm ``key`` (KeyError if there is none): its
        first byte moved into the part's range, its arm's byte (or two) to the arm, each
        keeping what it can of its old value; the rest as it was."""
        part_index, arm_index = self._where[key]
        low = self._bounds[part_index - 1] if part_index else 0
        width = self._bounds[part_index] - low
        data = blob.ljust(3, b"\x00")
        head = bytearray(data[:3])
        head[0] = low + head[0] % width
        count = len(self.parts[part_index].arms)
        if count > 256:
            old = int.from_bytes(head[1:3], "big")
            value = (old - old % count + arm_index) % 65536
            if value % count != arm_index:  # wrapped past 65535: the first in range
                value = arm_index
            head[1:3] = value.to_bytes(2, "big")
        elif count > 1:
            old = head[1]
            value = old - old % count + arm_index
            head[1] = value if value < 256 else arm_index
        return bytes(head) + data[3:]
