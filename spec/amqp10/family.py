"""The 1.0 family's object for the specification layer (:data:`FAMILY`)."""

from __future__ import annotations

from typing import Any

from lxml import etree

from ..family import Description, Reach, Table
from ..xmlfile import parse
from .codec import codec_for
from .model import DEFAULT_PARTS, Descriptor, Spec100, load, load_1_0
from .sentences import every_sentence

__all__ = ["FAMILY", "Amqp10Spec", "performatives"]


def performatives(protocol: str = "1.0") -> tuple[str, ...]:
    """The composite types that are frame bodies (open ... close), in the XML's order."""
    types = codec_for(protocol).types
    return tuple(n for n in types.composites if types.provides(n, ("frame",)))


class Amqp10Spec:
    """The model of 1.0's five parts, what a client reaches in it (its performatives and MUST
    sentences), and how the reports place its spec_refs."""

    name = "amqp10"
    title = "AMQP 1.0"
    model = Spec100

    def read(self, protocol: str) -> Spec100:
        return load(protocol)

    def claims(self, root: etree._Element) -> bool:
        """A 1.0 part: ``<amqp name="types|transport|...">``."""
        return bool(root.get("name"))

    def read_file(self, path: str) -> Spec100:
        """A user's part, read with the bundled others (the part it replaces left out)."""
        part = parse(path).get("name")
        others = [p for p in DEFAULT_PARTS if p.name != f"amqp1-0-{part}.xml"]
        return load_1_0([*others, path])

    def reach(self, protocol: str) -> Reach:
        """The performatives (a client may send each), as the classes and the methods; the
        MUST sentences of the messaging and transport parts, as the rules."""
        sent = performatives(protocol)
        return Reach(sent, sent, tuple(s.ref for s in every_sentence()))

    def column(self, protocol: str, spec_ref: str, reach: Reach) -> str:
        """A performative; ``sasl`` for the SASL frames; a sentence's part (``messaging
        sentences``, ``transport sentences``); ``frames`` for the rest (protocol headers,
        empty frames, frame types that do not exist)."""
        if spec_ref in reach.classes:
            return spec_ref
        if spec_ref.startswith("sasl"):
            return "sasl"
        if "#" in spec_ref:
            return (
                "transport sentences"
                if spec_ref.startswith("transport:")
                else "messaging sentences"
            )
        return "frames"

    def rule_text(self, protocol: str, spec_ref: str) -> str | None:
        """The MUST sentence ``spec_ref`` names."""
        return next((s.text for s in every_sentence() if s.ref == spec_ref), None)

    def describe(self, spec: Spec100) -> Description:
        """The counts; the parts, the described types by name with their descriptors (every
        performative and SASL frame among them), the error conditions and the primitive
        encodings; as tables, the parts, the frames and the error conditions."""
        data = {
            "protocol": spec.protocol,
            "sources": list(spec.sources),
            "counts": spec.inventory(),
            **_data(spec),
        }
        return Description(data, _tables(data))


def _descriptor(d: Descriptor) -> dict[str, Any]:
    return {"name": d.name, "code": f"0x{d.code[0]:08x}:0x{d.code[1]:08x}"}


def _data(spec: Spec100) -> dict[str, Any]:
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
            "descriptor": _descriptor(t.descriptor),
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
            {"name": t.name, "source": t.source, "descriptor": _descriptor(t.descriptor)}
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


def _tables(data: dict[str, Any]) -> tuple[Table, ...]:
    kinds = ("primitive", "composite", "restricted")
    parts = Table(
        "parts",
        ("part", "sections", *kinds, "definitions"),
        tuple(
            (
                part["name"],
                ", ".join(part["sections"]),
                *(str(part[f"{k}_types"]) for k in kinds),
                str(part["definitions"]),
            )
            for part in data["parts"]
        ),
        numeric=frozenset((*kinds, "definitions")),
    )
    frames = Table(
        "performatives and SASL frames",
        ("frame", "descriptor", "fields (* mandatory)"),
        tuple(
            (
                c["name"],
                f"{c['descriptor']['name']} {c['descriptor']['code']}",
                ", ".join(f["name"] + ("*" if f["mandatory"] else "") for f in c["fields"]),
            )
            for c in data["composites"]
            if {"frame", "sasl-frame"} & set(c["provides"])
        ),
    )
    errors = Table(
        "error conditions",
        ("type", "conditions"),
        tuple(
            (name, ", ".join(choices.values()))
            for name, choices in data["error_conditions"].items()
        ),
    )
    return parts, frames, errors


FAMILY = Amqp10Spec()
