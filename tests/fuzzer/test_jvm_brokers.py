"""The JVM brokers from Maven Central, Qpid Broker-J and ActiveMQ Artemis, as throwaway brokers
and as targets: each protocol they speak, end to end, through the CLI a user runs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pika
import pytest
from proton import Message
from proton.utils import BlockingConnection

from amqpfuzz.fuzzer.brokers import Broker
from amqpfuzz.fuzzer.brokers.jvm import JvmBroker, cache_directory
from amqpfuzz.fuzzer.brokers.profiles import find_profile
from amqpfuzz.fuzzer.records import read_records

pytestmark = pytest.mark.slow  # every test here starts a JVM broker or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
CACHE = cache_directory().parent  # read before any test changes HOME


def amqpfuzz(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AMQPFUZZ, *args], capture_output=True, text=True, timeout=240, env=env)


def answer(port: int, header: bytes, size: int = 13) -> bytes:
    """The first bytes a broker sends back to a protocol header."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(header)
        sock.settimeout(10)
        got = b""
        while len(got) < size:
            more = sock.recv(size - len(got))
            if not more:
                break
            got += more
        return got


def test_broker_j_answers_every_version_of_the_seeds_in_that_version(broker_j: Broker) -> None:
    # a 0-8 family header gets connection.start (frame type 1 on channel 0, class 10 method 10)
    # naming the version asked for: 0-9 is spoken as 0-9 (RabbitMQ answers it as 0-9-1, whose
    # start also says 0-9), and 0-8 as 0-8
    for header, version in [
        (b"AMQP\x00\x00\x09\x01", b"\x00\x09"),
        (b"AMQP\x01\x01\x00\x09", b"\x00\x09"),
        (b"AMQP\x01\x01\x08\x00", b"\x08\x00"),
    ]:
        got = answer(broker_j.port, header)
        assert got[:3] == b"\x01\x00\x00" and got[7:11] == b"\x00\x0a\x00\x0a", (header, got)
        assert got[11:13] == version, (header, got)
    # 0-10 and 1.0 (SASL first) echo the header
    for header in (b"AMQP\x01\x01\x00\x0a", b"AMQP\x03\x01\x00\x00"):
        assert answer(broker_j.port, header, 8) == header


def records_of(out: Path) -> list[dict[str, object]]:
    return [r for path in sorted(out.glob("records-*.jsonl")) for r in read_records(path)]


def covered(out: Path) -> dict[str, int]:
    """Lines covered per named set, from the run's summary record."""
    (run,) = out.glob("run-*.json")
    sets: dict[str, int] = {}
    for modules in json.loads(run.read_text())["coverage"].values():
        for module in modules:
            if module["set"]:
                sets[module["set"]] = sets.get(module["set"], 0) + module["covered"]
    return sets


