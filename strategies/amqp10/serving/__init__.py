"""amqpfuzz as the 1.0 peer a client library connects to: the server scripts it plays
(:mod:`.script`) and the server-side operators that break them (:mod:`.operators`)."""

from __future__ import annotations

from .operators import OPERATORS, POINTS, NotApplicable
from .script import SCRIPT_BLOB, Delivery, Point, Script, Strike, script_builder

__all__ = [
    "OPERATORS",
    "POINTS",
    "SCRIPT_BLOB",
    "Delivery",
    "NotApplicable",
    "Point",
    "Script",
    "Strike",
    "script_builder",
]
