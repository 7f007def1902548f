"""Whether a client's application was handed a message's properties as the peer sent them.

A shim shows what its application got as JSON (the contract in ``shim_common.py``: bytes as
``"hex:…"``, decimals as ``"<digits>E-<places>"``, timestamps as integer seconds, a float JSON
cannot carry as text; an integer its language cannot hold as decimal digits, an empty table
as PHP's empty array). The peer's values are compared with that by the type each travelled
under: a header table's entries by their type codes (read back from the bytes sent, so a plain
value counts by the code it was inferred to), a 32-bit float to 32-bit precision, a string
either as text or as its octets. Only what a shim shows is compared: a property it leaves out
is not a difference.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from amqpfuzz.spec.amqp091.codec.tables import DIALECTS, FieldValue, decode_table, encode_table

from ...served import shown_number, single

__all__ = ["differs"]

_DIALECT = "rabbit"  # the peer's: its tables are drawn and sent in RabbitMQ's type codes
_KINDS = DIALECTS[_DIALECT]


def differs(sent: Mapping[str, Any], event: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first property ``event`` (a shim's ``message``) shows otherwise than ``sent`` (the
    content header's, by spec name): what it is (the property, or ``headers:<code>`` for a
    table entry of that type code) and a sentence saying how; None if all agree."""
    shown = event.get("properties") or {}
    for name, ours in sent.items():
        if name not in shown:
            continue
        theirs = shown[name]
        if name == "headers":
            typed, _ = decode_table(encode_table(ours, _DIALECT), 0, _DIALECT, typed=True)
            found = _table(typed, theirs, "headers")
            if found is not None:
                code, where, how = found
                return f"headers:{code}", f"header {where} delivered as {how}"
            continue
        if not _same("timestamp" if name == "timestamp" else _kind_of(ours), ours, theirs):
            return name, f"property {name} delivered as {_short(theirs)}, sent as {_short(ours)}"
    return None


def _kind_of(value: Any) -> str:
    return "int" if isinstance(value, int) and not isinstance(value, bool) else "longstr"


def _table(ours: Mapping[str, Any], theirs: Any, where: str) -> tuple[str, str, str] | None:
    if theirs == [] and not ours:  # PHP has one empty array for both
        return None
    if not isinstance(theirs, dict):
        return "F", where, f"{_short(theirs)}, sent as a table"
    for key, value in ours.items():
        if key not in theirs:
            return _code(value), f"{where}.{key}", "nothing: the entry is missing"
        found = _entry(value, theirs[key], f"{where}.{key}")
        if found is not None:
            return found
    extra = sorted(set(theirs) - set(ours))
    if extra:
        return "F", f"{where}.{extra[0]}", f"{_short(theirs[extra[0]])}: never sent"
    return None


def _entry(ours: Any, theirs: Any, where: str) -> tuple[str, str, str] | None:
    code = _code(ours)
    value = ours.value if isinstance(ours, FieldValue) else ours
    kind = _KINDS.get(code, "")
    if kind == "table":
        return _table(value, theirs, where)
    if kind == "array":
        if not isinstance(theirs, list) or len(theirs) != len(value):
            return code, where, f"{_short(theirs)}, sent as an array of {len(value)}"
        for i, (one, other) in enumerate(zip(value, theirs, strict=True)):
            found = _entry(one, other, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if _same(kind, value, theirs):
        return None
    return code, where, f"{_short(theirs)}, sent as {_short(value)} (type {code!r}, {kind})"


def _code(value: Any) -> str:
    return value.code if isinstance(value, FieldValue) else "?"


def _same(kind: str, ours: Any, theirs: Any) -> bool:
    """Whether ``theirs`` (JSON) is ``ours`` (a value of ``kind``) as the shim contract writes it."""
    if kind == "bool":
        return theirs in (True, False, 0, 1) and bool(theirs) is bool(ours)
    if kind in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "int"):
        return bool(_integer(theirs) == ours)
    if kind == "timestamp":
        return bool(_integer(theirs) == _seconds(ours))
    if kind in ("float", "double"):
        number = shown_number(theirs)
        if number is None:
            return False
        if kind == "float":
            return single(number) == single(float(ours))
        return number == float(ours) or (math.isnan(number) and math.isnan(float(ours)))
    if kind == "decimal":
        return _decimal(ours, theirs)
    if kind == "void":
        return theirs is None
    return _octets(theirs) == _octets(ours)  # strings and byte arrays


def _decimal(ours: Decimal, theirs: Any) -> bool:
    """The grammar reads a decimal's value as ``long-uint``, RabbitMQ as signed: either reading
    of the 32 bits sent is the value sent."""
    try:
        shown = Decimal(str(theirs))
    except InvalidOperation:
        return False
    if shown == ours:
        return True
    sign, digits, exponent = ours.as_tuple()
    if not isinstance(exponent, int) or not sign or exponent > 0:
        return False
    unsigned = (1 << 32) - int("".join(map(str, digits)) or "0")
    return bool(shown == Decimal(unsigned).scaleb(exponent))


def _integer(value: Any) -> int | None:
    """An integer as JSON has it, or as decimal digits (PHP's beyond its signed 64 bits)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def _seconds(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return int(value.timestamp())
    return value


def _octets(value: Any) -> bytes | None:
    """A string's octets: text as UTF-8, ``hex:`` as the octets it spells."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if not isinstance(value, str):
        return None
    if value.startswith("hex:"):
        try:
            return bytes.fromhex(value[4:])
        except ValueError:
            pass
    return value.encode("utf-8", "surrogateescape")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
