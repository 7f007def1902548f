"""Load an AMQP 0-8 / 0-9 / 0-9-1 XML specification into the immutable model.

The same loader reads the full 0-9-1 XML (docs, rules, scenarios, asserts) and the stripped
files of Debian's amqp-specs (0-8, 0-9, 0-9-1 with RabbitMQ's extensions). Names are
normalised: the 0-8 file writes ``frame method`` and ``soft error`` where 0-9-1 writes
``frame-method`` and ``soft-error``.

Every problem in a file is a :class:`SpecError` naming the file and the line: malformed or
truncated XML, a field whose domain does not exist, two methods (or classes) with one index.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import MappingProxyType

from lxml import etree

from ..errors import SpecError
from ..protocols import DEFAULT_PROTOCOL, paths_of
from ..xmlfile import attr, children, fail, line_of, local, parse, text_of
from .model import (
    PRIMITIVE_TYPES,
    AmqpClass,
    Assert,
    Constant,
    Domain,
    Field,
    Method,
    Rule,
    Spec,
)

__all__ = ["load_family_file"]


def _name(raw: str) -> str:
    return " ".join(raw.split()).replace(" ", "-")


def _int(path: str, element: etree._Element, name: str, default: int | None = None) -> int:
    raw = element.get(name)
    if raw is None:
        if default is not None:
            return default
        fail(path, element, f"<{local(element)}> has no '{name}' attribute")
    try:
        return int(raw, 0)
    except ValueError:
        fail(path, element, f"<{local(element)}> attribute {name}={raw!r} is not an integer")


def _docs(element: etree._Element) -> tuple[str, str | None]:
    """The element's plain docs joined, and its scenario doc if it has one."""
    plain: list[str] = []
    scenario: str | None = None
    for doc in children(element, "doc"):
        kind = doc.get("type")
        if kind == "scenario":
            scenario = text_of(doc)
        elif kind is None:
            plain.append(text_of(doc))
    return "\n\n".join(plain), scenario


