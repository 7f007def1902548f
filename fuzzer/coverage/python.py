"""A Python broker under coverage.py: the Qpid Proton example broker's script and the binding's
Python side, measured while it runs.

The broker runs under :mod:`.pyrun`, which starts coverage.py before the script and, on
``SIGUSR1``, writes the lines executed so far to ``lines.json`` in its coverage directory (the
signal's handler runs between two of the broker's bytecodes, in its own thread, so the data is
whole). What there is to cover (``layout.json``: each file's statements and functions) is written
once when it starts. A :class:`PythonCoverage` probe, in any process, signals the broker and reads
the file.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plans import Plan
from .probe import CoverageError, Layout, ModuleSample, Sample

__all__ = ["PythonCoverage", "functions_of", "layout_of", "resolve"]

LINES = "lines.json"
LAYOUT = "layout.json"
PID = "pid"


def resolve(patterns: Iterable[str], roots: dict[str, str]) -> list[str]:
    """The plan's file patterns with their ``{root}`` placeholders filled in."""
    return [p.format(**roots) for p in patterns]


def functions_of(source: str) -> list[tuple[str, int, int]]:
    """Every function of a module's source: its qualified name and the lines of its body."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append((name, child.body[0].lineno, child.end_lineno or child.lineno))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _innermost(line: int, functions: list[tuple[str, int, int]]) -> str | None:
    inside = [(end - start, name) for name, start, end in functions if start <= line <= end]
    return min(inside)[1] if inside else None


def layout_of(files: dict[str, str], statements: dict[str, list[int]]) -> dict[str, Any]:
    """``layout.json``'s content: per module (its name as reported), its file, statements and
    functions (each function's statements, those of functions within it apart)."""
    layout: dict[str, Any] = {}
    for module, path in files.items():
        functions = functions_of(Path(path).read_text())
        lines = statements.get(path, [])
        owned: dict[str, int] = {name: 0 for name, _, _ in functions}
        for line in lines:
            owner = _innermost(line, functions)
            if owner is not None:
                owned[owner] += 1
        layout[module] = {
            "file": path,
            "statements": lines,
            "functions": [[n, s, e, owned[n]] for n, s, e in functions],
        }
    return layout


@dataclass
class PythonCoverage:
    """The broker process under :mod:`.pyrun` that writes into ``directory``."""

    plan: Plan
    directory: Path
    timeout: float = 10.0

    @property
    def where(self) -> str:
        return f"the Python broker measured in {self.directory}"

    def prepare(self) -> list[str]:
        layout = self._layout()
        return [f"{len(layout)} files measured by coverage.py"]

    def _read(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads((self.directory / name).read_text())
        except (OSError, ValueError) as exc:
            raise CoverageError(f"{self.where}: {name} cannot be read ({exc})") from None
        if not isinstance(data, dict):
            raise CoverageError(f"{self.where}: {name} is not what pyrun writes")
        return data

    def _layout(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while not (self.directory / LAYOUT).exists():  # written as the broker starts
            if time.monotonic() > deadline:
                raise CoverageError(f"{self.where}: the broker wrote no {LAYOUT}")
            time.sleep(0.05)
        return self._read(LAYOUT)

    def sample(self) -> Sample:
        try:
            pid = int((self.directory / PID).read_text())
        except (OSError, ValueError):
            raise CoverageError(f"{self.where}: the broker's pid is not known") from None
        before = _stamp(self.directory / LINES)
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            raise CoverageError(f"{self.where}: the broker (pid {pid}) is not running") from None
        deadline = time.monotonic() + self.timeout
        while _stamp(self.directory / LINES) == before:
            if time.monotonic() > deadline:
                raise CoverageError(f"{self.where}: no lines written in {self.timeout:g} s")
            time.sleep(0.005)
        executed = self._read(LINES)["files"]
        layout = self._layout()
        found = {}
        for module, entry in layout.items():
            lines = frozenset(executed.get(entry["file"], ())) & frozenset(entry["statements"])
            functions = [(n, s, e) for n, s, e, _ in entry["functions"]]
            entered = {_innermost(line, functions) for line in lines} - {None}
            found[module] = ModuleSample(lines, frozenset(str(f) for f in entered))
        return Sample(found)

    def layout(self) -> Layout:
        layout = self._layout()
        return Layout(
            {m: len(e["statements"]) for m, e in layout.items()},
            {m: {n: count for n, _, _, count in e["functions"]} for m, e in layout.items()},
        )


def _stamp(path: Path) -> int:
    with contextlib.suppress(OSError):
        return path.stat().st_mtime_ns
    return 0
