"""A private certificate authority for a throwaway broker's TLS listener (``amqps://``).

``openssl`` (Debian's package) makes a CA and a server certificate it signs, for ``localhost``
and ``127.0.0.1``, in a directory of the broker's own; a client verifies the broker with the
CA file (``--ca-file``), as it would a real one.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import BrokerError

__all__ = ["Certificates", "make_certificates"]


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA's certificate: what clients trust
    cert: Path  # the server's certificate, signed by the CA
    key: Path  # the server's private key


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(nothing)"])[-1]
        raise BrokerError(f"openssl {args[0]} failed: {last}")


def make_certificates(directory: Path, days: int = 30) -> Certificates:
    """A new CA and a server certificate for the loopback host, in ``directory``."""
    if shutil.which("openssl") is None:
        raise BrokerError("openssl is not installed (make check installs it)")
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
        "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=amqpfuzz throwaway CA",
        cwd=directory,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=localhost",
        cwd=directory,
    )  # fmt: skip
    (directory / "server.ext").write_text(
        "subjectAltName = DNS:localhost, IP:127.0.0.1\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", str(days), "-extfile", "server.ext", "-out", "server.pem",
        cwd=directory,
    )  # fmt: skip
    return Certificates(directory / "ca.pem", directory / "server.pem", directory / "server.key")
