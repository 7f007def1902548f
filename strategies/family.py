"""What a protocol family gives the strategies layer (:class:`StrategyFamily`), and the case
builders every family shares, made from it.

Each family package exports ``FAMILY``, an object satisfying :class:`StrategyFamily`: the size
of the blob a case is read from, a context (what its operators and valid cases draw from:
the model, its codec, the negotiated frame size, the run's prefix), its catalogue of
operators, the methods valid cases are drawn from and how a valid case is read. Everything
else (mixing valid and malformed cases, choosing operators) is the same for every family and
written once, here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from hypothesis.errors import InvalidArgument

from .cases import Case
from .operator import Operator, mixed_builder, pick_operator, selected
from .source import Source

__all__ = [
    "StrategyFamily",
    "case_builder",
    "malformed_case_builder",
    "no_options",
    "only",
    "prefix_of",
    "valid_case_builder",
]

C = TypeVar("C")


class StrategyFamily(Protocol[C]):
    """A family's strategies: the context ``C`` its builders draw from."""

    @property
    def name(self) -> str:
        """The family's name (``amqp091``), the key of every layer's table."""

    @property
    def blob(self) -> int:
        """How many bytes a case is read from."""

    def context(
        self, protocol: str, *, frame_max: int | None, prefix: str | None, **options: Any
    ) -> C:
        """What builders draw from for ``protocol`` (InvalidArgument for bad arguments):
        ``frame_max`` the negotiated frame size (None: the family's default), names start with
        ``prefix``; ``options`` are the family's own (0-9-1: ``dialect``)."""

    def catalogue(self, protocol: str) -> tuple[Operator, ...]:
        """The operators that apply to ``protocol``, in the order Hypothesis shrinks towards."""

    def case_methods(self, context: C) -> tuple[str, ...]:
        """The methods (1.0: performatives, 0-10: commands) valid cases are drawn from."""

    def valid(self, context: C, methods: Sequence[str] | None) -> Callable[[Source], Case]:
        """Reads a valid case of one of ``methods`` (by default every one of
        :meth:`case_methods`) from a source (InvalidArgument for a method it cannot send)."""


def only(protocol: str, wanted: str, family: str) -> str:
    """``protocol``, which must be ``wanted``, the one protocol of ``family`` (InvalidArgument
    if it is not)."""
    if protocol != wanted:
        raise InvalidArgument(f"protocol={protocol!r}: the {family} family has only {wanted!r}")
    return protocol


def prefix_of(prefix: str | None) -> str | None:
    """The run's prefix for the names a case creates: a string or None (InvalidArgument)."""
    if prefix is not None and not isinstance(prefix, str):
        raise InvalidArgument(f"prefix={prefix!r}: a string or None")
    return prefix


def no_options(options: Mapping[str, Any], family: str) -> None:
    """A family that takes no options of its own refuses any (InvalidArgument)."""
    if options:
        raise InvalidArgument(f"{', '.join(options)}: the {family} family takes no such option")


def case_builder(
    family: StrategyFamily[Any],
    protocol: str,
    *,
    operators: Sequence[str] | None = None,
    valid_share: float = 0.25,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Callable[[bytes], Case]:
    """Reads what a campaign sends from a blob: a valid case about ``valid_share`` of the
    time, else a malformed case of ``operators``. The blob's first byte decides which, so a
    zeroed blob reads as the first method's valid case."""
    context = family.context(protocol, frame_max=frame_max, prefix=prefix, **options)
    chosen = selected(family.catalogue(protocol), operators, protocol)
    return mixed_builder(family.valid(context, None), pick_operator(chosen, context), valid_share)


def valid_case_builder(
    family: StrategyFamily[Any],
    protocol: str,
    methods: Sequence[str] | None = None,
    *,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Callable[[bytes], Case]:
    """Reads a valid case of one of ``methods`` from a blob; a zeroed one reads as the first
    method's."""
    context = family.context(protocol, frame_max=frame_max, prefix=prefix, **options)
    build = family.valid(context, methods)
    return lambda blob: build(Source(blob))


def malformed_case_builder(
    family: StrategyFamily[Any],
    protocol: str,
    operators: Sequence[str] | None = None,
    *,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Callable[[bytes], Case]:
    """Reads a malformed case from a blob: the operator, then what it breaks and how; a zeroed
    blob reads as the first operator's simplest case."""
    context = family.context(protocol, frame_max=frame_max, prefix=prefix, **options)
    build = pick_operator(selected(family.catalogue(protocol), operators, protocol), context)
    return lambda blob: build(Source(blob))
