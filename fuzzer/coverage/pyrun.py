"""Runs a Python broker script under coverage.py: ``python -m amqpfuzz.fuzzer.coverage.pyrun
DIRECTORY PATTERNS SCRIPT [ARGS...]`` (PATTERNS: the files to measure, as one JSON list).

It writes ``layout.json`` (what there is to cover) and ``pid`` into DIRECTORY, starts coverage.py
and runs the script as ``__main__``; on ``SIGUSR1``, and when the script ends, it writes the lines
executed so far to ``lines.json`` (a part file first, then renamed, so a reader never sees half).
"""

from __future__ import annotations

import glob
import json
import os
import runpy
import signal
import sys
from pathlib import Path
from types import FrameType

import coverage

from .python import LAYOUT, LINES, PID, layout_of


def _write(path: Path, data: object) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data))
    part.replace(path)


def main(argv: list[str]) -> None:
    directory, patterns, script, *args = argv
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    include = json.loads(patterns)
    files = {}  # a module's name: its file and the directory it is in (proton/_message.py)
    for pattern in include:
        for path in sorted(glob.glob(pattern)):
            real = Path(path)
            files[f"{real.parent.name}/{real.name}"] = os.path.realpath(path)
    measured = coverage.Coverage(data_file=None, config_file=False, include=list(files.values()))
    statements = {path: sorted(measured.analysis2(path)[1]) for path in files.values()}
    _write(out / LAYOUT, layout_of(files, statements))

    def dump(signum: int | None = None, frame: FrameType | None = None) -> None:
        data = measured.get_data()
        _write(
            out / LINES, {"files": {f: sorted(data.lines(f) or ()) for f in data.measured_files()}}
        )

    signal.signal(signal.SIGUSR1, dump)
    (out / PID).write_text(str(os.getpid()))
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).parent))
    measured.start()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        measured.stop()
        dump()


if __name__ == "__main__":
    main(sys.argv[1:])
