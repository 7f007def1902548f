"""``amqpfuzz spec`` and ``amqpfuzz mutations``: what a specification holds, what a campaign
tests."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, Table, describe, load, load_file

from .console import BadInput, make_console

__all__ = ["mutations_command", "spec_command"]


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


def _print_table(console: Console, shown: Table) -> None:
    table = RichTable(title=shown.title, title_justify="left")
    for column in shown.columns:
        table.add_column(column, justify="right" if column in shown.numeric else "left")
    for row in shown.rows:
        table.add_row(*row)
    console.print(table)


@click.command("spec")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default=DEFAULT_PROTOCOL,
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
    spec = load_file(path) if path else load(protocol)
    described = describe(spec)
    if as_json:
        click.echo(json.dumps(dict(described.data), indent=2))
        return
    table = RichTable(title=f"AMQP {spec.protocol}", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, count in described.data["counts"].items():
        table.add_row(_LABELS.get(key, key.replace("_", " ")), str(count))
    console = make_console()
    console.print(table)
    for shown in described.tables:
        _print_table(console, shown)
    for source in described.data["sources"]:
        console.print(f"[dim]from {source}[/dim]", highlight=False)


@click.command("mutations")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default=DEFAULT_PROTOCOL,
    show_default=True,
    help="Which specification's catalogue to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def mutations_command(protocol: str, as_json: bool) -> None:
    """The mutation operators a campaign uses, and the reaction each requires."""
    # (imported here: `amqpfuzz spec` does without Hypothesis, which the strategies load)
    from hypothesis.errors import InvalidArgument

    from amqpfuzz.strategies import operators

    spec = load(protocol)
    try:
        catalogue = operators(protocol)
    except InvalidArgument:
        raise BadInput(f"no mutation operators for AMQP {protocol} yet") from None
    rows: list[dict[str, Any]] = []
    reactions = [op.reaction(spec) for op in catalogue]
    for op, reaction in zip(catalogue, reactions, strict=True):
        rows.append(
            {
                "name": op.name,
                "breaks": op.description,
                "how": op.breaks,
                "level": op.level,
                "reaction": reaction.outcome,
                "codes": [{"name": c.name, "value": c.value} for c in reaction.codes],
                "or_accepted": reaction.or_reply,
                "or_any_close": reaction.any_close,
            }
        )
    if as_json:
        click.echo(json.dumps({"protocol": protocol, "operators": rows}, indent=2))
        return
    table = RichTable(title=f"Mutation operators, AMQP {protocol}", title_justify="left")
    table.add_column("operator", no_wrap=True)
    for column in ("breaks", "how", "required reaction"):
        table.add_column(column)
    for row, reaction in zip(rows, reactions, strict=True):
        table.add_row(row["name"], row["breaks"], row["how"], str(reaction))
    make_console().print(table)
