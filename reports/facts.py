"""Facts: the records aggregated once into the rows every table is computed from.

A fact is one row per file and distinct combination of :data:`FACT_KEYS` (and, for a judged
record, of what its row in a table would show), with how many records it stands for (``n``:
each record once over all files), its times and the smallest reproducer of its group
(``best``). The facts are few and cached; the predicates here say which of them a table counts.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = [
    "FACT_KEYS", "by_signature", "divergence", "facts", "flaky_failure", "groups",
    "signed_failure", "smallest_first",
]  # fmt: skip

_MAX = 2**62  # sorts records without a size after those with one

# The fields the tables group by; a fact is one distinct combination of them.
FACT_KEYS = (
    "run_id",
    "worker",
    "target_label",
    "target_product",
    "target_version",
    "target_protocol",
    "tool_version",
    "kind",
    "spec_ref",
    "mutation",
    "scenario",
    "verdict",
    "expected_outcome",
    "expected_reply_code",
    "observed_outcome",
    "observed_reply_code",
    "signature",
    "deviation_entry",
    "profile",
    "reason",
    "observed_reply",
    "alone",
)


def smallest_first(prefix: str = "") -> Column:
    """The order of reproducers: one that exists, then the smallest file, the shortest case,
    and the path last (then the other fields of the struct it leads) so that the choice never
    depends on reading order. ``prefix``: of the columns' names."""
    return F.struct(
        F.col(f"{prefix}reproducer").isNull().alias("missing"),
        F.coalesce(f"{prefix}reproducer_size", F.lit(_MAX)).alias("size"),
        F.coalesce(f"{prefix}case_size", F.lit(_MAX)).alias("case_size"),
        F.col(f"{prefix}reproducer"),
    )


def _detail() -> dict[str, Column]:
    """What the choice of the smallest reproducer, and its row, read of a judged record beside
    FACT_KEYS, by the name each has in that row (reactions in words: only judged records pay
    for the text)."""
    return {
        "oracle": F.col("oracle"),
        "message": F.col("message"),
        "reproducer": F.col("reproducer"),
        "expected": _reaction("expected"),
        "observed": _reaction("observed"),
        "reproducer_size": F.col("reproducer_size"),
        "case_size": F.col("case_size"),
        "rate": F.col("confirmation.rate"),
        "replays": F.array_distinct(F.col("confirmation.replays")),
    }


def _reaction(which: str) -> Column:
    """A reaction in words: ``connection-close 501``, ``session-close amqp:decode-error``."""
    return F.concat_ws(
        " ",
        F.col(f"{which}.outcome"),
        F.col(f"{which}.reply_code").cast("string"),
        F.col(f"{which}.condition"),
    )


def _flat(lines: DataFrame) -> DataFrame:
    """The fields the groups are made of, flat, derived ones included."""
    return lines.select(
        "file",
        "is_record",
        "record_id",
        "run_id",
        "worker",
        F.col("target.label").alias("target_label"),
        F.col("target.product").alias("target_product"),
        F.col("target.version").alias("target_version"),
        F.col("target.protocol").alias("target_protocol"),
        "tool_version",
        "kind",
        "spec_ref",
        "mutation",
        "scenario",
        "verdict",
        F.col("expected.outcome").alias("expected_outcome"),
        F.col("expected.reply_code").alias("expected_reply_code"),
        F.col("observed.outcome").alias("observed_outcome"),
        F.col("observed.reply_code").alias("observed_reply_code"),
        "expected",
        "observed",
        F.col("failure.signature").alias("signature"),
        F.col("failure.oracle").alias("oracle"),
        F.col("failure.message").alias("message"),
        "deviation_entry",
        "profile",
        # the profile's reason for an xfail or xpass; a scenario's reason (why it was skipped)
        F.coalesce("deviation", F.when(F.col("kind") == "scenario", F.col("reason"))).alias(
            "reason"
        ),
        "observed_reply",
        "alone",
        "reproducer",
        "reproducer_size",
        F.length("case").alias("case_size"),
        "confirmation",
        "ts_us",
        F.round(F.coalesce("duration_s", F.lit(0.0)) * 1e6).cast("long").alias("duration_us"),
    )


