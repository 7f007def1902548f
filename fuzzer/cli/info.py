"""``amqpfuzz spec`` and ``amqpfuzz mutations``: what a specification holds, what a campaign
tests."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, AnySpec, load, load_file

from .console import BadInput

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
    from hypothesis.errors import InvalidArgument

    from amqpfuzz.strategies import operators

    spec = load(protocol)
    try:
        catalogue = operators(protocol)
    except InvalidArgument:
        raise BadInput(f"no mutation operators for AMQP {protocol} yet") from None
    rows: list[dict[str, Any]] = []
    for op in catalogue:
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
