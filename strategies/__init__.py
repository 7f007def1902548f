"""Hypothesis strategies for AMQP, derived from the specification model.

Every protocol family has a package of its own (:mod:`.amqp091` for 0-8, 0-9 and 0-9-1,
:mod:`.amqp10` for 1.0) with the strategies of its wire format; this module gives what every
family has, the same way for each (``protocol="1.0"``), and re-exports each family's own
strategies: 0-9-1's values, arguments, frames and content; 1.0's :func:`type_values`,
:func:`composites`, :func:`messages` and :func:`connection_frames_of`.
Nothing is written per method: a method or domain added to a specification file gets strategies
with no code change. Factories check their arguments when called and raise
:class:`hypothesis.errors.InvalidArgument` with a clear message.

A case is read from one blob of bytes (Hypothesis spends more on each of its own choices than
a frame is worth): zeros read as the first method or operator and the simplest arguments, so
shrinking the blob shrinks the case.

>>> from amqpfuzz.strategies import method_frames
>>> method_frames("queue.declare").example()  # doctest: +SKIP
queue.declare(ch=1, queue='a', passive=False, ...)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, family_of

from . import amqp010, amqp091, amqp10
from . import family as building
from .amqp091 import (
    CASE_CHANNEL,
    WireFrame,
    arguments,
    content,
    domain_values,
    field_arrays,
    field_tables,
    frame_sequences,
    method_frames,
)
from .amqp10 import composites, connection_frames_of, messages, type_values
from .arms import Arm, Chooser
from .cases import Case, Code, ErrorCode, Placement, Reaction, Step
from .family import StrategyFamily
from .operator import Built, Operator, Special

__all__ = [
    "CASE_CHANNEL",
    "FAMILIES",
    "Arm",
    "Built",
    "Case",
    "Chooser",
    "Code",
    "ErrorCode",
    "Operator",
    "Placement",
    "Reaction",
    "Special",
    "Step",
    "StrategyFamily",
    "WireFrame",
    "arguments",
    "case_builder",
    "case_methods",
    "composites",
    "connection_frames_of",
    "content",
    "domain_values",
    "family_for",
    "field_arrays",
    "field_tables",
    "frame_sequences",
    "fuzz_batches",
    "fuzz_cases",
    "malformed_case_builder",
    "malformed_cases",
    "messages",
    "method_frames",
    "operators",
    "type_values",
    "valid_case_builder",
    "valid_cases",
]

# Every family's strategies, by the family's name (the registry's key in every layer).
FAMILIES: Mapping[str, StrategyFamily[Any]] = {
    f.name: f for f in (amqp091.FAMILY, amqp10.FAMILY, amqp010.FAMILY)
}


def family_for(protocol: str) -> StrategyFamily[Any]:
    """The strategies of ``protocol``'s family (InvalidArgument if it has none)."""
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise InvalidArgument(f"protocol={protocol!r}: known protocols are {list(PROTOCOLS)}")
    found = FAMILIES.get(family_of(protocol))
    if found is None:
        raise InvalidArgument(f"protocol={protocol!r}: no strategies for it yet")
    return found


def operators(protocol: str = DEFAULT_PROTOCOL) -> tuple[Operator, ...]:
    """The mutation operators that apply to ``protocol``, in catalogue order: each has a
    ``name``, what it breaks (``description``, ``breaks``), its ``level`` and the reaction the
    specification requires (``reaction(spec)``)."""
    return family_for(protocol).catalogue(protocol)


def case_methods(protocol: str = DEFAULT_PROTOCOL) -> tuple[str, ...]:
    """The methods :func:`valid_cases` (and the valid share of :func:`fuzz_cases`) draw from:
    every method a client may send where a case runs, by its full name."""
    family = family_for(protocol)
    return family.case_methods(family.context(protocol, frame_max=None, prefix=None))