def signed_failure() -> Column:
    """A failure with a signature: what the signatures table counts."""
    return (F.col("verdict") == "fail") & F.col("signature").isNotNull()


def flaky_failure() -> Column:
    """A failure whose replays did not all fail (schema 3): what the flaky table counts."""
    return (F.col("verdict") == "flaky") & F.col("signature").isNotNull()


def by_signature(facts: DataFrame, which: Column) -> DataFrame:
    """The facts ``which`` picks, per night and signature: how often (``occurrences``), on
    which targets, first and last seen (``first_us``, ``last_us``), and the smallest case's
    ``best`` (its reproducer, reactions, and for a flaky one its replays)."""
    return (
        facts.filter(which)
        .groupBy("run_date", "signature")
        .agg(
            F.sum("n").alias("occurrences"),
            F.array_sort(F.collect_set("target_label")).alias("targets"),
            F.min("first_us").alias("first_us"),
            F.max("last_us").alias("last_us"),
            F.min("best").alias("best"),
        )
    )


def divergence() -> Column:
    """A differential case whose targets did not agree: what the divergences table counts."""
    return (F.col("kind") == "differential") & ~F.col("verdict").isin("pass", "skip")


def groups(lines: DataFrame, owners: DataFrame | None) -> DataFrame:
    """Pass 3: per file and distinct combination of FACT_KEYS (and, for a judged record, of
    what its row in a table would show), everything the tables need.

    ``n`` counts each record once over all files: a duplicated record only in its owner file,
    and there only once.
    """
    flat = _flat(lines)
    if owners is None:
        counted = F.count(F.when(F.col("is_record"), 1))
    else:
        flat = flat.join(owners, "record_id", "left")
        single = F.col("is_record") & F.col("owner").isNull()
        counted = F.count(F.when(single, 1)) + F.count_distinct(
            F.when(F.col("owner") == F.col("file"), F.col("record_id"))
        )
    # The smallest reproducer of each group is a min over a struct of strings, which only a
    # sort-based aggregation computes. So the records are first grouped by hash, with the
    # fields that choice reads as keys of judged records only (the few): the min then runs
    # over those groups, not over every record.
    # the records whose reproducer a table shows
    judged = signed_failure() | flaky_failure() | divergence()
    detail = [F.when(judged, column).alias(f"_{name}") for name, column in _detail().items()]
    best = F.struct(
        smallest_first("_").alias("order"),
        F.col("_oracle").alias("oracle"),
        "spec_ref",
        *(
            F.col(f"_{name}").alias(name)
            for name in ("message", "reproducer", "expected", "observed", "rate", "replays")
        ),
        F.col("target_protocol").alias("protocol"),
    )
    fine = flat.groupBy("file", "is_record", *FACT_KEYS, *detail).agg(
        F.count("*").alias("lines"),
        counted.alias("n"),
        F.min("ts_us").alias("first_us"),
        F.max("ts_us").alias("last_us"),
        F.min(F.col("ts_us") - F.col("duration_us")).alias("start_us"),
    )
    # A hash of the keys, first among them: grouping by it too changes no group, and it lets
    # the sort that the min needs compare a number, not some twenty strings.
    key = F.xxhash64("file", "is_record", *FACT_KEYS).alias("_key")
    return (
        fine.groupBy(key, "file", "is_record", *FACT_KEYS)
        .agg(
            F.sum("lines").alias("lines"),
            F.sum("n").alias("n"),
            F.min("first_us").alias("first_us"),
            F.max("last_us").alias("last_us"),
            F.min("start_us").alias("start_us"),
            F.min(F.when(judged, best)).alias("best"),
        )
        .drop("_key")
        # few rows (distinct combinations, not records): as one partition, what is made of
        # them (the file stats, every table) needs no shuffle
        .repartition(1)
    )


def facts(groups: DataFrame, run_dates: dict[str, dt.date]) -> DataFrame:
    """The groups of records that count, each with its run's date."""
    dates = F.create_map(*(F.lit(x) for pair in run_dates.items() for x in pair))
    return groups.filter(F.col("is_record") & (F.col("n") > 0)).select(
        *FACT_KEYS,
        "n",
        "first_us",
        "last_us",
        "start_us",
        "best",
        dates[F.col("run_id")].alias("run_date"),
    )
