"""The JVM brokers amqpfuzz starts itself: Apache Qpid Broker-J (0-8, 0-9, 0-9-1, 0-10 and 1.0
on one port) and ActiveMQ Artemis (1.0), from their binary distributions on Maven Central.

``maven/pom.xml`` pins their versions (and JaCoCo's); :func:`install` has Maven fetch and unpack
them into a cache shared by every checkout on the machine (``$AMQPFUZZ_CACHE``, else
``~/.cache/amqpfuzz``), once: ``make setup`` runs it, and a second run only checks that each is
there. Both brokers run on the machine's Java 17 with small heaps, stores in their own
directories (durable messages survive a restart, as on RabbitMQ), on free
loopback ports, in their own directories, with users ``guest``/``guest`` (PLAIN) and anonymous
logins.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lxml import etree

from ..cache import cache_root
from ..coverage import Probe
from ..coverage.jvm import JacocoCoverage, agent_option
from ..coverage.plans import plans_of
from .broker import Broker, free_port
from .errors import BrokerError

__all__ = [
    "Artemis",
    "BrokerJ",
    "Distribution",
    "JvmBroker",
    "cache_directory",
    "distributions",
    "install",
    "installed",
    "java",
]

POM = Path(__file__).with_name("maven") / "pom.xml"
HEAP = "-Xmx512m"  # a fuzzing target with short queues: 512 MiB leaves room for three


def cache_directory() -> Path:
    """Where the JVM peers are unpacked: shared by every checkout of the machine."""
    return cache_root() / "jvm"


@cache
def versions() -> dict[str, str]:
    """The pinned versions in ``maven/pom.xml``: ``broker-j``, ``artemis``, ``jacoco``."""
    tree = etree.parse(str(POM))
    found = tree.find("{http://maven.apache.org/POM/4.0.0}properties")
    assert found is not None, f"{POM} has no <properties>"
    return {
        element.tag.split("}")[1].removesuffix(".version"): (element.text or "").strip()
        for element in found
        if isinstance(element.tag, str) and element.tag.endswith(".version")
    }


@dataclass(frozen=True)
class Distribution:
    """One unpacked JVM peer: where it lives and the file that says it is whole."""

    name: str
    home: Path
    marker: str  # a file relative to home that only a whole unpacked distribution has

    @property
    def present(self) -> bool:
        return (self.home / self.marker).is_file()


def distributions() -> dict[str, Distribution]:
    """The JVM peers at their pinned versions, in the cache."""
    v, root = versions(), cache_directory()
    return {
        "broker-j": Distribution(
            f"Qpid Broker-J {v['broker-j']}",
            root / f"broker-j-{v['broker-j']}" / "qpid-broker" / v["broker-j"],
            f"lib/qpid-broker-{v['broker-j']}.jar",
        ),
        "artemis": Distribution(
            f"ActiveMQ Artemis {v['artemis']}",
            root / f"artemis-{v['artemis']}" / f"apache-artemis-{v['artemis']}",
            "bin/artemis",
        ),
        "jacoco": Distribution(
            f"JaCoCo {v['jacoco']}", root / f"jacoco-{v['jacoco']}", "jacococore.jar"
        ),
    }


def installed(name: str) -> Distribution:
    """The distribution ``name``, or a BrokerError that says how to install it."""
    found = distributions()[name]
    if not found.present:
        raise BrokerError(
            f"{found.name} is not installed in {cache_directory()} "
            "(make setup, or amqpfuzz broker install, fetches it from Maven Central)"
        )
    return found


def java() -> str:
    """The Java these brokers run on (17 or newer)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        raise BrokerError("java is not installed (make setup installs OpenJDK 17)")
    return found


def install() -> list[str]:
    """Fetch what is missing (Maven, from Central, at the pom's versions); what is there is
    only checked. Returns what was fetched."""
    missing = [d.name for d in distributions().values() if not d.present]
    if not missing:
        return []
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError("mvn is not installed: Maven fetches the JVM brokers")
    done = subprocess.run(
        [mvn, "-q", "-B", "-f", str(POM), "validate", f"-Dcache={cache_directory()}"],
        capture_output=True,
        text=True,
        check=False,
    )
    still = [d.name for d in distributions().values() if not d.present]
    if done.returncode != 0 or still:
        said = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]
        why = said[0].strip() if said else f"maven exited with status {done.returncode}"
        raise BrokerError(f"cannot fetch {', '.join(still or missing)} from Maven Central: {why}")
    return missing


