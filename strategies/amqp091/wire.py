"""A 0-8/0-9/0-9-1 case's steps: frames as bytes, readable and exact.

A case is built before the fuzzer knows which channel it will run on, so its frames name their
channel symbolically (:data:`CASE_CHANNEL`) and :meth:`WireFrame.render` fills it in.
"""

from __future__ import annotations

from typing import NamedTuple

from amqpfuzz.spec.amqp091.codec import Codec, Frame, ProtocolHeader, raw

__all__ = ["CASE_CHANNEL", "WireFrame", "label_of", "wire_frame"]

# The channel a case runs on, chosen by the fuzzer when it sends the case.
CASE_CHANNEL = -1


class WireFrame(NamedTuple):
    """One frame as bytes, with the header fields a mutation may have changed.

    ``channel`` is a number or :data:`CASE_CHANNEL`; ``size`` overrides the size field;
    ``end`` is the frame-end octet; ``trailer`` is sent right after the frame (the filler a
    lying size field reads into); ``verbatim`` replaces the whole frame (a protocol header).
    ``source`` is the valid frame this one was made from and ``note`` what was done to it;
    :attr:`label` puts them into words only when somebody reads it.
    """

    frame_type: int
    channel: int
    payload: bytes
    note: str = ""
    size: int | None = None
    end: int = raw.FRAME_END
    trailer: bytes = b""
    verbatim: bytes | None = None
    source: Frame | None = None

    def render(self, channel: int) -> bytes:
        if self.verbatim is not None:
            return self.verbatim
        number = channel if self.channel == CASE_CHANNEL else self.channel
        framed = raw.frame(self.frame_type, number, self.payload, size=self.size, end=self.end)
        return framed + self.trailer

    @property
    def label(self) -> str:
        base = label_of(self.source) if self.source is not None else ""
        return f"{base} {self.note}".strip() if base else self.note

    def __repr__(self) -> str:
        return self.label


def label_of(frame: Frame) -> str:
    """A frame's repr, with the symbolic channel shown as ``N``."""
    return repr(frame).replace(f"ch={CASE_CHANNEL}", "ch=N")


def wire_frame(codec: Codec, frame: Frame) -> WireFrame:
    """A valid frame as a :class:`WireFrame` (its channel may be :data:`CASE_CHANNEL`)."""
    if isinstance(frame, ProtocolHeader):
        return WireFrame(0, 0, b"", verbatim=frame.data, source=frame)
    frame_type, payload = codec.payload(frame)
    return WireFrame(frame_type, frame.channel, payload, source=frame)
