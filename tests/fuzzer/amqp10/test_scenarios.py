"""``amqpfuzz scenarios --protocol 1.0`` on both real 1.0 peers: each MUST sentence's file
played, the deviations each peer's profile records reported as xfail, the rest passing; with
no profile, the deviations fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.records import read_records
from amqpfuzz.scenarios import load_all

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
# what each peer does with a few sentences (the rest: the profiles, and the test below)
EXPECTED = {
    "rabbitmq": {
        "message-format#1": "pass",  # the bare message comes back octet for octet
        "message-format/message-annotations#1": "pass",
        "delivery-state/released#1": "pass",
        "addressing/source/address#2": "xfail",  # no dynamic sources: the session ends
        "transport:performatives/begin/remote-channel#2": "pass",
        "transport:performatives/attach/handle#2": "xfail",  # the socket is reset
        "transport:performatives/open/channel-max#2": "xfail",  # channel 65535 not refused
        "transport:links#19": "xfail",  # a drain on an empty queue: internal-error
    },
    "qpid-proton": {
        "message-format#1": "xfail",  # application-properties re-encoded as map32
        "message-format/message-annotations#1": "pass",
        "delivery-state/released#1": "xfail",  # a released message is dropped
        "addressing/source/address#2": "pass",
        "transport:performatives/begin/remote-channel#2": "pass",
        "transport:performatives/open/channel-max#2": "pass",
        "transport:sessions#2": "xfail",  # the whole connection is closed instead
    },
}


def verdicts(out: Path) -> dict[str, str]:
    records = [r for path in out.glob("records-*.jsonl") for r in read_records(path)]
    return {str(r["spec_ref"]): str(r["verdict"]) for r in records if r["kind"] == "scenario"}


@pytest.mark.parametrize("kind", ["rabbitmq", "qpid-proton"])
def test_the_1_0_sentences_on_a_peer(kind: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "scenarios", "--protocol", "1.0", "--broker", kind, "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    found = verdicts(tmp_path)
    # the messaging part's sentences but two a client's files show, and 11 of the transport's
    # (the client files are played by amqpfuzz scenarios --client)
    assert len(found) == 37 + 11
    assert not any(s.for_client and s.spec_ref in found for s in load_all("1.0"))
    assert {ref: found[ref] for ref in EXPECTED[kind]} == EXPECTED[kind]
    assert sum(v == "skip" for v in found.values()) == 24  # not runnable, each with its reason
    assert set(found.values()) <= {"pass", "xfail", "skip"}


def test_without_the_profile_the_deviations_fail(tmp_path: Path) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "scenarios", "--protocol", "1.0", "--broker", "qpid-proton",
         "--profile", "none", "-k", "message-format or released", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    found = verdicts(tmp_path)
    assert found["message-format#1"] == "fail" and found["delivery-state/released#1"] == "fail"
    assert "1.0/message-format.1.yaml line" in done.stdout
