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
    "0-9-1": "186321d07a2f3f782648ce2dc5f0d09a54791742e86f442e40959dfa67e79de6",
    "0-9": "96c4d46d891d31a0b9c397535a2d30d09110e8220fa04586069c96f21d24065a",
    "0-8": "6766d2ce763617ce3dac79143c7cb723591ae10a9b7dddd9ec4df5242d231c94",
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
