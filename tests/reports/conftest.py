"""One Spark session per test process (pytest-xdist gives each worker its own), sized for a
two-core machine, and the helpers that write records (and the broker's coverage records) with
the real record writer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from amqpfuzz.fuzzer.spark import FAST_START, local_session
from amqpfuzz.reports import Summary, run
from tests.helpers import coverage_records as measured
from tests.helpers import report_records as records

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    # a test's JVM reads a few records: it starts faster without the optimising compiler
    "spark.driver.extraJavaOptions": FAST_START,
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
    """The hand-made night of records.first_night (and its coverage, measured.first_night),
    reported once: (input, output, summary)."""
    inputs = tmp_path_factory.mktemp("first-night-in")
    output = tmp_path_factory.mktemp("first-night-out")
    records.first_night(inputs)
    measured.first_night(inputs)
    return inputs, output, run(spark, [str(inputs)], str(output))


@pytest.fixture(scope="session")
def three_nights(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[Path]]:
    """report_records.NIGHTS (with their coverage, measured.night_of) reported one after the
    other into one output: (output, inputs)."""
    output = tmp_path_factory.mktemp("three-nights-out")
    inputs = []
    for night in records.NIGHTS:
        inputs.append(tmp_path_factory.mktemp(f"night-{night}"))
        records.night_of(inputs[-1], night)
        measured.night_of(inputs[-1], night)
        run(spark, [str(inputs[-1])], str(output))
    return output, inputs
