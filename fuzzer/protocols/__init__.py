"""Protocol drivers: one package per protocol family, each exporting ``FAMILY`` (a
:class:`~.family.DriverFamily`), listed in :mod:`.families`.

This package's own namespace holds only the words every family and the engine share (light to
import: the record contract reads them); the drivers are reached through :mod:`.families`
(``driver_for``).
"""

from __future__ import annotations

from .driver import ChannelRules, Connection, Driver
from .family import (
    Broken,
    DriverFamily,
    Played,
    ProgramRun,
    Programs,
    ProgramStep,
    ScenarioPlayer,
    Serving,
)
from .outcome import (
    Announced,
    AuthenticationFailed,
    ConnectionFailed,
    Name,
    Outcome,
    Unreachable,
    UnsupportedProtocol,
)

__all__ = [
    "Announced",
    "AuthenticationFailed",
    "Broken",
    "ChannelRules",
    "Connection",
    "ConnectionFailed",
    "Driver",
    "DriverFamily",
    "Name",
    "Outcome",
    "Played",
    "ProgramRun",
    "ProgramStep",
    "Programs",
    "ScenarioPlayer",
    "Serving",
    "Unreachable",
    "UnsupportedProtocol",
]
