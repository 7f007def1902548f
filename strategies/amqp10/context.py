"""What a 1.0 mutation operator draws from (:class:`Context`) and how its codes are found
(:data:`CODES`: the error conditions).

An operator (:class:`~..operator.Operator`) names, in its description, the section of the 1.0
specification that requires the reaction; its codes are error conditions by their choice names
in the XML (``framing-error``, ``handle-in-use``...) and it names the scope that error closes
(``connection``, ``session``, ``link``), or ``socket`` or ``ignore``. Where the specification
says a frame is wrong but names no reaction, ``or_reply`` marks that accepting it is conformant
too (the peer must stay up); the conditions are then those a peer would fittingly use.

``level`` groups the operators: ``frame`` (the frame header), ``encoding`` (the bytes of the
body), ``semantic`` (well-formed frames that break a rule of sessions and links) and ``state``
(frames out of the connection's order).

``placement`` says where a case runs (:attr:`Case.placement`): ``open`` (on a session the fuzzer
began; the case's frames name its channel symbolically and attach their own links),
``fresh`` (a channel with no session), ``none`` (after open, the case names its channels),
``start`` (on a connection of its own right after the AMQP protocol header: the case sends
``open`` itself, or not) and ``header`` (a new connection: the case sends the protocol header).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from amqpfuzz.spec import Scope
from amqpfuzz.spec.amqp10 import Spec100
from amqpfuzz.spec.amqp10.codec import Codec, Composite, Symbol, UInt

from ..cases import ErrorCode
from ..source import Source
from .profile import Traffic
from .values import Values
from .wire import CASE_CHANNEL, Wire

__all__ = ["CODES", "Conditions", "Context", "conditions"]


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
    traffic: Traffic | None = None  # what valid traffic may use of the peer (its profile's)

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
        return src.name(self.prefix, f"{what}-")

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


class Conditions:
    """The family's codes: the error conditions of the specification by their choice names,
    each with the scope of the type that defines it (an ``amqp-error`` may close any: it is
    the connection's here). An operator names the scope its case closes."""

    def names(self, spec: Spec100) -> Mapping[str, str]:
        return conditions(spec)

    def code(self, spec: Spec100, name: str) -> ErrorCode:
        symbol, defined_by = spec.error_conditions()[name]  # KeyError: not one
        return ErrorCode(name, symbol, _SCOPES.get(defined_by, Scope.CONNECTION))


_SCOPES = {
    "connection-error": Scope.CONNECTION,
    "session-error": Scope.SESSION,
    "link-error": Scope.LINK,
}
CODES = Conditions()
