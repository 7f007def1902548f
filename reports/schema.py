"""Explicit Spark schemas: the record contract as the reports read it, and the tables they write.

Spark never infers a schema here: inference reads every file twice and turns a field that is
null on one night into a different type on the next. Records are read with :data:`RECORD`;
fields the contract adds later are ignored until they are listed here. The tables' schemas are
what the tests hold the job to and what readers of the Parquet can rely on.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from amqpfuzz.fuzzer.records import VERDICTS

__all__ = ["COVERAGE", "RECORD", "TABLES", "TOTALS", "VERDICT_COLUMNS"]


def _struct(*fields: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, kind, nullable=True) for name, kind in fields])


# A reaction, as schema 2 writes it; schema 1 records lack `scope` and `condition` (null here:
# the scope follows from the outcome, and schema 1 had no protocol with error conditions).
_OUTCOME = _struct(
    ("outcome", StringType()),
    ("scope", StringType()),
    ("reply_code", IntegerType()),
    ("condition", StringType()),
    ("class_id", IntegerType()),
    ("method_id", IntegerType()),
)

_TARGET = _struct(
    ("label", StringType()),
    ("url", StringType()),
    ("product", StringType()),
    ("version", StringType()),
    ("protocol", StringType()),
)

# The core of amqpfuzz.fuzzer.records.FIELDS, plus optional extras the reports use when a record
# carries them: `scenario` (the scenario file a record ran), `reproducer_size` (bytes of the
# reproducer file), `case` (the case itself; read as its JSON text, only its length used); for
# an xfail or xpass, the profile's entry that matched (`deviation_entry`, `profile`) and its
# reason (`deviation`); for a scenario, `reason` (why skipped, or the profile's reason) and
# `observed_reply` (the reply the broker gave).
RECORD = _struct(
    ("schema_version", LongType()),
    ("record_id", StringType()),
    ("run_id", StringType()),
    ("worker", StringType()),
    ("seq", LongType()),
    ("ts", StringType()),
    ("duration_s", DoubleType()),
    ("tool_version", StringType()),
    ("seed", StringType()),
    ("target", _TARGET),
    ("kind", StringType()),
    ("spec_ref", StringType()),
    ("mutation", StringType()),
    ("expected", _OUTCOME),
    ("observed", _OUTCOME),
    ("verdict", StringType()),
    (
        "failure",
        _struct(("oracle", StringType()), ("signature", StringType()), ("message", StringType())),
    ),
    ("reproducer", StringType()),
    ("scenario", StringType()),
    ("reproducer_size", LongType()),
    ("case", StringType()),
    ("deviation", StringType()),
    ("deviation_entry", StringType()),
    ("profile", StringType()),
    ("reason", StringType()),
    ("observed_reply", StringType()),
    # a differential record's odd one out: the target whose reaction differs from all the
    # others', which agree (three targets or more)
    ("alone", StringType()),
    # schema 3: how a failure's replays went (a flaky one's rate and what the replays saw)
    (
        "confirmation",
        _struct(
            ("runs", LongType()),
            ("reproduced", LongType()),
            ("rate", StringType()),
            ("found", StringType()),
            ("replays", ArrayType(StringType())),
        ),
    ),
)

# A coverage record (amqpfuzz.fuzzer.records.COVERAGE_FIELDS): a point of the broker's code
# covered over a run, per module; a final one adds the lines themselves and the functions never
# entered, each as [name, relevant lines] (read as text: the number is cast where it is used).
COVERAGE = _struct(
    ("schema_version", LongType()),
    ("run_id", StringType()),
    ("worker", StringType()),
    ("seq", LongType()),
    ("ts", StringType()),
    ("tool_version", StringType()),
    ("seed", StringType()),
    ("target", _TARGET),
    ("how", StringType()),
    ("elapsed_s", DoubleType()),
    ("final", BooleanType()),
    (
        "modules",
        ArrayType(
            _struct(
                ("module", StringType()),
                ("set", StringType()),
                ("covered", LongType()),
                ("relevant", LongType()),
            )
        ),
    ),
    ("lines", MapType(StringType(), ArrayType(LongType()))),
    ("unreached", MapType(StringType(), ArrayType(ArrayType(StringType())))),
)

# run-<run_id>.json, written by the fuzzer beside its records: what "everything" is for coverage,
# counted and (since the files name them) named.
TOTALS = _struct(
    ("run_id", StringType()),
    ("protocol", StringType()),
    (
        "totals",
        _struct(
            ("methods", LongType()),
            ("rules", LongType()),
            ("scenario_files", LongType()),
            ("mutation_operators", LongType()),
        ),
    ),
    (
        "exercisable",
        _struct(
            *(
                (name, ArrayType(StringType(), containsNull=False))
                for name in ("methods", "rules", "scenario_files", "mutation_operators")
            )
        ),
    ),
)

# One count column per verdict, in the contract's order: pass, fail, error, skip, xfail, xpass,
# flaky.
VERDICT_COLUMNS = tuple(VERDICTS)

_NIGHT = ("run_date", DateType())

TABLES: dict[str, StructType] = {
    "runs": _struct(
        ("run_id", StringType()),
        ("target_label", StringType()),
        ("target_product", StringType()),
        ("target_version", StringType()),
        ("target_protocol", StringType()),
        ("tool_version", StringType()),
        ("workers", LongType()),
        ("started", TimestampType()),
        ("finished", TimestampType()),
        ("duration_s", DoubleType()),
        ("cases", LongType()),
        ("cases_per_s", DoubleType()),
        ("failures", LongType()),
        ("errors", LongType()),
        ("passes", LongType()),
        ("xfails", LongType()),
        ("xpasses", LongType()),
        ("skips", LongType()),
        ("flaky", LongType()),
        _NIGHT,
    ),
    "conformance": _struct(
        ("target_label", StringType()),
        ("target_product", StringType()),
        ("target_version", StringType()),
        ("target_protocol", StringType()),
        ("spec_ref", StringType()),
        ("spec_class", StringType()),
        *((verdict, LongType()) for verdict in VERDICT_COLUMNS),
        ("total", LongType()),
        _NIGHT,
    ),
    "signatures": _struct(
        ("signature", StringType()),
        ("status", StringType()),
        ("oracle", StringType()),
        ("spec_ref", StringType()),
        ("message", StringType()),
        ("occurrences", LongType()),
        ("targets", ArrayType(StringType(), containsNull=False)),
        ("reproducer", StringType()),
        ("expected", StringType()),
        ("observed", StringType()),
        ("protocol", StringType()),
        ("first_seen", TimestampType()),
        ("last_seen", TimestampType()),
        ("total_occurrences", LongType()),
        ("nights_seen", LongType()),
        _NIGHT,
    ),
    "coverage": _struct(
        ("dimension", StringType()),
        ("exercised", LongType()),
        ("total", LongType()),
        ("ratio", DoubleType()),
        ("totals_from", StringType()),
        ("protocol", StringType()),
        ("uncovered", ArrayType(StringType(), containsNull=False)),
        _NIGHT,
    ),
    # the profile entries that matched (xfail) or no longer did (xpass): per target and entry
    "deviations": _struct(
        ("target_label", StringType()),
        ("target_protocol", StringType()),
        ("profile", StringType()),
        ("entry", StringType()),
        ("reason", StringType()),
        ("verdict", StringType()),
        ("kinds", ArrayType(StringType(), containsNull=False)),
        ("spec_refs", ArrayType(StringType(), containsNull=False)),
        ("occurrences", LongType()),
        ("first_seen", TimestampType()),
        ("last_seen", TimestampType()),
        _NIGHT,
    ),
    # scenario records: rule by target, the verdict and what the broker did
    "scenarios": _struct(
        ("target_label", StringType()),
        ("target_protocol", StringType()),
        ("spec_ref", StringType()),
        ("scenario", StringType()),
        ("verdict", StringType()),
        ("observed_outcome", StringType()),
        ("observed_reply_code", IntegerType()),
        ("observed_reply", StringType()),
        ("reason", StringType()),
        ("occurrences", LongType()),
        _NIGHT,
    ),
    # flaky failures (their replays did not all fail), per night and signature: how often, on
    # which targets, the rate its smallest case's replays reproduced it at and what they saw
    "flaky": _struct(
        ("signature", StringType()),
        ("oracle", StringType()),
        ("spec_ref", StringType()),
        ("message", StringType()),
        ("occurrences", LongType()),
        ("targets", ArrayType(StringType(), containsNull=False)),
        ("rate", StringType()),
        ("replays", ArrayType(StringType(), containsNull=False)),
        ("reproducer", StringType()),
        ("expected", StringType()),
        ("observed", StringType()),
        ("first_seen", TimestampType()),
        ("last_seen", TimestampType()),
        _NIGHT,
    ),
    "divergences": _struct(
        ("target_label", StringType()),
        ("spec_ref", StringType()),
        ("mutation", StringType()),
        ("verdict", StringType()),
        ("expected_outcome", StringType()),
        ("expected_reply_code", IntegerType()),
        ("observed_outcome", StringType()),
        ("observed_reply_code", IntegerType()),
        ("signature", StringType()),
        ("alone", StringType()),
        ("occurrences", LongType()),
        ("first_seen", TimestampType()),
        ("last_seen", TimestampType()),
        ("reproducer", StringType()),
        _NIGHT,
    ),
    # every file found: record files, and coverage files (`contents`: records or coverage)
    "ingest": _struct(
        ("file", StringType()),
        ("state", StringType()),
        ("bytes", LongType()),
        ("modified", TimestampType()),
        ("read", BooleanType()),
        ("lines", LongType()),
        ("records", LongType()),
        ("duplicates", LongType()),
        ("torn_lines", LongType()),
        ("malformed_lines", LongType()),
        ("contents", StringType()),
        _NIGHT,
    ),
    # the broker's own code covered, per night, target and module: lines covered (the union of
    # the lines the night's final records list, at least the most any point counted), the
    # functions no final record of the night saw entered (null: no final record), from how
    # many runs, workers (a run's worker and target: one campaign) and final records
    "broker_coverage": _struct(
        ("target_label", StringType()),
        ("target_product", StringType()),
        ("target_version", StringType()),
        ("target_protocol", StringType()),
        ("how", StringType()),
        ("set", StringType()),
        ("module", StringType()),
        ("covered", LongType()),
        ("relevant", LongType()),
        ("ratio", DoubleType()),
        ("lines", ArrayType(LongType(), containsNull=False)),
        (
            "unreached",
            ArrayType(
                _struct(("function", StringType()), ("lines", LongType())), containsNull=False
            ),
        ),
        ("runs", LongType()),
        ("workers", LongType()),
        ("finals", LongType()),
        _NIGHT,
    ),
    # the broker's code covered over each run: per worker, target, set (null: the modules
    # measured for steering only) and point
    "broker_coverage_points": _struct(
        ("run_id", StringType()),
        ("worker", StringType()),
        ("target_label", StringType()),
        ("target_product", StringType()),
        ("target_version", StringType()),
        ("target_protocol", StringType()),
        ("how", StringType()),
        ("set", StringType()),
        ("seq", LongType()),
        ("elapsed_s", DoubleType()),
        ("final", BooleanType()),
        ("covered", LongType()),
        ("relevant", LongType()),
        _NIGHT,
    ),
    "rejects": _struct(
        ("file", StringType()),
        ("reason", StringType()),
        ("text", StringType()),
        _NIGHT,
    ),
}
