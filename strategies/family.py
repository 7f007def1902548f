"""What a protocol family gives the strategies layer (:class:`StrategyFamily`), and the case
builders every family shares, made from it.

Each family package exports ``FAMILY``, an object satisfying :class:`StrategyFamily`: the size
of the blob a case is read from, a context (what its operators and valid cases draw from:
the model, its codec, the negotiated frame size, the run's prefix), its catalogue of
operators, the methods valid cases are drawn from and how a valid case is read, its valid
traffic in state and how a malformed case is put in state. Everything else (the parts and arms
a case is read with, :mod:`.arms`) is the same for every family and written once, here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from hypothesis.errors import InvalidArgument

from .arms import Arm, Chooser, Part
from .cases import Case
from .operator import Operator, pick_operator, selected
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

    def traffic(self, context: C) -> tuple[Arm, ...]:
        """Valid traffic in state, one arm per shape: sequences that build on what they made
        (none: the family has no traffic yet)."""

    def in_state(self, context: C) -> Callable[[Source, Case], Case] | None:
        """Puts a malformed case after valid traffic that leaves its channel (session) in
        state, reading the traffic from the source (None: the family cannot yet)."""


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
    traffic_share: float = 0.0,
    state_share: float = 0.0,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Chooser:
    """Reads what a campaign sends from a blob (:class:`~.arms.Chooser`): a valid case of one
    method ``valid_share`` of the time, valid traffic ``traffic_share``, a malformed case of
    ``operators`` after valid traffic ``state_share``, else a malformed case alone (a family
    without traffic gives its share to valid cases of one method; without cases in state, to
    malformed cases alone). The blob's first byte decides which, the
    next the arm (method, shape, operator), so a zeroed blob reads as the first method's
    valid case."""
    for name, share in (("valid_share", valid_share), ("traffic_share", traffic_share),
                        ("state_share", state_share)):  # fmt: skip
        if not 0.0 <= share <= 1.0:
            raise InvalidArgument(f"{name}={share!r}: must be between 0 and 1")
    if valid_share + traffic_share + state_share > 1.0:
        raise InvalidArgument("valid_share + traffic_share + state_share: at most 1")
    context = family.context(protocol, frame_max=frame_max, prefix=prefix, **options)
    # (an operator with no case against this peer, such as an oversized frame where it set no
    # limit, is not drawn)
    chosen = tuple(
        op
        for op in selected(family.catalogue(protocol), operators, protocol)
        if op.usable_in(context)
    )
    valid = tuple(Arm(m, family.valid(context, (m,))) for m in family.case_methods(context))
    malformed = tuple(Arm(op.name, functools.partial(op.case, context=context)) for op in chosen)
    put = family.in_state(context)
    state = (
        ()
        if put is None or not chosen
        else tuple(Arm(f"{op.name} in state", _in_state(op, context, put)) for op in chosen)
    )
    traffic = family.traffic(context)
    rest = 1.0 - valid_share - traffic_share - state_share
    if not traffic:  # a family without traffic: valid cases of one method take its share
        valid_share, traffic_share = valid_share + traffic_share, 0.0
    if not state:  # nor cases in state: malformed cases alone take theirs
        rest, state_share = rest + state_share, 0.0
    return Chooser(
        (
            Part("valid", valid_share, valid),
            Part("traffic", traffic_share, traffic),
            Part("state", state_share, state),
            Part("malformed", rest, malformed),
        )
    )


def _in_state(
    operator: Operator, context: Any, put: Callable[[Source, Case], Case]
) -> Callable[[Source], Case]:
    return lambda src: put(src, operator.case(src, context))


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
