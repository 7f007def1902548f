"""Differential tests: our 0-9-1 codec against pamqp and pika, byte for byte and value for value.

For every method of the 0-9-1 specification (taken from the loaded model, never listed by
hand), Hypothesis draws argument values from the fields' wire types; the same frame is built
with our codec, with pamqp and with pika, and

* our bytes must equal the library's bytes;
* our decoder must read the library's bytes back to our frame's values;
* the library's decoder must read our bytes back to the same values;
* our typed decoder must re-encode the library's bytes to exactly those bytes.

The same is done for content headers (any subset of the 14 basic properties), body frames,
heartbeats and the protocol header. Values are drawn only from what each library accepts; every
place where a library refuses a value (or a whole method) is listed below with the reason, and
``test_library_refusals_are_real`` proves each such refusal against the library itself, so a
restriction cannot hide a bug of ours.

Field names are mapped by rule (our ``routing_key`` is their ``routing_key``) with a small table
of exceptions (``_RENAMES``); ``test_field_name_mapping`` checks the mapping against both
libraries' own attribute lists. Reserved fields keep their zero value and are left out of the
keyword arguments given to the libraries.
"""

from __future__ import annotations

import datetime as dt
import inspect
import string
from decimal import Decimal
from typing import Any

import pamqp.body
import pamqp.commands
import pamqp.constants
import pamqp.exceptions
import pamqp.frame
import pamqp.header
import pamqp.heartbeat
import pika.exceptions
import pika.frame
import pika.spec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec import (
    Codec,
    ContentBody,
    ContentHeader,
    FieldValue,
    Heartbeat,
    MethodFrame,
    ProtocolHeader,
    codec_for,
)
from amqpfuzz.spec.amqp091.model import ZERO_VALUES, Field, Method
from amqpfuzz.spec.errors import LocalProtocolError

# pamqp warns when basic.recover-async is built; that is the point of building it here.
pytestmark = pytest.mark.filterwarnings("ignore:This command is deprecated:DeprecationWarning")

SPEC = load("0-9-1")
CODEC = codec_for("0-9-1")
TYPED = codec_for("0-9-1", "rabbit", True)
METHOD_NAMES = [m.full_name for m in SPEC.methods]
BASIC = SPEC.amqp_class("basic")
PROPERTIES = {p.attr: p for p in BASIC.properties}

# 52 methods x 2 libraries at this many examples each stay around ten seconds on two cores.
# One failure per test is shrunk and reported (a broken codec fails many tests at once).
_COMMON_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
    "report_multiple_bugs": False,
}
METHOD_SETTINGS = settings(max_examples=25, **_COMMON_SETTINGS)
FRAME_SETTINGS = settings(max_examples=150, **_COMMON_SETTINGS)

WIDTH = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}

# -- field names ------------------------------------------------------------------------------
#
# Rule: our field's ``attr`` (``routing-key`` -> ``routing_key``) is the library's argument
# name. Exceptions, found by ``test_field_name_mapping``:
#
# =======================  ================  ================  ================
# method / property        ours              pamqp             pika
# =======================  ================  ================  ================
# every method             no_wait           nowait            nowait
# exchange.declare         type              exchange_type     type
# basic.qos                global            global_           global_qos
# basic properties         type              message_type      type
# basic properties         reserved          cluster_id        cluster_id
# =======================  ================  ================  ================
#
# Our reserved fields (``reserved_1``...) are left out of the keyword arguments; the libraries
# call them ticket, capabilities, insist, known_hosts, out_of_band, channel_id, auto_delete,
# internal and cluster_id, and these are matched by position when comparing decoded values.

_RENAMES: dict[str, dict[tuple[str, str], str]] = {
    "pamqp": {
        ("*", "no_wait"): "nowait",
        ("exchange.declare", "type"): "exchange_type",
        ("basic.qos", "global"): "global_",
        ("properties", "type"): "message_type",
        ("properties", "reserved"): "cluster_id",
    },
    "pika": {
        ("*", "no_wait"): "nowait",
        ("basic.qos", "global"): "global_qos",
        ("properties", "reserved"): "cluster_id",
    },
}