class _Loader:
    """One pass over one file; keeps counts of what the XML holds as it goes."""

    def __init__(self, path: str, protocol: str) -> None:
        self.path = path
        self.protocol = protocol
        self.asserts = 0
        self.domains: dict[str, Domain] = {}

    # -- small pieces ------------------------------------------------------------------------

    def rules(self, element: etree._Element, ref: str) -> tuple[Rule, ...]:
        out = []
        for rule in children(element, "rule"):
            name = _name(attr(rule, "name", self.path))
            doc, scenario = _docs(rule)
            failure = rule.get("on-failure")
            out.append(
                Rule(
                    name=name,
                    ref=f"{ref}/{name}",
                    on_failure=_name(failure) if failure else None,
                    doc=doc,
                    scenario=scenario,
                    line=line_of(rule),
                )
            )
        return tuple(out)

    def assert_list(self, element: etree._Element) -> tuple[Assert, ...]:
        out = []
        for item in children(element, "assert"):
            self.asserts += 1
            out.append(
                Assert(
                    check=attr(item, "check", self.path),
                    value=item.get("value"),
                    rule=item.get("rule"),
                    method=item.get("method"),
                    field=item.get("field"),
                    values=tuple(v.get("name", "") for v in children(item, "value")),
                )
            )
        return tuple(out)

    def constant(self, element: etree._Element) -> Constant:
        error_class = element.get("class")
        doc, _ = _docs(element)
        return Constant(
            name=_name(attr(element, "name", self.path)),
            value=_int(self.path, element, "value"),
            error_class=_name(error_class) if error_class else None,
            doc=doc,
        )

    def domain(self, element: etree._Element) -> Domain:
        name = _name(attr(element, "name", self.path))
        wire = _name(attr(element, "type", self.path))
        if wire not in PRIMITIVE_TYPES:
            fail(self.path, element, f"domain {name!r} has unknown type {wire!r}")
        doc, _ = _docs(element)
        return Domain(
            name=name,
            type=wire,
            label=element.get("label", ""),
            asserts=self.assert_list(element),
            rules=self.rules(element, f"domain:{name}"),
            doc=doc,
        )

    def field(self, element: etree._Element, ref: str) -> Field:
        name = _name(attr(element, "name", self.path))
        named = element.get("domain") or element.get("type")
        if not named:
            fail(self.path, element, f"field {name!r} has neither a domain nor a type")
        named = _name(named)
        domain = self.domains.get(named)
        if domain is not None:
            wire, inherited = domain.type, domain.asserts
        elif named in PRIMITIVE_TYPES:
            wire, inherited = named, ()
        else:
            fail(self.path, element, f"field {name!r} refers to unknown domain {named!r}")
        doc, _ = _docs(element)
        return Field(
            name=name,
            domain=named,
            type=wire,
            reserved=element.get("reserved") == "1",
            label=element.get("label", ""),
            asserts=inherited + self.assert_list(element),
            rules=self.rules(element, f"{ref}/{name}"),
            doc=doc,
        )

    # -- classes and methods -------------------------------------------------------------

    def method(self, element: etree._Element, class_name: str, class_index: int) -> Method:
        name = _name(attr(element, "name", self.path))
        ref = f"{class_name}.{name}"
        doc, _ = _docs(element)
        return Method(
            class_name=class_name,
            class_index=class_index,
            name=name,
            index=_int(self.path, element, "index"),
            synchronous=element.get("synchronous") == "1",
            content=element.get("content") == "1",
            chassis=MappingProxyType(
                {c.get("name", ""): c.get("implement", "") for c in children(element, "chassis")}
            ),
            responses=tuple(_name(r.get("name", "")) for r in children(element, "response")),
            fields=tuple(self.field(f, ref) for f in children(element, "field")),
            rules=self.rules(element, ref),
            label=element.get("label", ""),
            doc=doc,
            deprecated=element.get("deprecated") == "1",
        )

    def amqp_class(self, element: etree._Element) -> AmqpClass:
        name = _name(attr(element, "name", self.path))
        index = _int(self.path, element, "index")
        methods: list[Method] = []
        seen: dict[int, str] = {}
        for item in children(element, "method"):
            method = self.method(item, name, index)
            if method.index in seen:
                fail(
                    self.path,
                    item,
                    f"duplicate method index {method.index} in class {name!r}: "
                    f"{method.name!r} and {seen[method.index]!r}",
                )
            if method.name in seen.values():
                fail(self.path, item, f"duplicate method {name}.{method.name}")
            seen[method.index] = method.name
            methods.append(method)
        doc, _ = _docs(element)
        return AmqpClass(
            name=name,
            index=index,
            handler=element.get("handler", ""),
            chassis=MappingProxyType(
                {c.get("name", ""): c.get("implement", "") for c in children(element, "chassis")}
            ),
            methods=tuple(methods),
            properties=tuple(self.field(f, name) for f in children(element, "field")),
            rules=self.rules(element, name),
            label=element.get("label", ""),
            doc=doc,
        )

    # -- the whole file --------------------------------------------------------------------

    def load(self, root: etree._Element) -> Spec:
        constants = tuple(self.constant(c) for c in children(root, "constant"))
        for item in children(root, "domain"):
            domain = self.domain(item)
            if domain.name in self.domains:
                fail(self.path, item, f"duplicate domain {domain.name!r}")
            self.domains[domain.name] = domain
        classes: list[AmqpClass] = []
        by_index: dict[int, AmqpClass] = {}
        for item in children(root, "class"):
            amqp_class = self.amqp_class(item)
            if amqp_class.index in by_index:
                other = by_index[amqp_class.index].name
                fail(
                    self.path,
                    item,
                    f"duplicate class index {amqp_class.index}: {amqp_class.name!r} and {other!r}",
                )
            by_index[amqp_class.index] = amqp_class
            classes.append(amqp_class)
        if not classes:
            fail(self.path, root, "no <class> elements: not an AMQP 0-8/0-9/0-9-1 specification")
        methods = {m.full_name: m for c in classes for m in c.methods}
        spec = Spec(
            protocol=self.protocol,
            major=_int(self.path, root, "major"),
            minor=_int(self.path, root, "minor"),
            revision=_int(self.path, root, "revision", 0),
            port=_int(self.path, root, "port", 5672),
            source=self.path,
            constants=constants,
            domains=tuple(self.domains.values()),
            classes=tuple(classes),
            _methods_by_key=MappingProxyType({m.key: m for m in methods.values()}),
            _methods_by_name=MappingProxyType(methods),
            _classes_by_index=MappingProxyType(by_index),
        )
        object.__setattr__(spec, "counts", MappingProxyType(self.counts(root, spec)))
        return spec

    def counts(self, root: etree._Element, spec: Spec) -> dict[str, int]:
        rules = list(spec.rules())
        return {
            "constants": len(spec.constants),
            "reply_codes": sum(1 for c in spec.constants if c.error_class),
            "domains": len(spec.domains),
            "classes": len(spec.classes),
            "methods": len(spec.methods),
            # every <field>: method arguments and content properties
            "fields": sum(len(m.fields) for m in spec.methods)
            + sum(len(c.properties) for c in spec.classes),
            "properties": sum(len(c.properties) for c in spec.classes),
            "rules": len(rules),
            "scenarios": sum(1 for r in rules if r.scenario is not None),
            "asserts": self.asserts,
        }


def _protocol_of(root: etree._Element) -> str:
    major, minor, revision = root.get("major"), root.get("minor"), root.get("revision")
    if (major, minor) == ("8", "0"):
        return "0-8"
    return "-".join(p for p in (major, minor, revision) if p is not None)


def load_family_file(path: Path | str, protocol: str | None = None) -> Spec:
    """Load one 0-8/0-9/0-9-1 specification file.

    ``protocol`` names the result (``0-9-1-rabbit``); by default it is read from the root's
    major/minor/revision attributes.
    """
    name = str(path)
    root = parse(name)
    if not children(root, "class") and (children(root, "section") or root.get("name")):
        raise SpecError(name, line_of(root), "this is an AMQP 1.0 part, not 0-8/0-9/0-9-1")
    return _Loader(name, protocol or _protocol_of(root)).load(root)


@functools.cache  # one model per protocol and process
def load(protocol: str = DEFAULT_PROTOCOL) -> Spec:
    """The model of a protocol of this family (``0-9-1``, ``0-9-1-rabbit``, ``0-9``, ``0-8``)
    from its bundled file, loaded once per process (ValueError for another family's)."""
    return load_family_file(paths_of(protocol, "amqp091")[0], protocol)
