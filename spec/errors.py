"""The exceptions of amqpfuzz.

One root, :class:`AmqpfuzzError`, so that a command-line entry point can turn every expected
failure into one clear line. Below it:

* :class:`SpecError`: a specification file that cannot be read into the model. It names the
  file and the line.
* :class:`ProtocolError`: the wire codec's root, split the way h11 splits it:
  :class:`LocalProtocolError` when *we* asked for something the wire cannot carry (a short
  string of 300 bytes, a channel number of 70000), and :class:`RemoteProtocolError` when bytes
  that arrived cannot be read. A remote error carries the byte offset where reading failed and
  a category: the name of the reply-code constant that the specification says a peer must
  answer such bytes with (``frame-error``, ``syntax-error``, ``command-invalid``,
  ``unexpected-frame``).
"""

from __future__ import annotations

__all__ = [
    "AmqpfuzzError",
    "FrameError",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "SpecError",
    "SyntaxFieldError",
    "UnexpectedFrameError",
    "UnknownMethodError",
]


class AmqpfuzzError(Exception):
    """Root of every error amqpfuzz raises on purpose."""


class SpecError(AmqpfuzzError):
    """A specification file that cannot be loaded: says which file and which line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")


class ProtocolError(AmqpfuzzError):
    """Root of the wire codec's errors."""


class LocalProtocolError(ProtocolError):
    """We asked the codec to encode something the checked encoder refuses."""


class RemoteProtocolError(ProtocolError):
    """Bytes received (or handed to the decoder) that cannot be read as AMQP frames.

    ``offset`` is the position in the decoded buffer where reading failed; ``category`` is the
    name of the spec constant for the reply the specification requires from a peer receiving
    these bytes.
    """

    category = "frame-error"

    def __init__(self, message: str, offset: int = 0, category: str | None = None) -> None:
        self.message = message
        self.offset = offset
        if category is not None:
            self.category = category
        super().__init__(f"{message} (at byte {offset}, {self.category})")

    def shifted(self, delta: int) -> RemoteProtocolError:
        """The same error with its offset moved by ``delta`` (a frame's place in a stream)."""
        return type(self)(self.message, self.offset + delta, self.category)


class FrameError(RemoteProtocolError):
    """The frame itself is broken: its end octet, size or type, or it is truncated."""

    category = "frame-error"


class SyntaxFieldError(RemoteProtocolError):
    """The frame is whole but a field holds a value the wire format forbids."""

    category = "syntax-error"


class UnknownMethodError(RemoteProtocolError):
    """A class or method id that the specification does not define."""

    category = "command-invalid"


class UnexpectedFrameError(RemoteProtocolError):
    """A frame that may never appear where it appeared (a heartbeat on a channel)."""

    category = "unexpected-frame"
