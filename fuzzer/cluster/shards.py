"""A Spark campaign's shards: each target (a URL, or a kind of throwaway broker the shard starts
on its executor) times ``shards`` seeds, each with the whole duration. A shard is picklable and
holds everything its task needs; its prefix keeps what it creates apart from every other
shard's on a shared broker."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..brokers import parse_target
from ..engine.campaign import CampaignSettings

__all__ = ["Shard", "plan"]


@dataclass(frozen=True)
class Shard:
    """One task's campaign: on ``url`` (its password in memory only) or a throwaway broker of
    kind ``broker``, with ``settings`` (its seed among them); ``coverage``: a throwaway broker's
    own code measured, where amqpfuzz can measure it."""

    index: int
    run_id: str
    settings: CampaignSettings
    url: str | None = None
    broker: str | None = None
    profile: str | None = None
    allow_remote: bool = False
    coverage: bool = True

    @property
    def prefix(self) -> str:
        return f"amqpfuzz-{self.run_id[:8]}-s{self.index}-"

    @property
    def where(self) -> str:
        """The target as the user may read it: a throwaway kind, or the URL without its
        password."""
        if self.broker is not None:
            return f"throwaway {self.broker}"
        return parse_target(str(self.url)).safe_url


def plan(
    run_id: str,
    settings: CampaignSettings,
    *,
    urls: tuple[str, ...] = (),
    brokers: tuple[str, ...] = (),
    shards: int = 1,
    profile: str | None = None,
    allow_remote: bool = False,
    coverage: bool = True,
) -> list[Shard]:
    """Every URL and every broker kind, ``shards`` times each, seeds counting up from the
    run's; ``coverage``: each throwaway broker's code measured where it can be."""
    targets: list[tuple[str | None, str | None]] = [(u, None) for u in urls]
    targets += [(None, b) for b in brokers]
    found: list[Shard] = []
    base = settings.seed if settings.seed is not None else 0
    for url, broker in targets:
        for _ in range(shards):
            index = len(found)
            seeded = replace(settings, seed=base + index)
            found.append(Shard(index, run_id, seeded, url, broker, profile, allow_remote, coverage))
    return found
