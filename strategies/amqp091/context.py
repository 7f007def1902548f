"""What a 0-8/0-9/0-9-1 mutation operator draws from (:class:`Context`) and how its codes are
found (:data:`CODES`: the reply-code constants of the loaded spec).

An operator (:class:`~..operator.Operator`) names the reply-code constants the specification
requires in answer; the loaded spec gives their value and whether the error is hard, closing
the connection, or soft, closing the channel. ``level`` says who can tell the case is malformed
without a broker: ``frame`` operators are rejected by our own decoder with the operator's first
code as the error category, ``sequence`` operators are flagged by
:class:`~amqpfuzz.spec.amqp091.state.SequenceChecker`, ``rule`` operators break a rule of the
spec.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from amqpfuzz.spec.amqp091 import Constant, Field, Method, Spec
from amqpfuzz.spec.amqp091.codec import Codec, ContentHeader, Frame, MethodFrame, codec_for
from amqpfuzz.spec.protocols import extension_of

from .frames import ENTITY_DOMAINS, ZERO, argument_builder
from .profile import Traffic
from .source import Source, field_generator
from .wire import CASE_CHANNEL, WireFrame, wire_frame

__all__ = ["CODES", "Constants", "Context"]


@dataclass(frozen=True)
class Context:
    """What operators draw from: the spec, its codec, the negotiated frame-max, the prefix."""

    spec: Spec
    codec: Codec
    frame_max: int
    prefix: str | None = None
    # what the broker accepts beyond the specification, for valid traffic (its profile's)
    traffic: Traffic | None = field(default=None, compare=False, hash=False)

    @cached_property
    def client_methods(self) -> tuple[Method, ...]:
        """Every method a client may send, in the XML's order."""
        return tuple(m for m in self.spec.methods if m.sent_by("client"))

    @cached_property
    def server_methods(self) -> tuple[Method, ...]:
        """Every method only a server sends (its chassis names no client), in the XML's
        order; where the broker speaks the extension, its own as well."""
        wider = self.extended.spec.methods if self.extended is not None else ()
        known = {m.full_name for m in self.spec.methods}
        return tuple(
            m
            for m in (*self.spec.methods, *(m for m in wider if m.full_name not in known))
            if m.sent_by("server") and not m.sent_by("client")
        )

    @cached_property
    def traffic_methods(self) -> tuple[Method, ...]:
        """What valid traffic sends: the channel methods, and those of the channel class that
        neither open nor close it (``flow``); where the broker speaks the protocol's
        extension (its profile says so), the extension's own as well; but those its profile
        says it does not implement."""
        keeps = tuple(
            m
            for m in self.client_methods
            if m.class_name == "channel" and m.name not in ("open", "close") and m.responses
        )
        every = self.channel_methods + keeps + self.extension_methods
        return tuple(m for m in every if self.traffic is None or self.traffic.implements(m))

    @cached_property
    def extended(self) -> Codec | None:
        """The codec of the protocol's extension, when valid traffic speaks it."""
        if self.traffic is None or not self.traffic.extension:
            return None
        wider = extension_of(self.spec.protocol)
        return None if wider == self.spec.protocol else codec_for(wider, self.codec.dialect)

    @cached_property
    def extension_methods(self) -> tuple[Method, ...]:
        """The channel methods a client may send that only the extension has."""
        if self.extended is None:
            return ()
        known = {m.full_name for m in self.spec.methods}
        return tuple(
            m
            for m in self.extended.spec.methods
            if m.sent_by("client")
            and m.full_name not in known
            and m.class_name not in ("connection", "channel")
        )

    @cached_property
    def channel_methods(self) -> tuple[Method, ...]:
        """Client methods of the classes that work on a channel: all but connection and
        channel (0-9's access class has the connection's handler, but "access tickets are a
        per-channel resource": its request goes on a channel)."""
        return tuple(
            m for m in self.client_methods if m.class_name not in ("connection", "channel")
        )

    @cached_property
    def connection_methods(self) -> tuple[Method, ...]:
        """Client methods of the connection class: channel 0's."""
        return tuple(m for m in self.client_methods if m.class_name == "connection")

    @cached_property
    def content_methods(self) -> tuple[Method, ...]:
        return tuple(m for m in self.client_methods if m.content)

    def frame_of(
        self, src: Source, methods: Sequence[Method], channel: int = CASE_CHANNEL
    ) -> MethodFrame:
        """A valid frame of one of ``methods``, read from ``src``."""
        method = src.pick(tuple(methods))
        build = argument_builder(method, self.codec.dialect, False, self.prefix)
        return MethodFrame(channel, method, build(src))

    @cached_property
    def neutral_methods(self) -> tuple[Method, ...]:
        """Channel methods a broker simply accepts with plain arguments, once the queues and
        exchanges they name exist (see :meth:`setup`): all but those taking a delivery tag,
        which only a delivery can make valid."""
        return tuple(
            m for m in self.channel_methods if not any(f.domain == "delivery-tag" for f in m.fields)
        )

    @cached_property
    def declarers(self) -> dict[str, Method]:
        """For each entity domain, the method that creates one: the class's ``declare``."""
        found: dict[str, Method] = {}
        for method in self.client_methods:
            names = [f for f in method.fields if f.domain in ENTITY_DOMAINS and not f.reserved]
            if method.name == "declare" and names:
                found.setdefault(names[0].domain, method)
        return found

    def setup(
        self, frame: MethodFrame, missing: frozenset[str] = frozenset()
    ) -> tuple[WireFrame, ...]:
        """Declarations of the queues and exchanges ``frame`` names (but those in
        ``missing``), so that what it does next is valid: its breakage is then all that can
        go wrong."""
        steps = []
        for fld, value in zip(frame.method.fields, frame.values, strict=True):
            declarer = self.declarers.get(fld.domain)
            if declarer is None or declarer is frame.method or not value or value in missing:
                continue
            name = next(f for f in declarer.fields if f.domain == fld.domain and not f.reserved)
            values = [value if f is name else self.plain(f) for f in declarer.fields]
            steps.append(self.wire(MethodFrame(frame.channel, declarer, tuple(values))))
        return tuple(steps)

    def fresh_name(self, src: Source, what: str = "") -> str:
        """A name nobody has used: the run's prefix, ``what``, eight random characters."""
        return src.name(self.prefix, what)

    def neutral(self, src: Source, methods: Sequence[Method]) -> MethodFrame:
        """A frame of one of ``methods`` with the plainest arguments: zeros, new names, and an
        exchange type every server implements ("direct", which the exchange class's rule
        ``required-types`` requires)."""
        method = src.pick(tuple(methods))
        values = [
            self.fresh_name(src) if f.domain in ENTITY_DOMAINS and not f.reserved else self.plain(f)
            for f in method.fields
        ]
        return MethodFrame(CASE_CHANNEL, method, tuple(values))

    def plain(self, fld: Field) -> object:
        """A field's plainest value: zero, or the simplest its asserts allow (0-8's ticket
        must not be 0); an exchange type every server implements ("direct")."""
        if fld.reserved:
            return ZERO[fld.type]
        if fld.name == "type" and fld.type == "shortstr":
            return "direct"
        return field_generator(fld, self.codec.dialect)(Source(b""))

    def completion(self, frame: MethodFrame) -> tuple[WireFrame, ...]:
        """What must follow a content method for the stream to stay valid: an empty header."""
        if not frame.method.content:
            return ()
        header = ContentHeader(CASE_CHANNEL, frame.method.class_index, 0, {})
        return (self.wire(header),)

    def wire(self, frame: Frame) -> WireFrame:
        """A frame's bytes (a method only the extension has, in the extension's codec)."""
        if (
            self.extended is not None
            and isinstance(frame, MethodFrame)
            and frame.method not in self.spec.methods
        ):
            return wire_frame(self.extended, frame)
        return wire_frame(self.codec, frame)


class Constants:
    """The family's codes: the reply-code constants of the loaded specification (which give
    their values and whether an error is hard, closing the connection, or soft, closing the
    channel)."""

    def names(self, spec: Spec) -> frozenset[str]:
        return _names(spec)

    def code(self, spec: Spec, name: str) -> Constant:
        return spec.constant(name)


@functools.cache
def _names(spec: Spec) -> frozenset[str]:
    return frozenset(c.name for c in spec.constants)


CODES = Constants()
