"""What a client sends the serving 1.0 peer, answered and checked as it comes.

:class:`Answering` is one connection as the peer holds it (the client's open, the session, the
links by the client's handle, the delivery ids on both sides) and its answers to the client:
a ``begin`` with its own, each ``attach`` with the other role of the link (the terminus asked
for, the settlement modes asked for), credit for a client's sender, an ``accepted``
disposition settling each of the client's messages (which go back to a client's receiver),
``detach`` and ``end`` in answer to the client's, ``close`` to its close. What the client sends
is checked (:attr:`Exchange.violations`): frames over the max-frame-size or channel-max the
peer announced, transfers beyond the credit it granted, handles and delivery ids it never
attached or sent, settlement against the mode agreed, performatives out of their place. The
peer's own side (:class:`~.peer.Peer`) gives the operator's strike and the deliveries.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import OutcomeKind, RemoteProtocolError
from amqpfuzz.spec.amqp10.codec import Codec, Composite, Frame, Header, UInt, UShort
from amqpfuzz.strategies.amqp10.serving import Point, Script

from ...serving import Conversation, Ended, Heard

__all__ = ["Answering", "Link"]

CREDIT = 10  # the link credit granted to a client's sender
HANDLE_MAX = 63  # the peer's own handle-max
WINDOW = 2048


@dataclass
class Link:
    """A link as the peer holds it: its name, the peer's handle and role, the client's
    handle, and the delivery count and credit of the peer's sending end."""

    name: str
    ours: int
    theirs: int
    sender: bool  # the peer sends on it (the client receives)
    delivery_count: int = 0
    credit: int = 0
    received: int = 0  # transfers the client sent on it
    broken: bool = False  # the peer's attach was struck: the client never saw it attached
    settle_mode: int = 2  # the client's snd-settle-mode, on a link it sends on
    partial: list[bytes] = field(default_factory=list)


