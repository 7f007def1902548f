"""Valid frames derived from the spec model: method arguments, method frames, content.

Nothing here names a method: a method's generator is assembled from its fields' wire types and
asserts (:mod:`.source`), so a method or domain added to a specification file gets strategies
with no change. Each strategy makes its structural choices with Hypothesis (which method) and
reads every value from one drawn blob of bytes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from amqpfuzz.spec.amqp091 import Field, Method, Spec
from amqpfuzz.spec.amqp091.asserts import assert_limits
from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, Frame, MethodFrame
from amqpfuzz.spec.amqp091.model import ZERO_VALUES

from .source import NAME_ALPHABET, Gen, Source, field_generator

__all__ = [
    "BLOB",
    "ENTITY_DOMAINS",
    "argument_builder",
    "blobs",
    "body_size",
    "content_builder",
    "content_frames",
    "method_frame",
    "method_frames_of",
    "sequence_builder",
    "sequences_of",
]

# Bytes in one blob: enough for the arguments of any method but a few with large tables, which
# read zeros (the simplest values) past its end. Fixed in size: Hypothesis draws bytes one at a
# time, so a length of its choosing costs a decision per byte, and fifty blobs of this size
# fit in one test case's buffer (a campaign draws a batch of cases per example).
BLOB = 128

# Domains that name broker entities. With a prefix, every such value starts with it (or is
# empty, which names the default exchange or the channel's last queue), so that a campaign
# only ever touches what it created; routing keys get the prefix too, since the default
# exchange routes by queue name.
ENTITY_DOMAINS = frozenset({"queue-name", "exchange-name"})
ZERO = ZERO_VALUES  # what a reserved field carries


def blobs(size: int = BLOB) -> st.SearchStrategy[bytes]:
    """The bytes a frame or case is read from; shrinking zeroes them, which reads as the first
    method or operator and the simplest arguments."""
    return st.binary(min_size=size, max_size=size)


def _prefixed(fld: Field, prefix: str, named: bool = False) -> Gen:
    """Names under ``prefix``, or empty where the field allows it (unless ``named``)."""
    notnull, max_length, _ = assert_limits(fld.asserts)
    room = max(1, min((max_length or 255) - len(prefix.encode("utf-8")), 24))

    def gen(src: Source) -> str:
        size = src.below(room + 1)
        if size == 0 and not notnull and not named:
            return ""
        return prefix + "".join(
            NAME_ALPHABET[src.below(len(NAME_ALPHABET))] for _ in range(max(size, 1))
        )

    return gen


# "The server MUST implement these standard exchange types: fanout, direct." (a class's rule)
_STANDARD = re.compile(r"standard \w+ types: ([\w, -]+)\.")


@functools.cache
def standard_types(spec: Spec) -> Mapping[str, tuple[str, ...]]:
    """The types each class's rules name as standard (0-9-1: the exchange types fanout,
    direct, topic and headers), by class name."""
    found: dict[str, dict[str, None]] = {}
    for cls in spec.classes:
        for rule in cls.rules:
            for match in _STANDARD.finditer(rule.doc):
                names = (v.strip() for v in match.group(1).split(","))
                found.setdefault(cls.name, {}).update(dict.fromkeys(n for n in names if n))
    return {name: tuple(types) for name, types in found.items()}


def _one_of(types: tuple[str, ...], free: Gen) -> Gen:
    """Mostly a standard type (the first for a zero read), sometimes any string: a type the
    server does not implement is refused as the class's rules say."""

    def gen(src: Source) -> Any:
        pick = src.below(len(types) + 1)
        return types[pick] if pick < len(types) else free(src)

    return gen


def _field_gen(
    fld: Field,
    dialect: str,
    typed: bool,
    prefix: str | None,
    types: tuple[str, ...] = (),
    declares: bool = False,
) -> Gen:
    if fld.reserved:
        zero = ZERO[fld.type]
        return lambda src: zero
    if prefix is not None and (fld.domain in ENTITY_DOMAINS or fld.name == "routing-key"):
        # a declaration names what it declares: an empty name asks the broker to choose
        # one, which a no-wait declaration never tells, and the run must know what it made
        return _prefixed(fld, prefix, named=declares and fld.domain in ENTITY_DOMAINS)
    if types and fld.name == "type" and fld.type == "shortstr":
        return _one_of(types, field_generator(fld, dialect, typed))
    return field_generator(fld, dialect, typed)


@functools.lru_cache(maxsize=4096)
def argument_builder(
    method: Method,
    dialect: str = "rabbit",
    typed: bool = False,
    prefix: str | None = None,
    types: tuple[str, ...] = (),
) -> Callable[[Source], tuple[Any, ...]]:
    """Reads one value per field of ``method`` from a source, in field order; a field named
    ``type`` takes mostly one of ``types`` (the standard types of the method's class)."""
    declares = method.name == "declare"
    gens = [_field_gen(f, dialect, typed, prefix, types, declares) for f in method.fields]
    return lambda src: tuple(gen(src) for gen in gens)


