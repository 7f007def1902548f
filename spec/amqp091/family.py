"""The 0-8/0-9/0-9-1 family's object for the specification layer (:data:`FAMILY`)."""

from __future__ import annotations

import re

from lxml import etree

from ..family import Description, Reach
from .loader import load, load_family_file
from .model import Spec

__all__ = ["FAMILY", "Amqp091Spec"]


class Amqp091Spec:
    """The model of 0-8, 0-9 and 0-9-1 (one file each), what a client reaches in it, and how
    the reports place its spec_refs."""

    name = "amqp091"
    title = "AMQP 0-8, 0-9 and 0-9-1"
    model = Spec

    def read(self, protocol: str) -> Spec:
        return load(protocol)

    def claims(self, root: etree._Element) -> bool:
        """A root element with a major version (and not 0-10's): one of this family's files."""
        return root.get("major") is not None

    def read_file(self, path: str) -> Spec:
        return load_family_file(path)

    def reach(self, protocol: str) -> Reach:
        """The classes; the methods a client may send; the rules of the domains, the classes
        (and their properties), and of the methods a client may send and their fields (a rule
        of a method only a server sends binds the client, which amqpfuzz is)."""
        spec = load(protocol)
        rules = [r.ref for d in spec.domains for r in d.rules]
        for amqp_class in spec.classes:
            rules += [r.ref for r in amqp_class.rules]
            rules += [r.ref for p in amqp_class.properties for r in p.rules]
            for method in amqp_class.methods:
                if method.sent_by("client"):
                    rules += [r.ref for r in method.rules]
                    rules += [r.ref for f in method.fields for r in f.rules]
        methods = tuple(m.full_name for m in spec.methods if m.sent_by("client"))
        return Reach(tuple(c.name for c in spec.classes), methods, tuple(rules))

    def column(self, protocol: str, spec_ref: str, reach: Reach) -> str:
        """A class's name; ``domains`` for a domain's rule; ``unknown ids`` for an unknown
        class (``class 10028``) or method (``queue.?``); ``frames`` for the rest (heartbeat,
        content and protocol header cases)."""
        if spec_ref.startswith("domain:"):
            return "domains"
        name = re.split(r"[./]", spec_ref, maxsplit=1)[0]
        if "?" in spec_ref or re.fullmatch(r"class \d+", name):
            return "unknown ids"
        return name if name in reach.classes else "frames"

    def rule_text(self, protocol: str, spec_ref: str) -> str | None:
        """The rule's ``<doc>``, white space made single spaces."""
        try:
            doc = load(protocol).rule(spec_ref).doc
        except KeyError:
            return None
        return " ".join(doc.split()) or None

    def describe(self, spec: Spec) -> Description:
        """The counts, the protocol header's version octets, and the classes with their
        methods."""
        return Description(
            {
                "protocol": spec.protocol,
                "sources": [spec.source],
                "counts": spec.inventory(),
                "protocol_header": list(spec.protocol_header[4:]),
                "classes": [
                    {"name": c.name, "index": c.index, "methods": [m.name for m in c.methods]}
                    for c in spec.classes
                ],
            }
        )


FAMILY = Amqp091Spec()
