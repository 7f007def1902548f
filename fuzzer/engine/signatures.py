"""Failure signatures: readable keys, stable across runs and machines, that two occurrences of
the same defect share.

A signature names what judged (the oracle, ``scenario``, ``stateful``, ``differential``), what
was broken (a spec reference where it says so) and the reactions (expected -> observed, with
codes), and never bytes drawn at random or names made for one run, so that reports collapse
repeats and profiles can list them. Every kind of signature is made here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amqpfuzz.strategies import Case

from ..protocols import Outcome

__all__ = [
    "UNATTRIBUTED",
    "differential",
    "fuzz",
    "program",
    "scenario",
    "side_by_side",
]

# A crash that could not be pinned on cases (the broker would not come back to find out).
UNATTRIBUTED = "liveness:-:unattributed:alive->broker-down"


def side_by_side(names: list[str]) -> str:
    """A crash that needs several cases in flight, none of which does it alone: the operators
    (or methods) of the smallest set found."""
    return f"liveness:-:side-by-side({'+'.join(sorted(names))}):alive->broker-down"


def _observed(outcome: Outcome) -> str:
    code = outcome.code
    return outcome.kind.value + (f"/{code}" if code is not None else "")


def fuzz(oracle: str, case: Case, outcome: Outcome) -> str:
    """``oracle:spec_ref:operator:expected->observed``. The spec reference of a valid case is
    its method, of a rule-breaking case its rule; a frame-level operator breaks whatever method
    it drew, so the operator alone says what was broken (``-``)."""
    expected = case.expected.outcome.value
    if case.expected.code is not None:
        expected += f"/{case.expected.code}"
    where = case.spec_ref if case.rule_ref else "-"
    return f"{oracle}:{where}:{case.operator or 'valid'}:{expected}->{_observed(outcome)}"


def differential(case: Case, reactions: Mapping[str, Mapping[str, Any]]) -> str:
    """``differential:spec_ref:operator:reaction|reaction|...`` in the targets' order."""
    shown = "|".join(
        f"{r['outcome']}/{r['reply_code'] if r.get('reply_code') is not None else r.get('condition')}"
        for r in reactions.values()
    )
    where = case.spec_ref if case.operator is None else "-"
    return f"differential:{where}:{case.operator or 'valid'}:{shown}"


def scenario(spec_ref: str, expected: Mapping[str, Any], observed: Mapping[str, Any]) -> str:
    """``scenario:rule:expected->observed``."""
    return f"scenario:{spec_ref}:{_reaction(expected)}->{_reaction(observed)}"


def _reaction(reaction: Mapping[str, Any]) -> str:
    """A reaction in a signature: no free text, no names."""
    parts = [str(reaction["outcome"])]
    code = reaction.get("reply_code")
    if code is None:
        code = reaction.get("condition")
    if code is not None:
        parts.append(str(code))
    elif reaction.get("reply") and reaction["outcome"] in ("reply", "deliveries"):
        parts.append(str(reaction["reply"]))
    return "/".join(parts)


def program(invariant: str, step: str) -> str:
    """``stateful:invariant:step``: the invariant a program broke, and in which kind of step."""
    return f"stateful:{invariant}:{step}"
