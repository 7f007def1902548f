"""``amqpfuzz broker start|stop|list``: throwaway brokers for your own experiments, detached on
purpose: they run until ``amqpfuzz broker stop``."""

from __future__ import annotations

import click

from amqpfuzz.spec import PROTOCOLS, family_of

from ..brokers import BROKERS, refuses
from ..brokers.detached import detach, detached, stop_detached
from ..brokers.jvm import cache_directory, distributions, install
from .console import BadInput

__all__ = ["broker_group"]


@click.group("broker")
def broker_group() -> None:
    """Throwaway brokers for fuzzing: start, stop, list, install."""


@broker_group.command("install")
def broker_install() -> None:
    """Fetch the JVM brokers and JaCoCo from Maven Central into the cache, once per machine
    (make setup runs this; what is there is only checked)."""
    fetched = install()
    for name, found in distributions().items():
        state = "fetched" if found.name in fetched else "present"
        click.echo(f"{name}: {found.name} {state} in {found.home}")
    if not fetched:
        click.echo(f"(cache: {cache_directory()})")


@broker_group.command("start")
@click.argument("kind", type=click.Choice(list(BROKERS)))
@click.option("--port", type=click.IntRange(1, 65535), help="Port (default: a free one).")
@click.option("--tls", is_flag=True, help="A TLS listener too, its certificate from a new CA.")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    help="Configure it for this protocol's family, as a run's throwaway broker is (Broker-J "
    "over 1.0 creates the nodes a link names; default: as for 0-9-1).",
)
def broker_start(kind: str, port: int | None, tls: bool, protocol: str | None) -> None:
    """Start a throwaway broker that runs until `amqpfuzz broker stop`."""
    refused = refuses(kind, protocol) if protocol is not None else None
    if refused is not None:
        raise BadInput(refused)
    broker = BROKERS[kind](port, tls=tls)
    broker.family = family_of(protocol) if protocol is not None else None
    try:
        broker.start()
    except BaseException:
        broker.remove()  # its directory, made for it, goes with the start that failed
        raise
    detach(broker)
    click.echo(f"{kind}-{broker.port}  {broker.url}  (data and log in {broker.directory})")
    if broker.tls_url is not None:
        click.echo(f"{kind}-{broker.port}  {broker.tls_url}  (--ca-file {broker.ca_file})")


@broker_group.command("stop")
@click.argument("names", nargs=-1)
@click.option("--all", "stop_all", is_flag=True, help="Stop every broker started here.")
def broker_stop(names: tuple[str, ...], stop_all: bool) -> None:
    """Stop throwaway brokers (by the name `broker list` shows) and delete their data."""
    if stop_all:
        names = tuple(str(b["name"]) for b in detached())
    if not names:
        raise BadInput("name a broker to stop (see amqpfuzz broker list), or say --all")
    for name in names:
        if not stop_detached(name):
            raise BadInput(f"no broker named {name!r} (see amqpfuzz broker list)")
        click.echo(f"stopped {name}")


@broker_group.command("list")
def broker_list() -> None:
    """The throwaway brokers started with `amqpfuzz broker start`."""
    found = detached()
    if not found:
        click.echo("no brokers")
    for state in found:
        status = "running" if state["running"] else "stopped"
        click.echo(f"{state['name']}  {status}  {state['url']}  log {state['log']}")
