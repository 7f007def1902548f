"""Where a shim died: the innermost frame of the stack it printed that is not its runtime's
(Python's, Node's, Go's, the JVM's, Rust's or Ruby's own library), named so that a crash in the
shim's own code (``shim <file>:<function>``) is told apart from one in the library under test
(``aiormq/connection.py:__reader``, ``github.com/rabbitmq/amqp091-go.(*reader).parseFrame``,
``com.rabbitmq.client.impl.Frame.readFrom``, ``lapin/src/channel.rs``). No line numbers and no
versions: the same crash in two versions of a library has one signature.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from .shims import SHIMS_DIR

__all__ = ["frame_of"]

_PYTHON = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)')
_NODE = re.compile(r"^\s+at (?:(?:async )?(\S.*?) \()?(\S+?):\d+:\d+\)?$")
_JAVA = re.compile(r"^\s+at (?:[\w.]+@?[\w.]*/)?([\w.$]+)\.([\w$<>]+)\(.*\)$")
_GO_FUNC = re.compile(r"^(\S.*)\([^()]*\)$")
_RUST_AT = re.compile(r"panicked at (.+?):\d+:\d+:?$")
_RUST_SYMBOL = re.compile(r"^\s+\d+: (\S+)")
_OVERFLOW = re.compile(r"StackOverflowError|RecursionError|stack overflow|call stack size exceeded")
_RUST_FILE = re.compile(r"^\s+at \S+\.rs:\d+")  # a Rust backtrace's frame's place
_RUBY = re.compile(r"^\s*(?:from )?(/\S+?):\d+:in [`'](?:\S+[#.])?([^']+)'")
_VERSIONED = re.compile(r"-\d+\.\d+\.\d+\S*$")  # a crate's folder: lapin-4.12.3
_GEM = re.compile(r"^[\w-]+?-\d[\w.]*/")  # a gem's folder: bunny-2.19.0/
_PYTHON_LIB = re.compile(r"/lib/python3(\.\d+)?/|<frozen ")  # Python's own modules
_VERSION_BUILD = re.compile(r"/clients/[^/]+@[^/]+/")  # shims.versions_root()/<name>@<version>/
_LIBRARIES = ("site-packages/", "dist-packages/")
_JAVA_RUNTIME = ("java.", "javax.", "jdk.", "sun.", "com.sun.")
_RUST_RUNTIME = (
    "std::", "core::", "alloc::", "rust_begin_unwind", "rust_oom", "__rust", "__rg_", "__rdl_",
    "backtrace", "_start", "__libc",
)  # fmt: skip


def frame_of(stderr: Sequence[str]) -> str:
    """The innermost frame of the stack on ``stderr`` that is not the runtime's, or ``""``; of
    a stack that overflowed, the frame it repeats most (where the stack ran out is chance)."""
    lines = list(stderr)
    overflow = any(_OVERFLOW.search(x) for x in lines)
    for reader in (_rust, _go, _java, _python, _node, _ruby):
        found = list(itertools.islice(reader(lines), None if overflow else 1))
        if found:  # (most_common keeps the innermost of equals first)
            return Counter(found).most_common(1)[0][0] if overflow else found[0]
    return ""


def _python(lines: list[str]) -> Iterator[str]:
    for line in reversed(lines):
        found = _PYTHON.match(line)
        if found is None:
            continue
        path, function = found.groups()
        library = next((path.rsplit(m, 1)[1] for m in _LIBRARIES if m in path), None)
        asked = _VERSION_BUILD.search(path)  # a library installed at a version asked for
        if library is not None:
            yield f"{library}:{function}"
        elif asked is not None:
            yield f"{path[asked.end() :]}:{function}"
        elif Path(path).is_relative_to(SHIMS_DIR) or not _PYTHON_LIB.search(path):
            yield f"shim {Path(path).name}:{function}"  # (the program's own, not Python's)


def _node(lines: list[str]) -> Iterator[str]:
    for line in lines:
        found = _NODE.match(line)
        if found is None:
            continue
        function, path = found.group(1) or "<anonymous>", found.group(2)
        if path.startswith("node:"):
            continue
        if "node_modules/" in path:
            yield f"{path.rsplit('node_modules/', 1)[1]}:{function}"
        else:
            yield f"shim {Path(path).name}:{function}"


def _go(lines: list[str]) -> Iterator[str]:
    running = next((i for i, x in enumerate(lines) if re.match(r"^goroutine \d+ \[", x)), None)
    if running is None:
        return
    for line in lines[running + 1 :]:
        if not line.strip() or line.startswith("goroutine "):
            break
        found = _GO_FUNC.match(line)
        if line.startswith("\t") or found is None:
            continue
        function = found.group(1)
        if function.startswith("main."):
            yield f"shim main.go:{function.removeprefix('main.')}"
        elif "/" in function and "." in function.split("/")[0]:
            yield function  # (no domain in its path: the runtime's or the standard library's)


def _blocks(lines: list[str]) -> Iterator[list[str]]:
    """A JVM stack's blocks, the innermost cause's first."""
    starts = [i for i, x in enumerate(lines) if x.startswith("Caused by:")]
    edges = [0, *starts, len(lines)]
    blocks = [lines[a:b] for a, b in itertools.pairwise(edges)]
    return reversed(blocks)


def _java(lines: list[str]) -> Iterator[str]:
    for block in _blocks(lines):
        for line in block:
            found = _JAVA.match(line)
            if found is None:
                continue
            owner, method = found.groups()
            if owner.startswith(_JAVA_RUNTIME):
                continue
            if "." not in owner:  # the shims' classes are in no package
                yield f"shim {owner}.java:{method}"
            else:
                yield f"{owner}.{method}"


def _crate(path: str) -> str | None:
    """A path in Cargo's registry as ``crate/src/file.rs`` (its version left out)."""
    if "/registry/src/" not in path:
        return None
    inside = path.split("/registry/src/", 1)[1].split("/", 1)[1]  # past index.crates.io-<hash>
    crate, _, rest = inside.partition("/")
    return f"{_VERSIONED.sub('', crate)}/{rest}"


