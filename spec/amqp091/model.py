"""The immutable model of one AMQP 0-8 / 0-9 / 0-9-1 specification.

Everything the rest of amqpfuzz derives from: constants with their hard/soft error class,
domains with their asserts, classes, methods (index, synchronous, content, chassis, responses),
fields, content properties and rules (name, on-failure code, doc, scenario text).

Model objects are frozen and slotted. Methods, classes and domains compare by identity: a loaded
:class:`Spec` is cached per file, so the same method is always the same object, and frames that
hold a method compare cheaply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..outcomes import Scope

__all__ = [
    "PRIMITIVE_TYPES",
    "ZERO_VALUES",
    "AmqpClass",
    "Assert",
    "Constant",
    "Domain",
    "Field",
    "Method",
    "Rule",
    "Spec",
]

# The wire types of the 0-8 family. Every domain resolves to one of these. ``content`` exists
# only in AMQP 0-9 (the message class's body: a discriminator octet, 0 inline or 1 reference,
# then a long string); the stripped 0-9 XML uses it as a domain without declaring one.
PRIMITIVE_TYPES = (
    "bit",
    "octet",
    "short",
    "long",
    "longlong",
    "shortstr",
    "longstr",
    "timestamp",
    "table",
    "content",
)

# The zero value of each wire type: what a reserved field carries, and what an argument left
# out is encoded as.
ZERO_VALUES: Mapping[str, Any] = MappingProxyType(
    {
        "bit": False,
        "octet": 0,
        "short": 0,
        "long": 0,
        "longlong": 0,
        "shortstr": "",
        "longstr": b"",
        "timestamp": 0,
        "table": {},
        "content": (0, b""),
    }
)


@dataclass(frozen=True, slots=True)
class Constant:
    """A ``<constant>``: frame types, sizes and reply codes.

    ``error_class`` is ``"hard-error"`` (the peer must close the connection),
    ``"soft-error"`` (the channel) or ``None`` for constants that are not error codes.
    """

    name: str
    value: int
    error_class: str | None = None
    doc: str = ""

    @property
    def is_hard_error(self) -> bool:
        return self.error_class == "hard-error"

    @property
    def is_soft_error(self) -> bool:
        return self.error_class == "soft-error"

    @property
    def scope(self) -> Scope:
        """What an error with this code closes: the ``connection`` or the ``channel``."""
        return Scope.CONNECTION if self.is_hard_error else Scope.CHANNEL


@dataclass(frozen=True, slots=True)
class Assert:
    """An ``<assert>`` on a domain or field: ``notnull``, ``null``, ``length``, ``regexp``,
    ``syntax``, ``ne``, ``le``, ``enum``.

    ``value`` holds the limit or pattern; ``method`` and ``field`` name the other operand of a
    comparison such as ``le`` (channel-max must be at most tune's channel-max).
    """

    check: str
    value: str | None = None
    rule: str | None = None
    method: str | None = None
    field: str | None = None
    values: tuple[str, ...] = ()  # the names of an ``enum``, whose values are 0, 1, ...


@dataclass(frozen=True, slots=True)
class Rule:
    """A ``<rule>``: what an implementation must do, where, and the code a violation gets.

    ``ref`` is where the rule sits, e.g. ``queue.declare/queue/reserved`` or
    ``basic/01`` for a class-level rule; ``on_failure`` is a constant's name or ``None``.
    """

    name: str
    ref: str
    on_failure: str | None
    doc: str
    scenario: str | None
    line: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Domain:
    """A named ``<domain>``: a wire type plus asserts and rules."""

    name: str
    type: str
    label: str = ""
    asserts: tuple[Assert, ...] = ()
    rules: tuple[Rule, ...] = ()
    doc: str = ""


@dataclass(frozen=True, slots=True)
class Field:
    """A method argument or a content property.

    ``domain`` is the domain named in the XML (for fields given only a ``type`` it is that
    type); ``type`` is the resolved wire type. ``asserts`` holds the domain's asserts followed
    by the field's own.
    """

    name: str
    domain: str
    type: str
    reserved: bool = False
    label: str = ""
    asserts: tuple[Assert, ...] = ()
    rules: tuple[Rule, ...] = ()
    doc: str = ""

    @property
    def attr(self) -> str:
        """The field's name as a Python identifier (``routing-key`` -> ``routing_key``)."""
        return self.name.replace("-", "_").replace(" ", "_")


@dataclass(frozen=True, slots=True, eq=False)
class Method:
    """A ``<method>`` of a class."""

    class_name: str
    class_index: int
    name: str
    index: int
    synchronous: bool
    content: bool
    chassis: Mapping[str, str]
    responses: tuple[str, ...]
    fields: tuple[Field, ...]
    rules: tuple[Rule, ...] = ()
    label: str = ""
    doc: str = ""
    deprecated: bool = False

    @property
    def full_name(self) -> str:
        """``class.method``, e.g. ``basic.publish``."""
        return f"{self.class_name}.{self.name}"

    @property
    def key(self) -> tuple[int, int]:
        """The (class-id, method-id) pair that opens a method frame's payload."""
        return (self.class_index, self.index)

    def sent_by(self, peer: str) -> bool:
        """True if ``peer`` (``client`` or ``server``) may send this method.

        A method's ``<chassis>`` names who must *implement* (receive) it; the sender is the
        other side.
        """
        receiver = "server" if peer == "client" else "client"
        return receiver in self.chassis

    def __repr__(self) -> str:
        return f"<Method {self.full_name} {self.class_index}/{self.index}>"


@dataclass(frozen=True, slots=True, eq=False)
class AmqpClass:
    """A ``<class>``: its methods and, for content classes, its properties."""

    name: str
    index: int
    handler: str
    chassis: Mapping[str, str]
    methods: tuple[Method, ...]
    properties: tuple[Field, ...] = ()
    rules: tuple[Rule, ...] = ()
    label: str = ""
    doc: str = ""

    def method(self, name: str) -> Method:
        for method in self.methods:
            if method.name == name:
                return method
        raise KeyError(f"{self.name}.{name}")

    def __repr__(self) -> str:
        return f"<AmqpClass {self.name} {self.index}>"


@dataclass(frozen=True, slots=True, eq=False)
class Spec:
    """One loaded specification of the 0-8 family, with lookups by name and by id."""

    protocol: str
    major: int
    minor: int
    revision: int
    port: int
    source: str
    constants: tuple[Constant, ...]
    domains: tuple[Domain, ...]
    classes: tuple[AmqpClass, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    _methods_by_key: Mapping[tuple[int, int], Method] = field(default_factory=dict, repr=False)
    _methods_by_name: Mapping[str, Method] = field(default_factory=dict, repr=False)
    _classes_by_index: Mapping[int, AmqpClass] = field(default_factory=dict, repr=False)

    # -- lookups ---------------------------------------------------------------------------

    def method(self, name: str) -> Method:
        """The method called ``class.method``; KeyError names the method if there is none."""
        try:
            return self._methods_by_name[name]
        except KeyError:
            raise KeyError(f"no method {name!r} in AMQP {self.protocol}") from None

    def method_by_id(self, class_id: int, method_id: int) -> Method | None:
        return self._methods_by_key.get((class_id, method_id))

    def amqp_class(self, name_or_index: str | int) -> AmqpClass:
        if isinstance(name_or_index, int):
            return self._classes_by_index[name_or_index]
        for amqp_class in self.classes:
            if amqp_class.name == name_or_index:
                return amqp_class
        raise KeyError(f"no class {name_or_index!r} in AMQP {self.protocol}")

    def class_by_index(self, index: int) -> AmqpClass | None:
        return self._classes_by_index.get(index)

    def constant(self, name: str) -> Constant:
        for constant in self.constants:
            if constant.name == name:
                return constant
        raise KeyError(f"no constant {name!r} in AMQP {self.protocol}")

    def domain(self, name: str) -> Domain:
        for domain in self.domains:
            if domain.name == name:
                return domain
        raise KeyError(f"no domain {name!r} in AMQP {self.protocol}")

    def reply_code(self, code: int) -> Constant | None:
        """The error constant with value ``code``, if the specification defines one."""
        for constant in self.constants:
            if constant.value == code and constant.error_class is not None:
                return constant
        return None

    # -- walks ---------------------------------------------------------------------------

    @property
    def methods(self) -> tuple[Method, ...]:
        return tuple(self._methods_by_name.values())

    def rules(self) -> Iterator[Rule]:
        """Every rule of the specification, in document order per class."""
        for domain in self.domains:
            yield from domain.rules
        for amqp_class in self.classes:
            yield from amqp_class.rules
            for prop in amqp_class.properties:
                yield from prop.rules
            for method in amqp_class.methods:
                yield from method.rules
                for fld in method.fields:
                    yield from fld.rules

    def rule(self, ref: str) -> Rule:
        """The rule at ``ref`` (``channel.open/state``); KeyError if the file has none there."""
        for rule in self.rules():
            if rule.ref == ref:
                return rule
        raise KeyError(f"no rule {ref!r} in AMQP {self.protocol}")

    @property
    def protocol_header(self) -> bytes:
        """The eight octets a client opens the connection with.

        0-9-1 sends ``AMQP 0 0 9 1``; the older versions send ``AMQP 1 1 major minor``
        (which, for 0-8, whose XML says major 8 minor 0, is ``AMQP 1 1 8 0``).
        """
        if self.revision:
            return b"AMQP" + bytes((0, self.major, self.minor, self.revision))
        return b"AMQP" + bytes((1, 1, self.major, self.minor))

    def inventory(self) -> dict[str, int]:
        """Counts of what the XML holds, in a fixed order (``amqpfuzz spec``)."""
        return dict(self.counts)

    def __repr__(self) -> str:
        return f"<Spec AMQP {self.protocol} from {self.source}>"