class JvmBroker(Broker):
    """A broker that runs on the JVM, unpacked from its distribution in the cache; measured,
    with JaCoCo's agent in its JVM serving what ran on :attr:`coverage_port`."""

    executable = "java"
    distribution = ""
    jars = "lib"  # where, under its home, the jars it runs are

    def __init__(
        self,
        port: int | None = None,
        directory: Path | None = None,
        *,
        tls: bool = False,
        coverage: str | None = None,
    ) -> None:
        super().__init__(port, directory, tls=tls, coverage=coverage)
        self.coverage_port = free_port() if self.plan is not None else None
        if self.coverage_port is not None:
            self.more_ports = (*self.more_ports, "coverage_port")
        self._probe: JacocoCoverage | None = None

    def choose_ports(self) -> None:
        super().choose_ports()
        if self.coverage_port is not None:
            self.coverage_port = free_port()
        self._probe = None

    @property
    def home(self) -> Path:
        return installed(self.distribution).home

    @property
    def probe(self) -> Probe | None:
        """JaCoCo's agent in its JVM, read against the jars it runs: one probe per port, so
        that its layout (an analysis of every measured class) is asked for once."""
        if self.plan is None or self.coverage_port is None:
            return None
        if self._probe is None:
            jacoco = installed("jacoco").home
            self._probe = JacocoCoverage(
                self.plan, self.coverage_port, (str(self.home / self.jars),), str(jacoco), java()
            )
        return self._probe

    def java_options(self) -> list[str]:
        """Options for its JVM: a small heap, and JaCoCo's agent where its code is measured."""
        options = [HEAP, "-XX:+UseSerialGC"]
        if self.plan is not None and self.coverage_port is not None:
            plans = plans_of(self.kind)
            options.append(agent_option(installed("jacoco").home, plans, self.coverage_port))
        return options


# -- Qpid Broker-J ---------------------------------------------------------------------------

AUTO_QUEUES = {
    "pattern": ".*",
    "createdOnPublish": True,
    "createdOnConsume": True,
    "nodeType": "queue",
    "attributes": {},
}
ALIASES = [
    {"name": "nameAlias", "type": "nameAlias"},
    {"name": "defaultAlias", "type": "defaultAlias"},
    {"name": "hostnameAlias", "type": "hostnameAlias"},
    # "/" (the URL's %2F) names the one virtual host whatever the protocol: the 0-8 family's
    # code drops a leading "/", 0-10's and 1.0's do not
    {
        "name": "slash",
        "type": "patternMatchingAlias",
        "pattern": "/",
        "virtualHostNode": "default",
    },
]


class BrokerJ(JvmBroker):
    """Apache Qpid Broker-J: every AMQP version of the seeds on one port (the header chooses),
    users ``guest``/``guest`` over PLAIN on it and ANONYMOUS on :attr:`anonymous_port`, a
    Derby virtual host in its directory that creates a queue where a 1.0 link names one, its
    operational log on stdout."""

    kind = "qpid-broker-j"
    distribution = "broker-j"
    more_ports = ("anonymous_port",)
    protocols = ("0-9-1", "0-9", "0-8", "0-10", "1.0")

    def __init__(
        self,
        port: int | None = None,
        directory: Path | None = None,
        *,
        tls: bool = False,
        coverage: str | None = None,
    ) -> None:
        super().__init__(port, directory, tls=tls, coverage=coverage)
        self.anonymous_port = free_port()

    def choose_ports(self) -> None:
        super().choose_ports()
        self.anonymous_port = free_port()

    def configure(self) -> None:
        def port(name: str, number: int, provider: str) -> dict[str, object]:
            return {
                "name": name,
                "port": number,
                "bindingAddress": "127.0.0.1",
                "authenticationProvider": provider,
                "virtualhostaliases": ALIASES,
            }

        def logged(name: str, level: str) -> dict[str, str]:
            return {"name": name, "type": "NameAndLevel", "level": level, "loggerName": name}

        config = {
            "name": "amqpfuzz",
            "modelVersion": "9.0",
            "authenticationproviders": [
                {
                    "name": "plain",
                    "type": "Plain",
                    "secureOnlyMechanisms": [],  # PLAIN on a port without TLS: loopback only
                    "users": [{"name": "guest", "type": "managed", "password": "guest"}],
                },
                {"name": "anonymous", "type": "Anonymous"},
            ],
            "brokerloggers": [
                {
                    "name": "console",
                    "type": "Console",
                    "brokerloginclusionrules": [
                        logged("ROOT", "WARN"),
                        logged("qpid.message.broker.*", "INFO"),
                    ],
                }
            ],
            "ports": [
                port("AMQP", self.port, "plain"),
                port("AMQP-ANONYMOUS", self.anonymous_port, "anonymous"),
            ],
            "virtualhostnodes": [
                {
                    "name": "default",
                    # Derby in its directory, for the host's configuration and messages alike:
                    # durable messages are taken (a Memory store refuses them), and they and
                    # durable queues survive a restart, as the durability checks need (a
                    # restart recovers the host from the store, not from this configuration)
                    "type": "DERBY",
                    "storePath": str(self.directory / "store"),
                    "defaultVirtualHostNode": "true",
                    # Started for 1.0, a link's address names a queue created when first used,
                    # as on the other brokers amqpfuzz runs (Broker-J's default: not-found);
                    # not for the 0-8 family, where it would create what 404s must refuse
                    "virtualHostInitialConfiguration": json.dumps(
                        {
                            "type": "ProvidedStore",
                            "nodeAutoCreationPolicies": (
                                [AUTO_QUEUES] if self.family == "amqp10" else []
                            ),
                        }
                    ),
                }
            ],
        }
        (self.directory / "config.json").write_text(json.dumps(config, indent=1) + "\n")

    def ready(self) -> bool:
        return "BRK-1004" in self.logged_since_start()  # Qpid Broker Ready

    def command(self) -> list[str]:
        return [
            java(),
            *self.java_options(),
            "-cp",
            str(self.home / "lib" / "*"),
            "org.apache.qpid.server.Main",
            "--store-type",
            "Memory",
            "--initial-config-path",
            str(self.directory / "config.json"),
            "-prop",
            f"qpid.work_dir={self.directory / 'work'}",
        ]


