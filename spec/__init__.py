"""The AMQP specifications as data: vendored XML, an lxml loader, an immutable model, the codec.

>>> from amqpfuzz.spec import load
>>> spec = load("0-9-1")
>>> spec.method("basic.publish").key
(60, 40)
"""

from .errors import (
    AmqpfuzzError,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    SpecError,
)
from .model import AmqpClass, Assert, Constant, Domain, Field, Method, Rule, Spec
from .protocols import (
    DEFAULT_PROTOCOL,
    FAMILY,
    PROTOCOLS,
    AnySpec,
    load,
    load_any,
    load_file,
)

__all__ = [
    "DEFAULT_PROTOCOL",
    "FAMILY",
    "PROTOCOLS",
    "AmqpClass",
    "AmqpfuzzError",
    "AnySpec",
    "Assert",
    "Constant",
    "Domain",
    "Field",
    "LocalProtocolError",
    "Method",
    "ProtocolError",
    "RemoteProtocolError",
    "Rule",
    "Spec",
    "SpecError",
    "load",
    "load_any",
    "load_file",
]
