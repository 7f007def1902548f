"""The protocols amqpfuzz knows, as data: name, family, the XML files, a description.

A *family* is a set of protocol versions that share one model and one wire format: ``amqp091``
(0-8, 0-9, 0-9-1 and RabbitMQ's extensions of it), ``amqp010`` (0-10) and ``amqp10`` (1.0).
This table imports nothing of the families: they read their files' paths here, and the
registry (:mod:`.registry`) resolves a protocol to its family's objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DATA",
    "DEFAULT_PROTOCOL",
    "PROTOCOLS",
    "Protocol",
    "extension_of",
    "family_of",
    "known",
    "paths_of",
    "protocols_of",
]

DATA = Path(__file__).parent / "data"
DEFAULT_PROTOCOL = "0-9-1"


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    family: str
    files: tuple[str, ...]
    description: str
    # a version of the same wire format that adds to this one (RabbitMQ's 0-9-1: confirm,
    # basic.nack, exchange.bind): a peer may answer in it, and a broker that speaks it is sent
    # its methods by valid traffic where its profile says so
    extension: str | None = None

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(DATA / f for f in self.files)


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "0-9-1",
            "amqp091",
            ("amqp0-9-1.xml",),
            "AMQP 0-9-1, full XML with docs, rules, scenarios",
            extension="0-9-1-rabbit",
        ),
        Protocol(
            "0-9-1-rabbit",
            "amqp091",
            ("amqp0-9-1-rabbit.xml",),
            "AMQP 0-9-1 with RabbitMQ's extensions (confirm, nack, exchange.bind)",
        ),
        Protocol("0-9", "amqp091", ("amqp0-9.xml",), "AMQP 0-9 (stripped XML)"),
        Protocol("0-8", "amqp091", ("amqp0-8.xml",), "AMQP 0-8 (stripped XML)"),
        Protocol("0-10", "amqp010", ("amqp0-10.xml",), "AMQP 0-10 (stripped XML)"),
        Protocol(
            "1.0",
            "amqp10",
            tuple(
                f"amqp1-0-{part}.xml"
                for part in ("types", "transport", "messaging", "security", "transactions")
            ),
            "AMQP 1.0: types, transport, messaging, security, transactions",
        ),
    )
}


def known(protocol: str) -> Protocol:
    """The table's entry (ValueError naming the known ones if there is none)."""
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        names = ", ".join(PROTOCOLS)
        raise ValueError(f"unknown protocol {protocol!r}; known: {names}") from None


def extension_of(protocol: str) -> str:
    """The protocol whose model reads what a peer of ``protocol`` may send: its extension's
    (a superset), else its own."""
    return known(protocol).extension or protocol


def family_of(protocol: str) -> str:
    """The family a protocol belongs to (``amqp091`` for ``0-9``)."""
    return known(protocol).family


def protocols_of(family: str) -> tuple[str, ...]:
    """The protocols of a family, in this table's order."""
    return tuple(p.name for p in PROTOCOLS.values() if p.family == family)


def paths_of(protocol: str, family: str) -> tuple[Path, ...]:
    """The files of ``protocol``, which must be of ``family`` (ValueError if not)."""
    entry = known(protocol)
    if entry.family != family:
        raise ValueError(f"protocol {protocol!r} is not of the {family} family")
    return entry.paths
