"""Each operator's case is malformed under the specification's grammar *and* under the dialect
of the broker it targets, and expects the reaction the specification's section names (the
operator audit, issue 36): one test per expectation the audit corrected."""

from __future__ import annotations

import ast
import random
from typing import Any

import pytest

from amqpfuzz import strategies as afs
from amqpfuzz.spec.amqp091.codec.tables import DIALECTS, GRAMMARS
from amqpfuzz.strategies import Case
from amqpfuzz.strategies.amqp091.family import FAMILY
from amqpfuzz.strategies.source import Source

FRAME_MAX = 4096
DRAWS = 1500


def _cases(name: str, protocol: str = "0-9-1", **options: Any) -> list[Case]:
    """``DRAWS`` cases of the operator ``name``, from random blobs (a fixed seed)."""
    ctx = FAMILY.context(protocol, frame_max=FRAME_MAX, prefix="af-e-", **options)
    op = next(o for o in afs.operators(protocol) if o.name == name)
    rnd = random.Random(f"{protocol}:{name}")
    return [op.case(Source(rnd.randbytes(FAMILY.blob)), ctx) for _ in range(DRAWS)]


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9-1-rabbit", "0-9", "0-8"])
def test_table_type_sends_a_code_neither_the_grammar_nor_the_dialect_defines(
    protocol: str,
) -> None:
    # 'L' is the 0-9-1 grammar's long-long-int (section 4.2.1) and RabbitMQ 3.10 decodes it;
    # 'U' is the grammar's short-int: neither is an undefined type code for a RabbitMQ target
    defined = GRAMMARS.get(protocol, GRAMMARS["0-9-1"]) | frozenset(DIALECTS["rabbit"])
    sent = {case.note.removeprefix("table type code ") for case in _cases("table-type", protocol)}
    codes = {ast.literal_eval(text).decode("latin-1") for text in sent}
    assert len(codes) > 100
    assert not codes & defined, sorted(codes & defined)
    if protocol.startswith("0-9-1"):
        assert not codes & {"L", "U", "l", "s", "x"}
