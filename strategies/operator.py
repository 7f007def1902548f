"""What a mutation operator is, for every family: one :class:`Operator`, what its build function
returns (:class:`Built`), and how operators are registered and read from a blob.

An operator is a small object: a name, what it breaks, how, and the codes the specification
requires in answer, by their names in the specification (0-9-1's reply-code constants, 1.0's
error conditions, 0-10's close, detach and execution codes). A family says how those names are
found in its model (a :class:`CodeBook`); what an error closes is the code's own scope (0-9-1's
hard and soft errors) unless the operator names one (``scope``): a :class:`~amqpfuzz.spec.Scope`,
``socket`` (the peer answers with its own protocol header and closes the socket), ``silent``
(the peer closes the socket without sending anything more; the operator's codes are then only
the category our own decoder gives the case) or ``ignore`` (the specification says the peer
ignores what was sent). Where the specification says a frame is
wrong but names no reaction, ``or_reply`` marks that accepting it is conformant too (the peer must
stay up); ``unnamed``, that any close is as well, whatever its scope and code (the codes are only
the likely ones). Its ``build`` reads the valid frames it starts from, and how it breaks them, from a
:class:`~.source.Source`. An operator that has no case against some peers (a frame over a
limit the peer did not set) says which contexts it has one in (``usable``); the others do not
draw it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec import OutcomeKind, Scope

from .cases import Case, Code, ErrorCode, Placement, Reaction, Step
from .source import Source

__all__ = [
    "Built",
    "CodeBook",
    "Operator",
    "Special",
    "pick_operator",
    "registrar",
    "selected",
]


class Special(StrEnum):
    """Reactions that close no scope with a code."""

    SOCKET = "socket"  # the peer's own protocol header, then the socket closed
    SILENT = "silent"  # the socket closed without any further data (no close, no header)
    IGNORE = "ignore"  # the peer ignores what was sent: the case is answered as if valid


class CodeBook(Protocol):
    """How a family's codes are found in its model, by their names in the specification."""

    def names(self, spec: Any) -> Collection[str]:
        """Every code name ``spec`` defines."""

    def code(self, spec: Any, name: str) -> Code:
        """The code ``name`` with the scope an error with it closes (KeyError if none)."""


