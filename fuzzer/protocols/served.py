"""What a serving peer saw of one connection, whatever the protocol: the words a client
campaign's oracles judge (:mod:`amqpfuzz.fuzzer.clients.judge`)."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# what differs between the properties a message was sent with and those a shim's ``message``
# event shows: what (a name to tell failures apart by) and how, in a sentence; None if nothing
Differs = Callable[[Mapping[str, Any], Mapping[str, Any]], "tuple[str, str] | None"]

__all__ = ["Differs", "Exchange", "Message", "shown_number", "single"]


@dataclass(frozen=True)
class Message:
    """A message the peer sent validly: how (``deliver``, ``get``, ``return``), where, and
    what it carried (properties by their spec names)."""

    via: str
    channel: int
    delivery_tag: int | None
    body: bytes
    properties: dict[str, Any]
    content: dict[str, Any] | None = None  # 1.0: the body as a shim shows it, where it is exact
    differs: Differs | None = None  # the family's comparison of its properties with a shim's

    @property
    def marker(self) -> str | None:
        """What a 1.0 client's application knows the message by: its message-id."""
        found = self.properties.get("message-id")
        return found if isinstance(found, str) and self.via == "transfer" else None


@dataclass
class Exchange:
    """One connection as it went: what the peer sent (labels), what the client sent back, the
    messages sent validly, the strike, the client's close and how the connection ended
    (``client-close``, ``socket``, ``server-close``: our close answered, ``timeout``)."""

    header: bytes = b""
    sent: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    struck: str | None = None
    spec_ref: str = ""
    after_strike: list[str] = field(default_factory=list)
    client_close: tuple[int | str | None, str, int, int] | None = None
    channel_closes: list[tuple[int, int]] = field(default_factory=list)
    closes: list[tuple[str, str]] = field(default_factory=list)  # (outcome, condition): 1.0's
    unstruck: bool = False  # the operator found nothing to break: the case was played as valid
    violations: list[str] = field(default_factory=list)
    malformed: str | None = None
    ended: str = "timeout"
    duration: float = 0.0

    @property
    def spoke(self) -> bool:
        """Whether the client sent anything after the strike."""
        return bool(self.after_strike)


_FLOAT = struct.Struct(">f")


def shown_number(value: Any) -> float | None:
    """A number as a shim shows it: JSON's, or text (NaN and infinities, as each language
    writes them); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def single(value: float) -> float:
    """``value`` at 32-bit precision (infinite beyond its range, as the wire has it)."""
    try:
        return float(_FLOAT.unpack(_FLOAT.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)
