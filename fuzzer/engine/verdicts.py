"""Verdicts against a profile, and divergence between targets: each decided here only.

A failure a target's profile documents is ``xfail``, not hidden; a deviation the profile records
for a rule that no longer happens is ``xpass`` where it can be told (a scenario's rule: it ran
and passed), so that a stale profile is seen. Targets that react differently to the same case
*diverge*, even where each reaction is one the specification allows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..brokers.profiles import Deviation
from ..protocols import Outcome
from ..records import reaction_of
from .targets import TargetState

__all__ = ["FAILING", "Verdict", "diverges", "judge_against", "odd_one_out"]

# The verdicts that make a run fail: failures outside the profile, errors, and xpasses.
FAILING = ("fail", "error", "xpass")


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str  # pass, fail, xfail, xpass (and error, skip, which no profile changes)
    reason: str = ""  # the profile's reason for an xfail or xpass
    deviation: Deviation | None = None
    profile: str | None = None  # the name of the profile that holds ``deviation``

    def known(self) -> dict[str, Any]:
        """The fields an xfail's or xpass's record carries: the profile's reason
        (``deviation``), which entry of which profile (``deviation_entry``, ``profile``)."""
        if self.deviation is None:
            return {}
        return {
            "deviation": self.deviation.reason,
            "deviation_entry": self.deviation.entry,
            "profile": self.profile or "?",
        }


def judge_against(
    target: TargetState,
    status: str,
    *,
    signature: str | None = None,
    rule: str | None = None,
    operator: str | None = None,
    protocol: str | None = None,
    xpass: bool = False,
) -> Verdict:
    """The verdict of something that ended in ``status`` (pass, fail, error, skip) on
    ``target``, given its profile. A failure is looked up by its ``signature``, ``rule`` or
    ``operator``; a pass becomes ``xpass`` only where ``xpass`` says a pass can be told from
    a deviation (a rule's scenario), since a fuzz case that passes says nothing of the rest."""
    if status not in ("pass", "fail") or (status == "pass" and not xpass):
        return Verdict(status)
    deviation = target.deviation(signature, rule, operator, protocol)
    if deviation is None:
        return Verdict(status)
    name = target.profile.name if target.profile else "?"
    if status == "fail":
        return Verdict("xfail", deviation.reason, deviation, name)
    if deviation.sometimes:  # a race of the broker's: its absence this time says nothing
        return Verdict(status)
    reason = f"the profile {name} records a deviation that did not happen: {deviation.reason}"
    return Verdict("xpass", reason, deviation, name)


def odd_one_out(reactions: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The one target (by label) whose reaction differs from all the others', which agree:
    with three targets or more, where the specification is silent or ambiguous, the one to look
    at first. None when there is no such majority (two targets, or no single dissenter)."""
    if len(reactions) < 3:
        return None
    keys = {
        label: (r["outcome"], r.get("reply_code"), r.get("condition"))
        for label, r in reactions.items()
    }
    counts = Counter(keys.values())
    if len(counts) != 2 or min(counts.values()) != 1:
        return None
    (lone,) = [key for key, count in counts.items() if count == 1]
    return next(label for label, key in keys.items() if key == lone)


def diverges(outcomes: Mapping[str, Outcome]) -> dict[str, dict[str, Any]] | None:
    """Each target's reaction (by label) if they are not all the same (by outcome and code),
    else None."""
    reactions = {label: reaction_of(outcome) for label, outcome in outcomes.items()}
    keys = {(r["outcome"], r["reply_code"], r["condition"]) for r in reactions.values()}
    return reactions if len(keys) > 1 else None