def lib_name(lib: str, where: str, attr: str) -> str:
    """The library's name for our field ``attr`` of method ``where`` (or ``"properties"``)."""
    renames = _RENAMES[lib]
    return renames.get((where, attr), renames.get(("*", attr), attr))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def pamqp_class(method: Method) -> type:
    return getattr(getattr(pamqp.commands, _camel(method.class_name)), _camel(method.name))  # type: ignore[no-any-return]


def pika_class(method: Method) -> type:
    return getattr(getattr(pika.spec, _camel(method.class_name)), _camel(method.name))  # type: ignore[no-any-return]


def lib_attributes(lib: str, method: Method) -> list[str]:
    """The library's argument names for ``method``, in wire order."""
    if lib == "pamqp":
        return list(pamqp_class(method).__slots__)
    params = inspect.signature(pika_class(method).__init__).parameters
    return [p for p in params if p != "self"]


def field_names(lib: str, method: Method) -> list[str]:
    """The library's name of each of our fields: mapped by rule, reserved ones by position."""
    theirs = lib_attributes(lib, method)
    return [
        theirs[i] if fld.reserved else lib_name(lib, method.full_name, fld.attr)
        for i, fld in enumerate(method.fields)
    ]


# -- what the libraries refuse ---------------------------------------------------------------
#
# Methods a library cannot build with our (zero-valued) reserved fields. Their decoders are
# still checked against our bytes; only the library's encoding is left out.
PAMQP_CANNOT_BUILD = {
    # pamqp's validate() insists on the string "0" in the reserved out-of-band field; the
    # 0-9-1 zero value is the empty short string. (Our bytes with "0" are compared instead.)
    "channel.open": ("out_of_band", "0"),
    # Same for the reserved long string of channel.open-ok (pamqp's channel_id).
    "channel.open-ok": ("channel_id", "0"),
}
PIKA_CANNOT_BUILD: dict[str, tuple[str, str]] = {}  # pika builds every 0-9-1 method

# pamqp validates these arguments by name (length in characters, and a pattern).
PAMQP_VALIDATED = {
    "exchange": (127, pamqp.constants.DOMAIN_REGEX["exchange-name"]),
    "queue": (256, pamqp.constants.DOMAIN_REGEX["queue-name"]),
    "virtual_host": (127, None),
}
# pamqp encodes a longlong as *signed* 64-bit and refuses 2**63 and above.
PAMQP_LONGLONG_MAX = 2**63 - 1
# pamqp decodes a timestamp above 0xFFFFFFFF as milliseconds (its "year 2106" heuristic).
PAMQP_TIMESTAMP_MAX = 0xFFFFFFFF
# pamqp truncates field-table keys longer than 128 bytes.
PAMQP_KEY_BYTES = 128


def _pamqp_alphabet(pattern: Any) -> str:
    return "".join(c for c in map(chr, range(32, 127)) if pattern.fullmatch(c))


# -- strategies, keyed by wire type ------------------------------------------------------------


def _fit(text: str, limit: int = 255) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, on a character boundary."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def shortstr(max_chars: int = 255, min_size: int = 0) -> st.SearchStrategy[str]:
    """Text whose UTF-8 is at most 255 bytes (exercising the limit as well as short ones)."""
    return st.one_of(
        st.text(min_size=min_size, max_size=min(max_chars, 40)),
        st.text(min_size=min_size, max_size=max_chars).map(_fit),
        st.text(string.printable, min_size=max(min_size, max_chars - 55), max_size=max_chars),
    ).filter(lambda s: len(s) >= min_size)


def _pamqp_int_code(value: int) -> str:
    """The type code pamqp gives an int in a table: the smallest type that holds it."""
    if -128 <= value <= 127:
        return "b"
    if -(2**15) <= value < 2**15:
        return "s"
    if 0 <= value < 2**16:
        return "u"
    if -(2**31) <= value < 2**31:
        return "I"
    if 0 <= value < 2**32:
        return "i"
    return "l"


