"""What the HTML report shows, as plain Python values for :mod:`.html` to render: the rows the
job has just written for the latest night, and one point per night for the trends (earlier
nights from the tables already in the output)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .tables import Rows

__all__ = ["Page", "Trend", "build", "trends"]

TREND_NIGHTS = 60  # the trend charts show at most this many nights, the latest ones
STATUS_ORDER = {"new": 0, "regressed": 1, "recurring": 2, "fixed": 3}


@dataclass(frozen=True, slots=True)
class Trend:
    night: dt.date
    cases: int
    failures: int
    signatures: int
    cases_per_s: float


@dataclass(frozen=True, slots=True)
class Page:
    night: dt.date
    headline: dict[str, float]
    trends: list[Trend]
    signatures: Rows  # new, regressed, recurring, fixed; most frequent first
    heat_rows: list[str]  # targets
    heat_columns: list[str]  # spec classes
    heat: dict[tuple[str, str], tuple[int, int, int]]  # failing, judged, total
    coverage: Rows
    runs: Rows
    divergences: Rows
    ingest: Rows


def trends(runs: Iterable[Mapping[str, Any]], failing: Mapping[dt.date, int]) -> list[Trend]:
    """One point per night of ``runs`` rows (any nights); ``failing`` counts the signatures
    that failed each night."""
    totals: dict[dt.date, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for r in runs:
        point = totals[r["run_date"]]
        point[0] += r["cases"]
        point[1] += r["failures"]
        point[2] += r["duration_s"] or 0.0
    return [
        Trend(
            night=night,
            cases=int(cases),
            failures=int(failures),
            signatures=failing.get(night, 0),
            cases_per_s=cases / duration if duration else 0.0,
        )
        for night, (cases, failures, duration) in sorted(totals.items())
    ]


def _heat(conformance: Rows) -> dict[tuple[str, str], tuple[int, int, int]]:
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    several = len({r.get("target_protocol") for r in conformance}) > 1
    for r in conformance:
        target = r["target_label"] or "?"
        if several:  # a target per protocol it was tried in
            target = f"{target} · AMQP {r.get('target_protocol') or '?'}"
        cell = cells[(target, r["spec_class"] or "?")]
        cell[0] += r["fail"] + r["error"]
        cell[1] += r["total"] - r["skip"]
        cell[2] += r["total"]
    return {key: (a, b, c) for key, (a, b, c) in cells.items()}


def build(night: dt.date, tables: Mapping[str, Rows], history: Iterable[Trend]) -> Page:
    """The page for ``night`` from the rows of the tables just computed (any nights) and the
    trend points of earlier nights."""

    def tonight(name: str) -> Rows:
        return [r for r in tables.get(name, []) if r["run_date"] == night]

    runs = sorted(tonight("runs"), key=lambda r: (r["target_label"] or "", r["run_id"]))
    signatures = sorted(
        tonight("signatures"),
        key=lambda r: (STATUS_ORDER[r["status"]], -r["occurrences"], r["signature"]),
    )
    ingest = sorted(tonight("ingest"), key=lambda r: r["file"])
    heat = _heat(tonight("conformance"))
    failing: dict[dt.date, int] = defaultdict(int)
    for s in tables.get("signatures", []):
        failing[s["run_date"]] += s["occurrences"] > 0
    points = {t.night: t for t in history}
    points.update({t.night: t for t in trends(tables.get("runs", []), failing)})
    cases = sum(r["cases"] for r in runs)
    duration = sum(r["duration_s"] for r in runs)
    statuses = [s["status"] for s in signatures]
    headline: dict[str, float] = {
        "cases": cases,
        "failures": sum(r["failures"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "signatures": sum(1 for s in signatures if s["occurrences"] > 0),
        "new": statuses.count("new"),
        "regressed": statuses.count("regressed"),
        "fixed": statuses.count("fixed"),
        "cases_per_s": cases / duration if duration else 0.0,
        "runs": len({r["run_id"] for r in runs}),
        "targets": len({r["target_label"] for r in runs}),
        "records": sum(r["records"] for r in ingest),
        "torn_lines": sum(r["torn_lines"] for r in ingest),
        "duplicates": sum(r["duplicates"] for r in ingest),
        "malformed_lines": sum(r["malformed_lines"] for r in ingest),
    }
    divergences = sorted(
        tonight("divergences"),
        key=lambda d: (-d["occurrences"], d["spec_ref"] or "", d["target_label"] or ""),
    )
    return Page(
        night=night,
        headline=headline,
        trends=[points[n] for n in sorted(points) if n <= night][-TREND_NIGHTS:],
        signatures=signatures,
        heat_rows=sorted({t for t, _ in heat}),
        heat_columns=sorted({c for _, c in heat}),
        heat=heat,
        coverage=tonight("coverage"),
        runs=runs,
        divergences=divergences[:100],
        ingest=ingest,
    )
