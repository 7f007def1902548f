"""The words the engine and the drivers share: what a peer did (:class:`Outcome`), what it said
of itself (:class:`Announced`), the names a case creates, and the errors of connecting.

An outcome is a reply, the close of a *scope* (connection, channel, session, link, 0-10's
execution) with the protocol's own code (a reply code, an error condition), the socket closing,
a timeout, bytes that are not the protocol, or a broker that is down: an
:class:`~amqpfuzz.spec.OutcomeKind`. The record contract's form of it is made in one place,
:func:`amqpfuzz.fuzzer.records.reaction_of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import AmqpfuzzError, OutcomeKind, Scope

__all__ = [
    "Announced",
    "AuthenticationFailed",
    "ConnectionFailed",
    "Name",
    "Outcome",
    "Unreachable",
    "UnsupportedProtocol",
    "in_words",
    "text",
]

Name = str | bytes  # an entity's name; bytes where it is not UTF-8 (a lenient broker took it)


class ConnectionFailed(AmqpfuzzError):
    """The handshake did not complete."""


class Unreachable(ConnectionFailed):
    """Nothing answers at the target's address."""


class AuthenticationFailed(ConnectionFailed):
    """The broker refused the credentials (or the virtual host)."""


class UnsupportedProtocol(AmqpfuzzError):
    """amqpfuzz cannot drive this protocol (yet), or a driver cannot do this with it."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a peer did (or, as an expectation, must do).

    ``kind`` says what happened; a close carries the protocol's ``code`` (0-9-1's and 0-10's
    numbers, 1.0's error condition symbol) and, where the protocol says, the ``method`` at
    fault (0-9-1's class and method ids). ``reply`` names what came (or must come) in answer;
    ``frames`` are what arrived.
    """

    kind: OutcomeKind
    code: int | str | None = None
    text: str = ""
    frames: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    method: tuple[int, int] | None = None
    reply: str | None = None

    @property
    def scope(self) -> Scope | None:
        """What closed: ``connection``, ``channel``, ``session``, ``link`` (None otherwise)."""
        return self.kind.scope

    @property
    def reply_code(self) -> int | None:
        """The code when it is a number (0-9-1's and 0-10's)."""
        return self.code if isinstance(self.code, int) else None

    @property
    def condition(self) -> str | None:
        """The code when it is a symbol (1.0's error condition)."""
        return self.code if isinstance(self.code, str) else None

    def described(self) -> str:
        """The outcome in a few words (:func:`in_words`)."""
        return in_words(self.kind.value, self.reply, self.code)

    def __str__(self) -> str:
        if self.code is not None:
            return f"{self.kind} {self.code} {self.text}".strip()
        return f"{self.kind} {self.text}".strip()


@dataclass(frozen=True, slots=True)
class Announced:
    """What a target says of itself when a connection opens."""

    product: str = ""
    version: str = ""
    properties: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, properties: Mapping[Any, Any] | None) -> Announced:
        """From the properties a peer sent: its ``product`` and ``version`` as text."""
        found = {str(k): v for k, v in (properties or {}).items()}
        return cls(text(found.get("product")), text(found.get("version")), found)


def in_words(outcome: str, reply: str | None, code: int | str | None) -> str:
    """``channel-close 404``, ``reply queue.declare-ok``, ``link-close amqp:invalid-field``: a
    reaction in a few words."""
    words = [outcome]
    if reply:
        words.append(reply)
    if code is not None:
        words.append(str(code))
    return " ".join(words)


def text(value: object) -> str:
    """A property's value as text (bytes as UTF-8; None as nothing)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)
