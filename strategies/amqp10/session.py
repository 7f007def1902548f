"""A 1.0 session as one side of it knows it: what we sent and what the peer sent, read again.

Valid traffic (:mod:`.traffic`) waits for the peer within a case and makes some of its frames
from the peer's answers: its transfers within the credit the peer granted, its dispositions
for the deliveries the peer sent, its flows with the session's and the link's counters as they
stand. All of that is read here, again each time, from the frames each side sent on the
session (:class:`View`): nothing is kept between two reads, so the same bytes and answers
always make the same frames. Counters are serial numbers (RFC-1982, transport 2.8.10), added
and compared modulo 2**32.

:class:`Nominal` is the peer a case is planned against: it answers as the specification
allows and a broker usually does (each attach with its own, credit to a sender, a disposition
for each unsettled delivery, messages to a receiver as its credit allows), so that a case has
bytes before it runs (:meth:`~amqpfuzz.strategies.Case.render`), and the strategies' tests
have a peer to check the traffic against.
"""

from __future__ import annotations

import contextlib
import functools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import RemoteProtocolError
from amqpfuzz.spec.amqp10.codec import Codec, Composite, Frame, UInt

__all__ = ["SERIAL", "LinkState", "Nominal", "View", "frames_of", "serial"]

SERIAL = 1 << 32
_SIZE = struct.Struct(">I")


def serial(value: int) -> int:
    """A counter's value modulo 2**32."""
    return value % SERIAL


def frames_of(codec: Codec, data: bytes) -> list[Frame]:
    """The whole frames in ``data`` (one step's bytes), decoded; what does not decode is left
    out (a malformed case's frames, after traffic). The same step is read again and again as
    a case goes: its frames are kept a while."""
    return list(_frames(codec, data))


@functools.lru_cache(maxsize=512)
def _frames(codec: Codec, data: bytes) -> tuple[Frame, ...]:
    found = []
    at = 0
    while at + 8 <= len(data):
        size = _SIZE.unpack_from(data, at)[0]
        if size < 8 or at + size > len(data):
            break
        with contextlib.suppress(RemoteProtocolError):  # (a malformed case's)
            found.append(codec.decode_frame(data[at : at + size], check=False))
        at += size
    return tuple(found)


@dataclass
class LinkState:
    """One link of the session, by its name: how we attached it, how the peer answered, and
    the deliveries each way."""

    name: str
    receiver: bool  # our role
    handle: int | None = None  # ours
    address: str | None = None  # the node (our target as sender, our source as receiver)
    peer: int | None = None  # the peer's handle, from its attach
    # the attaches and detaches we sent, the peer's attaches (its nth answers our nth: a link
    # detached and attached again is answered in order), and which of them the peer detached
    attaches: int = 0
    detaches: int = 0
    peer_attaches: int = 0
    peer_gone: set[int] = field(default_factory=set)
    failed: bool = False  # the peer detached it with an error
    # as sender: our delivery-count (and its first value), the credit limit (delivery-count
    # plus link-credit)
    initial: int = 0
    count: int = 0
    limit: int | None = None
    unsettled: list[int] = field(default_factory=list)  # our delivery ids the peer has not
    # as receiver: the sender's delivery-count as last known, the limit we granted, the
    # complete deliveries (their ids and whether they came settled) and one in progress
    peer_count: int | None = None
    granted: int | None = None
    deliveries: list[tuple[int, bool]] = field(default_factory=list)
    partial: bool = False
    snd_settle_mode: int | None = None  # as the peer's attach says
    rcv_settle_mode: int | None = None

    @property
    def answered(self) -> bool:
        """The peer's attach answered our last."""
        return self.attaches > 0 and self.peer_attaches >= self.attaches

    @property
    def detached(self) -> bool:
        """We detached it since we last attached it."""
        return self.detaches >= self.attaches

    @property
    def gone(self) -> bool:
        """The peer detached what answered our last attach (its answer to our closing detach,
        or its own detach)."""
        return self.attaches in self.peer_gone

    @property
    def credit(self) -> int:
        """As sender: the deliveries the credit allows now (0 before the peer granted any)."""
        if self.limit is None:
            return 0
        left = serial(self.limit - self.count)
        return left if left < SERIAL // 2 else 0

    @property
    def outstanding(self) -> int:
        """As receiver: the deliveries the credit we granted still allows."""
        if self.granted is None or self.peer_count is None:
            return 0
        left = serial(self.granted - self.peer_count)
        return left if left < SERIAL // 2 else 0


