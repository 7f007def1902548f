"""The AMQP 1.0 specification as an immutable model, loaded from the XML of its parts.

1.0 is published as separate parts (``<amqp name="types">``, ``transport``, ``messaging``,
``security``, ``transactions``), each split into document sections. The parts define **types**
of three classes:

* ``primitive``: a wire type with one or more **encodings** (constructor code, category
  fixed/variable/compound/array, width in octets of the value or of its size prefix);
* ``composite``: a described list with ordered **fields**, a **descriptor** (symbolic name and
  numeric code, the latter a ``(domain, id)`` pair from ``0x00000000:0x00000070``);
* ``restricted``: a named restriction of a source type, with optional **choices** and, for the
  message sections, a descriptor.

plus **definitions** (named constants such as ``PORT``). Types name the archetypes they
``provide`` (``frame``, ``section``, ``outcome``...), and composite fields may instead of a type
name give ``*`` plus the archetype they ``require``. Field types and restricted sources are
resolved across all loaded parts; the descriptive ``<doc>`` text of the messaging part is kept
on sections, types, fields and definitions.

Every object is a frozen, slotted dataclass; sequences are tuples and lookup tables are
read-only mapping proxies.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TypeVar, cast, get_args, overload

from lxml import etree

from ..protocols import DATA, paths_of
from ..xmlfile import attr, children, fail, line_of, local, parse

__all__ = [
    "ANY_TYPE",
    "DATA_DIR",
    "DEFAULT_PARTS",
    "Category",
    "CompositeType",
    "Definition",
    "Descriptor",
    "Encoding",
    "Field",
    "Part",
    "PrimitiveType",
    "RestrictedType",
    "Section",
    "Spec100",
    "Type",
    "TypeClass",
    "load",
    "load_1_0",
]

DATA_DIR = DATA
DEFAULT_PARTS = paths_of("1.0", "amqp10")  # types, transport, messaging, security, transactions

Category = Literal["fixed", "variable", "compound", "array"]
TypeClass = Literal["primitive", "composite", "restricted"]
ANY_TYPE = "*"  # a field or source of any type, constrained only by what it requires

_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Section:
    """A document section of a part (``performatives``, ``message-format``...)."""

    name: str
    part: str
    label: str | None
    title: str | None
    doc: str | None


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    label: str | None
    source: str
    sections: tuple[Section, ...]


@dataclass(frozen=True, slots=True)
class Encoding:
    """One constructor of a primitive type.

    ``width`` is the value's size in octets for ``fixed``, else the size of its length (and
    count) prefix.
    """

    name: str | None
    code: int
    category: Category
    width: int


@dataclass(frozen=True, slots=True)
class Descriptor:
    name: str
    code: tuple[int, int]

    @property
    def value(self) -> int:
        """The code as the single ulong sent on the wire."""
        return (self.code[0] << 32) | self.code[1]


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    requires: tuple[str, ...]
    default: str | None
    mandatory: bool
    multiple: bool
    label: str | None
    doc: str | None


@dataclass(frozen=True, slots=True)
class _TypeBase:
    """What every type has: where it is defined and which archetypes it provides."""

    name: str
    part: str
    section: str
    label: str | None
    doc: str | None
    provides: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PrimitiveType(_TypeBase):
    type_class: TypeClass = field(default="primitive", init=False)
    encodings: tuple[Encoding, ...]


@dataclass(frozen=True, slots=True)
class CompositeType(_TypeBase):
    type_class: TypeClass = field(default="composite", init=False)
    source: str
    descriptor: Descriptor
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class RestrictedType(_TypeBase):
    type_class: TypeClass = field(default="restricted", init=False)
    source: str
    choices: Mapping[str, str] = field(hash=False)
    descriptor: Descriptor | None


Type = PrimitiveType | CompositeType | RestrictedType


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    value: str
    part: str
    section: str
    label: str | None
    doc: str | None


def _proxy(pairs: Iterable[tuple[_K, _V]]) -> Mapping[_K, _V]:
    return MappingProxyType(dict(pairs))


def _lookup(table: Mapping[_K, _V], key: _K, what: str) -> _V:
    try:
        return table[key]
    except KeyError:
        raise KeyError(f"no {what} {key!r} in AMQP 1.0") from None


@dataclass(frozen=True, slots=True, eq=False)
class Spec100:
    """The loaded 1.0 specification: parts, types by name or descriptor, definitions."""

    protocol: str = field(default="1.0", init=False)
    sources: tuple[str, ...]
    parts: tuple[Part, ...]
    types: tuple[Type, ...]
    definitions: tuple[Definition, ...]
    _index: _Index = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # The only write to a frozen instance: its own lookup tables, derived from the tuples.
        object.__setattr__(self, "_index", _build_index(self))

    def __repr__(self) -> str:
        return f"<Spec100 AMQP 1.0 from {', '.join(self.sources)}>"

    @property
    def document_sections(self) -> tuple[Section, ...]:
        """The ``<section>`` elements of every part, in order."""
        return tuple(s for p in self.parts for s in p.sections)

    @property
    def sections(self) -> tuple[Type, ...]:
        """The message sections: the types that provide ``section`` (``header`` to ``footer``)."""
        return tuple(t for t in self.types if "section" in t.provides)

    @property
    def descriptors(self) -> tuple[Descriptor, ...]:
        return tuple(d for d in map(_descriptor, self.types) if d is not None)

    def type(self, name: str) -> Type:
        return _lookup(self._index.names, name, "type")

    def by_descriptor(self, key: tuple[int, int] | int | str) -> CompositeType | RestrictedType:
        """A described type by ``(domain, id)``, by its ulong code, or by symbolic name."""
        if isinstance(key, str):
            return _lookup(self._index.symbols, key, "descriptor")
        if isinstance(key, int):
            key = (key >> 32, key & 0xFFFFFFFF)
        return _lookup(self._index.codes, key, "descriptor code")

    @overload
    def types_of_class(self, type_class: Literal["primitive"]) -> tuple[PrimitiveType, ...]: ...
    @overload
    def types_of_class(self, type_class: Literal["composite"]) -> tuple[CompositeType, ...]: ...
    @overload
    def types_of_class(self, type_class: Literal["restricted"]) -> tuple[RestrictedType, ...]: ...
    @overload
    def types_of_class(self, type_class: str) -> tuple[Type, ...]: ...

    def types_of_class(self, type_class: str) -> tuple[Type, ...]:
        """The types of one class, ``primitive``, ``composite`` or ``restricted``."""
        if type_class not in get_args(TypeClass):
            raise ValueError(f"no type class {type_class!r}; one of {get_args(TypeClass)}")
        return tuple(t for t in self.types if t.type_class == type_class)

    def definition(self, name: str) -> Definition:
        return _lookup(self._index.definitions, name, "definition")

    def error_conditions(self) -> dict[str, tuple[str, str]]:
        """Every error condition: choice name -> (its symbol, the restricted type defining it:
        ``amqp-error``, ``connection-error``...). A name two types share (``redirect``) keeps
        the first: the connection's."""
        found: dict[str, tuple[str, str]] = {}
        for t in self.types_of_class("restricted"):
            if "error-condition" in t.provides:
                for name, symbol in t.choices.items():
                    found.setdefault(name, (symbol, t.name))
        return found

    def inventory(self) -> dict[str, int]:
        """Counts of everything the model holds, for reports and cross-checks against the XML."""
        primitives, composites = self.types_of_class("primitive"), self.types_of_class("composite")
        return {
            "parts": len(self.parts),
            "sections": len(self.document_sections),
            "primitive_types": len(primitives),
            "encodings": sum(len(t.encodings) for t in primitives),
            "composite_types": len(composites),
            "restricted_types": len(self.types_of_class("restricted")),
            "fields": sum(len(t.fields) for t in composites),
            "descriptors": len(self.descriptors),
            "definitions": len(self.definitions),
        }


