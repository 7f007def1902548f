"""What is measured of a broker's code (:class:`Plan`), as data: ``sets.toml``.

A plan names how a broker kind is instrumented for a protocol family (``erlang-cover``: Erlang's
``cover`` in the running node; ``coverage.py``: a Python broker run under coverage.py; ``jacoco``: JaCoCo's agent in a JVM
broker, its classes named by prefix patterns) and what
is measured: the named sets that summaries, records, reports and benchmarks count, and more
modules besides them for steering.
"""

from __future__ import annotations

import fnmatch
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PLANS", "Plan", "plan_for", "plans_of", "unavailable"]

PLANS = Path(__file__).with_name("sets.toml")


@dataclass(frozen=True, slots=True)
class Plan:
    """How ``kind`` brokers are measured for ``family``: ``sets`` by name, then ``more``."""

    kind: str
    family: str
    how: str
    sets: tuple[tuple[str, tuple[str, ...]], ...]
    more: tuple[str, ...] = ()

    @property
    def modules(self) -> tuple[str, ...]:
        """Every module (or file pattern) measured, each once, the sets' first."""
        named = [m for _, modules in self.sets for m in modules]
        return tuple(dict.fromkeys([*named, *self.more]))

    def set_of(self, module: str) -> str | None:
        """The named set ``module`` counts in (None: measured for steering only). A file
        pattern's module (``proton/_endpoints.py``) counts where its file name matches."""
        for name, modules in self.sets:
            if module in modules:
                return name
            if any(fnmatch.fnmatchcase(module, m) for m in modules if "*" in m and "/" not in m):
                return name  # a class-name pattern (org.apache.qpid.server.protocol.v0_10.*)
            if any(
                fnmatch.fnmatch(module, "*/" + m.rpartition("/")[2]) for m in modules if "/" in m
            ):
                return name
        return None


@functools.cache
def _plans() -> dict[tuple[str, str], Plan]:
    data = tomllib.loads(PLANS.read_text())
    found = {}
    for kind, families in data.items():
        for family, entry in families.items():
            sets = tuple((name, tuple(modules)) for name, modules in entry["sets"].items())
            found[kind, family] = Plan(kind, family, entry["how"], sets, tuple(entry["more"]))
    return found


def plans_of(kind: str) -> list[Plan]:
    """Every plan of a broker kind, one per protocol family it is measured in."""
    return [plan for (k, _), plan in _plans().items() if k == kind]


def plan_for(kind: str | None, family: str) -> Plan | None:
    """What is measured of a ``kind`` broker fuzzed in ``family`` (None: nothing can be)."""
    return _plans().get((kind or "", family))


def unavailable(kind: str | None, family: str) -> str:
    """Why a target's code cannot be measured, in a few words."""
    if kind is None:
        return "amqpfuzz cannot see into a broker at a URL (give --coverage-node for a RabbitMQ)"
    kinds = sorted({k for k, f in _plans() if f == family})
    measured = f" (it can: {', '.join(kinds)})" if kinds else ""
    return f"amqpfuzz cannot measure a {kind} broker's code in this protocol{measured}"
