"""What a fuzz case is, whatever the protocol: steps to send, and the reaction required.

A case is built before the fuzzer knows where it will run (which channel, session or link), so
its steps render themselves there (:meth:`Case.render`); everything else is fixed bytes, so the
exact bytes of any run are always recoverable (the runner logs what it sent).

A case may also wait for the peer within itself: an :class:`Await` step sends nothing, and the
steps after it go once what the peer sent on the case's channel meets it (its credit before our
transfers, its deliveries before our dispositions); an :class:`Answer` step's bytes are made
from what the case sent and what the peer sent before it (the delivery ids to settle, the
credit left), and :meth:`Answer.render` is what it sends when the peer answers as planned.
:meth:`Case.segments` cuts a case at its awaits; a case without awaits is one segment. A family's strategies make the steps (0-9-1's
are :class:`~amqpfuzz.strategies.amqp091.wire.WireFrame`); the reaction is said in a vocabulary
every protocol shares: the reply, or the close of a *scope* (connection, channel, session,
link) with one of the codes (0-9-1's reply codes, 1.0's error conditions) the spec names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from amqpfuzz.spec import OutcomeKind, Scope

__all__ = [
    "Answer",
    "Await",
    "Case",
    "Code",
    "ErrorCode",
    "Placement",
    "Reaction",
    "Segment",
    "Step",
    "answers",
    "awaits",
]


class Code(Protocol):
    """A reply code or error condition of a specification: its name, its value on the wire,
    and the scope an error with it closes."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> int | str: ...

    @property
    def scope(self) -> Scope: ...


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """A :class:`Code` as data: its name in the specification, its value on the wire (1.0's
    condition symbol, 0-10's number) and the scope an error with it closes."""

    name: str
    value: int | str
    scope: Scope


def _code_data(code: Code) -> dict[str, Any]:
    return {"name": code.name, "value": code.value, "scope": code.scope.value}


class Placement(StrEnum):
    """What the fuzzer must provide before a case's steps go (:attr:`Case.placement`)."""

    OPEN = "open"  # an open channel or session, the case's own
    FRESH = "fresh"  # one opened for the case alone (1.0, 0-10: a channel with no session)
    CLOSED = "closed"  # a channel number that is not open
    NONE = "none"  # the case uses channel 0 or names its channels itself
    START = "start"  # a connection of its own, right after the protocol headers
    HEADER = "header"  # a new connection; the case sends the protocol header


class Step(Protocol):
    """One frame (or other unit) of a case, as exact bytes once its place is known."""

    def render(self, channel: int) -> bytes: ...

    @property
    def label(self) -> str: ...


@runtime_checkable
class Await(Protocol):
    """A step that sends nothing: the steps after it wait until what the peer sent on the
    case's channel meets it. ``received`` is every frame the peer sent there since the channel
    was opened for the case (as the driver reads them), ``sent`` the bytes of each step the
    case sent before it."""

    def render(self, channel: int) -> bytes: ...

    @property
    def label(self) -> str: ...

    def met(self, sent: Sequence[bytes], received: Sequence[Any]) -> bool | None:
        """True: the steps after it go now; False: not yet; None: they never will (the peer
        ended what it waits for): the case sends nothing more."""


@runtime_checkable
class Answer(Protocol):
    """A step whose bytes are made from what went before it: :meth:`render` is what it sends
    when the peer answers as the case planned, :meth:`answer` what it sends given what the
    case ``sent`` (each step's bytes) and what the peer sent (``received``, as for
    :class:`Await`)."""

    def render(self, channel: int) -> bytes: ...

    @property
    def label(self) -> str: ...

    def answer(self, channel: int, sent: Sequence[bytes], received: Sequence[Any]) -> bytes: ...


def awaits(step: Step) -> bool:
    """Whether ``step`` is an :class:`Await` (read from its type: a case's steps are asked
    this often, and a check of a Protocol's every member is slow)."""
    return callable(getattr(type(step), "met", None))


