"""The 1.0 codec's errors: the project's protocol errors, each with the error condition the
specification requires of a peer that receives such bytes."""

from __future__ import annotations

from ...errors import LocalProtocolError, RemoteProtocolError

__all__ = ["DecodeError", "FramingError", "LocalProtocolError", "RemoteProtocolError"]


class DecodeError(RemoteProtocolError):
    """A value that cannot be read: an unknown constructor, a size or count that lies, a
    string that is not UTF-8, a composite with a field of the wrong type."""

    category = "amqp:decode-error"


class FramingError(RemoteProtocolError):
    """A frame that cannot be read as one: a size below 8 or over the agreed maximum, a data
    offset below 2 or past the frame's end, a protocol header where a frame belongs."""

    category = "amqp:connection:framing-error"
