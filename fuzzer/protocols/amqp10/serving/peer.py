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
What the client sends is answered and checked as it comes (:mod:`.answers`).
"""

from __future__ import annotations

import socket
import time
from typing import Any

from amqpfuzz.spec import RemoteProtocolError
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
from ...serving import ANSWER, Ended, Heard, Listener, ServingError
from .answers import Answering, Link
from .delivered import differs, sent_of

__all__ = ["Peer", "ServingError"]

QUIET = 0.05  # seconds without a word from the client: it waits for the peer
SETTLE = 0.15  # after a strike, how long the client has to react before the case goes on
CASE_OVER = "amqpfuzz: case over"


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


class _Play(Answering):
    def __init__(
        self,
        peer: Peer,
        conn: socket.socket,
        script: Script,
        deadline: float,
        heard: Heard | None = None,
    ) -> None:
        super().__init__(conn, deadline, peer.codec, script, heard)
        self.peer = peer

    # -- the strike --------------------------------------------------------------------------------

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

    # -- receiving ---------------------------------------------------------------------------------

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
                    self._violate("order", f"{self._label(frame)} where {name} belongs")
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
            self._violate("header", f"{self._label(header)}: not the version 1.0.0 it speaks")
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

    # -- deliveries --------------------------------------------------------------------------------

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

    def _deliver(self, link: Link, payload: bytes, marker: str | None, settled: bool,
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