def method_frame(
    method: Method,
    channel: int,
    *,
    dialect: str = "rabbit",
    typed: bool = False,
    prefix: str | None = None,
) -> st.SearchStrategy[MethodFrame]:
    build = argument_builder(method, dialect, typed, prefix)
    return blobs().map(lambda blob: MethodFrame(channel, method, build(Source(blob))))


def method_frames_of(
    methods: Sequence[Method],
    channel: int,
    *,
    dialect: str = "rabbit",
    typed: bool = False,
    prefix: str | None = None,
) -> st.SearchStrategy[MethodFrame]:
    """A frame of one of ``methods``: the method and its arguments come from one blob, the
    method first (shrinking towards the first method, then towards zero arguments)."""
    choices = tuple(methods)
    builders = {m: argument_builder(m, dialect, typed, prefix) for m in choices}

    def build(blob: bytes) -> MethodFrame:
        src = Source(blob)
        method = choices[src.below(len(choices))]
        return MethodFrame(channel, method, builders[method](src))

    return blobs().map(build)


def body_size(src: Source, frame_max: int, least: int = 0, most: int | None = None) -> int:
    """A body size around the frame boundaries (empty, one byte, a frame exactly full, one
    byte into a second frame), or else mostly small: up to 255 bytes three times in four, up
    to 64 KiB or to the limit (two frames, or ``most``) otherwise."""
    chunk = frame_max - 8
    top = max(most if most is not None else 2 * chunk, least)
    if src.edge():
        edges = tuple(n for n in (0, 1, chunk - 1, chunk, chunk + 1, top) if least <= n <= top)
        return int(src.pick(edges))
    scale = src.byte()
    bound = 255 if scale < 192 else 65535 if scale < 240 else top
    return least + src.uint(32) % (min(bound, top) - least + 1)


@functools.lru_cache(maxsize=256)
def content_builder(
    spec: Spec,
    class_name: str,
    frame_max: int,
    dialect: str = "rabbit",
    typed: bool = False,
    least: int = 0,
    most: int | None = None,
    bodies: bool = True,
) -> Callable[[Source, int], list[Frame]]:
    """Reads a content header (any subset of the class's properties) and its body frames
    (only the header when ``bodies`` is false)."""
    amqp_class = spec.amqp_class(class_name)
    props = [(p.attr, field_generator(p, dialect, typed)) for p in amqp_class.properties]
    chunk = frame_max - 8

    def build(src: Source, channel: int) -> list[Frame]:
        # the size first: it decides the frames, and the blob may run out during the properties
        size = body_size(src, frame_max, least, most)
        # what a body holds does not matter to the protocol: a short pattern, repeated
        pattern = src.take(16) or b"\x00"
        body = (pattern * (size // len(pattern) + 1))[:size] if bodies else b""
        chosen = src.uint(len(props)) if props else 0
        properties = {name: gen(src) for i, (name, gen) in enumerate(props) if chosen >> i & 1}
        frames: list[Frame] = [ContentHeader(channel, amqp_class.index, size, properties)]
        if bodies:
            frames += [ContentBody(channel, body[i : i + chunk]) for i in range(0, size, chunk)]
        return frames

    return build


def content_frames(
    spec: Spec,
    class_name: str,
    channel: int,
    frame_max: int,
    *,
    dialect: str = "rabbit",
    typed: bool = False,
    max_body: int | None = None,
    min_body: int = 0,
) -> st.SearchStrategy[list[Frame]]:
    """A content header and the body frames that carry its body within ``frame_max``."""
    build = content_builder(spec, class_name, frame_max, dialect, typed, min_body, max_body)
    return blobs().map(lambda blob: build(Source(blob), channel))


def sequences_of(
    spec: Spec,
    methods: Sequence[Method],
    channel: int,
    frame_max: int,
    *,
    dialect: str = "rabbit",
    prefix: str | None = None,
    max_body: int | None = None,
) -> st.SearchStrategy[list[Frame]]:
    """A method of ``methods`` and, if it carries content, its header and bodies; one blob
    chooses the method and feeds its arguments and then the content."""
    build = sequence_builder(
        spec, methods, channel, frame_max, dialect=dialect, prefix=prefix, max_body=max_body
    )
    return blobs().map(lambda blob: build(Source(blob)))


def sequence_builder(
    spec: Spec,
    methods: Sequence[Method],
    channel: int,
    frame_max: int,
    *,
    dialect: str = "rabbit",
    prefix: str | None = None,
    max_body: int | None = None,
) -> Callable[[Source], list[Frame]]:
    """Reads a method of ``methods`` from a source, its arguments, then its content."""
    choices = tuple(methods)
    types = standard_types(spec)
    builders = {
        m: argument_builder(m, dialect, False, prefix, types.get(m.class_name, ())) for m in choices
    }

    def build(src: Source) -> list[Frame]:
        method = choices[src.below(len(choices))]
        frame = MethodFrame(channel, method, builders[method](src))
        if not method.content:
            return [frame]
        content = content_builder(spec, method.class_name, frame_max, dialect, False, 0, max_body)
        return [frame, *content(src, channel)]

    return build
