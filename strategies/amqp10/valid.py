"""Valid 1.0 cases and valid frame sequences of a whole connection.

A valid case exercises one performative a client sends on a session, in the smallest valid
exchange that has it: ``begin`` on a channel of its own then ``end``; ``attach`` (and
``detach``) on a fresh link which the case detaches again; a session ``flow`` asking for the
peer's state (``echo``). A ``transfer`` and a ``disposition`` are valid only after an answer of
the peer (its credit, its delivery): valid traffic (:mod:`.traffic`) waits for it within its
case and sends them. The reaction is the reply the endpoint lifecycle of
transport 2.4-2.6 requires: each begin, attach, detach and end of ours is answered by the
peer's own. A performative added to the XML that none of these covers is sent with values drawn
for its fields, and is required to be accepted without an error.
"""

from __future__ import annotations

from collections.abc import Callable

from amqpfuzz.spec.amqp10.codec import Composite, Header, Symbol, UInt

from ..cases import Case, Placement, Reaction
from ..operator import Built
from ..source import Source
from .context import Context

__all__ = [
    "AFTER_ANSWERS",
    "CONNECTION",
    "case_performatives",
    "connection_frames",
    "valid_builder",
]

# The connection's own performatives (transport 2.4): sent by the fuzzer, never as a case.
CONNECTION = ("open", "close")
# Valid only after the peer's answer, which a case of one performative does not wait for: a
# disposition, for a delivery the peer sent; a transfer, within the credit the peer grants
# after the attach (transport 2.6.7; sent before it, it is the beyond-credit operator's case).
# Traffic (.traffic: cases that wait for the peer), stateful programs and the 1.0 scenarios
# send them.
AFTER_ANSWERS = ("disposition", "transfer")


def case_performatives(ctx: Context) -> tuple[str, ...]:
    """The performatives valid cases are drawn from, in the XML's order."""
    return tuple(p for p in ctx.performatives if p not in (*CONNECTION, *AFTER_ANSWERS))


def _link(src: Source, ctx: Context, name: str) -> Built:
    steps = (ctx.wire(ctx.attach(src, 0)), ctx.wire(ctx.detach(0)))
    return Built(steps, name, f"{name} on a fresh link")


def _session(src: Source, ctx: Context, name: str) -> Built:
    if name == "begin":
        steps = (ctx.wire(ctx.begin()), ctx.wire(ctx.codec.composite("end")))
        return Built(steps, "begin", "a session of its own", Placement.FRESH)
    return Built((ctx.wire(ctx.codec.composite("end")),), "end", "ends the case's session")


def _flow(src: Source, ctx: Context, name: str) -> Built:
    uint = ctx.values.of("uint")
    flow = ctx.codec.composite(
        "flow",
        incoming_window=uint(src),
        next_outgoing_id=UInt(0),
        outgoing_window=uint(src),
        echo=True,
    )
    return Built((ctx.wire(flow),), "flow", "asks for the peer's session state")


_BUILDERS: dict[str, tuple[Callable[[Source, Context, str], Built], tuple[str, ...]]] = {
    "begin": (_session, ("begin", "end")),
    "end": (_session, ("end",)),
    "attach": (_link, ("attach", "detach")),
    "detach": (_link, ("attach", "detach")),
    "flow": (_flow, ()),  # echo: the peer SHOULD send its state (transport 2.7.4), not MUST
}


def _drawn(src: Source, ctx: Context, name: str) -> Built:
    body = ctx.values.of(name)(src)
    return Built((ctx.wire(body),), name, "values drawn for its fields")


def valid_builder(ctx: Context, names: tuple[str, ...]) -> Callable[[Source], Case]:
    """Reads a valid case of one of ``names`` from a source; zeros read as the first."""

    def build(src: Source) -> Case:
        name = src.pick(names)
        make, responses = _BUILDERS.get(name, (_drawn, ()))
        built = make(src, ctx, name)
        return Case(
            steps=built.steps,
            expected=Reaction.reply(responses),
            spec_ref=built.spec_ref,
            placement=built.placement,
            note=built.note,
            blob=src.data,
        )

    return build


def connection_frames(src: Source, ctx: Context, sasl: str | None) -> list[bytes]:
    """A whole valid connection, as the client sends it: the SASL layer (``PLAIN``,
    ``ANONYMOUS`` or none), open, begin, a sending and a receiving link, link flow, transfers
    (some over several frames), a disposition, then detach, end and close. Each item is a
    protocol header or one frame."""
    codec = ctx.codec
    out: list[bytes] = []
    if sasl is not None:
        out.append(Header(3).encode())
        response = b"\x00guest\x00guest" if sasl == "PLAIN" else b""
        init = codec.composite("sasl-init", mechanism=Symbol(sasl), initial_response=response)
        out.append(codec.frame(init))
    out.append(Header(0).encode())
    out.append(codec.frame(ctx.open(src)))
    out.append(codec.frame(ctx.begin(), 1))
    sender, receiver = ctx.attach(src, 0, role=False), ctx.attach(src, 1, role=True)
    out += [codec.frame(sender, 1), codec.frame(receiver, 1)]
    credit = codec.composite(
        "flow",
        next_incoming_id=UInt(0),
        incoming_window=UInt(2048),
        next_outgoing_id=UInt(0),
        outgoing_window=UInt(2048),
        handle=UInt(1),
        delivery_count=UInt(0),
        link_credit=UInt(1 + src.below(100)),
    )
    out.append(codec.frame(credit, 1))
    for delivery in range(1 + src.below(3)):
        transfer, message = ctx.transfer(src, 0, delivery)
        unsettled = Composite("transfer", {**transfer.fields, "settled": False})
        size = src.pick((ctx.max_frame_size, 512))
        out += codec.transfer_frames(1, unsettled, message, size)
    disposition = codec.composite(
        "disposition",
        role=True,
        first=UInt(0),
        settled=True,
        state=codec.composite("accepted"),
    )
    out.append(codec.frame(disposition, 1))
    out += [codec.frame(ctx.detach(0), 1), codec.frame(ctx.detach(1), 1)]
    out.append(codec.frame(codec.composite("end"), 1))
    out.append(codec.frame(codec.composite("close")))
    return out
