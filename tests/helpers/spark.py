"""Reading what the report job wrote, the same way in every report test."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

__all__ = ["table"]


def table(spark: SparkSession, output: Path, name: str) -> DataFrame:
    """A table as written, read back with its own schema; times as UTC text (the session's
    time zone is UTC), so that expectations do not depend on the machine's zone."""
    frame = spark.read.parquet(str(output / name))
    stamps = [f.name for f in frame.schema if isinstance(f.dataType, TimestampType)]
    return frame.withColumns({c: F.date_format(c, "yyyy-MM-dd HH:mm:ss.SSS") for c in stamps})
