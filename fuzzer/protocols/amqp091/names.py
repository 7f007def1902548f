"""The broker entities a case may create, read from the bytes it sends.

A mutation may change the name a declaration carries (a name that breaks its domain's asserts,
a name that is not UTF-8), and a lenient broker creates what it was sent. So the names to clean
up afterwards are read from each step's bytes, not from the valid frame the step was made
from. A name that is not UTF-8 stays bytes: it can only be deleted with the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from amqpfuzz.spec.amqp091 import Method, Spec
from amqpfuzz.strategies.amqp091 import WireFrame

from ..outcome import Name

__all__ = ["CREATES", "created_names", "field_bytes", "names_a_queue_itself", "ours"]

# The methods that create an entity, and the kind of entity (the field that names it).
CREATES = {"queue.declare": "queue", "exchange.declare": "exchange"}

_FIXED = {"octet": 1, "short": 2, "long": 4, "longlong": 8, "timestamp": 8}
_IDS = struct.Struct(">HH")


def field_bytes(method: Method, name: str, data: bytes) -> bytes | None:
    """The bytes of the string field ``name`` in a method's argument bytes, read leniently
    (None where the arguments end before it)."""
    offset = 0
    bits = 0  # consecutive bits share an octet
    for fld in method.fields:
        if fld.type == "bit":
            if bits % 8 == 0:
                offset += 1
            bits += 1
            continue
        bits = 0
        if fld.name == name:
            if fld.type != "shortstr" or offset >= len(data):
                return None
            end = offset + 1 + data[offset]
            return data[offset + 1 : end] if end <= len(data) else None
        if fld.type in _FIXED:
            offset += _FIXED[fld.type]
        elif fld.type == "shortstr" and offset < len(data):
            offset += 1 + data[offset]
        elif offset + 4 <= len(data):  # longstr, table: a long length first
            offset += 4 + int.from_bytes(data[offset : offset + 4], "big")
        else:
            return None
    return None


def _declarations(
    spec: Spec, frame_method: int, steps: Iterable[WireFrame]
) -> Iterator[tuple[str, bytes | None]]:
    """(kind, the name's bytes or None where they cannot be read) for each declaration."""
    for step in steps:
        if step.verbatim is not None or step.frame_type != frame_method or len(step.payload) < 4:
            continue
        method = spec.method_by_id(*_IDS.unpack_from(step.payload))
        kind = CREATES.get(method.full_name) if method is not None else None
        if method is not None and kind is not None:
            yield kind, field_bytes(method, kind, step.payload[4:])


def names_a_queue_itself(spec: Spec, frame_method: int, steps: Iterable[WireFrame]) -> bool:
    """Whether ``steps`` declare a queue with an empty name, which the broker names: only its
    reply tells the name (to delete it afterwards)."""
    return any(
        kind == "queue" and name == b"" for kind, name in _declarations(spec, frame_method, steps)
    )


def created_names(
    spec: Spec, frame_method: int, steps: Iterable[WireFrame]
) -> Iterator[tuple[str, Name]]:
    """(kind, name) for each declaration among ``steps``; the name as text when it is UTF-8."""
    for kind, found in _declarations(spec, frame_method, steps):
        if not found:
            continue
        try:
            yield kind, found.decode("utf-8")
        except UnicodeDecodeError:
            yield kind, found


def ours(name: Name, prefix: str) -> bool:
    """Whether a run whose names start with ``prefix`` made ``name`` (``amq.`` before the
    prefix too: a reserved-name case declares such names, and a lenient broker creates them).
    With no prefix, nothing is ours."""
    text = name if isinstance(name, str) else name.decode("utf-8", "replace")
    return bool(prefix) and text.startswith((prefix, "amq." + prefix))