def _rust(lines: list[str]) -> Iterator[str]:
    at = next((m.group(1) for x in lines if (m := _RUST_AT.search(x))), None)
    if at is not None:
        crate = _crate(at)
        if crate is not None:
            yield crate
            return
        if "/rustc/" not in at and "/library/" not in at:
            yield f"shim {Path(at).name}"
            return
    elif not any(_RUST_FILE.match(x) for x in lines):
        return  # no panic and no Rust backtrace (an abort's, say): not Rust's stack
    for line in lines:  # the standard library's frames: the first frame outside it
        found = _RUST_SYMBOL.match(line)
        if found is None:
            continue
        symbol = found.group(1)
        if symbol.startswith("<"):  # <path::Type as Trait>::method: the type's path
            symbol = symbol[1:].split(" as ", 1)[0].split(">", 1)[0]
        if symbol.startswith(_RUST_RUNTIME):
            continue
        if symbol.startswith("amqpfuzz_shim_"):
            yield f"shim main.rs:{symbol.split('::', 1)[-1]}"
        else:
            yield re.sub(r"::h[0-9a-f]{16}$", "", symbol)


def _ruby(lines: list[str]) -> Iterator[str]:
    for line in lines:
        found = _RUBY.match(line)
        if found is None:
            continue
        path, function = found.groups()
        if "/gems/" in path or "vendor_ruby/" in path:
            tail = path.split("/gems/")[-1].split("vendor_ruby/")[-1]
            yield f"{_GEM.sub('', tail)}:{function}"
        elif "/lib/ruby/" not in path:
            yield f"shim {Path(path).name}:{function}"
