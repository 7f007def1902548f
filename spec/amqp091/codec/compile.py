"""Compile the spec model's methods and content properties into fast encoders and decoders.

Nothing here knows any particular method: for each method of the loaded specification we
generate the Python source of one encoder and one decoder from its field list, and ``exec``
it once (as ``collections.namedtuple`` and ``dataclasses`` do). Consecutive fixed-width fields,
consecutive bits (packed into octets, first bit in the lowest position) and the length prefix
of a following string share one precompiled ``struct``, so a method costs a handful of calls.

Generated encoders produce a whole method frame; generated decoders read one method payload
(the bytes after the class and method ids) and raise only the codec's own errors.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import FrameError, LocalProtocolError, SyntaxFieldError
from ..model import AmqpClass, Field, Method
from .tables import decode_table, encode_table

__all__ = ["Decoder", "Encoder", "PropertiesCodec", "check_value", "compile_method"]

Encoder = Callable[[int, Sequence[Any]], bytes]
Decoder = Callable[[bytes], tuple[Any, ...]]

_FIXED = {"octet": "B", "short": "H", "long": "I", "longlong": "Q", "timestamp": "Q"}
FRAME_END = b"\xce"


def _longstr(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"long string must be bytes or str, not {type(value).__name__}")


class _Source:
    """Accumulates generated lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}

    def const(self, prefix: str, value: Any) -> str:
        name = f"_{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)


def _groups(fields: Sequence[Field]) -> list[list[tuple[int, Field]]]:
    """Split the field list into runs of bits (at most 8 per octet)."""
    runs: list[list[tuple[int, Field]]] = []
    for i, fld in enumerate(fields):
        if fld.type == "bit" and runs and runs[-1][0][1].type == "bit" and len(runs[-1]) < 8:
            runs[-1].append((i, fld))
        else:
            runs.append([(i, fld)])
    return runs


# -- encoders ---------------------------------------------------------------------------------


def _encode_body(
    src: _Source, fields: Sequence[Field], start_fmt: str, start_args: list[str], base: int = 0
) -> str:
    """Emit the lines that prepare field values ``a<base+i>``; return the payload expression.

    ``start_fmt``/``start_args`` open the first struct group (the class and method ids).
    """
    fmt, args = start_fmt, list(start_args)
    parts: list[str] = []

    def flush() -> None:
        nonlocal fmt, args
        if fmt:
            packer = src.const("S", struct.Struct(">" + fmt))
            parts.append(f"{packer}.pack({', '.join(args)})")
        fmt, args = "", []

    for run in _groups(fields):
        i, fld = run[0]
        i += base
        if fld.type == "bit":
            fmt += "B"
            bits = [f"(a{j + base} and {1 << k})" for k, (j, _) in enumerate(run)]
            args.append(" | ".join(bits) + " | 0")
        elif fld.type in _FIXED:
            fmt += _FIXED[fld.type]
            args.append(f"a{i}")
        elif fld.type == "shortstr":
            src.emit(f"b{i} = a{i}.encode('utf-8')")
            fmt += "B"
            args.append(f"len(b{i})")
            flush()
            parts.append(f"b{i}")
        elif fld.type == "longstr":
            src.emit(f"b{i} = _longstr(a{i})")
            fmt += "I"
            args.append(f"len(b{i})")
            flush()
            parts.append(f"b{i}")
        elif fld.type == "content":  # (discriminator, data): an octet and a long string
            src.emit(f"c{i}, b{i} = a{i}; b{i} = _longstr(b{i})")
            fmt += "BI"
            args.extend((f"c{i}", f"len(b{i})"))
            flush()
            parts.append(f"b{i}")
        elif fld.type == "table":
            flush()
            parts.append(f"_table(a{i}, _dialect)")
        else:  # pragma: no cover - the loader admits only the primitive types
            raise AssertionError(fld.type)
    flush()
    return f"b''.join(({', '.join(parts)},))" if parts else "b''"


def compile_method(method: Method, dialect: str, typed: bool = False) -> tuple[Encoder, Decoder]:
    """The encoder ``(channel, values) -> frame bytes`` and decoder ``payload -> values``.

    ``typed`` makes the decoder return tables with :class:`FieldValue` entries.
    """
    return _method_encoder(method, dialect), _method_decoder(method, dialect, typed)


