"""The broker's own code coverage: the coverage files of the night's campaigns, read apart from
the record files, and the tables made of them.

A campaign that measures its broker's code (Erlang's ``cover`` in a RabbitMQ node, coverage.py in
a Python broker) writes ``coverage-<run>-<worker>.jsonl`` beside its records: a record per target
every few seconds (its modules' lines covered so far, of their relevant lines), and a final one
with the lines themselves and the functions never entered
(:data:`amqpfuzz.fuzzer.records.COVERAGE_FIELDS`). A Spark campaign's shards hand theirs back
under ``output=coverage``.

The files are small (a line every five seconds per worker and target), so they are read in a
pass of their own, as text parsed with the explicit schema (:data:`.schema.COVERAGE`), cached
while the tables are made. A line that is not a coverage record is counted and kept apart as a
record file's is (*torn*: the last line of a file that does not end with a newline; else
*malformed*), and a record copied into several files (a retried upload) counts once: the copy
in the first file by name. A run's night is that of its records, else the UTC date its coverage
began (a point's time less its elapsed seconds).

Per night:

* ``broker_coverage``: per target and module, the lines covered: the union of the lines the
  night's final records list (its runs and workers alike), and at least the most any point
  counted (a worker killed before its final record left points only); the functions never
  reached: those that every final record of the night measuring the module lists as never
  entered (their intersection; null when no final record measured it);
* ``broker_coverage_points``: per run, worker, target, set and point, the lines covered: the
  curve over each run; the page draws, per target, that of the worker that covered most.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from .listing import InputFile
from .read import FileStats, utc_date
from .schema import COVERAGE
from .tables import Rows, collect, health_row, read_table, rejected

__all__ = [
    "TARGET",
    "CoverageInput",
    "curves",
    "health",
    "history",
    "module_rows",
    "points",
    "read_coverage",
    "rejects",
    "with_nights",
]

TARGET = ("target_label", "target_product", "target_version", "target_protocol")
# what makes a coverage record one: its run's worker, target and number
_KEY = ("run_id", "worker", "target_label", "seq")
_REQUIRED = ("schema_version", "run_id", "worker", "seq", "elapsed_s", "modules")


@dataclass
class CoverageInput:
    """The coverage files listed, and what their lines held: ``records`` has each coverage
    record once (None: there is none), with its target's fields flat."""

    files: list[InputFile]  # every coverage file listed, in any state
    stats: dict[str, FileStats]  # by the listed path, of those read
    starts: dict[str, int]  # per run, when its coverage began (microseconds since the epoch)
    records: DataFrame | None
    bad_lines: DataFrame | None  # file (Spark's key), text; None when every line was a record
    _cached: list[DataFrame] = field(default_factory=list)

    def run_dates(self, known: Mapping[str, dt.date]) -> dict[str, dt.date]:
        """Each run's night: as its records say (``known``), else the day its coverage began."""
        return {run: known.get(run) or utc_date(us) for run, us in self.starts.items()}

    def night_of_file(self, path: str, dates: Mapping[str, dt.date], latest: dt.date) -> dt.date:
        """A file's night: that of its runs, else ``latest``."""
        stats = self.stats.get(path)
        found = [dates[r] for r in stats.run_ids if r in dates] if stats else []
        return min(found) if found else latest

    def release(self) -> None:
        for frame in self._cached:
            frame.unpersist()
        self._cached.clear()


def read_coverage(spark: SparkSession, files: Sequence[InputFile]) -> CoverageInput:
    """Read the coverage files among ``files`` (those settled or finished); the caller must
    :meth:`CoverageInput.release` the result."""
    mine = [f for f in files if f.contents == "coverage"]
    to_read = [f.path for f in mine if f.read]
    if not to_read:
        return CoverageInput(mine, {}, {}, None, None)
    lines = _lines(spark, to_read).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        copies = (
            lines.filter("is_record")
            .groupBy(*_KEY)
            .agg(F.count("*").alias("copies"), F.collect_list("file").alias("files"))
            .filter("copies > 1")
            .collect()
        )
        stats, starts = _stats(_per_file(lines), copies)
    except BaseException:
        lines.unpersist()
        raise
    records = None
    if any(st.records for st in stats.values()):
        records = _once(lines, bool(copies))
    bad = None
    if any(st.torn or st.malformed for st in stats.values()):
        bad = lines.filter(~F.col("is_record") & ~F.col("blank")).select(
            "file", F.col("value").alias("text")
        )
    return CoverageInput(mine, stats, starts, records, bad, [lines])


