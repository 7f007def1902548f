"""``amqpfuzz client list|build|versions``: the client libraries the client campaigns fuzz,
through their shims (``fuzzer/clients/``), at their pinned versions or any they published."""

from __future__ import annotations

import click
from rich.table import Table

from ..clients.builds import build, parse_spec, wanted
from ..clients.registries import REGISTRIES, is_release, published
from ..clients.shims import SHIMS, build_root, is_built, shim, version
from .console import make_console

__all__ = ["client_group"]


@click.group("client")
def client_group() -> None:
    """Client libraries to fuzz, each through a shim: list, build, versions."""


@client_group.command("list")
def client_list() -> None:
    """The clients, their libraries' registries and versions, and whether their shims are
    built (at the pinned versions)."""
    table = Table(title=f"amqpfuzz clients (built in {build_root()})", title_justify="left")
    for column in ("client", "protocol", "language", "library", "registry", "version", "built"):
        table.add_column(column, overflow="fold")
    for name, item in SHIMS.items():
        built = is_built(name)
        table.add_row(
            name,
            item.protocol,
            item.language,
            item.library,
            REGISTRIES[item.registry],
            version(name) or "not installed",
            "not needed" if built is None else "yes" if built else "no",
        )
    make_console().print(table)


@client_group.command("build")
@click.argument("names", nargs=-1, metavar="[NAME[@VERSION]]...")
def client_build(names: tuple[str, ...]) -> None:
    """Build the named clients' shims (all by default) where their sources changed; NAME@VERSION
    fetches that version from the library's registry and builds it into the machine's cache."""
    asked = [(name, wanted(name, at)) for name, at in map(parse_spec, names)]
    for name, at in asked or [(n, None) for n in SHIMS]:
        for done in build([name], at=at):
            called = f"{done.name}@{at}" if at else done.name
            click.echo(f"{called}: {done.outcome} ({done.directory})")


@client_group.command("versions")
@click.argument("name")
@click.option("--all", "everything", is_flag=True, help="Pre-releases too.")
def client_versions(name: str, everything: bool) -> None:
    """The versions a client's library has published on its registry, oldest first."""
    item = shim(name)
    if item.registry == "deb":
        click.echo(f"{version(name) or 'not installed'} (Debian's package {item.package}: one)")
        return
    found = [v for v in published(item.registry, item.package) if everything or is_release(v)]
    pinned = item.pinned or version(name)
    for one in found:
        click.echo(f"{one}  (pinned)" if one == pinned else one)
