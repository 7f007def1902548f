"""How a length, size or count lies to a decoder, whatever the family: past the end of the
frame, negative when read as signed (its top bit set), at the 2^31-1, 2^31 and 2^32-1 edges
(0x7F, 0x80, 0xFF for an octet), or absurdly large (a decoder that allocates up front). Each
direction gives a value for a field ``width`` octets wide with ``room`` octets after it that it
may honestly cover, or None where it has no lie there (every value it gives is past ``room``).
The families' length operators (``serving/operators/lengths.py``) find the fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .source import Source

__all__ = ["DIRECTIONS", "Direction", "Sized", "has_lie", "lie"]


class Sized(Protocol):
    """A length field: ``width`` octets, ``room`` the largest value that runs past nothing."""

    @property
    def width(self) -> int: ...

    @property
    def room(self) -> int: ...


Direction = Callable[[int, int, Source], int | None]


def _past(width: int, room: int, src: Source) -> int | None:
    top = (1 << (8 * width - 1)) - 1 if width > 1 else 0xFF
    return src.between(room + 1, min(top, room + 4096)) if room < top else None


def _negative(width: int, room: int, src: Source) -> int | None:
    low, top = max(1 << (8 * width - 1), room + 1), (1 << (8 * width)) - 1
    return src.between(low, top) if low <= top else None


def _edge(width: int, room: int, src: Source) -> int | None:
    bits = 8 * width
    edges = tuple(e for e in ((1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 1) if e > room)
    return int(src.pick(edges)) if edges else None


def _absurd(width: int, room: int, src: Source) -> int | None:
    if width < 4:
        return None
    low = max(1 << 28, room + 1)
    return src.between(low, (1 << 31) - 1) if low < 1 << 31 else None


DIRECTIONS: dict[str, tuple[Direction, str]] = {
    "length-past-frame": (_past, "a length, size or count running past the frame's end"),
    "length-negative": (_negative, "a length, size or count negative as signed (top bit set)"),
    "length-edge": (_edge, "a length, size or count at the 2^31-1, 2^31, 2^32-1 edges"),
    "length-absurd": (_absurd, "a 32-bit length, size or count of 2^28 to 2^31-1"),
}


def has_lie(direction: str, site: Sized) -> bool:
    """Whether ``direction`` has a value for the field ``site`` (reading nothing)."""
    fn, _ = DIRECTIONS[direction]
    return fn(site.width, site.room, Source(b"")) is not None


def lie(direction: str, site: Sized, src: Source) -> int | None:
    """The lying value ``direction`` gives the field ``site``, read from ``src`` (None: it has
    none there, and reads nothing)."""
    fn, _ = DIRECTIONS[direction]
    return fn(site.width, site.room, src) if has_lie(direction, site) else None