def case_builder(
    operators: Sequence[str] | None = None,
    *,
    valid_share: float = 0.25,
    traffic_share: float = 0.0,
    state_share: float = 0.0,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Chooser:
    """What :func:`fuzz_cases` maps its blobs through (a :class:`Chooser`: it also says which
    arm a blob reads as, and aims a blob at an arm): a valid case of one method about
    ``valid_share`` of the time, valid traffic ``traffic_share``, a malformed case after
    valid traffic ``state_share``, else a malformed case alone, from a blob of the family's
    size."""
    return building.case_builder(
        family_for(protocol),
        protocol,
        operators=operators,
        valid_share=valid_share,
        traffic_share=traffic_share,
        state_share=state_share,
        frame_max=frame_max,
        prefix=prefix,
        **options,
    )


def valid_case_builder(
    methods: Sequence[str] | None = None,
    *,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Callable[[bytes], Case]:
    """What :func:`valid_cases` maps its blobs through."""
    family = family_for(protocol)
    return building.valid_case_builder(
        family, protocol, methods, frame_max=frame_max, prefix=prefix, **options
    )


def malformed_case_builder(
    operators: Sequence[str] | None = None,
    *,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int | None = None,
    prefix: str | None = None,
    **options: Any,
) -> Callable[[bytes], Case]:
    """What :func:`malformed_cases` maps its blobs through."""
    family = family_for(protocol)
    return building.malformed_case_builder(
        family, protocol, operators, frame_max=frame_max, prefix=prefix, **options
    )


def fuzz_cases(
    operators: Sequence[str] | None = None,
    *,
    valid_share: float = 0.25,
    traffic_share: float = 0.0,
    state_share: float = 0.0,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int = 131072,
    prefix: str | None = None,
    **options: Any,
) -> st.SearchStrategy[Case]:
    """What a campaign sends: valid cases (any method a client may send on an open channel,
    with the reaction its method requires) about ``valid_share`` of the time, malformed cases
    (:func:`malformed_cases`) otherwise; valid traffic in state ``traffic_share`` of the time
    and malformed cases after such traffic ``state_share`` (both none by default). ``frame_max``
    is the one negotiated on the connection the cases will run on; with ``prefix``, every name
    a case creates starts with it. ``options`` go to the family (0-9-1: ``dialect``; 0-9-1 and
    1.0: ``traffic``, a broker's profile's data). One blob decides which kind and feeds the
    case, so Hypothesis shrinks towards a valid case of the first method, then the first
    operator."""
    build = case_builder(
        operators,
        valid_share=valid_share,
        traffic_share=traffic_share,
        state_share=state_share,
        protocol=protocol,
        frame_max=frame_max,
        prefix=prefix,
        **options,
    )
    return _blobs(protocol).map(build)


def fuzz_batches(
    size: int,
    operators: Sequence[str] | None = None,
    *,
    valid_share: float = 0.25,
    traffic_share: float = 0.0,
    state_share: float = 0.0,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int = 131072,
    prefix: str | None = None,
    **options: Any,
) -> st.SearchStrategy[list[Case]]:
    """``size`` cases of :func:`fuzz_cases` from one draw: Hypothesis chooses a random number
    generator, which fills each case's blob. Hypothesis draws bytes one at a time, which costs
    more than building the case; a campaign draws batches this way to send cases as fast as a
    broker answers. A batch does not shrink as a whole: a case shrinks on its own, through
    :func:`fuzz_cases` with the same arguments, starting from its ``blob``."""
    if not isinstance(size, int) or size < 1:
        raise InvalidArgument(f"size={size!r}: a batch holds at least one case")
    build = case_builder(
        operators,
        valid_share=valid_share,
        traffic_share=traffic_share,
        state_share=state_share,
        protocol=protocol,
        frame_max=frame_max,
        prefix=prefix,
        **options,
    )
    blob = family_for(protocol).blob
    return st.randoms(use_true_random=True).map(
        lambda rnd: [build(rnd.randbytes(blob)) for _ in range(size)]
    )


def malformed_cases(
    operators: Sequence[str] | None = None,
    *,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int = 131072,
    prefix: str | None = None,
    **options: Any,
) -> st.SearchStrategy[Case]:
    """Malformed cases: an operator and the valid frames it breaks, drawn together.

    ``operators`` names the operators to use (all that apply to the protocol by default). Each
    case carries its exact bytes (:meth:`Case.render`), a readable repr naming the operator,
    and the reaction the specification requires. Shrinks towards the first operator of the
    catalogue and then towards that operator's simplest frames.
    """
    build = malformed_case_builder(
        operators, protocol=protocol, frame_max=frame_max, prefix=prefix, **options
    )
    return _blobs(protocol).map(build)


def valid_cases(
    methods: Sequence[str] | None = None,
    *,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int = 131072,
    prefix: str | None = None,
    **options: Any,
) -> st.SearchStrategy[Case]:
    """Valid cases of ``methods`` (by default every method a client may send on an open
    channel): the method, its content if it carries one, and the reaction its method requires.
    Shrinks towards the first method named and its simplest arguments."""
    build = valid_case_builder(
        methods, protocol=protocol, frame_max=frame_max, prefix=prefix, **options
    )
    return _blobs(protocol).map(build)


def _blobs(protocol: str) -> st.SearchStrategy[bytes]:
    size = family_for(protocol).blob
    return st.binary(min_size=size, max_size=size)
