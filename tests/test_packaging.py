"""The folders install under the amqpfuzz namespace, in a wheel and in the editable install.

A user's project may well have folders called ``spec/`` or ``strategies/``; when the pytest
plugin loads amqpfuzz inside that project, those must neither shadow amqpfuzz's packages nor be
shadowed by them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DECOY = "raise ImportError('decoy {name}/ was imported instead of amqpfuzz.{name}')\n"
PROBE = """
import amqpfuzz.spec, amqpfuzz.spec.amqp091.codec, amqpfuzz.fuzzer
from amqpfuzz.spec.amqp091.codec import codec_for
codec = codec_for("0-9-1")
frame = codec.method("basic.publish", 1, routing_key="q")
assert codec.decode(codec.encode(frame)) == frame
print(amqpfuzz.spec.__file__)
print(len(amqpfuzz.spec.load("0-9-1").methods))
"""


def _decoys(where: Path) -> Path:
    for name in ("spec", "strategies", "fuzzer"):
        (where / name).mkdir(parents=True)
        (where / name / "__init__.py").write_text(DECOY.format(name=name))
    return where


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the source tree (the build must not litter the checkout)."""
    source = tmp_path_factory.mktemp("source") / "amqpfuzz"
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", ".*_cache", ".mypy-tree", "build", "dist", "*.egg-info"
    )
    shutil.copytree(ROOT, source, ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        cwd=out,
    )
    (built,) = out.glob("amqpfuzz-*.whl")
    return built


@pytest.mark.slow
def test_wheel_holds_only_the_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {
        "amqpfuzz",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    assert "amqpfuzz/spec/data/amqp0-9-1.xml" in names
    assert not any(n.startswith("amqpfuzz/__init__") for n in names)  # a namespace package
    # every module and data file of the five folders (pyproject lists the packages by hand)
    wanted = {
        f"amqpfuzz/{path.relative_to(ROOT)}"
        for folder in ("spec", "strategies", "scenarios", "fuzzer", "reports")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".xml", ".toml", ".yaml", ".java")
        and "__pycache__" not in path.parts
    }
    assert "amqpfuzz/spec/amqp091/codec/codec.py" in wanted
    assert wanted <= set(names), sorted(wanted - set(names))


@pytest.mark.slow
def test_wheel_in_a_clean_venv_ignores_decoy_folders(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    _run([*pip, "--no-deps", str(wheel)], cwd=tmp_path)
    _run([*pip, "lxml>=5.0"], cwd=tmp_path)  # the one dependency amqpfuzz.spec needs
    work = _decoys(tmp_path / "project")
    out = _run([str(python), "-c", PROBE], cwd=work).split()
    assert Path(out[0]).is_relative_to(venv), f"amqpfuzz.spec came from {out[0]}"
    assert out[1] == "53"


@pytest.mark.slow
def test_editable_install_ignores_decoy_folders(tmp_path: Path) -> None:
    work = _decoys(tmp_path / "project")
    out = _run([sys.executable, "-c", PROBE], cwd=work).split()
    assert Path(out[0]) == ROOT / "spec" / "__init__.py"
