"""Hypothesis strategies for AMQP 0-10, derived from the 0-10 XML.

Nothing here is written per type, struct or command: values of every type, instances of every
struct, control and command, whole valid connections, valid cases of every command a server
implements and malformed cases of the operators are assembled from the loaded model and its
codec, so a command added to the XML gets strategies with no code change. Factories check their
arguments when called and raise :class:`hypothesis.errors.InvalidArgument` with a clear message.

Everything is read from one blob of bytes per example (see :class:`~..source.Source`): a zeroed
blob reads as the plainest value, so Hypothesis shrinks towards the simplest frame.

Besides its own strategies, the family gives the generic layer (:mod:`amqpfuzz.strategies`)
what every family gives: :data:`FAMILY`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp010.codec import Command, Control, Struct

from ..source import Source
from .context import Context, error_code
from .family import DEFAULT_FRAME, FAMILY, PROTOCOL, Amqp010Strategies, names_of
from .valid import connection_frames
from .wire import CASE_CHANNEL, Wire

__all__ = [
    "CASE_CHANNEL",
    "FAMILY",
    "Amqp010Strategies",
    "Wire",
    "commands",
    "connection_frames_of",
    "controls",
    "error_code",
    "structs",
    "type_values",
]


def _blobs(size: int = FAMILY.blob) -> st.SearchStrategy[Source]:
    return st.binary(min_size=size, max_size=size).map(Source)


def _context(protocol: str) -> Context:
    return FAMILY.context(protocol, frame_max=DEFAULT_FRAME, prefix=None)


# -- values, structs, controls, commands, connections ---------------------------------------------


def type_values(type_name: str, *, protocol: str = PROTOCOL) -> st.SearchStrategy[Any]:
    """Values of a 0-10 type by its name in the XML (``uint16``, ``str8``, ``sequence-set``,
    ``map``...), as a field of that type holds them. Shrinks towards zero and empty."""
    ctx = _context(protocol)
    if not isinstance(type_name, str) or type_name not in ctx.codec.types.types:
        raise InvalidArgument(f"type_name={type_name!r}: not a type of AMQP 0-10")
    wire = ctx.codec.types.type(type_name)
    return _blobs().map(lambda src: ctx.values.plain(wire, src))


def structs(
    names: Sequence[str] | None = None, *, protocol: str = PROTOCOL
) -> st.SearchStrategy[Struct]:
    """Instances of structs by qualified name (by default every one), required fields always
    set, others about half the time."""
    ctx = _context(protocol)
    chosen = names_of(names, [s.qualified for s in ctx.spec.structs], "names")
    return _blobs().map(lambda src: ctx.values.struct(src.pick(chosen), src))


def controls(
    names: Sequence[str] | None = None, *, protocol: str = PROTOCOL
) -> st.SearchStrategy[Control]:
    """Instances of controls by qualified name (by default every one)."""
    ctx = _context(protocol)
    chosen = names_of(names, [c.qualified for c in ctx.spec.controls], "names")
    return _blobs().map(lambda src: ctx.values.control(src.pick(chosen), src))


def commands(
    names: Sequence[str] | None = None, *, protocol: str = PROTOCOL
) -> st.SearchStrategy[Command]:
    """Instances of commands by qualified name (by default every one), with header entries
    and a body where the command takes them."""
    ctx = _context(protocol)
    chosen = names_of(names, [c.qualified for c in ctx.spec.commands], "names")
    return _blobs().map(
        lambda src: ctx.values.command(src.pick(chosen), src, sync=bool(src.byte() & 1))
    )


def connection_frames_of(
    *,
    sasl: Sequence[str] = ("PLAIN", "ANONYMOUS"),
    frame_max: int = DEFAULT_FRAME,
    protocol: str = PROTOCOL,
) -> st.SearchStrategy[list[bytes]]:
    """A client's side of a whole valid connection, one item per protocol header, control or
    command: the handshake with one of ``sasl``, a session, commands, detach and close."""
    allowed = ("PLAIN", "ANONYMOUS")
    if not sasl or any(m not in allowed for m in sasl):
        raise InvalidArgument(f"sasl={sasl!r}: choose from {allowed}")
    ctx = FAMILY.context(protocol, frame_max=frame_max, prefix=None)
    choices = tuple(sasl)
    return _blobs().map(lambda src: connection_frames(src, ctx, src.pick(choices)))
