"""The sans-I/O wire codec of AMQP 1.0, derived from the loaded specification.

* :class:`Codec` (checked): values, composites, frames, messages and transfers;
  :func:`codec_for` gives one per protocol.
* :class:`FrameReader`: protocol headers and frames from a byte stream fed in any chunks.
* :mod:`.values`: the Python types of 1.0 values (:class:`Symbol`, :class:`UInt`,
  :class:`Composite`, :class:`Described`, :class:`Array`...).
* :mod:`.raw` (unchecked): bytes that break the rules on purpose, for the fuzzer.
"""

from . import raw
from .codec import Codec, codec_for
from .decode import MAX_DEPTH
from .errors import DecodeError, FramingError
from .frames import AMQP, MIN_MAX_FRAME_SIZE, SASL, TLS, Frame, FrameReader, Header
from .values import (
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = [
    "AMQP",
    "MAX_DEPTH",
    "MIN_MAX_FRAME_SIZE",
    "SASL",
    "TLS",
    "Array",
    "Byte",
    "Char",
    "Codec",
    "Composite",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "DecodeError",
    "Described",
    "Float",
    "Frame",
    "FrameReader",
    "FramingError",
    "Header",
    "Int",
    "Long",
    "Short",
    "Symbol",
    "Timestamp",
    "UByte",
    "UInt",
    "ULong",
    "UShort",
    "codec_for",
    "raw",
]
