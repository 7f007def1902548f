"""Operators that break a rule whose on-failure code is a channel exception.

Each rule-breaking case names its rule (``spec_ref``): the same operator breaks different
rules, and each is a defect of its own."""

from __future__ import annotations

import functools
import re

from amqpfuzz.spec.amqp091 import Field, Method, Spec
from amqpfuzz.spec.amqp091.codec import MethodFrame

from ...cases import Placement
from ...operator import Built, Operator, registrar
from ..context import CODES, Context
from ..frames import ENTITY_DOMAINS, ZERO
from ..source import Source
from ..wire import CASE_CHANNEL

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)


@functools.cache
def _rules_failing_with(spec: Spec, code: str) -> tuple[tuple[Method, Field | None, str], ...]:
    """(method, the rule's field or None, rule ref) of every rule that fails with ``code``."""
    found: list[tuple[Method, Field | None, str]] = []
    for method in spec.methods:
        if not method.sent_by("client"):
            continue
        found += [(method, None, r.ref) for r in method.rules if r.on_failure == code]
        for fld in method.fields:
            found += [(method, fld, r.ref) for r in fld.rules if r.on_failure == code]
    return tuple(found)


def _plain(method: Method) -> list[object]:
    """The simplest arguments: zero values, so that only the rule under test can fail. An
    exchange type must name one the server implements: "direct" is one the class's rule
    ``exchange/required-types`` requires of every server."""
    return [
        "direct" if f.name == "type" and f.type == "shortstr" else ZERO[f.type]
        for f in method.fields
    ]


# A rule about an entity's existence says so: "a queue that does not exist", "a non-existent
# exchange". The other not-found rules on the same fields (the queue-known rules: "The client
# MUST either specify a queue name or have previously declared a queue on the same channel")
# are about a name left empty, which a case naming a missing entity does not break.
_EXISTENCE = re.compile(r"\bdoes not exist\b|\bnon-existent\b")


@functools.cache
def _entity_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    """Rules that fail with not-found on a method naming a queue or exchange, and that a name
    of one that does not exist breaks (their text speaks of an entity that does not exist)."""
    return tuple(
        (m, f, ref)
        for m, f, ref in _rules_failing_with(spec, "not-found")
        if any(fld.domain in ENTITY_DOMAINS for fld in m.fields)
        and (f is None or f.domain in ENTITY_DOMAINS or f.type == "bit")
        and _EXISTENCE.search(" ".join(spec.rule(ref).doc.split()))
    )


@functools.cache
def _reserved_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    return tuple(
        x for x in _rules_failing_with(spec, "access-refused") if x[2].endswith("/reserved")
    )


@functools.cache
def _transacted_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    rules = _rules_failing_with(spec, "precondition-failed")
    return tuple(x for x in rules if x[2].endswith("/transacted"))


@functools.cache
def _tag_rules(spec: Spec) -> tuple[tuple[Method, Field | None, str], ...]:
    rules = _rules_failing_with(spec, "precondition-failed")
    return tuple(x for x in rules if x[2].endswith("/exists"))


def _entity_case(src: Source, ctx: Context) -> Built:
    """A not-found rule on an entity name, broken: the method naming one that does not exist
    (every other name it uses is declared first)."""
    method, rule_field, ref = src.pick(_entity_rules(ctx.spec))
    frame = ctx.neutral(src, (method,))
    missing = ctx.fresh_name(src, "missing-")
    values = list(frame.values)
    for i, fld in enumerate(method.fields):
        if rule_field is not None and fld is rule_field and fld.type == "bit":
            values[i] = True  # the rule is about this flag (queue.declare's passive)
        elif fld.domain in ENTITY_DOMAINS and (
            rule_field is None or rule_field.type == "bit" or fld is rule_field
        ):
            values[i] = missing
    broken = MethodFrame(CASE_CHANNEL, method, tuple(values))
    steps = (*ctx.setup(broken, frozenset({missing})), ctx.wire(broken), *ctx.completion(broken))
    return Built(steps, ref, f"breaks rule {ref}", placement=Placement.FRESH, frames=(broken,))


@operator(
    "missing-entity",
    "entity existence",
    "names a queue or exchange that does not exist",
    ("not-found",),
    "rule",
    targets=_entity_rules,
)
def missing_entity(src: Source, ctx: Context) -> Built:
    return _entity_case(src, ctx)


@operator(
    "reserved-name",
    "reserved names",
    "declares a name starting with amq.",
    ("access-refused",),
    "rule",
    targets=_reserved_rules,
)
def reserved_name(src: Source, ctx: Context) -> Built:
    method, rule_field, ref = src.pick(_reserved_rules(ctx.spec))
    values = _plain(method)
    index = method.fields.index(rule_field) if rule_field is not None else 0
    values[index] = "amq." + ctx.fresh_name(src)  # ours, if a lenient broker declares it
    broken = MethodFrame(CASE_CHANNEL, method, tuple(values))
    return Built(
        (ctx.wire(broken),), ref, f"breaks rule {ref}", placement=Placement.FRESH, frames=(broken,)
    )


@operator(
    "not-transacted",
    "transaction state",
    "commits or rolls back a channel not in tx mode",
    ("precondition-failed",),
    "rule",
    targets=_transacted_rules,
)
def not_transacted(src: Source, ctx: Context) -> Built:
    method, _, ref = src.pick(_transacted_rules(ctx.spec))
    frame = ctx.frame_of(src, (method,))
    return Built(
        (ctx.wire(frame),), ref, f"breaks rule {ref}", placement=Placement.FRESH, frames=(frame,)
    )


@operator(
    "unknown-delivery-tag",
    "delivery tags",
    "acknowledges a delivery that never happened",
    ("precondition-failed",),
    "rule",
    targets=_tag_rules,
)
def unknown_delivery_tag(src: Source, ctx: Context) -> Built:
    method, _, ref = src.pick(_tag_rules(ctx.spec))
    values = [
        src.between(1, 2**64 - 1) if f.domain == "delivery-tag" else v
        for f, v in zip(method.fields, _plain(method), strict=True)
    ]
    broken = MethodFrame(CASE_CHANNEL, method, tuple(values))
    return Built(
        (ctx.wire(broken),), ref, f"breaks rule {ref}", placement=Placement.FRESH, frames=(broken,)
    )
