"""Valid cases: frames a broker must accept, with the reaction their method requires.

A valid case is a method a client may send (and its content), with arguments drawn from the
spec model. Its reaction is the method's responses, or no error for an asynchronous method. Its
arguments are valid on the wire but drawn at random: a queue it names may not exist. The
specification says what answers that: the on-failure codes of the method's rules, and of the
rules on fields of the same domains elsewhere (a queue name's ``not-found`` applies wherever a
queue is named). Those closes are tolerated; any other is a failure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from amqpfuzz.spec.amqp091 import Constant, Method, Spec
from amqpfuzz.spec.amqp091.codec import Codec
from amqpfuzz.spec.amqp091.model import PRIMITIVE_TYPES

from ..cases import Case, Reaction
from .frames import blobs, sequence_builder
from .source import Source
from .wire import CASE_CHANNEL, wire_frame

__all__ = ["tolerated", "valid", "valid_builder"]


# The connection exceptions that refuse a command (not a frame, not a syntax the client broke).
REFUSALS = ("command-invalid", "resource-error", "not-allowed", "not-implemented")


@functools.lru_cache(maxsize=8)
def _coded(spec: Spec) -> bool:
    """Whether the specification's rules name reply codes (0-9-1 does; the 0-8 and 0-9 files
    have no rules at all)."""
    return any(rule.on_failure for rule in spec.rules())


@functools.lru_cache(maxsize=1024)
def tolerated(spec: Spec, method: Method) -> tuple[Constant, ...]:
    """The reply codes the specification's rules name for ``method`` and its domains. Where
    the rules name none (0-8 and 0-9, whose documents say only that a server which "could not
    complete the method will raise a channel or connection exception"), every channel
    exception and the connection exceptions that refuse a command."""
    if not _coded(spec):
        return tuple(
            c for c in spec.constants if c.is_soft_error or (c.is_hard_error and c.name in REFUSALS)
        )
    domains = {f.domain for f in method.fields if f.domain not in PRIMITIVE_TYPES}
    names = {r.on_failure for r in method.rules if r.on_failure}
    for other in spec.methods:
        for fld in other.fields:
            if other is method or fld.domain in domains:
                names.update(r.on_failure for r in fld.rules if r.on_failure)
    return tuple(spec.constant(name) for name in sorted(names))


def _responses(method: Method) -> tuple[str, ...]:
    return tuple(f"{method.class_name}.{r}" for r in method.responses)


def valid(
    spec: Spec,
    codec: Codec,
    methods: Sequence[Method],
    frame_max: int,
    *,
    prefix: str | None = None,
    max_body: int | None = None,
) -> st.SearchStrategy[Case]:
    """Valid cases of ``methods`` on the case's channel (one blob: method, arguments, content)."""
    build = valid_builder(spec, codec, methods, frame_max, prefix=prefix, max_body=max_body)
    return blobs().map(lambda blob: build(Source(blob)))


def valid_builder(
    spec: Spec,
    codec: Codec,
    methods: Sequence[Method],
    frame_max: int,
    *,
    prefix: str | None = None,
    max_body: int | None = None,
) -> Callable[[Source], Case]:
    """Reads a valid case from a source."""

    def case(src: Source) -> Case:
        frames = build(src)
        method = frames[0].method  # type: ignore[union-attr]
        return Case(
            steps=tuple(wire_frame(codec, f) for f in frames),
            expected=Reaction.reply(_responses(method), tolerated(spec, method)),
            spec_ref=method.full_name,
            frames=tuple(frames),
            blob=src.data,
        )

    build = sequence_builder(
        spec,
        methods,
        CASE_CHANNEL,
        frame_max,
        dialect=codec.dialect,
        prefix=prefix,
        max_body=max_body,
    )
    return case
