"""The ``amqpfuzz`` command line.

Every expected failure (a bad spec file, an unknown protocol, an unreachable broker) is an
:class:`~amqpfuzz.spec.errors.AmqpfuzzError`; the group turns it into one line on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib.metadata import version
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from amqpfuzz.spec import FAMILY, PROTOCOLS, AmqpfuzzError, AnySpec, Spec, load_any, load_file

__all__ = ["main"]


class BadInput(click.ClickException):
    """One clear line, exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"amqpfuzz: error: {self.format_message()}", err=True)


# Commands that live in layers to the right of the fuzzer (the Spark reports), named here and
# imported only when used, so that the fuzzer never imports them and `amqpfuzz --help` stays fast.
LAZY_COMMANDS = {"report": "amqpfuzz.reports.cli:report_command"}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            module, _, attribute = LAZY_COMMANDS[name].partition(":")
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AmqpfuzzError as exc:
            raise BadInput(str(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("amqpfuzz"), prog_name="amqpfuzz")
def cli() -> None:
    """Property-based fuzzing and conformance testing of AMQP brokers."""


_LABELS = {
    "constants": "constants",
    "reply_codes": "  of which reply codes",
    "domains": "domains",
    "classes": "classes",
    "methods": "methods",
    "fields": "fields",
    "properties": "  of which content properties",
    "rules": "rules",
    "scenarios": "scenario docs",
    "asserts": "asserts",
}


def _describe(spec: AnySpec) -> dict[str, Any]:
    sources = getattr(spec, "sources", None) or (getattr(spec, "source", ""),)
    out: dict[str, Any] = {
        "protocol": spec.protocol,
        "sources": list(sources),
        "counts": spec.inventory(),
    }
    header = getattr(spec, "protocol_header", None)
    if isinstance(header, bytes):
        out["protocol_header"] = list(header[4:])
    classes = getattr(spec, "classes", ())
    if classes and hasattr(classes[0], "methods"):
        out["classes"] = [
            {"name": c.name, "index": c.index, "methods": [m.name for m in c.methods]}
            for c in classes
        ]
    return out


@cli.command("spec")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default="0-9-1",
    show_default=True,
    help="Which bundled specification to describe.",
)
@click.option(
    "--file",
    "path",
    type=click.Path(dir_okay=False),
    help="Describe your own specification XML instead (its version is read from the file).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def spec_command(protocol: str, path: str | None, as_json: bool) -> None:
    """What a specification holds: counts computed from its XML."""
    spec = load_file(path) if path else load_any(protocol)
    described = _describe(spec)
    if as_json:
        click.echo(json.dumps(described, indent=2))
        return
    table = Table(title=f"AMQP {spec.protocol}", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, count in described["counts"].items():
        table.add_row(_LABELS.get(key, key.replace("_", " ")), str(count))
    console = Console()
    console.print(table)
    for source in described["sources"]:
        console.print(f"[dim]from {source}[/dim]", highlight=False)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``amqpfuzz`` console script."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="amqpfuzz")


@cli.command("mutations")
@click.option(
    "--protocol",
    type=click.Choice(list(FAMILY)),
    default="0-9-1",
    show_default=True,
    help="Which specification's catalogue to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def mutations_command(protocol: str, as_json: bool) -> None:
    """The mutation operators a campaign uses, and the reaction each requires."""
    from amqpfuzz.strategies import mutations

    spec = load_any(protocol)
    assert isinstance(spec, Spec)
    rows: list[dict[str, Any]] = []
    for op in mutations(protocol):
        reaction = op.reaction(spec)
        rows.append(
            {
                "name": op.name,
                "breaks": op.description,
                "how": op.breaks,
                "level": op.level,
                "reaction": reaction.outcome,
                "codes": [{"name": c.name, "value": c.value} for c in reaction.codes],
                "or_accepted": reaction.or_reply,
            }
        )
    if as_json:
        click.echo(json.dumps({"protocol": protocol, "operators": rows}, indent=2))
        return
    table = Table(title=f"Mutation operators, AMQP {protocol}", title_justify="left")
    table.add_column("operator", no_wrap=True)
    for column in ("breaks", "how", "required reaction"):
        table.add_column(column)
    for row in rows:
        codes = " or ".join(f"{c['value']} {c['name']}" for c in row["codes"])
        required = f"{row['reaction']} {codes}" + (" (or accepted)" if row["or_accepted"] else "")
        table.add_row(row["name"], row["breaks"], row["how"], required)
    Console().print(table)
