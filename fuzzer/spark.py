"""Spark sessions for the command line (campaigns on Spark, the nightly report), the benchmarks
and the tests: a job never builds one. Here, below both the campaigns and the reports, so that
each can use it without the other.

A local session is sized for a small machine (two cores: few shuffle partitions, no UI) and
keeps Spark's own console output (log lines, JVM warnings, progress bars) in a log file, so
that the command prints only what it means to. A remote session talks Spark Connect.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from amqpfuzz.spec import AmqpfuzzError

__all__ = [
    "FAST_START",
    "LOCAL_CONF",
    "SPARK_LOG",
    "SessionError",
    "local_session",
    "remote_session",
]

DEFAULT_MASTER = "local[2]"
SPARK_LOG = Path(tempfile.gettempdir()) / "amqpfuzz-spark.log"

# Java options of a driver JVM that starts fast (no optimising compiler, one garbage collector
# thread): for a driver with little to compute, a campaign's or a small report's; a nightly
# report over millions of records keeps the JVM's defaults.
FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

LOCAL_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",  # a few tasks per stage for two cores, not 200
    "spark.default.parallelism": "2",
    "spark.sql.files.maxPartitionBytes": "32m",  # many small tasks keep both cores busy
    "spark.driver.memory": "3g",  # the job caches the parsed lines
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    # One report compiles some 150 classes; with the default cache of 100, a session that runs
    # the job again (tests, a notebook, a service) would compile them all again every time.
    "spark.sql.codegen.cache.maxEntries": "1000",
    "spark.log.level": "WARN",
}


class SessionError(AmqpfuzzError):
    """Spark could not be started or reached."""


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the JVM starts: the JVM keeps it, Python
    gets its own back."""
    saved = os.dup(2)
    with path.open("ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def local_session(
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, str] | None = None,
    *,
    app_name: str = "amqpfuzz-report",
    log: Path = SPARK_LOG,
) -> SparkSession:
    """A session on this machine (``local[N]``) or a cluster master URL, quiet on the console."""
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**LOCAL_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        with _stderr_to(log):
            return builder.getOrCreate()
    except PySparkException as exc:
        raise SessionError(f"cannot start Spark ({master}): {exc}; see {log}") from None


def remote_session(url: str, *, app_name: str = "amqpfuzz-report") -> SparkSession:
    """A Spark Connect session (``sc://host:port``); needs ``pyspark[connect]``'s packages."""
    try:
        session = SparkSession.builder.remote(url).appName(app_name).getOrCreate()
        session.version  # noqa: B018 -- the first call to the server: is anyone there?
        return session
    except ImportError as exc:
        raise SessionError(
            f"Spark Connect needs pyspark's connect packages ({exc}): "
            "pip install 'pyspark[connect]'"
        ) from None
    except PySparkException as exc:
        raise SessionError(f"cannot reach Spark Connect at {url}: {exc}") from None
