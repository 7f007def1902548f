"""What a 1.0 mutation operator is, what it draws from, and the malformed-case builder.

An operator is a small object: a name, what it breaks and how (its description names the
section of the 1.0 specification that requires the reaction), the error conditions the
specification requires in answer (by their choice names in the XML: ``framing-error``,
``handle-in-use``...) and the scope that error closes (``connection``, ``session``, ``link``),
``socket`` (the peer answers with its own protocol header and closes the socket) or ``ignore``
where the specification says the peer ignores what was sent. Where the specification says a
frame is wrong but names no reaction, ``or_reply`` marks that accepting it is conformant too
(the peer must stay up); the conditions are then those a peer would fittingly use. Its
``build`` reads the valid frames it starts from, and how it breaks them, from a
:class:`~..source.Source`.

``level`` groups the operators: ``frame`` (the frame header), ``encoding`` (the bytes of the
body), ``semantic`` (well-formed frames that break a rule of sessions and links) and ``state``
(frames out of the connection's order).

``placement`` says where a case runs (:attr:`Case.channel`): ``open`` (on a session the fuzzer
began; the case's frames name its channel symbolically and attach their own links),
``fresh`` (a channel with no session), ``none`` (after open, the case names its channels),
``start`` (on a connection of its own right after the AMQP protocol header: the case sends
``open`` itself, or not) and ``header`` (a new connection: the case sends the protocol header).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from amqpfuzz.spec.amqp10 import Spec100
from amqpfuzz.spec.amqp10.codec import Codec, Composite, Symbol, UInt

from ..building import Built
from ..cases import Case, Reaction
from ..source import Source
from .values import Values
from .wire import CASE_CHANNEL, Wire

__all__ = [
    "SCOPES",
    "BuildFn",
    "Built",
    "Condition",
    "Context",
    "Operator",
    "conditions",
]

SCOPES = ("connection", "session", "link", "socket", "ignore")


@dataclass(frozen=True, slots=True)
class Condition:
    """An error condition of the specification (a :class:`~..cases.Code`): its choice name,
    its symbol on the wire, and the scope an error with it closes in this case."""

    name: str
    value: str
    scope: str


@functools.cache
def conditions(spec: Spec100) -> dict[str, str]:
    """Every error condition the specification defines: choice name -> symbol (a name two
    types share, ``redirect``, keeps the first: the connection's)."""
    return {name: symbol for name, (symbol, _) in spec.error_conditions().items()}


@dataclass(frozen=True)
class Context:
    """What operators draw from: the spec, its codec and value generators, the negotiated
    max-frame-size, and the prefix every name a case creates starts with."""

    spec: Spec100
    codec: Codec
    max_frame_size: int
    prefix: str | None = None

    @cached_property
    def values(self) -> Values:
        return Values(self.codec)

    @cached_property
    def performatives(self) -> tuple[str, ...]:
        """The composites that are frame bodies (open ... close), in the XML's order."""
        return tuple(
            n for n in self.codec.types.composites if self.codec.types.provides(n, ("frame",))
        )

    def wire(self, body: Composite | None, label: str = "", channel: int = CASE_CHANNEL) -> Wire:
        """A valid frame of ``body`` (None: an empty frame) on the case's channel."""
        data = self.codec.frame(body, max(channel, 0))
        return Wire(data, label or repr(body) if body is not None else "empty frame", channel)

    def raw(self, data: bytes, label: str, channel: int = CASE_CHANNEL) -> Wire:
        return Wire(data, label, channel)

    def name(self, src: Source, what: str = "link") -> str:
        """A name nobody has used: the run's prefix, ``what``, eight random characters."""
        suffix = "".join("abcdefghijklmnopqrstuvwxyz0123456789"[src.below(36)] for _ in range(8))
        return f"{self.prefix or 'amqpfuzz-'}{what}-{suffix}"

    def attach(self, src: Source, handle: int = 0, role: bool | None = None) -> Composite:
        """A valid attach of a fresh link: a sender to (or a receiver from) a node named with
        the prefix."""
        receiver = bool(src.byte() & 1) if role is None else role
        address = self.name(src, "node")
        terminus = {"address": address}
        return self.codec.composite(
            "attach",
            name=self.name(src),
            handle=UInt(handle),
            role=receiver,
            source=self.codec.composite("source", **terminus),
            target=self.codec.composite("target", **terminus),
            initial_delivery_count=None if receiver else UInt(0),
        )

    def detach(self, handle: int = 0) -> Composite:
        return self.codec.composite("detach", handle=UInt(handle), closed=True)

    def open(self, src: Source) -> Composite:
        return self.codec.composite("open", container_id=self.name(src, "container"))

    def begin(self) -> Composite:
        return self.codec.composite(
            "begin",
            next_outgoing_id=UInt(0),
            incoming_window=UInt(2048),
            outgoing_window=UInt(2048),
        )

    def transfer(self, src: Source, handle: int = 0, delivery: int = 0) -> tuple[Composite, bytes]:
        """A settled transfer of a drawn message on ``handle``."""
        message = self.codec.message(self.values.message()(src))
        transfer = self.codec.composite(
            "transfer",
            handle=UInt(handle),
            delivery_id=UInt(delivery),
            delivery_tag=bytes((delivery & 0xFF,)),
            message_format=UInt(0),
            settled=True,
        )
        return transfer, message

    def symbol(self, value: str) -> Symbol:
        return Symbol(value)


BuildFn = Callable[[Source, Context], Built]


@dataclass(frozen=True)
class Operator:
    """A named way of breaking valid 1.0 frames, and the reaction the specification requires."""

    name: str
    description: str
    breaks: str
    conditions: tuple[str, ...]
    scope: str
    level: str
    build: BuildFn = field(repr=False, compare=False)
    or_reply: bool = False  # the specification does not forbid it outright: accepting is fine

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"operator {self.name}: scope {self.scope!r} is not one of {SCOPES}")

    def applies_to(self, spec: Spec100) -> bool:
        known = conditions(spec)
        return all(c in known for c in self.conditions)

    def codes_in(self, spec: Spec100) -> tuple[Condition, ...]:
        known = conditions(spec)
        return tuple(Condition(c, known[c], self.scope) for c in self.conditions)

    def reaction(self, spec: Spec100) -> Reaction:
        if self.scope == "ignore":
            return Reaction.reply()
        if self.scope == "socket":  # the peer's own protocol header, then the socket closed
            return Reaction("socket-close", responses=("protocol header",))
        if not self.conditions:  # a close the case asked for: no condition is required
            return Reaction(f"{self.scope}-close")
        return Reaction.error(self.codes_in(spec), or_reply=self.or_reply)

    def case(self, src: Source, context: Context) -> Case:
        built = self.build(src, context)
        return built.case(self.reaction(context.spec), self.name, self.level, src)
