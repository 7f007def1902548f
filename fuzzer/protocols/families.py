"""Every protocol family's driving layer, listed in one place, and a protocol resolved to it.

``driver_for("0-9-1")`` looks the protocol's family up in the specification's registry and asks
its :class:`~.family.DriverFamily` for the driver. A family with no entry here cannot be driven
yet: that is one clear error (:class:`~.outcome.UnsupportedProtocol`), not a special case in
the engine.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from amqpfuzz.spec import PROTOCOLS, family_of

from . import amqp010, amqp091, amqp10
from .driver import Driver
from .family import DriverFamily, Programs, ScenarioPlayer
from .outcome import UnsupportedProtocol

__all__ = ["FAMILIES", "drivable", "driver_for", "family_for", "player_for", "programs_for"]

FAMILIES: Mapping[str, DriverFamily] = {
    f.name: f for f in (amqp091.FAMILY, amqp10.FAMILY, amqp010.FAMILY)
}


def family_for(protocol: str) -> DriverFamily:
    """The driving layer of ``protocol``'s family (UnsupportedProtocol if it has none)."""
    if protocol not in PROTOCOLS:
        raise UnsupportedProtocol(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    family = family_of(protocol)
    found = FAMILIES.get(family)
    if found is None:
        raise UnsupportedProtocol(
            f"amqpfuzz cannot drive AMQP {protocol} yet: its family ({family}) has no driver"
        )
    return found


@functools.cache
def driver_for(protocol: str) -> Driver:
    """The driver of ``protocol`` (UnsupportedProtocol if amqpfuzz cannot drive it)."""
    return family_for(protocol).driver(protocol)


def player_for(protocol: str) -> ScenarioPlayer:
    """The scenario player of ``protocol``'s family (UnsupportedProtocol if it has none)."""
    found = family_for(protocol).player
    if found is None:
        raise UnsupportedProtocol(f"no scenario player for AMQP {protocol}")
    return found


def programs_for(protocol: str) -> Programs:
    """The stateful programs of ``protocol``'s family (UnsupportedProtocol if it has none)."""
    found = family_for(protocol).programs
    if found is None:
        raise UnsupportedProtocol(f"no stateful programs for AMQP {protocol}")
    return found


def drivable() -> tuple[str, ...]:
    """The protocols a driver exists for, in the registry's order."""
    return tuple(p for p in PROTOCOLS if family_of(p) in FAMILIES)
