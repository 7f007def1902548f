"""What the codec reads from the model: every wire type with its code and width, what its octets
hold; every struct, control and command laid out as its fields with their types, their enum
choices and whether they are required; the segment types and tracks of the frame header.

Nothing here names a control, command or struct: a new one in the XML is encoded and decoded
with no code change. What the model cannot say is what a type's octets *mean* (an int8 is
signed, a str8 is UTF-8): that is :data:`MEANINGS`, one entry per type of the XML, and the
codec refuses to load a model with a type it has no meaning for.

Two facts of the wire format are not in the XML: controls and commands are encoded as structs
with two octets of packing flags and no size (:data:`INVOCATION_PACK`), and a type code implies
its width (:func:`code_width`), so that a reader can step over a type it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..model import Command as CommandDecl
from ..model import Control as ControlDecl
from ..model import Field, Spec010
from ..model import Struct as StructDecl
from ..model import Type as TypeDecl
from .errors import LocalProtocolError

__all__ = [
    "INVOCATION_PACK",
    "MEANINGS",
    "SESSION_HEADER",
    "FieldPlan",
    "Layout",
    "TypeSystem",
    "WireType",
    "code_width",
]

INVOCATION_PACK = 2  # octets of packing flags before a control's or command's arguments
SESSION_HEADER = "session.header"  # the struct between a command's code and its arguments

Kind = Literal[
    "integer",
    "float",
    "boolean",
    "text",
    "binary",
    "uuid",
    "decimal",
    "void",
    "bit",
    "map",
    "list",
    "array",
    "struct32",
    "sequence-set",
    "byte-ranges",
]

# what each type's octets hold: (kind, detail); for an integer the detail says signed or not,
# for text its character set (Python's codec name)
MEANINGS: Mapping[str, tuple[Kind, str]] = MappingProxyType(
    {
        "bin8": ("binary", ""),
        "int8": ("integer", "signed"),
        "uint8": ("integer", "unsigned"),
        "char": ("text", "iso8859-15"),
        "boolean": ("boolean", ""),
        "bin16": ("binary", ""),
        "int16": ("integer", "signed"),
        "uint16": ("integer", "unsigned"),
        "bin32": ("binary", ""),
        "int32": ("integer", "signed"),
        "uint32": ("integer", "unsigned"),
        "float": ("float", ">f"),
        "char-utf32": ("text", "utf-32-be"),
        "sequence-no": ("integer", "unsigned"),
        "bin64": ("binary", ""),
        "int64": ("integer", "signed"),
        "uint64": ("integer", "unsigned"),
        "double": ("float", ">d"),
        "datetime": ("integer", "signed"),  # POSIX time_t
        "bin128": ("binary", ""),
        "uuid": ("uuid", ""),
        "bin256": ("binary", ""),
        "bin512": ("binary", ""),
        "bin1024": ("binary", ""),
        "vbin8": ("binary", ""),
        "str8-latin": ("text", "iso8859-15"),
        "str8": ("text", "utf-8"),
        "str8-utf16": ("text", "utf-16-be"),
        "vbin16": ("binary", ""),
        "str16-latin": ("text", "iso8859-15"),
        "str16": ("text", "utf-8"),
        "str16-utf16": ("text", "utf-16-be"),
        "byte-ranges": ("byte-ranges", ""),
        "sequence-set": ("sequence-set", ""),
        "vbin32": ("binary", ""),
        "map": ("map", ""),
        "list": ("list", ""),
        "array": ("array", ""),
        "struct32": ("struct32", ""),
        "bin40": ("binary", ""),
        "dec32": ("decimal", ""),
        "bin72": ("binary", ""),
        "dec64": ("decimal", ""),
        "void": ("void", ""),
        "bit": ("bit", ""),
    }
)


def code_width(code: int) -> tuple[bool, int] | None:
    """What a type code's range says of its values: (fixed, octets) for a fixed width, (False,
    octets of the size prefix) for a variable width; None for the reserved ranges 0xb0-0xbf
    and 0xe0-0xef."""
    high = code >> 4
    if high < 8:
        return True, 1 << high
    if high in (0x8, 0x9, 0xA):
        return False, (1, 2, 4)[high - 8]
    return {0xC: (True, 5), 0xD: (True, 9), 0xF: (True, 0)}.get(high)


@dataclass(frozen=True, slots=True)
class WireType:
    """A type as the codec uses it: ``width`` is the value's octets for a fixed type, its size
    prefix's for a variable one."""

    name: str
    code: int | None
    fixed: bool
    width: int
    kind: Kind
    detail: str

    @property
    def signed(self) -> bool:
        return self.detail == "signed"


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """One field: its wire type (None for a struct-typed field, whose struct is ``struct``),
    whether it is required, its domain's enum choices (empty: any value of the type)."""

    name: str
    index: int
    type: WireType | None
    struct: str | None
    required: bool
    choices: Mapping[str, int] = field(hash=False)

    @property
    def is_bit(self) -> bool:
        return self.type is not None and self.type.kind == "bit"


