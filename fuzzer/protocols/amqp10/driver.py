"""The AMQP 1.0 driver: what the engine asks of a protocol, in 1.0's terms.

A case runs in a session of its own: on a shared connection its session is begun ahead (with
the group before it) and awaited, the case goes, and behind it its ``end``: the peer's ``end``
answers it, which proves the session survived, and ends it, so every case starts from a fresh
one (its links too). A case that ends its session itself gets no probe: the answer to its own
``end`` is the proof. Sessions are awaited before a case goes because the Proton broker never
answers a session begun and ended in one read.

A case that may end its connection, or that needs a channel with no session (``fresh``), the
connection's own frames (``none``), a connection right after its protocol header (``start``)
or one with nothing sent yet (``header``), has a connection of its own: one prepared ahead
with its control session (channel 0) begun and answered, or prepared to the point it needs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from amqpfuzz.spec import RemoteProtocolError
from amqpfuzz.spec.amqp10.codec import Composite, Frame, codec_for
from amqpfuzz.strategies import Case
from amqpfuzz.strategies.amqp10 import CASE_CHANNEL, Wire
from amqpfuzz.strategies.amqp10.operator import Condition

from ...brokers import Target
from ..base import (
    Announced,
    AuthenticationFailed,
    ConnectionFailed,
    Driver,
    Name,
    Unreachable,
)
from .connection import Connection
from .nodes import delete_nodes

if TYPE_CHECKING:
    pass

__all__ = ["Amqp10Driver"]

_SIZE = struct.Struct(">I")
# the scope an error of each condition type closes (an amqp-error may close any: connection)
_SCOPES = {"connection-error": "connection", "session-error": "session", "link-error": "link"}
# placements that need a connection prepared only so far (the rest: open, with its control)
_STAGES = ("start", "header")


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


class Amqp10Driver(Driver):
    family: ClassVar[str] = "amqp10"
    control: ClassVar[int] = 0
    # the answer to the probe's end; or, on a connection whose control session was begun with
    # the probe (not before), to that begin
    probe_replies: ClassVar[tuple[str, ...]] = ("end", "begin")
    ready_replies: ClassVar[tuple[str, ...]] = ("begin",)
    probe_ends: ClassVar[bool] = True

    def __init__(self, protocol: str) -> None:
        super().__init__(protocol)
        self.codec = codec_for(protocol)
        self.spec = self.codec.spec
        # per target, once a spare logged in step by step: the SASL mechanism it took (None:
        # no SASL layer), so that later spares pipeline the whole handshake
        self._mechanisms: dict[Target, str | None] = {}

    # -- negotiation -------------------------------------------------------------------------

    def connect(self, target: Target, *, timeout: float = 10.0, **options: Any) -> Connection:
        return Connection.open(target, timeout=timeout, **options)

    def announced(self, connection: Any) -> Announced:
        opened = connection.peer_open
        found = opened["properties"] if opened is not None else None
        properties = {str(k): v for k, v in (found or {}).items()}
        return Announced(
            _text(properties.get("product")), _text(properties.get("version")), properties
        )

    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        try:
            Connection.open(target, timeout=timeout).close()
        except ConnectionFailed as exc:
            return f"the target does not speak AMQP {protocol}: {exc}"
        return None

    # -- running cases -----------------------------------------------------------------------

    def stage(self, case: Case) -> str | None:
        """``start`` or ``header`` for a case that needs a connection prepared only so far."""
        return case.channel if case.channel in _STAGES else None

    def spare(self, target: Target, timeout: float, stage: str | None = None) -> Connection:
        """A connection of its own: open, with its control session begun and answered (a
        case and the probe behind it then go in one write); or, for a ``stage``, prepared only
        so far."""
        if stage is not None:
            return Connection.prepared(target, stage, timeout=timeout)
        if target in self._mechanisms:  # after the first: the handshake in one write
            try:
                return Connection.open_pipelined(
                    target, self._mechanisms[target], timeout=timeout, session=self.control
                )
            except (Unreachable, AuthenticationFailed):
                raise
            except ConnectionFailed:
                self._mechanisms.pop(target, None)  # step by step again
        connection = self.connect(target, timeout=timeout)
        problem = connection.begin(self.control, timeout)
        if problem is not None:
            connection.abort()
            raise ConnectionFailed(f"{target.safe_url}: a session was refused: {problem}")
        self._mechanisms[target] = connection.mechanism or None
        return connection

    def needs_own_connection(self, case: Case) -> bool:
        return (
            case.channel != "open"
            or case.kills_connection
            or case.expected.outcome in ("socket-close",)
        )

    def own_channel(self, case: Case) -> int:
        """The control session for a case that wants one; the next channel (no session) for
        the others."""
        return self.control if case.channel == "open" else self.control + 1

    def open_channel(self, connection: Any, channel: int) -> bytes:
        return bytes(connection.begin_frame(channel))

    def close_channel(self, connection: Any, channel: int) -> bytes:
        return bytes(connection.end_frame(channel))

    def probe(self, connection: Any, channel: int) -> bytes:
        """The session's end, once its begin was answered; before that, nothing: the answer to
        the begin is the proof (a peer may drop a session begun and ended in one read)."""
        return bytes(connection.end_frame(channel)) if channel in connection.begun else b""

    def probes(self, case: Case) -> bool:
        """No probe behind a case that ends its session itself."""
        return self._ends(case) == 0

    def echoes(self, case: Case) -> int:
        """The ends of the case's own session beyond the one whose answer is the proof."""
        return max(0, self._ends(case) - 1)

    def _ends(self, case: Case) -> int:
        return sum(1 for frame in self._frames(case, CASE_CHANNEL) if frame.name == "end")

    def _frames(self, case: Case, channel: int | None = None) -> Iterator[Frame]:
        """The frames of the case that decode (on ``channel``, symbolic or fixed, if given)."""
        for step in case.steps:
            if not isinstance(step, Wire) or (channel is not None and step.channel != channel):
                continue
            try:
                yield self.codec.decode_frame(step.data, check=False)
            except RemoteProtocolError:  # a broken frame: nothing the engine must follow
                continue

    def missing_responses(self, case: Case, frames: list[Any]) -> tuple[str, ...]:
        """A valid case's replies (each is due: the peer's begin, attach, detach, end) that
        have not come."""
        if case.operator is not None:
            return ()
        got = {getattr(f, "name", None) for f in frames}
        return tuple(r for r in case.expected.responses if r not in got)

    def recorded(self, data: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Protocol headers and whole frames become steps again; a frame on a channel other
        than 0 was on the case's session, and goes on the one a replay gives it."""
        steps: list[Wire] = []
        at = 0
        while at < len(data):
            if data.startswith(b"AMQP", at):
                steps.append(Wire(data[at : at + 8], "protocol header", 0))
                at += 8
                continue
            size = _SIZE.unpack_from(data, at)[0] if at + 8 <= len(data) else 0
            if size < 8 or at + size > len(data):
                steps.append(Wire(data[at:], "what is not a whole frame", 0))
                break
            frame = data[at : at + size]
            channel = int.from_bytes(frame[6:8], "big")
            steps.append(Wire(frame, f"frame on channel {channel}", CASE_CHANNEL if channel else 0))
            at += size
        return tuple(steps), ()

    # -- what a case created -----------------------------------------------------------------

    def created(self, case: Case, replies: list[Any], prefix: str) -> Iterable[tuple[str, Name]]:
        """The nodes the case's attaches name (source and target addresses) that carry the
        run's prefix: a peer may create a node for an address it does not know."""
        for frame in self._frames(case):
            body = frame.body
            if frame.name != "attach" or body is None:
                continue
            for end in ("source", "target"):
                terminus = body[end]
                address = terminus["address"] if isinstance(terminus, Composite) else None
                if isinstance(address, str) and prefix and address.startswith(prefix):
                    yield "node", address

    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        return delete_nodes(target, [name for _, name in names], timeout)

    # -- conformance and replays -------------------------------------------------------------

    def code(self, name: str) -> Condition:
        """An error condition by its choice name; its scope, the type that defines it."""
        symbol, defined_by = self.spec.error_conditions()[name]  # KeyError: not one
        return Condition(name, symbol, _SCOPES.get(defined_by, "connection"))

    def serves(self, target: Target, timeout: float, probe: str) -> str | None:
        """The peer accepts a connection and begins a session on it."""
        try:
            connection = self.connect(target, timeout=timeout)
        except ConnectionFailed as exc:
            return str(exc)
        try:
            problem = connection.begin(1, timeout)
        finally:
            connection.close(timeout=1.0)
        return None if problem is None else f"a session after it got {problem}"
