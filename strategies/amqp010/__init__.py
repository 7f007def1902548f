"""Hypothesis strategies for AMQP 0-10, derived from the 0-10 XML.

Nothing here is written per type, struct or command: values of every type, instances of every
struct, control and command, whole valid connections, valid cases of every command a server
implements and malformed cases of the operators are assembled from the loaded model and its
codec, so a command added to the XML gets strategies with no code change. Factories check their
arguments when called and raise :class:`hypothesis.errors.InvalidArgument` with a clear message.

Everything is read from one blob of bytes per example (see :class:`~..source.Source`): a zeroed
blob reads as the plainest value, so Hypothesis shrinks towards the simplest frame.

Besides its own strategies, the family gives the generic layer (:mod:`amqpfuzz.strategies`)
what every family gives: :func:`operators`, :func:`case_methods` and the case builders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp010.codec import MAX_FRAME_SIZE, Codec, Command, Control, Struct, codec_for

from ..building import mixed_builder, pick_operator
from ..cases import Case
from ..source import Source
from .operator import Context, ErrorCode, Operator, error_code
from .operators import catalogue
from .valid import case_commands, connection_frames, valid_builder
from .wire import CASE_CHANNEL, Wire

__all__ = [
    "BLOB",
    "CASE_CHANNEL",
    "ErrorCode",
    "Operator",
    "Wire",
    "case_builder",
    "case_methods",
    "commands",
    "connection_frames_of",
    "controls",
    "error_code",
    "malformed_case_builder",
    "operators",
    "structs",
    "type_values",
    "valid_case_builder",
]

BLOB = 512
PROTOCOL = "0-10"
DEFAULT_FRAME = 65535


def _codec(protocol: str) -> Codec:
    if protocol != PROTOCOL:
        raise InvalidArgument(f"protocol={protocol!r}: the AMQP 0-10 family has only {PROTOCOL!r}")
    return codec_for(protocol)


def _blobs(size: int = BLOB) -> st.SearchStrategy[Source]:
    return st.binary(min_size=size, max_size=size).map(Source)


def _context(protocol: str, frame_max: int = DEFAULT_FRAME, prefix: str | None = None) -> Context:
    codec = _codec(protocol)
    low = codec.min_max_frame_size
    if not isinstance(frame_max, int) or frame_max < low:
        raise InvalidArgument(f"frame_max={frame_max!r}: at least {low} (MIN-MAX-FRAME-SIZE)")
    if prefix is not None and not isinstance(prefix, str):
        raise InvalidArgument(f"prefix={prefix!r}: a string or None")
    # a frame's size is 16 bits: a larger maximum (the generic layer's default) allows them all
    return Context(codec.spec, codec, min(frame_max, MAX_FRAME_SIZE), prefix)


def _names(chosen: Sequence[str] | None, known: Sequence[str], what: str) -> tuple[str, ...]:
    picked = tuple(known) if chosen is None else tuple(chosen)
    unknown = [n for n in picked if n not in known]
    if not picked or unknown:
        raise InvalidArgument(f"{what}={chosen!r}: 0-10 has {list(known)}")
    return picked


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
    chosen = _names(names, [s.qualified for s in ctx.spec.structs], "names")
    return _blobs().map(lambda src: ctx.values.struct(src.pick(chosen), src))


def controls(
    names: Sequence[str] | None = None, *, protocol: str = PROTOCOL
) -> st.SearchStrategy[Control]:
    """Instances of controls by qualified name (by default every one)."""
    ctx = _context(protocol)
    chosen = _names(names, [c.qualified for c in ctx.spec.controls], "names")
    return _blobs().map(lambda src: ctx.values.control(src.pick(chosen), src))


def commands(
    names: Sequence[str] | None = None, *, protocol: str = PROTOCOL
) -> st.SearchStrategy[Command]:
    """Instances of commands by qualified name (by default every one), with header entries
    and a body where the command takes them."""
    ctx = _context(protocol)
    chosen = _names(names, [c.qualified for c in ctx.spec.commands], "names")
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
    ctx = _context(protocol, frame_max)
    choices = tuple(sasl)
    return _blobs().map(lambda src: connection_frames(src, ctx, src.pick(choices)))


# -- what every family gives the generic layer ----------------------------------------------------


def operators(protocol: str = PROTOCOL) -> tuple[Operator, ...]:
    """The 0-10 mutation operators, in catalogue order."""
    return catalogue(_codec(protocol).spec)


def case_methods(protocol: str = PROTOCOL) -> tuple[str, ...]:
    """The commands valid cases are drawn from."""
    return case_commands(_context(protocol))


def case_builder(
    protocol: str = PROTOCOL,
    *,
    operators: Sequence[str] | None = None,
    valid_share: float = 0.25,
    frame_max: int = DEFAULT_FRAME,
    prefix: str | None = None,
) -> Callable[[bytes], Case]:
    """Reads what a campaign sends from a blob: a valid case about ``valid_share`` of the
    time, else a malformed case of ``operators``."""
    ctx = _context(protocol, frame_max, prefix)
    return mixed_builder(
        valid_builder(ctx, case_commands(ctx)),
        pick_operator(_operators(ctx, operators), ctx),
        valid_share,
    )


def valid_case_builder(
    protocol: str = PROTOCOL,
    methods: Sequence[str] | None = None,
    *,
    frame_max: int = DEFAULT_FRAME,
    prefix: str | None = None,
) -> Callable[[bytes], Case]:
    """Reads a valid case of one of ``methods`` (commands; by default every one a case may
    send) from a blob."""
    ctx = _context(protocol, frame_max, prefix)
    build = valid_builder(ctx, _names(methods, case_commands(ctx), "methods"))
    return lambda blob: build(Source(blob))


def malformed_case_builder(
    protocol: str = PROTOCOL,
    operators: Sequence[str] | None = None,
    *,
    frame_max: int = DEFAULT_FRAME,
    prefix: str | None = None,
) -> Callable[[bytes], Case]:
    """Reads a malformed case from a blob: the operator, then what it breaks and how."""
    ctx = _context(protocol, frame_max, prefix)
    build = pick_operator(_operators(ctx, operators), ctx)
    return lambda blob: build(Source(blob))


def _operators(ctx: Context, names: Sequence[str] | None) -> list[Operator]:
    available = {op.name: op for op in catalogue(ctx.spec)}
    return [available[n] for n in _names(names, list(available), "operators")]
