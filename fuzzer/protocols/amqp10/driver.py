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
from typing import Any, ClassVar

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
    Name,
    Unreachable,
)
from ..sessions import SessionDriver, text
from .connection import Connection
from .nodes import delete_nodes

__all__ = ["Amqp10Driver"]

_SIZE = struct.Struct(">I")
# the scope an error of each condition type closes (an amqp-error may close any: connection)
_SCOPES = {"connection-error": "connection", "session-error": "session", "link-error": "link"}


class Amqp10Driver(SessionDriver):
    family: ClassVar[str] = "amqp10"
    control: ClassVar[int] = 0
    # the answer to the probe's end; or, on a connection whose control session was begun with
    # the probe (not before), to that begin
    probe_replies: ClassVar[tuple[str, ...]] = ("end", "begin")
    ready_replies: ClassVar[tuple[str, ...]] = ("begin",)
    probe_ends: ClassVar[bool] = True
    frame_header: ClassVar[int] = 8
    wire = Wire
    case_channel: ClassVar[int] = CASE_CHANNEL

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
            text(properties.get("product")), text(properties.get("version")), properties
        )

    # -- running cases -----------------------------------------------------------------------

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

    def open_channel(self, connection: Any, channel: int) -> bytes:
        return bytes(connection.begin_frame(channel))

    def close_channel(self, connection: Any, channel: int) -> bytes:
        return bytes(connection.end_frame(channel))

    def session_live(self, connection: Any, channel: int) -> bool:
        return channel in connection.begun

    def own_ends(self, case: Case) -> int:
        return sum(1 for frame in self._frames(case, CASE_CHANNEL) if frame.name == "end")

    @staticmethod
    def frame_size(data: bytes, at: int) -> int:
        return int(_SIZE.unpack_from(data, at)[0])

    def _frames(self, case: Case, channel: int | None = None) -> Iterator[Frame]:
        """The frames of the case that decode (on ``channel``, symbolic or fixed, if given)."""
        for step in case.steps:
            if not isinstance(step, Wire) or (channel is not None and step.channel != channel):
                continue
            try:
                yield self.codec.decode_frame(step.data, check=False)
            except RemoteProtocolError:  # a broken frame: nothing the engine must follow
                continue

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
