"""The pytest plugin: amqpfuzz's scenarios and fuzz cases as test items, fixtures for a broker's tests.

Registered through the ``pytest11`` entry point, so it loads in every pytest run of an
environment that has amqpfuzz installed: this module imports only pytest and the standard
library, and everything heavy (the spec loader, Hypothesis, the engine, pika) is imported
inside the hooks and fixtures that need it. A run that names no ``--amqp-*`` option pays for
nothing but the options.

Every option has an ini key and an environment variable beside it; the command line wins over
the environment, the environment over the ini file, the ini file over the default:

=====================  =====================  ========================  =================================
command line           ini key                environment               default
=====================  =====================  ========================  =================================
--amqp-url URL         amqp_url (args)        AMQPFUZZ_URL (spaces)     none: a throwaway RabbitMQ
--amqp-broker KIND     amqp_broker            AMQPFUZZ_BROKER           none
--amqp-profile NAME    amqp_profile           AMQPFUZZ_PROFILE          by the broker's product/version
--amqp-results DIR     amqp_results           AMQPFUZZ_RESULTS          a new temporary directory
--amqp-seed N|last     amqp_seed              AMQPFUZZ_SEED             a fresh random seed
--amqp-scenarios       amqp_scenarios         AMQPFUZZ_SCENARIOS        off
--amqp-fuzz            amqp_fuzz              AMQPFUZZ_FUZZ             off
--amqp-allow-remote    amqp_allow_remote      AMQPFUZZ_ALLOW_REMOTE     off
=====================  =====================  ========================  =================================

The seed is chosen once, by the controller under pytest-xdist, stored in the pytest cache
(``--amqp-seed last`` reuses it) and handed to the workers, as pytest-randomly does.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the heavy parts, for the annotations only
    from .brokers import Broker
    from .pytest_session import AmqpSession, RawChannel
    from .targets import Target
    from .transport import Connection

__all__ = ["MARKERS", "Options", "options_of"]

CACHE_KEY = "amqpfuzz/seed"
BOOLEANS = {"1": True, "true": True, "yes": True, "on": True}
BOOLEANS |= {"0": False, "false": False, "no": False, "off": False}
KINDS = ("rabbitmq", "garagemq")
# The AMQP classes of every protocol amqpfuzz knows (and "domain" for rules on a domain): a
# marker each, registered at once (a test checks that every scenario's class is here).
CLASSES = (
    "connection",
    "channel",
    "access",
    "exchange",
    "queue",
    "basic",
    "file",
    "stream",
    "tx",
    "dtx",
    "tunnel",
    "confirm",
    "message",
    "session",
    "execution",
    "domain",
)
# The capabilities of amqpfuzz.scenarios.vocabulary.CAPABILITIES (a test keeps them equal).
CAPABILITIES = ("second-connection", "restart", "many-queues", "raw-bytes", "consumer")
MARKERS = {
    "amqp_scenario": "an amqpfuzz scenario file played against the target",
    "amqp_fuzz": "an amqpfuzz fuzz item: Hypothesis cases judged by the specification",
    **{f"amqp_class_{c}": f"amqpfuzz item about the AMQP {c} class" for c in CLASSES},
    **{
        f"amqp_{c.replace('-', '_')}": f"amqpfuzz scenario needing the {c} capability"
        for c in CAPABILITIES
    },
}
_KEY = pytest.StashKey["Options"]()
_SESSION = pytest.StashKey["AmqpSession"]()


@dataclass
class Options:
    """The plugin's settings, resolved from the command line, environment and ini file."""

    urls: tuple[str, ...] = ()
    broker: str | None = None
    profile: str | None = None
    results: str | None = None
    seed: int = 0
    allow_remote: bool = False
    scenarios: bool = False
    fuzz: bool = False
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
    ("broker", "string", f"a throwaway broker for the session: {' or '.join(KINDS)}", {}),
    ("profile", "string",
     "expectation profile: a bundled name, a path, or 'none' (default: by broker)", {}),
    ("results", "string", "directory for the result records and reproducers", {}),
    ("seed", "string", "the run's seed (an integer), or 'last' for the previous run's", {}),
    ("scenarios", "string", "collect the specification's scenario files as test items",
     {"action": "store_true"}),
    ("fuzz", "string", "collect a fuzz item per method and per mutation operator",
     {"action": "store_true"}),
    ("allow-remote", "string", "allow a target off the loopback network (fuzzing can crash it)",
     {"action": "store_true"}),
)  # fmt: skip


def pytest_addoption(parser: pytest.Parser) -> None:
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
        return (env.split() if name == "url" else env), _env_name(name)
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
    return config.stash[_KEY]


