"""The AMQP 0-10 specification as an immutable model, loaded from the 0-10 XML.

0-10 is organised differently from 0-8/0-9-1: a global list of wire **types** (each with a type
code and a fixed or variable width), a few **constants**, **domains** (named aliases of a type,
possibly with enum choices) at top level and inside classes, and **classes** holding
**structs** (packed field groups, some coded so that they can travel in a ``struct32`` or as a
segment header entry), **controls** (the connection/session layer, sent on the control track)
and **commands** (the execution layer; a command may carry header and body segments and return
a result struct). Each field's type is resolved at load time to a type, a domain or a struct,
with class scope first (``name`` in class ``exchange`` is ``exchange.name``).

The vendored XML is stripped of documentation, but ``<rule name=...>`` and
``<exception name=... error-code=...>`` markers remain: the model keeps them (rule names with
the dotted path of the element they sit in) so that conformance checks can cite them.

Every object is a frozen, slotted dataclass; sequences are tuples and lookup tables are
read-only mapping proxies, so a loaded :class:`Spec010` can be shared freely.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TypeVar

from lxml import etree

from ..protocols import paths_of
from ..xmlfile import attr, children, fail, line_of, parse

__all__ = [
    "DEFAULT_PATH",
    "AmqpClass",
    "Command",
    "Constant",
    "Control",
    "Domain",
    "ExceptionDecl",
    "Field",
    "Implement",
    "Role",
    "Rule",
    "Segments",
    "Spec010",
    "Struct",
    "Type",
    "TypeRef",
    "load",
    "load_0_10",
]

DEFAULT_PATH = paths_of("0-10", "amqp010")[0]

_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Type:
    """A wire type: fixed width in octets, or variable with a length prefix of that many octets."""

    name: str
    code: int | None
    fixed_width: int | None
    variable_width: int | None

    @property
    def is_fixed(self) -> bool:
        return self.fixed_width is not None


@dataclass(frozen=True, slots=True)
class Constant:
    name: str
    value: int


@dataclass(frozen=True, slots=True)
class Domain:
    """A named alias of a wire type; ``class_name`` is None for the global ones."""

    name: str
    class_name: str | None
    type: str
    choices: Mapping[str, int] = field(hash=False)

    @property
    def qualified(self) -> str:
        return self.name if self.class_name is None else f"{self.class_name}.{self.name}"


@dataclass(frozen=True, slots=True)
class TypeRef:
    """What a field's type attribute resolved to; ``primitive`` is the wire type unless a struct."""

    kind: Literal["type", "domain", "struct"]
    name: str
    primitive: str | None


@dataclass(frozen=True, slots=True)
class Rule:
    """A ``<rule>`` marker: its name, the dotted path of its owner, and its line in the file."""

    name: str
    where: str
    line: int | None


@dataclass(frozen=True, slots=True)
class ExceptionDecl:
    """An ``<exception>``: the condition's name and the execution error-code it raises."""

    name: str
    error_code: str


@dataclass(frozen=True, slots=True)
class Implement:
    role: str
    handle: str


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    implement: str


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    ref: TypeRef
    required: bool
    default: str | None
    rules: tuple[Rule, ...]
    exceptions: tuple[ExceptionDecl, ...]


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    class_name: str
    code: int | None
    size: int
    pack: int
    fields: tuple[Field, ...]
    rules: tuple[Rule, ...]

    @property
    def qualified(self) -> str:
        return f"{self.class_name}.{self.name}"


@dataclass(frozen=True, slots=True)
class Segments:
    """The segments following a command: header entries (qualified struct names) and body."""

    header: bool
    header_required: bool
    entries: tuple[str, ...]
    body: bool


@dataclass(frozen=True, slots=True)
class _Member:
    """What controls and commands share."""

    name: str
    class_name: str
    code: int
    fields: tuple[Field, ...]
    responses: tuple[str, ...]
    implements: tuple[Implement, ...]
    rules: tuple[Rule, ...]

    @property
    def qualified(self) -> str:
        return f"{self.class_name}.{self.name}"


@dataclass(frozen=True, slots=True)
class Control(_Member):
    """A control: connection and session handshakes, sent on the control track."""


@dataclass(frozen=True, slots=True)
class Command(_Member):
    """A command; ``result`` is the qualified name of the struct it returns, if any."""

    exceptions: tuple[ExceptionDecl, ...]
    segments: Segments | None
    result: str | None

    @property
    def has_header(self) -> bool:
        return self.segments is not None and self.segments.header

    @property
    def has_body(self) -> bool:
        return self.segments is not None and self.segments.body


