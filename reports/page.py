"""What the HTML report shows, as plain Python values for :mod:`.html` to render: the rows the
job has just written for the latest night, and one point per night for the trends (earlier
nights from the tables already in the output)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL, OUTSIDE, PROTOCOLS, column_of, reach

from .tables import Rows

__all__ = ["BrokerCoverage", "Matrix", "Page", "Trend", "build", "cell_id", "set_totals", "trends"]

TREND_NIGHTS = 90  # the trend charts show at most this many nights, the latest ones
CURVE_POINTS = 240  # a curve over a run is drawn through at most this many of its points
_TARGET = ("target_label", "target_product", "target_version", "target_protocol")
STATUS_ORDER = {"new": 0, "regressed": 1, "recurring": 2, "fixed": 3}


@dataclass(frozen=True, slots=True)
class Trend:
    night: dt.date
    cases: int
    failures: int
    signatures: int
    cases_per_s: float


@dataclass(frozen=True, slots=True)
class Matrix:
    """One protocol's conformance matrix: its targets by the spec's classes (then the few
    columns for what lies outside the spec); a cell is (failing, judged, total) cases, and
    the failure signatures behind it."""

    protocol: str
    rows: list[str]
    columns: list[str]
    cells: dict[tuple[str, str], tuple[int, int, int]]
    failures: dict[tuple[str, str], list[str]]  # signatures


@dataclass(frozen=True, slots=True)
class BrokerCoverage:
    """One target's own code covered on the night: per named set lines covered of relevant
    (the union over the night's runs and workers), per module the same and the functions no
    run entered; the curve over the run of the worker that covered most; a trend over nights."""

    label: str
    protocol: str
    product: str  # product and version, as the records name them
    how: str  # erlang-cover, coverage.py
    sets: list[tuple[str, int, int]]  # named set, covered, relevant
    modules: Rows  # module, set, covered, relevant, ratio, unreached (None: not known)
    curve: dict[str, list[tuple[float, float]]]  # per set: (seconds into the run, covered)
    drawn: tuple[str, str] | None  # the run and worker the curve is of
    workers: int  # how many workers (a run's) measured it on the night
    runs: int
    trend: dict[str, list[tuple[dt.date, float]]]  # per set: lines covered, night by night


@dataclass(frozen=True, slots=True)
class Page:
    night: dt.date
    headline: dict[str, float]
    trends: list[Trend]
    signatures: Rows  # new, regressed, recurring, fixed; most frequent first
    matrices: list[Matrix]  # one per protocol
    targets: Rows  # per target and protocol: cases by verdict
    deviations: Rows  # xpass first, then the most frequent
    scenarios: Rows
    coverage: Rows
    runs: Rows
    divergences: Rows
    ingest: Rows
    broker: list[BrokerCoverage] = field(default_factory=list)  # per target: its own code
    flaky: Rows = field(default_factory=list)  # failures whose replays did not all fail


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


def cell_id(protocol: str, row: str, column: str) -> str:
    """The HTML id of a matrix cell's list of failures."""
    raw = f"cell-{protocol}-{row}-{column}"
    return "".join(c if c.isalnum() else "-" for c in raw)


def _column(protocol: str, spec_ref: str | None) -> str:
    if protocol not in PROTOCOLS:  # a protocol this installation does not know
        return "frames" if not spec_ref else spec_ref.split(".")[0].split("/")[0]
    return column_of(protocol, spec_ref or "")


def _order(protocol: str, columns: set[str]) -> list[str]:
    known = list(reach(protocol).classes) if protocol in PROTOCOLS else []
    rank = {c: i for i, c in enumerate([*known, *OUTSIDE])}
    return sorted(columns, key=lambda c: (rank.get(c, len(rank)), c))


def _matrices(conformance: Rows, signatures: Rows, default: str) -> list[Matrix]:
    """A matrix per protocol: each spec_ref's cases added to its target's row, in its
    column; the signatures failing tonight put in the cells of their targets and spec_ref."""
    by: dict[str, dict[tuple[str, str], list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0, 0])
    )
    for r in conformance:
        protocol = r.get("target_protocol") or default
        cell = by[protocol][(r["target_label"] or "?", _column(protocol, r["spec_ref"]))]
        cell[0] += r["fail"] + r["error"] + r["xpass"]
        cell[1] += r["total"] - r["skip"]
        cell[2] += r["total"]
    out = []
    for protocol in sorted(by):
        cells = {key: (a, b, c) for key, (a, b, c) in by[protocol].items()}
        rows = sorted({t for t, _ in cells})
        failures: dict[tuple[str, str], list[str]] = defaultdict(list)
        for s in signatures:
            if s["occurrences"] <= 0:
                continue
            column = _column(protocol, s["spec_ref"])
            for target in s["targets"]:
                if cells.get((target, column), (0,))[0]:
                    failures[(target, column)].append(s["signature"])
        columns = _order(protocol, {c for _, c in cells})
        out.append(Matrix(protocol, rows, columns, cells, dict(failures)))
    return out


