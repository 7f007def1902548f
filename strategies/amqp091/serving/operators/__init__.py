"""Server-side operators: what a hostile broker breaks, and what the client must do about it.

Each operator strikes at one :class:`~..script.Point` of a connection and breaks the valid
frames the peer was about to send there (:class:`~..script.Strike`), or adds frames of its own
once the client is quiet; it carries the reaction the specification requires of the client, by
the reply-code constants it names (a hard error: the client closes the connection with that
code), or ``socket`` where a rule says the client closes the socket without a word.

They are defined in groups, each beside its build functions: the handshake
(:mod:`.handshake`), any reply (:mod:`.replies`), deliveries (:mod:`.deliveries`) and frames
of the server's own (:mod:`.unsolicited`); what they share is :mod:`.common`. The catalogue's
order, theirs, is the order Hypothesis shrinks towards.
"""

from __future__ import annotations

from ....operator import Operator
from . import deliveries, handshake, lengths, replies, unsolicited
from .common import POINTS

__all__ = ["OPERATORS", "POINTS"]

OPERATORS: list[Operator] = [
    *handshake.OPERATORS,
    *replies.OPERATORS,
    *deliveries.OPERATORS,
    *unsolicited.OPERATORS,
    *lengths.OPERATORS,
]