def _resolve(config: pytest.Config) -> Options:
    urls, _ = _raw(config, "url")
    broker, broker_source = _raw(config, "broker")
    profile, profile_source = _raw(config, "profile")
    results, results_source = _raw(config, "results")
    seed, seed_source = _raw(config, "seed")
    if broker is not None and broker not in KINDS:
        raise pytest.UsageError(
            f"{broker_source}: unknown broker {broker!r}; choose {' or '.join(KINDS)}"
        )
    if profile is not None and profile != "none" and ("/" in profile or profile.endswith(".toml")):
        profile = _path(config, profile, profile_source)
    options = Options(
        urls=tuple(urls or ()),
        broker=broker,
        profile=profile,
        results=_path(config, results, results_source) if results else None,
        allow_remote=_flag(config, "allow-remote"),
        scenarios=_flag(config, "scenarios"),
        fuzz=_flag(config, "fuzz"),
    )
    options.active = bool(
        options.urls
        or broker
        or options.scenarios
        or options.fuzz
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
        options.results = tempfile.mkdtemp(prefix="amqpfuzz-pytest-")
    return options


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


# -- configuration -----------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    options = _resolve(config)
    config.stash[_KEY] = options
    if options.active:
        _check(options)
        cache = getattr(config, "cache", None)
        if cache is not None and not hasattr(config, "workerinput"):
            cache.set(CACHE_KEY, options.seed)


def _check(options: Options) -> None:
    """Bad input is one line (pytest.UsageError), before anything starts."""
    from amqpfuzz.spec import AmqpfuzzError

    from .profiles import find_profile
    from .targets import parse_target

    try:
        for url in options.urls:
            parse_target(url, allow_remote=options.allow_remote)
        if options.profile is not None:
            find_profile(options.profile)
    except AmqpfuzzError as exc:
        raise pytest.UsageError(_cli_words(str(exc))) from None


def _cli_words(message: str) -> str:
    return message.replace("--allow-remote", "--amqp-allow-remote")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker gets the controller's seed, run id and results directory."""
    options = options_of(node.config)
    node.workerinput["amqpfuzz"] = {
        "seed": options.seed,
        "run_id": options.run_id,
        "results": options.results,
    }


def pytest_report_header(config: pytest.Config) -> list[str]:
    options = options_of(config)
    if not options.active:
        return []
    from .targets import parse_target

    targets = [parse_target(u, allow_remote=options.allow_remote).safe_url for u in options.urls]
    if options.broker or not targets:
        targets.append(f"throwaway {options.broker or 'rabbitmq'}")
    return [
        f"amqpfuzz: targets {', '.join(targets)}",
        f"amqpfuzz: seed {options.seed} (repeat with --amqp-seed {options.seed}), "
        f"profile {options.profile or 'by broker'}, results {options.results}",
    ]


def _controller(config: pytest.Config) -> bool:
    """The pytest-xdist controller: it collects and runs nothing itself."""
    return config.pluginmanager.has_plugin("dsession")


def session_of(config: pytest.Config) -> AmqpSession:
    """This process's brokers, targets and engine (made on first use)."""
    if _SESSION not in config.stash:
        from .pytest_session import AmqpSession

        config.stash[_SESSION] = AmqpSession(options_of(config))
    return config.stash[_SESSION]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Reach every target now: a broker that is down is one clear error, not a failure per
    test. The controller of pytest-xdist only checks the URLs; each worker starts its own
    throwaway broker."""
    config = session.config
    options = options_of(config)
    if not options.active or config.getoption("help", False):
        return
    from amqpfuzz.spec import AmqpfuzzError

    try:
        if _controller(config):
            from .pytest_session import preflight

            preflight(options)
        elif options.urls or options.broker:
            session_of(config).start()
    except AmqpfuzzError as exc:
        raise pytest.UsageError(f"amqpfuzz: {_cli_words(str(exc))}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """With --amqp-scenarios / --amqp-fuzz, the items are added before -k and -m select."""
    options = options_of(config)
    if not (options.scenarios or options.fuzz):
        return
    from amqpfuzz.spec import AmqpfuzzError

    from .pytest_items import collect

    try:
        items.extend(collect(session, session_of(config)))
    except AmqpfuzzError as exc:
        raise pytest.UsageError(f"amqpfuzz: {_cli_words(str(exc))}") from None


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_SESSION, None)
    if state is not None:
        state.close()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    options = options_of(config)
    if options.active and (options.scenarios or options.fuzz):
        terminalreporter.write_line(
            f"amqpfuzz: seed {options.seed}; records and reproducers in {options.results}"
        )


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def amqp_target(pytestconfig: pytest.Config) -> Target:
    """The broker under test (the first --amqp-url, else the session's throwaway broker)."""
    return session_of(pytestconfig).targets()[0].target


@pytest.fixture(scope="session")
def amqp_targets(pytestconfig: pytest.Config) -> list[Target]:
    """Every target of the session (several --amqp-url make a differential run)."""
    return [t.target for t in session_of(pytestconfig).targets()]


@pytest.fixture(scope="session")
def amqp_broker(pytestconfig: pytest.Config) -> Broker:
    """The session's throwaway broker (--amqp-broker; a RabbitMQ when no target is named)."""
    broker = session_of(pytestconfig).broker()
    if broker is None:
        pytest.fail("amqp_broker needs a throwaway broker: --amqp-broker rabbitmq|garagemq")
    return broker


@pytest.fixture(scope="session")
def amqp_prefix(pytestconfig: pytest.Config) -> str:
    """The prefix for the names of the queues and exchanges a test creates (its own per
    pytest-xdist worker)."""
    return options_of(pytestconfig).prefix


@pytest.fixture
def amqp_connection(amqp_target: Target) -> Iterator[Connection]:
    """A raw AMQP connection (amqpfuzz.fuzzer.transport.Connection), handshake done."""
    from .transport import Connection

    connection = Connection.open(amqp_target)
    yield connection
    connection.close()


@pytest.fixture
def amqp_channel(amqp_connection: Connection) -> RawChannel:
    """Channel 1 of :func:`amqp_connection`, opened."""
    from .pytest_session import RawChannel

    problem = amqp_connection.open_channel(1)
    if problem is not None:
        pytest.fail(f"cannot open channel 1: {problem}")
    return RawChannel(amqp_connection, 1)


@pytest.fixture
def amqp_pika(amqp_target: Target) -> Iterator[Any]:
    """A ``pika.BlockingConnection`` to the target."""
    from .pytest_session import pika_connection

    connection = pika_connection(amqp_target)
    yield connection
    if connection.is_open:
        connection.close()
