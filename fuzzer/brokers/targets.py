"""Broker targets: ``amqp://`` and ``amqps://`` URLs, parsed once, never shown with a password.

A :class:`Target` keeps the credentials to itself: its ``str``, ``repr`` and :attr:`safe_url`
leave the password out, so that nothing printed, logged or recorded can carry it. Fuzzing can
crash a broker, so a target off the loopback network needs ``allow_remote``.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from amqpfuzz.spec import AmqpfuzzError

__all__ = ["Target", "TargetError", "parse_target"]


class TargetError(AmqpfuzzError):
    """A target URL that cannot be used: malformed, remote without permission, bad TLS file."""


@dataclass(frozen=True)
class Target:
    """Where a broker is and how to log in; the password is never part of any text."""

    host: str
    port: int
    vhost: str = "/"
    user: str = "guest"
    password: str = field(default="guest", repr=False)
    tls: bool = False
    ca_file: str | None = None
    verify: bool = True
    label: str = ""

    @property
    def safe_url(self) -> str:
        """The URL without the password (the user name stays: it says which account)."""
        scheme = "amqps" if self.tls else "amqp"
        vhost = "%2F" if self.vhost == "/" else self.vhost
        return f"{scheme}://{self.user}@{self.host}:{self.port}/{vhost}"

    def __str__(self) -> str:
        return self.label or self.safe_url

    def __repr__(self) -> str:
        return f"Target({self.safe_url})"

    @property
    def is_loopback(self) -> bool:
        try:
            infos = socket.getaddrinfo(self.host, self.port, proto=socket.IPPROTO_TCP)
        except OSError:
            return False
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise TargetError(
                f"{self.safe_url}: cannot use CA file {self.ca_file}: {exc}"
            ) from None
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


def parse_target(
    url: str,
    *,
    allow_remote: bool = False,
    ca_file: str | None = None,
    verify: bool = True,
    label: str = "",
) -> Target:
    """A :class:`Target` from ``amqp[s]://user:password@host:port/vhost``.

    Raises TargetError (never echoing the password) for anything else, and for a host off the
    loopback network unless ``allow_remote``.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"{_redact(url)}: not a broker URL ({exc})") from None
    if parts.scheme not in ("amqp", "amqps"):
        raise TargetError(f"{_redact(url)}: the scheme must be amqp:// or amqps://")
    if not parts.hostname:
        raise TargetError(f"{_redact(url)}: no host")
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    target = Target(
        host=parts.hostname,
        port=port or (5671 if parts.scheme == "amqps" else 5672),
        vhost=unquote(path) if path else "/",
        user=unquote(parts.username) if parts.username else "guest",
        password=unquote(parts.password) if parts.password is not None else "guest",
        tls=parts.scheme == "amqps",
        ca_file=ca_file,
        verify=verify,
        label=label,
    )
    if not allow_remote and not target.is_loopback:
        raise TargetError(
            f"{target.safe_url} is not on this machine's loopback network; fuzzing can crash "
            "a broker, so say --allow-remote if you mean it"
        )
    return target


def _redact(url: str) -> str:
    """The URL with anything between ``://`` and ``@`` reduced to the user name."""
    head, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    credentials, _, host = rest.partition("@")
    return f"{head}://{credentials.split(':', 1)[0]}@{host}"
