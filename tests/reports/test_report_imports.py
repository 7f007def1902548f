"""The nightly report reads the record contract and the specification, never the fuzzer's
engine or Hypothesis: importing it in a fresh interpreter loads neither."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter: a process


def test_importing_the_report_loads_neither_hypothesis_nor_the_engine() -> None:
    code = "import sys, amqpfuzz.reports; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "amqpfuzz.reports.job" in loaded  # (it did import the report)
    assert not [m for m in loaded if m == "hypothesis" or m.startswith("hypothesis.")]
    assert not [
        m for m in loaded if m.startswith(("amqpfuzz.fuzzer.engine", "amqpfuzz.strategies"))
    ]
