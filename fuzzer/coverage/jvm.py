"""A JVM broker's own coverage, from inside it: JaCoCo's agent in the broker's JVM (its
``tcpserver`` output on a loopback port), read by JaCoCo's own analysis against the jars the
broker runs.

The analysis is :file:`JacocoLines.java`, compiled once per machine into the JaCoCo cache and run
as one long-lived helper per broker and process (a sample is a dump and an analysis, not a JVM
start): ``layout`` says each measured class's lines and methods, ``sample`` what ran so far.
A :class:`JacocoCoverage` probe is plain data (an address, the jars, the plan), so a worker
process samples the same broker through a helper of its own.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plans import Plan
from .probe import CoverageError, Layout, ModuleSample, Sample

__all__ = ["JacocoCoverage", "agent_option", "kind_of", "prefixes"]

# a jar each JVM broker's distribution has, by the broker kind it tells (its name's start)
MARKERS = {"qpid-broker-core-": "qpid-broker-j", "artemis-amqp-protocol-": "artemis"}

SOURCE = Path(__file__).with_name("JacocoLines.java")
CORE = ("jacococore.jar", "asm.jar", "asm-commons.jar", "asm-tree.jar")
TIMEOUT = 60.0  # seconds an analysis may take (the first one reads the jars)


def prefixes(plan: Plan) -> list[str]:
    """The class-name prefixes a plan's patterns name (``org.apache.qpid.server.queue.*``)."""
    return [m.removesuffix("*") for m in plan.modules]


def kind_of(jars: tuple[str, ...]) -> str | None:
    """The JVM broker kind whose jars ``jars`` (files or directories of them) hold."""
    names = []
    for path in map(Path, jars):
        names += [p.name for p in path.glob("*.jar")] if path.is_dir() else [path.name]
    for name in names:
        for marker, kind in MARKERS.items():
            if name.startswith(marker) and name.endswith(".jar"):
                return kind
    return None


def agent_option(jacoco: Path, plans: list[Plan], port: int) -> str:
    """The ``-javaagent`` option that measures the plans' classes, served on ``port``: every
    plan of the broker's kind, so that one agent serves a campaign of any family."""
    named = [p for plan in plans for p in prefixes(plan)]
    includes = ":".join(f"{p}*" for p in dict.fromkeys(named))
    return (
        f"-javaagent:{jacoco / 'jacocoagent.jar'}=output=tcpserver,address=127.0.0.1,"
        f"port={port},includes={includes},jmx=false"
    )


def _compiled(jacoco: Path) -> Path:
    """The helper's class directory, compiled from its source once per version of it."""
    source = SOURCE.read_bytes()
    target = jacoco / f"helper-{hashlib.sha256(source).hexdigest()[:12]}"
    if (target / "JacocoLines.class").exists():
        return target
    javac = shutil.which("javac")
    if javac is None:
        raise CoverageError("javac is not installed (make setup installs OpenJDK 17's JDK)")
    part = target.with_name(f"{target.name}.part{os.getpid()}-{threading.get_ident()}")
    part.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [javac, "-d", str(part), "-cp", _classpath(jacoco), str(SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise CoverageError(f"JaCoCo's analysis helper did not compile: {done.stderr.strip()}")
    with contextlib.suppress(OSError):  # another process compiled it first: keep theirs
        part.rename(target)
    shutil.rmtree(part, ignore_errors=True)
    return target


def _classpath(jacoco: Path) -> str:
    return ":".join(str(jacoco / jar) for jar in CORE)


_helpers: dict[tuple[str, ...], subprocess.Popen[str]] = {}
_lock = threading.Lock()


def _close_all() -> None:
    for helper in _helpers.values():
        with contextlib.suppress(OSError):
            helper.stdin.close()  # type: ignore[union-attr]  # it ends with its input
        with contextlib.suppress(subprocess.TimeoutExpired):
            helper.wait(5)


atexit.register(_close_all)


@dataclass(frozen=True)
class JacocoCoverage:
    """The broker whose JaCoCo agent serves ``port``, running the jars in ``jars``."""

    plan: Plan
    port: int
    jars: tuple[str, ...]
    jacoco: str  # the JaCoCo cache directory (agent, core, ASM)
    java: str = "java"
    host: str = "127.0.0.1"
    _layout: dict[str, Any] | None = None

    @property
    def where(self) -> str:
        return f"the JVM broker whose JaCoCo agent serves {self.host}:{self.port}"

    def _ask(self, command: str) -> dict[str, Any]:
        key = (self.host, str(self.port), *self.jars, *prefixes(self.plan))
        with _lock:
            helper = _helpers.get(key)
            if helper is None or helper.poll() is not None:
                classes = _compiled(Path(self.jacoco))
                helper = subprocess.Popen(
                    [
                        self.java,
                        "-Xmx256m",
                        "-XX:+UseSerialGC",
                        "-cp",
                        f"{_classpath(Path(self.jacoco))}:{classes}",
                        "JacocoLines",
                        self.host,
                        str(self.port),
                        ",".join(prefixes(self.plan)),
                        *self.jars,
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                _helpers[key] = helper
            assert helper.stdin is not None and helper.stdout is not None
            try:
                helper.stdin.write(command + "\n")
                helper.stdin.flush()
                line = helper.stdout.readline()
            except OSError as exc:
                raise CoverageError(f"{self.where}: its analysis helper ended ({exc})") from None
        if not line:
            raise CoverageError(f"{self.where}: its analysis helper ended")
        answer = json.loads(line)
        if "error" in answer:
            raise CoverageError(f"{self.where}: {answer['error']}")
        return dict(answer)

    def prepare(self) -> list[str]:
        classes = self._classes()
        if not classes:
            raise CoverageError(f"{self.where}: none of its jars holds a class the plan names")
        return [f"{len(classes)} classes measured by JaCoCo's agent"]

    def _classes(self) -> dict[str, Any]:
        if self._layout is None:
            object.__setattr__(self, "_layout", self._ask("layout"))
        assert self._layout is not None
        return self._layout

    def sample(self) -> Sample:
        found = self._ask("sample")
        return Sample(
            {
                name: ModuleSample(frozenset(entry["lines"]), frozenset(entry["methods"]))
                for name, entry in found.items()
            }
        )

    def layout(self) -> Layout:
        classes = self._classes()
        return Layout(
            {name: len(entry["lines"]) for name, entry in classes.items()},
            {name: dict(entry["methods"]) for name, entry in classes.items()},
        )