# The edges of pamqp's integer types (b/s/u/I/i/l), which a plain draw over 64 bits rarely hits.
_INT_EDGES = sorted(
    {
        edge + d
        for edge in (-(2**7), 2**7, -(2**15), 2**15, 2**16, -(2**31), 2**31, 2**32, 2**63)
        for d in (-1, 0, 1)
        if -(2**63) <= edge + d < 2**63
    }
)
table_ints = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**33), 2**33),
    st.sampled_from(_INT_EDGES),
)


def table_values(lib: str) -> st.SearchStrategy[Any]:
    """Table entries that both encoders give the same type code, once ints are mapped.

    Ints: pika (like us) sends 'I' or 'l'; pamqp picks the smallest of b/s/u/I/i/l, which our
    side matches with FieldValue (:func:`wrap_ints`). Timestamps stay within 32 bits (pamqp
    reads larger ones as milliseconds). For pamqp only: floats that a float32 holds exactly
    (pamqp sends every float as 'f', matched with FieldValue) and decimals; pika gets neither,
    because it cannot encode floats (and decodes 'f'/'d' as ints) and it normalises decimals
    (1.50 goes out as 1.5).
    """
    key_bytes = PAMQP_KEY_BYTES if lib == "pamqp" else 255
    keys = st.text(max_size=key_bytes).map(lambda k: _fit(k, key_bytes))
    plain = [
        st.none(),
        st.booleans(),
        table_ints,
        st.text(max_size=30),
        st.binary(max_size=30),  # 'x' byte arrays (pamqp takes them as bytearray)
        st.integers(0, PAMQP_TIMESTAMP_MAX).map(lambda s: dt.datetime.fromtimestamp(s, dt.UTC)),
    ]
    if lib == "pamqp":
        plain.append(st.floats(width=32, allow_nan=False))
        plain.append(
            st.builds(
                lambda raw, scale: Decimal(raw).scaleb(-scale),
                st.integers(-(2**31), 2**31 - 1),
                st.integers(0, 255),
            )
        )
    leaves = st.one_of(plain)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(keys, inner, max_size=3).map(lambda d: dict(sorted(d.items()))),
        ),
        max_leaves=8,
    )


def tables(lib: str) -> st.SearchStrategy[dict[str, Any]]:
    """Field tables with sorted keys (pamqp sorts keys, pika keeps insertion order)."""
    key_bytes = PAMQP_KEY_BYTES if lib == "pamqp" else 255
    keys = st.text(max_size=key_bytes).map(lambda k: _fit(k, key_bytes))
    return st.dictionaries(keys, table_values(lib), max_size=4).map(
        lambda d: dict(sorted(d.items()))
    )


def value_strategy(lib: str, wire: str, their_name: str = "") -> st.SearchStrategy[Any]:
    """Our value of one argument of wire type ``wire``, within what ``lib`` accepts."""
    if wire == "bit":
        return st.booleans()
    if wire in WIDTH:
        top = 2 ** WIDTH[wire] - 1
        if lib == "pamqp" and wire == "longlong":
            top = PAMQP_LONGLONG_MAX
        if lib == "pamqp" and wire == "timestamp":
            top = PAMQP_TIMESTAMP_MAX
        return st.integers(0, top)
    if wire == "shortstr":
        if lib == "pamqp" and their_name in PAMQP_VALIDATED:
            limit, pattern = PAMQP_VALIDATED[their_name]
            if pattern is not None:
                return st.text(_pamqp_alphabet(pattern), max_size=limit)
            return shortstr(max_chars=limit)
        return shortstr()
    if wire == "longstr":
        text = st.text(max_size=300).map(lambda s: s.encode("utf-8"))
        # pamqp only takes str for long strings; pika and we take any bytes.
        return text if lib == "pamqp" else st.one_of(text, st.binary(max_size=300))
    if wire == "table":
        return tables(lib)
    raise AssertionError(wire)


