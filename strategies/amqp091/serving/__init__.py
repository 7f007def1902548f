"""The server side of 0-8/0-9/0-9-1: what amqpfuzz sends when it plays the broker to test a
client library (:mod:`.script`: a connection's script, read from a blob; :mod:`.operators`:
the server-side operators and the reactions they require of a client)."""

from __future__ import annotations

from .operators import OPERATORS, POINTS
from .script import SCRIPT_BLOB, Delivery, Point, Script, Strike, answer_values, script_builder

__all__ = [
    "OPERATORS",
    "POINTS",
    "SCRIPT_BLOB",
    "Delivery",
    "Point",
    "Script",
    "Strike",
    "answer_values",
    "script_builder",
]
