"""The 0-10 codec's errors: the project's protocol errors, each with the reaction the
specification requires of a peer that receives such bytes, named as the XML names it.

0-10 has two vocabularies of reactions: ``connection.close-code`` (the connection closes: for
bytes that cannot be framed, ``framing-error``) and ``execution.error-code`` (the session's
execution layer raises an exception on the command: ``illegal-argument``, ``command-invalid``,
``not-implemented``). A category from the first closes the connection; one from the second is an
``execution.exception``. A control has no execution layer to answer it: anything wrong with a
control is the connection's ``framing-error``.
"""

from __future__ import annotations

from ...errors import LocalProtocolError, RemoteProtocolError

__all__ = [
    "CONNECTION_CATEGORIES",
    "EXECUTION_CATEGORIES",
    "AssemblyError",
    "DecodeError",
    "FramingError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "UnknownCodeError",
]

# which categories close the connection (connection.close-code) and which are execution
# exceptions (execution.error-code): the choices of those domains the codec uses
CONNECTION_CATEGORIES = frozenset({"framing-error"})
EXECUTION_CATEGORIES = frozenset({"illegal-argument", "command-invalid", "not-implemented"})


class FramingError(RemoteProtocolError):
    """Bytes that cannot be read as frames: a frame size under 12 or over the maximum, a
    protocol header where a frame belongs, reserved bits set, an unknown segment type or track,
    frames whose flags contradict the segment they belong to."""

    category = "framing-error"


class DecodeError(RemoteProtocolError):
    """A command's arguments (or a header entry) that cannot be read: a size that lies, a
    packing flag for no field, a value outside its domain, text that is not of its character
    set, octets left over. Raised with ``framing-error`` for a control."""

    category = "illegal-argument"


class UnknownCodeError(DecodeError):
    """A class or command code (or struct code) the specification does not define."""

    category = "not-implemented"


class AssemblyError(RemoteProtocolError):
    """Segments in an order no assembly has: a header or body with no command before it, a
    new command before the last segment of the previous one, a header after the body, a
    segment the command does not take. Raised with ``framing-error`` on the control track."""

    category = "command-invalid"