def _lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Every line, as text and as a coverage record (``is_record`` says whether it is one)."""
    text = spark.read.text(list(paths)).select(
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_size").alias("size"),
        # increasing within a file (its later splits are read after its earlier ones)
        F.monotonically_increasing_id().alias("line"),
        "value",
    )
    parsed = text.withColumn("c", F.from_json("value", COVERAGE))
    ts_us = F.unix_micros(F.try_to_timestamp(F.col("c.ts")))
    is_record = ts_us.isNotNull()
    for name in _REQUIRED:
        is_record = is_record & F.col(f"c.{name}").isNotNull()
    return parsed.select(
        "file",
        "size",
        "line",
        "value",
        (F.trim("value") == "").alias("blank"),
        F.coalesce(is_record, F.lit(False)).alias("is_record"),
        F.col("c.run_id").alias("run_id"),
        F.col("c.worker").alias("worker"),
        F.col("c.seq").alias("seq"),
        *(F.col(f"c.target.{t.removeprefix('target_')}").alias(t) for t in TARGET),
        F.col("c.how").alias("how"),
        F.col("c.elapsed_s").alias("elapsed_s"),
        F.coalesce(F.col("c.final"), F.lit(False)).alias("final"),
        F.col("c.modules").alias("modules"),
        F.col("c.lines").alias("lines"),
        F.col("c.unreached").alias("unreached"),
        (ts_us - F.round(F.col("c.elapsed_s") * 1e6).cast("long")).alias("start_us"),
    )


def _per_file(lines: DataFrame) -> list[Row]:
    """Per file and run (null for lines that are not records): its lines, blank ones, records,
    bytes, when the run's coverage began, and the group's last line (id and text)."""
    record = F.col("is_record")
    return (
        lines.groupBy("file", F.when(record, F.col("run_id")).alias("run"))
        .agg(
            F.count("*").alias("lines"),
            F.count(F.when(F.col("blank"), 1)).alias("blank"),
            F.count(F.when(record, 1)).alias("records"),
            F.sum(F.octet_length("value")).alias("bytes"),
            F.max("size").alias("size"),
            F.max("line").alias("last"),
            F.max_by("value", "line").alias("last_text"),
            F.min(F.when(record, F.col("start_us"))).alias("start_us"),
        )
        .collect()
    )


def _stats(rows: list[Row], copies: list[Row]) -> tuple[dict[str, FileStats], dict[str, int]]:
    """What each file held (a torn last line told from a malformed one as the record files'
    are); and when each run's coverage began."""
    duplicates: dict[str, int] = defaultdict(int)
    for copy in copies:  # every copy but the first file's is a duplicate
        for file in copy.files:
            duplicates[file] += 1
        duplicates[min(copy.files)] -= 1
    by_file: dict[str, list[Row]] = defaultdict(list)
    starts: dict[str, int] = {}
    for r in rows:
        by_file[r.file].append(r)
        if r.run is not None and r.start_us is not None:
            starts[r.run] = min(starts.get(r.run, r.start_us), r.start_us)
    stats = {}
    for key, groups in by_file.items():
        lines = sum(g.lines for g in groups)
        records = sum(g.records for g in groups)
        bad = lines - records - sum(g.blank for g in groups)
        last = max(groups, key=lambda g: g.last)
        # without a final newline a file's bytes are its lines' bytes plus one fewer newline
        open_ended = sum(g.bytes for g in groups) + lines == max(g.size for g in groups) + 1
        torn_text = None
        if open_ended and last.run is None and (last.last_text or "").strip():
            torn_text = last.last_text
        stats[unquote(key)] = FileStats(
            key=key,
            lines=lines,
            records=records - duplicates[key],
            duplicates=duplicates[key],
            torn=int(torn_text is not None),
            malformed=bad - int(torn_text is not None),
            run_ids=tuple(sorted(g.run for g in groups if g.run is not None)),
            torn_text=torn_text,
        )
    return stats, starts


def _once(lines: DataFrame, copied: bool) -> DataFrame:
    """The coverage records, each once (of copies, the first file's)."""
    records = lines.filter("is_record")
    if copied:
        first = Window.partitionBy(*_KEY).orderBy("file", "line")
        records = records.withColumn("_n", F.row_number().over(first)).filter("_n = 1")
    return records.select(
        "run_id", "worker", "seq", *TARGET, "how", "elapsed_s", "final", "modules", "lines",
        "unreached",
    )  # fmt: skip


def health(coverage: CoverageInput, dates: Mapping[str, dt.date], latest: dt.date) -> Rows:
    """The coverage files' rows of the ingest table (a file of no known run: ``latest``)."""
    return [
        health_row(f, coverage.stats.get(f.path), coverage.night_of_file(f.path, dates, latest))
        for f in coverage.files
    ]


def rejects(
    spark: SparkSession, coverage: CoverageInput, dates: Mapping[str, dt.date], latest: dt.date
) -> DataFrame | None:
    """The coverage files' torn and malformed lines, as the record files' are kept."""
    if coverage.bad_lines is None:
        return None
    return rejected(
        spark,
        coverage.bad_lines,
        coverage.stats,
        lambda path: coverage.night_of_file(path, dates, latest),
    )


