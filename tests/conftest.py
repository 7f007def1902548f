"""The whole suite's one rule about speed: a test that starts a broker, Spark (a JVM) or any
other process is marked ``slow``, and a test that is not marked cannot start one.

While an unmarked test is set up and runs, starting a process fails it at once, naming the
test: so ``pytest -m "not slow"`` is the fast unit suite, and it provably starts no broker, JVM
or subprocess. (A fake peer in a thread of the test's own process is fine.) The slow tests run
first (``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = ["NotSlow"]


class NotSlow(AssertionError):
    """A test not marked slow started a process."""


@contextmanager
def _no_processes(item: pytest.Item) -> Iterator[None]:
    """Starting a process, while it lasts, fails ``item``."""
    if item.get_closest_marker("slow") is not None:
        yield
        return

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise NotSlow(f"{item.nodeid} is not marked slow, but {what}: mark it slow")

        return refused

    saved = (subprocess.Popen._execute_child, os.fork, os.posix_spawn, os.posix_spawnp)
    subprocess.Popen._execute_child = refuse("starts a process")  # type: ignore[attr-defined]
    os.fork = refuse("forks")
    os.posix_spawn = refuse("spawns a process")
    os.posix_spawnp = refuse("spawns a process")
    try:
        yield
    finally:
        (
            subprocess.Popen._execute_child,  # type: ignore[attr-defined]
            os.fork,
            os.posix_spawn,
            os.posix_spawnp,
        ) = saved


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _no_processes(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _no_processes(item):
        return (yield)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (stable otherwise): pytest-xdist hands out tests in this order (two
    at a time, the Makefile's ``--maxschedchunk 2``), so a test of a minute starts early and the
    quick ones left fill the workers' ends, instead of starting last and keeping one worker
    busy after the others are done."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