def answers(step: Step) -> bool:
    """Whether ``step`` is an :class:`Answer`."""
    return callable(getattr(type(step), "answer", None))


@dataclass(frozen=True, slots=True)
class Segment:
    """The steps of a case that go together: those before its first await, or those after an
    await (``after``) up to the next."""

    after: Await | None
    steps: tuple[Step, ...]

    def render(self, channel: int, sent: list[bytes], received: Sequence[Any]) -> bytes:
        """The segment's bytes, each step's appended to ``sent`` as it is made (an answer's
        from what came)."""
        out = []
        for step in self.steps:
            data = (
                step.answer(channel, sent, received)  # type: ignore[attr-defined]
                if answers(step)
                else step.render(channel)
            )
            sent.append(data)
            out.append(data)
        return b"".join(out)


@dataclass(frozen=True, slots=True)
class Reaction:
    """What the specification requires the broker to do with a case.

    ``outcome`` is ``reply`` (the responses named, or nothing for an asynchronous method, and
    the channel stays open) or ``<scope>-close`` (``channel-close``, ``connection-close``, ...).
    ``codes`` are the codes accepted, the specification's first. ``or_reply`` marks cases the
    specification does not forbid outright (a deeply nested table): the broker may accept
    them, but must stay up. ``any_close`` marks cases whose wrong the specification names no
    reaction to at all (a second open in 1.0): any close, of whatever scope, with any code or
    none, or of the socket, is as conformant as accepting it; the codes are only the likely
    ones. ``tolerated`` are, for a valid case, the codes its method's rules
    name: arguments drawn at random may well ask for a queue that does not exist, and the
    specification says which close answers that; for a malformed case sent after valid
    traffic, the channel closes the traffic's methods' rules name (it may be refused first).
    """

    outcome: OutcomeKind
    codes: tuple[Code, ...] = ()
    responses: tuple[str, ...] = ()
    or_reply: bool = False
    tolerated: tuple[Code, ...] = ()
    any_close: bool = False

    @classmethod
    def error(
        cls, codes: Sequence[Code], *, or_reply: bool = False, any_close: bool = False
    ) -> Reaction:
        """The close the codes require: the first one's scope is what closes."""
        scope = Scope(codes[0].scope).close
        return cls(scope, tuple(codes), or_reply=or_reply or any_close, any_close=any_close)

    @classmethod
    def reply(cls, responses: Sequence[str] = (), tolerated: Sequence[Code] = ()) -> Reaction:
        return cls(OutcomeKind.REPLY, (), tuple(responses), tolerated=tuple(tolerated))

    def accepts(self, outcome: str, code: int | str | None) -> bool:
        """Whether a broker's reaction (an outcome and its code) is what this allows."""
        if any(c.value == code and Scope(c.scope).close == outcome for c in self.tolerated):
            return True
        if self.outcome == OutcomeKind.REPLY:
            return outcome == OutcomeKind.REPLY
        if outcome == OutcomeKind.REPLY:
            return self.or_reply
        if self.any_close and (OutcomeKind(outcome).closes or outcome == OutcomeKind.SOCKET_CLOSE):
            return True  # a close of any scope, or of the socket
        if not self.codes:  # a close that carries no code (1.0: the socket after a header)
            return outcome == self.outcome
        return outcome == self.outcome and any(c.value == code for c in self.codes)

    @property
    def code(self) -> int | str | None:
        return self.codes[0].value if self.codes else None

    def as_dict(self) -> dict[str, Any]:
        """The reaction as JSON data (a reproducer keeps it), codes by name and value."""
        return {
            "outcome": self.outcome,
            "codes": [_code_data(c) for c in self.codes],
            "responses": list(self.responses),
            "or_reply": self.or_reply,
            "tolerated": [_code_data(c) for c in self.tolerated],
            **({"any_close": True} if self.any_close else {}),  # (only where it is set)
            "text": str(self),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], code: Callable[[str], Code]) -> Reaction:
        """The reaction :meth:`as_dict` wrote; ``code`` finds a code by name in the spec (its
        scope the one written, where the case closed another than the spec's own: a 403 a
        login's case allows on the connection). Raises KeyError or TypeError for data that is
        not one."""

        def found(item: Mapping[str, Any]) -> Code:
            known = code(item["name"])
            scope = item.get("scope")
            if scope is None or scope == known.scope.value:
                return known
            return ErrorCode(known.name, known.value, Scope(scope))

        return cls(
            OutcomeKind(data["outcome"]),
            tuple(found(c) for c in data["codes"]),
            tuple(str(r) for r in data["responses"]),
            bool(data["or_reply"]),
            tuple(found(c) for c in data["tolerated"]),
            bool(data.get("any_close", False)),  # (reproducers before it: none)
        )

    def __str__(self) -> str:
        if self.outcome == OutcomeKind.REPLY:
            return f"reply {' or '.join(self.responses)}" if self.responses else "no error"
        if not self.codes:
            after = f" after the {' and '.join(self.responses)}" if self.responses else ""
            return f"{self.outcome}{after}"
        codes = " or ".join(f"{c.value} {c.name}" for c in self.codes)
        if self.any_close:
            return f"{self.outcome} {codes}, or any close (or accepted)"
        return f"{self.outcome} {codes}" + (" (or accepted)" if self.or_reply else "")


