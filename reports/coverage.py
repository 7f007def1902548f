"""Spec coverage: what a night exercised, against what there is to exercise, and what not.

Per protocol the records were made in, four dimensions, each a list of names as records name
them (:func:`amqpfuzz.fuzzer.recording.exercisable`): the methods a client may send (1.0:
performatives), the rules a client's traffic can exercise (1.0: MUST sentences), the scenario
files and the mutation operators. The lists come from the ``run-<run_id>.json`` files the
fuzzer writes beside its records (the union of a night's runs in that protocol), or, for a
night without one that names them, from this installation's specification and scenario files
(:func:`installed`; the operators then have no list: the report loads none of the fuzzer's
strategies).

A record exercises a method when its spec_ref is the method or starts with it and ``/``; a
rule when its spec_ref is the rule; a scenario file when its ``scenario`` is the file; an
operator when its ``mutation`` is. What is not in the lists (a spec_ref of an unknown class)
counts for nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from amqpfuzz.scenarios import scenario_names
from amqpfuzz.spec import DEFAULT_PROTOCOL, reach

__all__ = ["DIMENSIONS", "Seen", "Universe", "coverage", "installed", "seen", "universes"]

DIMENSIONS = ("methods", "rules", "scenario_files", "mutation_operators")
# a dimension's names, and where they came from (run-file or spec)
Universe = dict[str, tuple[tuple[str, ...], str]]


def _protocol_of(default: str) -> Column:
    return F.coalesce(F.col("target_protocol"), F.lit(default))


@functools.cache
def installed(protocol: str) -> dict[str, tuple[str, ...]]:
    """What this installation says there is to exercise in ``protocol``, for a night without a
    run file that names it: the methods and rules from the specification, the scenario files
    it bundles; the mutation operators only a run file names (the strategies that make them
    are the fuzzer's, which the report does not load)."""
    found = reach(protocol)
    return {
        "methods": found.methods,
        "rules": found.rules,
        "scenario_files": scenario_names(protocol, DEFAULT_PROTOCOL),
        "mutation_operators": (),
    }


def universes(
    run_dates: Mapping[str, dt.date], runs: Mapping[str, Mapping[str, Any]], protocol: str
) -> dict[dt.date, Universe]:
    """Per night, each dimension's names: the union of what the night's run files of
    ``protocol`` name, else the installation's."""
    named: dict[dt.date, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for run, night in run_dates.items():
        found = runs.get(run, {})
        if (found.get("protocol") or DEFAULT_PROTOCOL) != protocol:
            continue
        for dimension, names in (found.get("exercisable") or {}).items():
            if names is not None:
                named[night][dimension].update(names)
    ours = installed(protocol)
    out: dict[dt.date, Universe] = {}
    for night in sorted(set(run_dates.values())):
        out[night] = {
            d: (tuple(sorted(named[night][d])), "run-file")
            if named[night].get(d)
            else (ours[d], "spec")
            for d in DIMENSIONS
        }
    return out


# per protocol, night and kind of name (``ref``, ``op``, ``file``): the names seen
Seen = dict[str, dict[dt.date, dict[str, set[str]]]]


def seen(facts: DataFrame, default: str = DEFAULT_PROTOCOL) -> Seen:
    """Per protocol the records were made in (a record without one: ``default``) and night,
    the distinct spec_refs (``ref``), mutations (``op``) and scenario files (``file``)."""
    protocol = _protocol_of(default).alias("protocol")
    scenario = F.coalesce(F.col("scenario"), F.when(F.col("kind") == "scenario", F.col("spec_ref")))
    parts = [
        facts.select(protocol, "run_date", F.lit(what).alias("what"), value.alias("value"))
        for what, value in (
            ("ref", F.col("spec_ref")),
            ("op", F.col("mutation")),
            ("file", scenario),
        )
    ]
    rows = reduce(DataFrame.unionAll, parts).distinct().collect()
    found: Seen = defaultdict(lambda: defaultdict(lambda: defaultdict(set)))
    for row in rows:
        names = found[row.protocol][row.run_date][row.what]  # a protocol's nights: all kept
        if row.value is not None:
            names.add(row.value)
    return found


def _exercised(dimension: str, names: Iterable[str], seen: Mapping[str, set[str]]) -> set[str]:
    refs = seen.get("ref", set())
    if dimension == "methods":
        hit = refs | {r.split("/", 1)[0] for r in refs}
    elif dimension == "rules":
        hit = refs
    elif dimension == "scenario_files":
        hit = seen.get("file", set())
    else:
        hit = seen.get("op", set())
    return {n for n in names if n in hit}


def coverage(
    nights: Mapping[dt.date, Mapping[str, set[str]]],
    named: Mapping[dt.date, Universe],
    protocol: str = DEFAULT_PROTOCOL,
) -> list[dict[str, Any]]:
    """Four rows per night of ``protocol``'s records (``nights``: what :func:`seen` found for
    it): exercised, total, their ratio, where the names came from, and the names not
    exercised."""
    rows = []
    for night, seen in sorted(nights.items()):
        for dimension in DIMENSIONS:
            names, source = named[night][dimension]
            hit = _exercised(dimension, names, seen)
            total = len(names)
            rows.append(
                {
                    "dimension": dimension,
                    "exercised": len(hit),
                    "total": total,
                    "ratio": len(hit) / total if total else None,
                    "totals_from": source,
                    "protocol": protocol,
                    "uncovered": [n for n in names if n not in hit],
                    "run_date": night,
                }
            )
    return rows
