"""Server-side 1.0 operators: what a hostile peer breaks, and what the client must do about it.

Each operator strikes at one :class:`~..script.Point` and breaks the valid frames the peer was
about to send there (:class:`~..script.Strike`), or sends frames of its own once the client is
quiet; it cites the section it breaks and carries the error condition and scope the
specification requires of the client (the receiving peer: 1.0's MUSTs bind both ends), or
``socket`` where the client must close the socket, ``ignore`` where it must carry on (and
deliver nothing it should not), and ``or_reply`` where the specification names no reaction.
An operator that cannot break what the connection came to (a channel-max of 65535 leaves no
channel outside it) raises :class:`NotApplicable`: the case is then played as valid.

They are defined in groups, each beside its build functions: the frame header
(:mod:`.framing`), the encoding of a performative (:mod:`.encoding`), SASL, the protocol header,
the connection and its sessions (:mod:`.connection`), links (:mod:`.links`), and every size and count of the type system, and nesting
(:mod:`.lengths`); what they share is :mod:`.common`. The catalogue's order, theirs, is the order Hypothesis shrinks towards.
"""

from __future__ import annotations

from ....operator import Operator
from . import connection, encoding, framing, lengths, links
from .common import POINTS, NotApplicable

__all__ = ["OPERATORS", "POINTS", "NotApplicable"]

OPERATORS: list[Operator] = [
    *framing.OPERATORS,
    *encoding.OPERATORS,
    *connection.OPERATORS,
    *links.OPERATORS,
    *lengths.OPERATORS,
]
