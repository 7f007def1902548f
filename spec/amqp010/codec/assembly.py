"""Frames joined into segments, segments into assemblies: a control, or a command with its
header and body.

A segment is the payload of one or more frames of one channel and track: its first frame has
first-frame set, its last last-frame, and every frame of it carries the same segment type and
first-segment and last-segment flags. An assembly is the segments of one control or command:
a control is one segment with first-segment and last-segment set; a command is its command
segment (first-segment set), then an optional header segment, then an optional body segment,
the last of them with last-segment set. The frames of different channels, and of the two tracks
of one channel, may interleave; within one channel and track they may not.

:class:`Assembler` refuses frames whose flags contradict the assembly they belong to
(:class:`FramingError`: a continuation frame with no first frame, a first frame inside a
segment, flags that change within a segment, a segment type on the wrong track) and segments
in an order no assembly has (:class:`AssemblyError`: a header or body with no command before
it, a new command before the last segment of the one in progress, a header after the body).
Which segments a command takes is the model's to say: the codec checks that when it decodes
the assembly.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import AssemblyError, FramingError
from .frames import HEADER_SIZE, Frame

__all__ = ["Assembler", "Assembly", "Segment"]


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment's type, track, channel, its first-segment and last-segment flags and its
    payload; ``parts`` maps it back to the stream: the payload offset where each frame's share
    begins, and that frame's offset in the stream."""

    type: int
    track: int
    channel: int
    first: bool
    last: bool
    payload: bytes
    parts: tuple[tuple[int, int], ...] = field(default=((0, 0),), compare=False, repr=False)

    def stream_offset(self, pos: int) -> int:
        """Where octet ``pos`` of the payload was in the stream."""
        starts = [start for start, _ in self.parts]
        index = max(0, bisect.bisect_right(starts, pos) - 1)
        start, frame = self.parts[index]
        return frame + HEADER_SIZE + pos - start


@dataclass(frozen=True, slots=True)
class Assembly:
    """The segments of one control or command, in order."""

    channel: int
    track: int
    segments: tuple[Segment, ...]


class Assembler:
    """Frames in, assemblies out; errors carry the offending frame's offset in the stream."""

    def __init__(self, segment_types: Mapping[str, int], tracks: Mapping[str, int]) -> None:
        self.control = segment_types["control"]
        self.command = segment_types["command"]
        self.header = segment_types["header"]
        self.body = segment_types["body"]
        self.names = {v: k for k, v in segment_types.items()}
        self.control_track = tracks["control"]
        self.command_track = tracks["command"]
        self._frames: dict[tuple[int, int], list[Frame]] = {}  # a segment in progress
        self._segments: dict[tuple[int, int], list[Segment]] = {}  # a command in progress

    @property
    def pending(self) -> bool:
        """Whether a segment or a command is still incomplete."""
        return bool(self._frames or self._segments)

    def add(self, frame: Frame) -> Assembly | None:
        """One frame; the assembly it completes, if it completes one."""
        self._check_track(frame)
        key = (frame.channel, frame.track)
        frames = self._frames.get(key)
        if frame.first_frame:
            if frames:
                raise FramingError(
                    "a first frame before the last frame of the segment in progress", frame.offset
                )
            frames = [frame]
        else:
            if not frames:
                raise FramingError("a continuation frame with no first frame", frame.offset)
            first = frames[0]
            if (frame.type, frame.first_segment, frame.last_segment) != (
                first.type,
                first.first_segment,
                first.last_segment,
            ):
                raise FramingError(
                    "a frame whose segment type or segment flags differ from its segment's",
                    frame.offset,
                )
            frames.append(frame)
        if not frame.last_frame:
            self._frames[key] = frames
            return None
        self._frames.pop(key, None)
        return self._segment(key, _joined(frames))

    def _check_track(self, frame: Frame) -> None:
        name = self.names.get(frame.type)
        if name is None:
            raise FramingError(f"unknown segment type {frame.type}", frame.offset + 1)
        wanted = self.control_track if frame.type == self.control else self.command_track
        if frame.track != wanted:
            raise FramingError(
                f"a {name} frame on track {frame.track}, not {wanted}", frame.offset + 5
            )

    def _segment(self, key: tuple[int, int], segment: Segment) -> Assembly | None:
        at = segment.parts[0][1]
        name = self.names[segment.type]
        if segment.type == self.control:
            if not (segment.first and segment.last):
                raise AssemblyError(
                    "a control segment without first-segment and last-segment", at, "framing-error"
                )
            return Assembly(segment.channel, segment.track, (segment,))
        segments = self._segments.get(key)
        if segment.type == self.command:
            if segments:
                raise AssemblyError(
                    f"a new command before the last segment of {len(segments)} in progress", at
                )
            if not segment.first:
                raise AssemblyError("a command segment without first-segment", at)
            segments = [segment]
        else:
            if not segments:
                raise AssemblyError(f"a {name} segment with no command before it", at)
            if segment.first:
                raise AssemblyError(f"a {name} segment with first-segment set", at)
            before = segments[-1].type
            if before == self.body or (segment.type == self.header and before != self.command):
                raise AssemblyError(f"a {name} segment after a {self.names[before]} segment", at)
            segments.append(segment)
        if not segment.last:
            self._segments[key] = segments
            return None
        self._segments.pop(key, None)
        return Assembly(segment.channel, segment.track, tuple(segments))


def _joined(frames: list[Frame]) -> Segment:
    first = frames[0]
    parts, at = [], 0
    for f in frames:
        parts.append((at, f.offset))
        at += len(f.payload)
    return Segment(
        first.type,
        first.track,
        first.channel,
        first.first_segment,
        first.last_segment,
        b"".join(f.payload for f in frames),
        tuple(parts),
    )
