"""Failure signatures night by night, and what each one's status is compared with earlier nights.

A signature is stable across runs and machines for the same defect, so failures from any number
of workers collapse into one row per night (computed by Spark from the facts). Statuses are then
worked out on the driver: one row per signature and night is small data, and the rules read
better as plain code. A signature is only judged on the nights when one of the targets it has
failed on was run: a night without those targets says nothing about it. On such a night it is

- ``new`` if it fails and never failed before,
- ``recurring`` if it fails and also failed the previous night it was judged,
- ``regressed`` if it fails, failed at some earlier night, but not the previous one,
- ``fixed`` if it does not fail but did the previous night it was judged.

A night where it neither fails nor failed the night before gets no row. Earlier nights come from
the table already in the output, so a night's statuses depend on the nights processed before
it: process nights in order (or several at once), and process later nights again after
rewriting an earlier one.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame

from .facts import by_signature, signed_failure

__all__ = ["Sighting", "Status", "as_rows", "collect_sightings", "night_signatures", "statuses"]


@dataclass(frozen=True, slots=True)
class Sighting:
    """What one night says about one signature (times in microseconds since the epoch)."""

    run_date: dt.date
    signature: str
    occurrences: int
    targets: tuple[str, ...]
    first_us: int | None
    last_us: int | None
    oracle: str | None
    spec_ref: str | None
    message: str | None
    reproducer: str | None
    expected: str | None = None  # the reaction the spec requires, of the smallest case
    observed: str | None = None  # and what the broker did
    protocol: str | None = None


@dataclass(frozen=True, slots=True)
class Status:
    """A row of the signatures table (times in microseconds since the epoch)."""

    sighting: Sighting
    status: str
    first_us: int | None
    last_us: int | None
    total_occurrences: int
    nights_seen: int


def night_signatures(facts: DataFrame) -> DataFrame:
    """Per night and signature: how often, on which targets, and the smallest reproducer."""
    return by_signature(facts, signed_failure()).select(
        "run_date",
        "signature",
        "occurrences",
        "targets",
        "first_us",
        "last_us",
        "best.oracle",
        "best.spec_ref",
        "best.message",
        "best.reproducer",
        "best.expected",
        "best.observed",
        "best.protocol",
    )


def collect_sightings(frame: DataFrame) -> list[Sighting]:
    """The rows of a :func:`night_signatures`-shaped frame as :class:`Sighting` values."""
    return [Sighting(**{**row.asDict(), "targets": tuple(row.targets)}) for row in frame.collect()]


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def statuses(
    sightings: Iterable[Sighting],
    ran: Iterable[tuple[dt.date, str]],
    report_nights: Sequence[dt.date],
) -> list[Status]:
    """The signatures table's rows for ``report_nights``.

    ``sightings`` are every night known (earlier ones from the output, with occurrences); ``ran``
    the (night, target label) pairs of every night known.
    """
    by_signature: dict[str, dict[dt.date, Sighting]] = defaultdict(dict)
    for s in sightings:
        by_signature[s.signature][s.run_date] = s
    nights_of: dict[str, set[dt.date]] = defaultdict(set)
    for night, target in ran:
        nights_of[target].add(night)
    wanted = set(report_nights)
    rows = []
    for _, seen in sorted(by_signature.items()):
        targets = {t for s in seen.values() for t in s.targets}
        judged = sorted(set(seen).union(*(nights_of[t] for t in targets)))
        last: Sighting | None = None  # the latest night it failed
        failed_before = failed_last = False
        first_us = last_us = None
        total = nights = 0
        for night in judged:
            fails = night in seen
            if fails:
                now = seen[night]
                first_us, last_us = _min(first_us, now.first_us), _max(last_us, now.last_us)
                total, nights = total + now.occurrences, nights + 1
                status = "recurring" if failed_last else "regressed" if failed_before else "new"
                last = now
            elif failed_last and last is not None:
                ran_here = tuple(sorted(t for t in targets if night in nights_of[t]))
                now, status = (
                    replace(last, run_date=night, occurrences=0, targets=ran_here),
                    "fixed",
                )
            else:
                now, status = None, None
            if now is not None and status is not None and night in wanted:
                rows.append(Status(now, status, first_us, last_us, total, nights))
            failed_before, failed_last = failed_before or fails, fails
    return rows


def as_rows(statuses: Iterable[Status]) -> list[dict[str, Any]]:
    """Rows of the signatures table (times in microseconds)."""
    return [
        {
            "signature": r.sighting.signature,
            "status": r.status,
            "oracle": r.sighting.oracle,
            "spec_ref": r.sighting.spec_ref,
            "message": r.sighting.message,
            "occurrences": r.sighting.occurrences,
            "targets": list(r.sighting.targets),
            "reproducer": r.sighting.reproducer,
            "expected": r.sighting.expected,
            "observed": r.sighting.observed,
            "protocol": r.sighting.protocol,
            "first_seen": r.first_us,
            "last_seen": r.last_us,
            "total_occurrences": r.total_occurrences,
            "nights_seen": r.nights_seen,
            "run_date": r.sighting.run_date,
        }
        for r in statuses
    ]
