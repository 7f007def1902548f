"""The versions a client library has published, read from its own registry: PyPI, npm, Maven
Central, the Go module proxy or crates.io (a Debian-packaged library has the one it installed).

:func:`published` lists them oldest first (yanked crates and PyPI releases without files left
out); :func:`version_key` orders versions the way those registries' numbering reads (numbers as
numbers; a pre-release, ``1.0.0-M20`` or ``2.0.0rc1``, before its release).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from functools import cache
from typing import Any

from lxml import etree

from .shims import ClientError

__all__ = [
    "REGISTRIES",
    "RegistryError",
    "exists",
    "go_path",
    "is_release",
    "plain",
    "published",
    "version_key",
]

# the registries a library's versions come from, by the registry's word in clients.toml
REGISTRIES = {
    "python": "PyPI",
    "npm": "npm",
    "maven": "Maven Central",
    "go": "the Go module proxy",
    "crates": "crates.io",
    "deb": "Debian",
}
TIMEOUT = 30.0


class RegistryError(ClientError):
    """A registry that cannot be read; says which and why in one line."""


def published(kind: str, package: str) -> list[str]:
    """Every version ``package`` has published on its registry, oldest first (Go's without
    their ``v``)."""
    reader = _READERS.get(kind)
    if reader is None:
        raise ClientError(
            f"{package}: no registry lists its versions ({REGISTRIES.get(kind, kind)})"
        )
    return sorted(set(reader(package)), key=version_key)


def version_key(version: str) -> tuple[Any, ...]:
    """A sort key: the numbers in order, a pre-release before its release."""
    text = version.removeprefix("v")
    found = re.match(r"\d+(?:\.\d+)*", text)
    head = found.group() if found else ""
    numbers = [int(part) for part in head.split(".") if part]
    while numbers and numbers[-1] == 0:  # 1.0 and 1.0.0 are one version
        numbers.pop()
    rest = text[len(head) :].lstrip("-.+_")
    words = tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p.lower())
        for p in re.findall(r"\d+|[a-zA-Z]+", rest)
    )
    return (tuple(numbers), 0 if rest else 1, words)


def is_release(version: str) -> bool:
    """Not a pre-release (a milestone, candidate, alpha, beta, snapshot or dev build): nothing
    after the numbers but a build's metadata (``+...``), a post-release or ``Final``."""
    text = version.removeprefix("v").split("+")[0]
    found = re.match(r"\d+(?:\.\d+)*", text)
    rest = text[found.end() if found else 0 :].lstrip("-.").lower()
    return not rest or rest.startswith("post") or rest in ("final", "ga", "release")


@cache
def _get(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "amqpfuzz"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return bytes(answer.read())
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 404, 410):  # (the Go module proxy refuses what it does not serve)
            return b""
        raise RegistryError(f"{url}: the registry answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RegistryError(f"{url}: the registry cannot be reached ({reason})") from None


def _pypi(package: str) -> list[str]:
    body = _get(f"https://pypi.org/pypi/{urllib.parse.quote(package)}/json")
    releases = json.loads(body).get("releases", {}) if body else {}
    return [v for v, files in releases.items() if files and not all(f.get("yanked") for f in files)]


def _npm(package: str) -> list[str]:
    body = _get(f"https://registry.npmjs.org/{package.replace('/', '%2f')}")
    return list(json.loads(body).get("versions", {})) if body else []


def _maven(package: str) -> list[str]:
    group, artifact = package.split(":")
    body = _get(
        f"https://repo1.maven.org/maven2/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    )
    if not body:
        return []
    return [str(v.text) for v in etree.fromstring(body).iterfind("./versioning/versions/version")]


def go_path(module: str) -> str:
    """A module's path as the proxy spells it (capitals as ``!`` and the lower case)."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group().lower(), module)


def _go(module: str) -> list[str]:
    body = _get(f"https://proxy.golang.org/{go_path(module)}/@v/list").decode()
    return [line.strip().removeprefix("v") for line in body.split() if line.strip()]


def _crates(name: str) -> list[str]:
    lower = name.lower()
    prefix = {1: "1", 2: "2", 3: f"3/{lower[0]}"}.get(len(lower), f"{lower[:2]}/{lower[2:4]}")
    body = _get(f"https://index.crates.io/{prefix}/{lower}").decode()
    entries = [json.loads(line) for line in body.splitlines() if line.strip()]
    return [e["vers"] for e in entries if not e.get("yanked")]


_READERS = {"python": _pypi, "npm": _npm, "maven": _maven, "go": _go, "crates": _crates}


def plain(kind: str, version: str) -> str:
    """A version as :func:`published` lists it (Go's without the ``v`` its tags carry)."""
    return version.removeprefix("v") if kind == "go" else version


def exists(kind: str, package: str, version: str) -> bool:
    """Whether ``package`` published ``version``: in its registry's list, or (the Go module
    proxy, whose list may leave versions out) served when asked for by name."""
    if version in published(kind, package):
        return True
    if kind != "go":
        return False
    return bool(_get(f"https://proxy.golang.org/{go_path(package)}/@v/v{version}.info"))