@dataclass(frozen=True, slots=True)
class AmqpClass:
    name: str
    code: int
    roles: tuple[Role, ...]
    domains: tuple[Domain, ...]
    structs: tuple[Struct, ...]
    controls: tuple[Control, ...]
    commands: tuple[Command, ...]
    rules: tuple[Rule, ...]


def _proxy(pairs: Iterable[tuple[_K, _V]]) -> Mapping[_K, _V]:
    return MappingProxyType(dict(pairs))


def _lookup(table: Mapping[_K, _V], key: _K, what: str) -> _V:
    try:
        return table[key]
    except KeyError:
        raise KeyError(f"no {what} {key!r} in AMQP 0-10") from None


@dataclass(frozen=True, slots=True)
class _Index:
    """Read-only lookup tables, built once from the tuples of a :class:`Spec010`."""

    types: Mapping[str, Type]
    constants: Mapping[str, Constant]
    domains: Mapping[str, Domain]
    classes: Mapping[str, AmqpClass]
    class_codes: Mapping[int, AmqpClass]
    structs: Mapping[str, Struct]
    controls: Mapping[str, Control]
    commands: Mapping[str, Command]
    struct_codes: Mapping[tuple[int, int], Struct]
    control_codes: Mapping[tuple[int, int], Control]
    command_codes: Mapping[tuple[int, int], Command]


def _build_index(spec: Spec010) -> _Index:
    classes = spec.classes
    return _Index(
        types=_proxy((t.name, t) for t in spec.types),
        constants=_proxy((c.name, c) for c in spec.constants),
        domains=_proxy((d.qualified, d) for d in spec.domains),
        classes=_proxy((c.name, c) for c in classes),
        class_codes=_proxy((c.code, c) for c in classes),
        structs=_proxy((s.qualified, s) for s in spec.structs),
        controls=_proxy((m.qualified, m) for m in spec.controls),
        commands=_proxy((m.qualified, m) for m in spec.commands),
        struct_codes=_proxy(
            ((c.code, s.code), s) for c in classes for s in c.structs if s.code is not None
        ),
        control_codes=_proxy(((c.code, m.code), m) for c in classes for m in c.controls),
        command_codes=_proxy(((c.code, m.code), m) for c in classes for m in c.commands),
    )