def with_nights(records: DataFrame, dates: Mapping[str, dt.date]) -> DataFrame:
    """The records with their run's night (``run_date``)."""
    nights = F.create_map(*(F.lit(x) for pair in dates.items() for x in pair))
    return records.withColumn("run_date", nights[F.col("run_id")])


def module_rows(records: DataFrame) -> Rows:
    """The ``broker_coverage`` rows of ``records`` (with their nights): per night, target and
    module, in one aggregation (the union of the final records' lines, the intersection of
    what they never entered)."""
    group = ["run_date", *TARGET]
    final = F.col("final")
    module = F.col("m.module")
    entered = F.coalesce(F.col("lines")[module], F.array().cast("array<bigint>"))
    missed = F.transform(
        F.coalesce(F.col("unreached")[module], F.array().cast("array<array<string>>")),
        lambda f: F.struct(f[0].alias("function"), f[1].cast("long").alias("lines")),
    )
    per_record = records.select(
        *group, "run_id", "worker", "how", "final", "lines", "unreached",
        F.explode("modules").alias("m"),
    ).select(
        *group, "run_id", "worker", "how",
        module.alias("module"), F.col("m.set").alias("set"),
        F.col("m.covered").alias("covered"), F.col("m.relevant").alias("relevant"),
        F.when(final, entered).alias("entered"), F.when(final, missed).alias("missed"),
    )  # fmt: skip
    joined = per_record.groupBy(*group, "module").agg(
        F.max("how").alias("how"),
        F.max("set").alias("set"),
        F.max("relevant").alias("relevant"),
        F.max("covered").alias("most"),
        F.count_distinct("run_id").alias("runs"),
        F.count_distinct("run_id", "worker").alias("workers"),
        F.count("entered").alias("finals"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("entered")))).alias("union"),
        F.collect_list("missed").alias("missed"),
    )
    known = F.col("finals") > 0
    everywhere = F.aggregate(
        "missed",
        F.try_element_at("missed", F.lit(1)),
        lambda common, each: F.array_intersect(common, each),
    )
    covered = F.greatest(F.size("union"), F.col("most")).cast("long")
    made = joined.select(
        *TARGET,
        "how",
        "set",
        "module",
        covered.alias("covered"),
        F.col("relevant"),
        F.when(F.col("relevant") > 0, covered / F.col("relevant")).alias("ratio"),
        F.when(known, F.col("union")).alias("lines"),
        F.when(known, F.array_sort(everywhere)).alias("unreached"),
        "runs",
        "workers",
        "finals",
        "run_date",
    )
    return collect(made)


def points(records: DataFrame) -> DataFrame:
    """The ``broker_coverage_points`` of ``records`` (with their nights): per run, worker,
    target, set and point, the lines covered and relevant."""
    point = ["run_date", "run_id", "worker", *TARGET, "how", "seq", "elapsed_s", "final"]
    return (
        records.select(*point, F.explode("modules").alias("m"))
        .groupBy(*point, F.col("m.set").alias("set"))
        .agg(F.sum("m.covered").alias("covered"), F.sum("m.relevant").alias("relevant"))
    )


def curves(frame: DataFrame) -> Rows:
    """What the page draws of ``points``: per night and target, the named sets' points of the
    worker (a run's) that covered most of them (of equals, the first run and worker by name),
    each point with ``streams``, how many workers measured the target that night; one job."""
    named = frame.filter(F.col("set").isNotNull())
    target = ["run_date", *TARGET]
    stream = [*target, "run_id", "worker"]
    totals = (
        named.groupBy(*stream, "set")
        .agg(F.max("covered").alias("covered"))
        .groupBy(*stream)
        .agg(F.sum("covered").alias("total"))
    )
    first = Window.partitionBy(*target).orderBy(F.desc("total"), "run_id", "worker")
    best = totals.select(
        *(F.col(c).alias(f"_{c}") for c in stream),
        F.row_number().over(first).alias("rank"),
        F.count("*").over(Window.partitionBy(*target)).alias("streams"),
    ).filter("rank = 1")
    same = [named[c].eqNullSafe(best[f"_{c}"]) for c in stream]  # (a target's fields: null)
    condition = same[0]
    for each in same[1:]:
        condition = condition & each
    shown = [*stream, "set", "elapsed_s", "seq", "covered", "streams"]
    rows = collect(named.join(F.broadcast(best), condition).select(*shown))
    return sorted(rows, key=lambda r: (str(r["run_date"]), str(r["target_label"]), r["seq"]))


def history(spark: SparkSession, output: str) -> Rows:
    """Every night the output's ``broker_coverage`` holds, summed per target and named set as
    :func:`amqpfuzz.reports.page.set_totals` sums tonight's (the lines are not read)."""
    return collect(
        read_table(spark, output, "broker_coverage")
        .filter(F.col("set").isNotNull())
        .groupBy("run_date", *TARGET, "set")
        .agg(
            F.sum("covered").cast("long").alias("covered"),
            F.sum("relevant").cast("long").alias("relevant"),
        )
    )
