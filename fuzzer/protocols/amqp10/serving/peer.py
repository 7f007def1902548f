"""The serving 1.0 peer: a listening endpoint on a free loopback port that plays the container a
client connects to (a broker, to the client).

Each connection plays one :class:`~amqpfuzz.strategies.amqp10.serving.Script`: SASL (ANONYMOUS
and PLAIN offered, a successful outcome) or none, the protocol header, ``open``; then it answers
what the client does: a ``begin`` with its own, each ``attach`` with the other role of the link
(the terminus asked for, the settlement modes asked for), credit for a client's sender, an
``accepted`` disposition settling each of the client's messages, which it delivers back to a
client's receiver as a broker would, ``detach`` and ``end`` in answer to the client's. Once the
client goes quiet it sends the script's own deliveries within the credit the client granted, the
operator's strike where it has not struck yet, and at last ``close`` with
``amqp:connection:forced`` ("the case is over"), which a client answers with its own close.
What the client sends is checked as it comes (:attr:`Exchange.violations`): frames over the
max-frame-size the peer announced, transfers beyond the credit it granted, handles and delivery
ids it never attached or sent, performatives out of their place.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import OutcomeKind, RemoteProtocolError
from amqpfuzz.spec.amqp10 import Spec100
from amqpfuzz.spec.amqp10.codec import (
    Codec,
    Composite,
    Described,
    Frame,
    Header,
    Symbol,
    UByte,
    UInt,
    UShort,
)
from amqpfuzz.strategies.amqp10.serving import Delivery, NotApplicable, Point, Script, Strike

from ...served import Exchange, Message
from ...serving import ANSWER, Conversation, Ended, Heard, Listener, ServingError
from .delivered import differs, sent_of

__all__ = ["Peer", "ServingError"]

QUIET = 0.05  # seconds without a word from the client: it waits for the peer
SETTLE = 0.15  # after a strike, how long the client has to react before the case goes on
CASE_OVER = "amqpfuzz: case over"
CREDIT = 10  # the link credit granted to a client's sender
HANDLE_MAX = 63  # the peer's own handle-max
WINDOW = 2048


class Peer(Listener):
    """Listens on a free loopback port; serves one connection at a time."""

    def __init__(self, spec: Spec100, codec: Codec) -> None:
        super().__init__()
        self.spec, self.codec = spec, codec
        self.case_over = "amqp:connection:forced"

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}"

    @staticmethod
    def waits(event: dict[str, object]) -> bool:
        """A shim's event after which its application waits for the peer: the disposition of
        its message, the last thing the 1.0 shim contract has it do."""
        return event.get("event") == "confirm"

    def play(
        self, conn: socket.socket, script: Script, timeout: float, heard: Heard | None = None
    ) -> Exchange:
        """Plays ``script`` on ``conn`` for at most ``timeout`` seconds, then closes it
        (``heard``: what the client's application reports, where someone hears it)."""
        started = time.monotonic()
        return self.played(_Play(self, conn, script, started + timeout, heard), started)


@dataclass
class _Link:
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


class _Play(Conversation):
    def __init__(
        self,
        peer: Peer,
        conn: socket.socket,
        script: Script,
        deadline: float,
        heard: Heard | None = None,
    ) -> None:
        super().__init__(conn, deadline, peer.codec.reader(512), heard)
        self.peer, self.script = peer, script
        self.codec = peer.codec
        self.pending = script.operator is not None
        self.closing = False
        self.ids_spent = False
        self.opened: dict[str, Any] = {}  # the client's open
        self.channel: int | None = None  # the peer's session channel
        self.their_channel: int | None = None
        self.handle_max = 0xFFFFFFFF
        self.links: dict[int, _Link] = {}  # by the client's handle
        self.attaches = 0
        self.next_delivery = 0
        self.unsettled: set[int] = set()  # delivery ids the peer sent unsettled
        self.next_incoming: int | None = None
        self.echo: list[tuple[bytes, str]] = []  # the client's messages, to deliver back
        self.names: set[tuple[bool, str]] = set()  # the client's links: (role, name)

    # -- sending -----------------------------------------------------------------------------------

    def _frame(self, body: Composite, channel: int = 0, payload: bytes = b"") -> None:
        self._send(self.codec.frame(body, channel, payload), body.name)

    def _strike(self, point: Point, bodies: tuple[Composite | None, ...], frames: tuple[bytes, ...],
                payload: bytes = b"", *, settle: bool = True, retry: bool = False) -> bool:  # fmt: skip
        """The operator's frames instead of ``frames``; False (nothing sent) where it finds
        nothing to break (``retry``: it may at its point's next turn)."""
        link = self._sending()
        channel_max = self.opened.get("channel-max")
        strike = Strike(
            self.peer.spec, self.codec, frames, bodies, self.channel or 0,
            int(self.opened.get("max-frame-size") or 0xFFFFFFFF),
            0xFFFF if channel_max is None else int(channel_max),
            self.handle_max, link.ours if link else None, self._receiving(),
            self.next_delivery, link.credit if link else 0,
            frozenset(x.ours for x in self.links.values()), payload,
        )  # fmt: skip
        self.pending = False
        try:
            built = self.script.built(strike)
        except NotApplicable as why:
            if retry:
                self.pending = True
            else:
                self._unstruck(str(why))
            return False
        self.ex.struck = built.note
        self.ex.spec_ref = built.spec_ref
        said = self._said()
        for step in built.steps:
            self._send(step.render(self.channel or 0), f"{step.label} [{self.script.label}]")
        if settle:
            self._wait(SETTLE, settle=True, until=lambda heard: heard.said() > said)
        return True

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

    def _expect(self, name: str) -> Header | Frame:
        """The client's next header (``header``) or frame named ``name`` (its answer to the peer's
        last: ``ANSWER`` seconds for it at most)."""
        until = min(self.deadline, time.monotonic() + ANSWER)
        while time.monotonic() < until:
            frames = self._read(until - time.monotonic())
            if frames is None:
                raise Ended
            for at, frame in enumerate(frames):
                found = "header" if isinstance(frame, Header) else frame.name
                if found == name and isinstance(frame, Header | Frame):
                    self.backlog = frames[at + 1 :]
                    return frame
                if isinstance(frame, Frame) and frame.name == "close":
                    self._handle(frame)
                if not (isinstance(frame, Frame) and frame.body is None):
                    self._violate("order", f"{_label(frame)} where {name} belongs")
        self.ex.ended = "timeout"
        raise Ended

    # -- the connection ----------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._start()
            self._app()
        except Ended:
            return

    def _start(self) -> None:
        header = self._expect("header")
        assert isinstance(header, Header)
        self.ex.header = header.encode()
        if (header.major, header.minor, header.revision) != (1, 0, 0):
            self._violate("header", f"{_label(header)}: not the version 1.0.0 it speaks")
        if header.protocol_id == 3:
            self._sasl()
            header = self._expect("header")
            assert isinstance(header, Header)
        elif self._due(Point.SASL):
            self._unstruck("the client asked for no SASL layer")
        if self._due(Point.HEADER) and self._strike(Point.HEADER, (None,), (b"",), settle=False):
            self._linger()
        self._send(Header().encode(), "protocol header 1.0.0")
        opened = self._expect("open")
        assert isinstance(opened, Frame) and opened.body is not None
        self.opened = dict(self.codec.with_defaults(opened.body).fields)
        ours = self.codec.composite(
            "open",
            container_id=self.script.open_fields["container-id"],
            max_frame_size=self.script.open_fields["max-frame-size"],
            channel_max=UShort(int(self.script.open_fields["channel-max"])),
            idle_time_out=self.script.open_fields["idle-time-out"],
        )
        self.reader.max_frame_size = int(ours["max-frame-size"])
        if not (
            self._due(Point.OPEN) and self._strike(Point.OPEN, (ours,), (self.codec.frame(ours),))
        ):
            self._frame(ours)

    def _sasl(self) -> None:
        self._send(Header(3).encode(), "protocol header SASL")
        mechanisms = self.codec.composite(
            "sasl-mechanisms", sasl_server_mechanisms=[Symbol("ANONYMOUS"), Symbol("PLAIN")]
        )
        self._frame(mechanisms)
        self._expect("sasl-init")
        outcome = self.codec.composite("sasl-outcome", code=UByte(0))
        if self._due(Point.SASL) and self._strike(
            Point.SASL, (outcome,), (self.codec.frame(outcome),), settle=False
        ):
            self._linger()
        self._frame(outcome)

    def _linger(self) -> None:
        """After a strike that leaves no connection to go on with: the client must end it. What
        it pipelined before it read the strike (its open, its begin...) is not held against it,
        nor is a close it sends before it closes the socket."""
        self.lingering = True
        self.ex.after_strike.clear()
        self._await_answer(settle=True)
        raise Ended

    def _unstruck(self, why: str) -> None:
        """The operator's point never comes: the case is played as valid."""
        self.pending = False
        self.ex.unstruck = True
        self.ex.spec_ref = f"not applicable: {why}"

    def _app(self) -> None:
        self._wait(QUIET, until=lambda heard: heard.waiting())
        deliveries: list[Delivery | None] = list(self.script.deliveries)
        if self._due(Point.DELIVER) and not deliveries:
            deliveries = [None]
        for number, delivery in enumerate(deliveries):
            link = self._sending()
            if link is None or link.credit <= 0 or self.ids_spent:
                break
            if delivery is None:  # the strike's own: a delivery to break
                marker, settled = "amqpfuzz-struck", True
                payload = self.codec.message(_late(self.codec, marker))
            else:
                payload = self.codec.message(delivery.sections)
                marker, settled = delivery.message_id, delivery.settled
            strikes = self._due(Point.DELIVER) and number >= min(
                self.script.nth, len(deliveries) - 1
            )
            self._deliver(link, payload, marker, settled, strike=strikes)
        for point in (Point.BEGIN, Point.ATTACH, Point.DELIVER):  # its point never came
            if self._due(point):
                self._unstruck(f"the client gave no place to strike at {point}")
        if self._due(Point.AFTER):
            self._strike(Point.AFTER, (), ())
        # (by silence, even where the client is heard: a 1.0 library runs its own I/O loop and
        # sends flows and dispositions on its own schedule, after what it reported; what the
        # client's frames are checked for comes last)
        self._wait(QUIET)
        self._close()

    def _close(self) -> None:
        self.closing = True
        error = self.codec.composite(
            "error", condition=Symbol(self.peer.case_over), description=CASE_OVER
        )
        self._frame(self.codec.composite("close", error=error))
        self._await_answer()

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
        if self.channel is not None:
            self._violate("order", f"a second begin on channel {frame.channel}")
            return
        self.their_channel = frame.channel
        self.channel = frame.channel
        self.handle_max = int(body["handle-max"])
        if body["remote-channel"] is not None:
            self._violate(
                "remote-channel",
                "a begin with remote-channel set, for a session the client began itself "
                "(transport 2.7.2 begin)",
            )
        self.next_incoming = int(body["next-outgoing-id"])
        ours = self.codec.composite(
            "begin", remote_channel=UShort(frame.channel), next_outgoing_id=UInt(0),
            incoming_window=UInt(WINDOW), outgoing_window=UInt(WINDOW),
            handle_max=UInt(self._handle_max),
        )  # fmt: skip
        frames = (self.codec.frame(ours, self.channel),)
        if not (self._due(Point.BEGIN) and self._strike(Point.BEGIN, (ours,), frames)):
            self._frame(ours, self.channel)

    def _on_attach(self, frame: Frame, body: Composite) -> None:
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
        link = _Link(
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

    def _flow(self, link: _Link | None, **fields: Any) -> Composite:
        base = {
            "next_incoming_id": UInt(self.next_incoming or 0), "incoming_window": UInt(WINDOW),
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
        """A client's delivery-id is the next its session owes (transport 2.7.5 transfer)."""
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

    # -- deliveries --------------------------------------------------------------------------------

    def _sending(self) -> _Link | None:
        return next((x for x in self.links.values() if x.sender and not x.broken), None)

    def _receiving(self) -> int | None:
        return next((x.ours for x in self.links.values() if not x.sender), None)

    def _echo(self) -> None:
        link = self._sending()
        while (
            self.echo
            and link
            and link.credit > 0
            and not (self.pending_deliver() or self.ids_spent)
        ):
            payload, marker = self.echo.pop(0)
            self._deliver(link, payload, marker, True, strike=False)

    def pending_deliver(self) -> bool:
        """Whether the strike waits for a delivery of the script's own (echoes wait too)."""
        return self._due(Point.DELIVER) and bool(self.script.deliveries)

    def _deliver(self, link: _Link, payload: bytes, marker: str | None, settled: bool,
                 *, strike: bool) -> None:  # fmt: skip
        delivery = self.next_delivery
        transfer = self.codec.composite(
            "transfer", handle=UInt(link.ours), delivery_id=UInt(delivery),
            delivery_tag=delivery.to_bytes(4, "big"), message_format=UInt(0), settled=settled,
        )  # fmt: skip
        limit = int(self.opened.get("max-frame-size") or 0xFFFFFFFF)
        frames = self.codec.transfer_frames(
            self.channel or 0, transfer, payload, min(limit, 1 << 20)
        )
        message = Message(
            "transfer", self.channel or 0, delivery, payload,
            {**sent_of(self.codec, payload), "message-id": marker},
            _content(self.codec, payload), differs,
        )  # fmt: skip
        if strike and marker is not None and self.script.expected.or_reply:
            self.ex.messages.append(message)  # the client may take it as valid
        self.ids_spent = strike  # the strike's delivery ids are its own: the peer sends no more
        if not (strike and self._strike(Point.DELIVER, (transfer,), tuple(frames), payload)):
            self.ids_spent = False
            if marker is not None:
                self.ex.messages.append(message)
            for data in frames:
                self._send(data, f"transfer {delivery}")
            if not settled:
                self.unsettled.add(delivery)
        self.next_delivery += 1
        link.delivery_count += 1
        link.credit -= 1


def _late(codec: Codec, marker: str) -> list[Any]:
    return [codec.composite("properties", message_id=marker), Described("amqp-value", marker)]


def _content(codec: Codec, payload: bytes) -> dict[str, Any] | None:
    """A message's body as the shims show it, where that is exact: an amqp-value string's
    text, data sections' octets in hex (None for other bodies)."""
    try:
        sections = codec.sections(payload)
    except RemoteProtocolError:
        return None
    bodies = [s for s in sections if isinstance(s, Described)]
    if (
        len(bodies) == 1
        and bodies[0].descriptor == "amqp-value"
        and isinstance(bodies[0].value, str)
    ):
        return {"value": bodies[0].value}
    if bodies and all(b.descriptor == "data" for b in bodies):
        return {"data": [bytes(b.value).hex() for b in bodies]}
    return None


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
