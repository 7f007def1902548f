"""The plugin's options: the table of ``--amqp-*`` options with their ini keys and environment
variables, resolved once per pytest process into :class:`Options` (command line > environment >
ini file > default), and the run's seed (chosen once, kept in the pytest cache, handed to
pytest-xdist workers). Imports only pytest and the standard library.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

import pytest

__all__ = ["BROKERS", "CACHE_KEY", "KEY", "Options", "add_options", "options_of", "resolve"]

CACHE_KEY = "amqpfuzz/seed"
BOOLEANS = {"1": True, "true": True, "yes": True, "on": True}
BOOLEANS |= {"0": False, "false": False, "no": False, "off": False}
# the throwaway broker kinds (amqpfuzz.fuzzer.brokers.BROKERS: a test keeps them equal)
BROKERS = ("rabbitmq", "garagemq", "qpid-proton", "qpid-broker-j", "artemis")

KEY = pytest.StashKey["Options"]()


@dataclass
class Options:
    """The plugin's settings, resolved from the command line, environment and ini file."""

    urls: tuple[str, ...] = ()
    broker: str | None = None
    protocol: str = "0-9-1"  # the default protocol; checked against the registry when used
    profile: str | None = None
    results: str | None = None
    seed: int = 0
    allow_remote: bool = False
    scenarios: bool = False
    fuzz: bool = False
    clients: tuple[str, ...] = ()  # client libraries to fuzz, by their bundled shims' names
    flaky_fails: bool = False  # a flaky failure fails its item (else it passes, said flaky)
    active: bool = False  # any option given: the header shows the plugin, the seed is stored
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    worker: str = "main"  # the pytest-xdist worker id

    @property
    def prefix(self) -> str:
        """What every queue and exchange name this process creates starts with."""
        return f"amqpfuzz-{self.run_id[:8]}-{self.worker}-"

    def seed_for(self, nodeid: str) -> int:
        """An item's own Hypothesis seed: the run's seed and its node id (stable everywhere)."""
        return (self.seed + zlib.crc32(nodeid.encode())) % 2**32


# -- options ---------------------------------------------------------------------------------


_OPTIONS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("url", "args", "broker URL, amqp[s]://user:password@host:port/vhost (repeat: differential)",
     {"action": "append"}),
    ("broker", "string", f"a throwaway broker for the session: {' or '.join(BROKERS)}", {}),
    ("protocol", "string", "the AMQP protocol the fuzz items speak (default 0-9-1)", {}),
    ("profile", "string",
     "expectation profile: a bundled name, a path, or 'none' (default: by broker)", {}),
    ("results", "string", "directory for the result records and reproducers", {}),
    ("seed", "string", "the run's seed (an integer), or 'last' for the previous run's", {}),
    ("scenarios", "string", "collect the specification's scenario files as test items",
     {"action": "store_true"}),
    ("fuzz", "string", "collect a fuzz item per method and per mutation operator",
     {"action": "store_true"}),
    ("client", "args", "a client library to fuzz (a bundled shim's name, see `amqpfuzz client "
     "list`): amqpfuzz plays a hostile broker to it (repeat for several)", {"action": "append"}),
    ("allow-remote", "string", "allow a target off the loopback network (fuzzing can crash it)",
     {"action": "store_true"}),
    ("flaky-fails", "string", "count flaky failures (their replays did not all fail) as "
     "failures; by default an item with only flaky ones passes, reported as flaky",
     {"action": "store_true"}),
)  # fmt: skip


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("amqpfuzz", "AMQP broker conformance and fuzzing (amqpfuzz)")
    for name, ini_type, text, extra in _OPTIONS:
        env = _env_name(name)
        ini = _ini_name(name)
        group.addoption(
            f"--amqp-{name}",
            dest=_dest(name),
            default=None,
            help=f"{text} [ini {ini}, env {env}]",
            **extra,
        )
        parser.addini(ini, f"amqpfuzz: {text} (see --amqp-{name})", type=ini_type)  # type: ignore[arg-type]


def _dest(name: str) -> str:
    return "amqp_" + name.replace("-", "_")


def _ini_name(name: str) -> str:
    return "amqp_" + name.replace("-", "_")


def _env_name(name: str) -> str:
    return "AMQPFUZZ_" + name.replace("-", "_").upper()