@dataclass(frozen=True, slots=True, eq=False)
class Spec010:
    """The loaded 0-10 specification: look things up by name or by (class code, code)."""

    protocol: str = field(default="0-10", init=False)
    sources: tuple[str, ...]
    major: int
    minor: int
    port: int
    types: tuple[Type, ...]
    constants: tuple[Constant, ...]
    global_domains: tuple[Domain, ...]
    classes: tuple[AmqpClass, ...]
    _index: _Index = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # The only write to a frozen instance: its own lookup tables, derived from the tuples.
        object.__setattr__(self, "_index", _build_index(self))

    def __repr__(self) -> str:
        return f"<Spec010 AMQP 0-10 from {', '.join(self.sources)}>"

    @property
    def domains(self) -> tuple[Domain, ...]:
        """Global domains, then every class's domains."""
        return self.global_domains + tuple(d for c in self.classes for d in c.domains)

    @property
    def structs(self) -> tuple[Struct, ...]:
        return tuple(s for c in self.classes for s in c.structs)

    @property
    def controls(self) -> tuple[Control, ...]:
        return tuple(m for c in self.classes for m in c.controls)

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(m for c in self.classes for m in c.commands)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule, in file order."""
        owners: list[tuple[Rule, ...]] = [c.rules for c in self.classes]
        for item in self._members:
            owners.append(item.rules)
            owners.extend(f.rules for f in item.fields)
        return tuple(sorted((r for rs in owners for r in rs), key=lambda r: r.line or 0))

    @property
    def _members(self) -> tuple[Struct | Control | Command, ...]:
        """Everything that has fields."""
        return (*self.structs, *self.controls, *self.commands)

    def type(self, name: str) -> Type:
        return _lookup(self._index.types, name, "type")

    def constant(self, name: str) -> Constant:
        return _lookup(self._index.constants, name, "constant")

    def domain(self, qualified: str) -> Domain:
        """A domain by name: ``segment-type`` (global) or ``session.commands`` (class)."""
        return _lookup(self._index.domains, qualified, "domain")

    def amqp_class(self, name: str) -> AmqpClass:
        return _lookup(self._index.classes, name, "class")

    def amqp_class_by_code(self, code: int) -> AmqpClass:
        return _lookup(self._index.class_codes, code, "class code")

    def struct(self, qualified: str) -> Struct:
        """A struct by qualified name, e.g. ``message.delivery-properties``."""
        return _lookup(self._index.structs, qualified, "struct")

    def control(self, qualified: str) -> Control:
        """A control by qualified name, e.g. ``connection.start``."""
        return _lookup(self._index.controls, qualified, "control")

    def command(self, qualified: str) -> Command:
        """A command by qualified name, e.g. ``message.transfer``."""
        return _lookup(self._index.commands, qualified, "command")

    def struct_by_code(self, class_code: int, code: int) -> Struct:
        return _lookup(self._index.struct_codes, (class_code, code), "struct code")

    def control_by_code(self, class_code: int, code: int) -> Control:
        return _lookup(self._index.control_codes, (class_code, code), "control code")

    def command_by_code(self, class_code: int, code: int) -> Command:
        return _lookup(self._index.command_codes, (class_code, code), "command code")

    def inventory(self) -> dict[str, int]:
        """Counts of everything the model holds, for reports and cross-checks against the XML."""
        return {
            "types": len(self.types),
            "constants": len(self.constants),
            "domains": len(self.domains),
            "classes": len(self.classes),
            "structs": len(self.structs),
            "controls": len(self.controls),
            "commands": len(self.commands),
            "fields": sum(len(m.fields) for m in self._members),
            "rules": len(self.rules),
        }


# --- loading -------------------------------------------------------------------------------


def _int(path: str, el: etree._Element, name: str, *, required: bool = True) -> int | None:
    """An integer attribute, decimal or 0x-hex as the XML writes codes."""
    raw = attr(el, name, path, required=required)
    if not raw:
        return None
    try:
        return int(raw, 16) if raw.lower().startswith("0x") else int(raw, 10)
    except ValueError:
        fail(path, el, f"'{name}' is not an integer: {raw!r}")


def _req_int(path: str, el: etree._Element, name: str) -> int:
    value = _int(path, el, name)
    assert value is not None  # required=True fails on a missing attribute
    return value


def _flag(path: str, el: etree._Element, name: str) -> bool:
    raw = el.get(name, "false")
    if raw not in ("true", "false"):
        fail(path, el, f"'{name}' must be true or false, not {raw!r}")
    return raw == "true"


def _unique(
    path: str, items: Iterable[tuple[object, etree._Element]], what: str, where: str = ""
) -> None:
    """Fail at the second element of any pair sharing a key (codes shown in hex, as written)."""
    seen: dict[object, etree._Element] = {}
    for key, el in items:
        if key in seen:
            shown = hex(key) if isinstance(key, int) else repr(key)
            first = line_of(seen[key])
            fail(path, el, f"duplicate {what} {shown}{where} (first at line {first})")
        seen[key] = el


def _unique_names(path: str, els: Iterable[etree._Element], what: str, where: str = "") -> None:
    _unique(path, ((attr(e, "name", path), e) for e in els), what, where)


def _read_type(path: str, el: etree._Element) -> Type:
    fixed = _int(path, el, "fixed-width", required=False)
    variable = _int(path, el, "variable-width", required=False)
    if (fixed is None) == (variable is None):
        fail(path, el, "a type needs exactly one of fixed-width and variable-width")
    code = _int(path, el, "code", required=False)
    return Type(attr(el, "name", path), code, fixed, variable)


def _read_domain(path: str, el: etree._Element, class_name: str | None, types: set[str]) -> Domain:
    name, type_name = attr(el, "name", path), attr(el, "type", path)
    if type_name not in types:
        fail(path, el, f"domain '{name}' has unknown type '{type_name}'")
    choices = [c for enum in children(el, "enum") for c in children(enum, "choice")]
    _unique_names(path, choices, "choice", f" in domain {name}")
    pairs = ((attr(c, "name", path), _req_int(path, c, "value")) for c in choices)
    return Domain(name, class_name, type_name, _proxy(pairs))


def _class_structs(el: etree._Element) -> list[etree._Element]:
    """A class's structs: those at class level and those declared inline in command results."""
    results = [r for cmd in children(el, "command") for r in children(cmd, "result")]
    return children(el, "struct") + [s for r in results for s in children(r, "struct")]


