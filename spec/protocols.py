"""Which protocol versions amqpfuzz knows, where their XML lives, and loading them (cached).

The 0-8 / 0-9 / 0-9-1 family shares one model (:mod:`.model`); 0-10 and 1.0 have their own
(:mod:`.amqp_0_10`, :mod:`.amqp_1_0`). :func:`load` gives the family model, :func:`load_any`
any of the three, and :func:`load_file` reads a user's own file, recognising its family from
the root element.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from .amqp_0_10 import Spec010, load_0_10
from .amqp_1_0 import Spec100, load_1_0
from .errors import SpecError
from .loader import load_family_file
from .model import Spec
from .xmlfile import line_of, local, parse

__all__ = [
    "DATA",
    "DEFAULT_PROTOCOL",
    "FAMILY",
    "PROTOCOLS",
    "AnySpec",
    "Protocol",
    "load",
    "load_any",
    "load_file",
]

DATA = Path(__file__).parent / "data"
DEFAULT_PROTOCOL = "0-9-1"

AnySpec: TypeAlias = Spec | Spec010 | Spec100


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    files: tuple[str, ...]
    description: str

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(DATA / f for f in self.files)


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol("0-9-1", ("amqp0-9-1.xml",), "AMQP 0-9-1, full XML with docs, rules, scenarios"),
        Protocol(
            "0-9-1-rabbit",
            ("amqp0-9-1-rabbit.xml",),
            "AMQP 0-9-1 with RabbitMQ's extensions (confirm, nack, exchange.bind)",
        ),
        Protocol("0-9", ("amqp0-9.xml",), "AMQP 0-9 (stripped XML)"),
        Protocol("0-8", ("amqp0-8.xml",), "AMQP 0-8 (stripped XML)"),
        Protocol("0-10", ("amqp0-10.xml",), "AMQP 0-10 (stripped XML)"),
        Protocol(
            "1.0",
            tuple(
                f"amqp1-0-{part}.xml"
                for part in ("types", "transport", "messaging", "security", "transactions")
            ),
            "AMQP 1.0: types, transport, messaging, security, transactions",
        ),
    )
}

# The protocols read by the 0-8/0-9/0-9-1 model and codec.
FAMILY = ("0-9-1", "0-9-1-rabbit", "0-9", "0-8")


def _known(protocol: str) -> Protocol:
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        known = ", ".join(PROTOCOLS)
        raise ValueError(f"unknown protocol {protocol!r}; known: {known}") from None


def load(protocol: str = DEFAULT_PROTOCOL) -> Spec:
    """The model of a 0-8/0-9/0-9-1 family protocol, loaded once per process."""
    if protocol not in FAMILY:
        _known(protocol)
        raise ValueError(f"protocol {protocol!r} is not of the 0-8/0-9/0-9-1 family")
    spec = load_any(protocol)
    assert isinstance(spec, Spec)
    return spec


def load_any(protocol: str = DEFAULT_PROTOCOL) -> AnySpec:
    """The model of any known protocol, loaded once per process."""
    return _load(protocol)


@functools.cache  # called with one positional argument only, so one entry per protocol
def _load(protocol: str) -> AnySpec:
    entry = _known(protocol)
    if protocol == "0-10":
        return load_0_10(entry.paths[0])
    if protocol == "1.0":
        return load_1_0(entry.paths)
    return load_family_file(entry.paths[0], protocol)


def load_file(path: Path | str) -> AnySpec:
    """Load a user's specification file, recognising its family from the root element."""
    name = str(path)
    root = parse(name)
    part = root.get("name")
    if part:  # 1.0 parts are <amqp name="types|transport|...">: read with the bundled others
        others = [p for p in PROTOCOLS["1.0"].paths if p.name != f"amqp1-0-{part}.xml"]
        return load_1_0([*others, name])
    if local(root) == "amqp" and (root.get("major"), root.get("minor")) == ("0", "10"):
        return load_0_10(name)
    if root.get("major") is None:
        raise SpecError(name, line_of(root), "<amqp> has neither 'major' nor 'name': which AMQP?")
    return load_family_file(name)
