"""What a dead shim's last words say ended it, in every language the shims are written in."""

from __future__ import annotations

import pytest

from amqpfuzz.fuzzer.clients.process import Died, _what_ended


@pytest.mark.parametrize(
    ("stderr", "cause"),
    [
        (["Traceback (most recent call last):", '  File "x", line 1', "KeyError: 3"], "KeyError"),
        (["/a/b.rb:12:in `read': unknown reply code (RuntimeError)", "\tfrom /x.rb:3"], "RuntimeError"),
        (["/a/table.rb:110:in `decode': Not a valid type: \"B\" (ArgumentError)", 'Data: "x"',
          "Offset: 134", "Processed data: {}", "\tfrom /x.rb:3"], "ArgumentError"),
        (["panic: unexpected frame type", "", "goroutine 1 [running]:", "\t/x.go:12"], "panic: unexpected frame type"),
        (["/x/shim.js:10", "    throw e", "TypeError: x is undefined", "    at f (/x:1)"], "TypeError"),
        (["RangeError: offset out of range", "    at f (/x:1)", "", "Node.js v20.20.2"], "RangeError"),
        (["/x/shim.js:3", "RangeError [ERR_OUT_OF_RANGE]: bad offset {", "  code: 'X'", "}", "",
          "Node.js v20.20.2"], "RangeError"),
        ([], "exit 1"),
    ],
)  # fmt: skip
def test_the_cause_of_a_crash_is_the_error_not_a_frame_of_its_stack(
    stderr: list[str], cause: str
) -> None:
    assert Died(1, _what_ended(stderr)).cause == cause


def test_a_signal_is_named() -> None:
    assert Died(-11, "").cause == "SIGSEGV"
