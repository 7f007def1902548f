"""Protocol drivers: one package per protocol family, found by the family's name.

``driver_for("0-9-1")`` looks the protocol up in the specification's registry
(:mod:`amqpfuzz.spec.registry`), imports ``amqpfuzz.fuzzer.protocols.<family>`` and asks its
``driver(protocol)`` for a :class:`~.base.Driver`. A family with no package here cannot be
driven yet: that is one clear error, not a special case in the engine.
"""

from __future__ import annotations

import functools
import importlib

from amqpfuzz.spec import PROTOCOLS, family_of

from .base import (
    Announced,
    AuthenticationFailed,
    Broken,
    Connection,
    ConnectionFailed,
    Driver,
    Name,
    Outcome,
    Played,
    ProgramRun,
    ProgramStep,
    Unreachable,
    UnsupportedProtocol,
    describe,
    reaction_record,
)

__all__ = [
    "Announced",
    "AuthenticationFailed",
    "Broken",
    "Connection",
    "ConnectionFailed",
    "Driver",
    "Name",
    "Outcome",
    "Played",
    "ProgramRun",
    "ProgramStep",
    "Unreachable",
    "UnsupportedProtocol",
    "describe",
    "drivable",
    "driver_for",
    "reaction_record",
]


@functools.cache
def driver_for(protocol: str) -> Driver:
    """The driver of ``protocol`` (UnsupportedProtocol if amqpfuzz cannot drive it)."""
    if protocol not in PROTOCOLS:
        raise UnsupportedProtocol(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    family = family_of(protocol)
    try:
        package = importlib.import_module(f"{__name__}.{family}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{family}":
            raise
        raise UnsupportedProtocol(
            f"amqpfuzz cannot drive AMQP {protocol} yet: its family ({family}) has no driver"
        ) from None
    driver: Driver = package.driver(protocol)
    return driver


def drivable() -> tuple[str, ...]:
    """The protocols a driver exists for, in the registry's order."""
    found = []
    for protocol in PROTOCOLS:
        try:
            driver_for(protocol)
        except UnsupportedProtocol:
            continue
        found.append(protocol)
    return tuple(found)
