"""The steps of 1.0 traffic that wait for the peer, and those made from what it sent.

:class:`Awaiting` is an :class:`~amqpfuzz.strategies.cases.Await` of one link's state (its
credit came, what went on it was settled, its deliveries came, it was detached); each
:class:`Made` step is an :class:`~amqpfuzz.strategies.cases.Answer`: transfers within the credit
as it stands, a receiver's credit from the delivery-count as last known, the session's and a
sender's flow state, dispositions of the deliveries that came (as receiver) or of those the peer
has not settled (as sender). Each reads the session again from what both sides sent
(:class:`~.session.View`) when it goes; what it sends against the nominal peer, planned when the
case is built, is its :meth:`~Made.render`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec.amqp10.codec import Codec, Composite, UByte, UInt

from .session import View, serial

__all__ = [
    "WINDOW",
    "Awaiting",
    "Credit",
    "Delivery",
    "Made",
    "SenderFlow",
    "SenderSettle",
    "Settle",
    "Transfers",
    "Window",
]

WINDOW = 2048  # the session windows the runner begins a session with


_WAITS = {
    "credit": "the peer's credit for",
    "settled": "the peer's settlement of what went on",
    "decided": "the peer's outcome for what went on",
    "delivered": "the deliveries due on",
    "detached": "the peer's detach of",
    "begun": "the peer's begin of the session",
    "answered": "the peer's attach for each link",
}


@dataclass(frozen=True)
class Awaiting:
    """An await (:class:`~amqpfuzz.strategies.cases.Await`) of one link's state: ``credit``
    (a sender's credit came), ``settled`` (the peer settled every delivery we sent unsettled
    on it), ``decided`` (it gave each an outcome), ``delivered`` (a receiver got what its
    credit and its node's known messages allow) or ``detached`` (the peer detached it); or
    ``begun``, the session's, and ``answered``, each link's attach answered (``link``
    unused)."""

    kind: str
    link: str
    codec: Codec = field(repr=False, compare=False)

    def render(self, channel: int) -> bytes:
        return b""

    @property
    def label(self) -> str:
        return f"await {_WAITS[self.kind]} {self.link}".rstrip()

    def met(self, sent: Sequence[bytes], received: Sequence[Any]) -> bool | None:
        view = View(self.codec, sent, received)
        if self.kind == "begun":
            return None if view.ended else view.peer_next is not None
        if self.kind == "answered":
            return None if view.ended else all(k.answered for k in view.links.values())
        link = view.link(self.link)
        if view.ended or link is None:
            return None
        if self.kind == "detached":
            return True if link.gone else None if link.failed else False
        if link.gone:  # the peer detached it: what is awaited will not come
            return None
        if not link.answered:
            return False
        if self.kind == "credit":
            return link.limit is not None
        if self.kind == "settled":
            return not link.unsettled
        if self.kind == "decided":
            return all(d in view.decided for d in link.unsettled)
        # delivered: no more is due (the credit is used, the known messages came, or the
        # window is shut), and no delivery is half sent but for a shut window
        shut = view.window_left == 0
        done = link.outstanding == 0 or view.known(link.address) == 0 or shut
        return done and (shut or not link.partial)


@dataclass(frozen=True)
class Made:
    """A step made from the session as it stands (:class:`~.session.View`) when it goes: an
    :class:`~amqpfuzz.strategies.cases.Answer`. ``planned`` is what it sends against the
    nominal peer (on channel 0; :meth:`render` puts it on another)."""

    codec: Codec = field(repr=False, compare=False, kw_only=True)
    planned: bytes = field(default=b"", repr=False, compare=False, kw_only=True)

    @property
    def label(self) -> str:
        return type(self).__name__.lower()

    def render(self, channel: int) -> bytes:
        return _rechannel(self.planned, channel)

    def answer(self, channel: int, sent: Sequence[bytes], received: Sequence[Any]) -> bytes:
        return self.make(View(self.codec, sent, received), channel)

    def make(self, view: View, channel: int) -> bytes:
        raise NotImplementedError

    def _flow(self, view: View, **fields: Any) -> Composite:
        incoming = view.next_incoming
        return self.codec.composite(
            "flow",
            next_incoming_id=None if incoming is None else UInt(incoming),
            next_outgoing_id=UInt(serial(view.transfers_out)),
            outgoing_window=UInt(WINDOW),
            **fields,
        )


def _rechannel(data: bytes, channel: int) -> bytes:
    """``data``'s frames with their channel octets set to ``channel``."""
    out, at = bytearray(data), 0
    while at + 8 <= len(out):
        size = int.from_bytes(out[at : at + 4], "big")
        out[at + 6 : at + 8] = (channel & 0xFFFF).to_bytes(2, "big")
        at += max(size, 8)
    return bytes(out)


@dataclass(frozen=True)
class Delivery:
    """One message to send: its bytes, whether it goes settled (a mixed link's choice), the
    frame size it is split to, and the transfer's optional fields."""

    message: bytes
    settled: bool
    frame: int
    batchable: bool = False
    rcv_settle_mode: int | None = None  # asked on the transfer (where the link allows it)


@dataclass(frozen=True)
class Transfers(Made):
    """Deliveries on a sending link, as many as its credit allows now (transport 2.6.7: never
    beyond it), each delivery-id the session's next."""

    link: str
    mode: int  # our snd-settle-mode: 0 unsettled, 1 settled, 2 mixed
    deliveries: tuple[Delivery, ...]

    @property
    def label(self) -> str:
        return f"{len(self.deliveries)} transfers on {self.link}, within its credit"

    def make(self, view: View, channel: int) -> bytes:
        link = view.link(self.link)
        if link is None or not link.answered or link.gone or link.detached:
            return b""
        assert link.handle is not None
        out = []
        delivery = view.deliveries_out
        for d in self.deliveries[: link.credit]:
            settled = self.mode == 1 or (self.mode == 2 and d.settled)
            fields: dict[str, Any] = {
                "handle": UInt(link.handle),
                "delivery_id": UInt(serial(delivery)),
                "delivery_tag": serial(delivery).to_bytes(4, "big"),
                "message_format": UInt(0),
                "settled": settled,
            }
            if d.batchable:
                fields["batchable"] = True
            # second only where the receiver settles second (2.7.5: not on a link of first)
            if d.rcv_settle_mode is not None and (d.rcv_settle_mode == 0 or link.rcv_settle_mode):
                fields["rcv_settle_mode"] = UByte(d.rcv_settle_mode)
            transfer = self.codec.composite("transfer", **fields)
            out += self.codec.transfer_frames(channel, transfer, d.message, d.frame)
            delivery += 1
        return b"".join(out)


@dataclass(frozen=True)
class Credit(Made):
    """A receiving link's flow: ``credit`` from the delivery-count as last known (none before
    the peer's attach: transport 2.7.4), perhaps draining, perhaps asking for the peer's state;
    the incoming window given anew (``window``, or the last one given)."""

    link: str
    credit: int
    drain: bool = False
    echo: bool = False
    window: int | None = None

    @property
    def label(self) -> str:
        how = " draining" if self.drain else ""
        return f"credit {self.credit} to {self.link}{how}"

    def make(self, view: View, channel: int) -> bytes:
        link = view.link(self.link)
        if link is None or link.detached or link.gone:
            return b""
        count = link.peer_count if link.answered else None
        window = self.window if self.window is not None else view.window or WINDOW
        flow = self._flow(
            view,
            incoming_window=UInt(window),
            handle=UInt(link.handle or 0),
            delivery_count=None if count is None else UInt(count),
            link_credit=UInt(self.credit),
            drain=True if self.drain else None,
            echo=True if self.echo else None,
        )
        return self.codec.frame(flow, channel)


@dataclass(frozen=True)
class SenderFlow(Made):
    """A sending link's flow: its delivery-count, the credit as it stands, what it has
    ``available``, perhaps asking for the peer's state."""

    link: str
    available: int
    echo: bool = False

    @property
    def label(self) -> str:
        return f"the flow state of {self.link} ({self.available} available)"

    def make(self, view: View, channel: int) -> bytes:
        link = view.link(self.link)
        if link is None or not link.answered or link.gone or link.detached:
            return b""
        flow = self._flow(
            view,
            incoming_window=UInt(view.window or WINDOW),
            handle=UInt(link.handle or 0),
            delivery_count=UInt(link.count),
            link_credit=UInt(link.credit),
            available=UInt(self.available),
            echo=True if self.echo else None,
        )
        return self.codec.frame(flow, channel)


@dataclass(frozen=True)
class Window(Made):
    """The session's flow: our incoming and outgoing windows as given, perhaps asking for
    the peer's state (transport 2.5.6)."""

    incoming: int
    outgoing: int = WINDOW
    echo: bool = False

    @property
    def label(self) -> str:
        return f"the session's incoming window {self.incoming}"

    def make(self, view: View, channel: int) -> bytes:
        flow = self.codec.composite(
            "flow",
            next_incoming_id=None if view.next_incoming is None else UInt(view.next_incoming),
            incoming_window=UInt(self.incoming),
            next_outgoing_id=UInt(serial(view.transfers_out)),
            outgoing_window=UInt(self.outgoing),
            echo=True if self.echo else None,
        )
        return self.codec.frame(flow, channel)


@dataclass(frozen=True)
class Settle(Made):
    """Dispositions, as receiver, of the deliveries that came unsettled on ``link`` and that
    we have not settled: ``first`` (the first of them), ``each`` (one disposition each) or
    ``runs`` (one per run of consecutive ids); with ``state`` (an outcome, or ``received``),
    settled or not (never settled on a link we receive on with rcv-settle-mode second)."""

    link: str
    how: str
    state: Composite | None
    settled: bool
    batchable: bool = False
    second: bool = False  # we receive on it with rcv-settle-mode second

    @property
    def label(self) -> str:
        what = self.state.name if self.state is not None else "no state"
        return f"settle {self.how} on {self.link}: {what}{'' if self.settled else ', unsettled'}"

    def make(self, view: View, channel: int) -> bytes:
        ids = view.unsettled_in(self.link)
        return _dispositions(
            self.codec, channel, ids, self.how, True, self.state,
            self.settled and not self.second, self.batchable,
        )  # fmt: skip


@dataclass(frozen=True)
class SenderSettle(Made):
    """Dispositions, as sender, settling what we sent unsettled on ``link`` and the peer has
    not settled (with the outcome it gave, or none)."""

    link: str
    state: Composite | None

    @property
    def label(self) -> str:
        return f"settle as sender on {self.link}"

    def make(self, view: View, channel: int) -> bytes:
        link = view.link(self.link)
        if link is None:
            return b""
        return _dispositions(self.codec, channel, link.unsettled, "runs", False, self.state, True)


def _dispositions(
    codec: Codec,
    channel: int,
    ids: Sequence[int],
    how: str,
    role: bool,
    state: Composite | None,
    settled: bool,
    batchable: bool = False,
) -> bytes:
    if not ids:
        return b""
    if how == "first":
        runs = [(ids[0], ids[0])]
    elif how == "each":
        runs = [(d, d) for d in ids]
    else:
        runs = []
        for d in sorted(ids):
            if runs and d == serial(runs[-1][1] + 1):
                runs[-1] = (runs[-1][0], d)
            else:
                runs.append((d, d))
    out = []
    for first, last in runs:
        disposition = codec.composite(
            "disposition",
            role=role,
            first=UInt(first),
            last=UInt(last) if last != first else None,
            settled=settled,
            state=state,
            batchable=True if batchable else None,
        )
        out.append(codec.frame(disposition, channel))
    return b"".join(out)
