"""The AMQP specifications as data: vendored XML, a registry of protocols, a model per family.

>>> from amqpfuzz.spec import load
>>> load("0-9-1").method("basic.publish").key
(60, 40)

Each family has a package of its own: :mod:`.amqp091` (0-8, 0-9, 0-9-1: model, loader,
codec), :mod:`.amqp010` (0-10) and :mod:`.amqp10` (1.0), each exporting ``FAMILY`` (a
:class:`~.family.SpecFamily`); :mod:`.protocols` says which protocol belongs to which, and
:mod:`.registry` resolves a protocol to its family's object.
"""

from .errors import (
    AmqpfuzzError,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    SpecError,
)
from .family import Description, Reach, SpecFamily, Table
from .outcomes import OutcomeKind, Scope
from .registry import (
    DEFAULT_PROTOCOL,
    FAMILIES,
    OUTSIDE,
    PROTOCOLS,
    AnySpec,
    column_of,
    describe,
    family,
    family_of,
    load,
    load_file,
    protocols_of,
    reach,
    rule_text,
)

__all__ = [
    "DEFAULT_PROTOCOL",
    "FAMILIES",
    "OUTSIDE",
    "PROTOCOLS",
    "AmqpfuzzError",
    "AnySpec",
    "Description",
    "LocalProtocolError",
    "OutcomeKind",
    "ProtocolError",
    "Reach",
    "RemoteProtocolError",
    "Scope",
    "SpecError",
    "SpecFamily",
    "Table",
    "column_of",
    "describe",
    "family",
    "family_of",
    "load",
    "load_file",
    "protocols_of",
    "reach",
    "rule_text",
]