def arguments(lib: str, method: Method) -> st.SearchStrategy[dict[str, Any]]:
    """Our non-reserved arguments of ``method`` by attr; reserved fields stay at zero."""
    names = field_names(lib, method)
    return st.fixed_dictionaries(
        {
            fld.attr: value_strategy(lib, fld.type, name)
            for fld, name in zip(method.fields, names, strict=True)
            if not fld.reserved
        }
    )


channels = st.integers(0, 0xFFFF)


# -- conversions between our values and the libraries' ---------------------------------------


def wrap_ints(value: Any) -> Any:
    """Our table with every int typed as pamqp types it, so that our bytes match pamqp's."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return FieldValue(_pamqp_int_code(value), value)
    if isinstance(value, float):
        return FieldValue("f", value)  # pamqp sends floats as float32
    if isinstance(value, dict):
        return {k: wrap_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wrap_ints(v) for v in value]
    return value


def pamqp_table(value: Any) -> Any:
    """Our plain table as pamqp wants it: byte arrays as bytearray."""
    if isinstance(value, bytes):
        return bytearray(value)
    if isinstance(value, dict):
        return {k: pamqp_table(v) for k, v in value.items()}
    if isinstance(value, list):
        return [pamqp_table(v) for v in value]
    return value


def ours_value(lib: str, wire: str, value: Any) -> Any:
    if wire == "table" and lib == "pamqp":
        return wrap_ints(value)
    return value


def lib_value(lib: str, wire: str, value: Any) -> Any:
    if lib == "pamqp":
        if wire == "longstr":
            return value.decode("utf-8")
        if wire == "table":
            return pamqp_table(value)
        if wire == "timestamp":
            return dt.datetime.fromtimestamp(value, dt.UTC)
    return value


# -- normalised comparison --------------------------------------------------------------------


def strict(value: Any) -> Any:
    """A comparable form that tells True from 1, str from bytes, and keeps table order."""
    if isinstance(value, FieldValue):
        return strict(value.value)
    if value is None:
        return ("void",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, Decimal):
        return ("decimal", value.as_tuple())  # digits and exponent: 1.50 is not 1.5
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes | bytearray | memoryview):
        return ("bytes", bytes(value))
    if isinstance(value, dt.datetime):
        assert value.tzinfo is not None, f"naive datetime {value!r}"
        return ("datetime", value)
    if isinstance(value, dict):
        return ("table", tuple((k, strict(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", tuple(strict(v) for v in value))
    raise AssertionError(f"unexpected {type(value).__name__}: {value!r}")


def norm(wire: str, value: Any) -> Any:
    """A field's value in one form whoever decoded it (their str long strings, our bytes...)."""
    if wire == "longstr" and isinstance(value, str):
        value = value.encode("utf-8")
    elif wire == "timestamp" and isinstance(value, dt.datetime):
        value = int(value.timestamp())
    elif wire == "table" and value is None:
        value = {}
    return strict(value)


def frame_values(frame: MethodFrame) -> list[Any]:
    return [norm(f.type, v) for f, v in zip(frame.method.fields, frame.values, strict=True)]


# -- field names against the libraries --------------------------------------------------------


@pytest.mark.parametrize("lib", ["pamqp", "pika"])
def test_field_name_mapping(lib: str) -> None:
    """Every mapped name is the library's, in wire order, and only reserved fields are left."""
    for method in SPEC.methods:
        theirs = lib_attributes(lib, method)
        assert len(theirs) == len(method.fields), method.full_name
        for i, fld in enumerate(method.fields):
            if not fld.reserved:
                assert lib_name(lib, method.full_name, fld.attr) == theirs[i], (
                    f"{lib}: {method.full_name} field {fld.attr} is {theirs[i]!r} there"
                )
    if lib == "pamqp":
        theirs = list(pamqp.commands.Basic.Properties.__slots__)
    else:
        params = inspect.signature(pika.spec.BasicProperties.__init__).parameters
        theirs = [p for p in params if p != "self"]
    assert [lib_name(lib, "properties", p.attr) for p in BASIC.properties] == theirs


# -- method frames ----------------------------------------------------------------------------


