"""What every family's step language is made of, and how its steps are dispatched.

A family's language is tables (:class:`Language`): its step kinds (:class:`StepKind`: keys,
meaning, the capability a runner must provide), the variables its strings may use and the field
matchers of its expectations; the capabilities a file may declare are every family's
(:data:`CAPABILITIES`). The checker (this package) and the player (the driving layer) of a
family each have one handler per step kind, bound to it by :func:`handles`;
:class:`Dispatching` makes the table of them when the class is made, and refuses a class that
leaves a kind of its language without a handler, handles it twice, or handles a kind the
language does not have. One dispatch style, everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

__all__ = [
    "CAPABILITIES",
    "Dispatching",
    "Language",
    "StepKind",
    "freeze",
    "handles",
]


@dataclass(frozen=True, slots=True)
class StepKind:
    """A step kind: its keys and what it means. ``capability`` is what a runner must provide
    for it (the loader requires the file to declare it); ``scalar`` steps take a number."""

    name: str
    meaning: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    capability: str | None = None
    scalar: bool = False

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.required + self.optional)


CAPABILITIES: Mapping[str, str] = {
    "second-connection": "more than one connection, at once or one after another",
    "restart": "the runner can restart the broker (a throwaway broker it started)",
    "many-queues": "creates entities until the broker refuses (or hundreds of them)",
    "raw-bytes": "speaks below the client library: raw sockets, headers, hand-made handshakes",
    "consumer": "consumes: receives basic.deliver and checks deliveries",
    "client": "played against a client library: amqpfuzz is the peer it connects to "
    "(amqpfuzz scenarios --client NAME)",
}


@dataclass(frozen=True, slots=True)
class Language:
    """A family's step language as tables: its step kinds, the variables its strings may use
    (``${name}``; none: the strings are not checked for them), and the matchers an expected
    field may use."""

    steps: Mapping[str, StepKind]
    variables: Mapping[str, str] = field(default_factory=dict)
    matchers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, *kinds: StepKind, **tables: Mapping[str, str]) -> Language:
        return cls(MappingProxyType({k.name: k for k in kinds}), **tables)

    def dispatched(self, scalars: bool) -> frozenset[str]:
        """The kinds a handler takes (``scalars``: the kinds that are one number too)."""
        return frozenset(k.name for k in self.steps.values() if scalars or not k.scalar)


_KINDS = "__amqpfuzz_step_kinds__"
_H = TypeVar("_H", bound=Callable[..., Any])


def handles(*kinds: str) -> Callable[[_H], _H]:
    """Makes the decorated method the handler of the step kinds named."""

    def mark(handler: _H) -> _H:
        setattr(handler, _KINDS, kinds)
        return handler

    return mark


class Dispatching:
    """A checker or player of one family's language: every handler bound by :func:`handles`.

    A class that is a part of one (a mixin) says ``part=True``; the class that is whole gets
    its :attr:`handlers` (kind -> method name), checked against its :attr:`language`. A checker
    takes a scalar kind's number as it is (``scalars = False``); a player handles it."""

    language: ClassVar[Language]
    handlers: ClassVar[Mapping[str, str]]
    scalars: ClassVar[bool] = True

    def __init_subclass__(cls, *, part: bool = False, **options: Any) -> None:
        super().__init_subclass__(**options)
        if not part:
            cls.handlers = MappingProxyType(_table(cls, cls.language, cls.scalars))

    def handler(self, kind: str) -> Callable[..., Any]:
        """The bound handler of ``kind``."""
        method: Callable[..., Any] = getattr(self, self.handlers[kind])
        return method


def _table(cls: type, language: Language, scalars: bool) -> dict[str, str]:
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's handler replaces its base's
        mine: dict[str, str] = {}
        for name, value in vars(klass).items():
            for kind in getattr(value, _KINDS, ()):
                if kind in mine:
                    raise TypeError(f"{cls.__name__}: {kind} is handled by {mine[kind]} and {name}")
                mine[kind] = name
        found.update(mine)
    wanted = language.dispatched(scalars)
    unknown = sorted(set(found) - wanted)
    missing = sorted(wanted - set(found))
    if unknown or missing:
        raise TypeError(
            f"{cls.__name__}: no handler for {missing or 'nothing'}; "
            f"handlers of kinds the language lacks: {unknown or 'none'}"
        )
    return found


def freeze(value: object) -> object:
    """Read-only copies: mappings become mapping proxies, lists tuples."""
    if isinstance(value, dict):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(freeze(item) for item in value)
    return value
