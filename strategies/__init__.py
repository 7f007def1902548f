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

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, family_of

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
from .cases import Case, Code, Reaction, Step

__all__ = [
    "CASE_CHANNEL",
    "Case",
    "Code",
    "Reaction",
    "Step",
    "WireFrame",
    "arguments",
    "case_methods",
    "composites",
    "connection_frames_of",
    "content",
    "domain_values",
    "field_arrays",
    "field_tables",
    "frame_sequences",
    "fuzz_batches",
    "fuzz_cases",
    "malformed_cases",
    "messages",
    "method_frames",
    "operators",
    "type_values",
    "valid_cases",
]


def _family(protocol: str) -> ModuleType:
    """The strategies package of ``protocol``'s family (InvalidArgument if it has none)."""
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise InvalidArgument(f"protocol={protocol!r}: known protocols are {list(PROTOCOLS)}")
    try:
        return importlib.import_module(f"{__name__}.{family_of(protocol)}")
    except ModuleNotFoundError:
        raise InvalidArgument(f"protocol={protocol!r}: no strategies for it yet") from None


def operators(protocol: str = DEFAULT_PROTOCOL) -> tuple[Any, ...]:
    """The mutation operators that apply to ``protocol``, in catalogue order: each has a
    ``name``, what it breaks (``description``, ``breaks``), its ``level`` and the reaction the
    specification requires (``reaction(spec)``)."""
    return tuple(_family(protocol).operators(protocol))


def case_methods(protocol: str = DEFAULT_PROTOCOL) -> tuple[str, ...]:
    """The methods :func:`valid_cases` (and the valid share of :func:`fuzz_cases`) draw from:
    every method a client may send where a case runs, by its full name."""
    return tuple(_family(protocol).case_methods(protocol))


def fuzz_cases(
    operators: Sequence[str] | None = None,
    *,
    valid_share: float = 0.25,
    protocol: str = DEFAULT_PROTOCOL,
    frame_max: int = 131072,
    prefix: str | None = None,
    **options: Any,
) -> st.SearchStrategy[Case]:
    """What a campaign sends: valid cases (any method a client may send on an open channel,
    with the reaction its method requires) about ``valid_share`` of the time, malformed cases
    (:func:`malformed_cases`) otherwise. ``frame_max`` is the one negotiated on the
    connection the cases will run on; with ``prefix``, every name a case creates starts with
    it. ``options`` go to the family (0-9-1: ``dialect``). One blob decides which kind and
    feeds the case, so Hypothesis shrinks towards a valid case of the first method, then the
    first operator."""
    family = _family(protocol)
    build = family.case_builder(
        protocol,
        operators=operators,
        valid_share=valid_share,
        frame_max=frame_max,
        prefix=prefix,
        **options,
    )
    return _blobs(family).map(build)


def fuzz_batches(
    size: int,
    operators: Sequence[str] | None = None,
    *,
    valid_share: float = 0.25,
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
    family = _family(protocol)
    build = family.case_builder(
        protocol,
        operators=operators,
        valid_share=valid_share,
        frame_max=frame_max,
        prefix=prefix,
        **options,
    )
    blob = family.BLOB
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
    family = _family(protocol)
    build = family.malformed_case_builder(
        protocol, operators, frame_max=frame_max, prefix=prefix, **options
    )
    return _blobs(family).map(build)


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
    family = _family(protocol)
    build = family.valid_case_builder(
        protocol, methods, frame_max=frame_max, prefix=prefix, **options
    )
    return _blobs(family).map(build)


def _blobs(family: ModuleType) -> st.SearchStrategy[bytes]:
    size: int = family.BLOB
    return st.binary(min_size=size, max_size=size)