class _Scope:
    """Every name a field may refer to, collected before any field is resolved.

    Collected first because the XML refers forward (``message`` fields use ``exchange.name``).
    """

    def __init__(self, path: str, types: tuple[Type, ...], domains: Iterable[Domain]) -> None:
        self.path = path
        self.types = {t.name for t in types}
        self.domains = {d.qualified: d for d in domains}
        self.structs: set[str] = set()

    def resolve(self, class_name: str, ref: str, el: etree._Element) -> TypeRef:
        # Class scope first, then the global names; a dotted name is already qualified.
        for name in [ref] if "." in ref else [f"{class_name}.{ref}", ref]:
            if name in self.domains:
                return TypeRef("domain", name, self.domains[name].type)
            if name in self.structs:
                return TypeRef("struct", name, None)
            if name in self.types:
                return TypeRef("type", name, name)
        fail(self.path, el, f"unknown type '{ref}' (not a type, domain or struct)")

    def struct(self, class_name: str, el: etree._Element, key: str = "type") -> str:
        ref = self.resolve(class_name, attr(el, key, self.path), el)
        if ref.kind != "struct":
            fail(self.path, el, f"'{ref.name}' is a {ref.kind}, not a struct")
        return ref.name


def _rules(path: str, el: etree._Element, where: str) -> tuple[Rule, ...]:
    return tuple(Rule(attr(r, "name", path), where, line_of(r)) for r in children(el, "rule"))


def _exceptions(path: str, el: etree._Element) -> tuple[ExceptionDecl, ...]:
    return tuple(
        ExceptionDecl(attr(x, "name", path), attr(x, "error-code", path))
        for x in children(el, "exception")
    )


def _fields(scope: _Scope, owner: etree._Element, cls: str, where: str) -> tuple[Field, ...]:
    path, els = scope.path, children(owner, "field")
    _unique_names(path, els, "field", f" in {where}")
    return tuple(
        Field(
            name=attr(f, "name", path),
            type=attr(f, "type", path),
            ref=scope.resolve(cls, attr(f, "type", path), f),
            required=_flag(path, f, "required"),
            default=f.get("default"),
            rules=_rules(path, f, f"{where}.{attr(f, 'name', path)}"),
            exceptions=_exceptions(path, f),
        )
        for f in els
    )


def _read_struct(scope: _Scope, el: etree._Element, cls: str) -> Struct:
    name, path = attr(el, "name", scope.path), scope.path
    size, pack = _req_int(path, el, "size"), _req_int(path, el, "pack")
    # Both are octet counts of a length prefix and a packing-flags word on the wire.
    if size not in (0, 1, 2, 4) or pack not in (0, 1, 2, 4):
        fail(path, el, f"struct '{name}': size and pack must be 0, 1, 2 or 4")
    return Struct(
        name=name,
        class_name=cls,
        code=_int(path, el, "code", required=False),
        size=size,
        pack=pack,
        fields=_fields(scope, el, cls, f"{cls}.{name}"),
        rules=_rules(path, el, f"{cls}.{name}"),
    )


def _segments(scope: _Scope, el: etree._Element, cls: str) -> Segments | None:
    found = children(el, "segments")
    if not found:
        return None
    headers, body = children(found[0], "header"), children(found[0], "body")
    entries = [e for h in headers for e in children(h, "entry")]
    return Segments(
        header=bool(headers),
        header_required=any(_flag(scope.path, h, "required") for h in headers),
        entries=tuple(scope.struct(cls, e) for e in entries),
        body=bool(body),
    )


def _result(scope: _Scope, el: etree._Element, cls: str) -> str | None:
    for result in children(el, "result"):
        inline = children(result, "struct")
        if inline:
            return f"{cls}.{attr(inline[0], 'name', scope.path)}"
        return scope.struct(cls, result)
    return None


def _implements(path: str, el: etree._Element) -> tuple[Implement, ...]:
    return tuple(
        Implement(attr(i, "role", path), attr(i, "handle", path)) for i in children(el, "implement")
    )


def _responses(path: str, el: etree._Element) -> tuple[str, ...]:
    return tuple(attr(r, "name", path) for r in children(el, "response"))


_Common = tuple[
    str, str, int, tuple[Field, ...], tuple[str, ...], tuple[Implement, ...], tuple[Rule, ...]
]


def _common(scope: _Scope, el: etree._Element, cls: str) -> _Common:
    """The fields of :class:`_Member`, in order."""
    path, name = scope.path, attr(el, "name", scope.path)
    where, code = f"{cls}.{name}", _req_int(path, el, "code")
    fields, rules = _fields(scope, el, cls, where), _rules(path, el, where)
    return name, cls, code, fields, _responses(path, el), _implements(path, el), rules


