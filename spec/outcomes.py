"""The words every layer uses for what a peer does with a case, defined once.

A reaction is an :class:`OutcomeKind`: the reply came, a *scope* closed (:class:`Scope`: the
connection, a channel, a session, a link, 0-10's execution), the socket closed, nothing came in
time, bytes that are not the protocol arrived, or the broker is down. The record contract's
strings are these enums' values (a :class:`~enum.StrEnum` is its string), so JSON, records and
reports read the same words as before.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["OutcomeKind", "Scope"]


class Scope(StrEnum):
    """What an error closes: its scope, from the widest."""

    CONNECTION = "connection"
    CHANNEL = "channel"
    SESSION = "session"
    LINK = "link"
    EXECUTION = "execution"

    @property
    def close(self) -> OutcomeKind:
        """The outcome of this scope closing (``channel-close``)."""
        return _CLOSES[self]


class OutcomeKind(StrEnum):
    """What came of a case."""

    REPLY = "reply"
    CONNECTION_CLOSE = "connection-close"
    CHANNEL_CLOSE = "channel-close"
    SESSION_CLOSE = "session-close"
    LINK_CLOSE = "link-close"
    EXECUTION_CLOSE = "execution-close"
    SOCKET_CLOSE = "socket-close"
    TIMEOUT = "timeout"
    BROKER_DOWN = "broker-down"
    BAD_FRAME = "bad-frame"
    # what a conformance scenario's step expects or sees beyond these: a protocol header in
    # answer, a greeting (a header or the handshake's start), a count of rounds or
    # deliveries, nothing (or a frame where nothing was expected); a scenario skipped
    PROTOCOL_HEADER = "protocol-header"
    GREETING = "greeting"
    COUNT = "count"
    DELIVERIES = "deliveries"
    NOTHING = "nothing"
    FRAME = "frame"
    SKIP = "skip"

    @property
    def scope(self) -> Scope | None:
        """The scope this outcome closed (None: not the close of a scope)."""
        return _SCOPES.get(self)

    @property
    def closes(self) -> bool:
        return self in _SCOPES


_CLOSES = {scope: OutcomeKind(f"{scope.value}-close") for scope in Scope}
_SCOPES = {kind: scope for scope, kind in _CLOSES.items()}
