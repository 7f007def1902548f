"""``amqpfuzz client list|build``: the client libraries the client campaigns fuzz, through
their shims (``fuzzer/clients/``)."""

from __future__ import annotations

import click
from rich.table import Table

from ..clients.shims import SHIMS, build, build_root, is_built, shim, version
from .console import make_console

__all__ = ["client_group"]


@click.group("client")
def client_group() -> None:
    """Client libraries to fuzz, each through a shim: list, build."""


@client_group.command("list")
def client_list() -> None:
    """The clients, their libraries' versions and whether their shims are built."""
    table = Table(title=f"amqpfuzz clients (built in {build_root()})", title_justify="left")
    for column in ("client", "protocol", "language", "library", "version", "built"):
        table.add_column(column, overflow="fold")
    for name, item in SHIMS.items():
        built = is_built(name)
        table.add_row(
            name,
            item.protocol,
            item.language,
            item.library,
            version(name) or "not installed",
            "not needed" if built is None else "yes" if built else "no",
        )
    make_console().print(table)


@client_group.command("build")
@click.argument("names", nargs=-1)
def client_build(names: tuple[str, ...]) -> None:
    """Build the named clients' shims (all by default) where their sources changed."""
    for name in names:
        shim(name)  # an unknown name: one line, before anything is built
    for done in build(list(names) or None):
        click.echo(f"{done.name}: {done.outcome} ({done.directory})")
