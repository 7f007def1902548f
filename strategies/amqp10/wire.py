"""A 1.0 case's steps: frames (or a protocol header) as bytes, readable and exact.

A case is built before the fuzzer knows which channel its session will have, so its frames may
name the channel symbolically (:data:`CASE_CHANNEL`) and :meth:`Wire.render` fills it in.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CASE_CHANNEL", "Wire"]

CASE_CHANNEL = -1


class Wire(NamedTuple):
    """One frame's bytes; ``channel`` is :data:`CASE_CHANNEL` when the fuzzer chooses it
    (octets 6 and 7 of the frame are then filled in), else the frame is sent as it is.
    ``label`` says what it is and what was done to it."""

    data: bytes
    label: str
    channel: int = CASE_CHANNEL

    def render(self, channel: int) -> bytes:
        if self.channel != CASE_CHANNEL or len(self.data) < 8:
            return self.data
        return self.data[:6] + (channel & 0xFFFF).to_bytes(2, "big") + self.data[8:]

    def __repr__(self) -> str:
        return self.label
