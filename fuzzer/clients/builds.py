"""Building the client shims: each library at its pinned version (``make setup``) or at any
version its registry has published (``name@version``, built on first use into the machine's
cache), by the recipe its ``build`` names:

- ``c``: cc against Debian's librabbitmq;
- ``gomod``: ``go build`` in module mode, the module from the Go module proxy (``go get
  module@vX`` for another version; the project's go.sum holds the pinned one's hashes);
- ``npm``: the package.json and the shim side by side, ``npm install`` (``pkg@X`` for another);
- ``maven``: Maven copies the library and what it needs from Maven Central (``-Dclient.version``),
  javac compiles the shim against them;
- ``cargo``: ``cargo build`` of the shim's crate, the library from crates.io (its exact pin in
  Cargo.toml rewritten for another version, its Cargo.lock kept for the pinned one);
- ``none``: a Python library (another version: ``pip install --target`` into the build
  directory, on the shim's ``PYTHONPATH``) or a Debian package (its one version only).

The Go module cache, Cargo's target directory and Maven's repository are the machine's, shared by
every checkout, so a second checkout's build reuses what the first fetched and compiled.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..cache import cache_root
from .registries import REGISTRIES, exists, plain, published, version_key
from .shims import (
    SHIMS,
    STAMP,
    BuildFailed,
    ClientError,
    Shim,
    ToolMissing,
    directory,
    is_built,
    needs,
    shim,
    version,
)

__all__ = ["Built", "build", "parse_spec", "wanted"]


@dataclass(frozen=True, slots=True)
class Built:
    """What :func:`build` did for one client: ``built``, ``up to date`` or ``nothing to build``."""

    name: str
    outcome: str
    directory: Path


def parse_spec(text: str) -> tuple[str, str | None]:
    """``name`` or ``name@version`` as (name, version): the name must be a bundled client."""
    name, at, requested = text.partition("@")
    shim(name)
    if at and not requested:
        raise ClientError(f"{text}: no version after the @")
    return name, requested or None


def wanted(name: str, requested: str | None) -> str | None:
    """The version to build ``name`` at: None for its pinned (or installed) one, else
    ``requested`` once its registry says it is published; one line if it is not, or if the
    library is Debian's, which has one version."""
    if requested is None:
        return None
    item = shim(name)
    asked = plain(item.registry, requested)
    current = item.pinned or version(name)
    if item.registry == "deb":
        if current is not None and (asked == current or current.startswith(f"{asked}-")):
            return None
        raise ClientError(
            f"{name}@{requested}: {name} is Debian's package {item.package} "
            f"({current or 'not installed'}), one version only: no other can be had here"
        )
    if asked == current:
        return None
    if not exists(item.registry, item.package, asked):
        listed = published(item.registry, item.package)
        newest = f" (newest: {max(listed, key=version_key)})" if listed else ""
        raise ClientError(
            f"{name}@{requested}: {item.package} has published no version {asked} on "
            f"{REGISTRIES[item.registry]}{newest}"
        )
    return asked


def build(
    names: list[str] | None = None, into: Path | None = None, at: str | None = None
) -> list[Built]:
    """Builds the named clients (all by default) that need it, at version ``at`` (None: the
    pinned one; :func:`wanted` says which)."""
    items = [shim(name) for name in names] if names else list(SHIMS.values())
    done = []
    for item in items:
        place = directory(item.name, into, at)
        if item.build == "none" and at is None:
            needs(item)
            done.append(Built(item.name, "nothing to build", place))
            continue
        if is_built(item.name, into, at):
            done.append(Built(item.name, "up to date", place))
            continue
        needs(item)
        if missing := [deb for deb in item.debs if _missing_deb(deb)]:
            raise ToolMissing(
                f"client {item.name} needs the Debian packages {' '.join(missing)}: install them"
            )
        with _locked(place):
            if not is_built(item.name, into, at):  # (another process may have built it)
                _build_one(item, place, at)
                (place / STAMP).write_text(item.stamp(at))
        done.append(Built(item.name, "built", place))
    return done


