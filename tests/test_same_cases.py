"""The cases each family builds from fixed blobs, pinned: a refactoring of the layers must leave
every case (its bytes, its required reaction, where the driver runs it, what it creates) as it
was. The digests were taken from the code before the families became typed objects; a change
that means to change cases updates them, and says so. (0-9-1, 0-9 and 0-8 changed when a blob
came to be read by parts and arms, with valid traffic and malformed cases in state: 512 bytes;
and again when the operators on the connection itself joined the end of the catalogue, which
changed the operator some blobs pick; and every family's when a reaction's codes came to say
the scope each closes, in the JSON a reproducer keeps: the digests without it were unchanged;
and 1.0's when the operators whose wrong the transport names no reaction to came to accept any
close, ``any_close`` in the JSON where it is set; and 0-9-1's, 0-9's, 0-8's and 0-10's when a
``deep-table`` or ``frame-reserved`` case the broker accepts came to allow its method's own
refusals, ``tolerated`` in the JSON: the digests with those emptied were unchanged.)"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from amqpfuzz.fuzzer.protocols.families import driver_for
from amqpfuzz.strategies import case_builder

BLOBS = {"0-9-1": 512, "0-9": 512, "0-8": 512, "1.0": 512, "0-10": 512}
PREFIX = "amqpfuzz-golden-"
DIGESTS = {
    "0-9-1": "54577611978d71671eaeabf038a072009cb5175c686c6481e4b6fe3c6cda24c4",
    "0-9": "a7651d6917594778bb07bababb9013c17983b131641ab963011f16ddc60ff820",
    "0-8": "10aedf59cbb863fdbea511cda536790bc1fcaa3ce5f2b4aea7b11f663426258d",
    "1.0": "691975b64fd9574e3ea9ec792f359ac6658c0778a2a801acdefc7a07320c1eeb",
    "0-10": "47e5ca29df74e92e875ece1c310c10cd6ff9639007d484a187a97a5620d1f43f",
}


def described(protocol: str, count: int = 400) -> list[dict[str, object]]:
    build = case_builder(protocol=protocol, prefix=PREFIX)
    rnd = random.Random(f"golden-{protocol}")
    driver = driver_for(protocol)
    out = []
    for _ in range(count):
        case = build(rnd.randbytes(BLOBS[protocol]))
        out.append(
            {
                "repr": repr(case),
                "bytes": case.render(3).hex(),
                "expected": case.expected.as_dict(),
                "spec_ref": case.spec_ref,
                "operator": case.operator,
                "level": case.level,
                "channel": case.placement,
                "own": driver.needs_own_connection(case),
                "own_channel": driver.own_channel(case),
                "stage": driver.stage(case),
                "probes": driver.probes(case),
                "echoes": driver.echoes(case),
                "created": sorted(map(repr, driver.created(case, [], PREFIX))),
                "missing": list(driver.missing_responses(case, [])),
            }
        )
    return out


@pytest.mark.parametrize("protocol", list(DIGESTS))
def test_the_cases_of_fixed_blobs_are_as_they_were(protocol: str) -> None:
    found = described(protocol)
    digest = hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()
    assert digest == DIGESTS[protocol]
