"""Whether a 1.0 client's application was handed a message's properties and
application-properties as the peer sent them.

The peer keeps, per message, its properties section's fields and its application-properties
(:func:`sent_of`); a shim shows them as the 1.0 shim contract says (``properties`` by the
specification's names, user-id as hex, times as integer milliseconds, binary ``"hex:…"``, uuids
as strings; ``application_properties`` as a JSON object). Each value is compared by its AMQP
type: integers exactly (as numbers, digits, or the eight octets rhea hands over for a 64-bit
value past 2^53), a ``float`` at 32-bit precision, strings and symbols as text, binary as its
octets. A field a shim leaves out (a library that takes a default value for absent) is not
compared; the body and the message-id are the judge's own (:mod:`amqpfuzz.fuzzer.clients.judge`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Any

from amqpfuzz.spec import RemoteProtocolError
from amqpfuzz.spec.amqp10.codec import Codec, Composite, Described, Float

from ...served import shown_number, single

__all__ = ["APPLICATION", "differs", "sent_of"]

APPLICATION = "application-properties"  # the key a sent message's application-properties are under


def sent_of(codec: Codec, payload: bytes) -> dict[str, Any]:
    """A message's properties fields, and its application-properties under :data:`APPLICATION`
    (what :func:`differs` compares); empty for a payload that does not decode."""
    try:
        sections = codec.sections(payload)
    except RemoteProtocolError:
        return {}
    found: dict[str, Any] = {}
    for section in sections:
        if isinstance(section, Composite) and section.name == "properties":
            found.update({k: v for k, v in section.fields.items() if v is not None})
        elif (
            isinstance(section, Described)
            and section.descriptor == APPLICATION
            and isinstance(section.value, Mapping)
        ):
            found[APPLICATION] = dict(section.value)
    return found


def differs(sent: Mapping[str, Any], event: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first property or application property ``event`` (a shim's ``message``) shows
    otherwise than ``sent``: its name (``application-properties:<key type>`` for an application
    property) and a sentence; None if all agree."""
    shown = event.get("properties") or {}
    for name, ours in sent.items():
        if name == APPLICATION or name not in shown or shown[name] is None:
            continue
        theirs = shown[name]
        same = _octets(ours) == _hex(theirs) if name == "user-id" else _same(ours, theirs)
        if not same:
            return name, f"property {name} delivered as {_short(theirs)}, sent as {_short(ours)}"
    application = event.get("application_properties")
    if isinstance(application, Mapping):
        for key, ours in (sent.get(APPLICATION) or {}).items():
            if str(key) not in application:
                continue
            theirs = application[str(key)]
            if not _same(ours, theirs):
                kind = type(ours).__name__.lower()
                return f"{APPLICATION}:{kind}", (
                    f"application property {str(key)[:40]!r} delivered as {_short(theirs)}, "
                    f"sent as {_short(ours)} ({kind})"
                )
    return None


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, bool):
        return theirs is ours
    if isinstance(ours, int):
        return ours in _integers(theirs)
    if isinstance(ours, float):
        number = shown_number(theirs)
        if number is None:
            return False
        if isinstance(ours, Float):
            return single(number) == single(ours)
        return number == ours or (math.isnan(number) and math.isnan(ours))
    if isinstance(ours, uuid.UUID):  # as text, or (rhea) as its sixteen octets
        return isinstance(theirs, str) and (
            theirs.lower() == str(ours) or _hex(theirs, prefixed=True) == ours.bytes
        )
    if isinstance(ours, bytes):
        return _octets(ours) == _hex(theirs, prefixed=True)
    if isinstance(ours, str):
        return isinstance(theirs, str) and theirs == ours
    if ours is None:
        return theirs is None
    return True  # lists, maps and described values: forms the shims do not agree on


def _integers(value: Any) -> tuple[int, ...]:
    """The integers a shim's value may stand for: a number, decimal digits, or (rhea's for a
    64-bit value past 2^53) its eight octets, read signed or unsigned."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return (int(value),)
    octets = _hex(value, prefixed=True)
    if octets is not None and len(octets) == 8:
        return (int.from_bytes(octets, "big", signed=True), int.from_bytes(octets, "big"))
    return ()


def _octets(value: Any) -> bytes | None:
    return bytes(value) if isinstance(value, bytes | bytearray) else None


def _hex(value: Any, prefixed: bool = False) -> bytes | None:
    """The octets a shim's hex spells (``hex:…`` where ``prefixed``)."""
    if not isinstance(value, str):
        return None
    if prefixed:
        if not value.startswith("hex:"):
            return None
        value = value[4:]
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