@contextlib.contextmanager
def _locked(place: Path) -> Iterator[None]:
    """One build of a directory at a time, across processes (test workers, campaigns)."""
    place.parent.mkdir(parents=True, exist_ok=True)
    with (place.parent / f".{place.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _missing_deb(package: str) -> bool:
    """Whether a Debian package is known to be absent (not knowable off Debian: then False)."""
    if shutil.which("dpkg-query") is None:
        return False
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return not done.stdout.endswith(" installed")


def _copy_sources(item: Shim, into: Path) -> None:
    """The shim's sources into ``into``, each at its path under its shim's folder (the first
    part of its path: ``rust-lapin/src/main.rs`` -> ``src/main.rs``), a shared file at its name."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    for source, path in zip(item.sources, item.paths, strict=True):
        parts = Path(source).parts
        target = into.joinpath(*parts[1:]) if len(parts) > 1 else into / parts[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def _steps(item: Shim, place: Path, at: str | None) -> tuple[list[list[str]], dict[str, str]]:
    """The commands that build ``item`` at ``at`` in ``place``, and their environment."""
    env = dict(os.environ)
    cache = cache_root()
    source = place / "src"
    if item.build == "c":
        return [["cc", "-O2", "-Wall", "-o", item.name, *map(str, item.paths), "-lrabbitmq"]], env
    if item.build == "gomod":
        _copy_sources(item, source)
        env.update(
            GOMODCACHE=str(cache / "go-mod"),
            GOCACHE=str(cache / "go-build"),
            GOFLAGS="-mod=mod",
            GOTOOLCHAIN="local",
            GOSUMDB="off",  # (the checksum database is not reachable; go.sum is the pinned's)
            GOPROXY="https://proxy.golang.org",
        )
        get = [["go", "get", f"{item.package}@v{at}"]] if at else []
        return [*get, ["go", "build", "-o", str(place / item.name), "."]], env
    if item.build == "npm":  # (beside the node_modules of an earlier build, reused)
        for path in item.paths:
            shutil.copy2(path, place / path.name)
        install = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(place)]
        return [install, *([[*install, "--save-exact", f"{item.package}@{at}"]] if at else [])], env
    if item.build == "maven":
        _copy_sources(item, source)
        pom = next(source.rglob("pom.xml"))
        shutil.move(pom, place / "pom.xml")
        mvn = ["mvn", "-q", "-B", "-f", str(place / "pom.xml")]
        fetch = [*mvn, "dependency:copy-dependencies", f"-DoutputDirectory={place / 'lib'}"]
        fetch += ["-DincludeScope=runtime", f"-Dclient.version={at or item.pinned}"]
        shutil.rmtree(place / "lib", ignore_errors=True)
        shutil.rmtree(place / "classes", ignore_errors=True)
        javas = sorted(str(p) for p in source.rglob("*.java"))
        compile_ = ["javac", "-nowarn", "-d", str(place / "classes"), "-cp", f"{place / 'lib'}/*"]
        return [fetch, [*compile_, *javas]], env
    if item.build == "cargo":
        _copy_sources(item, source)
        if at:
            _repin(source / "Cargo.toml", item, at)
        env.update(CARGO_TARGET_DIR=str(cache / "cargo-target"))
        cargo = ["cargo", "build", "--release", "--manifest-path", str(source / "Cargo.toml")]
        return [[*cargo, *([] if at else ["--locked"])]], env
    # a Python library at another version, beside the shim (which stays where it is)
    if item.registry != "python":
        raise ClientError(f"client {item.name}: {REGISTRIES[item.registry]} has one version here")
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-input", "--target", str(place)]
    return [[*pip, f"{item.package}=={at}"]], env


def _repin(manifest: Path, item: Shim, at: str) -> None:
    """The library's exact pin in the crate's Cargo.toml rewritten to ``at``."""
    lines = manifest.read_text(encoding="utf-8").splitlines(keepends=True)
    pin = f'"={item.pinned}"'
    for number, line in enumerate(lines):
        if line.startswith(f"{item.package} =") and pin in line:
            lines[number] = line.replace(pin, f'"={at}"')
            manifest.write_text("".join(lines), encoding="utf-8")
            return
    raise BuildFailed(f"{manifest}: no line `{item.package} = ... {pin}` to pin {at} in")


def _build_one(item: Shim, place: Path, at: str | None) -> None:
    place.mkdir(parents=True, exist_ok=True)
    (place / STAMP).unlink(missing_ok=True)
    steps, env = _steps(item, place, at)
    workdir = place / "src" if item.build in ("gomod",) else place
    log = place / "build.log"
    with log.open("w") as out:
        for step in steps:
            done = subprocess.run(
                step, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, check=False
            )
            if done.returncode != 0:
                out.flush()
                lines = [line for line in log.read_text().splitlines() if line.strip()]
                last = lines[-1] if lines else "no output"
                called = f"{item.name}@{at}" if at else item.name
                raise BuildFailed(
                    f"building client {called} failed ({Path(step[0]).name} exit "
                    f"{done.returncode}): {last} (the whole log: {log})"
                )
    if item.build == "cargo":  # (the shared target directory holds one build of the crate)
        binary = cache_root() / "cargo-target" / "release" / f"amqpfuzz-shim-{item.name}"
        shutil.copy2(binary, place / item.name)
