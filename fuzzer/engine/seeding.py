"""The one place amqpfuzz reaches inside Hypothesis: handing its shrinker a case to start from.

A campaign's cases are read from blobs drawn outside a Hypothesis test (in batches), so a
failure found there is shrunk by a test of its own that must replay that blob first. Hypothesis
replays what its example database holds for a test; the database's API is public
(:class:`~hypothesis.database.ExampleDatabase`), but two things are Hypothesis's own: the bytes
of one stored example (its encoding of its choices, which only
``hypothesis.database.choices_to_bytes`` writes), and which of the keys it asks for holds
examples it will still shrink (a failure under the test's own key is taken as shrunk already and
replayed as it is; one under its secondary key, ``<key>.secondary``, is shrunk). Both are here
alone, tested (``tests/fuzzer/engine/test_seeding.py``: a seeded test runs the seed first and
shrinks it), and ``pyproject.toml`` keeps Hypothesis below its next major version. (Seeding the
test's own key, as amqpfuzz once did, was replayed and never shrunk by Hypothesis 6.170.)

The pytest plugin's items need the other half only: one database per item, so that the
examples of one item (all sharing one test function) are never replayed for another; that is
the public API (:class:`Namespaced`).
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import ExampleDatabase, choices_to_bytes

__all__ = ["Namespaced", "Seeded", "shrinking"]


_SHRUNK_LATER = b".secondary"  # the suffix of the key whose examples Hypothesis shrinks


class Seeded(ExampleDatabase):
    """A database holding one example, a blob, where Hypothesis replays it first and shrinks
    it if it fails. Nothing is saved."""

    def __init__(self, blob: bytes) -> None:
        super().__init__()
        self.example = choices_to_bytes((blob,))

    def fetch(self, key: bytes) -> Iterable[bytes]:
        if key.endswith(_SHRUNK_LATER):
            yield self.example

    def save(self, key: bytes, value: bytes) -> None:
        return None

    def delete(self, key: bytes, value: bytes) -> None:
        return None


class Namespaced(ExampleDatabase):
    """Another database seen under a namespace: every key is prefixed by ``namespace``, so
    tests that share a function keep their examples apart."""

    def __init__(self, inner: ExampleDatabase, namespace: bytes) -> None:
        super().__init__()
        self.inner = inner
        self.namespace = namespace + b":"

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.inner.fetch(self.namespace + key)

    def save(self, key: bytes, value: bytes) -> None:
        self.inner.save(self.namespace + key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(self.namespace + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.inner.move(self.namespace + src, self.namespace + dest, value)


def shrinking(blob: bytes) -> settings:
    """How a test that shrinks a failure found outside Hypothesis runs: ``blob`` replayed
    first (:class:`Seeded`), then only shrunk, quietly, for as long as its caller allows."""
    return settings(
        database=Seeded(blob),
        phases=[Phase.reuse, Phase.shrink],
        max_examples=1000,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
