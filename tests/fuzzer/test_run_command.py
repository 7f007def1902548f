"""``amqpfuzz run``, ``replay`` and ``broker`` as a user runs them: real processes, real brokers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pika
import pytest

from amqpfuzz.fuzzer.brokers import RABBITMQCTL, Broker, RabbitMQ, throwaway
from amqpfuzz.fuzzer.records import read_records

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent)) or "amqpfuzz"


def amqpfuzz(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AMQPFUZZ, *args], capture_output=True, text=True, timeout=timeout)


def records_in(out: Path, pattern: str = "records-*.jsonl") -> list[dict[str, object]]:
    return [r for path in sorted(out.glob(pattern)) for r in read_records(path)]


def ctl(broker: RabbitMQ, *args: str) -> str:
    """rabbitmqctl's answer; the CLI (an Erlang node of its own) sometimes fails to reach a
    loaded node at once (status 70), so it gets three tries before the test fails."""
    for _ in range(3):
        done = subprocess.run(
            [RABBITMQCTL, "-n", broker.node, *args],
            env=broker.environment(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode == 0:
            return done.stdout
        time.sleep(2)
    raise AssertionError(f"rabbitmqctl {' '.join(args)}: status {done.returncode}: {done.stderr}")


# -- bad input: one line, exit status 2 -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "amqp://guest:guest@127.0.0.1:1/"], "cannot connect"),
        (["--url", "amqp://u:hunter2@example.com/"], "--allow-remote"),
        (["--url", "http://localhost/"], "scheme must be amqp"),
        (["--url", "amqp://127.0.0.1:1/", "--broker", "rabbitmq"], "not both"),
        (["--url", "amqp://127.0.0.1:1/", "--profile", "no-such-profile"], "no profile"),
        (
            ["--url", "amqp://127.0.0.1:1/", "--operators", "frame-end,bogus"],
            "unknown operators: bogus",
        ),
        (["--url", "amqp://127.0.0.1:1/", "--duration", "0"], "--duration must be more than"),
        (["--url", "amqp://127.0.0.1:1/", "--duration", "-5"], "--duration must be more than"),
        (["--url", "amqp://127.0.0.1:1/", "--max-examples", "0"], "--max-examples must be"),
        (["--url", "amqp://127.0.0.1:1/", "--workers", "0"], "Invalid value for '--workers'"),
        (["--url", "amqp://127.0.0.1:1/", "--protocol", "0-10"], "cannot connect"),
        (["--url", "amqp://127.0.0.1:1/", "--corpus", "/no/such/dir"], "no such corpus"),
        (["--url", "amqp://127.0.0.1:1/", "--coverage-node", "x@y", "--no-coverage"], "contradict"),
        (["--coverage-node", "x@y"], "give its --url"),
    ],
)
def test_bad_input_is_one_line_and_status_2(args: list[str], message: str, tmp_path: Path) -> None:
    done = amqpfuzz("run", "--duration", "1", "--out", str(tmp_path), *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert "Traceback" not in done.stderr and "hunter2" not in done.stderr + done.stdout


def test_a_refused_login_is_status_2(rabbitmq: Broker, tmp_path: Path) -> None:
    url = rabbitmq.url.replace("guest:guest", "guest:wrong-password")
    done = amqpfuzz("run", "--url", url, "--duration", "1", "--out", str(tmp_path))
    assert done.returncode == 2 and "refused the login" in done.stderr
    assert "wrong-password" not in done.stderr + done.stdout


def test_replay_of_a_file_that_is_not_a_reproducer(tmp_path: Path) -> None:
    bogus = tmp_path / "repro.json"
    bogus.write_text("{not json")
    done = amqpfuzz("replay", str(bogus), "--url", "amqp://127.0.0.1:1/")
    assert done.returncode == 2 and "not JSON" in done.stderr and "Traceback" not in done.stderr


# -- runs ---------------------------------------------------------------------------------------


def test_secrets_never_reach_any_file_or_output(rabbitmq: RabbitMQ, tmp_path: Path) -> None:
    ctl(rabbitmq, "add_user", "fuzzer", "S3cret-Pa55word")
    ctl(rabbitmq, "set_permissions", "fuzzer", ".*", ".*", ".*")
    url = rabbitmq.url.replace("guest:guest", "fuzzer:S3cret-Pa55word")
    out = tmp_path / "out"
    done = amqpfuzz(
        "run",
        "--url",
        url,
        "--duration",
        "6",
        "--out",
        str(out),
        "--profile",
        "none",
        "--seed",
        "3",
    )
    assert done.returncode == 1, done.stderr  # without the profile, RabbitMQ's deviations fail
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.startswith("repro-") for p in files) and records_in(out)
    for text in [done.stdout, done.stderr, *(p.read_text(errors="replace") for p in files)]:
        assert "S3cret-Pa55word" not in text
    assert "fuzzer@127.0.0.1" in done.stdout  # the account is named, the password never


def test_a_sigkilled_run_keeps_every_completed_record(rabbitmq: Broker, tmp_path: Path) -> None:
    out = tmp_path / "out"
    process = subprocess.Popen(
        [AMQPFUZZ, "run", "--url", rabbitmq.url, "--duration", "60", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    parts: list[Path] = []
    while time.monotonic() < deadline:
        parts = list(out.glob("records-*.jsonl.part"))
        if parts and sum(len(p.read_bytes().splitlines()) for p in parts) > 300:
            break
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)
    assert parts, "the run wrote no records in a minute"
    kept = [r for path in parts for r in read_records(path)]
    lines = sum(len(p.read_bytes().splitlines()) for p in parts)
    assert len(kept) >= lines - len(parts) >= 300  # at most one torn line per file
    assert all(r["schema_version"] == 3 for r in kept)


def test_the_users_queue_is_untouched_and_what_the_run_made_is_gone(tmp_path: Path) -> None:
    # a broker of its own: a run killed by another test leaves what it made (names that
    # rabbitmqctl cannot even print: a lenient RabbitMQ creates names that are not UTF-8)
    with throwaway("rabbitmq") as broker:
        assert isinstance(broker, RabbitMQ)
        users_data_survives_a_run(broker, tmp_path)


def users_data_survives_a_run(rabbitmq: RabbitMQ, tmp_path: Path) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.url))
    channel = connection.channel()
    channel.queue_declare("user-orders", durable=True)
    channel.exchange_declare("user-events", "topic")
    channel.queue_bind("user-orders", "user-events", "#")
    bodies = [b"order-1", b"order-2", b"order-3"]
    for body in bodies:
        channel.basic_publish("", "user-orders", body)
    connection.close()
    before = set(ctl(rabbitmq, "list_queues", "name", "--no-table-headers", "--quiet").split())
    done = amqpfuzz(
        "run", "--url", rabbitmq.url, "--duration", "15", "--out", str(tmp_path), "--kind", "all"
    )
    assert done.returncode in (0, 1), done.stderr
    run_id = done.stdout.split("amqpfuzz run ", 1)[1].split(":", 1)[0]
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.url))
    channel = connection.channel()
    got = []
    while (message := channel.basic_get("user-orders", auto_ack=True))[0] is not None:
        got.append(message[2])
    channel.exchange_declare("user-events", "topic", passive=True)  # still there
    connection.close()
    assert got == bodies
    # nothing of this run's is left (other tests share the broker: only this run's prefix),
    # once the broker has deleted the exclusive queues of the run's connections: it does so
    # after they close, in its own time (seconds on a loaded machine); a queue left for good
    # is still there when the time is up
    prefix = f"amqpfuzz-{run_id[:8]}-"
    deadline = time.monotonic() + 20
    while True:
        queues = set(ctl(rabbitmq, "list_queues", "name", "--no-table-headers", "--quiet").split())
        names = ctl(rabbitmq, "list_exchanges", "name", "--no-table-headers", "--quiet").split()
        left = [n for n in [*queues, *names] if n.startswith(prefix)]
        if (not left and queues <= before) or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert not left
    assert queues - before == set(), queues - before  # server-named queues included


def test_stateful_campaign_on_rabbitmq_holds_every_invariant(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    done = amqpfuzz(
        "run",
        "--url",
        rabbitmq.url,
        "--kind",
        "stateful",
        "--duration",
        "12",
        "--out",
        str(tmp_path),
        "--seed",
        "5",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = records_in(tmp_path)
    assert records and {r["kind"] for r in records} == {"stateful"}
    assert all(r["verdict"] == "pass" for r in records)
    assert sum(int(r["programs"]) for r in records) >= 5  # long programs: about one a second


def test_differential_run_names_both_reactions(
    rabbitmq: Broker, garagemq: Broker, tmp_path: Path
) -> None:
    done = amqpfuzz(
        "run",
        "--url", rabbitmq.url,
        "--url", garagemq.url,
        "--max-examples", "200",
        "--operators", "heartbeat-payload,unknown-frame-type",
        "--out", str(tmp_path),
        "--no-shrink",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    records = records_in(tmp_path)
    differential = [r for r in records if r["kind"] == "differential"]
    assert differential, "RabbitMQ and GarageMQ react alike to every case?"
    item = differential[0]
    assert (
        len(item["reactions"]) == 2
        and len({json.dumps(v) for v in item["reactions"].values()}) == 2
    )
    assert {t["url"] for t in item["targets"]} == {
        rabbitmq.url.replace("guest:guest", "guest"),
        garagemq.url.replace("guest:guest", "guest"),
    }


def test_0_9_on_rabbitmq_says_what_it_speaks_and_reports_only_what_is_new(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    """RabbitMQ announces 0-9 and speaks 0-9-1: the run says so in one line first; the
    methods of 0-9's classes it lacks and 0-9's uncoded refusals are not failures (its 0-9
    profile, and the 0-9 reading of a valid case), only xfails with their reasons."""
    done = amqpfuzz(
        "run", "--url", rabbitmq.url, "--protocol", "0-9", "--duration", "8", "--seed", "7",
        "--out", str(tmp_path), "--no-shrink",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    lines = done.stdout.splitlines()
    notes = [line for line in lines[:3] if line.startswith("note: ")]
    assert len(notes) == 1 and notes[0].endswith("(profile rabbitmq-3.10-amqp0-9)"), lines[:3]
    records = records_in(tmp_path)
    failed = [r for r in records if r["verdict"] == "fail"]
    xfailed = [r for r in records if r["verdict"] == "xfail"]
    assert len(records) > 500 and len(failed) <= 3, [r["failure"] for r in failed]
    unimplemented = ("file.", "stream.", "message.", "dtx.", "tunnel.")
    assert not [r for r in failed if str(r["spec_ref"]).startswith(unimplemented)]
    assert not [r for r in failed if ":valid:" in str(r["failure"])]
    assert sum(1 for r in xfailed if str(r["spec_ref"]).startswith(unimplemented)) > 100


def test_workers_write_one_record_file_each(rabbitmq: Broker, tmp_path: Path) -> None:
    done = amqpfuzz(
        "run", "--url", rabbitmq.url, "--workers", "2", "--duration", "6", "--out", str(tmp_path)
    )
    assert done.returncode in (0, 1), done.stderr
    files = list(tmp_path.glob("records-*.jsonl"))
    assert len(files) == 2 and not list(tmp_path.glob("*.part"))
    seeds = {r["seed"] for path in files for r in read_records(path)}
    assert len(seeds) == 2


def test_a_throwaway_broker_that_crashes_is_restarted_for_the_workers(tmp_path: Path) -> None:
    # the broker lives in the command's process, the campaigns in worker processes
    done = amqpfuzz(
        "run", "--broker", "garagemq", "--operators", "string-overrun", "--valid-share", "0",
        "--max-examples", "100", "--workers", "2", "--no-shrink", "--out", str(tmp_path),
        "--profile", "none",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "the broker was restarted" in done.stdout
    crashes = [
        r
        for r in records_in(tmp_path)
        if r["failure"] and r["failure"]["oracle"] == "liveness"  # type: ignore[index]
    ]
    pinned = [r for r in crashes if ":unattributed:" not in r["failure"]["signature"]]  # type: ignore[index]
    assert pinned and all(r["mutation"] == "string-overrun" for r in pinned)


@pytest.mark.parametrize("kind", ["garagemq", "rabbitmq"])
def test_throwaway_broker_commands(kind: str, tmp_path: Path) -> None:
    env = {**os.environ, "AMQPFUZZ_STATE": str(tmp_path / "state")}
    started = subprocess.run(
        [AMQPFUZZ, "broker", "start", kind],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    try:
        name = started.stdout.split()[0]
        listed = subprocess.run(
            [AMQPFUZZ, "broker", "list"], capture_output=True, text=True, env=env, timeout=30
        )
        assert name in listed.stdout and "running" in listed.stdout
        url = started.stdout.split()[1]
        state = json.loads((tmp_path / "state" / "brokers" / f"{name}.json").read_text())
        assert (kind == "rabbitmq") == bool(state["ports"])
        pika.BlockingConnection(pika.URLParameters(url)).close()  # it answers
        stopped = subprocess.run(
            [AMQPFUZZ, "broker", "stop", name], capture_output=True, text=True, env=env, timeout=60
        )
        assert stopped.returncode == 0 and f"stopped {name}" in stopped.stdout
        # nothing of it outlives the stop: not its AMQP port, not RabbitMQ's own epmd
        for port in [int(url.rsplit(":", 1)[1].split("/")[0]), *state["ports"].values()]:
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:  # a failed check above must not leave the broker running
        subprocess.run(
            [AMQPFUZZ, "broker", "stop", "--all"], env=env, capture_output=True, timeout=60
        )
    again = subprocess.run(
        [AMQPFUZZ, "broker", "stop", name], capture_output=True, text=True, env=env, timeout=30
    )
    assert again.returncode == 2 and "no broker named" in again.stderr
