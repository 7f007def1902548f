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
from amqpfuzz.strategies import Case, ErrorCode
from amqpfuzz.strategies.amqp10 import CASE_CHANNEL, Wire
from amqpfuzz.strategies.amqp10.context import CODES

from ...brokers import Target
from ..driver import ChannelRules
from ..outcome import Announced, AuthenticationFailed, ConnectionFailed, Name, Unreachable
from ..sessions import SessionDriver
from .connection import Connection
from .nodes import delete_nodes

__all__ = ["Amqp10Driver"]

_SIZE = struct.Struct(">I")


def _ours(address: str, prefix: str) -> bool:
    return any(part.startswith(prefix) for part in address.split("/"))


class Amqp10Driver(SessionDriver):
    # the answer to the probe's end; or, on a connection whose control session was begun with
    # the probe (not before), to that begin
    rules = ChannelRules(
        control=0, probe_replies=("end", "begin"), ready_replies=("begin",), probe_ends=True
    )
    connection = Connection
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

    def announced(self, connection: Any) -> Announced:
        opened = connection.peer_open
        return Announced.of(opened["properties"] if opened is not None else None)

    # -- running cases -----------------------------------------------------------------------

    def _pipelined(self, target: Target, timeout: float) -> Connection | None:
        """After the first spare, the handshake in one write (SASL with the mechanism the first
        took, open, the control session's begin)."""
        if target not in self._mechanisms:
            return None
        try:
            return Connection.open_pipelined(
                target, self._mechanisms[target], timeout=timeout, session=self.rules.control
            )
        except (Unreachable, AuthenticationFailed):
            raise
        except ConnectionFailed:
            self._mechanisms.pop(target, None)  # step by step again
            return None

    def _learnt(self, target: Target, connection: Any) -> None:
        self._mechanisms[target] = connection.mechanism or None

    def seen(self, connection: Any, channel: int) -> list[Any]:
        """The session's frames from the peer, its begin first (a case's flows count the
        peer's transfers from the next-outgoing-id it began with)."""
        begin = connection.began.get(channel)
        return [*([begin] if begin is not None else []), *connection.inbox.get(channel, ())]

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
        """The nodes the case's attaches name (source and target addresses) whose name, or a
        part of it after a ``/`` (``/queue/<name>``, a form a peer reads), carries the run's
        prefix: a peer may create a node for an address it does not know. (A traffic case's
        attaches are among its steps as they are: made steps are transfers, flows and
        dispositions.)"""
        for frame in self._frames(case):
            body = frame.body
            if frame.name != "attach" or body is None:
                continue
            for end in ("source", "target"):
                terminus = body[end]
                address = terminus["address"] if isinstance(terminus, Composite) else None
                if isinstance(address, str) and prefix and _ours(address, prefix):
                    yield "node", address

    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        return delete_nodes(target, [name for _, name in names], timeout)

    # -- conformance and replays -------------------------------------------------------------

    def code(self, name: str) -> ErrorCode:
        """An error condition by its choice name; its scope, the type that defines it."""
        return CODES.code(self.spec, name)
