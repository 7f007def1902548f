"""The frames of the 0-8 / 0-9 / 0-9-1 wire format, as frozen, slotted values.

A frame knows what it carries, not how it is encoded: the :class:`~.Codec` of a specification
turns frames into bytes and bytes into frames. Reprs are written for failure reports:
``basic.publish(ch=1, exchange='', routing_key='q', mandatory=False, immediate=False)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..model import Method

__all__ = [
    "ContentBody",
    "ContentHeader",
    "Frame",
    "Heartbeat",
    "MethodFrame",
    "ProtocolHeader",
]


@dataclass(frozen=True, slots=True)
class ProtocolHeader:
    """The eight octets that open a connection: ``AMQP`` and four version octets."""

    data: bytes

    @property
    def version(self) -> tuple[int, int, int, int]:
        a, b, c, d = self.data[4:8]
        return (a, b, c, d)

    def __repr__(self) -> str:
        if len(self.data) == 8 and self.data[:4] == b"AMQP":
            return "ProtocolHeader(AMQP {} {} {} {})".format(*self.version)
        return f"ProtocolHeader({self.data!r})"


@dataclass(frozen=True, slots=True)
class MethodFrame:
    """A method with its argument values, in the order of the method's fields."""

    channel: int
    method: Method
    values: tuple[Any, ...]

    @property
    def name(self) -> str:
        return self.method.full_name

    @property
    def arguments(self) -> dict[str, Any]:
        """Argument values by field name as an identifier (``routing_key``)."""
        return {f.attr: v for f, v in zip(self.method.fields, self.values, strict=False)}

    def __getitem__(self, name: str) -> Any:
        for fld, value in zip(self.method.fields, self.values, strict=False):
            if fld.attr == name or fld.name == name:
                return value
        raise KeyError(f"{self.name} has no field {name!r}")

    def __repr__(self) -> str:
        shown = [
            f"{f.attr}={v!r}"
            for f, v in zip(self.method.fields, self.values, strict=False)
            if not (f.reserved and not v)
        ]
        return f"{self.name}(ch={self.channel}{''.join(', ' + s for s in shown)})"


@dataclass(frozen=True, slots=True)
class ContentHeader:
    """A content header: the class, the total body size and the present properties."""

    channel: int
    class_id: int
    body_size: int
    properties: dict[str, Any] = field(default_factory=dict)
    weight: int = 0

    def __repr__(self) -> str:
        props = "".join(f", {k}={v!r}" for k, v in self.properties.items())
        weight = f", weight={self.weight}" if self.weight else ""
        return (
            f"header(ch={self.channel}, class={self.class_id}, size={self.body_size}"
            f"{weight}{props})"
        )


@dataclass(frozen=True, slots=True)
class ContentBody:
    """One body frame's share of a message's content."""

    channel: int
    payload: bytes

    def __repr__(self) -> str:
        shown = self.payload if len(self.payload) <= 32 else self.payload[:32] + b"..."
        return f"body(ch={self.channel}, {len(self.payload)} bytes: {shown!r})"


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A heartbeat: no payload, channel 0."""

    channel: int = 0

    def __repr__(self) -> str:
        return "heartbeat()" if self.channel == 0 else f"heartbeat(ch={self.channel})"


Frame: TypeAlias = ProtocolHeader | MethodFrame | ContentHeader | ContentBody | Heartbeat