@dataclass(frozen=True, slots=True)
class _Index:
    names: Mapping[str, Type]
    codes: Mapping[tuple[int, int], CompositeType | RestrictedType]
    symbols: Mapping[str, CompositeType | RestrictedType]
    definitions: Mapping[str, Definition]


def _descriptor(t: Type) -> Descriptor | None:
    return None if isinstance(t, PrimitiveType) else t.descriptor


def _build_index(spec: Spec100) -> _Index:
    described = [
        (t.descriptor, t)
        for t in spec.types
        if not isinstance(t, PrimitiveType) and t.descriptor is not None
    ]
    return _Index(
        names=_proxy((t.name, t) for t in spec.types),
        codes=_proxy((d.code, t) for d, t in described),
        symbols=_proxy((d.name, t) for d, t in described),
        definitions=_proxy((d.name, d) for d in spec.definitions),
    )


# --- loading -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Where:
    """Where an element was read: file, part and section, for the model and for errors."""

    path: str
    part: str
    section: str


def _unique(items: Iterable[tuple[object, str, etree._Element]], what: str) -> None:
    """Fail at the second of two elements sharing a key, across files."""
    seen: dict[object, tuple[str, etree._Element]] = {}
    for key, path, el in items:
        if key in seen:
            first_path, first = seen[key]
            at = (
                f"line {line_of(first)}" if first_path == path else f"{first_path}:{line_of(first)}"
            )
            fail(path, el, f"duplicate {what} {_show(key)} (first at {at})")
        seen[key] = (path, el)