def _targets(conformance: Rows, default: str) -> Rows:
    """Per target and protocol: cases in each verdict."""
    sums: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in conformance:
        key = (r["target_label"] or "?", r.get("target_protocol") or default)
        for verdict in ("pass", "fail", "error", "skip", "xfail", "xpass", "flaky", "total"):
            sums[key][verdict] += r.get(verdict) or 0  # (flaky: none before schema 3)
    return [
        {"target_label": t, "target_protocol": p, **counts}
        for (t, p), counts in sorted(sums.items())
    ]


def set_totals(rows: Iterable[Mapping[str, Any]]) -> Rows:
    """``broker_coverage`` rows summed per night, target and named set: covered, relevant."""
    sums: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["set"] is not None:
            key = (r["run_date"], *(r[t] for t in _TARGET), r["set"])
            sums[key][0] += r["covered"]
            sums[key][1] += r["relevant"]
    return [
        dict(zip(("run_date", *_TARGET, "set"), key, strict=True))
        | {"covered": covered, "relevant": relevant}
        for key, (covered, relevant) in sums.items()
    ]


def _thinned(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most CURVE_POINTS of ``points``, evenly spaced, the first and last kept."""
    if len(points) <= CURVE_POINTS:
        return points
    step = (len(points) - 1) / (CURVE_POINTS - 1)
    return [points[round(i * step)] for i in range(CURVE_POINTS)]


def _broker_trend(
    night: dt.date, rows: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, str, str], list[tuple[dt.date, float]]]:
    """Per target label, protocol and set: the lines covered per night up to ``night`` (a night
    that measured several versions of a target: the most of them)."""
    most: dict[tuple[str, str, str], dict[dt.date, float]] = defaultdict(dict)
    for r in rows:
        if r["run_date"] > night:
            continue
        key = (r["target_label"] or "?", r["target_protocol"] or "?", r["set"])
        nights = most[key]
        nights[r["run_date"]] = max(nights.get(r["run_date"], 0.0), float(r["covered"]))
    return {key: sorted(nights.items())[-TREND_NIGHTS:] for key, nights in most.items()}


def _broker(
    night: dt.date, tables: Mapping[str, Rows], history: Iterable[Mapping[str, Any]]
) -> list[BrokerCoverage]:
    """Per target measured on ``night``: its code covered (``history``: earlier nights'
    :func:`set_totals`)."""
    made = tables.get("broker_coverage", [])
    trend = _broker_trend(night, [*history, *set_totals(made)])
    by_target: dict[tuple[str, ...], Rows] = defaultdict(list)
    for r in made:
        if r["run_date"] == night:
            by_target[tuple(r[t] or "" for t in _TARGET)].append(r)
    drawn: dict[tuple[str, ...], Rows] = defaultdict(list)
    for r in tables.get("broker_coverage_points", []):
        if r["run_date"] == night:
            drawn[tuple(r[t] or "" for t in _TARGET)].append(r)
    found = []
    for key in sorted(by_target, key=lambda k: (k[0], k[3], k[1], k[2])):
        label, product, version, protocol = key
        modules = sorted(
            by_target[key], key=lambda r: (r["set"] is None, r["set"] or "", r["module"])
        )
        sets: dict[str, list[int]] = {}
        for r in modules:
            if r["set"] is not None:
                counts = sets.setdefault(r["set"], [0, 0])
                counts[0] += r["covered"]
                counts[1] += r["relevant"]
        points = sorted(drawn[key], key=lambda r: r["seq"])
        curve: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for r in points:
            curve[r["set"]].append((float(r["elapsed_s"]), float(r["covered"])))
        found.append(
            BrokerCoverage(
                label=label or "?",
                protocol=protocol or "?",
                product=" ".join(filter(None, (product, version))),
                how=str(modules[0]["how"] or ""),
                sets=[(name, c, r) for name, (c, r) in sorted(sets.items())],
                modules=modules,
                curve={name: _thinned(line) for name, line in sorted(curve.items())},
                drawn=(points[0]["run_id"], points[0]["worker"]) if points else None,
                workers=max((r["streams"] for r in points), default=0)
                or max(r["workers"] for r in modules),
                runs=max(r["runs"] for r in modules),
                trend={name: trend.get((label or "?", protocol or "?", name), []) for name in sets},
            )
        )
    return found


def build(
    night: dt.date,
    tables: Mapping[str, Rows],
    history: Iterable[Trend],
    protocol: str = DEFAULT_PROTOCOL,
    *,
    broker_history: Iterable[Mapping[str, Any]] = (),
) -> Page:
    """The page for ``night`` from the rows of the tables just computed (any nights) and the
    trend points of earlier nights (``broker_history``: the broker's code covered on earlier
    nights, as :func:`set_totals` sums it); a record without a protocol was made in
    ``protocol``."""

    def tonight(name: str) -> Rows:
        return [r for r in tables.get(name, []) if r["run_date"] == night]

    runs = sorted(tonight("runs"), key=lambda r: (r["target_label"] or "", r["run_id"]))
    signatures = sorted(
        tonight("signatures"),
        key=lambda r: (STATUS_ORDER[r["status"]], -r["occurrences"], r["signature"]),
    )
    ingest = sorted(tonight("ingest"), key=lambda r: r["file"])
    record_files = [r for r in ingest if r.get("contents", "records") == "records"]
    conformance = tonight("conformance")
    deviations = sorted(
        tonight("deviations"),
        key=lambda d: (d["verdict"] != "xpass", -d["occurrences"], d["target_label"] or ""),
    )
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
        "flaky": sum(r.get("flaky") or 0 for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "signatures": sum(1 for s in signatures if s["occurrences"] > 0),
        "new": statuses.count("new"),
        "regressed": statuses.count("regressed"),
        "fixed": statuses.count("fixed"),
        "cases_per_s": cases / duration if duration else 0.0,
        "runs": len({r["run_id"] for r in runs}),
        "targets": len({r["target_label"] for r in runs}),
        "xfails": sum(d["occurrences"] for d in deviations if d["verdict"] == "xfail"),
        "xpasses": sum(d["occurrences"] for d in deviations if d["verdict"] == "xpass"),
        "records": sum(r["records"] for r in record_files),
        "coverage_records": sum(r["records"] for r in ingest)
        - sum(r["records"] for r in record_files),
        "torn_lines": sum(r["torn_lines"] for r in ingest),
        "duplicates": sum(r["duplicates"] for r in ingest),
        "malformed_lines": sum(r["malformed_lines"] for r in ingest),
    }
    flaky = sorted(tonight("flaky"), key=lambda r: (-r["occurrences"], r["signature"]))
    divergences = sorted(
        tonight("divergences"),
        key=lambda d: (-d["occurrences"], d["spec_ref"] or "", d["target_label"] or ""),
    )
    return Page(
        night=night,
        headline=headline,
        trends=[points[n] for n in sorted(points) if n <= night][-TREND_NIGHTS:],
        signatures=signatures,
        matrices=_matrices(conformance, signatures, protocol),
        targets=_targets(conformance, protocol),
        deviations=deviations,
        scenarios=sorted(
            tonight("scenarios"), key=lambda r: (r["spec_ref"] or "", r["target_label"] or "")
        ),
        coverage=tonight("coverage"),
        runs=runs,
        divergences=divergences[:100],
        ingest=ingest,
        broker=_broker(night, tables, broker_history),
        flaky=flaky,
    )
