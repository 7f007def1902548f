"""``amqpfuzz spec`` and ``amqpfuzz mutations``: what a specification holds, what a campaign
tests."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, AnySpec, load, load_file
from amqpfuzz.spec.amqp10.model import Descriptor, Spec100

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
    if isinstance(spec, Spec100):
        out.update(_describe_1_0(spec))
    classes = getattr(spec, "classes", ())
    if classes and hasattr(classes[0], "methods"):
        out["classes"] = [
            {"name": c.name, "index": c.index, "methods": [m.name for m in c.methods]}
            for c in classes
        ]
    return out


def _describe_1_0(spec: Spec100) -> dict[str, Any]:
    """1.0's parts, its described types by name with their descriptors (every performative
    and SASL frame among them), and its error conditions."""

    def descriptor(d: Descriptor) -> dict[str, Any]:
        return {"name": d.name, "code": f"0x{d.code[0]:08x}:0x{d.code[1]:08x}"}

    parts = []
    for part in spec.parts:
        mine = [t for t in spec.types if t.part == part.name]
        parts.append(
            {
                "name": part.name,
                "sections": [s.name for s in part.sections],
                **{
                    f"{kind}_types": sum(1 for t in mine if t.type_class == kind)
                    for kind in ("primitive", "composite", "restricted")
                },
                "definitions": sum(1 for d in spec.definitions if d.part == part.name),
            }
        )
    composites = [
        {
            "name": t.name,
            "part": t.part,
            "descriptor": descriptor(t.descriptor),
            "provides": list(t.provides),
            "fields": [
                {
                    "name": f.name,
                    "type": f.type,
                    "mandatory": f.mandatory,
                    "multiple": f.multiple,
                    "default": f.default,
                    "requires": list(f.requires),
                }
                for f in t.fields
            ],
        }
        for t in spec.types_of_class("composite")
    ]
    restricted = spec.types_of_class("restricted")
    return {
        "parts": parts,
        "performatives": [c["name"] for c in composites if "frame" in c["provides"]],
        "sasl_frames": [c["name"] for c in composites if "sasl-frame" in c["provides"]],
        "composites": composites,
        "described_restricted": [
            {"name": t.name, "source": t.source, "descriptor": descriptor(t.descriptor)}
            for t in restricted
            if t.descriptor is not None
        ],
        "error_conditions": {
            t.name: dict(t.choices) for t in restricted if "error-condition" in t.provides
        },
        "primitive_encodings": {
            t.name: [
                {
                    "code": f"0x{e.code:02x}",
                    "name": e.name,
                    "category": e.category,
                    "width": e.width,
                }
                for e in t.encodings
            ]
            for t in spec.types_of_class("primitive")
        },
    }


def _print_1_0(console: Console, described: dict[str, Any]) -> None:
    parts = Table(title="parts", title_justify="left")
    for column in ("part", "sections", "primitive", "composite", "restricted", "definitions"):
        parts.add_column(column, justify="left" if column in ("part", "sections") else "right")
    for part in described["parts"]:
        parts.add_row(
            part["name"],
            ", ".join(part["sections"]),
            *(str(part[f"{k}_types"]) for k in ("primitive", "composite", "restricted")),
            str(part["definitions"]),
        )
    console.print(parts)
    frames = Table(title="performatives and SASL frames", title_justify="left")
    for column in ("frame", "descriptor", "fields (* mandatory)"):
        frames.add_column(column)
    for c in described["composites"]:
        if {"frame", "sasl-frame"} & set(c["provides"]):
            fields = ", ".join(f["name"] + ("*" if f["mandatory"] else "") for f in c["fields"])
            frames.add_row(
                c["name"], f"{c['descriptor']['name']} {c['descriptor']['code']}", fields
            )
    console.print(frames)
    errors = Table(title="error conditions", title_justify="left")
    errors.add_column("type")
    errors.add_column("conditions")
    for name, choices in described["error_conditions"].items():
        errors.add_row(name, ", ".join(choices.values()))
    console.print(errors)


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
    if isinstance(spec, Spec100):
        _print_1_0(console, described)
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
