"""The protocol states of an open 0-8/0-9/0-9-1 connection, as tables, and a checker.

:class:`SequenceChecker` follows the frames one peer sends on an open connection and says, for
each, whether the other peer may accept it, or which reply-code constant the specification
requires in answer: a content header with no method before it is ``unexpected-frame``, a method
on a channel that is not open is ``channel-error``, and so on. The fuzzer's strategies use it to
check that a sequence-level mutation really breaks the protocol, the oracles to predict what a
broker must answer.

States and transitions are data (``CHANNEL_TRANSITIONS``), in the manner of h11's ``_state``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .codec.frames import ContentBody, ContentHeader, Frame, Heartbeat, MethodFrame, ProtocolHeader
from .model import Spec

__all__ = ["CHANNEL_TRANSITIONS", "ChannelState", "Event", "Ruling", "SequenceChecker"]

ChannelFrame = MethodFrame | ContentHeader | ContentBody


class ChannelState(Enum):
    CLOSED = "closed"
    OPEN = "open"
    EXPECT_HEADER = "expect-header"  # a content method was sent, its header is due
    EXPECT_BODY = "expect-body"  # the header announced bytes that have not all arrived
    CLOSING = "closing"  # channel.close sent; only close-ok may follow


class Event(Enum):
    OPEN = "channel.open"
    CLOSE = "channel.close"
    CLOSE_OK = "channel.close-ok"
    METHOD = "method"  # any other method without content
    CONTENT_METHOD = "content-method"  # a method that carries content (basic.publish)
    HEADER = "header"
    BODY = "body"


S, E = ChannelState, Event

# (state, event) -> next state, or the name of the reply-code constant the frame earns.
# The content states resolve further in the checker: the body that completes the content
# returns to OPEN; a header whose class differs from its method's is a frame-error.
CHANNEL_TRANSITIONS: dict[tuple[ChannelState, Event], ChannelState | str] = {
    (S.CLOSED, E.OPEN): S.OPEN,
    (S.CLOSED, E.CLOSE): "channel-error",
    (S.CLOSED, E.CLOSE_OK): "channel-error",
    (S.CLOSED, E.METHOD): "channel-error",
    (S.CLOSED, E.CONTENT_METHOD): "channel-error",
    (S.CLOSED, E.HEADER): "unexpected-frame",
    (S.CLOSED, E.BODY): "unexpected-frame",
    (S.OPEN, E.OPEN): "channel-error",
    (S.OPEN, E.CLOSE): S.CLOSING,
    (S.OPEN, E.CLOSE_OK): S.CLOSED,  # answering the peer's close
    (S.OPEN, E.METHOD): S.OPEN,
    (S.OPEN, E.CONTENT_METHOD): S.EXPECT_HEADER,
    (S.OPEN, E.HEADER): "unexpected-frame",
    (S.OPEN, E.BODY): "unexpected-frame",
    (S.EXPECT_HEADER, E.HEADER): S.EXPECT_BODY,
    (S.EXPECT_BODY, E.BODY): S.EXPECT_BODY,
    (S.CLOSING, E.CLOSE_OK): S.CLOSED,
}
for _event in Event:  # content must be complete before anything else happens on the channel
    CHANNEL_TRANSITIONS.setdefault((S.EXPECT_HEADER, _event), "unexpected-frame")
    CHANNEL_TRANSITIONS.setdefault((S.EXPECT_BODY, _event), "unexpected-frame")
    CHANNEL_TRANSITIONS.setdefault((S.CLOSING, _event), S.CLOSING)  # discarded until close-ok


@dataclass(frozen=True, slots=True)
class Ruling:
    """What the receiving peer must do with one frame: accept it, or answer with ``code``."""

    frame: Frame
    code: str | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.code is None


class SequenceChecker:
    """Follows the frames sent on one open connection (after the handshake).

    Channel 0 carries the connection class; every other class belongs on channels 1 and up.
    ``open_channels`` are the channels already open when checking starts. ``sender`` (``client``
    or ``server``), when given, is the peer whose frames these are: a method its chassis does
    not let that peer send is ``command-invalid``.
    """

    def __init__(
        self, spec: Spec, open_channels: tuple[int, ...] = (), sender: str | None = None
    ) -> None:
        self.spec = spec
        self.sender = sender
        self.channels: dict[int, ChannelState] = {c: S.OPEN for c in open_channels}
        self._assembling: dict[int, tuple[int, int]] = {}  # channel -> (class id, bytes left)
        # the connection class alone: 0-8's and 0-9's access class has the connection's
        # handler, yet "access tickets are a per-channel resource", requested on a channel
        self._connection_classes = {spec.amqp_class("connection").index}
        self._channel_class = spec.amqp_class("channel").index

    def check(self, frames: list[Frame]) -> list[Ruling]:
        """Verdicts for ``frames`` in order; the state moves on only past accepted frames."""
        return [self.feed(frame) for frame in frames]

    def first_error(self, frames: list[Frame]) -> Ruling | None:
        for frame in frames:
            verdict = self.feed(frame)
            if not verdict.ok:
                return verdict
        return None

    def feed(self, frame: Frame) -> Ruling:
        if isinstance(frame, ProtocolHeader):
            return Ruling(frame, "frame-error", "a protocol header inside the connection")
        if isinstance(frame, Heartbeat):
            if frame.channel:
                return Ruling(frame, "frame-error", "heartbeat on a channel (section 4.2.7)")
            return Ruling(frame)
        if (
            isinstance(frame, MethodFrame)
            and self.sender is not None
            and not frame.method.sent_by(self.sender)
        ):
            return Ruling(frame, "command-invalid", f"{frame.name} is not the {self.sender}'s")
        if isinstance(frame, MethodFrame) and frame.channel == 0:
            if frame.method.class_index in self._connection_classes:
                return Ruling(frame)
            return Ruling(frame, "command-invalid", f"{frame.name} on channel 0")
        if isinstance(frame, MethodFrame) and frame.method.class_index in self._connection_classes:
            return Ruling(frame, "command-invalid", f"{frame.name} on channel {frame.channel}")
        if frame.channel == 0:
            return Ruling(frame, "unexpected-frame", "content on channel 0")
        return self._channel(frame)

    def _event(self, frame: ChannelFrame) -> Event:
        if isinstance(frame, ContentHeader):
            return E.HEADER
        if isinstance(frame, ContentBody):
            return E.BODY
        assert isinstance(frame, MethodFrame)
        if frame.method.class_index == self._channel_class:
            by_name = {"open": E.OPEN, "close": E.CLOSE, "close-ok": E.CLOSE_OK}
            if frame.method.name in by_name:
                return by_name[frame.method.name]
        return E.CONTENT_METHOD if frame.method.content else E.METHOD

    def _channel(self, frame: ChannelFrame) -> Ruling:
        channel = frame.channel
        state = self.channels.get(channel, S.CLOSED)
        event = self._event(frame)
        outcome = CHANNEL_TRANSITIONS[(state, event)]
        if isinstance(outcome, str):
            return Ruling(frame, outcome, f"{event.value} while the channel is {state.value}")
        if state is S.CLOSING:  # the receiver discards what follows its close
            self.channels[channel] = outcome
            return Ruling(frame)
        result = self._content(frame, outcome)
        if isinstance(result, tuple):
            return Ruling(frame, *result)
        self.channels[channel] = result
        return Ruling(frame)

    def _content(self, frame: ChannelFrame, state: ChannelState) -> ChannelState | tuple[str, str]:
        """Track the content being assembled; the channel's next state or an error."""
        channel = frame.channel
        if isinstance(frame, MethodFrame) and frame.method.content:
            self._assembling[channel] = (frame.method.class_index, 0)
        elif isinstance(frame, ContentHeader):
            class_id, _ = self._assembling[channel]
            if frame.class_id != class_id:
                return (
                    "frame-error",
                    f"header of class {frame.class_id} after a method of {class_id}",
                )
            self._assembling[channel] = (class_id, frame.body_size)
            if frame.body_size == 0:
                return S.OPEN
        elif isinstance(frame, ContentBody):
            class_id, left = self._assembling[channel]
            if len(frame.payload) > left:
                return (
                    "unexpected-frame",
                    f"{len(frame.payload)} body bytes where {left} were due",
                )
            self._assembling[channel] = (class_id, left - len(frame.payload))
            if left == len(frame.payload):
                del self._assembling[channel]
                return S.OPEN
        return state