def _method_encoder(method: Method, dialect: str) -> Encoder:
    src = _Source()
    names = [f"a{i}" for i in range(len(method.fields))]
    if names:
        src.emit(f"({', '.join(names)},) = v")
    payload = _encode_body(src, method.fields, "HH", [str(method.class_index), str(method.index)])
    src.emit(f"_p = {payload}")
    src.emit("return _HEADER(1, ch, len(_p)) + _p + _END")
    body = "\n".join(src.lines)
    code = f"def encode(ch, v):\n{body}\n"
    namespace = {
        **src.names,
        "_HEADER": struct.Struct(">BHI").pack,
        "_END": FRAME_END,
        "_longstr": _longstr,
        "_table": encode_table,
        "_dialect": dialect,
    }
    exec(compile(code, f"<amqpfuzz encoder {method.full_name}>", "exec"), namespace)
    raw: Encoder = namespace["encode"]
    fields = method.fields
    name = method.full_name

    def encode(channel: int, values: Sequence[Any]) -> bytes:
        try:
            return raw(channel, values)
        except LocalProtocolError:
            raise
        except (struct.error, TypeError, AttributeError, ValueError, UnicodeError):
            raise LocalProtocolError(_diagnose(name, fields, channel, values)) from None

    return encode


def _diagnose(name: str, fields: Sequence[Field], channel: int, values: Sequence[Any]) -> str:
    """Find which argument the fast encoder choked on, for a message a person can act on."""
    if not 0 <= channel <= 0xFFFF:
        return f"{name}: channel {channel} is not a 16-bit number"
    if len(values) != len(fields):
        return f"{name}: {len(values)} values for {len(fields)} fields"
    for fld, value in zip(fields, values, strict=True):
        problem = check_value(fld.type, value)
        if problem:
            return f"{name}: field {fld.name!r} ({fld.type}): {problem}"
    return f"{name}: values cannot be encoded: {values!r}"


_LIMITS = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}


def _content_problem(value: Any) -> str | None:
    if not (isinstance(value, tuple) and len(value) == 2):
        return "needs a (discriminator, data) pair"
    if not isinstance(value[0], int) or not 0 <= value[0] < 256:
        return f"discriminator {value[0]!r} is not an octet"
    return check_value("longstr", value[1])


def check_value(wire: str, value: Any) -> str | None:
    """Why ``value`` cannot travel as ``wire`` type, or None if it can."""
    if wire in _LIMITS:
        if not isinstance(value, int):
            return f"needs an int, got {type(value).__name__}"
        if not 0 <= value < 2 ** _LIMITS[wire]:
            return f"{value} is outside 0..2**{_LIMITS[wire]}-1"
    elif wire == "shortstr":
        if not isinstance(value, str):
            return f"needs a str, got {type(value).__name__}"
        if len(value.encode("utf-8", "surrogatepass")) > 255:
            return f"{len(value.encode('utf-8', 'surrogatepass'))} bytes exceed 255"
        try:
            value.encode("utf-8")
        except UnicodeError:
            return "is not encodable as UTF-8"
    elif wire == "longstr":
        try:
            data = _longstr(value)
        except (TypeError, UnicodeError) as exc:
            return str(exc)
        if len(data) >= 2**32:
            return "longer than 2**32-1 bytes"
    elif wire == "table":
        try:
            encode_table(value)
        except LocalProtocolError as exc:
            return str(exc)
    elif wire == "content":
        return _content_problem(value)
    return None


# -- decoders ---------------------------------------------------------------------------------


def _decode_body(src: _Source, fields: Sequence[Field], start: int) -> None:
    """Emit lines reading every field from ``p`` starting at offset ``start`` into a<i>."""
    src.emit(f"o = {start}")
    pending: list[str] = []  # fields of the current struct group (with their post-processing)
    fmt = ""
    post: list[str] = []

    def flush() -> None:
        nonlocal fmt, pending, post
        if fmt:
            packer = struct.Struct(">" + fmt)
            name = src.const("U", packer.unpack_from)
            src.emit(f"if o + {packer.size} > L: raise _short(o, {packer.size})")
            src.emit(f"{', '.join(pending)}, = {name}(p, o)")
            src.emit(f"o += {packer.size}")
            for line in post:
                src.emit(line)
        fmt, pending, post = "", [], []

    for run in _groups(fields):
        i, fld = run[0]
        if fld.type == "bit":
            fmt += "B"
            pending.append(f"x{i}")
            for k, (j, _) in enumerate(run):
                post.append(f"a{j} = bool(x{i} & {1 << k})")
        elif fld.type in _FIXED:
            fmt += _FIXED[fld.type]
            pending.append(f"a{i}")
        elif fld.type in ("shortstr", "longstr", "content"):
            if fld.type == "content":
                fmt += "B"
                pending.append(f"c{i}")
            fmt += "B" if fld.type == "shortstr" else "I"
            pending.append(f"n{i}")
            flush()
            src.emit(f"e = o + n{i}")
            src.emit(f"if e > L: raise _short(o, n{i})")
            if fld.type == "shortstr":
                src.emit(f"s = o; a{i} = p[o:e].decode('utf-8')")
            elif fld.type == "content":
                src.emit(f"a{i} = (c{i}, p[o:e])")
            else:
                src.emit(f"a{i} = p[o:e]")
            src.emit("o = e")
        elif fld.type == "table":
            flush()
            src.emit(f"a{i}, o = _table(p, o, _dialect, _typed)")
    flush()
    src.emit("if o != L: raise _trailing(o, L)")


