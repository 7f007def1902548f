"""Valid 1.0 traffic in state: a session's walk of links, credit, transfers and dispositions.

A valid case of one performative (:mod:`.valid`) attaches a link and detaches it; no transfer
goes (it needs the peer's credit first) and no disposition (it needs the peer's deliveries), so
the broker's code past attaching is never entered. Traffic is a walk on a session of its own
that waits for the peer where the specification makes it wait (the case's
:class:`~amqpfuzz.strategies.cases.Await` steps): a sending link's transfers go once the peer
granted credit, and never beyond it (transport 2.6.7); a receiving link is given credit,
perhaps drained, and its deliveries are awaited where messages are known to be at its node (the
peer accepted them); dispositions settle the deliveries the peer sent, and only those, with
each outcome of the messaging part; links are attached with each settlement mode, detached
and attached again by name, transfers are split over frames, and the session's windows are
moved; whole connections are opened with a client's own handshake. Frames whose values depend
on the peer (the credit left, the delivery ids to settle, the session's counters) are made from
what each side sent when they go (:mod:`.steps`, :mod:`.session`); a case's bytes as planned
are those it sends to a peer that answers as most do (:class:`~.session.Nominal`).

A wait is only where the specification requires the answer: a closing detach is answered
(transport 2.6.6), a detach that does not close need not be, and a link detached so is attached
again at once; the peer's answer to a drain is not awaited (on a node with nothing to send, two
peers here never give it: their profiles' ``transport:links#19``), so a drain asks for no more
than the messages known to be there.

Everything comes from the model: the performatives and their fields, the settle modes' and
terminus options' choices, the outcomes (what provides ``outcome`` in the messaging part), the
messages' sections. What a peer takes beyond (or short of) the specification comes with its
profile, as data (:class:`~.profile.Traffic`): the values a field is drawn from (``attach.rcv-settle-
mode = ["first"]`` for a peer that does not settle second), the address forms it reads.

A walk's reaction is the reply: each of its attaches answered by an attach (and each closing
detach by a detach). :func:`in_state` puts a malformed case of the frame and encoding levels after a
shorter walk, whose links keep handles from 16 (the operators' own links use the first few),
so that errors strike a session with links attached, credit outstanding and deliveries
unsettled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from amqpfuzz.spec.amqp10.codec import (
    AMQP,
    MIN_MAX_FRAME_SIZE,
    SASL,
    Codec,
    Composite,
    Header,
    Symbol,
    UInt,
    UShort,
)

from ..arms import Arm
from ..cases import Case, Placement, Reaction, Step
from ..source import Source
from .context import Context
from .model import Model, Planned
from .profile import Traffic
from .session import Nominal
from .steps import (
    WINDOW,
    Awaiting,
    Credit,
    Made,
    SenderFlow,
    SenderSettle,
    Settle,
    Transfers,
    Window,
)

__all__ = ["Walk", "in_state", "traffic_arms"]

STEPS = (3, 10)  # actions in a walk (each a few frames)
PREFIX = (1, 4)  # before a malformed case
FRAME_SIZE = 131072  # the largest frame a connection of the runner's reads (its open's)


class Walk(Model):
    """A walk being drawn, action by action: what each one adds to its steps."""

    # -- actions ------------------------------------------------------------------------------

    def send(self, split: bool = False, link: Planned | None = None, count: int = 0) -> Planned:
        """Transfers on a sending link (within its credit); what went unsettled now and then
        awaited settled (or given its outcome, and then settled by us, on a link whose
        receiver settles second), or settled by us first."""
        link = link or self.sender()
        deliveries = tuple(self.delivery(split) for _ in range(count or 1 + self.src.below(4)))
        self.steps.append(Transfers(link.name, link.snd, deliveries, codec=self.codec))
        link.sent += len(deliveries)
        unsettled = link.snd == 0 or (link.snd == 2 and any(not d.settled for d in deliveries))
        self.did.append(f"{len(deliveries)} transfers")
        sender = bool(self.traffic.allowed("disposition.role", ["sender"]))
        if unsettled and link.rcv == 1 and sender:
            self.await_("decided", link)
            self.steps.append(SenderSettle(link.name, None, codec=self.codec))
            self.did.append("settle as sender")
        elif unsettled and sender and self.rare(6):  # the sender settles first (2.6.12)
            state = self.state("accepted") if self.rare(2) else None
            self.steps.append(SenderSettle(link.name, state, codec=self.codec))
            self.did.append("settle first as sender")
        elif unsettled and (link.counted or self.rare(2)) and link.rcv == 0:
            self.await_("settled", link)
            if link.counted:
                self.nodes[link.address] = self.nodes.get(link.address, 0) + len(deliveries)
        return link

    def fill(self, huge: bool = False) -> str:
        """A counted node with messages known there: if there is none (or ``huge`` messages
        are wanted, larger than the peer's frames), messages sent unsettled (the receiver
        settling first) on a link of their own, awaited settled."""
        known = [n for n, count in self.nodes.items() if count > 0]
        if known and not huge:
            return str(self.src.pick(tuple(known)))
        link = self.attach(False, modes=(0, 0))
        self.await_("credit", link)
        count = 1 + self.src.below(2 if huge else 4)
        deliveries = tuple(replace(self.delivery(huge, huge), settled=False) for _ in range(count))
        self.steps.append(Transfers(link.name, 0, deliveries, codec=self.codec))
        self.await_("settled", link)
        link.sent += count
        self.nodes[link.address] = self.nodes.get(link.address, 0) + count
        self.did.append(f"{count} transfers to fill {link.address}")
        return link.address

    def receiver(self, huge: bool = False) -> Planned:
        """A receiving link on a node with messages (filled first; with messages larger than
        the peer's frames, ``huge``)."""
        found = [k for k in self.open(True, counted=True) if self.nodes.get(k.address, 0) > 0]
        if found and not huge:
            return self.one(found)
        address = self.fill(huge)
        return self.attach(True, (address, True), options=self.rare(4))

    def receive(
        self, drain: bool = False, window: int | None = None, huge: bool = False
    ) -> Planned:
        """Credit to a receiving link and its deliveries awaited (as many as the credit, the
        node's known messages and the window allow)."""
        link = self.receiver(huge)
        known = self.nodes.get(link.address, 0)
        credit = self.src.pick((1, 2, 5, 100)) if not drain else max(1, known)
        if drain and self.traffic.allowed("flow.drain", ["true"]):
            credit = min(credit, known) or 1  # (within what is there: see the module's doc)
        else:
            drain = False
        echo = self.rare(6)
        self.steps.append(Credit(link.name, credit, drain, echo, window, codec=self.codec))
        link.credited = True
        self.await_("delivered", link)
        self.nodes[link.address] = max(0, known - credit)
        self.did.append(f"credit {credit}{' drain' if drain else ''}")
        return link

    def settle(self) -> None:
        """Dispositions of what came on a receiving link, with an outcome drawn (the profile's
        choices), settled or not."""
        done = [k for k in self.open(True) if k.credited]
        link = self.one(done) if done else self.receive()
        names = [o.name for o in self.outcomes()]
        allowed = self.traffic.allowed("disposition.state", [*names, "received"])
        name = self.src.pick(allowed) if allowed else None
        settled = name != "received" and not self.rare(4)
        how = self.src.pick(("runs", "each", "first"))
        self.steps.append(
            Settle(link.name, how, self.state(name), settled, self.rare(4), link.rcv == 1,
                   codec=self.codec)
        )  # fmt: skip
        if not settled and name != "received" and self.rare(2):  # and settled afterwards
            self.steps.append(Settle(link.name, how, self.state(name), True, codec=self.codec))
        self.did.append(f"settle {how} {name}")

    def state(self, name: str | None) -> Composite | None:
        """A delivery state of the messaging part by name, its fields drawn."""
        if name is None:
            return None
        if name == "rejected" and self.rare(2):
            error = self.codec.composite(
                "error", condition=Symbol("amqp:internal-error"), description="amqpfuzz"
            )
            return self.codec.composite("rejected", error=error)
        if name == "modified":
            return self.codec.composite(
                "modified",
                delivery_failed=self.rare(2) or None,
                undeliverable_here=self.rare(2) or None,
                message_annotations={Symbol("x-opt-amqpfuzz"): "m"} if self.rare(3) else None,
            )
        if name == "received":
            return self.codec.composite(
                "received", section_number=UInt(self.src.below(3)),
                section_offset=self.ctx.values.of("ulong")(self.src) % 64,
            )  # fmt: skip
        return self.codec.composite(name)

    def detach(self, reattach: bool = False) -> None:
        """A link detached, closed (the peer must answer with its own detach: transport 2.6.6)
        or not (it need not answer); now and then the peer's answer to a closing detach
        awaited; ``reattach``: attached again by name with the same handle, after the answer
        to a closing detach, or at once after one that did not close it (2.6.4)."""
        found = [k for k in self.links.values() if k.attached]
        link = self.one(found) if found else self.attach(self.src.byte() & 1 == 1)
        closed = not self.rare(3)
        detach = self.codec.composite("detach", handle=UInt(link.handle), closed=closed or None)
        self.steps.append(self.ctx.wire(detach))
        link.attached = False
        self.closed = self.closed or closed
        if link.receiver:  # what was on its way to it may stay acquired: nothing known there
            self.nodes[link.address] = 0
        self.did.append("detach" if closed else "detach (not closed)")
        if closed and (reattach or self.rare(3)):
            self.await_("detached", link)
        if not reattach:
            return
        assert link.attach is not None
        initial = None if link.receiver else UInt(link.sent)
        again = Composite("attach", {**link.attach.fields, "initial-delivery-count": initial})
        self.steps.append(self.ctx.wire(again))
        link.attached, link.credited = True, False
        self.did.append("attach again")
        if not link.receiver:
            self.await_("credit", link)
            if self.rare(2):
                self.send(link=link)
        elif self.nodes.get(link.address, 0) > 0 and self.rare(2):
            self.receive()

    def window(self) -> None:
        """The session's windows moved: our incoming window small while credit is given (the
        peer sends as far as it allows), then opened again; or a flow of the session asking
        for the peer's state."""
        if self.rare(2):
            incoming = self.src.pick((1, 2, 3))
            self.steps.append(Window(incoming, WINDOW, self.rare(3), codec=self.codec))
            link = self.receive(window=incoming, huge=self.rare(2))  # (a delivery over frames)
            self.steps.append(Window(WINDOW, WINDOW, False, codec=self.codec))
            self.did.append(f"window {incoming}, then {WINDOW}")
            if self.rare(2):
                self.await_("delivered", link)
            return
        outgoing = self.src.pick((WINDOW, 1, 0xFFFFFFFF))
        self.steps.append(Window(WINDOW, outgoing, True, codec=self.codec))
        self.did.append("session flow, echo")

    def echo(self) -> None:
        """A link's flow state: a sender's (what it has available), or a receiver's credit
        given anew (asking for the peer's state)."""
        if self.src.byte() & 1:
            link = self.sender()
            available = self.src.pick((0, 1, 10))
            self.steps.append(SenderFlow(link.name, available, self.rare(2), codec=self.codec))
            self.did.append("sender flow")
        else:
            done = [k for k in self.open(True) if k.credited]
            link = self.one(done) if done else self.receive()
            self.steps.append(Credit(link.name, self.src.pick((0, 1, 10)), False, True,
                                     codec=self.codec))  # fmt: skip
            self.did.append("receiver flow, echo")

    def links_(self) -> None:
        """A link of either role, any address form the profile lists, terminus options."""
        receiver = bool(self.src.byte() & 1)
        counted = not self.rare(2)
        link = self.attach(receiver, self.address(counted), options=True)
        if receiver and self.rare(2):
            self.steps.append(Credit(link.name, self.src.pick((1, 10)), codec=self.codec))
            link.credited = True
        elif not receiver:
            self.await_("credit", link)
            if self.rare(2):
                self.send(link=link)

    def end(self) -> None:
        """A walk's last steps: now and then its links closed (the session's end, behind the
        case, detaches the others)."""
        for link in list(self.links.values()):
            if link.attached and self.rare(3):
                detach = self.codec.composite("detach", handle=UInt(link.handle), closed=True)
                self.steps.append(self.ctx.wire(detach))
                link.attached = False
                self.closed = True


_ACTIONS: dict[str, Callable[[Walk], Any]] = {
    "send": lambda w: w.send(),
    "split": lambda w: w.send(split=True),
    "receive": lambda w: w.receive(),
    "drain": lambda w: w.receive(drain=True),
    "settle": Walk.settle,
    "detach": lambda w: w.detach(),
    "reattach": lambda w: w.detach(reattach=True),
    "window": Walk.window,
    "echo": Walk.echo,
    "links": Walk.links_,
}

# Each shape: its focus (the actions most of its steps are), the performative it is about.
SHAPES: dict[str, tuple[tuple[str, ...], str]] = {
    "senders": (("send", "echo"), "transfer"),
    "split transfers": (("split",), "transfer"),
    "receivers": (("receive", "drain", "echo"), "flow"),
    "dispositions": (("settle", "receive"), "disposition"),
    "reattach": (("reattach", "detach"), "detach"),
    "windows": (("window",), "flow"),
    "links": (("links", "detach"), "attach"),
}


def walk(
    ctx: Context,
    src: Source,
    traffic: Traffic,
    focus: Sequence[str],
    steps: tuple[int, int],
    prefix: bool = False,
) -> Walk:
    """A walk of ``steps`` actions (the least to the most), most of them of ``focus``."""
    found = Walk(ctx, src, traffic, prefix)
    every = tuple(_ACTIONS)
    for _ in range(steps[0] + src.below(steps[1] - steps[0] + 1)):
        action = src.pick(tuple(focus)) if src.below(4) else src.pick(every)
        if prefix and action in ("detach", "reattach", "window"):
            action = "send"  # (a prefix leaves its links attached: the state the case meets)
        _ACTIONS[action](found)
    if not prefix:
        found.end()
    return found


def plan(codec: Codec, steps: Sequence[Step]) -> tuple[Step, ...]:
    """``steps`` with what each made step sends against the nominal peer (its render): as
    the runner sends them, the peer's answers read at each await, the steps between two awaits
    made from what had come by the first."""
    peer = Nominal(codec)
    sent: list[bytes] = []
    out: list[Step] = []
    received = peer.answer(sent)
    for step in steps:
        if isinstance(step, Awaiting):
            received = list(peer.answer(sent))
        elif isinstance(step, Made):
            step = replace(step, planned=step.answer(0, sent, received))
        if not isinstance(step, Awaiting):
            sent.append(step.render(0))
        out.append(step)
    return tuple(out)


def _responses(found: Walk) -> tuple[str, ...]:
    """What the walk is due: an attach (each of its attaches is answered), a detach (each
    closing detach is)."""
    return ("attach", "detach") if found.closed else ("attach",) if found.links else ()


def connection(ctx: Context, traffic: Traffic, src: Source) -> Case:
    """A whole connection of its own, as a client may open one (``header``: the case sends
    the protocol headers): the SASL layer with a mechanism that needs no secret
    (``ANONYMOUS``, or none at all: the profile's ``connection.sasl``), an ``open`` with its
    optional fields drawn (a hostname of the profile's ``open.hostname``, a max-frame-size, a
    channel-max, an idle-time-out, locales, capabilities, properties), a session with a short
    walk on it, perhaps its ``end``. The connection stays open: the runner's session behind
    it (on channel 0) is the proof that the peer took it all (a ``close`` of ours would have
    the probe follow it, and a peer that closes the socket with bytes unread resets it)."""
    found = Walk(ctx, src, traffic)
    codec = ctx.codec
    steps: list[Step] = []
    sasl = src.pick(traffic.allowed("connection.sasl", ["anonymous", "none"]) or ("none",))
    hostnames = (None, *traffic.fields.get("open.hostname", ()))
    hostname = src.pick(hostnames)
    if sasl != "none":
        init = codec.composite("sasl-init", mechanism=Symbol(sasl.upper()), hostname=hostname)
        steps += [
            ctx.raw(Header(SASL).encode(), "SASL protocol header", 0),
            ctx.wire(init, channel=0),
        ]
    fields: dict[str, Any] = {"container_id": found.name("container"), "hostname": hostname}
    if found.rare(2):
        fields["max_frame_size"] = UInt(src.pick((MIN_MAX_FRAME_SIZE, 4096, 65536, FRAME_SIZE)))
    if found.rare(2):
        fields["channel_max"] = UShort(src.pick((1, 7, 0xFFFF)))
    if found.rare(2):
        fields["idle_time_out"] = UInt(src.pick((1000, 30000, 600000)))
    if found.rare(3):
        fields["outgoing_locales"] = fields["incoming_locales"] = Symbol("en-US")
    if found.rare(3):
        fields["desired_capabilities"] = Symbol(src.pick(("ANONYMOUS-RELAY", "DELAYED_DELIVERY")))
    if found.rare(3):
        fields["properties"] = {Symbol("product"): "amqpfuzz", Symbol("version"): "0"}
    begin = ctx.begin()
    if found.rare(2):  # (the handles the session takes: the walk's are few)
        begin = Composite("begin", {**begin.fields, "handle-max": UInt(src.pick((63, 0xFFFF)))})
    steps += [
        ctx.raw(Header(AMQP).encode(), "AMQP protocol header", 0),
        ctx.wire(codec.composite("open", **fields), channel=0),
        ctx.wire(begin),
    ]
    for _ in range(src.below(3)):
        _ACTIONS[src.pick(("send", "receive", "links", "settle"))](found)
    steps += found.steps
    if found.rare(2):  # (a peer may not answer a session begun and ended in one read)
        steps += [Awaiting("begun", "", codec), ctx.wire(codec.composite("end"))]
    return Case(
        steps=plan(codec, steps),
        expected=Reaction.reply(_responses(found)),
        spec_ref="open",
        placement=Placement.HEADER,
        note=f"connection: SASL {sasl}, {', '.join(sorted(fields))}; {', '.join(found.did)}",
        blob=src.data,
    )


def traffic_arms(ctx: Context, traffic: Traffic) -> tuple[Arm, ...]:
    """One arm per shape of traffic (``traffic <shape>``), and whole connections
    (``traffic connection``)."""

    def arm(shape: str, focus: tuple[str, ...], spec_ref: str) -> Arm:
        def build(src: Source) -> Case:
            found = walk(ctx, src, traffic, focus, STEPS)
            return Case(
                steps=plan(ctx.codec, found.steps),
                expected=Reaction.reply(_responses(found)),
                spec_ref=spec_ref,
                placement=Placement.OPEN,
                note=f"{shape}: {', '.join(found.did)}",
                blob=src.data,
            )

        return Arm(f"traffic {shape}", build)

    shapes = tuple(arm(shape, focus, ref) for shape, (focus, ref) in SHAPES.items())
    return (*shapes, Arm("traffic connection", lambda src: connection(ctx, traffic, src)))


def in_state(ctx: Context, traffic: Traffic, src: Source, case: Case) -> Case:
    """``case`` after a short walk on its session: an error in a session with links attached,
    credit outstanding and deliveries unsettled. Only a case of the frame or encoding level on
    a session of its own: a semantic case breaks a rule of the session's state itself (a
    delivery that was never sent, a handle in use), which the walk would change."""
    if case.placement != Placement.OPEN or case.level not in ("frame", "encoding"):
        return case
    found = walk(ctx, src, traffic, tuple(_ACTIONS), PREFIX, prefix=True)
    if not found.steps:
        return case
    # the case goes once the peer has taken the walk (so that its error meets that state,
    # and the peer's reaction to it comes as soon as it would without the walk)
    found.steps.append(Awaiting("answered", "", ctx.codec))
    return replace(
        case,
        steps=plan(ctx.codec, found.steps) + case.steps,
        note=f"{case.note} (after {', '.join(found.did)})" if case.note else f"after {', '.join(found.did)}",
    )  # fmt: skip
