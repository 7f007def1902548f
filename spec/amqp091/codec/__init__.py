"""The sans-I/O wire codec of AMQP 0-8 / 0-9 / 0-9-1, derived from the loaded specification.

* :class:`Codec` (checked): frames to bytes and bytes to frames, for one specification and one
  field-table dialect; :func:`codec_for` gives a cached one per protocol.
* :class:`FrameReader`: frames from a byte stream fed in chunks of any size.
* :mod:`.raw` (unchecked): bytes that break the rules on purpose, for the fuzzer.
* :mod:`.tables`: field tables and arrays in both dialects.
"""

from . import raw
from .codec import Codec, FrameReader, codec_for
from .frames import ContentBody, ContentHeader, Frame, Heartbeat, MethodFrame, ProtocolHeader
from .tables import DIALECTS, FieldValue, decode_table, encode_table, plain

__all__ = [
    "DIALECTS",
    "Codec",
    "ContentBody",
    "ContentHeader",
    "FieldValue",
    "Frame",
    "FrameReader",
    "Heartbeat",
    "MethodFrame",
    "ProtocolHeader",
    "codec_for",
    "decode_table",
    "encode_table",
    "plain",
    "raw",
]