@dataclass(frozen=True, slots=True)
class Layout:
    """A struct, control or command as laid out on the wire: ``size`` octets of size prefix
    (0: none), then the code (a coded struct's, in ``class_code`` and ``code``), ``pack``
    octets of packing flags, the fields present."""

    name: str
    kind: Literal["struct", "control", "command"]
    class_code: int
    code: int | None
    size: int
    pack: int
    fields: tuple[FieldPlan, ...]
    by_name: Mapping[str, FieldPlan] = field(hash=False, repr=False)


class TypeSystem:
    """The 0-10 types and layouts of one loaded specification."""

    def __init__(self, spec: Spec010) -> None:
        self.spec = spec
        self.types: dict[str, WireType] = {t.name: _wire_type(t) for t in spec.types}
        self.by_code: dict[int, WireType] = {
            t.code: t for t in self.types.values() if t.code is not None
        }
        self.segment_types: Mapping[str, int] = spec.domain("segment-type").choices
        self.tracks: Mapping[str, int] = spec.domain("track").choices
        self.layouts: dict[str, Layout] = {}
        for s in spec.structs:
            self.layouts[s.qualified] = self._layout(s, "struct", s.size, s.pack, s.code)
        for c in spec.controls:
            self.layouts[c.qualified] = self._layout(c, "control", 0, INVOCATION_PACK, c.code)
        for m in spec.commands:
            self.layouts[m.qualified] = self._layout(m, "command", 0, INVOCATION_PACK, m.code)
        self.structs_by_code: dict[tuple[int, int], str] = {
            (s.class_code, s.code): s.name
            for s in self.layouts.values()
            if s.kind == "struct" and s.code is not None
        }
        self.controls_by_code: dict[tuple[int, int], str] = {
            (c.class_code, c.code): c.name
            for c in self.layouts.values()
            if c.kind == "control" and c.code is not None
        }
        self.commands_by_code: dict[tuple[int, int], str] = {
            (c.class_code, c.code): c.name
            for c in self.layouts.values()
            if c.kind == "command" and c.code is not None
        }
        self.session_header = self.layout(SESSION_HEADER)

    def layout(self, name: str, kind: str | None = None) -> Layout:
        """The layout of a struct, control or command by its qualified name."""
        found = self.layouts.get(name)
        if found is None or (kind is not None and found.kind != kind):
            raise LocalProtocolError(f"no {kind or 'struct, control or command'} {name!r} in 0-10")
        return found

    def type(self, name: str) -> WireType:
        found = self.types.get(name)
        if found is None:
            raise LocalProtocolError(f"no type {name!r} in AMQP 0-10")
        return found

    def segment_type(self, name: str) -> int:
        return self.segment_types[name]

    def track(self, name: str) -> int:
        return self.tracks[name]

    def _layout(
        self,
        decl: StructDecl | ControlDecl | CommandDecl,
        kind: Literal["struct", "control", "command"],
        size: int,
        pack: int,
        code: int | None,
    ) -> Layout:
        if pack and len(decl.fields) > 8 * pack:  # no flags at all: every field is sent
            raise LocalProtocolError(f"{decl.qualified}: {len(decl.fields)} fields, {pack} flags")
        plans = tuple(self._field(i, f) for i, f in enumerate(decl.fields))
        class_code = self.spec.amqp_class(decl.class_name).code
        return Layout(
            decl.qualified,
            kind,
            class_code,
            code,
            size,
            pack,
            plans,
            MappingProxyType({p.name: p for p in plans}),
        )

    def _field(self, index: int, f: Field) -> FieldPlan:
        ref = f.ref
        if ref.kind == "struct":
            return FieldPlan(f.name, index, None, ref.name, f.required, MappingProxyType({}))
        assert ref.primitive is not None  # a type or a domain resolves to a type
        choices = self.spec.domain(ref.name).choices if ref.kind == "domain" else {}
        return FieldPlan(
            f.name,
            index,
            self.types[ref.primitive],
            None,
            f.required,
            MappingProxyType(dict(choices)),
        )


def _wire_type(t: TypeDecl) -> WireType:
    meaning = MEANINGS.get(t.name)
    if meaning is None:
        raise LocalProtocolError(f"the 0-10 codec does not know what a {t.name!r} holds")
    width = t.fixed_width if t.is_fixed else t.variable_width
    assert width is not None  # the loader requires one of the two
    return WireType(t.name, t.code, t.is_fixed, width, meaning[0], meaning[1])
