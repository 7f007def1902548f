"""Client libraries at any published version: versions ordered as their registries number them,
``NAME@VERSION`` read and refused in one line, the search for the version where a verdict
changes, and where a shim died (its own code or its library's)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from amqpfuzz.fuzzer.clients.builds import parse_spec, wanted
from amqpfuzz.fuzzer.clients.campaign import serving_of
from amqpfuzz.fuzzer.clients.frames import frame_of
from amqpfuzz.fuzzer.clients.history import Step, first_change, history, parse_range
from amqpfuzz.fuzzer.clients.judge import same_failure
from amqpfuzz.fuzzer.clients.process import Died, _parsed, _what_ended
from amqpfuzz.fuzzer.clients.registries import is_release, version_key
from amqpfuzz.fuzzer.clients.shims import SHIMS_DIR, ClientError


def test_versions_sort_as_numbers_with_pre_releases_first() -> None:
    found = ["1.10", "1.0.0", "2.0.0rc1", "1.0.0-M20", "0.9", "1.0.0-M3", "2.0.0", "1.9.1", "v1.2"]
    assert sorted(found, key=version_key) == [
        "0.9", "1.0.0-M3", "1.0.0-M20", "1.0.0", "v1.2", "1.9.1", "1.10", "2.0.0rc1", "2.0.0",
    ]  # fmt: skip
    assert version_key("1.0") == version_key("1.0.0")
    assert [v for v in ("1.0.0-M20", "2.0.0b3", "1.1.0", "4.0.0-beta.2", "1.0.post1") if is_release(v)] == [
        "1.1.0", "1.0.post1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("nosuch@1.0", "unknown client 'nosuch'"),
        ("amqp091-go@", "no version after the @"),
    ],
)
def test_a_bad_spec_is_one_line(spec: str, says: str) -> None:
    with pytest.raises(ClientError, match=says):
        parse_spec(spec)


@pytest.mark.slow  # dpkg-query reads the Debian package's version
def test_a_debian_client_has_its_one_version() -> None:
    assert wanted("bunny", None) is None
    with pytest.raises(ClientError, match=r"bunny@2\.0: bunny is Debian's package ruby-bunny"):
        wanted("bunny", "2.0")


def test_the_pinned_version_asked_for_is_the_pinned_build() -> None:
    assert wanted("amqp091-go", "1.16.0") is None
    assert wanted("amqp091-go", "v1.16.0") is None  # (Go's own spelling)


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [("amqp091-go@1.5.0..1.16.0", ("amqp091-go", "1.5.0", "1.16.0"))],
)
def test_a_range_reads_name_first_and_last(spec: str, parsed: tuple[str, str, str]) -> None:
    assert parse_range(spec) == parsed
    for bad in ("amqp091-go@1.5.0", "amqp091-go@..1.2", "amqp091-go@1.5.0.."):
        with pytest.raises(ClientError, match=r"a range is NAME@FIRST\.\.LAST"):
            parse_range(bad)


VERSIONS = [f"1.{n}.0" for n in range(20)]


def _replaying(
    fixed_at: int, unbuildable: tuple[int, ...] = ()
) -> tuple[list[str], Callable[[str], Step]]:
    asked: list[str] = []

    def replay(version: str) -> Step:
        asked.append(version)
        n = VERSIONS.index(version)
        if n in unbuildable:
            return Step(version, "unbuildable", None, "the shim does not fit")
        verdict = "fixed" if n >= fixed_at else "failing"
        return Step(version, verdict, None if n >= fixed_at else "crash:x", "")

    return asked, replay


@pytest.mark.parametrize("fixed_at", [1, 7, 13, 19])
def test_a_long_range_is_searched_for_the_first_change(fixed_at: int) -> None:
    asked, replay = _replaying(fixed_at)
    steps = history(VERSIONS, replay)
    change = first_change(steps)
    assert change is not None and change.version == VERSIONS[fixed_at]
    assert len(asked) <= 7  # 20 versions: the two ends and a binary search between
    assert [s.version for s in steps] == sorted(asked, key=VERSIONS.index)


def test_a_short_range_is_replayed_whole_and_an_unchanged_one_says_so() -> None:
    asked, replay = _replaying(fixed_at=99)
    steps = history(VERSIONS[:5], replay)
    assert asked == VERSIONS[:5] and first_change(steps) is None


def test_versions_the_shim_cannot_be_built_against_are_stepped_over() -> None:
    _, replay = _replaying(fixed_at=10, unbuildable=(0, 9, 10, 11))
    steps = history(VERSIONS, replay)
    change = first_change(steps)
    assert change is not None and change.version == "1.12.0"
    assert {s.verdict for s in steps if s.version in ("1.0.0", "1.10.0")} <= {"unbuildable"}


@pytest.mark.parametrize(
    ("stderr", "where"),
    [
        (["Traceback (most recent call last):", f'  File "{SHIMS_DIR}/aiormq_shim.py", line 4, in session',
          "AttributeError: x"], "shim aiormq_shim.py:session"),
        (["Traceback (most recent call last):", f'  File "{SHIMS_DIR}/aiormq_shim.py", line 4, in main',
          '  File "/v/lib/python3.11/site-packages/aiormq/connection.py", line 6, in _reader',
          '  File "/usr/lib/python3.11/asyncio/events.py", line 1, in f', "KeyError: x"],
         "aiormq/connection.py:_reader"),
        (['  File "/c/clients/aiormq@5.0.0/pamqp/frame.py", line 6, in unmarshal', "X: y"],
         "pamqp/frame.py:unmarshal"),
        (["panic: runtime error: index out of range [5] with length 3", "", "goroutine 7 [running]:",
          "github.com/rabbitmq/amqp091-go.(*reader).parseHeaderFrame(0xc000, {0x1})", "\t/x/read.go:161 +0x1a5",
          "main.session()", "\t/x/main.go:3"], "github.com/rabbitmq/amqp091-go.(*reader).parseHeaderFrame"),
        (["panic: boom", "", "goroutine 1 [running]:", "panic({0x1, 0x2})", "\t/go/src/runtime/panic.go:1",
          "encoding/binary.bigEndian.Uint32(...)", "\t/x", "main.jsonOf({0x1})", "\t/x/main.go:3"],
         "shim main.go:jsonOf"),
        (["java.lang.IllegalStateException: boom", "\tat java.base/java.util.Objects.check(Objects.java:1)",
          "\tat com.rabbitmq.client.impl.Frame.readFrom(Frame.java:12)",
          "Caused by: java.lang.ArithmeticException: x",
          "\tat com.rabbitmq.client.impl.ValueReader.readTable(ValueReader.java:1)"],
         "com.rabbitmq.client.impl.ValueReader.readTable"),
        (['Exception in thread "main" java.lang.NullPointerException: x',
          "\tat AmqpClientShim.emit(AmqpClientShim.java:3)"], "shim AmqpClientShim.java:emit"),
        (["TypeError: x is undefined", "    at decodeFields (/b/node_modules/amqplib/lib/codec.js:10:5)"],
         "amqplib/lib/codec.js:decodeFields"),
        (["RangeError: bad", "    at Buffer.readUInt32BE (node:internal/buffer:1:1)",
          "    at /b/shim.js:5:5"], "shim shim.js:<anonymous>"),
        (["thread 'tokio-runtime-worker' panicked at /root/.cargo/registry/src/index.crates.io-19f/"
          "lapin-4.12.3/src/channel.rs:10:5:", "attempt to subtract with overflow"], "lapin/src/channel.rs"),
        (["thread 'main' panicked at /rustc/abc/library/core/src/slice/index.rs:1:1:", "range end",
          "stack backtrace:", "   0: std::panicking::begin_panic_handler", "   1: core::panicking::panic_fmt",
          "   2: amq_protocol::frame::parse::h0123456789abcdef"], "amq_protocol::frame::parse"),
        (["/usr/lib/ruby/vendor_ruby/amq/protocol/table.rb:110:in `decode': bad (ArgumentError)",
          "\tfrom /usr/lib/ruby/vendor_ruby/bunny/session.rb:3:in `x'"], "amq/protocol/table.rb:decode"),
        (["Segmentation fault"], ""),
    ],
)  # fmt: skip
def test_a_crash_names_the_frame_it_came_from(stderr: list[str], where: str) -> None:
    assert frame_of(stderr) == where


def test_a_crash_cause_says_where_and_a_rust_panic_is_named() -> None:
    lines = [
        "thread 'main' panicked at /root/.cargo/registry/src/index.crates.io-1/lapin-4.1.0/src/a.rs:1:2:",
        "index out of bounds",
    ]
    died = Died(101, _what_ended(lines), frame_of(lines))
    assert died.cause == "panic: index out of bounds in lapin/src/a.rs"
    assert not died.in_shim
    assert Died(1, "AttributeError: x", "shim x.py:f").in_shim
    assert Died(-6, "", "lapin/src/a.rs").cause == "SIGABRT"  # a signal is named alone
    # (a Rust shim aborts after its panic: the panic says more than the signal)
    aborted = Died(-6, _what_ended(lines), frame_of(lines))
    assert aborted.cause == "panic: index out of bounds in lapin/src/a.rs"
    # (the shims' own hook prints "panic: " and the panic's own words)
    hooked = ["panic: panicked at /r/registry/src/index.crates.io-1/amqprs-2.1.5/src/b.rs:9:1:",
              "responder must be registered", "stack backtrace:", "   0: std::backtrace::x"]  # fmt: skip
    died = Died(-6, _what_ended(hooked), frame_of(hooked))
    assert died.cause == "panic: responder must be registered in amqprs/src/b.rs"


@pytest.mark.parametrize(
    ("status", "stderr", "cause", "resource"),
    [
        (2, ["fatal error: stack overflow", "", "runtime stack:", "goroutine 1 [running]:",
             "github.com/a/b.decode(0x1)", "\t/x/b.go:3 +0x1"],
         "fatal error: stack overflow in github.com/a/b.decode", False),
        (70, ['Exception in thread "amqp" java.lang.OutOfMemoryError: Java heap space',
              "\tat com.rabbitmq.client.impl.Frame.readFrom(Frame.java:1)"],
         "java.lang.OutOfMemoryError in com.rabbitmq.client.impl.Frame.readFrom", True),
        (70, ['Exception in thread "amqp" java.lang.StackOverflowError',
              "\tat com.rabbitmq.client.impl.ValueReader.readTable(ValueReader.java:1)"],
         "java.lang.StackOverflowError in com.rabbitmq.client.impl.ValueReader.readTable", False),
        (-6, ["memory allocation of 137438953440 bytes failed"],
         "memory allocation of 137438953440 bytes failed", True),
    ],
)  # fmt: skip
def test_each_runtime_s_death_is_named_and_running_out_of_memory_is_a_resource_failure(
    status: int, stderr: list[str], cause: str, resource: bool
) -> None:
    died = Died(status, _what_ended(stderr), frame_of(stderr))
    assert died.cause == cause
    assert died.out_of_memory is resource


def test_a_shim_s_line_nested_thousands_deep_is_read() -> None:
    # (a message whose annotations nest 4000 levels, as a client hands them over)
    deep = '{"event": "message", "annotations": ' + "[" * 9000 + "]" * 9000 + "}"
    assert _parsed(deep)["event"] == "message"
    too_deep = '{"event": "message", "a": ' + "[" * 30_000 + "]" * 30_000 + "}"
    assert _parsed(too_deep)["event"] == "noise"


def test_a_rust_abort_s_backtrace_names_the_library_not_a_node_frame() -> None:
    lines = [
        "memory allocation of 137438953440 bytes failed",
        "   0: std::alloc::rust_oom",
        "             at /rustc/abc/library/std/src/alloc.rs:390:5",
        "   1: alloc::raw_vec::RawVec<T,A>::grow_one",
        "             at /rustc/abc/library/alloc/src/raw_vec.rs:1:1",
        "   2: <alloc::vec::Vec<u8> as core::clone::Clone>::clone",
        "             at /rustc/abc/library/alloc/src/vec.rs:1:1",
        "   3: lapin::buffer::Buffer::grow::h0123456789abcdef",
        "             at /root/.cargo/registry/src/index.crates.io-1/lapin-4.12.3/src/buffer.rs:75:9",
    ]
    assert frame_of(lines) == "lapin::buffer::Buffer::grow"
    assert frame_of(["memory allocation of 8 bytes failed"]) == ""


def test_an_overflowed_stack_is_named_by_the_frame_it_repeats() -> None:
    recursing = ["\tat org.apache.qpid.protonj2.codec.Decoder.readList(Decoder.java:1)"] * 30
    lines = [
        'Exception in thread "netty" java.lang.StackOverflowError',
        "\tat io.netty.buffer.AbstractByteBuf.checkIndex(AbstractByteBuf.java:1)",
        *recursing,
    ]
    assert frame_of(lines) == "org.apache.qpid.protonj2.codec.Decoder.readList"
    python = ["Traceback (most recent call last):"]
    python += ['  File "/v/site-packages/pika/data.py", line 9, in decode_table'] * 5
    python += ['  File "/v/site-packages/pika/data.py", line 3, in _decode', "RecursionError: x"]
    assert frame_of(python) == "pika/data.py:decode_table"


def test_a_crash_replayed_elsewhere_in_its_stack_is_the_same_failure() -> None:
    first = "crash:protonj2:unknown-descriptor:connection-close/amqp:decode-error->X in a.B.c"
    assert same_failure(first, first.replace("a.B.c", "d.E.f"))
    assert same_failure("crash:x:valid:reply->E in shim s.py:f", "crash:x:valid:reply->E in g.h")
    assert not same_failure(first, first.replace("->X", "->Y"))
    assert not same_failure(first, None)
    # (only a crash's frame: other failures compare whole)
    assert not same_failure("reaction:x:a:b->error in a", "reaction:x:a:b->error in b")


@pytest.mark.parametrize("protocol", ["0-9-1", "1.0"])
def test_the_catalogue_by_name_reads_each_blob_as_the_whole_catalogue_does(protocol: str) -> None:
    serving = serving_of(protocol)
    names = serving.operators(protocol)
    _, whole = serving.scripts(protocol, None, 0.2)
    _, named = serving.scripts(protocol, names, 0.2)
    rnd = random.Random(7)
    for _ in range(200):
        blob = rnd.randbytes(256)
        assert whole(blob).label == named(blob).label
