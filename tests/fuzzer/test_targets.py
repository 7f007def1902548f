"""Targets: URLs parsed once, never shown with their password, loopback unless allowed."""

from __future__ import annotations

import pytest

from amqpfuzz.fuzzer.brokers import TargetError, parse_target


def test_url_parts_and_defaults() -> None:
    target = parse_target("amqp://alice:s3cret@127.0.0.1:5673/vhost%2Fa")
    assert (target.host, target.port, target.vhost, target.user) == (
        "127.0.0.1",
        5673,
        "vhost/a",
        "alice",
    )
    assert target.password == "s3cret"
    plain = parse_target("amqp://localhost")
    assert (plain.port, plain.vhost, plain.user, plain.password) == (5672, "/", "guest", "guest")
    assert parse_target("amqps://localhost").port == 5671


def test_the_password_is_in_no_text() -> None:
    target = parse_target("amqp://alice:s3cret@127.0.0.1:5673/%2F")
    for text in (str(target), repr(target), target.safe_url, f"{target}"):
        assert "s3cret" not in text and "alice" in text


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://localhost", "scheme must be amqp"),
        ("amqp://", "no host"),
        ("amqp://u:p@localhost:notaport/", "not a broker URL"),
        ("amqp://u:hunter2@example.com/", "--allow-remote"),
    ],
)
def test_bad_urls_are_one_line_without_the_password(url: str, message: str) -> None:
    with pytest.raises(TargetError, match=message) as info:
        parse_target(url)
    assert "hunter2" not in str(info.value) and "\n" not in str(info.value)


def test_remote_targets_need_permission() -> None:
    target = parse_target("amqp://u:p@192.0.2.1/", allow_remote=True)
    assert not target.is_loopback


def test_tls_context_options(tmp_path: object) -> None:
    target = parse_target("amqps://localhost", verify=False)
    context = target.ssl_context()
    assert context is not None and not context.check_hostname
    with pytest.raises(TargetError, match="cannot use CA file"):
        parse_target("amqps://localhost", ca_file="/nonexistent/ca.pem").ssl_context()
