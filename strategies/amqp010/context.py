"""What a 0-10 mutation operator draws from (:class:`Context`) and how its codes are found
(:data:`CODES`: the XML's three error domains).

An operator (:class:`~..operator.Operator`) names, in its description, the part of the 0-10
specification whose code it expects; its codes are choice names in the XML's three error
domains, and it names the scope those codes close:
``connection`` (``connection.close`` with a ``close-code``: ``framing-error``...), ``session``
(``session.detached`` with a ``detach-code``: ``not-attached``, ``unknown-ids``...),
``execution`` (``execution.exception`` with an ``error-code``: ``command-invalid``,
``illegal-argument``, ``not-implemented``...), or ``socket`` (a protocol header the peer does not
speak: it answers with its own and closes the socket). Where the specification says what a
sender must do but names no reaction of the receiver, ``or_reply`` marks that accepting it is
conformant too (the peer must stay up).

``level`` groups them: ``frame`` (the 12-octet frame header), ``assembly`` (frames into
segments into commands), ``encoding`` (a command's bytes) and ``state`` (sessions and the
connection's order).

``placement`` says where a case runs (:attr:`Case.placement`): ``open`` (on a session the fuzzer
attached, at command-id 0; the case's frames name its channel symbolically), ``fresh`` (a
channel with no session attached), ``none`` (after ``open-ok``, the case names its channels),
``start`` (on a connection of its own right after the protocol headers and
``connection.start``) and ``header`` (a new connection: the case sends the protocol header).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from amqpfuzz.spec import Scope
from amqpfuzz.spec.amqp010.codec import Codec, Command
from amqpfuzz.spec.amqp010.codec.types import FieldPlan
from amqpfuzz.spec.amqp010.model import Spec010

from ..cases import ErrorCode
from ..source import Source
from .values import Values
from .wire import CASE_CHANNEL, Wire

__all__ = [
    "ANSWERS",
    "CODES",
    "DOMAINS",
    "Context",
    "ErrorCodes",
    "error_code",
    "error_codes",
]

# the XML's error domains, and the scope an error with one of their codes closes
DOMAINS = {
    "execution.error-code": Scope.EXECUTION,
    "session.detach-code": Scope.SESSION,
    "connection.close-code": Scope.CONNECTION,
}
# what a peer sends in answer, never a request of its own: sent by no valid case and broken by
# no operator
ANSWERS = ("execution.result", "execution.exception")
# the fields whose domain names what a case may create: they get names with the run's prefix
ENTITIES = ("queue.name", "exchange.name")


@functools.cache
def error_codes(spec: Spec010) -> dict[str, ErrorCode]:
    """Every error code of the specification by name (``normal``, in two domains, is the
    session's: the connection's is not an error)."""
    found: dict[str, ErrorCode] = {}
    for domain, scope in DOMAINS.items():
        for name, value in spec.domain(domain).choices.items():
            found.setdefault(name, ErrorCode(name, value, scope))
    return found


def error_code(spec: Spec010, name: str) -> ErrorCode:
    """A close code, detach code or execution error code by its name in the XML; KeyError
    for a name none of them has."""
    return error_codes(spec)[name]


@dataclass(frozen=True)
class Context:
    """What operators draw from: the spec, its codec and value readers, the negotiated
    max-frame-size, and the prefix every name a case creates starts with."""

    spec: Spec010
    codec: Codec
    max_frame_size: int
    prefix: str | None = None

    @cached_property
    def values(self) -> Values:
        return Values(self.codec)

    @cached_property
    def entity_fields(self) -> Mapping[str, str]:
        """``queue.declare.queue`` -> ``queue``: the fields that name a queue or exchange."""
        return {
            f"{member.qualified}.{f.name}": f.ref.name.split(".")[0]
            for members in (self.spec.commands, self.spec.structs)
            for member in members
            for f in member.fields
            if f.ref.kind == "domain" and f.ref.name in ENTITIES
        }

    @cached_property
    def server_commands(self) -> tuple[str, ...]:
        """The commands a server implements, in the XML's order."""
        return tuple(
            c.qualified for c in self.spec.commands if any(i.role == "server" for i in c.implements)
        )

    @cached_property
    def one_segment(self) -> tuple[str, ...]:
        """The commands a server implements that take no header or body, the answers
        excepted: what operators break, one segment each."""
        return tuple(
            name
            for name in self.server_commands
            if name not in ANSWERS and self.spec.command(name).segments is None
        )

    def one_segment_with(self, test: Callable[[FieldPlan], bool], key: str) -> tuple[str, ...]:
        """The :attr:`one_segment` commands with a field for which ``test`` holds (cached under
        ``key``)."""
        found = self._with.get(key)
        if found is None:
            layout = self.codec.types.layout
            found = tuple(
                name
                for name in self.one_segment
                if any(test(f) for f in layout(name, "command").fields)
            )
            self._with[key] = found
        return found

    @cached_property
    def _with(self) -> dict[str, tuple[str, ...]]:
        return {}

    def name(self, src: Source, what: str = "queue") -> str:
        """A name nobody has used: the run's prefix, ``what``, eight random characters."""
        return src.name(self.prefix, f"{what}-")

    def entity_name(self, qualified_field: str, src: Source) -> str:
        """A prefixed name for a field that names a queue or exchange; "" for other fields."""
        kind = self.entity_fields.get(qualified_field)
        return self.name(src, kind) if kind is not None else ""

    def drawn(self, name: str, src: Source, sync: bool = True) -> Command:
        """A valid command with drawn values; the entities it names have prefixed names."""
        return self.values.command(name, src, sync=sync, names=self.entity_name)

    def wire(self, item: Any, label: str = "", channel: int = CASE_CHANNEL) -> Wire:
        """A control's or command's frames (channel 0 until rendered on the case's)."""
        if item.channel != max(channel, 0):
            item = dataclasses.replace(item, channel=max(channel, 0))
        data = self.codec.encode(item, self.max_frame_size)
        return Wire(data, label or item.name, channel)

    def control(self, name: str, channel: int = CASE_CHANNEL, /, **fields: Any) -> Wire:
        return self.wire(self.codec.control(name, max(channel, 0), **fields), channel=channel)

    def raw(self, data: bytes, label: str, channel: int = CASE_CHANNEL) -> Wire:
        return Wire(data, label, channel)

    def command_payload(self, item: Command, check: bool = True) -> bytes:
        """A command segment's payload: class and code, session header, flags and fields."""
        return self.codec.encoder.command(item.name, item.fields, item.sync, check)


class ErrorCodes:
    """The family's codes: those of the XML's three error domains by name, each closing the
    scope of its domain (an operator names the scope its case closes)."""

    def names(self, spec: Spec010) -> Mapping[str, ErrorCode]:
        return error_codes(spec)

    def code(self, spec: Spec010, name: str) -> ErrorCode:
        return error_codes(spec)[name]


CODES = ErrorCodes()