def _build_pamqp(method: Method, channel: int, args: dict[str, Any]) -> bytes:
    kwargs = {
        lib_name("pamqp", method.full_name, attr): lib_value(
            "pamqp", method_field(method, attr).type, v
        )
        for attr, v in args.items()
    }
    return pamqp.frame.marshal(pamqp_class(method)(**kwargs), channel)


def _build_pika(method: Method, channel: int, args: dict[str, Any]) -> bytes:
    kwargs = {lib_name("pika", method.full_name, attr): v for attr, v in args.items()}
    return pika.frame.Method(channel, pika_class(method)(**kwargs)).marshal()  # type: ignore[no-any-return]


def method_field(method: Method, attr: str) -> Field:
    for fld in method.fields:
        if fld.attr == attr:
            return fld
    raise KeyError(attr)


def _expected(method: Method, args: dict[str, Any]) -> list[Any]:
    return [norm(f.type, args.get(f.attr, ZERO_VALUES[f.type])) for f in method.fields]


def _check_our_decoding(method: Method, channel: int, data: bytes, args: dict[str, Any]) -> None:
    """Our plain and typed decoders read the library's bytes; typed re-encoding is exact."""
    decoded = CODEC.decode(data)
    assert isinstance(decoded, MethodFrame)
    assert decoded.method is method
    assert decoded.channel == channel
    assert frame_values(decoded) == _expected(method, args)
    assert TYPED.encode(TYPED.decode(data)) == data


@pytest.mark.parametrize("name", METHOD_NAMES)
@METHOD_SETTINGS
@given(data=st.data())
def test_method_against_pamqp(name: str, data: st.DataObject) -> None:
    method = SPEC.method(name)
    channel = data.draw(channels, label="channel")
    args = data.draw(arguments("pamqp", method), label="arguments")
    ours = CODEC.method(
        method,
        channel,
        **{a: ours_value("pamqp", method_field(method, a).type, v) for a, v in args.items()},
    )
    ours_bytes = CODEC.encode(ours)

    # pamqp reads our bytes.
    consumed, their_channel, obj = pamqp.frame.unmarshal(ours_bytes)
    assert (consumed, their_channel, type(obj)) == (len(ours_bytes), channel, pamqp_class(method))
    got = [
        norm(f.type, getattr(obj, n))
        for f, n in zip(method.fields, field_names("pamqp", method), strict=True)
    ]
    assert got == _expected(method, args)

    if name in PAMQP_CANNOT_BUILD:
        # pamqp refuses our zero reserved value (see PAMQP_CANNOT_BUILD); compare instead the
        # frame with the reserved value pamqp insists on.
        _, forced = PAMQP_CANNOT_BUILD[name]
        reserved = next(f for f in method.fields if f.reserved)
        ours_bytes = CODEC.encode(
            CODEC.method(method, channel, **{**args, reserved.attr: ours_forced(reserved, forced)})
        )
        theirs = pamqp.frame.marshal(pamqp_class(method)(), channel)
        assert ours_bytes == theirs
        return

    theirs = _build_pamqp(method, channel, args)
    assert ours_bytes == theirs
    _check_our_decoding(method, channel, theirs, args)


def ours_forced(fld: Field, value: str) -> Any:
    return value.encode("utf-8") if fld.type == "longstr" else value


@pytest.mark.parametrize("name", METHOD_NAMES)
@METHOD_SETTINGS
@given(data=st.data())
def test_method_against_pika(name: str, data: st.DataObject) -> None:
    method = SPEC.method(name)
    assert name not in PIKA_CANNOT_BUILD
    channel = data.draw(channels, label="channel")
    args = data.draw(arguments("pika", method), label="arguments")
    ours_bytes = CODEC.encode(CODEC.method(method, channel, **args))

    theirs = _build_pika(method, channel, args)
    assert ours_bytes == theirs
    _check_our_decoding(method, channel, theirs, args)

    # pika reads our bytes.
    consumed, frame = pika.frame.decode_frame(ours_bytes)
    assert consumed == len(ours_bytes)
    assert isinstance(frame, pika.frame.Method)
    assert frame.channel_number == channel
    assert type(frame.method) is pika_class(method)
    got = [
        norm(f.type, getattr(frame.method, n))
        for f, n in zip(method.fields, field_names("pika", method), strict=True)
    ]
    assert got == _expected(method, args)


