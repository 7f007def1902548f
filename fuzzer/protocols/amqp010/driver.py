"""The AMQP 0-10 driver: what the engine asks of a protocol, in 0-10's terms.

A case runs in a session of its own, as in 1.0: on a shared connection its session is attached
ahead (``session.attach`` and ``command-point``, with the group before it) and its ``attached``
awaited, the case goes (its commands from command-id 0), and behind it the session's
``session.detach``: the peer's ``session.detached`` answers it, which proves the session lived,
and ends it. A case that detaches its session itself gets no probe.

A case that may end its connection, that needs a channel with no session attached (``fresh``),
the connection's own controls (``none``), a connection right after the protocol headers
(``start``) or one with nothing sent yet (``header``) has a connection of its own.

What a case created: the queues and exchanges its commands name with the run's prefix, deleted
afterwards with ``queue.delete`` and ``exchange.delete`` on a session of their own.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from amqpfuzz.spec import RemoteProtocolError
from amqpfuzz.spec.amqp010.codec import Command, Control, codec_for
from amqpfuzz.strategies import Case, ErrorCode
from amqpfuzz.strategies.amqp010.context import CODES
from amqpfuzz.strategies.amqp010.wire import CASE_CHANNEL, Wire

from ...brokers import Target
from ..driver import ChannelRules
from ..outcome import Announced, ConnectionFailed, Name, Outcome, text
from ..sessions import SessionDriver
from .connection import Connection

__all__ = ["Amqp010Driver"]

_SIZE = struct.Struct(">H")
# the command fields that name what a case may create, by the domain they have
_ENTITIES = {"queue.name": "queue", "exchange.name": "exchange"}


class Amqp010Driver(SessionDriver):
    # the answer to the probe's detach; or, on a connection whose control session was
    # attached with the probe (not before), to that attach
    rules = ChannelRules(
        control=1,
        probe_replies=("session.detached", "session.attached"),
        ready_replies=("session.attached",),
        probe_ends=True,
    )
    connection = Connection
    frame_header: ClassVar[int] = 12
    wire = Wire
    case_channel: ClassVar[int] = CASE_CHANNEL

    def __init__(self, protocol: str) -> None:
        super().__init__(protocol)
        self.codec = codec_for(protocol)
        self.spec = self.codec.spec

    # -- negotiation -------------------------------------------------------------------------

    def announced(self, connection: Any) -> Announced:
        return Announced.of(connection.server_properties)

    # -- running cases -----------------------------------------------------------------------

    def own_ends(self, case: Case) -> int:
        return sum(1 for item in self._items(case, True) if item.name == "session.detach")

    @staticmethod
    def frame_size(data: bytes, at: int) -> int:
        return int(_SIZE.unpack_from(data, at + 2)[0])

    def _items(self, case: Case, own: bool = False) -> Iterator[Control | Command]:
        """The controls and commands of the case that decode (``own``: on its session)."""
        for step in case.steps:
            if not isinstance(step, Wire) or (own and step.channel >= 0):
                continue
            try:
                found = self.codec.decode(step.data, check=False)
            except RemoteProtocolError:  # broken bytes: nothing the engine must follow
                continue
            yield from (f for f in found if isinstance(f, Control | Command))

    # -- what a case created -----------------------------------------------------------------

    def created(self, case: Case, replies: list[Any], prefix: str) -> Iterable[tuple[str, Name]]:
        """The queues and exchanges the case's commands name with the run's prefix."""
        for item in self._items(case):
            if not isinstance(item, Command):
                continue
            for fld in self.spec.command(item.name).fields:
                kind = _ENTITIES.get(fld.ref.name) if fld.ref.kind == "domain" else None
                value = text(item[fld.name])
                if kind is not None and prefix and value.startswith(prefix):
                    yield kind, value

    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        """``queue.delete`` and ``exchange.delete`` of each, on a session of their own, each
        with the sync bit: its ``session.completed`` is the answer."""
        names = list(names)
        if not names:
            return []
        try:
            connection = self.spare(target, timeout)
        except ConnectionFailed:
            return [name for _, name in names]
        left: list[Name] = []
        try:
            for kind, name in names:
                command = f"{kind}.delete"
                data = connection.codec.encode_command(  # the field is named as its kind
                    command, {kind: name}, channel=self.rules.control, sync=True
                )
                connection.send(data)
                answer = connection.wait(self.rules.control, ("session.completed",), timeout)
                if isinstance(answer, Outcome):
                    left.append(name)
                    if connection.ended is not None:
                        break
                    connection.open_session(self.rules.control, timeout)  # for the rest
        finally:
            connection.close(timeout=1.0)
        return left

    # -- conformance and replays -------------------------------------------------------------

    def code(self, name: str) -> ErrorCode:
        """A close code, detach code or execution error code by its name in the XML."""
        return CODES.code(self.spec, name)
