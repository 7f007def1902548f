"""What every family's case builders share: registering operators where their build functions
are written, choosing an operator from a source, and mixing valid and malformed cases by the
blob's first byte. Each family's :class:`Operator` is its own (its codes, its scopes); all it
needs here is a ``case(src, context)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hypothesis.errors import InvalidArgument

from .cases import Case, Reaction, Step
from .source import Source

__all__ = ["Built", "mixed_builder", "pick_operator", "registrar"]

_Op = TypeVar("_Op")
_Build = TypeVar("_Build", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Built:
    """What an operator's build function returns (1.0, 0-10): the broken steps, the member of
    the spec they are about, a note, and where the case runs (:attr:`Case.channel`)."""

    steps: tuple[Step, ...]
    spec_ref: str
    note: str
    placement: str = "open"

    def case(self, expected: Reaction, operator: str, level: str, src: Source) -> Case:
        """The malformed case: these steps, the reaction required, the blob they came from."""
        return Case(
            steps=self.steps,
            expected=expected,
            spec_ref=self.spec_ref,
            operator=operator,
            level=level,
            channel=self.placement,
            note=self.note,
            blob=src.data,
        )


class _Operator(Protocol):
    def case(self, src: Source, context: Any, /) -> Case: ...


def registrar(
    into: list[_Op], make: Callable[..., _Op]
) -> Callable[..., Callable[[_Build], _Build]]:
    """A decorator factory that defines an operator where its build function is written::

        OPERATORS: list[Operator] = []
        operator = registrar(OPERATORS, Operator)

        @operator("frame-size-small", "what it breaks", "how", ("framing-error",), ...)
        def frame_size_small(src: Source, ctx: Context) -> Built: ...

    ``make`` is called with the decorator's arguments and ``build=`` the function."""

    def operator(*args: Any, **options: Any) -> Callable[[_Build], _Build]:
        def register(build: _Build) -> _Build:
            into.append(make(*args, build=build, **options))
            return build

        return register

    return operator


def pick_operator(operators: Sequence[_Operator], context: Any) -> Callable[[Source], Case]:
    """Reads an operator, then its case, from a source; zeros read as the first operator."""
    chosen = tuple(operators)
    return lambda src: chosen[src.below(len(chosen))].case(src, context)


def mixed_builder(
    good: Callable[[Source], Case], bad: Callable[[Source], Case], valid_share: float
) -> Callable[[bytes], Case]:
    """Reads what a campaign sends from a blob: a valid case about ``valid_share`` of the time,
    else a malformed one. The blob's first byte decides, so a zeroed blob reads as the first
    valid case."""
    if not 0.0 <= valid_share <= 1.0:
        raise InvalidArgument(f"valid_share={valid_share!r}: must be between 0 and 1")
    cut = round(valid_share * 256)

    def build(blob: bytes) -> Case:
        src = Source(blob)
        return good(src) if src.byte() < cut else bad(src)

    return build