def _show(key: object) -> str:
    if isinstance(key, tuple):
        return ":".join(f"0x{part:08x}" for part in key)
    return hex(key) if isinstance(key, int) else repr(key)


def _int(path: str, el: etree._Element, raw: str, what: str) -> int:
    try:
        return int(raw, 16) if raw.lower().startswith("0x") else int(raw, 10)
    except ValueError:
        fail(path, el, f"{what} is not an integer: {raw!r}")


def _flag(path: str, el: etree._Element, name: str) -> bool:
    raw = el.get(name, "false")
    if raw not in ("true", "false"):
        fail(path, el, f"'{name}' must be true or false, not {raw!r}")
    return raw == "true"


def _names(raw: str | None) -> tuple[str, ...]:
    """A comma-separated list such as ``provides="delivery-state, outcome"``."""
    return tuple(n.strip() for n in (raw or "").split(",") if n.strip())


def _flatten(el: etree._Element) -> Iterator[str]:
    # An empty <xref name="header"/> stands for the word it links to: keep the word.
    if local(el) == "xref" and not el.text and not len(el):
        yield el.get("choice") or el.get("name") or ""
    yield el.text or ""
    for child in el:
        yield from _flatten(child)
        yield child.tail or ""


def _doc(el: etree._Element) -> str | None:
    """The text of the element's ``<doc>`` children, one paragraph per doc."""
    docs = [" ".join("".join(_flatten(d)).split()) for d in children(el, "doc")]
    return "\n\n".join(docs) if docs else None


def _descriptor_of(path: str, el: etree._Element) -> Descriptor | None:
    found = children(el, "descriptor")
    if not found:
        return None
    d, raw = found[0], attr(found[0], "code", path)
    halves = raw.split(":")
    if len(halves) != 2:
        fail(path, d, f"descriptor code {raw!r} is not of the form 0xDOMAIN:0xID")
    domain, ident = (_int(path, d, h, "descriptor code half") for h in halves)
    if not (0 <= domain <= 0xFFFFFFFF and 0 <= ident <= 0xFFFFFFFF):
        fail(path, d, f"descriptor code {raw!r} has a half wider than 32 bits")
    return Descriptor(attr(d, "name", path), (domain, ident))


def _encoding(path: str, el: etree._Element) -> Encoding:
    category = attr(el, "category", path)
    if category not in get_args(Category):
        fail(path, el, f"unknown encoding category {category!r}")
    code = _int(path, el, attr(el, "code", path), "encoding code")
    width = _int(path, el, attr(el, "width", path), "encoding width")
    return Encoding(el.get("name"), code, cast(Category, category), width)


def _fields(where: _Where, el: etree._Element, known: set[str]) -> tuple[Field, ...]:
    path, owner, els = where.path, attr(el, "name", where.path), children(el, "field")
    _unique(((attr(f, "name", path), path, f) for f in els), f"field in '{owner}'")
    return tuple(_field(path, owner, f, known) for f in els)


def _field(path: str, owner: str, el: etree._Element, known: set[str]) -> Field:
    name, type_name = attr(el, "name", path), attr(el, "type", path)
    if type_name != ANY_TYPE and type_name not in known:
        fail(path, el, f"field '{name}' of '{owner}' has unknown type '{type_name}'")
    return Field(
        name=name,
        type=type_name,
        requires=_names(el.get("requires")),
        default=el.get("default"),
        mandatory=_flag(path, el, "mandatory"),
        multiple=_flag(path, el, "multiple"),
        label=el.get("label"),
        doc=_doc(el),
    )


def _source(where: _Where, el: etree._Element, known: set[str]) -> str:
    source = attr(el, "source", where.path)
    if source != ANY_TYPE and source not in known:
        fail(where.path, el, f"type '{el.get('name')}' has unknown source type '{source}'")
    return source


_Base = tuple[str, str, str, str | None, str | None, tuple[str, ...]]


def _base(where: _Where, el: etree._Element) -> _Base:
    """The fields of :class:`_TypeBase`, in order."""
    name, label, provides = attr(el, "name", where.path), el.get("label"), el.get("provides")
    return name, where.part, where.section, label, _doc(el), _names(provides)