# -- content headers --------------------------------------------------------------------------


def property_strategies(lib: str) -> dict[str, st.SearchStrategy[Any]]:
    """Our value of each basic property, within what ``lib`` accepts."""
    out = {}
    for attr, prop in PROPERTIES.items():
        if lib == "pamqp":
            if prop.reserved or attr == "reserved":
                continue  # pamqp refuses any cluster_id but '' (and '' means absent to it)
            if attr == "delivery_mode":
                out[attr] = st.sampled_from([1, 2])  # pamqp refuses any other delivery mode
                continue
            if prop.type == "shortstr":
                out[attr] = shortstr(min_size=1)  # pamqp leaves out a '' property as absent
                continue
        out[attr] = value_strategy(lib, prop.type)
    return out


def header_values(props: dict[str, Any]) -> dict[str, Any]:
    return {k: norm(PROPERTIES[k].type, v) for k, v in props.items()}


def _check_our_header_decoding(data: bytes, channel: int, size: int, props: dict[str, Any]) -> None:
    decoded = CODEC.decode(data)
    assert isinstance(decoded, ContentHeader)
    assert (decoded.channel, decoded.class_id, decoded.body_size, decoded.weight) == (
        channel,
        BASIC.index,
        size,
        0,
    )
    assert header_values(decoded.properties) == header_values(props)
    assert list(decoded.properties) == [p for p in PROPERTIES if p in props]  # wire order
    assert TYPED.encode(TYPED.decode(data)) == data


def _their_properties(lib: str, obj: Any) -> dict[str, Any]:
    """The present properties of a library's decoded properties object, by our names."""
    out = {}
    for attr, prop in PROPERTIES.items():
        value = getattr(obj, lib_name(lib, "properties", attr))
        if value is None or (lib == "pamqp" and attr == "reserved" and value == ""):
            continue  # absent (pamqp's cluster_id defaults to '')
        out[attr] = norm(prop.type, value)
    return out


@FRAME_SETTINGS
@given(
    channel=channels,
    size=value_strategy("pamqp", "longlong"),
    props=st.fixed_dictionaries({}, optional=property_strategies("pamqp")),
)
def test_content_header_against_pamqp(channel: int, size: int, props: dict[str, Any]) -> None:
    ours = ContentHeader(
        channel,
        BASIC.index,
        size,
        {k: ours_value("pamqp", PROPERTIES[k].type, v) for k, v in props.items()},
    )
    ours_bytes = CODEC.encode(ours)
    kwargs = {
        lib_name("pamqp", "properties", k): lib_value("pamqp", PROPERTIES[k].type, v)
        for k, v in props.items()
    }
    header = pamqp.header.ContentHeader(0, size, pamqp.commands.Basic.Properties(**kwargs))
    theirs = pamqp.frame.marshal(header, channel)
    assert ours_bytes == theirs
    _check_our_header_decoding(theirs, channel, size, props)

    consumed, their_channel, obj = pamqp.frame.unmarshal(ours_bytes)
    assert (consumed, their_channel) == (len(ours_bytes), channel)
    assert isinstance(obj, pamqp.header.ContentHeader)
    assert (obj.class_id, obj.weight, obj.body_size) == (BASIC.index, 0, size)
    assert _their_properties("pamqp", obj.properties) == header_values(props)


