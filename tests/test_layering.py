"""The layers import only to their left (spec -> strategies -> scenarios -> fuzzer -> reports;
inside the fuzzer, coverage -> brokers -> protocols -> records -> engine -> the engine's handlers), no
module imports one of amqpfuzz's inside a function but to load something heavy later, and no
layer but the registry and the family packages names a protocol. Read from the source, so that
a change that breaks them fails here, not in a user's import time."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("spec", "strategies", "scenarios", "fuzzer", "reports")
# inside the fuzzer: what each part may not import (the parts to its right)
FUZZER = {
    "coverage": ("brokers", "protocols", "records", "engine", "recording", "cli", "plugin"),
    "brokers": ("protocols", "records", "engine", "recording", "cli", "plugin", "cluster"),
    "protocols": ("records", "engine", "recording", "cli", "plugin", "cluster"),
    "records": ("engine", "recording", "cli", "plugin", "cluster"),
    "engine": ("recording", "cli", "plugin", "cluster"),
    "clients": ("recording", "cli", "plugin", "cluster"),
}
# imports inside functions, each loading something heavy only when it is needed
LAZY = {
    ("fuzzer/cli/info.py", "mutations_command"): "Hypothesis, for `amqpfuzz mutations` only",
    ("fuzzer/cli/run.py", "_run"): "pyspark, for a run on Spark only",
    ("fuzzer/cli/run.py", "run_command"): "the client campaigns' modules, for --client only",
    ("fuzzer/protocols/amqp091/family.py", "player"): "the scenario player's modules",
    ("fuzzer/protocols/amqp091/family.py", "programs"): "pika and Hypothesis's state machines",
    ("fuzzer/protocols/amqp10/family.py", "player"): "the scenario player's modules",
    ("fuzzer/protocols/amqp10/family.py", "programs"): "proton and Hypothesis's state machines",
    ("fuzzer/protocols/amqp010/family.py", "player"): "the scenario player's modules",
    ("fuzzer/protocols/amqp10/family.py", "serving"): "the 1.0 serving peer, for client campaigns",
    ("fuzzer/cli/serve.py", "serve_clients"): "pyspark, for a client campaign on Spark only",
    ("fuzzer/cli/scenarios.py", "scenarios_command"): "the client modules, for --client only",
}


def _modules() -> list[Path]:
    return [p for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py"))]


def _imported(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """What an import names, as paths under the project root (``fuzzer/engine/runner``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level == 0:
        names = [node.module or ""]
    else:
        base = path.relative_to(ROOT).parent.parts[: len(path.relative_to(ROOT).parts) - node.level]
        names = [".".join(("amqpfuzz", *base, *((node.module or "").split(".")))).strip(".")]
    return [
        n.removeprefix("amqpfuzz.").replace(".", "/") for n in names if n.startswith("amqpfuzz")
    ]


def test_no_layer_imports_one_to_its_right() -> None:
    wrong = []
    for path in _modules():
        own = path.relative_to(ROOT).parts
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(path, node):
                layer = target.split("/")[0]
                if layer in LAYERS and LAYERS.index(layer) > LAYERS.index(own[0]):
                    wrong.append(f"{path.relative_to(ROOT)} imports {target}")
                if own[0] == layer == "fuzzer" and len(own) > 2:
                    part = target.split("/")[1] if "/" in target else ""
                    if part in FUZZER.get(own[1], ()):
                        wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not wrong


def test_imports_inside_functions_only_load_heavy_parts_later() -> None:
    found = {}
    for path in _modules():
        where = str(path.relative_to(ROOT))
        if where.startswith("fuzzer/plugin/"):
            continue  # the plugin loads in every pytest run: everything it needs, when needed
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom) and _imported(path, inner):
                    found[(where, node.name)] = _imported(path, inner)
    assert set(found) <= set(LAZY), {k: v for k, v in found.items() if k not in LAZY}


@pytest.mark.parametrize("layer", LAYERS)
def test_only_the_registry_and_the_family_packages_name_a_protocol(layer: str) -> None:
    named = re.compile(r"""protocol\s*[!=]=\s*["']|==\s*["'](0-9-1|0-9|0-8|0-10|1\.0)["']""")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        if not re.search(r"/amqp(091|10|010)/|/registry\.py$|/protocols\.py$", str(path))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if named.search(line)
    ]
    assert not found