def _method_decoder(method: Method, dialect: str, typed: bool) -> Decoder:
    src = _Source()
    src.emit("L = len(p)")
    src.emit("s = 0")
    body_start = len(src.lines)
    _decode_body(src, method.fields, 4)
    result = ", ".join(f"a{i}" for i in range(len(method.fields)))
    src.emit(f"return ({result}{',' if result else ''})")
    body = "\n".join("    " + line for line in src.lines[body_start:])
    head = "\n".join(src.lines[:body_start])
    code = (
        f"def decode(p):\n{head}\n    try:\n{body}\n"
        "    except UnicodeDecodeError:\n"
        "        raise _bad_utf8(s) from None\n"
    )
    namespace = {
        **src.names,
        "_short": _short,
        "_trailing": _trailing,
        "_bad_utf8": _bad_utf8,
        "_table": decode_table,
        "_dialect": dialect,
        "_typed": typed,
    }
    exec(compile(code, f"<amqpfuzz decoder {method.full_name}>", "exec"), namespace)
    decoder: Decoder = namespace["decode"]
    return decoder


def _short(offset: int, size: int) -> FrameError:
    return FrameError(f"method arguments end early: need {size} more bytes", offset)


def _trailing(offset: int, length: int) -> FrameError:
    return FrameError(f"{length - offset} bytes after the last method argument", offset)


def _bad_utf8(offset: int) -> SyntaxFieldError:
    return SyntaxFieldError("short string is not valid UTF-8", offset)


# -- content properties -----------------------------------------------------------------------


