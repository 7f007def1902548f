"""``amqpfuzz spark-connect``: a Spark Connect server on this machine, for ``amqpfuzz run
--spark sc://…`` and ``amqpfuzz report --remote sc://…``, in the foreground until interrupted.
Its Python workers run this environment's interpreter, so that the campaigns' tasks import
amqpfuzz; its executors are ``--master``'s (``local[N]``, or a cluster's)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ..spark import DEFAULT_MASTER, connect_server, spark_conf
from .console import BadInput

__all__ = ["spark_connect_command"]


@click.command("spark-connect")
@click.option("--port", type=click.IntRange(1, 65535), default=15002, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address it listens on (0.0.0.0: every interface; it has no authentication).",
)
@click.option(
    "--master",
    default=DEFAULT_MASTER,
    show_default=True,
    help="Where its tasks run: local[N] (local[N,F]: each task tried F times), or a cluster's "
    "master URL.",
)
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="A Spark setting.")
@click.option(
    "--log", type=click.Path(dir_okay=False), help="Its console output (default: in /tmp)."
)
def spark_connect_command(
    port: int, host: str, master: str, confs: tuple[str, ...], log: str | None
) -> None:
    """Run a Spark Connect server here until interrupted (Ctrl-C)."""
    conf = spark_conf(confs)
    where = Path(log) if log else Path(tempfile.gettempdir()) / f"amqpfuzz-connect-{port}.log"
    with connect_server(port, host=host, master=master, conf=conf, log=where) as server:
        click.echo(f"Spark Connect at {server.url} ({master}); its log: {where}; Ctrl-C ends it")
        try:
            status = server.process.wait()
        except KeyboardInterrupt:
            click.echo("stopping Spark Connect")
            return
    raise BadInput(f"the Spark Connect server ended with status {status}; see {where}")