class Context(Protocol):
    """What an operator's family gives it to draw from: at least the model."""

    @property
    def spec(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Built:
    """What an operator's build function returns: the broken steps, the member of the spec
    they are about (a rule, for an operator that breaks rules), a note, where the case runs
    (:attr:`Case.placement`), the valid frames they came from (0-9-1), where the
    specification names a more specific code for this case, its name (0-9-1), and the closes
    it also allows this case (``tolerated``: another scope the text names, a code a value the
    case cannot know may call for, the close the case's own frames asked for, the closes its
    method's rules name where a peer may take the case as valid)."""

    steps: tuple[Step, ...]
    spec_ref: str
    note: str
    placement: Placement = Placement.OPEN
    frames: tuple[Any, ...] = ()
    codes: tuple[str, ...] = ()
    tolerated: tuple[Code, ...] = ()


BuildFn = Callable[[Source, Any], Built]


@dataclass(frozen=True)
class Operator:
    """A named way of breaking valid frames, and the reaction the specification requires.

    ``level`` groups a family's operators (0-9-1: ``frame``, ``sequence``, ``rule``; 1.0:
    ``frame``, ``encoding``, ``semantic``, ``state``; 0-10: ``frame``, ``assembly``,
    ``encoding``, ``state``). ``rule`` is a rule of the spec whose on-failure code, where the
    file has the rule, comes first; ``targets`` gives the rules of a spec the operator can
    break (none: it does not apply); ``usable`` whether a context (what is known of the peer)
    leaves it something to break (None: every context does)."""

    name: str
    description: str
    breaks: str
    codes: tuple[str, ...]
    level: str
    build: BuildFn = field(repr=False, compare=False)
    book: CodeBook = field(repr=False, compare=False)
    scope: Scope | Special | None = None
    or_reply: bool = False
    unnamed: bool = False
    rule: str | None = None
    targets: Callable[[Any], tuple[object, ...]] | None = field(
        default=None, repr=False, compare=False
    )
    usable: Callable[[Any], bool] | None = field(default=None, repr=False, compare=False)

    def usable_in(self, context: Any) -> bool:
        """Whether this operator has a case in ``context`` (a peer's limits may leave none)."""
        return self.usable is None or self.usable(context)

    def applies_to(self, spec: Any) -> bool:
        """Whether ``spec`` defines the codes (and has the rules) this operator needs."""
        if self.targets is not None and not self.targets(spec):
            return False
        names = self.book.names(spec)
        return all(code in names for code in self.names_in(spec))

    def names_in(self, spec: Any) -> tuple[str, ...]:
        """The code names for ``spec``: the rule's on-failure first, where it has one."""
        if self.rule is None:
            return self.codes
        try:
            failure = spec.rule(self.rule).on_failure
        except KeyError:
            failure = None
        if not failure:
            return self.codes
        return (failure, *(c for c in self.codes if c != failure))

    def codes_in(self, spec: Any, names: tuple[str, ...] | None = None) -> tuple[Code, ...]:
        """The codes (``names``, by default the operator's) as ``spec`` defines them, closing
        the operator's scope where it names one."""
        found = tuple(self.book.code(spec, n) for n in names or self.names_in(spec))
        if isinstance(self.scope, Scope):
            return tuple(ErrorCode(c.name, c.value, self.scope) for c in found)
        return found

    def reaction(self, spec: Any, names: tuple[str, ...] = ()) -> Reaction:
        """The reaction required (``names``: the codes a case named instead of the operator's)."""
        return _reaction(self, spec, names)

    def case(self, src: Source, context: Context) -> Case:
        """One malformed case made by this operator, read from ``src``."""
        built = self.build(src, context)
        expected = self.reaction(context.spec, built.codes)
        if built.tolerated:
            expected = replace(expected, tolerated=(*expected.tolerated, *built.tolerated))
        return Case(
            steps=built.steps,
            expected=expected,
            spec_ref=built.spec_ref,
            operator=self.name,
            placement=built.placement,
            note=built.note,
            frames=built.frames,
            blob=src.data,
            level=self.level,
        )


@functools.lru_cache(maxsize=1024)  # the same few per operator: a case is worth less
def _reaction(operator: Operator, spec: Any, names: tuple[str, ...]) -> Reaction:
    if operator.scope is Special.IGNORE:
        return Reaction.reply()
    if operator.scope is Special.SOCKET:
        return Reaction(OutcomeKind.SOCKET_CLOSE, responses=("protocol header",))
    if operator.scope is Special.SILENT:  # (or_reply: taking it is as conformant)
        return Reaction(OutcomeKind.SOCKET_CLOSE, or_reply=operator.or_reply)
    if not operator.codes and not names and isinstance(operator.scope, Scope):
        return Reaction(operator.scope.close)  # a close the case asked for: no code required
    codes = operator.codes_in(spec, names or None)
    return Reaction.error(codes, or_reply=operator.or_reply, any_close=operator.unnamed)


_Build = TypeVar("_Build", bound=Callable[..., Built])


def registrar(
    into: list[Operator], book: CodeBook, *, scoped: bool = False
) -> Callable[..., Callable[[_Build], _Build]]:
    """A decorator factory that defines an operator where its build function is written::

        OPERATORS: list[Operator] = []
        operator = registrar(OPERATORS, CODES, scoped=True)

        @operator("frame-size-small", "what it breaks", "how", ("framing-error",),
                  "connection", "frame")
        def frame_size_small(src: Source, ctx: Context) -> Built: ...

    The decorator takes the name, what it breaks, how, the code names, the scope (when
    ``scoped``: the family's operators each name what they close) and the level, and the
    :class:`Operator`'s options by keyword."""

    def operator(
        name: str, description: str, breaks: str, codes: Sequence[str], *rest: str, **options: Any
    ) -> Callable[[_Build], _Build]:
        if scoped:
            closes, level = rest
            options["scope"] = _scope(name, closes)
        else:
            (level,) = rest

        def register(build: _Build) -> _Build:
            into.append(
                Operator(name, description, breaks, tuple(codes), level, build, book, **options)
            )
            return build

        return register

    return operator


def _scope(operator: str, word: str) -> Scope | Special:
    for kind in (Scope, Special):
        try:
            return kind(word)
        except ValueError:
            continue
    known = [*Scope, *Special]
    raise ValueError(f"operator {operator}: scope {word!r} is not one of {known}")


def selected(
    catalogue: Sequence[Operator], names: Sequence[str] | None, protocol: str
) -> list[Operator]:
    """The operators of ``catalogue`` named (all of them by default); InvalidArgument for a
    name that is none of them, or for none at all."""
    available = {op.name: op for op in catalogue}
    if names is None:
        return list(available.values())
    unknown = [n for n in names if n not in available]
    if unknown or not names:
        raise InvalidArgument(
            f"operators={list(names)!r}: known operators of AMQP {protocol} are {list(available)}"
        )
    return [available[n] for n in names]


def pick_operator(operators: Sequence[Operator], context: Any) -> Callable[[Source], Case]:
    """Reads an operator, then its case, from a source; zeros read as the first operator.
    Operators with no case in ``context`` are not drawn (InvalidArgument if that leaves none)."""
    chosen = tuple(op for op in operators if op.usable_in(context))
    if not chosen:
        names = [op.name for op in operators]
        raise InvalidArgument(f"operators={names!r}: none has a case against this peer")
    return lambda src: chosen[src.below(len(chosen))].case(src, context)