def _read_type(where: _Where, el: etree._Element, known: set[str]) -> Type:
    path, base = where.path, _base(where, el)
    type_class = attr(el, "class", path)
    if type_class == "primitive":
        return PrimitiveType(*base, tuple(_encoding(path, e) for e in children(el, "encoding")))
    if type_class == "composite":
        descriptor = _descriptor_of(path, el)
        if descriptor is None:
            fail(path, el, f"composite type '{base[0]}' has no descriptor")
        return CompositeType(
            *base, _source(where, el, known), descriptor, _fields(where, el, known)
        )
    if type_class == "restricted":
        choices = children(el, "choice")
        _unique(((attr(c, "name", path), path, c) for c in choices), f"choice in '{base[0]}'")
        pairs = ((attr(c, "name", path), attr(c, "value", path)) for c in choices)
        return RestrictedType(
            *base, _source(where, el, known), _proxy(pairs), _descriptor_of(path, el)
        )
    fail(path, el, f"unknown type class {type_class!r}")


def _read_part(path: str, root: etree._Element) -> Part:
    name = attr(root, "name", path)
    sections = tuple(
        Section(attr(s, "name", path), name, s.get("label"), s.get("title"), _doc(s))
        for s in children(root, "section")
    )
    return Part(name, root.get("label"), path, sections)


def _elements(path: str, root: etree._Element, tag: str) -> list[tuple[_Where, etree._Element]]:
    """The ``tag`` elements of every section of a part, each with where it sits."""
    part = attr(root, "name", path)
    return [
        (_Where(path, part, attr(s, "name", path)), e)
        for s in children(root, "section")
        for e in children(s, tag)
    ]


def _read_definition(where: _Where, el: etree._Element) -> Definition:
    name, value = attr(el, "name", where.path), attr(el, "value", where.path)
    return Definition(name, value, where.part, where.section, el.get("label"), _doc(el))


def _check_codes(types: tuple[Type, ...], els: list[tuple[_Where, etree._Element]]) -> None:
    """Descriptors and constructor codes identify a type on the wire: each must be unique."""
    described = [
        (d, w.path, children(e, "descriptor")[0])
        for t, (w, e) in zip(types, els, strict=True)
        if (d := _descriptor(t)) is not None
    ]
    _unique(((d.code, path, e) for d, path, e in described), "descriptor code")
    _unique(((d.name, path, e) for d, path, e in described), "descriptor name")
    encodings = (
        (code.code, w.path, enc)
        for t, (w, e) in zip(types, els, strict=True)
        if isinstance(t, PrimitiveType)
        for code, enc in zip(t.encodings, children(e, "encoding"), strict=True)
    )
    _unique(encodings, "encoding code")


def _roots(paths: Sequence[str | Path] | None) -> list[tuple[str, etree._Element]]:
    roots = [(str(p), parse(p)) for p in (DEFAULT_PARTS if paths is None else paths)]
    if not any(root.get("name") == "types" for _, root in roots):
        # A user's own part uses primitive types it does not define: take them from the
        # vendored types part, loaded first so that any clash is reported in the user's file.
        types_path = str(DEFAULT_PARTS[0])
        roots.insert(0, (types_path, parse(types_path)))
    return roots


def load_1_0(paths: Sequence[str | Path] | None = None) -> Spec100:
    """Load 1.0 parts (default: the five vendored ones); SpecError if they are unusable.

    Type references are resolved across all the given parts. Without a ``types`` part among
    them, the vendored one is loaded too, and appears in ``sources``.
    """
    roots = _roots(paths)
    _unique(((attr(r, "name", p), p, r) for p, r in roots), "part")
    type_els = [x for p, r in roots for x in _elements(p, r, "type")]
    _unique(((attr(e, "name", w.path), w.path, e) for w, e in type_els), "type")
    known = {attr(e, "name", w.path) for w, e in type_els}
    types = tuple(_read_type(w, e, known) for w, e in type_els)
    _check_codes(types, type_els)
    definition_els = [x for p, r in roots for x in _elements(p, r, "definition")]
    _unique(((attr(e, "name", w.path), w.path, e) for w, e in definition_els), "definition")
    return Spec100(
        sources=tuple(p for p, _ in roots),
        parts=tuple(_read_part(p, r) for p, r in roots),
        types=types,
        definitions=tuple(_read_definition(w, e) for w, e in definition_els),
    )


@functools.cache  # one model per protocol and process
def load(protocol: str = "1.0") -> Spec100:
    """The model of a protocol of this family from its bundled parts (ValueError for another
    family's)."""
    return load_1_0(paths_of(protocol, "amqp10"))
