"""What the 1.0 operators share: the catalogue they register into, and the bytes of a valid
performative taken apart so that one piece can be broken."""

from __future__ import annotations

from amqpfuzz.spec.amqp10.codec import Codec, Composite, raw

from ...operator import Operator, registrar
from ...source import Source
from ..context import CODES, Context

__all__ = ["OPERATORS", "Parts", "operator", "parts", "session_frame"]

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES, scoped=True)


class Parts:
    """A performative as its descriptor and its encoded fields, put together again with any
    of them replaced and the list's size and count as given."""

    def __init__(self, codec: Codec, body: Composite) -> None:
        encoder = codec.encoder
        infos = codec.types.fields[body.name]
        self.name = body.name
        self.descriptor = encoder.value(codec.types.descriptor_of(body.name), "ulong")
        values = [body[f.name] for f in infos]
        while values and values[-1] is None:
            values.pop()
        self.fields = [encoder.field(f, v) for f, v in zip(infos, values, strict=False)]
        self.infos = infos

    def body(
        self,
        fields: list[bytes] | None = None,
        size: int | None = None,
        count: int | None = None,
        code: int = 0xC0,
        descriptor: bytes | None = None,
    ) -> bytes:
        items = self.fields if fields is None else fields
        data = raw.compound(code if sum(map(len, items)) < 250 else 0xD0, items, size, count)
        return raw.described(self.descriptor if descriptor is None else descriptor, data)

    def replaced(self, index: int, value: bytes) -> list[bytes]:
        fields = list(self.fields)
        while len(fields) <= index:
            fields.append(b"\x40")
        fields[index] = value
        return fields

    def index(self, name: str) -> int:
        return next(i for i, f in enumerate(self.infos) if f.name == name)


def parts(context: Context, body: Composite) -> Parts:
    return Parts(context.codec, body)


def session_frame(src: Source, ctx: Context) -> Composite:
    """A valid frame a case may send on its session by itself: a flow of the session, or the
    attach of a fresh link."""
    if src.byte() & 1:
        return ctx.attach(src)
    uint = ctx.values.of("uint")
    return ctx.codec.composite(
        "flow", incoming_window=uint(src), next_outgoing_id=uint(src), outgoing_window=uint(src)
    )