def _read_control(scope: _Scope, el: etree._Element, cls: str) -> Control:
    return Control(*_common(scope, el, cls))


def _read_command(scope: _Scope, el: etree._Element, cls: str) -> Command:
    return Command(
        *_common(scope, el, cls),
        exceptions=_exceptions(scope.path, el),
        segments=_segments(scope, el, cls),
        result=_result(scope, el, cls),
    )


def _check_class(path: str, el: etree._Element, cls: AmqpClass) -> None:
    """Codes and names that a decoder or a lookup must be able to tell apart."""
    where = f" in class {cls.name}"
    controls, commands = children(el, "control"), children(el, "command")
    # Controls and commands travel in different segment types, so each has its own code space.
    _unique(path, zip((m.code for m in cls.controls), controls, strict=True), "control code", where)
    _unique(path, zip((m.code for m in cls.commands), commands, strict=True), "command code", where)
    structs = zip(cls.structs, _class_structs(el), strict=True)
    _unique(path, ((s.code, e) for s, e in structs if s.code is not None), "struct code", where)
    members = {m.name for m in (*cls.controls, *cls.commands)}
    for member, member_el in zip((*cls.controls, *cls.commands), controls + commands, strict=True):
        for response in member.responses:
            if response not in members:
                fail(path, member_el, f"response '{response}' is not a control or command{where}")


def _read_class(scope: _Scope, el: etree._Element) -> AmqpClass:
    path, name = scope.path, attr(el, "name", scope.path)
    cls = AmqpClass(
        name=name,
        code=_req_int(path, el, "code"),
        roles=tuple(
            Role(attr(r, "name", path), attr(r, "implement", path)) for r in children(el, "role")
        ),
        domains=tuple(d for d in scope.domains.values() if d.class_name == name),
        structs=tuple(_read_struct(scope, s, name) for s in _class_structs(el)),
        controls=tuple(_read_control(scope, c, name) for c in children(el, "control")),
        commands=tuple(_read_command(scope, c, name) for c in children(el, "command")),
        rules=_rules(path, el, name),
    )
    _check_class(path, el, cls)
    return cls


def _collect_scope(path: str, root: etree._Element, types: tuple[Type, ...]) -> _Scope:
    """First pass: every domain (read whole, they only name types) and every struct name."""
    names = {t.name for t in types}
    domains = [_read_domain(path, d, None, names) for d in children(root, "domain")]
    class_els = children(root, "class")
    _unique_names(path, class_els, "class name")
    _unique(path, ((_req_int(path, c, "code"), c) for c in class_els), "class code")
    _unique_names(path, children(root, "domain"), "domain")
    scope = _Scope(path, types, domains)
    for c in class_els:
        cls = attr(c, "name", path)
        own = children(c, "domain") + _class_structs(c)
        _unique_names(path, own, "domain or struct", f" in class {cls}")
        _unique_names(path, children(c, "control"), "control", f" in class {cls}")
        _unique_names(path, children(c, "command"), "command", f" in class {cls}")
        for d in children(c, "domain"):
            domain = _read_domain(path, d, cls, names)
            scope.domains[domain.qualified] = domain
        scope.structs.update(f"{cls}.{attr(s, 'name', path)}" for s in _class_structs(c))
    return scope


def load_0_10(path: str | Path | None = None) -> Spec010:
    """Load the 0-10 XML at ``path`` (default: the vendored copy); SpecError if it is unusable."""
    source = str(DEFAULT_PATH if path is None else path)
    root = parse(source)
    type_els = children(root, "type")
    _unique_names(source, type_els, "type")
    types = tuple(_read_type(source, t) for t in type_els)
    scope = _collect_scope(source, root, types)
    return Spec010(
        sources=(source,),
        major=_req_int(source, root, "major"),
        minor=_req_int(source, root, "minor"),
        port=_req_int(source, root, "port"),
        types=types,
        constants=tuple(
            Constant(attr(c, "name", source), _req_int(source, c, "value"))
            for c in children(root, "constant")
        ),
        global_domains=tuple(d for d in scope.domains.values() if d.class_name is None),
        classes=tuple(_read_class(scope, c) for c in children(root, "class")),
    )


@functools.cache  # one model per protocol and process
def load(protocol: str = "0-10") -> Spec010:
    """The model of a protocol of this family from its bundled file (ValueError for another
    family's)."""
    return load_0_10(paths_of(protocol, "amqp010")[0])
