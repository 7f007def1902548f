"""Spark sessions for the command line (campaigns on Spark, the nightly report), the benchmarks
and the tests: a job never builds one. Here, below both the campaigns and the reports, so that
each can use it without the other.

A local session is sized for a small machine (two cores: few shuffle partitions, no UI) and
keeps Spark's own console output (log lines, JVM warnings, progress bars) in a log file, so
that the command prints only what it means to. A remote session talks Spark Connect; a Connect
server of this machine is started from pyspark's own jars (:func:`connect_server`).
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pyspark
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from amqpfuzz.spec import AmqpfuzzError

from .children import die_with_parent

__all__ = [
    "CAMPAIGN_CONF",
    "FAST_START",
    "LOCAL_CONF",
    "LOOPBACK",
    "SPARK_LOG",
    "ConnectServer",
    "SessionError",
    "connect_server",
    "failure_line",
    "local_session",
    "remote_session",
    "spark_conf",
]

DEFAULT_MASTER = "local[2]"
SPARK_LOG = Path(tempfile.gettempdir()) / "amqpfuzz-spark.log"

# Java options of a driver JVM that starts fast (no optimising compiler, one garbage collector
# thread): for a driver with little to compute, a campaign's or a small report's; a nightly
# report over millions of records keeps the JVM's defaults.
FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# A campaign's driver plans shards and reads summaries (the records never pass through it), and
# a local master's tasks only write rows: a small JVM that starts fast leaves the cores to the
# brokers and the engine (a Connect server of a campaign's, too).
CAMPAIGN_CONF: Mapping[str, str] = {
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": FAST_START,
}

LOCAL_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",  # a few tasks per stage for two cores, not 200
    "spark.sql.files.maxPartitionBytes": "32m",  # many small tasks keep both cores busy
    "spark.driver.memory": "3g",  # the job caches the parsed lines
    "spark.sql.session.timeZone": "UTC",
    # One report compiles some 150 classes; with the default cache of 100, a session that runs
    # the job again (tests, a notebook, a service) would compile them all again every time.
    "spark.sql.codegen.cache.maxEntries": "1000",
    "spark.log.level": "WARN",
}


# a local master's only: a cluster's executors must reach the driver at an address of its host
LOOPBACK: Mapping[str, str] = {
    "spark.default.parallelism": "2",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def _defaults(master: str) -> dict[str, str]:
    """The settings a session starts with on ``master``: this machine's two cores and its
    loopback interface for a ``local[N]`` one."""
    return {**LOCAL_CONF, **(LOOPBACK if master.startswith("local") else {})}


class SessionError(AmqpfuzzError):
    """Spark could not be started or reached."""


def spark_conf(items: Iterable[str], option: str = "--conf") -> dict[str, str]:
    """``KEY=VALUE`` settings as given on a command line; SessionError names one that is not."""
    conf = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not key or not equals:
            raise SessionError(f"{option} takes KEY=VALUE, not {item!r}")
        conf[key] = value
    return conf


_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?$")
_TRACEBACK = "Traceback (most recent call last):"


def failure_line(exc: BaseException) -> str:
    """A failed Spark job in one line: the exception a Python task raised, if one did (its
    traceback's last line, not Spark's wrapping of it), else the message's first line."""
    lines = [line.rstrip() for line in str(exc).splitlines()]
    starts = [i for i, line in enumerate(lines) if line.endswith(_TRACEBACK)]
    if starts:
        said = next((x for x in lines[starts[-1] + 1 :] if x and not x[0].isspace()), "")
    else:
        said = next((x.strip() for x in lines if x.strip()), "")
    said = _SQLSTATE.sub("", said) or type(exc).__name__
    if "No module named 'amqpfuzz" in said:
        said += " (the executors' Python needs amqpfuzz installed: PYSPARK_PYTHON)"
    return said


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
    for key, value in {**_defaults(master), **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        with _stderr_to(log):
            return builder.getOrCreate()
    except PySparkException as exc:
        raise SessionError(f"cannot start Spark ({master}): {exc}; see {log}") from None


def remote_session(url: str, *, app_name: str = "amqpfuzz-report") -> SparkSession:
    """A Spark Connect session (``sc://host:port``); needs ``pyspark[connect]``'s packages.
    Nobody listening there is one error at once (the client itself would retry for minutes)."""
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "", parsed.port or 15002), timeout=10):
            pass
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SessionError(f"cannot reach Spark Connect at {url}: {why}") from None
    try:
        session = SparkSession.builder.remote(url).appName(app_name).getOrCreate()
        session.version  # noqa: B018 -- the first call to the server: is anyone there?
        return session
    except ImportError as exc:
        raise SessionError(
            f"Spark Connect needs pyspark's connect packages ({exc}): "
            "pip install 'amqpfuzz[connect]'"
        ) from None
    except PySparkException as exc:
        raise SessionError(f"cannot reach Spark Connect at {url}: {exc}") from None


CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
# what a process that made a Connect session has in its environment (pyspark puts it there):
# the server and its Python workers are classic Spark, and must not see it
_CONNECT_CLIENT = (
    "SPARK_REMOTE",
    "SPARK_CONNECT_MODE_ENABLED",
    "SPARK_LOCAL_REMOTE",
    "SPARK_API_MODE",
)


@dataclass(frozen=True)
class ConnectServer:
    """A Spark Connect server this process started: its URL, its process."""

    url: str
    process: subprocess.Popen[bytes]


@contextmanager
def connect_server(
    port: int,
    *,
    host: str = "127.0.0.1",
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, str] | None = None,
    log: Path = SPARK_LOG,
    timeout: float = 120.0,
    python: str = sys.executable,
) -> Iterator[ConnectServer]:
    """A Spark Connect server on this machine (its ``master`` ``local[N]`` or a cluster's),
    started from pyspark's own jars, its Python workers running ``python`` (by default this
    interpreter, so that amqpfuzz's tasks import amqpfuzz), from when it listens. It ends with the
    block, and with this process, SIGKILL included; its console output goes to ``log``."""
    with socket.socket() as probe:  # someone else's server there would look like ours
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise SessionError(
                f"cannot start Spark Connect on {host}:{port}: {exc.strerror}"
            ) from None
    home = Path(pyspark.__file__).parent
    settings = {**_defaults(master), **(conf or {}), "spark.connect.grpc.binding.address": host,
                "spark.connect.grpc.binding.port": str(port)}  # fmt: skip
    command = [str(home / "bin" / "spark-submit"), "--class", CONNECT_SERVER, "--name",
               "amqpfuzz Spark Connect server", "--master", master]  # fmt: skip
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    # SPARK_CONNECT_MODE=0: the server's own pyspark is a classic one (as Spark's script says)
    env = {k: v for k, v in os.environ.items() if k not in _CONNECT_CLIENT}
    env |= {"SPARK_HOME": str(home), "PYSPARK_PYTHON": python, "SPARK_CONNECT_MODE": "0"}
    try:
        with log.open("ab") as sink:
            server = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env,
                start_new_session=True, preexec_fn=functools.partial(die_with_parent, os.getpid()),
            )  # fmt: skip
    except OSError as exc:
        raise SessionError(f"cannot start Spark Connect: {exc}") from None
    try:
        _listening(server, host, port, timeout, log)
        yield ConnectServer(f"sc://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}", server)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _listening(
    server: subprocess.Popen[bytes], host: str, port: int, timeout: float, log: Path
) -> None:
    """Wait until ``server`` takes connections on ``port``; SessionError if it ends first or
    takes longer than ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SessionError(
                f"the Spark Connect server ended (status {server.returncode}) before it "
                f"listened on {host}:{port}; see {log}"
            )
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.2)  # not listening yet
    raise SessionError(f"the Spark Connect server did not listen on {host}:{port} in "
                       f"{timeout:g} s; see {log}")  # fmt: skip
