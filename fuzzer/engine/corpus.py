"""The seeds a campaign keeps (:class:`Corpus`): blobs whose cases reached something new, and the
AFL-style operators that make new blobs of them (:func:`mutate`, :func:`splice`).

Every case is read from a blob of the family's size (:mod:`amqpfuzz.strategies.arms`): its
first bytes choose the part and the arm (a method, a traffic shape, an operator), the rest is
read in order. So a seed mutated past its head is the same arm with its later choices changed,
keeping its first steps (a walk's queue declared with the same arguments, then something else
done with it); spliced with another seed, the first's beginning with the other's end. A blob is
still a blob: the case it reads as is replayed from its reproducer and shrunk by Hypothesis as
any other.

A seed's *energy* (how often it is picked) is what it brought, with what its mutants brought
since, worn down by how often it was picked (AFL's and HypoFuzz's corpus scheduling, in small).
A corpus is kept on disk as one JSON file per seed, named by its digest, so that runs and
workers add to one directory without meeting, and a later run starts from it (``--corpus``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from amqpfuzz.spec import AmqpfuzzError

__all__ = ["Corpus", "CorpusError", "Seed", "digest", "mutate", "splice"]

HEAD = 3  # the bytes that choose a blob's part and arm
_INTERESTING = (0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF)


class CorpusError(AmqpfuzzError):
    """A corpus directory or seed file that cannot be read: says which and why."""


def digest(blob: bytes) -> str:
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


@dataclass
class Seed:
    """A blob kept for what its case reached: ``gain`` (lines of the broker's code, or new
    reactions where the code is not measured), ``arm`` the arm it reads as, ``found_s`` when."""

    blob: bytes
    arm: str
    gain: float
    found_s: float = 0.0
    picks: int = 0
    children: float = 0.0  # what its mutants brought since
    loaded: bool = False  # from a corpus on disk (replayed as it is first)
    used: int = 0  # the bytes its case reads (0: not known): mutations go there

    @property
    def name(self) -> str:
        return digest(self.blob)

    @property
    def energy(self) -> float:
        return (1.0 + self.gain + 2.0 * self.children) / math.sqrt(1.0 + self.picks)

    def as_json(self) -> dict[str, object]:
        data = asdict(self)
        data["blob"] = self.blob.hex()
        del data["loaded"]
        return data


class Corpus:
    """At most ``limit`` seeds; past it, the one of least energy goes."""

    def __init__(self, limit: int = 512) -> None:
        self.limit = limit
        self.seeds: dict[str, Seed] = {}
        self.added = 0  # seeds kept in all (some may have gone since)

    def __len__(self) -> int:
        return len(self.seeds)

    def __iter__(self) -> Iterator[Seed]:
        return iter(self.seeds.values())

    def add(self, seed: Seed) -> bool:
        """Keep ``seed`` (one of the same blob: what it brought is added); whether it is new."""
        known = self.seeds.get(seed.name)
        if known is not None:
            known.gain += seed.gain
            return False
        self.seeds[seed.name] = seed
        self.added += 1
        if len(self.seeds) > self.limit:
            weakest = min(self.seeds.values(), key=lambda s: s.energy)
            del self.seeds[weakest.name]
        return True

    def pick(self, rnd: random.Random, arm: str | None = None) -> Seed:
        """A seed by energy (of ``arm`` where it has one); counted as picked."""
        pool = [s for s in self.seeds.values() if arm is None or s.arm == arm]
        pool = pool or list(self.seeds.values())
        seed = rnd.choices(pool, weights=[s.energy for s in pool])[0]
        seed.picks += 1
        return seed

    def credit(self, name: str, gain: float) -> None:
        """What a mutant of seed ``name`` brought counts for its parent too."""
        seed = self.seeds.get(name)
        if seed is not None:
            seed.children += gain

    # -- on disk -----------------------------------------------------------------------------

    def save(self, directory: Path) -> int:
        """Write every seed not yet there (``<digest>.json``, atomically); how many are there."""
        directory.mkdir(parents=True, exist_ok=True)
        for seed in self.seeds.values():
            path = directory / f"{seed.name}.json"
            if path.exists():
                continue
            part = directory / f".{seed.name}.{uuid.uuid4().hex[:8]}.part"
            part.write_text(json.dumps(seed.as_json()) + "\n")
            os.replace(part, path)
        return sum(1 for _ in directory.glob("*.json"))

    @staticmethod
    def load(directory: Path, size: int) -> list[Seed]:
        """The seeds in ``directory`` (CorpusError for one that is not a seed of ``size``
        bytes), in the order of their names."""
        if not directory.is_dir():
            raise CorpusError(f"{directory}: no such corpus directory")
        return [_read(path, size) for path in sorted(directory.glob("*.json"))]


def _read(path: Path, size: int) -> Seed:
    try:
        data = json.loads(path.read_text())
        blob = bytes.fromhex(data["blob"])
        seed = Seed(blob, str(data["arm"]), float(data["gain"]), float(data.get("found_s", 0)))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorpusError(f"{path}: not a seed file ({exc})") from None
    if len(blob) != size:
        raise CorpusError(f"{path}: a seed of {len(blob)} bytes, where cases read {size}")
    seed.loaded = True
    return seed


# -- new blobs of old ones ---------------------------------------------------------------------


def mutate(blob: bytes, rnd: random.Random, head: int = HEAD, used: int = 0) -> bytes:
    """AFL's havoc, in small: a stack of one to eight changes, each a bit flipped, a byte set
    to a random or an interesting value, a small number added, a block zeroed (zeros read as
    the simplest choice: a shorter walk, an empty field), overwritten with random bytes or
    copied from elsewhere in the blob. The head (part and arm) stays as it was but one time in
    sixteen, so that a seed's arm is mostly kept; the changes fall where the case reads
    (``used`` bytes, and a few past them; all of the blob where it is not known). A case reads
    its blob in order, so a change keeps what came before it (a walk's first steps) and makes
    the rest anew."""
    data = bytearray(blob)
    size = len(data)
    low = 0 if rnd.randrange(16) == 0 or size <= head else head
    high = min(size, used + 8) if used > low else size
    if high <= low:
        return bytes(data)
    for _ in range(1 << rnd.randrange(4)):
        at = rnd.randrange(low, high)
        how = rnd.randrange(7)
        if how == 0:
            data[at] ^= 1 << rnd.randrange(8)
        elif how == 1:
            data[at] = rnd.randrange(256)
        elif how == 2:
            data[at] = rnd.choice(_INTERESTING)
        elif how == 3:
            data[at] = (data[at] + rnd.choice((-3, -2, -1, 1, 2, 3))) % 256
        else:
            length = min(size - at, 1 << rnd.randrange(1, 6))
            if how == 4:
                data[at : at + length] = bytes(length)
            elif how == 5:
                data[at : at + length] = rnd.randbytes(length)
            else:
                start = rnd.randrange(low, size - length + 1)
                data[at : at + length] = data[start : start + length]
    return bytes(data)


def splice(first: bytes, second: bytes, rnd: random.Random, head: int = HEAD) -> bytes:
    """``first``'s beginning (its head, then some) and ``second``'s end, as long as ``first``."""
    size = len(first)
    if size <= head + 1:
        return first
    cut = rnd.randrange(head + 1, size)
    return first[:cut] + second[cut:size].ljust(size - cut, b"\x00")
