"""``amqpfuzz report``: the nightly job from the command line.

The main command loads this module only when ``report`` is asked for, so PySpark is never
imported by the rest of the CLI. The session is built here (local mode by default, or
``--remote`` for Spark Connect) and handed to :func:`amqpfuzz.reports.job.run`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import click
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from amqpfuzz.fuzzer.spark import (
    DEFAULT_MASTER,
    failure_line,
    local_session,
    remote_session,
    spark_conf,
)
from amqpfuzz.spec import AmqpfuzzError

from .job import Summary, is_local, local_path, run
from .listing import SETTLE, ReportInputError

__all__ = ["ReportFailed", "SparkFailed", "execute", "report_command"]


class ReportFailed(click.ClickException):
    """Bad input: one clear line, exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"amqpfuzz: error: {self.format_message()}", err=True)


class SparkFailed(ReportFailed):
    """Spark itself failed (not the input): one line, exit status 1."""

    exit_code = 1


def _check_local(inputs: Sequence[str]) -> None:
    """What can be checked before Spark starts: the local directories."""
    for path in inputs:
        if is_local(path) and not local_path(path).is_dir():
            what = "not a directory" if local_path(path).exists() else "no such directory"
            raise ReportInputError(f"{path}: {what}")


def _describe(summary: Summary) -> str:
    h = summary.headline
    return (
        f"night {summary.night}: {h['cases']:,.0f} cases, {h['failures']:,.0f} failures "
        f"({h['new']:.0f} new, {h['regressed']:.0f} regressed, {h['fixed']:.0f} fixed), "
        f"{h['cases_per_s']:,.1f} cases/s"
    )


def execute(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    settle: dt.timedelta,
    html_to: str | None = None,
) -> Summary:
    """Run the job and print what it made; every expected failure becomes one line."""
    try:
        summary = run(spark, inputs, output, settle=settle, html_to=html_to)
    except AmqpfuzzError as exc:
        raise ReportFailed(str(exc)) from None
    except PySparkException as exc:
        raise SparkFailed(f"Spark failed: {failure_line(exc)}") from None
    nights = ", ".join(str(n) for n in summary.nights)
    click.echo(f"processed {summary.records:,} records of {nights}")
    click.echo(_describe(summary))
    click.echo(f"tables: {output}")
    click.echo(f"html: {summary.html_path or '(not written: give --html FILE)'}")
    return summary


@click.command("report")
@click.option(
    "--in",
    "inputs",
    multiple=True,
    required=True,
    metavar="DIR",
    help="A directory of record files (searched recursively); repeat for several.",
)
@click.option(
    "--out", "output", required=True, metavar="DIR", help="Where the tables and report go."
)
@click.option("--master", help=f"Spark master URL [default: {DEFAULT_MASTER}].")
@click.option("--remote", metavar="URL", help="Use Spark Connect at this sc:// URL instead.")
@click.option(
    "--html",
    "html_to",
    metavar="FILE",
    help="Where the page goes [default: OUT/report.html when OUT is a local path].",
)
@click.option(
    "--settle-minutes",
    type=click.FloatRange(min=0),
    default=SETTLE.total_seconds() / 60,
    show_default=True,
    help="A .part file unchanged for this long is an abandoned run and is read.",
)
@click.option(
    "--conf",
    "confs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Extra Spark configuration for a session this command starts.",
)
def report_command(
    inputs: tuple[str, ...],
    output: str,
    master: str | None,
    remote: str | None,
    html_to: str | None,
    settle_minutes: float,
    confs: tuple[str, ...],
) -> None:
    """Aggregate record files into Parquet tables and one HTML report.

    Tables (partitioned by run date): runs, conformance, signatures, coverage, divergences,
    ingest, rejects; the latest night's page is OUT/report.html.
    """
    if master and remote:
        raise click.UsageError("give --master or --remote, not both")
    try:
        conf = spark_conf(confs)
        _check_local(inputs)
        spark = remote_session(remote) if remote else local_session(master or DEFAULT_MASTER, conf)
    except AmqpfuzzError as exc:
        raise ReportFailed(str(exc)) from None
    try:
        execute(spark, inputs, output, dt.timedelta(minutes=settle_minutes), html_to)
    finally:
        spark.stop()
