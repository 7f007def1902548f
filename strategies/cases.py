"""What a fuzz case is: the frames to send, readable and exact, and the reaction required.

A case is built before the fuzzer knows which channel it will run on, so its frames name their
channel symbolically (:data:`CASE_CHANNEL`) and :meth:`Case.render` fills it in; everything
else is fixed bytes, so the exact bytes of any run are always recoverable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from amqpfuzz.spec import Constant, Spec
from amqpfuzz.spec.codec import Codec, Frame, ProtocolHeader, raw

__all__ = ["CASE_CHANNEL", "Case", "Reaction", "WireFrame", "label_of", "wire_frame"]

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


@dataclass(frozen=True, slots=True)
class Reaction:
    """What the specification requires the broker to do with a case.

    ``outcome`` is ``reply`` (the responses named, or nothing for an asynchronous method, and
    the channel stays open), ``channel-close`` or ``connection-close``. ``codes`` are the reply
    codes accepted, the specification's first. ``or_reply`` marks cases the specification does
    not forbid outright (a deeply nested table): the broker may accept them, but must stay up.
    ``tolerated`` are, for a valid frame, the codes its method's rules name: arguments drawn
    at random may well ask for a queue that does not exist, and the specification says which
    close answers that.
    """

    outcome: str
    codes: tuple[Constant, ...] = ()
    responses: tuple[str, ...] = ()
    or_reply: bool = False
    tolerated: tuple[Constant, ...] = ()

    @classmethod
    def error(cls, spec: Spec, *names: str, or_reply: bool = False) -> Reaction:
        """The close the named reply-code constants require: a hard error closes the connection.

        The first name decides hard or soft; every name must be a constant of ``spec``.
        """
        codes = tuple(spec.constant(name) for name in names)
        outcome = "connection-close" if codes[0].is_hard_error else "channel-close"
        return cls(outcome, codes, or_reply=or_reply)

    @classmethod
    def reply(cls, responses: Sequence[str] = (), tolerated: Sequence[Constant] = ()) -> Reaction:
        return cls("reply", (), tuple(responses), tolerated=tuple(tolerated))

    def accepts(self, outcome: str, code: int | None) -> bool:
        """Whether a broker's reaction (an outcome kind and its reply code) is what this
        reaction allows."""
        if self.outcome == "reply":
            return outcome == "reply" or (
                outcome in ("channel-close", "connection-close")
                and any(c.value == code and _kind(c) == outcome for c in self.tolerated)
            )
        if outcome == "reply":
            return self.or_reply
        return outcome == self.outcome and any(c.value == code for c in self.codes)

    @property
    def code(self) -> int | None:
        return self.codes[0].value if self.codes else None

    def __str__(self) -> str:
        if self.outcome == "reply":
            return f"reply {' or '.join(self.responses)}" if self.responses else "no error"
        codes = " or ".join(f"{c.value} {c.name}" for c in self.codes)
        return f"{self.outcome} {codes}" + (" (or accepted)" if self.or_reply else "")


def _kind(constant: Constant) -> str:
    return "connection-close" if constant.is_hard_error else "channel-close"


@dataclass(frozen=True, slots=True)
class Case:
    """Frames to send on one connection and the reaction the specification requires.

    ``channel`` says what the fuzzer must provide before sending: ``open`` (an open channel,
    the case's :data:`CASE_CHANNEL`), ``fresh`` (a channel opened for this case alone, on which
    nothing has happened yet), ``closed`` (a channel number that is not open), or ``none`` (the
    case uses channel 0 or names its channels itself).
    """

    steps: tuple[WireFrame, ...]
    expected: Reaction
    spec_ref: str
    mutation: str | None = None
    channel: str = "open"
    note: str = ""
    frames: tuple[Frame, ...] = field(default=(), compare=False)
    # the drawn blob the case was read from: drawing it again gives the same case
    blob: bytes = field(default=b"", compare=False, repr=False)

    def render(self, channel: int = 1) -> bytes:
        """The exact bytes of the case when run on ``channel``."""
        return b"".join(step.render(channel) for step in self.steps)

    @property
    def kills_connection(self) -> bool:
        return self.expected.outcome == "connection-close"

    def __repr__(self) -> str:
        head = f"{self.mutation or 'valid'} [{self.spec_ref}]"
        if self.note:
            head += f": {self.note}"
        body = "".join(f"\n  {step.label}" for step in self.steps)
        return f"{head}{body}\n  expect {self.expected}"