class PropertiesCodec:
    """Encoder and decoder of one class's content properties and their flag words.

    Property *i* is flagged by bit ``15 - i % 15`` of flag word ``i // 15``; bit 0 of a flag
    word says another word follows. Only present (not ``None``) properties are encoded; a bit
    property is carried by its flag alone.
    """

    def __init__(self, amqp_class: AmqpClass, dialect: str, typed: bool = False) -> None:
        self.amqp_class = amqp_class
        self.names = frozenset(p.attr for p in amqp_class.properties)
        self.words = max(1, -(-len(amqp_class.properties) // 15))
        mask = [0] * self.words
        for i in range(len(amqp_class.properties)):
            mask[i // 15] |= 1 << (15 - i % 15)
        self.defined = tuple(mask)
        self._encode = _properties_encoder(amqp_class.properties, self.words, dialect)
        self._decode = _properties_decoder(amqp_class.properties, dialect, typed)

    def encode(self, properties: dict[str, Any]) -> bytes:
        """The flag words followed by the present properties."""
        if not self.names.issuperset(properties):
            unknown = ", ".join(sorted(set(properties) - self.names))
            raise LocalProtocolError(f"class {self.amqp_class.name} has no property {unknown}")
        try:
            return self._encode(properties)
        except LocalProtocolError:
            raise
        except (struct.error, TypeError, AttributeError, ValueError, UnicodeError):
            for fld in self.amqp_class.properties:
                value = properties.get(fld.attr)
                problem = None if value is None else check_value(fld.type, value)
                if problem:
                    raise LocalProtocolError(f"property {fld.attr}: {problem}") from None
            raise LocalProtocolError(f"cannot encode properties {properties!r}") from None

    def decode(self, payload: bytes, offset: int) -> dict[str, Any]:
        """Properties from the flag words at ``offset`` to the end of ``payload``."""
        return self._decode(payload, offset)


def _properties_encoder(
    fields: Sequence[Field], words: int, dialect: str
) -> Callable[[dict[str, Any]], bytes]:
    src = _Source()
    src.emit("parts = []")
    for w in range(words):
        src.emit(f"f{w} = {1 if w < words - 1 else 0}")
    for i, fld in enumerate(fields):
        word, bit = i // 15, 1 << (15 - i % 15)
        src.emit(f"a{i} = d.get({fld.attr!r})")
        src.emit(f"if a{i} is not None:")
        src.emit(f"f{word} |= {bit}", 2)
        if fld.type == "bit":
            continue
        inner = _Source()
        inner.names = src.names
        payload = _encode_body(inner, [fld], "", [], base=i)
        for line in inner.lines:
            src.emit(line.strip(), 2)
        src.emit(f"parts.append({payload})", 2)
    flags = ", ".join(f"f{w}" for w in range(words))
    src.emit(f"return _FLAGS({flags}) + b''.join(parts)")
    code = "def encode(d):\n" + "\n".join(src.lines) + "\n"
    namespace = {
        **src.names,
        "_FLAGS": struct.Struct(f">{words}H").pack,
        "_longstr": _longstr,
        "_table": encode_table,
        "_dialect": dialect,
    }
    exec(compile(code, "<amqpfuzz properties encoder>", "exec"), namespace)
    encoder: Callable[[dict[str, Any]], bytes] = namespace["encode"]
    return encoder


def _properties_decoder(
    fields: Sequence[Field], dialect: str, typed: bool
) -> Callable[[bytes, int], dict[str, Any]]:
    words = max(1, -(-len(fields) // 15))
    mask = [0] * words
    for i in range(len(fields)):
        mask[i // 15] |= 1 << (15 - i % 15)
    src = _Source()
    src.emit("L = len(p)")
    src.emit("s = o")
    src.emit("try:")
    src.emit("flags = _flags(p, o)", 2)
    src.emit("o += 2 * len(flags)", 2)
    src.emit("flags += [0] * (_WORDS - len(flags))", 2)
    src.emit("r = {}", 2)
    for i, fld in enumerate(fields):
        word, bit = i // 15, 1 << (15 - i % 15)
        src.emit(f"if flags[{word}] & {bit}:", 2)
        if fld.type == "bit":
            src.emit(f"r[{fld.attr!r}] = True", 3)
            continue
        inner = _Source()
        inner.names = src.names
        _decode_one(inner, fld)
        for line in inner.lines:
            src.emit(line.strip(), 3)
        src.emit(f"r[{fld.attr!r}] = a0", 3)
    src.emit("if o != L: raise _trailing(o, L)", 2)
    src.emit("return r", 2)
    src.emit("except UnicodeDecodeError:")
    src.emit("raise _bad_utf8(s) from None", 2)
    code = "def decode(p, o):\n" + "\n".join(src.lines) + "\n"

    def read_flags(p: bytes, o: int) -> list[int]:
        flags: list[int] = []
        while True:
            if o + 2 > len(p):
                raise _short(o, 2)
            word = (p[o] << 8) | p[o + 1]
            allowed = mask[len(flags)] if len(flags) < words else 0
            if word & 0xFFFE & ~allowed:
                raise _undefined(o, word, allowed)
            flags.append(word)
            o += 2
            if not word & 1:
                return flags

    namespace = {
        **src.names,
        "_flags": read_flags,
        "_WORDS": words,
        "_short": _short,
        "_trailing": _trailing,
        "_bad_utf8": _bad_utf8,
        "_table": decode_table,
        "_dialect": dialect,
        "_typed": typed,
    }
    exec(compile(code, "<amqpfuzz properties decoder>", "exec"), namespace)
    decoder: Callable[[bytes, int], dict[str, Any]] = namespace["decode"]
    return decoder


def _decode_one(src: _Source, fld: Field) -> None:
    """Lines reading one non-bit field at ``o`` into ``a0``."""
    if fld.type in _FIXED:
        packer = struct.Struct(">" + _FIXED[fld.type])
        name = src.const("U", packer.unpack_from)
        src.emit(f"if o + {packer.size} > L: raise _short(o, {packer.size})")
        src.emit(f"a0, = {name}(p, o); o += {packer.size}")
    elif fld.type in ("shortstr", "longstr"):
        width = 1 if fld.type == "shortstr" else 4
        src.emit(f"if o + {width} > L: raise _short(o, {width})")
        if width == 1:
            src.emit("n = p[o]; o += 1")
        else:
            src.emit("n = (p[o] << 24) | (p[o+1] << 16) | (p[o+2] << 8) | p[o+3]; o += 4")
        src.emit("if o + n > L: raise _short(o, n)")
        if fld.type == "shortstr":
            src.emit("s = o; a0 = p[o:o + n].decode('utf-8'); o += n")
        else:
            src.emit("a0 = p[o:o + n]; o += n")
    elif fld.type == "table":
        src.emit("a0, o = _table(p, o, _dialect, _typed)")
    else:  # pragma: no cover - no class has a content-typed property
        raise AssertionError(fld.type)


def _undefined(offset: int, got: int, defined: int) -> SyntaxFieldError:
    return SyntaxFieldError(
        f"property flags 0x{got:04x} set bits the class does not define (0x{defined:04x})", offset
    )
