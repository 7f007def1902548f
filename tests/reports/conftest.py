"""One Spark session per test process (pytest-xdist gives each worker its own), sized for a
two-core machine, and the helpers that write records with the real record writer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import report_records as records
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from amqpfuzz.reports import Summary, run
from amqpfuzz.reports.session import local_session

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2",
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    log = tmp_path_factory.mktemp("spark") / "spark.log"
    session = local_session("local[2]", TEST_CONF, app_name="amqpfuzz-tests", log=log)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def first_night(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Summary]:
    """The hand-made night of records.first_night, reported once: (input, output, summary)."""
    inputs = tmp_path_factory.mktemp("first-night-in")
    output = tmp_path_factory.mktemp("first-night-out")
    records.first_night(inputs)
    return inputs, output, run(spark, [str(inputs)], str(output))


def table(spark: SparkSession, output: Path, name: str) -> DataFrame:
    """A table as written, read back with its own schema; times as UTC text (the session's
    time zone is UTC), so that expectations do not depend on the machine's zone."""
    frame = spark.read.parquet(str(output / name))
    stamps = [f.name for f in frame.schema if isinstance(f.dataType, TimestampType)]
    return frame.withColumns({c: F.date_format(c, "yyyy-MM-dd HH:mm:ss.SSS") for c in stamps})


@pytest.fixture(scope="session")
def three_nights(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[Path]]:
    """report_records.NIGHTS reported one after the other into one output: (output, inputs)."""
    output = tmp_path_factory.mktemp("three-nights-out")
    inputs = []
    for night in records.NIGHTS:
        inputs.append(tmp_path_factory.mktemp(f"night-{night}"))
        records.night_of(inputs[-1], night)
        run(spark, [str(inputs[-1])], str(output))
    return output, inputs
