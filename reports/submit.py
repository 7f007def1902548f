"""Entry point for ``spark-submit``: the same job, on whatever cluster spark-submit names.

    spark-submit --master spark://head:7077 "$(python -c 'import amqpfuzz.reports.submit as s;
    print(s.__file__)')" --in hdfs:///amqpfuzz/records --out hdfs:///amqpfuzz/reports \
    --html /srv/www/amqpfuzz.html

The session comes from spark-submit (master, memory, executors are its options); the job uses
no Python functions on executors, so only the driver needs amqpfuzz installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, this script has its own folder first on sys.path, where the package's modules
# would shadow others of the same name (our html.py, the standard library's html): drop it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import datetime as dt  # noqa: E402

import click  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from amqpfuzz.reports.cli import execute  # noqa: E402
from amqpfuzz.reports.listing import SETTLE  # noqa: E402


@click.command()
@click.option("--in", "inputs", multiple=True, required=True, metavar="DIR")
@click.option("--out", "output", required=True, metavar="DIR")
@click.option("--html", "html_to", metavar="FILE", help="Where the page goes (a local file).")
@click.option(
    "--settle-minutes",
    type=click.FloatRange(min=0),
    default=SETTLE.total_seconds() / 60,
    show_default=True,
)
def main(inputs: tuple[str, ...], output: str, html_to: str | None, settle_minutes: float) -> None:
    """Aggregate record files into Parquet tables and one HTML report."""
    spark = SparkSession.builder.appName("amqpfuzz-report").getOrCreate()
    try:
        execute(spark, inputs, output, dt.timedelta(minutes=settle_minutes), html_to)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:], prog_name="amqpfuzz-report")