@FRAME_SETTINGS
@given(
    channel=channels,
    size=value_strategy("pika", "longlong"),
    props=st.fixed_dictionaries({}, optional=property_strategies("pika")),
)
def test_content_header_against_pika(channel: int, size: int, props: dict[str, Any]) -> None:
    ours_bytes = CODEC.encode(ContentHeader(channel, BASIC.index, size, props))
    kwargs = {lib_name("pika", "properties", k): v for k, v in props.items()}
    theirs = pika.frame.Header(channel, size, pika.spec.BasicProperties(**kwargs)).marshal()
    assert ours_bytes == theirs
    _check_our_header_decoding(theirs, channel, size, props)

    consumed, frame = pika.frame.decode_frame(ours_bytes)
    assert consumed == len(ours_bytes)
    assert isinstance(frame, pika.frame.Header)
    assert (frame.channel_number, frame.body_size) == (channel, size)
    assert _their_properties("pika", frame.properties) == header_values(props)


# -- body frames, heartbeats, protocol header -------------------------------------------------


@FRAME_SETTINGS
@given(channel=channels, payload=st.binary(max_size=2048))
def test_body_frame_against_pamqp_and_pika(channel: int, payload: bytes) -> None:
    ours_bytes = CODEC.encode(ContentBody(channel, payload))
    assert ours_bytes == pamqp.frame.marshal(pamqp.body.ContentBody(payload), channel)
    assert ours_bytes == pika.frame.Body(channel, payload).marshal()
    assert CODEC.decode(ours_bytes) == ContentBody(channel, payload)

    consumed, frame = pika.frame.decode_frame(ours_bytes)
    assert consumed == len(ours_bytes)
    assert isinstance(frame, pika.frame.Body)
    assert (frame.channel_number, frame.fragment) == (channel, payload)
    if payload:  # pamqp.frame.unmarshal refuses a frame with an empty payload ("No frame size")
        consumed, their_channel, obj = pamqp.frame.unmarshal(ours_bytes)
        assert (consumed, their_channel) == (len(ours_bytes), channel)
        assert isinstance(obj, pamqp.body.ContentBody)
        assert obj.value == payload


def test_heartbeat_and_protocol_header() -> None:
    ours = CODEC.encode(Heartbeat())
    assert ours == pamqp.frame.marshal(pamqp.heartbeat.Heartbeat(), 0)
    assert ours == pika.frame.Heartbeat().marshal()
    assert CODEC.decode(pika.frame.Heartbeat().marshal()) == Heartbeat(0)
    consumed, channel, obj = pamqp.frame.unmarshal(ours)
    assert (consumed, channel, type(obj)) == (8, 0, pamqp.heartbeat.Heartbeat)
    consumed, frame = pika.frame.decode_frame(ours)
    assert consumed == 8
    assert isinstance(frame, pika.frame.Heartbeat)

    header = CODEC.encode(ProtocolHeader(SPEC.protocol_header))
    assert (
        header == pamqp.header.ProtocolHeader().marshal() == pika.frame.ProtocolHeader().marshal()
    )
    assert CODEC.decode(header) == ProtocolHeader(b"AMQP\x00\x00\x09\x01")
    consumed, _, obj = pamqp.frame.unmarshal(header)
    assert consumed == 8
    assert isinstance(obj, pamqp.header.ProtocolHeader)
    assert (obj.major_version, obj.minor_version, obj.revision) == (0, 9, 1)
    consumed, frame = pika.frame.decode_frame(header)
    assert consumed == 8
    assert isinstance(frame, pika.frame.ProtocolHeader)
    assert (frame.major, frame.minor, frame.revision) == (0, 9, 1)


# -- the restrictions above are the libraries', not ours --------------------------------------


