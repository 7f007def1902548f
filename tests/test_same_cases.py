"""The cases each family builds from fixed blobs, pinned: a refactoring of the layers must leave
every case (its bytes, its required reaction, where the driver runs it, what it creates) as it
was. The digests were taken from the code before the families became typed objects; a change
that means to change cases updates them, and says so. (0-9-1, 0-9 and 0-8 changed when a blob
came to be read by parts and arms, with valid traffic and malformed cases in state: 512 bytes;
and again when the operators on the connection itself joined the end of the catalogue, which
changed the operator some blobs pick.)"""

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
    "0-9-1": "a47558f48eb953fee50f5ff215b859dde07f7c30e9a784cb57f1de5ffb56e012",
    "0-9": "233654edcf6d538e4e822c274f464842769add5d6d01e11e8f0f13599655def9",
    "0-8": "7e26a1d8105f28c6f1ac6e45ba4940b9ffc9452cfe4eee2d471e845ad676c634",
    "1.0": "6ca732db730b3dc0375f577f6450d9e409375598628895756c8c98706f226d91",
    "0-10": "6668f901a9e36fe300a01b6fee01ec616691d3c83100ad257001c2e5965ad16d",
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
