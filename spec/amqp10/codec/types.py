"""What the codec reads from the model: every constructor code with its type, category and width;
what each restricted type stands for on the wire; each composite's fields, their primitive types
and their defaults as values.

Nothing here names a performative: a new composite or encoding in the XML is encoded and
decoded with no code change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model import (
    ANY_TYPE,
    CompositeType,
    Encoding,
    Field,
    PrimitiveType,
    RestrictedType,
    Spec100,
)
from .values import INTEGERS, Symbol, UByte, UInt, ULong

__all__ = ["Constructor", "FieldInfo", "TypeSystem"]


@dataclass(frozen=True, slots=True)
class Constructor:
    """One format code: the primitive type it encodes and how (``width``: of the value for a
    fixed encoding, else of its size and count prefixes)."""

    code: int
    type: str
    category: str
    width: int
    name: str | None


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """A composite's field as the codec uses it: ``primitive`` is the type the value is sent
    as (None: a composite or any type, the value says); ``composite`` names the composite it
    must be; ``requires``, the archetypes an any-typed value must provide."""

    name: str
    type: str
    primitive: str | None
    composite: str | None
    requires: tuple[str, ...]
    mandatory: bool
    multiple: bool
    default: Any
    descriptor: int | None  # a restricted type with a descriptor (message sections)


class TypeSystem:
    """The 1.0 type system of one loaded specification."""

    def __init__(self, spec: Spec100) -> None:
        self.spec = spec
        primitives = spec.types_of_class("primitive")
        self.constructors: dict[int, Constructor] = {
            e.code: Constructor(e.code, t.name, e.category, e.width, e.name)
            for t in primitives
            for e in t.encodings
        }
        self.encodings: dict[str, tuple[Encoding, ...]] = {t.name: t.encodings for t in primitives}
        self.composites: dict[str, CompositeType] = {
            t.name: t for t in spec.types_of_class("composite")
        }
        # descriptor (numeric and symbolic) -> the described type's name
        self.described: dict[Any, str] = {}
        for t in spec.types:
            if not isinstance(t, PrimitiveType) and t.descriptor is not None:
                self.described[t.descriptor.value] = t.name
                self.described[t.descriptor.name] = t.name
        self.named = frozenset(t.name for t in spec.types)
        # archetype -> the types that provide it
        self.providers: dict[str, tuple[str, ...]] = {}
        for t in spec.types:
            for archetype in t.provides:
                self.providers[archetype] = (*self.providers.get(archetype, ()), t.name)
        self.fields: dict[str, tuple[FieldInfo, ...]] = {
            name: tuple(self._field(f) for f in t.fields) for name, t in self.composites.items()
        }

    # -- types -----------------------------------------------------------------------------

    def primitive_of(self, name: str) -> str | None:
        """The primitive type a named type is sent as (None: composite or any type)."""
        seen = set()
        while name not in self.encodings:
            if name == ANY_TYPE or name in seen:
                return None
            seen.add(name)
            t = self.spec.type(name)
            if not isinstance(t, RestrictedType):
                return None
            name = t.source
        return name

    def descriptor_of(self, name: str) -> int | None:
        t = self.spec.type(name)
        if isinstance(t, PrimitiveType) or t.descriptor is None:
            return None
        return t.descriptor.value

    def choices_of(self, name: str) -> Mapping[str, str]:
        """The choices of a restricted type and of the types it restricts, by name."""
        found: dict[str, str] = {}
        while name not in self.encodings and name != ANY_TYPE:
            t = self.spec.type(name)
            if not isinstance(t, RestrictedType):
                break
            found = {**t.choices, **found}
            name = t.source
        return found

    def value_of(self, primitive: str, text: str, choices: Mapping[str, str]) -> Any:
        """A value written in the XML (a default, a choice) as the codec holds it."""
        text = choices.get(text, text)
        if primitive in INTEGERS:
            value = int(text, 0)
            return {"uint": UInt, "ulong": ULong, "ubyte": UByte}.get(primitive, int)(value)
        if primitive == "boolean":
            return text == "true"
        if primitive == "symbol":
            return Symbol(text)
        return text

    def _field(self, f: Field) -> FieldInfo:
        primitive = None if f.type == ANY_TYPE else self.primitive_of(f.type)
        composite = f.type if f.type in self.composites else None
        default = None
        if f.default is not None and primitive is not None:
            default = self.value_of(primitive, f.default, self.choices_of(f.type))
        descriptor = None if f.type == ANY_TYPE else self.descriptor_of(f.type)
        return FieldInfo(
            f.name,
            f.type,
            primitive,
            composite,
            f.requires,
            f.mandatory,
            f.multiple,
            default,
            descriptor,
        )

    def provides(self, type_name: str, archetypes: tuple[str, ...]) -> bool:
        """Whether a type (or a primitive a restricted type of which provides it) fits."""
        return any(type_name in self.providers.get(a, ()) for a in archetypes)

    def primitives_providing(self, archetypes: tuple[str, ...]) -> set[str]:
        """The primitive types that, through a restricted type, provide one of ``archetypes``
        (``address`` is a string, a ``message-id`` a ulong, uuid, binary or string)."""
        found = set()
        for archetype in archetypes:
            for name in self.providers.get(archetype, ()):
                if name in self.composites or self.descriptor_of(name) is not None:
                    continue
                primitive = self.primitive_of(name)
                if primitive is not None:
                    found.add(primitive)
        return found
