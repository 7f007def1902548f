"""AMQP 0-10 from the command line against the real brokers here, neither of which speaks it:
a campaign ends in one clear line (which header they answered with, and that they closed the
socket), exit status 2, nothing half written; the scenario run judges the negotiation file on
both and skips the rest as "unsupported protocol"."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers import Broker
from amqpfuzz.fuzzer.records import read_records
from amqpfuzz.strategies import operators

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"


def amqpfuzz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AMQPFUZZ, *args], capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("kind", ["rabbitmq", "garagemq"])
def test_a_0_10_run_on_a_broker_that_does_not_speak_it(
    kind: str, rabbitmq: Broker, garagemq: Broker, tmp_path: Path
) -> None:
    broker = rabbitmq if kind == "rabbitmq" else garagemq
    out = tmp_path / "out"
    done = amqpfuzz("run", "--protocol", "0-10", "--url", broker.url, "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("amqpfuzz: error: ") and "Traceback" not in done.stderr
    assert line.endswith(
        "the broker does not speak AMQP 0-10: it answered the 0-10 protocol header with "
        "AMQP 0 0 9 1 and closed the socket"
    )
    assert "guest:guest" not in line
    assert not list(out.glob("*.part")) and not list(out.glob("records-*"))


def test_0_10_scenarios_judge_the_negotiation_and_skip_the_rest(
    rabbitmq: Broker, garagemq: Broker, tmp_path: Path
) -> None:
    done = amqpfuzz(
        "scenarios", "--protocol", "0-10", "--url", rabbitmq.url, "--url", garagemq.url,
        "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [r for path in tmp_path.glob("records-*.jsonl") for r in read_records(path)]
    verdicts = {(r["target"]["url"], r["spec_ref"]): r for r in records}
    assert len(verdicts) == 6  # three files on two targets
    for url in {str(r["target"]["url"]) for r in records}:
        negotiation = verdicts[(url, "connection.start/protocol-name")]
        assert negotiation["verdict"] == "pass"
        assert negotiation["observed"]["outcome"] == "socket-close"
        priorities = verdicts[(url, "message/priority-levels")]
        assert priorities["verdict"] == "skip"
        assert str(priorities["reason"]).startswith("unsupported protocol: ")
        assert verdicts[(url, "basic/priority-levels")]["verdict"] == "skip"


def test_a_0_10_campaign_on_a_peer_that_speaks_it(tmp_path: Path) -> None:
    """The scripted 0-10 peer in its sessions mode (a sloppy server: it reads no command's
    arguments): a campaign of a few operators finds what it lets through, each failure with a
    reproducer that replays while the peer is up; records, totals and the report's inputs are
    0-10's; what it refuses as the XML says passes."""
    from tests.helpers.peer010 import Script, scripted

    out = tmp_path / "out"
    script = Script(sessions=True)
    with scripted(script) as port:
        url = f"amqp://guest:guest@127.0.0.1:{port}/"
        ops = "packing-flags-lie,frame-size-small,command-before-attach"
        done = amqpfuzz(
            "run", "--protocol", "0-10", "--url", url, "--out", str(out), "--duration", "3",
            "--operators", ops, "--valid-share", "0", "--seed", "7",
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        records = [r for path in out.glob("records-*.jsonl") for r in read_records(path)]
        assert records and {r["target"]["protocol"] for r in records} == {"0-10"}
        by_operator: dict[str, set[str]] = {}
        for record in records:
            by_operator.setdefault(str(record["mutation"]), set()).add(str(record["verdict"]))
        assert by_operator["packing-flags-lie"] == {"fail"}
        assert by_operator["frame-size-small"] == {"pass"}
        assert by_operator["command-before-attach"] == {"pass"}
        failed = [r for r in records if r["verdict"] == "fail"]
        assert {r["failure"]["signature"] for r in failed} == {
            "reaction:-:packing-flags-lie:execution-close/503->reply"
        }
        reproducers = sorted({str(r["reproducer"]) for r in failed if r.get("reproducer")})
        assert reproducers
        replayed = amqpfuzz("replay", reproducers[0])
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    (totals,) = [json.loads(p.read_text()) for p in out.glob("run-*.json")]
    assert totals["protocol"] == "0-10"
    assert totals["totals"]["mutation_operators"] == len(operators("0-10"))


def test_0_10_fuzz_items_in_the_pytest_plugin(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The plugin's 0-10 fuzz items against the scripted peer's sessions mode: a method item
    and an operator item the peer answers as the XML says pass, an operator item whose case it
    lets through fails with its signature; serial and under xdist alike."""
    from tests.helpers.peer010 import Script, scripted

    pytester.makeconftest(
        "from hypothesis import settings\n"
        "settings.register_profile('tiny', max_examples=4, database=None)\n"
    )
    with scripted(Script(sessions=True)) as port:
        args = [
            "--amqp-url", f"amqp://guest:guest@127.0.0.1:{port}/", "--amqp-protocol", "0-10",
            "--amqp-fuzz", "--amqp-seed", "7", "--hypothesis-profile", "tiny",
            "-p", "no:cacheprovider", "--amqp-profile", "none",
            "-k", "frame-size-small or packing-flags-lie or (method and execution.sync)",
        ]  # fmt: skip
        runs = {}
        for label, extra in (("serial", []), ("xdist", ["-n", "2"])):
            xml = tmp_path / f"{label}.xml"
            pytester.runpytest_subprocess(*args, *extra, f"--junitxml={xml}")
            runs[label] = {
                f"{case.get('classname')}::{case.get('name')}": (
                    "failed" if any(c.tag in ("failure", "error") for c in case) else "passed"
                )
                for case in ET.parse(xml).getroot().iter("testcase")
            }
    assert runs["serial"] == runs["xdist"]
    assert runs["serial"] == {
        "amqpfuzz.fuzz.method::execution.sync": "passed",
        "amqpfuzz.fuzz.mutation::frame-size-small": "passed",
        "amqpfuzz.fuzz.mutation::packing-flags-lie": "failed",
    }
