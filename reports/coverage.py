"""Spec coverage: what a night exercised, against what there is to exercise.

Exercised, from the records: methods (the ``class.method`` before the first ``/`` of a
spec_ref), rules (spec_refs that name one, i.e. contain a ``/``), scenario files (a record's
``scenario`` field, or the spec_ref of a ``scenario`` record without one) and mutation
operators (distinct ``mutation`` names).

The totals come from the ``run-<run_id>.json`` files the fuzzer writes beside its records
(``{"totals": {"methods": .., "rules": .., "scenario_files": .., "mutation_operators": ..}}``;
the largest of a night's runs counts). Without one, methods and rules are counted in the
specification (``amqpfuzz.spec.load``), and the other two totals are unknown. Each protocol the
records were made in has rows of its own, against its own specification's totals.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from amqpfuzz.spec import DEFAULT_PROTOCOL, family_of
from amqpfuzz.spec import spec_totals as registry_totals
from amqpfuzz.spec.amqp10 import performatives

__all__ = ["DIMENSIONS", "coverage", "protocols", "spec_totals"]

DIMENSIONS = ("methods", "rules", "scenario_files", "mutation_operators")


def _exercised(protocol: str) -> dict[str, Column]:
    """What a record exercised. 0-8 to 0-9-1: the method before a spec_ref's first ``/``, the
    rule a spec_ref with one names. 1.0: the performative a spec_ref names, the MUST sentence
    (``section/field#n``) a scenario quotes."""
    ref = F.col("spec_ref")
    if family_of(protocol) == "amqp10":
        method = F.when(ref.isin(*performatives(protocol)), ref)
        rule = F.when(ref.contains("#"), ref)
    else:
        prefix = F.substring_index(ref, "/", 1)
        method = F.when(prefix.contains(".") & ~prefix.startswith("domain:"), prefix)
        rule = F.when(ref.contains("/"), ref)
    scenario = F.coalesce(F.col("scenario"), F.when(F.col("kind") == "scenario", ref))
    return {
        "methods": F.count_distinct(method),
        "rules": F.count_distinct(rule),
        "scenario_files": F.count_distinct(scenario),
        "mutation_operators": F.count_distinct("mutation"),
    }


def spec_totals(protocol: str = DEFAULT_PROTOCOL) -> dict[str, int | None]:
    """The totals a specification itself gives: its methods (1.0: performatives) and rules
    (1.0: MUST sentences); the rest unknown."""
    methods, rules = registry_totals(protocol)
    return {"methods": methods, "rules": rules, "scenario_files": None, "mutation_operators": None}


def _protocol_of(default: str) -> Column:
    return F.coalesce(F.col("target_protocol"), F.lit(default))


def protocols(facts: DataFrame, default: str = DEFAULT_PROTOCOL) -> list[str]:
    """The protocols the records were made in (a record without one: ``default``)."""
    found = facts.select(_protocol_of(default).alias("p")).distinct().collect()
    return sorted(str(r.p) for r in found)


def night_totals(
    run_dates: Mapping[str, dt.date],
    run_totals: Mapping[str, Mapping[str, int | None]],
    fallback: Mapping[str, int | None],
) -> dict[dt.date, tuple[dict[str, int | None], dict[str, str | None]]]:
    """Per night, each dimension's total and where it came from (run-file, spec or None)."""
    out: dict[dt.date, tuple[dict[str, int | None], dict[str, str | None]]] = {}
    for night in sorted(set(run_dates.values())):
        runs = [run_totals[r] for r, d in run_dates.items() if d == night and r in run_totals]
        totals: dict[str, int | None] = {}
        sources: dict[str, str | None] = {}
        for dim in DIMENSIONS:
            found = [t[dim] for t in runs if t.get(dim) is not None]
            if found:
                totals[dim], sources[dim] = max(v for v in found if v is not None), "run-file"
            elif fallback.get(dim) is not None:
                totals[dim], sources[dim] = fallback[dim], "spec"
            else:
                totals[dim], sources[dim] = None, None
        out[night] = (totals, sources)
    return out


def coverage(
    facts: DataFrame,
    totals: Mapping[dt.date, tuple[Mapping[str, int | None], Mapping[str, str | None]]],
    protocol: str = DEFAULT_PROTOCOL,
    default: str = DEFAULT_PROTOCOL,
) -> list[dict[str, Any]]:
    """Four rows per night for ``protocol``'s records: exercised, total, their ratio and where
    the total came from."""
    mine = facts.filter(_protocol_of(default) == protocol)
    counts = mine.groupBy("run_date").agg(
        *(column.alias(dim) for dim, column in _exercised(protocol).items())
    )
    rows = []
    for row in counts.collect():
        night_totals_, sources = totals[row.run_date]
        for dim in DIMENSIONS:
            total = night_totals_[dim]
            rows.append(
                {
                    "dimension": dim,
                    "exercised": row[dim],
                    "total": total,
                    "ratio": row[dim] / total if total else None,
                    "totals_from": sources[dim],
                    "protocol": protocol,
                    "run_date": row.run_date,
                }
            )
    return rows
