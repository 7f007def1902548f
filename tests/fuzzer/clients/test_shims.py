"""The client shims: the registry agrees with the files, ``amqpfuzz client`` reads as one
table or one line of error, and every shim runs one case of the shim contract against a real
RabbitMQ (each client built first, where it needs building)."""

from __future__ import annotations

import fnmatch
import json
import subprocess
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
from click.testing import CliRunner

from amqpfuzz.fuzzer.brokers import Broker
from amqpfuzz.fuzzer.cli import cli
from amqpfuzz.fuzzer.clients import builds, shims
from amqpfuzz.fuzzer.clients.shims import SHIMS, SHIMS_DIR

ROOT = Path(__file__).resolve().parents[3]
QUEUE = "amqpfuzz-shim"


def test_the_registry_names_every_shim_file_and_only_files_that_exist() -> None:
    claimed = {source for item in SHIMS.values() for source in item.sources}
    on_disk = {
        str(path.relative_to(SHIMS_DIR))
        for path in SHIMS_DIR.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.name != "__init__.py"
    }
    assert claimed == on_disk
    for item in SHIMS.values():
        for part in item.template:
            if part.startswith("{shims}/"):
                assert part.removeprefix("{shims}/") in item.sources


def test_the_package_data_holds_every_shim_file() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"amqpfuzz.fuzzer.clients", "amqpfuzz.fuzzer.clients.shims"} <= set(
        setuptools["packages"]
    )
    assert "clients.toml" in setuptools["package-data"]["amqpfuzz.fuzzer.clients"]
    patterns = ["*.py", *setuptools["package-data"]["amqpfuzz.fuzzer.clients.shims"]]
    for item in SHIMS.values():
        for source in item.sources:
            assert any(fnmatch.fnmatch(source, p) for p in patterns), source


@pytest.mark.parametrize("name", list(SHIMS))
def test_command_runs_the_shim_with_the_contract_arguments(name: str, tmp_path: Path) -> None:
    item = SHIMS[name]
    url = "amqp://guest:guest@127.0.0.1:5999/"
    if item.build != "none":
        with pytest.raises(shims.ClientNotBuilt, match=f"amqpfuzz client build {name}"):
            shims.command(name, url, into=tmp_path)
        (tmp_path / name).mkdir()
        (tmp_path / name / ".stamp").write_text(item.stamp())
    argv = shims.command(name, url, once=True, linger=2, into=tmp_path)
    assert argv[-4:] == [url, "--once", "--linger", "2"]
    assert shims.command(name, url, into=tmp_path)[-1] == url
    for part in argv[:-4]:
        if "/" in part and str(tmp_path) not in part and not part.endswith("python"):
            assert Path(part).is_file(), part


def test_an_unknown_client_is_one_line_and_status_2() -> None:
    result = CliRunner().invoke(cli, ["client", "build", "rabbitmq-cee"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"amqpfuzz: error: unknown client 'rabbitmq-cee' (known: {', '.join(SHIMS)})"
    ]
    with pytest.raises(shims.UnknownClient):
        shims.version("nope")


@pytest.mark.slow  # dpkg-query reads the Debian packages' versions
def test_client_list_is_a_table_with_every_client(tmp_path: Path) -> None:
    result = CliRunner(env={"AMQPFUZZ_CLIENTS": str(tmp_path), "COLUMNS": ""}).invoke(
        cli, ["client", "list"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # the title names the build directory; a long path wraps onto the next lines
    assert str(tmp_path) in "".join(line.strip() for line in lines[:4])
    for name, item in SHIMS.items():
        (row,) = [line for line in lines if f" {name} " in line]
        assert item.language in row and item.library in row
        assert ("not needed" if item.build == "none" else " no ") in row
        if item.version_source[0] != "npm":  # npm's is read in the (empty) build directory
            assert "not installed" not in row  # setup installs every library
    assert max(len(line) for line in lines) <= 200  # not cut to 80 columns off a terminal


@pytest.fixture
def queue_deleted(rabbitmq: Broker) -> Iterator[None]:
    """The broker left as found: the shims' queue deleted after the test."""
    yield
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.url))
    try:
        connection.channel().queue_delete(QUEUE)
    finally:
        connection.close()


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, s in SHIMS.items() if s.protocol == "0-9-1"])
def test_the_shim_runs_one_case_of_the_contract(
    name: str, rabbitmq: Broker, queue_deleted: None
) -> None:
    builds.build([name])
    url = f"amqp://guest:guest@127.0.0.1:{rabbitmq.port}/%2F"  # (the vhost "/" spelt out)
    started = time.monotonic()
    done = subprocess.run(
        shims.command(name, url, once=True, linger=2), capture_output=True, text=True, timeout=90
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    assert all(e["case"] == 0 for e in events), events
    kinds = [e["event"] for e in events]
    assert kinds[:5] == ["connecting", "connected", "channel", "declared", "consuming"], kinds
    assert events[3]["queue"] == QUEUE
    assert {"event": "confirm", "case": 0, "ack": True} in events
    (message,) = [e for e in events if e["event"] == "message"]
    assert message["via"] in ("deliver", "get")
    assert bytes.fromhex(message["body"]) == b"amqpfuzz-shim-0"
    assert message["properties"]["content-type"] == "text/plain"
    assert message["properties"]["headers"] == {"shim": name}
    assert message["routing_key"] == QUEUE and message["exchange"] == ""
    assert kinds.count("get-empty") + sum(e.get("via") == "get" for e in events) == 1
    assert events[-1] == {"event": "closed", "case": 0, "by": "client", "code": None, "text": None}
    assert 2 <= took < 30, took
