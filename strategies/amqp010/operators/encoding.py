"""Operators that break a command's bytes (0-10 part 4, command segments; the execution
class's error codes): an unknown class or command code, packing flags that claim fields not
sent, a size prefix that runs past the segment, a sequence-set range that runs backwards, an
enum value its domain does not have, a required field left out. The command's segments cannot
be decoded (``command-invalid``), its code names nothing (``not-implemented``), or an argument
does not fall within its domain (``illegal-argument``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from amqpfuzz.spec.amqp010.codec import raw
from amqpfuzz.spec.amqp010.codec.types import FieldPlan

from ...operator import Built
from ...source import Source
from ..context import Context
from .common import command, operator, payload, segment

__all__: list[str] = []

UNKNOWN = ("not-implemented", "command-invalid")
UNDECODABLE = ("command-invalid", "illegal-argument")
OUT_OF_DOMAIN = ("illegal-argument",)


def _with(ctx: Context, test: Callable[[FieldPlan], bool]) -> tuple[str, ...]:
    """The one-segment server commands with a field for which ``test(field)`` holds (a named
    function: its name keys the context's cache)."""
    return ctx.one_segment_with(test, test.__name__)


def _optional(f: FieldPlan) -> bool:
    return not f.is_bit and not f.required


def _required(f: FieldPlan) -> bool:
    return f.required and not f.is_bit


def _enum(f: FieldPlan) -> bool:
    return bool(f.choices)


@operator(
    "class-code-unknown",
    "a command segment whose class code no class has (not-implemented: the peer tried to "
    "use functionality not implemented in its partner)",
    "replaces the command's class code with one the specification does not define",
    UNKNOWN,
    "execution",
    "encoding",
)
def class_code_unknown(src: Source, ctx: Context) -> Built:
    item = command(src, ctx)
    known = {c.code for c in ctx.spec.classes}
    code = next(c for c in range(src.byte(), 512) if c & 0xFF not in known) & 0xFF
    body = segment(ctx, item, [b for _, b in payload(ctx, item)])
    wire = _frame(ctx, bytes((code,)) + body[1:])
    return Built(
        (ctx.raw(wire, f"{item.name} with class code {code}"),), item.name, f"class {code}"
    )


@operator(
    "command-code-unknown",
    "a command segment whose code its class does not have (not-implemented)",
    "replaces the command's code with one its class does not define",
    UNKNOWN,
    "execution",
    "encoding",
)
def command_code_unknown(src: Source, ctx: Context) -> Built:
    item = command(src, ctx)
    layout = ctx.codec.types.layout(item.name, "command")
    known = {k[1] for k in ctx.codec.types.commands_by_code if k[0] == layout.class_code}
    code = next(c for c in range(1 + src.byte(), 512) if c & 0xFF not in known) & 0xFF
    body = segment(ctx, item, [b for _, b in payload(ctx, item)])
    wire = _frame(ctx, body[:1] + bytes((code,)) + body[2:])
    return Built((ctx.raw(wire, f"{item.name} with code {code}"),), item.name, f"code {code}")


@operator(
    "packing-flags-lie",
    "packing flags that say a field is present whose octets are not sent (the command "
    "segment cannot be decoded: command-invalid)",
    "sets the flag of a field the command leaves out, sending no octets for it",
    UNDECODABLE,
    "execution",
    "encoding",
)
def packing_flags_lie(src: Source, ctx: Context) -> Built:
    names = _with(ctx, _optional)
    item = command(src, ctx, names)
    layout = ctx.codec.types.layout(item.name, "command")
    absent = [f for f in layout.fields if not f.is_bit and item[f.name] is None]
    if not absent:  # every optional field was drawn: leave the last one out
        last = [f for f in layout.fields if not f.is_bit and not f.required][-1]
        item = dataclasses.replace(item, fields={**item.fields, last.name: None})
        absent = [last]
    claimed = src.pick(tuple(absent))
    sent = [f.index for f in layout.fields if item[f.name] not in (None, False)]
    flags = raw.flags([*sent, claimed.index], layout.pack)
    body = segment(ctx, item, [b for _, b in payload(ctx, item)], flags)
    label = f"{item.name} claiming {claimed.name} without its octets"
    return Built((ctx.raw(_frame(ctx, body), label),), item.name, f"flag of {claimed.name}")


def _sized(f: FieldPlan) -> bool:
    return f.type is not None and not f.type.fixed and f.type.kind in ("text", "binary")


@operator(
    "size-lies",
    "a str8, str16 or vbin field whose size prefix runs past the end of the command segment "
    "(command-invalid)",
    "makes a variable-width field's size larger than all the octets after it",
    UNDECODABLE,
    "execution",
    "encoding",
)
def size_lies(src: Source, ctx: Context) -> Built:
    item = command(src, ctx, _with(ctx, _sized))
    layout = ctx.codec.types.layout(item.name, "command")
    victim = src.pick(tuple(f for f in layout.fields if _sized(f)))
    value = item[victim.name] if item[victim.name] is not None else ""
    fields = dict(item.fields)
    fields[victim.name] = value
    for f in layout.fields:  # nothing optional after it: the lie runs past the end
        if f.index > victim.index and not f.required:
            fields[f.name] = None
    item = dataclasses.replace(item, fields=fields)
    parts = payload(ctx, item)
    at = next(i for i, (f, _) in enumerate(parts) if f.name == victim.name)
    assert victim.type is not None
    width = victim.type.width
    data = parts[at][1][width:]
    after = sum(len(b) for _, b in parts[at + 1 :])
    size = min(len(data) + after + 1 + src.below(200), (1 << (8 * width)) - 1)
    pieces = [b for _, b in parts]
    pieces[at] = raw.sized(data, width, size)
    body = segment(ctx, item, pieces)
    label = f"{item.name} whose {victim.name} claims {size} octets, {len(data) + after} follow"
    return Built((ctx.raw(_frame(ctx, body), label),), item.name, f"size of {victim.name}")


def _sequence_set(f: FieldPlan) -> bool:
    return f.type is not None and f.type.kind == "sequence-set"


@operator(
    "sequence-set-inverted",
    "a sequence-set range whose upper end comes before its lower one in serial arithmetic "
    "(the ranges of a sequence-set run from lower to upper: illegal-argument)",
    "sends a range (lower, upper) with upper before lower",
    OUT_OF_DOMAIN,
    "execution",
    "encoding",
)
def sequence_set_inverted(src: Source, ctx: Context) -> Built:
    item = command(src, ctx, _with(ctx, _sequence_set))
    layout = ctx.codec.types.layout(item.name, "command")
    victim = src.pick(tuple(f for f in layout.fields if _sequence_set(f)))
    lower = 1 + src.uint(16)
    upper = (lower - 1 - src.below(1000)) & 0xFFFFFFFF
    fields = {**item.fields, victim.name: [(0, 0)]}  # present, replaced below
    item = dataclasses.replace(item, fields=fields)
    pieces = [
        raw.sequence_set([(lower, upper)]) if f.name == victim.name else b
        for f, b in payload(ctx, item)
    ]
    body = segment(ctx, item, pieces)
    label = f"{item.name} with {victim.name} ({lower}, {upper})"
    return Built((ctx.raw(_frame(ctx, body), label),), item.name, f"{victim.name} inverted")


@operator(
    "enum-out-of-range",
    "a field of an enum domain with a value that is none of its choices (illegal-argument: "
    "the argument does not fall within the specified domain)",
    "replaces an enum field's value with one its domain does not list",
    OUT_OF_DOMAIN,
    "execution",
    "encoding",
)
def enum_out_of_range(src: Source, ctx: Context) -> Built:
    item = command(src, ctx, _with(ctx, _enum))
    layout = ctx.codec.types.layout(item.name, "command")
    victim = src.pick(tuple(f for f in layout.fields if f.choices))
    assert victim.type is not None
    top = (1 << (8 * victim.type.width)) - 1
    taken = set(victim.choices.values())
    value = next(v for v in range(max(taken) + 1 + src.below(16), top + 2) if v not in taken) & top
    fields = {**item.fields, victim.name: src.pick(tuple(taken))}
    item = dataclasses.replace(item, fields=fields)
    pieces = [
        value.to_bytes(victim.type.width, "big") if f.name == victim.name else b
        for f, b in payload(ctx, item)
    ]
    body = segment(ctx, item, pieces)
    label = f"{item.name} with {victim.name}={value}"
    return Built((ctx.raw(_frame(ctx, body), label),), item.name, f"{victim.name}={value}")


@operator(
    "required-field-missing",
    "a command without a field its definition marks required (the command is malformed: "
    "illegal-argument, or command-invalid)",
    "clears a required field's packing flag and leaves its octets out",
    ("illegal-argument", "command-invalid"),
    "execution",
    "encoding",
)
def required_field_missing(src: Source, ctx: Context) -> Built:
    item = command(src, ctx, _with(ctx, _required))
    layout = ctx.codec.types.layout(item.name, "command")
    victim = src.pick(tuple(f for f in layout.fields if f.required and not f.is_bit))
    parts = [(f, b) for f, b in payload(ctx, item) if f.name != victim.name]
    flags = raw.flags([f.index for f, _ in parts], layout.pack)
    body = segment(ctx, item, [b for _, b in parts], flags)
    label = f"{item.name} without its required {victim.name}"
    return Built((ctx.raw(_frame(ctx, body), label),), item.name, f"{victim.name} left out")


def _frame(ctx: Context, body: bytes) -> bytes:
    """A command segment in one whole frame on the command track."""
    kinds, tracks = ctx.codec.types.segment_types, ctx.codec.types.tracks
    return raw.frame(body, type=kinds["command"], track=tracks["command"])