def test_library_refusals_are_real() -> None:
    """Each value the strategies keep away from a library is refused or altered by it."""
    # The methods pamqp cannot build with a zero reserved field.
    for name, (their_name, _) in PAMQP_CANNOT_BUILD.items():
        cls = pamqp_class(SPEC.method(name))
        with pytest.raises(ValueError):
            cls(**{their_name: ""})
    # pamqp's name checks.
    with pytest.raises(ValueError):
        pamqp.commands.Exchange.Declare(exchange="amq*")
    with pytest.raises(ValueError):
        pamqp.commands.Queue.Declare(queue="q" * 257)
    with pytest.raises(ValueError):
        pamqp.commands.Connection.Open(virtual_host="v" * 128)
    # pamqp's signed longlong.
    with pytest.raises(TypeError):
        pamqp.frame.marshal(pamqp.commands.Basic.Ack(delivery_tag=2**63), 1)
    # pamqp's long strings must be str.
    with pytest.raises(TypeError):
        pamqp.frame.marshal(pamqp.commands.Connection.SecureOk(response=b"\xff"), 0)  # type: ignore[arg-type]
    # pamqp's timestamps: a datetime, read back as milliseconds above 0xFFFFFFFF.
    with pytest.raises(TypeError):
        pamqp.commands.Basic.Properties(timestamp=5).marshal()  # type: ignore[arg-type]
    big = CODEC.encode(ContentHeader(1, BASIC.index, 0, {"timestamp": 2**32}))
    assert pamqp.frame.unmarshal(big)[2].properties.timestamp.timestamp() != 2**32
    # pamqp's delivery modes and cluster id, and '' meaning absent.
    with pytest.raises(ValueError):
        pamqp.commands.Basic.Properties(delivery_mode=3)
    with pytest.raises(ValueError):
        pamqp.commands.Basic.Properties(cluster_id="c")
    empty = pamqp.header.ContentHeader(0, 0, pamqp.commands.Basic.Properties(content_type=""))
    assert pamqp.frame.marshal(empty, 1) == CODEC.encode(ContentHeader(1, BASIC.index, 0, {}))
    # pamqp truncates long table keys and cannot read an empty frame.
    key = "k" * 129
    marshalled = pamqp.frame.marshal(pamqp.commands.Queue.Declare(arguments={key: 1}), 1)
    assert key.encode() not in marshalled
    with pytest.raises(pamqp.exceptions.UnmarshalingException):
        pamqp.frame.unmarshal(CODEC.encode(ContentBody(1, b"")))
    # pika cannot encode floats in tables and alters decimals.
    with pytest.raises(pika.exceptions.UnsupportedAMQPFieldException):
        pika.spec.Queue.Declare(arguments={"f": 1.5}).encode()
    pieces = pika.spec.Queue.Declare(arguments={"d": Decimal("1.50")})
    assert b"".join(pieces.encode()).endswith(b"D\x01\x00\x00\x00\x0f")  # 1.5, not 1.50


# -- dialects ---------------------------------------------------------------------------------


def test_amqp_dialect_int16_letter() -> None:
    """int16 travels as 'U' in the 0-9-1 spec's letters and as 's' in RabbitMQ's."""
    amqp = Codec(SPEC, "amqp")
    entry = b"\x01kU\xfe\xd4"  # key "k", int16 -300
    ours_amqp = amqp.encode(amqp.method("queue.declare", 1, arguments={"k": FieldValue("U", -300)}))
    ours_rabbit = CODEC.encode(
        CODEC.method("queue.declare", 1, arguments={"k": FieldValue("s", -300)})
    )
    assert entry in ours_amqp
    assert entry.replace(b"U", b"s") in ours_rabbit
    assert ours_amqp.replace(b"kU", b"ks") == ours_rabbit
    # pamqp writes RabbitMQ's letters; pika reads both.
    assert ours_rabbit == pamqp.frame.marshal(
        pamqp.commands.Queue.Declare(arguments={"k": -300}), 1
    )
    for data in (ours_amqp, ours_rabbit):
        assert pika.frame.decode_frame(data)[1].method.arguments == {"k": -300}
    # Each dialect reads its own letter back and refuses the other's int16 letter.
    assert amqp.decode(ours_amqp)["arguments"] == {"k": -300}
    assert CODEC.decode(ours_rabbit)["arguments"] == {"k": -300}
    with pytest.raises(LocalProtocolError):
        CODEC.encode(CODEC.method("queue.declare", 1, arguments={"k": FieldValue("U", -300)}))
    # 's' is a short string in the spec's letters.
    short = amqp.encode(amqp.method("queue.declare", 1, arguments={"k": FieldValue("s", "ab")}))
    assert b"\x01ks\x02ab" in short
    assert amqp.decode(short)["arguments"] == {"k": "ab"}
