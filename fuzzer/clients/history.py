"""Which version fixed it: a client reproducer replayed on the published versions of its library
between two (``NAME@A..B``), oldest first, and the first version where the verdict changes.

A short range (:data:`EVERY` versions or fewer) is replayed whole; a longer one by binary search
for the first version whose verdict differs from the oldest's, the way ``git bisect`` finds a
change: it reads as many versions as the search needs, assuming the verdict changes once (the
table shows what was replayed, so a range that changes back is seen where it was sampled). A
version the shim cannot be built against (an API the shim does not fit) is skipped and said so.
A version where the reproducer no longer fails is replayed :data:`CONFIRM` times: fixed only if
no replay fails, as a campaign confirms a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..records.contract import describe
from .builds import parse_spec
from .campaign import replay_client
from .judge import same_failure
from .registries import exists, is_release, plain, published, version_key
from .shims import ClientError, shim
from .targets import ClientTarget

__all__ = ["CONFIRM", "EVERY", "Step", "first_change", "history", "parse_range"]

EVERY = 8  # versions replayed one by one; more are searched
CONFIRM = 3  # replays of a version that seems fixed


@dataclass(frozen=True)
class Step:
    """One version's verdict: ``failing`` (the reproducer's signature), ``fixed``, ``other``
    (another failure: ``signature`` says which) or ``unbuildable`` (``observed`` says why)."""

    version: str
    verdict: str
    signature: str | None
    observed: str


def parse_range(text: str) -> tuple[str, str, str]:
    """``NAME@A..B`` as (name, A, B); one line for anything else."""
    name, low, high = text, "", ""
    if "@" in text and ".." in text:
        name, _, versions = text.partition("@")
        low, _, high = versions.partition("..")
    if not (name and low and high):
        raise ClientError(
            f"--client {text}: a range is NAME@FIRST..LAST (amqp091-go@1.5.0..1.16.0)"
        )
    parse_spec(name)  # a bundled client, or one line
    return name, low, high


def versions_between(name: str, low: str, high: str) -> list[str]:
    """The published versions from ``low`` to ``high``, both included and both published; pre-
    releases only where an end is one."""
    item = shim(name)
    if item.registry == "deb":
        raise ClientError(f"{name} is Debian's package {item.package}: it has one version here")
    listed = published(item.registry, item.package)
    low, high = plain(item.registry, low), plain(item.registry, high)
    for end in (low, high):
        if not exists(item.registry, item.package, end):
            raise ClientError(f"{name}@{end}: {item.package} has published no version {end}")
    if version_key(low) > version_key(high):
        raise ClientError(f"{name}@{low}..{high}: the first version is newer than the last")
    pre = not (is_release(low) and is_release(high))
    inside = [
        v
        for v in listed
        if version_key(low) < version_key(v) < version_key(high) and (pre or is_release(v))
    ]
    return [low, *inside, high]


def replay_at(data: Mapping[str, Any], name: str, version: str, timeout: float) -> Step:
    """The reproducer replayed on ``name`` at ``version`` (built first, if it must be)."""
    try:
        client = ClientTarget.bundled(f"{name}@{version}")
    except ClientError as exc:
        return Step(version, "unbuildable", None, str(exc))
    wanted = str(data.get("signature"))
    for _ in range(CONFIRM):
        judged = replay_client(data, client, timeout)
        seen = describe(judged.observed)
        if judged.failed and same_failure(wanted, judged.signature):
            return Step(version, "failing", judged.signature, seen)
        if judged.failed:
            return Step(version, "other", judged.signature, seen)
    return Step(version, "fixed", None, seen)


def history(versions: list[str], replay: Callable[[str], Step]) -> list[Step]:
    """``replay`` (a version's step: :func:`replay_at`) on ``versions`` (oldest first): every
    one of a short range, a binary search of a long one. The steps replayed, oldest first."""
    done: dict[str, Step] = {}

    def at(index: int) -> Step:
        version = versions[index]
        if version not in done:
            done[version] = replay(version)
        return done[version]

    if len(versions) <= EVERY:
        for index in range(len(versions)):
            at(index)
    else:
        low, high = 0, len(versions) - 1
        while low < high and at(low).verdict == "unbuildable":
            low += 1
        while high > low and at(high).verdict == "unbuildable":
            high -= 1
        first = at(low).verdict
        if at(high).verdict != first:
            # invariant: versions[low] reads as the oldest did, versions[high] does not
            while high - low > 1:
                middle = (low + high) // 2
                probe = middle
                while probe < high and at(probe).verdict == "unbuildable":
                    probe += 1
                if probe == high:
                    break  # nothing buildable between: the change is at high, or hidden there
                if at(probe).verdict == first:
                    low = probe
                else:
                    high = probe
    order = {v: i for i, v in enumerate(versions)}
    return sorted(done.values(), key=lambda s: order[s.version])


def first_change(steps: list[Step]) -> Step | None:
    """The first step whose verdict differs from the oldest buildable one's, if any."""
    built = [s for s in steps if s.verdict != "unbuildable"]
    for step in built[1:]:
        if (step.verdict, step.signature) != (built[0].verdict, built[0].signature):
            return step
    return None
