"""What every family's sans-I/O frame reader shares: bytes fed in any chunks, buffered until they
make whole items, and offsets counted from the first byte fed."""

from __future__ import annotations

import abc
from typing import Generic, TypeVar

__all__ = ["Feed"]

T = TypeVar("T")


class Feed(abc.ABC, Generic[T]):
    """Bytes fed in chunks; :meth:`feed` gives what they complete, :meth:`_next` (a family's)
    takes one item off the front of the buffer, or None while more bytes are needed."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._offset = 0  # of the buffer's first byte in the stream

    @property
    def buffered(self) -> int:
        """Octets fed that do not yet make a whole item."""
        return len(self._buffer)

    @property
    def position(self) -> int:
        """Octets fed so far."""
        return self._offset + len(self._buffer)

    def feed(self, data: bytes) -> list[T]:
        """What the bytes fed so far complete; the rest waits for more."""
        self._buffer += data
        found: list[T] = []
        while True:
            item = self._next()
            if item is None:
                return found
            found.append(item)

    @abc.abstractmethod
    def _next(self) -> T | None:
        """One item off the front of the buffer (its bytes consumed), or None."""