# -- ActiveMQ Artemis ------------------------------------------------------------------------

_ACCEPTORS = re.compile(r"<acceptors>.*?</acceptors>", re.S)
# an address a 1.0 link creates is a queue (anycast), as on the other brokers amqpfuzz runs:
# Artemis's default, multicast, drops what is sent before anyone subscribes
_EVERY_ADDRESS = '<address-setting match="#">'
_ANYCAST = (
    "<default-address-routing-type>ANYCAST</default-address-routing-type>"
    "<default-queue-routing-type>ANYCAST</default-queue-routing-type>"
)


class Artemis(JvmBroker):
    """ActiveMQ Artemis: an instance made by ``artemis create`` in its directory (no web console,
    its journal in its directory, addresses created as anycast queues), with one acceptor: AMQP
    on our port. ``guest``/``guest`` over PLAIN, and
    ANONYMOUS."""

    kind = "artemis"
    distribution = "artemis"
    protocols = ("1.0",)

    @property
    def instance(self) -> Path:
        return self.directory / "instance"

    def configure(self) -> None:
        if not (self.instance / "bin" / "artemis").exists():
            made = subprocess.run(
                [
                    str(self.home / "bin" / "artemis"),
                    "create",
                    str(self.instance),
                    "--silent",
                    "--user=guest",
                    "--password=guest",
                    "--allow-anonymous",
                    "--no-web",
                    "--nio",
                    "--no-autotune",
                    "--no-fsync",
                    "--host=127.0.0.1",
                ],
                env=self.environment(),
                capture_output=True,
                text=True,
                check=False,
            )
            if made.returncode != 0:
                said = (made.stdout + made.stderr).strip().splitlines()
                raise BrokerError(
                    f"artemis: cannot create its instance: {said[-1] if said else made.returncode}"
                )
        xml = self.instance / "etc" / "broker.xml"
        acceptor = (
            f'<acceptors><acceptor name="amqp">tcp://127.0.0.1:{self.port}?protocols=AMQP;'
            "amqpCredits=1000;amqpLowCredits=300;amqpMinLargeMessageSize=102400"
            "</acceptor></acceptors>"
        )
        text = _ACCEPTORS.sub(acceptor, xml.read_text(), count=1)
        if _ANYCAST not in text:  # a restart finds it there already
            text = text.replace(_EVERY_ADDRESS, _EVERY_ADDRESS + _ANYCAST, 1)
        xml.write_text(text)

    def ready(self) -> bool:
        return "AMQ221007" in self.logged_since_start()  # Server is now active

    def environment(self) -> dict[str, str]:
        options = [*self.java_options(), "-Dlog4j2.disableJmx=true"]
        return {**os.environ, "JAVA_ARGS": " ".join(options), "JAVACMD": java()}

    def command(self) -> list[str]:
        return [str(self.instance / "bin" / "artemis"), "run"]
