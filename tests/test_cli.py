"""``amqpfuzz spec``: the inventory as a table and as JSON, and bad input as one line, status 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from amqpfuzz.fuzzer.cli import cli
from amqpfuzz.spec import PROTOCOLS, load

AMQPFUZZ = shutil.which("amqpfuzz", path=str(Path(sys.executable).parent))


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_json_inventory_per_protocol(protocol: str) -> None:
    code, out, _ = _run("spec", "--protocol", protocol, "--json")
    assert code == 0
    described = json.loads(out)
    assert described["protocol"] == protocol
    assert described["counts"] == load(protocol).inventory()
    assert all(Path(s).is_file() for s in described["sources"])


def test_json_for_0_9_1_reports_what_the_xml_holds() -> None:
    code, out, _ = _run("spec", "--json")
    described = json.loads(out)
    assert code == 0 and described["protocol"] == "0-9-1"
    counts = described["counts"]
    assert (counts["rules"], counts["scenarios"], counts["asserts"]) == (115, 82, 19)
    assert described["protocol_header"] == [0, 0, 9, 1]
    basic = next(c for c in described["classes"] if c["name"] == "basic")
    assert basic["index"] == 60 and "publish" in basic["methods"]


def test_table_is_the_default() -> None:
    code, out, _ = _run("spec", "--protocol", "0-8")
    assert code == 0
    assert "AMQP 0-8" in out and "methods" in out
    assert str(load("0-8").inventory()["methods"]) in out


def test_users_own_file(tmp_path: Path) -> None:
    own = tmp_path / "mine.xml"
    own.write_text(PROTOCOLS["0-9-1-rabbit"].paths[0].read_text())
    code, out, _ = _run("spec", "--file", str(own), "--json")
    assert code == 0 and json.loads(out)["sources"] == [str(own)]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("<amqp major='0' minor='9'><class", "malformed XML"),
        ("", "empty file"),
    ],
)
def test_bad_files_give_one_line_and_status_2(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "spec.xml"
    if content is not None:
        path.write_text(content)
    code, out, err = _run("spec", "--file", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"amqpfuzz: error: {path}")
    assert expected in err and "Traceback" not in err


def test_unknown_protocol_is_a_usage_error() -> None:
    code, _, err = _run("spec", "--protocol", "0-7")
    assert code == 2 and "0-7" in err


@pytest.mark.slow
def test_console_script_is_installed_and_fails_cleanly(tmp_path: Path) -> None:
    assert AMQPFUZZ, "the amqpfuzz console script is not installed beside this Python"
    bad = tmp_path / "dup.xml"
    bad.write_text(
        PROTOCOLS["0-9-1"]
        .paths[0]
        .read_text()
        .replace(
            'name = "qos-ok" synchronous = "1" index = "11"',
            'name = "qos-ok" synchronous = "1" index = "10"',
        )
    )
    done = subprocess.run([AMQPFUZZ, "spec", "--file", str(bad)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(f"amqpfuzz: error: {bad}:")
    assert "duplicate method index 10 in class 'basic'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_mutations_lists_the_catalogue_with_reactions_from_the_spec() -> None:
    from amqpfuzz.strategies import operators

    code, out, _ = _run("mutations", "--json")
    assert code == 0
    listed = json.loads(out)["operators"]
    assert [row["name"] for row in listed] == [op.name for op in operators("0-9-1")]
    frame_end = next(row for row in listed if row["name"] == "frame-end")
    # (4.2.3: a frame-end that is not 0xCE closes the connection with nothing more sent)
    assert frame_end["reaction"] == "socket-close" and frame_end["codes"] == []
    code, out, _ = _run("mutations", "--protocol", "0-8")
    assert code == 0 and "frame-end" in out and "header-alone" not in out
