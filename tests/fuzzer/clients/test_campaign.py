"""Client campaigns end to end: the serving peer against the real pika through its shim, and
the oracles that watch a shim (crash, hang) against small misbehaving shims of our own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.clients.campaign import ClientSettings, run_clients, serving_of
from amqpfuzz.fuzzer.clients.targets import ClientTarget
from amqpfuzz.fuzzer.records import load_reproducer, read_records

PIKA_SHIM = Path(__file__).parents[3] / "fuzzer" / "clients" / "shims" / "pika_shim.py"
AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"
PIKA = ClientTarget("pika", (sys.executable, str(PIKA_SHIM), "{url}"), "pika", None, "Python")

pytestmark = pytest.mark.slow


def _records(out: Path) -> list[dict[str, object]]:
    return [r for f in sorted(out.glob("records-*.jsonl")) for r in read_records(f)]


def test_pika_takes_valid_scripts_and_every_case_is_a_record(tmp_path: Path) -> None:
    settings = ClientSettings(
        shrink=False, max_cases=8, duration=60, seed=1, valid_share=1.0, out=tmp_path
    )
    (outcome,) = run_clients([PIKA], settings)
    assert outcome.cases == 8
    assert not outcome.failures, outcome.messages
    records = _records(tmp_path)
    assert len(records) == 8
    assert {r["kind"] for r in records} == {"client"}
    assert {r["verdict"] for r in records} == {"pass"}
    assert records[0]["target"]["label"] == "pika"  # type: ignore[index]


def test_a_broken_frame_end_may_be_refused_by_closing_the_socket_without_a_word(
    tmp_path: Path,
) -> None:
    settings = ClientSettings(
        shrink=False, max_cases=3, duration=60, seed=1, valid_share=0.0,
        operators=("frame-end",), out=tmp_path, profile="none",
    )  # fmt: skip
    (outcome,) = run_clients([PIKA], settings)
    # 0-9-1 section 4.2.3: a frame-end that is not 0xCE is "a fatal protocol error", the
    # connection closed "without sending any further data on it": pika's dropped socket
    assert outcome.cases == 3 and not outcome.failures, outcome.messages
    assert {r["verdict"] for r in _records(tmp_path)} == {"pass"}


HEARTBEAT = "reaction:pika:heartbeat-channel:connection-close/501|503->socket-close"


def test_a_heartbeat_on_a_channel_must_be_refused_with_the_code_the_sections_name(
    tmp_path: Path,
) -> None:
    settings = ClientSettings(
        shrink=False,
        max_cases=3,
        duration=60,
        seed=1,
        valid_share=0.0,
        operators=("heartbeat-channel",),
        out=tmp_path,
        profile="none",  # not pika's bundled one, which documents this deviation
    )
    (outcome,) = run_clients([PIKA], settings)
    # pika drops the socket where the specification wants connection.close with frame-error
    # (4.2.7) or command-invalid (4.2.3)
    assert list(outcome.failures) == [HEARTBEAT]
    reproducer = outcome.reproducers[HEARTBEAT]
    assert '"operator": "heartbeat-channel"' in reproducer.read_text()
    # served again to the client it failed: still failing (status 1); to another, another
    again = _replay(reproducer)
    assert again.returncode == 1, again.stderr
    assert "still failing: reaction:pika:heartbeat-channel:" in again.stdout


def test_a_failing_script_is_shrunk_before_its_reproducer_is_written(tmp_path: Path) -> None:
    settings = ClientSettings(
        max_cases=1, duration=60, seed=3, valid_share=0.0, operators=("heartbeat-channel",),
        out=tmp_path, profile="none", shrink_budget=8.0,
    )  # fmt: skip
    (outcome,) = run_clients([PIKA], settings)
    ((signature, path),) = outcome.reproducers.items()
    found = bytes.fromhex(_records(tmp_path)[0]["blob"])  # type: ignore[arg-type]
    shrunk = bytes.fromhex(json.loads(path.read_text())["blob"])
    assert shrunk != found and shrunk.count(0) > found.count(0)
    again = _replay(path)  # the shrunk script fails as the one found did
    assert again.returncode == 1 and f"still failing: {signature}" in again.stdout


def test_pikas_bundled_profile_documents_its_socket_drop(tmp_path: Path) -> None:
    settings = ClientSettings(
        shrink=False, max_cases=2, duration=60, seed=1, valid_share=0.0,
        operators=("heartbeat-channel",), out=tmp_path,
    )  # fmt: skip
    (outcome,) = run_clients([PIKA], settings)
    assert not outcome.failures
    assert list(outcome.known) == [HEARTBEAT]
    assert {r["profile"] for r in _records(tmp_path)} == {"pika"}


def test_a_profile_makes_a_documented_deviation_known_not_a_failure(tmp_path: Path) -> None:
    profile = tmp_path / "lenient.toml"
    profile.write_text(
        'product = "pika"\n[[deviation]]\n'
        'signature = "reaction:pika:heartbeat-channel:*->socket-close"\n'
        'reason = "pika drops the socket on a frame it refuses, with no close code"\n'
    )
    settings = ClientSettings(
        shrink=False,
        max_cases=2, duration=60, seed=1, valid_share=0.0, operators=("heartbeat-channel",),
        out=tmp_path / "out", profile=str(profile),
    )  # fmt: skip
    (outcome,) = run_clients([PIKA], settings)
    assert not outcome.failures
    assert dict(outcome.known) == {HEARTBEAT: 2}
    records = _records(tmp_path / "out")
    assert {r["verdict"] for r in records} == {"xfail"}
    assert records[0]["profile"] == "lenient" and "no close code" in str(records[0]["deviation"])


CRASHING = textwrap.dedent(
    """
    import socket, sys, json
    host, port = sys.argv[1].rsplit("@", 1)[1].rstrip("/").split(":")
    print(json.dumps({"event": "connecting", "case": 0}), flush=True)
    s = socket.create_connection((host, int(port)))
    s.sendall(b"AMQP\\x00\\x00\\x09\\x01")
    s.recv(1)
    raise KeyError("the parser fell over")
    """
)

STALLING = textwrap.dedent(
    """
    import socket, sys, time
    host, port = sys.argv[1].rsplit("@", 1)[1].rstrip("/").split(":")
    s = socket.create_connection((host, int(port)))
    s.sendall(b"AMQP\\x00\\x00\\x09\\x01")
    time.sleep(3600)
    """
)


def _shim(tmp_path: Path, name: str, source: str) -> ClientTarget:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return ClientTarget(name, (sys.executable, str(path)), name, "0", "Python")


def test_a_shim_that_dies_is_a_crash_and_is_started_again(tmp_path: Path) -> None:
    shim = _shim(tmp_path, "crashing", CRASHING)
    settings = ClientSettings(
        shrink=False,
        max_cases=2,
        duration=60,
        seed=1,
        valid_share=1.0,
        timeout=2.0,
        out=tmp_path / "out",
    )
    (outcome,) = run_clients([shim], settings)
    assert outcome.cases == 2
    assert outcome.restarts >= 2
    assert list(outcome.failures) == [
        "crash:crashing:valid:reply->KeyError in shim crashing.py:<module>"
    ]
    # its reproducer names the catalogue it was drawn from: a catalogue that grows later
    # leaves the blob reading the same script
    (path,) = outcome.reproducers.values()
    catalogue = serving_of("0-9-1").operators("0-9-1")
    assert load_reproducer(path)["operators"] == list(catalogue)


def test_a_crash_reproducer_served_to_a_sound_client_is_fixed(tmp_path: Path) -> None:
    shim = _shim(tmp_path, "crashing", CRASHING)
    settings = ClientSettings(
        shrink=False, max_cases=1, duration=60, seed=1, valid_share=1.0, out=tmp_path
    )
    (outcome,) = run_clients([shim], settings)
    (reproducer,) = outcome.reproducers.values()
    fixed = _replay(reproducer, "--client-command", f"{sys.executable} {PIKA_SHIM} {{url}}")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed: python now reacts as the specification requires" in fixed.stdout


def test_a_client_reproducer_that_is_not_one_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 1, "kind": "client", "blob": "zz"}')
    run = _replay(bad)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        f"amqpfuzz: error: {bad}: a client reproducer needs its protocol, client, blob and "
        "valid_share"
    )


def _replay(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AMQPFUZZ, "replay", str(path), *args], capture_output=True, text=True, timeout=60
    )


def test_a_shim_that_stops_answering_is_a_hang(tmp_path: Path) -> None:
    shim = _shim(tmp_path, "stalling", STALLING)
    settings = ClientSettings(
        shrink=False,
        max_cases=1,
        duration=60,
        seed=1,
        valid_share=1.0,
        timeout=1.0,
        out=tmp_path / "out",
    )
    (outcome,) = run_clients([shim], settings)
    assert [s.split(":")[0] for s in outcome.failures] == ["hang"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--client", "nosuch"], "--client nosuch: not a bundled client"),
        (["--client", "pika", "--url", "amqp://localhost:1"], "--client plays the broker itself"),
        (["--client-command", ""], "--client-command is empty"),
        (["--client", "pika", "--operators", "bogus"], "operators=['bogus']"),
        (["--client", "pika", "--protocol", "0-10"], "AMQP 0-10: amqpfuzz cannot play its server"),
        (["--client-command", "/nonexistent/shim {url}"], "cannot start the client /nonexistent"),
        (["--client-command", "/bin/true"], "the client true ends before it connects (status 0)"),
        (["--client", "pika", "--profile", "nosuch"], "no client profile 'nosuch'"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, args: list[str], says: str) -> None:
    run = subprocess.run(
        [AMQPFUZZ, "run", *args, "--duration", "5", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("amqpfuzz: error: ") and says in line


SLEEPING = textwrap.dedent(
    """
    import os, sys, time
    open(sys.argv[2], "w").write(str(os.getpid()))
    time.sleep(3600)
    """
)


def test_a_shim_ends_with_the_campaign_that_started_it_even_killed(tmp_path: Path) -> None:
    shim, pidfile = tmp_path / "sleeping.py", tmp_path / "pid"
    shim.write_text(SLEEPING)
    command = f"{sys.executable} {shim} {{url}} {pidfile}"
    run = subprocess.Popen(
        [AMQPFUZZ, "run", "--client-command", command, "--duration", "60", "--out", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.1)
        pid = int(pidfile.read_text())
        os.kill(pid, 0)  # the shim is running
    finally:
        run.kill()  # SIGKILL: no cleanup of its own
        run.wait()
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, f"shim {pid} outlived its campaign"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended
        return stat.read().split(") ", 1)[1][0] != "Z"


def test_several_clients_get_the_same_scripts_and_their_differences_are_recorded(
    tmp_path: Path,
) -> None:
    crashing = _shim(tmp_path, "crashing", CRASHING)
    settings = ClientSettings(
        shrink=False, max_cases=2, duration=60, seed=1, valid_share=1.0, out=tmp_path
    )
    result = run_clients([PIKA, crashing], settings)
    assert result.cases == 2 and [o.cases for o in result] == [2, 2]
    assert dict(result.divergences) == {"differential:valid:crashing=crash,pika=as-required": 2}
    records = _records(tmp_path)
    differential = [r for r in records if r["kind"] == "differential"]
    assert len(differential) == 2
    assert differential[0]["observed"] == {
        "reactions": {"pika": "as-required", "crashing": "crash"}
    }
    # the same script went to both: their client records carry the same blobs, in order
    blobs = {
        name: [r["blob"] for r in records if r["kind"] == "client" and r["target"]["label"] == name]  # type: ignore[index]
        for name in ("pika", "crashing")
    }
    assert blobs["pika"] == blobs["crashing"] == [r["blob"] for r in differential]


def test_a_known_deviation_is_not_announced_as_a_new_failure(tmp_path: Path) -> None:
    done = subprocess.run(
        [AMQPFUZZ, "run", "--client", "pika", "--operators", "heartbeat-channel",
         "--valid-share", "0", "--duration", "4", "--seed", "1", "--no-shrink",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200"},  # a signature's line unwrapped
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    # pika drops the socket on a heartbeat on a channel: its profile documents it
    assert f"known deviation {HEARTBEAT}" in done.stdout, done.stdout
    assert f"new failure {HEARTBEAT}" not in done.stdout
