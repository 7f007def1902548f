"""What the 0-10 operators share: the catalogue they register into, the valid commands they
start from, and a command segment put together again from its fields."""

from __future__ import annotations

from collections.abc import Sequence

from amqpfuzz.spec.amqp010.codec import Command, raw
from amqpfuzz.spec.amqp010.codec.types import FieldPlan, Layout

from ...operator import Operator, registrar
from ...source import Source
from ..context import CODES, Context

__all__ = ["OPERATORS", "command", "operator", "payload", "segment"]

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES, scoped=True)


def command(src: Source, ctx: Context, names: Sequence[str] | None = None) -> Command:
    """A valid command (sync set) of ``names``, by default any of ``ctx.one_segment``."""
    return ctx.drawn(src.pick(tuple(names or ctx.one_segment)), src)


def segment(
    ctx: Context, item: Command, parts: Sequence[bytes], flags: bytes | None = None
) -> bytes:
    """A command segment's payload from its fields' bytes (``parts``, in order) and packing
    flags (by default those of the fields in ``item``)."""
    layout = ctx.codec.types.layout(item.name, "command")
    if flags is None:
        flags = raw.flags(present(layout, item), layout.pack)
    assert layout.code is not None
    header = raw.session_header(item.sync)
    return raw.command(layout.class_code, layout.code, flags + b"".join(parts), header)


def present(layout: Layout, item: Command) -> list[int]:
    """The indexes of the fields ``item`` sends (a bit that is set counts)."""
    return [f.index for f in layout.fields if item[f.name] not in (None, False)]


def payload(ctx: Context, item: Command) -> list[tuple[FieldPlan, bytes]]:
    """The fields ``item`` sends, each with its encoded bytes (a bit has none)."""
    layout = ctx.codec.types.layout(item.name, "command")
    encoder = ctx.codec.encoder
    return [
        (f, b"" if f.is_bit else encoder.field(layout, f, item[f.name]))
        for f in layout.fields
        if item[f.name] not in (None, False)
    ]
