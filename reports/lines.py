"""The lines of the record files: parsed with the explicit schema, or read as text.

Each pass parses a line at most once (Spark's JSON reader parses only the fields a pass uses):
:func:`records` (the lines as records; ``is_record`` says which are), :func:`scan_text` (text
only: blank lines per file, and the record ids found on more than one line), :func:`duplicated`
(which records were read more than once, parsing only the lines whose ids hash alike) and
:func:`torn` (of the files with a line that is not a record, those whose last line was cut off
by a writer killed while writing it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from .schema import RECORD

__all__ = ["CORRUPT", "duplicated", "records", "scan_text", "torn"]

CORRUPT = "_corrupt_line"
RECORD_ID = r'"record_id"\s*:\s*"([^"\\]*)"'


def _is_record(get: Callable[[str], Column], ts_us: Column | None = None) -> Column:
    """A line is a record when it has the identity fields and a readable time stamp
    (``ts_us``, when the caller has it already)."""
    required = ("schema_version", "record_id", "run_id", "verdict")
    present = [get(name).isNotNull() for name in required]
    stamped = (_micros(get("ts")) if ts_us is None else ts_us).isNotNull()
    return _all(*present, stamped)


def _micros(ts: Column) -> Column:
    """A record's time stamp in microseconds since the epoch; null if it is not one."""
    return F.unix_micros(F.try_to_timestamp(ts))


def _all(*conditions: Column) -> Column:
    result = conditions[0]
    for condition in conditions[1:]:
        result = result & condition
    return result


def records(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The lines as records: JSON source, explicit schema; ``is_record`` says which are."""
    schema = StructType([*RECORD.fields, StructField(CORRUPT, StringType())])
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .json(list(paths))
        .withColumn("ts_us", _micros(F.col("ts")))
        .withColumns(
            {"file": F.col("_metadata.file_path"), "is_record": _is_record(F.col, F.col("ts_us"))}
        )
    )


def scan_text(spark: SparkSession, paths: Sequence[str]) -> tuple[dict[str, int], list[int]]:
    """One pass over the text, cheaper than parsing: per file (Spark's key) its blank lines,
    which the JSON reader skips; and the hashes of the record ids found on more than one line
    (the id the line's first ``"record_id"`` names): candidates for duplicates, usually none.
    A line has an id or is blank or neither, so one grouping finds both."""
    rows = (
        spark.read.text(list(paths))
        .select(
            _id_hash(F.regexp_extract("value", RECORD_ID, 1)).alias("id_hash"),
            F.when(F.trim("value") == "", F.col("_metadata.file_path")).alias("blank_in"),
        )
        .groupBy("id_hash", "blank_in")
        .agg(F.count("*").alias("lines"))
        .filter(
            (F.col("id_hash").isNotNull() & (F.col("lines") > 1)) | F.col("blank_in").isNotNull()
        )
        .collect()
    )
    blank = {r.blank_in: r.lines for r in rows if r.blank_in is not None}
    return blank, [r.id_hash for r in rows if r.id_hash is not None]


def torn(spark: SparkSession, keys: Sequence[str]) -> dict[str, str]:
    """Of the files ``keys`` (Spark's), those whose last line is not a record and has no
    newline after it, with that line: torn by a writer killed while writing it."""
    rows = (
        spark.read.text([unquote(k) for k in keys])
        .groupBy(F.col("_metadata.file_path").alias("file"))
        .agg(
            F.count("*").alias("lines"),
            F.sum(F.octet_length("value")).alias("bytes"),
            F.max(F.col("_metadata.file_size")).alias("size"),
        )
        .collect()
    )
    # Without a final newline a file's bytes are its lines' bytes plus one fewer newline.
    open_ended = [r.file for r in rows if r.bytes + r.lines == r.size + 1]
    return _last_lines(spark, open_ended) if open_ended else {}


def _id_hash(record_id: Column) -> Column:
    """A record id as a number to group by (cheaper than its text); null for none."""
    return F.when(record_id != "", F.xxhash64(record_id))


def _last_lines(spark: SparkSession, keys: Sequence[str]) -> dict[str, str]:
    """The last line of each file that is not a record (files are few: killed writers)."""
    rec = F.from_json("last", RECORD)
    rows = (
        spark.read.text([unquote(k) for k in keys])
        .select(
            F.col("_metadata.file_path").alias("file"),
            # Increasing within a file, and a file's later splits are read after its earlier
            # ones, so the greatest id of a file is its last line.
            F.monotonically_increasing_id().alias("line"),
            "value",
        )
        .groupBy("file")
        .agg(F.max_by("value", "line").alias("last"))
        .withColumn("is_record", _is_record(lambda name: rec[name]))
        .filter(~F.col("is_record") & (F.trim("last") != ""))
        .collect()
    )
    return {r.file: r.last for r in rows}


def duplicated(spark: SparkSession, paths: Sequence[str], hashes: list[int]) -> DataFrame:
    """Record ids read more than once, each with the file whose copy counts (the first by
    name), found by parsing only the lines whose id hashes as a candidate's; none may be."""
    candidates = spark.createDataFrame([(h,) for h in hashes], "id_hash long")
    return (
        records(spark, paths)
        .filter("is_record")
        .join(
            F.broadcast(candidates), _id_hash(F.col("record_id")) == F.col("id_hash"), "left_semi"
        )
        .groupBy("record_id")
        .agg(F.count("*").alias("copies"), F.min("file").alias("owner"))
        .filter("copies > 1")
        .select("record_id", "owner")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