class Answering(Conversation):
    """One connection as the peer holds it, and its answers to what the client sends; the
    peer's own side gives the strike (:meth:`_strike`) and the deliveries (:meth:`_echo`)."""

    def __init__(
        self,
        conn: socket.socket,
        deadline: float,
        codec: Codec,
        script: Script,
        heard: Heard | None = None,
    ) -> None:
        super().__init__(conn, deadline, codec.reader(512), heard)
        self.script = script
        self.codec = codec
        self.pending = script.operator is not None
        self.closing = False
        self.ids_spent = False
        self.opened: dict[str, Any] = {}  # the client's open
        self.channel: int | None = None  # the peer's session channel
        self.their_channel: int | None = None
        # other sessions the client began (Qpid JMS begins one of its own first), answered
        # and left alone: the peer works with the session the client's links attach on
        self.idle: set[int] = set()
        self.handle_max = 0xFFFFFFFF
        self.links: dict[int, Link] = {}  # by the client's handle
        self.attaches = 0
        self.next_delivery = 0
        self.unsettled: set[int] = set()  # delivery ids the peer sent unsettled
        # the delivery-id the client's session owes next (its first is its own choice: proton-j
        # numbers deliveries from 0 beside transfer-ids from 1), and the transfer-id (its
        # begin's next-outgoing-id, one more per transfer: session flow control, 2.5.6)
        self.next_incoming: int | None = None
        self.next_transfer = 0
        self.echo: list[tuple[bytes, str]] = []  # the client's messages, to deliver back
        self.names: set[tuple[bool, str]] = set()  # the client's links: (role, name)

    def _strike(self, point: Point, bodies: tuple[Composite | None, ...], frames: tuple[bytes, ...],
                payload: bytes = b"", *, settle: bool = True, retry: bool = False) -> bool:  # fmt: skip
        """The operator's frames instead of ``frames``; False (nothing sent) where it finds
        nothing to break (``retry``: it may at its point's next turn)."""
        raise NotImplementedError

    def _echo(self) -> None:
        """The client's messages delivered back, as the credit of the peer's sending link
        allows."""
        raise NotImplementedError

    # -- sending -----------------------------------------------------------------------------------

    def _frame(self, body: Composite, channel: int = 0, payload: bytes = b"") -> None:
        self._send(self.codec.frame(body, channel, payload), body.name)

    def _due(self, point: Point) -> bool:
        return self.pending and self.script.point is point

    def _violate(self, check: str, message: str) -> None:
        """What the client sent breaks the specification: ``message``, under the name of the
        check that saw it (what a client scenario's ``frames`` names)."""
        self.ex.violations.append(f"{message} [{check}]")

    # -- receiving ---------------------------------------------------------------------------------

    def _refuse(self, message: str) -> None:
        self._violate("malformed", message)

    def _label(self, frame: Any) -> str:
        return _label(frame)

    # -- what the client sends ---------------------------------------------------------------------

    def _handle(self, frame: Header | Frame) -> None:
        if isinstance(frame, Header):
            self._violate("order", "a protocol header in the middle of the connection")
            return
        body = frame.body
        if frame.channel > self._channel_max and not self.lingering:
            self._violate(
                "channel-max",
                f"{frame.name} on channel {frame.channel}, over the channel-max "
                f"{self._channel_max} the peer announced (transport 2.7.1 open)",
            )
        if body is None:
            return  # an empty frame: traffic to keep the connection alive
        if self.lingering:
            if body.name == "close":
                self.ex.ended = "socket"
                raise Ended
            return
        if body.name == "close":
            self._closed(body)
        if self.closing:
            return  # after the peer's close, everything but close is discarded
        handler = getattr(self, f"_on_{body.name.replace('-', '_')}", None)
        if handler is None:
            self._violate("order", f"{body.name} from the client, which it never sends here")
            return
        if body.name == "flow" and body["handle"] is None:  # (as sent, not with defaults)
            link_only = [f for f in ("delivery-count", "link-credit", "available", "drain")
                         if body[f] is not None]  # fmt: skip
            for name in link_only:
                self._violate(f"session-flow-{name}", f"a session flow with {name} set (2.7.4)")
        handler(frame, self.codec.with_defaults(body))

    def _closed(self, body: Composite) -> None:
        error = body["error"]
        if not self.closing or error is not None:
            condition = str(error["condition"]) if error is not None else None
            description = str(error["description"] or "") if error is not None else ""
            self.ex.client_close = (condition, description, 0, 0)
        if not self.closing:
            with contextlib.suppress(Ended):
                self._frame(self.codec.composite("close"))
        self.ex.ended = "server-close" if self.closing else "client-close"
        raise Ended

    def _on_begin(self, frame: Frame, body: Composite) -> None:
        if frame.channel == self.channel or frame.channel in self.idle:
            self._violate("order", f"a second begin on channel {frame.channel}")
            return
        if self.channel is not None:  # another session (transport 2.5: a client may begin many)
            if self.links:
                self.idle.add(frame.channel)
                self._frame(self._begun(frame), frame.channel)
                return
            self.idle.add(self.channel)  # the one before has no links: this one is worked with
        self.their_channel = frame.channel
        self.channel = frame.channel
        self.handle_max = int(body["handle-max"])
        if body["remote-channel"] is not None:
            self._violate(
                "remote-channel",
                "a begin with remote-channel set, for a session the client began itself "
                "(transport 2.7.2 begin)",
            )
        self.next_transfer = int(body["next-outgoing-id"])
        self.next_incoming = None
        ours = self._begun(frame)
        frames = (self.codec.frame(ours, self.channel),)
        if not (self._due(Point.BEGIN) and self._strike(Point.BEGIN, (ours,), frames)):
            self._frame(ours, self.channel)

    def _begun(self, frame: Frame) -> Composite:
        """The peer's begin answering the client's on ``frame``'s channel."""
        return self.codec.composite(
            "begin", remote_channel=UShort(frame.channel), next_outgoing_id=UInt(0),
            incoming_window=UInt(WINDOW), outgoing_window=UInt(WINDOW),
            handle_max=UInt(self._handle_max),
        )  # fmt: skip

    def _on_attach(self, frame: Frame, body: Composite) -> None:
        if frame.channel in self.idle and not self.links and self.channel is not None:
            self.idle.symmetric_difference_update((frame.channel, self.channel))
            self.channel = self.their_channel = frame.channel  # the links' session
        theirs = int(body["handle"])
        if theirs in self.links:
            self._violate("handle-in-use", f"attach with handle {theirs} already in use")
            return
        if theirs > self._handle_max:
            self._violate(
                "handle-max",
                f"attach with handle {theirs}, over the handle-max {self._handle_max} the peer "
                "announced (transport 2.7.2 begin)",
            )
        named = (bool(body["role"]), str(body["name"]))
        if named in self.names:
            self._violate(
                "link-name",
                f"a second link named {named[1]!r} in the same direction (transport 2.6.1)",
            )
        self.names.add(named)
        sender = bool(body["role"])  # the client receives (role true): the peer sends
        ours = len(self.links)
        link = Link(
            str(body["name"]), ours, theirs, sender, settle_mode=int(body["snd-settle-mode"])
        )
        self.links[theirs] = link
        answer = self.codec.composite(
            "attach", name=link.name, handle=UInt(ours), role=not sender,
            snd_settle_mode=body["snd-settle-mode"], rcv_settle_mode=body["rcv-settle-mode"],
            source=body["source"], target=body["target"],
            initial_delivery_count=UInt(0) if sender else None,
        )  # fmt: skip
        nth, self.attaches = self.attaches, self.attaches + 1
        struck = False
        if self._due(Point.ATTACH) and nth >= self.script.nth:
            frames = (self.codec.frame(answer, self.channel or 0),)
            struck = link.broken = self._strike(Point.ATTACH, (answer,), frames, retry=True)
        if not struck:
            self._frame(answer, self.channel or 0)
        if not sender:  # credit for the client's sender
            flow = self._flow(link, link_credit=UInt(CREDIT),
                              delivery_count=body["initial-delivery-count"] or UInt(0))  # fmt: skip
            link.credit = CREDIT
            self._frame(flow, self.channel or 0)

    def _flow(self, link: Link | None, **fields: Any) -> Composite:
        base = {
            "next_incoming_id": UInt(self.next_transfer), "incoming_window": UInt(WINDOW),
            "next_outgoing_id": UInt(self.next_delivery), "outgoing_window": UInt(WINDOW),
        }  # fmt: skip
        if link is not None:
            base["handle"] = UInt(link.ours)
        return self.codec.composite("flow", **base, **fields)

    def _on_flow(self, frame: Frame, body: Composite) -> None:
        handle = body["handle"]
        if handle is None:
            return  # the session's flow
        link = self.links.get(int(handle))
        if link is None:
            self._violate("handle", f"flow on handle {handle}, which is not attached")
            return
        if link.sender and not link.broken:
            count = int(body["delivery-count"] or 0)
            link.credit = max(0, count + int(body["link-credit"] or 0) - link.delivery_count)
            self._echo()

    def _on_transfer(self, frame: Frame, body: Composite) -> None:
        self.next_transfer = (self.next_transfer + 1) & 0xFFFFFFFF
        link = self.links.get(int(body["handle"]))
        if link is None or link.sender:
            self._violate("handle", f"transfer on handle {body['handle']}, not a link it sends on")
            return
        delivery = body["delivery-id"]
        if not link.partial:  # a delivery's first transfer
            self._in_sequence(delivery)
            if link.settle_mode in (0, 1) and bool(body["settled"]) != bool(link.settle_mode):
                mode = "settled" if link.settle_mode else "unsettled"
                self._violate(
                    "settlement",
                    f"transfer {'settled' if body['settled'] else 'unsettled'} on a link whose "
                    f"snd-settle-mode is {mode}",
                )
        link.partial.append(frame.payload)
        if body["more"]:
            return
        payload, link.partial = b"".join(link.partial), []
        link.received += 1
        if link.received > CREDIT:
            self._violate("credit", f"transfer {link.received} on a credit of {CREDIT}")
        if delivery is not None and not body["settled"]:
            accepted = self.codec.composite(
                "disposition", role=True, first=delivery, settled=True,
                state=self.codec.composite("accepted"),
            )  # fmt: skip
            self._frame(accepted, self.channel or 0)
        self._encoding(payload)
        marker = _message_id(self.codec, payload)
        if marker is not None:
            self.echo.append((payload, marker))
            self._echo()

    def _encoding(self, payload: bytes) -> None:
        """A client's message: content-encoding only over data sections, never ``identity``
        (messaging 3.2.4 properties)."""
        try:
            sections = self.codec.sections(payload)
        except RemoteProtocolError as exc:
            self._violate("malformed", f"a message from the client that does not decode: {exc}")
            return
        found = next((s for s in sections if getattr(s, "name", "") == "properties"), None)
        encoding = found["content-encoding"] if isinstance(found, Composite) else None
        if encoding is None:
            return
        if str(encoding) == "identity":
            self._violate("content-encoding", "a message whose content-encoding is identity")
        if any(getattr(s, "name", getattr(s, "descriptor", "")) in ("amqp-value", "amqp-sequence")
               for s in sections):  # fmt: skip
            self._violate("content-encoding", "a content-encoding on a body that is not data")

    @property
    def _channel_max(self) -> int:
        return int(self.script.open_fields["channel-max"])

    @property
    def _handle_max(self) -> int:
        return int(self.script.begin_fields.get("handle-max", HANDLE_MAX))

    def _in_sequence(self, delivery: Any) -> None:
        """A client's delivery-id is the one after its last (transport 2.7.5 transfer); the
        first is the session's choice."""
        if delivery is None:
            self._violate("delivery-id", "the first transfer of a delivery without a delivery-id")
        elif self.next_incoming is not None and int(delivery) != self.next_incoming:
            self._violate(
                "delivery-id", f"delivery-id {delivery} where {self.next_incoming} was next"
            )
        if delivery is not None:
            self.next_incoming = (int(delivery) + 1) & 0xFFFFFFFF

    def _on_disposition(self, frame: Frame, body: Composite) -> None:
        if body["role"] is not True:
            return  # the client's sender settling what the peer already settled
        first = int(body["first"])
        last = int(body["last"] if body["last"] is not None else first)
        for delivery in range(first, last + 1):
            if delivery >= self.next_delivery and not self.ids_spent:  # (a strike's: its own)
                self._violate("disposition", f"disposition of delivery {delivery}, never sent")
                break
            self.unsettled.discard(delivery)

    def _on_detach(self, frame: Frame, body: Composite) -> None:
        link = self.links.pop(int(body["handle"]), None)
        if body["error"] is not None:
            self.ex.closes.append((OutcomeKind.LINK_CLOSE.value, str(body["error"]["condition"])))
        if link is not None:
            detach = self.codec.composite("detach", handle=UInt(link.ours), closed=body["closed"])
            self._frame(detach, self.channel or 0)

    def _on_end(self, frame: Frame, body: Composite) -> None:
        if frame.channel in self.idle:  # a session the peer leaves alone, ended
            self.idle.discard(frame.channel)
            self._frame(self.codec.composite("end"), frame.channel)
            return
        if body["error"] is not None:
            self.ex.closes.append(
                (OutcomeKind.SESSION_CLOSE.value, str(body["error"]["condition"]))
            )
        self.links.clear()
        if self.channel is not None:
            self._frame(self.codec.composite("end"), self.channel)
        self.channel = None

    def _on_open(self, frame: Frame, body: Composite) -> None:
        self._violate("order", "a second open from the client")

    # -- the links ---------------------------------------------------------------------------------

    def _sending(self) -> Link | None:
        return next((x for x in self.links.values() if x.sender and not x.broken), None)

    def _receiving(self) -> int | None:
        return next((x.ours for x in self.links.values() if not x.sender), None)


def _message_id(codec: Codec, payload: bytes) -> str | None:
    """A message's message-id, if it has one that is a string."""
    try:
        sections = codec.sections(payload)
    except RemoteProtocolError:
        return None
    for section in sections:
        if isinstance(section, Composite) and section.name == "properties":
            found = section["message-id"]
            return found if isinstance(found, str) else None
    return None


def _label(frame: Header | Frame) -> str:
    if isinstance(frame, Header):
        return f"protocol header {frame.protocol_id} {frame.major}.{frame.minor}.{frame.revision}"
    return f"{frame.name} ch={frame.channel}"
