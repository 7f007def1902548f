"""A flaky failure in the pytest plugin: its item passes, reported as flaky (a count of its own
and a section of the summary), unless ``--amqp-flaky-fails`` makes it fail. In-process, on the
fake family's peer (a thread of this process): no broker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.fake import PROTOCOL, Peer, registered

TINY = """
from hypothesis import settings
settings.register_profile("tiny", max_examples=5, database=None)
"""


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    with registered(monkeypatch) as peer:
        yield peer


def run(pytester: pytest.Pytester, peer: Peer, *more: str) -> pytest.RunResult:
    pytester.makeconftest(TINY)
    return pytester.runpytest_inprocess(
        "--amqp-url", peer.url, "--amqp-protocol", PROTOCOL, "--amqp-fuzz", "--amqp-profile",
        "none", "--hypothesis-profile", "tiny", "-p", "no:cacheprovider", "-k",
        "wrong-once or wrong-code", "-rA", *more,
    )  # fmt: skip


def test_a_flaky_failure_passes_its_item_said_flaky(pytester: pytest.Pytester, peer: Peer) -> None:
    done = run(pytester, peer)
    assert done.parseoutcomes() == {"failed": 1, "flaky": 1, "deselected": 5}
    done.stdout.fnmatch_lines(
        [
            "*amqpfuzz: flaky failures (not counted as failures)*",
            "*wrong-once: reaction:-:wrong-once:channel-close/404->channel-close/406 "
            "(reproduced 0/3)*",
            "*1 failed*1 flaky*",
        ]
    )
    assert done.ret == pytest.ExitCode.TESTS_FAILED  # (the wrong-code item, confirmed 3/3)


def test_flaky_fails_with_the_option(pytester: pytest.Pytester, peer: Peer) -> None:
    done = run(pytester, peer, "--amqp-flaky-fails")
    done.assert_outcomes(failed=2)
    done.stdout.fnmatch_lines(["*wrong-once*", "*replayed:  reproduced 0/3*"])