def _raw(config: pytest.Config, name: str) -> tuple[Any, str]:
    """An option's value and where it came from: command line, then environment, then ini
    file; ``(None, "")`` if none of them sets it."""
    value = config.getoption(_dest(name))
    if value is not None:
        return value, f"--amqp-{name}"
    env = os.environ.get(_env_name(name), "").strip()
    if env:
        return (env.split() if name in ("url", "client") else env), _env_name(name)
    ini = config.getini(_ini_name(name))
    if ini:
        return ini, f"ini {_ini_name(name)}"
    return None, ""


def _flag(config: pytest.Config, name: str) -> bool:
    value, source = _raw(config, name)
    if value is None or isinstance(value, bool):
        return bool(value)
    try:
        return BOOLEANS[str(value).strip().lower()]
    except KeyError:
        raise pytest.UsageError(
            f"{source}: {value!r} is not a yes/no value (1, true, yes, on / 0, false, no, off)"
        ) from None


def _path(config: pytest.Config, value: str, source: str) -> str:
    """A path from the ini file is relative to the project's root directory."""
    if source.startswith("ini ") and not os.path.isabs(value):
        return str(config.rootpath / value)
    return value


def options_of(config: pytest.Config) -> Options:
    return config.stash[KEY]


def resolve(config: pytest.Config) -> Options:
    urls, _ = _raw(config, "url")
    clients, _ = _raw(config, "client")
    broker, broker_source = _raw(config, "broker")
    protocol, _ = _raw(config, "protocol")
    profile, profile_source = _raw(config, "profile")
    results, results_source = _raw(config, "results")
    seed, seed_source = _raw(config, "seed")
    if broker is not None and broker not in BROKERS:
        raise pytest.UsageError(
            f"{broker_source}: unknown broker {broker!r}; choose {' or '.join(BROKERS)}"
        )
    if profile is not None and profile != "none" and ("/" in profile or profile.endswith(".toml")):
        profile = _path(config, profile, profile_source)
    options = Options(
        urls=tuple(urls or ()),
        broker=broker,
        protocol=protocol or Options.protocol,
        profile=profile,
        results=_path(config, results, results_source) if results else None,
        allow_remote=_flag(config, "allow-remote"),
        scenarios=_flag(config, "scenarios"),
        fuzz=_flag(config, "fuzz"),
        flaky_fails=_flag(config, "flaky-fails"),
        clients=tuple(clients.split() if isinstance(clients, str) else clients or ()),
    )
    options.active = bool(
        options.urls
        or broker
        or protocol is not None
        or options.scenarios
        or options.fuzz
        or options.clients
        or seed is not None
        or profile is not None
        or results is not None
    )
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "amqpfuzz" in workerinput:
        shared = workerinput["amqpfuzz"]  # the controller's choices, as pytest-randomly does
        options.seed, options.run_id, options.results = (
            shared["seed"],
            shared["run_id"],
            shared["results"],
        )
        options.worker = str(workerinput.get("workerid", "main"))
        return options
    options.seed = _seed(config, seed, seed_source)
    if options.active and options.results is None:
        options.results = _temporary(config)
    return options


def _temporary(config: pytest.Config) -> str:
    """The run's records go under pytest's own base temporary directory, which pytest keeps for
    its newest runs and removes after (``tmp_path_retention_count``); without the tmpdir plugin
    (``-p no:tmpdir``), a temporary directory of their own that stays."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return tempfile.mkdtemp(prefix="amqpfuzz-pytest-")
    return str(factory.mktemp("amqpfuzz", numbered=True))


def _seed(config: pytest.Config, value: Any, source: str) -> int:
    cache = getattr(config, "cache", None)
    if value is None:
        return secrets.randbelow(2**32)
    text = str(value).strip().lower()
    if text == "last":
        last = cache.get(CACHE_KEY, None) if cache is not None else None
        if not isinstance(last, int):
            raise pytest.UsageError(
                f"{source} last: no previous amqpfuzz seed in the pytest cache "
                "(a first run, or the cache provider is off: -p no:cacheprovider)"
            )
        return last
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed < 2**32:
        raise pytest.UsageError(f"{source}: {value!r} is not a seed (0 to 2**32-1, or 'last')")
    return seed
