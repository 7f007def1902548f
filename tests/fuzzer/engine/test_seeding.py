"""The one place amqpfuzz reaches inside Hypothesis (``fuzzer/engine/seeding.py``): if a
Hypothesis upgrade changes what a stored example is, these fail, not a shrink in the field."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from amqpfuzz.fuzzer.engine.seeding import Namespaced, Seeded

SEED = bytes(range(7, 23))


def test_a_seeded_test_replays_the_seed_first_and_shrinks_from_it() -> None:
    seen: list[bytes] = []

    @settings(database=Seeded(SEED), phases=[Phase.reuse, Phase.shrink], max_examples=200)
    @given(st.binary(min_size=len(SEED), max_size=len(SEED)))
    def fails_while_the_first_octet_is_odd(blob: bytes) -> None:
        seen.append(blob)
        assert blob[0] % 2 == 0

    with pytest.raises(AssertionError):
        fails_while_the_first_octet_is_odd()
    assert seen[0] == SEED
    assert seen[-1] == bytes([1]) + bytes(len(SEED) - 1)  # shrunk from the seed


def test_namespaces_keep_the_examples_of_tests_that_share_a_function_apart() -> None:
    inner = InMemoryExampleDatabase()
    one, two = Namespaced(inner, b"one"), Namespaced(inner, b"two")
    one.save(b"key", b"value")
    assert list(one.fetch(b"key")) == [b"value"]
    assert list(two.fetch(b"key")) == []
    one.move(b"key", b"other", b"value")
    assert list(one.fetch(b"other")) == [b"value"] and list(one.fetch(b"key")) == []