def judged(out: Path, protocol: str) -> list[dict[str, object]]:
    """The run's fuzz cases, each judged on Broker-J in ``protocol``."""
    cases = [r for r in records_of(out) if r["kind"] == "fuzz"]
    targets = {(r["target"]["product"], r["target"]["protocol"]) for r in cases}  # type: ignore[index]
    assert targets == {("Apache Qpid Broker-J Core", protocol)}, targets
    return cases


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-8", "1.0"])
def test_a_campaign_runs_on_each_protocol_of_a_measured_broker_j(
    protocol: str, broker_j: Broker, tmp_path: Path
) -> None:
    """Cases of each protocol meet Broker-J itself (its product in every record), a --url
    broker whose JVM runs JaCoCo's agent: --coverage-agent and --coverage-jars measure the
    protocol's plugin from inside it (the agent instruments every plugin a plan names)."""
    assert isinstance(broker_j, JvmBroker) and broker_j.coverage_port is not None
    done = amqpfuzz(
        "run", "--url", broker_j.url, "--protocol", protocol, "--max-examples", "20",
        "--coverage-agent", f"127.0.0.1:{broker_j.coverage_port}",
        "--coverage-jars", str(broker_j.home / "lib"),
        "--seed", "7", "--confirm", "0", "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert len(judged(tmp_path, protocol)) >= 15, done.stdout
    assert "classes measured by JaCoCo's agent" in done.stdout, done.stdout
    plugin = "1.0" if protocol == "1.0" else "0-8/0-9/0-9-1"
    assert covered(tmp_path)[f"{plugin} (Broker-J)"] > 0


def test_a_jacoco_sample_keeps_what_it_found_before_and_adds_what_ran_since(
    broker_j: Broker,
) -> None:
    """The helper analyses again only the classes whose probes changed: a sample right after
    another still has every class and line of it (the broker's housekeeping may add a few),
    and one after a login has them all and more (those of the login)."""
    probe = broker_j.probe
    assert probe is not None
    first = probe.sample()
    again = probe.sample()
    assert first.modules and set(again.modules) >= set(first.modules)
    assert all(again.modules[m].lines >= seen.lines for m, seen in first.modules.items())
    connection = pika.BlockingConnection(pika.URLParameters(broker_j.url))
    connection.channel().queue_declare("", exclusive=True)
    connection.close()
    after = probe.sample()
    assert all(after.modules[m].lines >= seen.lines for m, seen in first.modules.items())
    lines = sum(len(seen.lines) for seen in after.modules.values())
    assert lines > sum(len(seen.lines) for seen in first.modules.values())


def test_a_0_10_campaign_runs_on_a_throwaway_broker_j_measured_by_jacoco(tmp_path: Path) -> None:
    """0-10 on a throwaway Broker-J of the run's own, its plugin measured by JaCoCo: a crash
    (its 0-10 plugin shuts the broker down on one frame) is restarted for the rest of the run;
    a crash in the first batch takes the batch's other cases along."""
    done = amqpfuzz(
        "run", "--broker", "qpid-broker-j", "--protocol", "0-10", "--max-examples", "20",
        "--duration", "10", "--seed", "7", "--confirm", "0", "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert len(judged(tmp_path, "0-10")) >= 1, done.stdout
    assert "classes measured by JaCoCo's agent" in done.stdout, done.stdout
    assert covered(tmp_path)["0-10 (Broker-J)"] > 0


def test_the_0_10_scenarios_play_against_broker_j(broker_j: Broker, tmp_path: Path) -> None:
    """On the session's Broker-J, as a user's broker at a URL: it answers 0-10 on its port."""
    done = amqpfuzz(
        "scenarios", "--protocol", "0-10", "--url", broker_j.url, "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = {r["spec_ref"]: r["verdict"] for r in records_of(tmp_path)}
    assert verdicts["message/priority-levels"] == "pass", verdicts
    assert verdicts["connection.start/protocol-name"] == "pass", verdicts


def test_the_plugin_plays_0_10_on_a_throwaway_broker_j(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--amqp-broker qpid-broker-j`` in a user's pytest run: 0-10 scenario items and fuzz
    items against a Broker-J the plugin starts (and ends), judged with its bundled profile."""
    pytester.makeconftest(
        "from hypothesis import settings\n"
        "settings.register_profile('tiny', max_examples=4, database=None)\n"
    )
    xml, results = tmp_path / "junit.xml", tmp_path / "results"
    # (pytester gives the run a HOME of its own: the cache make setup filled is named)
    monkeypatch.setenv("AMQPFUZZ_CACHE", str(CACHE))
    pytester.runpytest_subprocess(
        "--amqp-broker", "qpid-broker-j", "--amqp-protocol", "0-10", "--amqp-scenarios",
        "--amqp-fuzz", "--amqp-seed", "7", "--hypothesis-profile", "tiny", "-p", "no:cacheprovider",
        "--amqp-results", str(results), f"--junitxml={xml}",
        "-k", "(0-10 and (message/priority-levels or protocol-name)) or (method and execution.sync)",
    )  # fmt: skip
    outcomes = {
        f"{case.get('classname')}::{case.get('name')}": sorted(
            child.tag for child in case if child.tag != "properties"
        )
        for case in ET.parse(xml).getroot().iter("testcase")
    }
    assert outcomes == {
        "amqpfuzz.scenarios.0-10::message/priority-levels": [],
        "amqpfuzz.scenarios.0-10::connection.start/protocol-name": [],
        "amqpfuzz.fuzz.method::execution.sync": [],
        # (0-9-1's file on what a broker answers to each version's header: 0-10 is spoken)
        "amqpfuzz.scenarios.0-9-1::connection.start/protocol-name@protocol-header.0-10": [],
    }, outcomes
    fuzzed = [r for r in records_of(results) if r["kind"] == "fuzz"]
    targets = {(r["target"]["product"], r["target"]["protocol"]) for r in fuzzed}  # type: ignore[index]
    assert fuzzed and targets == {("Apache Qpid Broker-J Core", "0-10")}, targets


def test_the_plugin_plays_1_0_on_artemis_at_a_url(
    artemis: Broker, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """``--amqp-url`` naming an Artemis in a user's pytest run: 1.0 scenario items and fuzz
    items, judged with the profile the broker's own open frame selects (Artemis's)."""
    pytester.makeconftest(
        "from hypothesis import settings\n"
        "settings.register_profile('tiny', max_examples=4, database=None)\n"
    )
    xml, results = tmp_path / "junit.xml", tmp_path / "results"
    pytester.runpytest_subprocess(
        "--amqp-url", artemis.url, "--amqp-protocol", "1.0", "--amqp-scenarios", "--amqp-fuzz",
        "--amqp-seed", "7", "--hypothesis-profile", "tiny", "-p", "no:cacheprovider",
        "--amqp-results", str(results), f"--junitxml={xml}",
        "-k", "message-format/message-annotations or message-format/annotations or frame-size-small "
        "or handle-in-use",
    )  # fmt: skip
    outcomes = {
        f"{case.get('classname')}::{case.get('name')}": sorted(
            f"{child.tag} {child.get('type')}" for child in case if child.tag != "properties"
        )
        for case in ET.parse(xml).getroot().iter("testcase")
    }
    # (an xfail's reason is the profile's: messaging 3.2.10, and proton-j's NullPointerException)
    assert outcomes == {
        "amqpfuzz.scenarios.1.0::message-format/message-annotations#1": [],
        "amqpfuzz.scenarios.1.0::message-format/annotations#1": ["skipped pytest.xfail"],
        "amqpfuzz.fuzz.mutation::frame-size-small": [],
        "amqpfuzz.fuzz.mutation::handle-in-use": ["skipped pytest.xfail"],
    }, outcomes
    records = records_of(results)
    targets = {(r["target"]["product"], r["target"]["protocol"]) for r in records}  # type: ignore[index]
    assert records and targets == {("apache-activemq-artemis", "1.0")}, targets


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9"])
def test_broker_j_fails_only_the_scenarios_its_profile_explains(
    protocol: str, broker_j: Broker, tmp_path: Path
) -> None:
    """Every 0-9-1 and 0-9 scenario file on Broker-J: each failure is a deviation its bundled
    profile records (xfail, with the profile's reason), and each rule the profile names for the
    protocol failed as recorded (no stale entry). Those that restart the broker are skipped on a
    broker at a URL."""
    done = amqpfuzz(
        "scenarios", "--protocol", protocol, "--url", broker_j.url, "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = [r for r in records_of(tmp_path) if r["kind"] == "scenario"]
    xfail = {str(r["spec_ref"]) for r in records if r["verdict"] == "xfail"}
    assert {r["verdict"] for r in records} <= {"pass", "xfail", "skip"}, done.stdout
    profile = find_profile(None, "Apache Qpid Broker-J Core", "10.1.0", protocol)
    name = {"0-9-1": "qpid-broker-j-10.1", "0-9": "qpid-broker-j-10.1-amqp0-9"}[protocol]
    assert profile is not None and profile.name == name
    # (a whole class's entry, file.*, is for campaigns: no scenario file is of such a class;
    # a race's entry, sometimes, may pass)
    rules = [d for d in profile.deviations if d.rule and d.protocol == protocol]
    named = {d.rule for d in rules if "*" not in d.rule and not d.sometimes}
    races = {d.rule for d in rules if d.sometimes}
    assert named and named <= xfail <= named | races, (xfail ^ named, done.stdout)


def test_artemis_serves_a_real_1_0_client_over_plain_and_anonymous(artemis: Broker) -> None:
    for url in (artemis.url.rsplit("/", 1)[0], f"amqp://127.0.0.1:{artemis.port}"):
        connection = BlockingConnection(url, timeout=20)
        try:
            address = f"amqpfuzz-test-{os.getpid()}"
            receiver = connection.create_receiver(address)  # first: an address of no queue
            connection.create_sender(address).send(Message(body="hello"))  # drops a message
            assert receiver.receive(timeout=20).body == "hello"
            receiver.accept()
        finally:
            connection.close()


def test_a_campaign_runs_on_artemis_measured_by_jacoco(tmp_path: Path) -> None:
    """Malformed 1.0 cases only, on a throwaway Artemis whose AMQP module and proton-j JaCoCo
    measures. (A disposition whose last delivery id is 2^32-1, valid traffic's or malformed,
    spins one of Artemis's netty threads forever in proton-j's TransportSession.handleDisposition,
    every connection on that thread then waiting: a campaign of this seed draws none.)"""
    done = amqpfuzz(
        "run", "--broker", "artemis", "--protocol", "1.0", "--max-examples", "30",
        "--valid-share", "0", "--traffic-share", "0", "--seed", "7", "--confirm", "0",
        "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    cases = [r for r in records_of(tmp_path) if r["kind"] == "fuzz"]
    assert len(cases) >= 30 and all(
        r["target"]["product"] == "apache-activemq-artemis"  # type: ignore[index]
        for r in cases
    ), done.stdout
    sets = covered(tmp_path)
    assert sets["1.0 (Artemis)"] > 0 and sets["proton-j"] > 0, sets


def test_a_jvm_broker_missing_from_the_cache_is_one_line_and_status_2(tmp_path: Path) -> None:
    """And the start that failed leaves no directory behind."""
    env = {
        **os.environ,
        "AMQPFUZZ_CACHE": str(tmp_path / "empty"),
        "AMQPFUZZ_STATE": str(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()
    for kind in ("qpid-broker-j", "artemis"):
        done = amqpfuzz("broker", "start", kind, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "not installed" in lines[0] and "make setup" in lines[0], lines
    assert not list((tmp_path / "tmp").iterdir())


def test_a_broker_started_for_1_0_serves_a_link_to_a_node_it_did_not_have(tmp_path: Path) -> None:
    """``broker start qpid-broker-j --protocol 1.0``: configured as a 1.0 run's throwaway is
    (Broker-J creates the node a link names), so a 1.0 reproducer replays on it as found."""
    env = {**os.environ, "AMQPFUZZ_STATE": str(tmp_path)}
    refused = amqpfuzz("broker", "start", "artemis", "--protocol", "0-9-1", env=env)
    assert refused.returncode == 2 and "does not serve AMQP 0-9-1" in refused.stderr
    done = amqpfuzz("broker", "start", "qpid-broker-j", "--protocol", "1.0", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        url = done.stdout.split()[1]
        connection = BlockingConnection(url.rsplit("/", 1)[0], timeout=20)
        try:
            address = f"amqpfuzz-node-{os.getpid()}"
            connection.create_sender(address).send(Message(body="kept"))
            assert connection.create_receiver(address).receive(timeout=20).body == "kept"
        finally:
            connection.close()
    finally:
        stopped = amqpfuzz("broker", "stop", "--all", env=env)
        assert stopped.returncode == 0, stopped.stderr


def test_broker_install_only_checks_what_is_there() -> None:
    done = amqpfuzz("broker", "install")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("present in") == 3 and "fetched" not in done.stdout, done.stdout


def test_a_divergence_among_three_brokers_names_the_one_that_stands_alone(
    rabbitmq: Broker, fresh_garagemq: Broker, broker_j: Broker, tmp_path: Path
) -> None:
    """RabbitMQ, GarageMQ and Broker-J, all 0-9-1: where two agree and one does not, the
    record and its message name the one that stands alone. (A GarageMQ of the test's own: a
    shared one was found down by the next test once.)"""
    done = amqpfuzz(
        "run", "--url", rabbitmq.url, "--url", fresh_garagemq.url, "--url", broker_j.url,
        "--max-examples", "120", "--operators", "heartbeat-payload,unknown-frame-type",
        "--confirm", "1", "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    differential = [r for r in records_of(tmp_path) if r["kind"] == "differential"]
    alone = [r for r in differential if r.get("alone")]
    assert alone, [r["reactions"] for r in differential]
    for found in alone:
        reactions: dict[str, dict[str, object]] = found["reactions"]  # type: ignore[assignment]
        keys = {
            label: (r["outcome"], r["reply_code"], r["condition"]) for label, r in reactions.items()
        }
        lone = keys.pop(str(found["alone"]))
        assert len(set(keys.values())) == 1 and lone not in keys.values(), reactions
        assert f"{found['alone']} stands alone" in found["failure"]["message"]  # type: ignore[index]


def test_a_bad_coverage_agent_is_one_line_and_status_2(broker_j: Broker, tmp_path: Path) -> None:
    """An agent nobody serves, jars of no JVM broker amqpfuzz knows, and an agent without its
    jars are one line and status 2 (the agent measured is the campaign tests' above)."""
    assert isinstance(broker_j, JvmBroker) and broker_j.coverage_port is not None
    jars = str(broker_j.home / "lib")
    agent = f"127.0.0.1:{broker_j.coverage_port}"
    for args, said in [
        (["--coverage-agent", "127.0.0.1:1", "--coverage-jars", jars], "Connection refused"),
        (["--coverage-agent", agent, "--coverage-jars", str(tmp_path)], "neither"),
        (["--coverage-agent", agent], "needs --coverage-jars"),
    ]:
        bad = amqpfuzz("run", "--url", broker_j.url, *args, "--out", str(tmp_path / "bad"))
        lines = bad.stderr.strip().splitlines()
        assert bad.returncode == 2 and len(lines) == 1 and said in lines[0], bad.stderr
