"""The 0-10 family's object for the specification layer (:data:`FAMILY`)."""

from __future__ import annotations

import re

from lxml import etree

from ..family import Description, Reach
from .model import Spec010, load, load_0_10

__all__ = ["FAMILY", "Amqp010Spec"]


class Amqp010Spec:
    """The model of the 0-10 XML, what a client reaches in it, and how the reports place its
    spec_refs."""

    name = "amqp010"
    title = "AMQP 0-10"
    model = Spec010

    def read(self, protocol: str) -> Spec010:
        return load(protocol)

    def claims(self, root: etree._Element) -> bool:
        """``<amqp major="0" minor="10">``."""
        return (root.get("major"), root.get("minor")) == ("0", "10")

    def read_file(self, path: str) -> Spec010:
        return load_0_10(path)

    def reach(self, protocol: str) -> Reach:
        """The classes; the controls and commands a client may send (all that a server, or
        either end of a session, implements); the rules of the classes, their domains and
        structs, and of those controls and commands and their fields, as
        ``class[.member][/field]/rule``."""
        spec = load(protocol)
        members = (*spec.controls, *spec.commands)
        # a client implements (receives) what a server sends; a session's sender and receiver
        # are both ends, the client among them
        received = {m.qualified for m in members if {i.role for i in m.implements} == {"client"}}
        sent = {m.qualified for m in members if m.implements} - received
        rules = []
        for rule in spec.rules:
            parts = rule.where.split(".")
            if ".".join(parts[:2]) in received:
                continue  # binds the client
            owner = ".".join(parts[:2]) + "".join(f"/{p}" for p in parts[2:])
            rules.append(f"{owner}/{rule.name}")
        methods = tuple(m.qualified for m in members if m.qualified in sent)
        return Reach(tuple(c.name for c in spec.classes), methods, tuple(rules))

    def column(self, protocol: str, spec_ref: str, reach: Reach) -> str:
        """A class's name; ``frames`` for what names none (a frame that breaks the framing)."""
        name = re.split(r"[./]", spec_ref, maxsplit=1)[0]
        if "?" in spec_ref or re.fullmatch(r"class \d+", name):
            return "unknown ids"
        return name if name in reach.classes else "frames"

    def rule_text(self, protocol: str, spec_ref: str) -> str | None:
        """None: the model keeps a 0-10 rule's name and place, not its text."""
        return None

    def describe(self, spec: Spec010) -> Description:
        """The counts."""
        return Description(
            {"protocol": spec.protocol, "sources": list(spec.sources), "counts": spec.inventory()}
        )


FAMILY = Amqp010Spec()
