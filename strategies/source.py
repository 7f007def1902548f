"""A blob of bytes that Hypothesis draws in one choice, read as numbers, choices and octets.

Hypothesis spends some twenty microseconds on every choice it makes; a frame with five fields
drawn field by field would cost more than a round trip to a broker. So the strategies of every
family make a handful of structural choices with Hypothesis and read everything else from one
``bytes`` choice through a :class:`Source`. Shrinking still works: Hypothesis shortens and
zeroes the blob, and a zero byte always reads as the simplest value (``0``, ``False``, the
empty string, the first alternative).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Source"]

_EDGE = 96  # a selector byte below this picks a boundary value
_NAME = "abcdefghijklmnopqrstuvwxyz0123456789"


class Source:
    """Reads numbers and bytes from a blob; past its end every read is zero."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        pos = self.pos
        self.pos = pos + 1
        return self.data[pos] if pos < len(self.data) else 0

    def take(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk if len(chunk) == n else chunk + bytes(n - len(chunk))

    def uint(self, bits: int) -> int:
        return int.from_bytes(self.take((bits + 7) // 8), "big") & ((1 << bits) - 1)

    def below(self, n: int) -> int:
        """A number in ``0..n-1`` (0 for n <= 1), from one byte, or two when n > 256."""
        if n <= 1:
            return 0
        return (self.byte() if n <= 256 else self.uint(16)) % n

    def between(self, low: int, high: int) -> int:
        """A number in ``low..high`` (``low`` for a zero read)."""
        span = high - low + 1
        return low + (self.uint(max(8, span.bit_length())) % span if span > 1 else 0)

    def pick(self, options: tuple[Any, ...]) -> Any:
        return options[self.below(len(options))]

    def name(self, prefix: str | None, what: str = "") -> str:
        """A name nobody has used: ``prefix`` (the run's; ``amqpfuzz-`` without one), ``what``,
        eight random characters (a zeroed blob: ``a``s)."""
        suffix = "".join(_NAME[self.below(len(_NAME))] for _ in range(8))
        return f"{prefix or 'amqpfuzz-'}{what}{suffix}"

    def edge(self) -> bool:
        """True about a third of the time (and never for a zero byte: zero is the plain path)."""
        value = self.byte()
        return 0 < value < _EDGE
