"""Expectation profiles as data: a profile for some protocols of a family, a profile that
extends another, wildcard rules, a notice; and every bundled profile loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amqpfuzz.fuzzer.brokers.profiles import PROFILES, ProfileError, find_profile, load_profile


def test_every_bundled_profile_loads_with_reasons() -> None:
    profiles = [load_profile(path) for path in sorted(PROFILES.glob("*.toml"))]
    assert len(profiles) >= 5
    assert all(d.reason for p in profiles for d in p.deviations)


def test_0_9_on_rabbitmq_has_its_own_profile_extending_0_9_1s() -> None:
    own = find_profile(None, "RabbitMQ", "3.10.8", "0-9")
    base = find_profile(None, "RabbitMQ", "3.10.8", "0-9-1")
    assert own is not None and base is not None
    assert (own.name, base.name) == ("rabbitmq-3.10-amqp0-9", "rabbitmq-3.10")
    assert own.notice and "0-9-1" in own.notice and not base.notice
    # its own deviations first, then every one of the base's
    assert own.deviations[-len(base.deviations) :] == base.deviations
    assert len(own.deviations) > len(base.deviations)
    # 0-8 is of the family too, but the 0-9 profile is not for it
    assert find_profile(None, "RabbitMQ", "3.10.8", "0-8") == base


def test_a_rule_with_wildcards_covers_a_whole_class() -> None:
    own = find_profile(None, "RabbitMQ", "3.10.8", "0-9")
    assert own is not None
    covered = own.deviation(
        "reaction:-:above-frame-max:connection-close/501->socket-close", "file.publish"
    )
    assert covered is not None and "file class" in covered.reason
    assert own.deviation("reaction:-:x:connection-close/501->socket-close", "basic.publish") is None
    assert own.deviation(None, "exchange.declare/type") is not None
    assert own.deviation(None, "exchange.declare/typeX") is None


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("extends", "message"),
    [
        ("no-such-profile", "which is no bundled profile"),
        ("rabbitmq-3.10-amqp1-0", "a profile for the amqp10 family"),
    ],
)
def test_a_bad_extends_is_one_clear_error(tmp_path: Path, extends: str, message: str) -> None:
    path = _write(tmp_path, "mine", f'product = "X"\nextends = "{extends}"\n')
    with pytest.raises(ProfileError, match=message):
        load_profile(path)


def test_a_profile_that_extends_itself_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "mine", 'product = "X"\nextends = "mine"\n')
    with pytest.raises(ProfileError, match="extends it again"):
        load_profile(path)


def test_a_deviation_that_happens_only_sometimes_is_no_xpass_when_it_does_not(
    tmp_path: Path,
) -> None:
    from amqpfuzz.fuzzer.brokers import parse_target
    from amqpfuzz.fuzzer.engine.targets import TargetState
    from amqpfuzz.fuzzer.engine.verdicts import judge_against

    path = _write(
        tmp_path,
        "racy",
        'product = "X"\n'
        '[[deviation]]\nrule = "basic/02"\nreason = "a race"\nsometimes = true\n'
        '[[deviation]]\nrule = "basic/03"\nreason = "always"\n',
    )
    target = TargetState(parse_target("amqp://127.0.0.1:5672/"), profile_name=str(path))
    target.announce(target.announced)
    verdict = {
        (rule, status): judge_against(target, status, rule=rule, xpass=True).verdict
        for rule in ("basic/02", "basic/03")
        for status in ("pass", "fail")
    }
    assert verdict == {
        ("basic/02", "pass"): "pass",
        ("basic/02", "fail"): "xfail",
        ("basic/03", "pass"): "xpass",
        ("basic/03", "fail"): "xfail",
    }
    bad = _write(
        tmp_path, "bad", 'product = "X"\n[[deviation]]\nrule = "a"\nreason = "r"\nsometimes = 1\n'
    )
    with pytest.raises(ProfileError, match="sometimes is true or false"):
        load_profile(bad)


def test_one_cause_may_name_the_several_failures_it_gives(tmp_path: Path) -> None:
    """``signatures``: one entry, one reason, each failure named in full (no pattern)."""
    path = _write(
        tmp_path,
        "mine",
        'product = "X"\n[[deviation]]\nsignatures = ["a:-:op:x->y", "a:-:op:x->z"]\n'
        'reason = "one cause"\n',
    )
    profile = load_profile(path)
    assert [(d.signature, d.reason) for d in profile.deviations] == [
        ("a:-:op:x->y", "one cause"),
        ("a:-:op:x->z", "one cause"),
    ]
    assert profile.deviation("a:-:op:x->w") is None
    for bad, says in (
        ("signatures = []", "signatures is a non-empty list of signatures"),
        ('signatures = ["a"]\nsignature = "b"', "both signature and signatures"),
        ('signatures = ["a"]\nrule = "b"', "exactly one of signature"),
    ):
        _write(tmp_path, "bad", f'product = "X"\n[[deviation]]\n{bad}\nreason = "r"\n')
        with pytest.raises(ProfileError, match=says):
            load_profile(tmp_path / "bad.toml")


def test_a_rule_entry_does_not_excuse_a_crash() -> None:
    """Broker-J's 0-8 entry for basic.consume (every case of it drops the connection) covers its
    failures, but not the broker going down on one: a crash stays a failure."""
    profile = find_profile(None, "Apache Qpid Broker-J Core", "10.1.0", "0-8")
    assert profile is not None
    dropped = "reaction:-:before-open:connection-close/504->socket-close"
    assert profile.deviation(dropped, "basic.consume", "before-open", "0-8") is not None
    crash = "liveness:-:before-open:connection-close/504->broker-down"
    assert profile.deviation(crash, "basic.consume", "before-open", "0-8") is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[deviation]\nsignature = "a"\nreason = "r"\n', "are [[deviation]] tables"),
        ("deviation = [1]\n", "is not a table"),
    ],
)
def test_a_deviation_that_is_not_a_table_is_one_clear_error(
    tmp_path: Path, text: str, says: str
) -> None:
    path = _write(tmp_path, "mine", f'product = "X"\n{text}')
    with pytest.raises(ProfileError, match=re.escape(says)):
        load_profile(path)
