"""A 0-10 case's steps: frames (or a protocol header) as bytes, readable and exact.

A case is built before the fuzzer knows which channel its session will have, so its frames may
name the channel symbolically (:data:`CASE_CHANNEL`) and :meth:`Wire.render` fills it in: in
octets 6 and 7 of each frame's 12-octet header, frame after frame as their sizes say.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CASE_CHANNEL", "Wire"]

CASE_CHANNEL = -1
HEADER = 12


class Wire(NamedTuple):
    """One or more frames' bytes; ``channel`` is :data:`CASE_CHANNEL` when the fuzzer chooses
    it, else they are sent as they are. ``label`` says what they are and what was done."""

    data: bytes
    label: str
    channel: int = CASE_CHANNEL

    def render(self, channel: int) -> bytes:
        if self.channel != CASE_CHANNEL or len(self.data) < HEADER:
            return self.data
        out = bytearray(self.data)
        at = 0
        while at + HEADER <= len(out):
            out[at + 6 : at + 8] = (channel & 0xFFFF).to_bytes(2, "big")
            size = int.from_bytes(out[at + 2 : at + 4], "big")
            if size < HEADER:  # a size that lies: what follows is not a frame of ours to fill
                break
            at += size
        return bytes(out)

    def __repr__(self) -> str:
        return self.label
