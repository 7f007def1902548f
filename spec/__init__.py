"""The AMQP specifications as data: vendored XML, a registry of protocols, a model per family.

>>> from amqpfuzz.spec import load
>>> load("0-9-1").method("basic.publish").key
(60, 40)

Each family has a package of its own: :mod:`.amqp091` (0-8, 0-9, 0-9-1: model, loader,
codec), :mod:`.amqp010` (0-10) and :mod:`.amqp10` (1.0); :mod:`.registry` says which protocol
belongs to which.
"""

from .errors import (
    AmqpfuzzError,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    SpecError,
)
from .registry import (
    DEFAULT_PROTOCOL,
    FAMILIES,
    PROTOCOLS,
    AnySpec,
    family_of,
    load,
    load_file,
    protocols_of,
    spec_totals,
)

__all__ = [
    "DEFAULT_PROTOCOL",
    "FAMILIES",
    "PROTOCOLS",
    "AmqpfuzzError",
    "AnySpec",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "SpecError",
    "family_of",
    "load",
    "load_file",
    "protocols_of",
    "spec_totals",
]