@dataclass(frozen=True, slots=True)
class Case:
    """Steps to send on one connection and the reaction the specification requires.

    ``operator`` is the mutation operator that broke it (None: a valid case); ``level`` is the
    operator's (``frame``, ``sequence``, ``rule``). ``placement`` says what the fuzzer must
    provide before sending (:class:`Placement`): ``open`` (an open channel or session, the
    case's own), ``fresh`` (one opened for this case alone, on which nothing has happened yet;
    1.0: a channel with no session), ``closed`` (a number that is not open), ``none`` (the case
    uses channel 0 or names its channels itself), ``start`` (1.0: a connection of its own,
    right after the AMQP protocol header; the case sends ``open`` itself, or not) or ``header``
    (1.0: a new connection; the case sends the protocol header).
    """

    steps: tuple[Step, ...]
    expected: Reaction
    spec_ref: str
    operator: str | None = None
    placement: Placement = Placement.OPEN
    note: str = ""
    frames: tuple[Any, ...] = field(default=(), compare=False)
    # the drawn blob the case was read from: drawing it again gives the same case
    blob: bytes = field(default=b"", compare=False, repr=False)
    level: str | None = None

    def render(self, channel: int = 1) -> bytes:
        """The exact bytes of the case when run on ``channel`` (with awaits: when the peer
        answers as the case planned)."""
        return b"".join(step.render(channel) for step in self.steps)

    @property
    def waits(self) -> bool:
        """Whether the case waits for the peer within itself (it has an :class:`Await`)."""
        return any(awaits(step) for step in self.steps)

    def segments(self) -> tuple[Segment, ...]:
        """The case cut at its awaits: the first segment goes at once, each other once what
        the peer sent meets the await before it."""
        found: list[Segment] = []
        after: Await | None = None
        steps: list[Step] = []
        for step in self.steps:
            if awaits(step):
                found.append(Segment(after, tuple(steps)))
                after, steps = step, []  # type: ignore[assignment]
            else:
                steps.append(step)
        found.append(Segment(after, tuple(steps)))
        return tuple(found)

    @property
    def kills_connection(self) -> bool:
        return self.expected.outcome == OutcomeKind.CONNECTION_CLOSE

    @property
    def rule_ref(self) -> bool:
        """Whether the spec reference says what is broken: a valid case's method, or the rule
        a rule-breaking operator broke (the same operator breaks different rules, each its own
        defect). A frame-level operator breaks whatever method it happened to draw."""
        return self.operator is None or self.level == "rule"

    def __repr__(self) -> str:
        head = f"{self.operator or 'valid'} [{self.spec_ref}]"
        if self.note:
            head += f": {self.note}"
        body = "".join(f"\n  {step.label}" for step in self.steps)
        return f"{head}{body}\n  expect {self.expected}"