class View:
    """The session as read from what we ``sent`` (each step's bytes) and what the peer sent
    (``received``: its frames on the session, its begin first where the driver has it)."""

    def __init__(self, codec: Codec, sent: Iterable[bytes], received: Iterable[Any]) -> None:
        self.codec = codec
        self.links: dict[str, LinkState] = {}
        self._ours: dict[int, str] = {}  # our handle -> link name
        self._peers: dict[int, tuple[str, int]] = {}  # the peer's handle -> (link, its attach)
        self.transfers_out = 0  # transfer frames we sent (our next-outgoing-id: begun at 0)
        self.deliveries_out = 0  # deliveries we sent (our next delivery-id: from 0)
        self.peer_next: int | None = None  # the peer's begin's next-outgoing-id
        self.transfers_in = 0  # transfer frames the peer sent
        self.settled_by_us: set[int] = set()  # the peer's delivery ids we settled
        self.accepted: set[int] = set()  # our delivery ids the peer settled accepted
        self.settled_by_peer: set[int] = set()
        self.decided: set[int] = set()  # our delivery ids the peer gave an outcome, settled or not
        self.ended = False  # the peer ended the session (or closed the connection)
        self.window: int | None = None  # the incoming-window we last gave
        self.window_at = 0  # transfers_in when we gave it
        self._targets: dict[int, str] = {}  # our delivery id -> the address it went to
        self.nodes: dict[str, int] = {}  # address -> messages known to be there
        # addresses a receiving link of ours was detached from: what was on its way to it
        # may stay with the peer (acquired), so nothing there is known any more
        self.uncertain: set[str] = set()
        self._partial_out: set[int] = set()  # our handles with a delivery in progress
        for data in sent:
            for frame in frames_of(codec, data):
                self._ours_frame(frame)
        for frame in received:
            self._peer_frame(frame)

    # -- lookups -----------------------------------------------------------------------------

    def link(self, name: str) -> LinkState | None:
        return self.links.get(name)

    @property
    def next_incoming(self) -> int | None:
        """Our next-incoming-id: the peer's first transfer-id plus the transfers since (None
        before its begin is known)."""
        if self.peer_next is None:
            return None
        return serial(self.peer_next + self.transfers_in)

    @property
    def window_left(self) -> int:
        """Transfers the incoming window we gave still allows (2048 when we gave none: the
        runner's begin)."""
        window = 2048 if self.window is None else self.window
        return max(0, window - (self.transfers_in - self.window_at))

    def known(self, address: str | None) -> int:
        """Messages known to be at ``address``: ours the peer accepted, less those it sent
        (none once a receiver of ours was detached from it)."""
        if address in self.uncertain:
            return 0
        return max(0, self.nodes.get(address or "", 0))

    # -- our frames --------------------------------------------------------------------------

    def _ours_frame(self, frame: Frame) -> None:
        body, name = frame.body, frame.name
        if body is None:
            return
        if name == "attach":
            self._attached(body)
        elif name == "detach":
            link = self._by_ours(body["handle"])
            if link is not None:
                link.detaches += 1
                self._ours.pop(int(body["handle"]), None)
                if link.receiver and link.address is not None:
                    self.uncertain.add(link.address)
        elif name == "transfer":
            self._sent_transfer(body)
        elif name == "flow":
            if body["incoming-window"] is not None:
                self.window, self.window_at = int(body["incoming-window"]), self.transfers_in
            link = self._by_ours(body["handle"])
            if link is not None and link.receiver and body["link-credit"] is not None:
                count = body["delivery-count"]
                base = int(count) if count is not None else (link.peer_count or 0)
                link.granted = serial(base + int(body["link-credit"]))
        elif name == "disposition" and body["settled"]:
            last = body["last"] if body["last"] is not None else body["first"]
            ids = _ids(int(body["first"]), int(last))
            if body["role"]:  # the peer's deliveries, settled
                self.settled_by_us.update(ids)
            else:  # ours, settled first: the peer's settlement need not come
                for link in self.links.values():
                    link.unsettled = [d for d in link.unsettled if d not in ids]

    def _attached(self, body: Composite) -> None:
        name, receiver = str(body["name"]), bool(body["role"])
        terminus = body["source"] if receiver else body["target"]
        address = terminus["address"] if isinstance(terminus, Composite) else None
        # attached again: the same link (its deliveries are still live, 2.6.12), counted anew
        link = self.links.setdefault(name, LinkState(name, receiver))
        link.receiver, link.handle = receiver, int(body["handle"])
        link.address = str(address) if address else None
        link.attaches += 1
        link.limit = link.granted = None
        if not receiver:
            initial = body["initial-delivery-count"]
            link.initial = link.count = int(initial) if initial is not None else 0
        self._ours[int(body["handle"])] = name

    def _sent_transfer(self, body: Composite) -> None:
        self.transfers_out += 1
        handle = int(body["handle"]) if body["handle"] is not None else -1
        link = self._by_ours(handle)
        if handle not in self._partial_out:  # the first transfer of a delivery
            self.deliveries_out += 1
            delivery = body["delivery-id"]
            if link is not None and delivery is not None:
                link.count = serial(link.count + 1)
                if link.address is not None:
                    self._targets[int(delivery)] = link.address
                if not body["settled"]:
                    link.unsettled.append(int(delivery))
        if body["more"] and not body["aborted"]:
            self._partial_out.add(handle)
        else:
            self._partial_out.discard(handle)

    def _by_ours(self, handle: Any) -> LinkState | None:
        return None if handle is None else self.links.get(self._ours.get(int(handle), ""))

    # -- the peer's frames -------------------------------------------------------------------

    def _peer_frame(self, frame: Any) -> None:
        body, name = getattr(frame, "body", None), getattr(frame, "name", None)
        if body is None:
            return
        if name == "begin":
            self.peer_next = int(body["next-outgoing-id"])
        elif name == "end" or name == "close":
            self.ended = True
        elif name == "attach":
            link = self.links.get(str(body["name"]))
            if link is not None:
                link.peer, link.partial = int(body["handle"]), False
                link.peer_attaches += 1
                self._peers[int(body["handle"])] = (link.name, link.peer_attaches)
                link.snd_settle_mode = _int(body["snd-settle-mode"])
                link.rcv_settle_mode = _int(body["rcv-settle-mode"])
                initial = body["initial-delivery-count"]
                if link.receiver:
                    link.peer_count = int(initial) if initial is not None else 0
        elif name == "detach":
            link = self._by_peer(body["handle"])
            if link is not None:
                link.peer_gone.add(self._peers.pop(int(body["handle"]))[1])
                link.failed = link.failed or body["error"] is not None
        elif name == "flow":
            self._peer_flow(body)
        elif name == "transfer":
            self._peer_transfer(body)
        elif name == "disposition" and not body["role"] and body["settled"]:
            last = body["last"] if body["last"] is not None else body["first"]
            self.settled_by_us.update(_ids(int(body["first"]), int(last)))  # the sender let go
        elif name == "disposition" and body["role"]:
            last = body["last"] if body["last"] is not None else body["first"]
            ids = _ids(int(body["first"]), int(last))
            state = body["state"]
            if isinstance(state, Composite) and state.name != "received":
                self.decided.update(ids)
            if not body["settled"]:
                return
            self.settled_by_peer.update(ids)
            if isinstance(state, Composite) and state.name == "accepted":
                for delivery in ids:
                    if delivery not in self.accepted and delivery in self._targets:
                        address = self._targets[delivery]
                        self.nodes[address] = self.nodes.get(address, 0) + 1
                self.accepted.update(ids)
            for link in self.links.values():
                link.unsettled = [d for d in link.unsettled if d not in ids]

    def _peer_flow(self, body: Composite) -> None:
        link = self._by_peer(body["handle"])
        if link is None or self._peers[int(body["handle"])][1] != link.attaches:  # (earlier)
            return
        count = body["delivery-count"]
        if not link.receiver and body["link-credit"] is not None:
            # the sender's credit limit: the receiver's view of the delivery-count (the one
            # our attach gave, while it has none: transport 2.6.7) plus the credit
            base = int(count) if count is not None else link.initial
            link.limit = serial(base + int(body["link-credit"]))
        elif link.receiver and count is not None:
            link.peer_count = int(count)  # a drained sender advanced it

    def _peer_transfer(self, body: Composite) -> None:
        self.transfers_in += 1
        handle = body["handle"]
        link = self._by_peer(handle)
        if link is None:
            return
        if not link.partial:
            delivery = body["delivery-id"]
            link.deliveries.append((int(delivery) if delivery is not None else -1, False))
            link.peer_count = serial((link.peer_count or 0) + 1)
            if link.address is not None:
                self.nodes[link.address] = self.nodes.get(link.address, 0) - 1
        delivery_id, settled = link.deliveries[-1]
        link.deliveries[-1] = (delivery_id, settled or bool(body["settled"]))
        link.partial = bool(body["more"]) and not body["aborted"]

    def _by_peer(self, handle: Any) -> LinkState | None:
        if handle is None or int(handle) not in self._peers:
            return None
        return self.links.get(self._peers[int(handle)][0])

    # -- what is due -------------------------------------------------------------------------

    def unsettled_in(self, name: str) -> list[int]:
        """The peer's complete deliveries on link ``name`` that came unsettled and that we
        have not settled, in order."""
        link = self.links.get(name)
        if link is None:
            return []
        complete = link.deliveries[:-1] if link.partial else link.deliveries
        return [d for d, settled in complete if not settled and d not in self.settled_by_us]

    def complete(self, name: str) -> int:
        link = self.links.get(name)
        if link is None:
            return 0
        return len(link.deliveries) - (1 if link.partial else 0)


def _ids(first: int, last: int) -> list[int]:
    """The delivery ids from ``first`` to ``last`` (serial, a few thousand at most)."""
    span = min(serial(last - first), 4096)
    return [serial(first + i) for i in range(span + 1)]


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


class Nominal:
    """The peer a case is planned against: it begins the session, answers each attach with its
    own and each detach with its own, grants a sending link ``credit``, settles each unsettled
    transfer accepted, and sends a receiving link the messages of its node as our credit and
    incoming window allow (settled if the link's snd-settle-mode is settled); a node is the
    address itself. Planned, it numbers as we do (its handles ours, its transfers and
    deliveries from 0); the strategies' tests make it number otherwise (``offset`` added to
    each handle of ours, transfer-ids from ``began``, delivery-ids from ``first``, its
    senders' delivery-count from ``initial``, all modulo 2**32) and grant little credit."""

    def __init__(
        self,
        codec: Codec,
        credit: int = 100,
        offset: int = 0,
        began: int = 0,
        first: int = 0,
        initial: int = 0,
    ) -> None:
        self.codec = codec
        self.credit, self.offset, self.began, self.initial = credit, offset, began, initial
        self.received: list[Frame] = [
            Frame(
                codec.composite(
                    "begin",
                    remote_channel=0,
                    next_outgoing_id=UInt(began),
                    incoming_window=UInt(2048),
                    outgoing_window=UInt(2048),
                )
            )
        ]
        self.nodes: dict[str, list[bytes]] = {}
        self._links: dict[int, Composite] = {}  # our handle -> our attach
        self._next_id = first
        self._partial: dict[int, tuple[Composite, bytes]] = {}  # a delivery in progress

    def answer(self, sent: Sequence[bytes]) -> list[Frame]:
        """What it has sent once it read ``sent`` (every step's bytes so far)."""
        if self._steps < len(sent):
            for data in sent[self._steps :]:
                for frame in frames_of(self.codec, data):
                    self._take(frame)
            self._steps = len(sent)
            self._deliver(sent)
        return self.received

    _steps = 0

    def _send(self, body: Composite, payload: bytes = b"") -> None:
        self.received.append(Frame(body, payload=payload))

    def _take(self, frame: Frame) -> None:
        body, codec = frame.body, self.codec
        if body is None:
            return
        handle = body["handle"]
        if frame.name == "attach":
            self._links[int(handle)] = body
            receiver = bool(body["role"])
            self._send(
                codec.composite(
                    "attach",
                    name=body["name"],
                    handle=self._theirs(handle),
                    role=not receiver,
                    snd_settle_mode=body["snd-settle-mode"],
                    rcv_settle_mode=body["rcv-settle-mode"],
                    source=body["source"],
                    target=body["target"],
                    initial_delivery_count=UInt(self.initial) if receiver else None,
                )
            )
            if not receiver:
                count = body["initial-delivery-count"] or 0
                flow = self._flow(handle=self._theirs(handle), delivery_count=count)
                self._send(flow)
        elif frame.name == "detach":
            self._links.pop(int(handle), None)
            self._send(
                codec.composite("detach", handle=self._theirs(handle), closed=body["closed"])
            )
        elif frame.name == "transfer":
            self._transfer(frame)

    def _theirs(self, handle: Any) -> UInt:
        return UInt(serial(int(handle) + self.offset))

    def _flow(self, handle: UInt, delivery_count: Any) -> Composite:
        view = View(self.codec, (), self.received)
        return self.codec.composite(
            "flow",
            next_outgoing_id=UInt(serial(self.began + view.transfers_in)),
            incoming_window=UInt(2048),
            outgoing_window=UInt(2048),
            handle=handle,
            delivery_count=UInt(int(delivery_count)),
            link_credit=UInt(self.credit),
        )

    def _transfer(self, frame: Frame) -> None:
        body = frame.body
        assert body is not None
        handle = int(body["handle"])
        first, data = self._partial.pop(handle, (body, b""))
        data += frame.payload
        if body["more"] and not body["aborted"]:
            self._partial[handle] = (first, data)
            return
        attach = self._links.get(handle)
        if attach is None or body["aborted"]:
            return
        target = attach["target"]
        address = target["address"] if isinstance(target, Composite) else None
        self.nodes.setdefault(str(address), []).append(data)
        settled = bool(first["settled"]) or bool(body["settled"])
        if not settled and first["delivery-id"] is not None:
            self._send(
                self.codec.composite(
                    "disposition",
                    role=True,
                    first=first["delivery-id"],
                    settled=True,
                    state=self.codec.composite("accepted"),
                )
            )

    def _deliver(self, sent: Sequence[bytes]) -> None:
        """Messages to each receiving link, as the credit and window allow."""
        view = View(self.codec, sent, self.received)
        window = view.window_left
        for handle, attach in list(self._links.items()):
            link = view.link(str(attach["name"]))
            if not attach["role"] or link is None:
                continue
            source = attach["source"]
            node = self.nodes.get(str(source["address"] if isinstance(source, Composite) else ""))
            settled = attach["snd-settle-mode"] is not None and int(attach["snd-settle-mode"]) == 1
            credit = link.outstanding
            while node and credit and window:
                transfer = self.codec.composite(
                    "transfer",
                    handle=self._theirs(handle),
                    delivery_id=UInt(self._next_id),
                    delivery_tag=self._next_id.to_bytes(4, "big"),
                    message_format=UInt(0),
                    settled=settled,
                )
                self._next_id = serial(self._next_id + 1)
                self._send(transfer, node.pop(0))
                credit, window = credit - 1, window - 1
