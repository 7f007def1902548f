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
--amqp-protocol P      amqp_protocol          AMQPFUZZ_PROTOCOL         0-9-1
--amqp-profile NAME    amqp_profile           AMQPFUZZ_PROFILE          by the broker's product/version
--amqp-results DIR     amqp_results           AMQPFUZZ_RESULTS          under pytest's basetemp
--amqp-seed N|last     amqp_seed              AMQPFUZZ_SEED             a fresh random seed
--amqp-scenarios       amqp_scenarios         AMQPFUZZ_SCENARIOS        off
--amqp-fuzz            amqp_fuzz              AMQPFUZZ_FUZZ             off
--amqp-allow-remote    amqp_allow_remote      AMQPFUZZ_ALLOW_REMOTE     off
--amqp-flaky-fails     amqp_flaky_fails       AMQPFUZZ_FLAKY_FAILS      off
=====================  =====================  ========================  =================================

A failure is replayed from its reproducer before it is reported (the engine's confirmation); one
whose replays did not all fail is *flaky*: its item passes, reported as ``flaky`` (the ``f`` of
the progress line, a count of its own in the summary line and a section of the terminal
summary), unless ``--amqp-flaky-fails`` makes it fail.

The seed is chosen once, by the controller under pytest-xdist, stored in the pytest cache
(``--amqp-seed last`` reuses it) and handed to the workers, as pytest-randomly does.

The options live in :mod:`.options`, the markers in :mod:`.markers` (both light); the engine's
side, imported when it is used, in :mod:`.session` (brokers, targets, the conformance run and
the campaign of one pytest process) and :mod:`.items` (the test items).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .markers import CAPABILITIES, CLASSES, MARKERS
from .options import BROKERS, CACHE_KEY, KEY, Options, add_options, options_of, resolve

if TYPE_CHECKING:  # the heavy parts, for the annotations only
    from ..brokers import Broker, Target
    from ..protocols.amqp091 import Connection
    from .session import AmqpSession, RawChannel

__all__ = ["CAPABILITIES", "CLASSES", "MARKERS", "Options", "options_of"]

_SESSION = pytest.StashKey["AmqpSession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


# -- configuration -----------------------------------------------------------------------------


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin's: the results go under its basetemp
def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    options = resolve(config)
    config.stash[KEY] = options
    if options.active:
        _check(options)
        cache = getattr(config, "cache", None)
        if cache is not None and not hasattr(config, "workerinput"):
            cache.set(CACHE_KEY, options.seed)


def _check(options: Options) -> None:
    """Bad input is one line (pytest.UsageError), before anything starts."""
    from amqpfuzz.spec import AmqpfuzzError

    from ..brokers import parse_target, refuses
    from ..brokers.profiles import find_profile
    from ..protocols.families import driver_for

    try:
        driver_for(options.protocol)
        if not options.urls and (why := refuses(options.broker or "rabbitmq", options.protocol)):
            raise pytest.UsageError(why)
        for url in options.urls:
            parse_target(url, allow_remote=options.allow_remote)
        if options.profile is not None:
            find_profile(options.profile, protocol=options.protocol)
        if options.clients:
            from ..clients.campaign import serving_of
            from ..clients.targets import client_targets

            serving_of(options.protocol)
            client_targets(options.clients, (), options.protocol)
    except AmqpfuzzError as exc:
        raise pytest.UsageError(_cli_words(str(exc))) from None


def _cli_words(message: str) -> str:
    return message.replace("--allow-remote", "--amqp-allow-remote").replace(
        "--client ", "--amqp-client "
    )


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
    from ..brokers import parse_target

    targets = [parse_target(u, allow_remote=options.allow_remote).safe_url for u in options.urls]
    if options.broker or not targets:
        targets.append(f"throwaway {options.broker or 'rabbitmq'}")
    return [
        f"amqpfuzz: targets {', '.join(targets)}",
        f"amqpfuzz: seed {options.seed} (repeat with --amqp-seed {options.seed}), "
        f"AMQP {options.protocol}, profile {options.profile or 'by broker'}, "
        f"results {options.results}",
    ]


def _controller(config: pytest.Config) -> bool:
    """The pytest-xdist controller: it collects and runs nothing itself."""
    return config.pluginmanager.has_plugin("dsession")


def session_of(config: pytest.Config) -> AmqpSession:
    """This process's brokers, targets and engine (made on first use)."""
    if _SESSION not in config.stash:
        from .session import AmqpSession

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
            from .session import preflight

            preflight(options)
        elif options.urls or options.broker:
            session_of(config).start()
    except AmqpfuzzError as exc:
        raise pytest.UsageError(f"amqpfuzz: {_cli_words(str(exc))}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """With --amqp-scenarios / --amqp-fuzz / --amqp-client, the items are added before -k and
    -m select."""
    options = options_of(config)
    if not (options.scenarios or options.fuzz or options.clients):
        return
    from amqpfuzz.spec import AmqpfuzzError

    from .items import collect

    try:
        items.extend(collect(session, session_of(config)))
    except AmqpfuzzError as exc:
        raise pytest.UsageError(f"amqpfuzz: {_cli_words(str(exc))}") from None


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_SESSION, None)
    if state is not None:
        state.close()


FLAKY = "amqp_flaky"  # the user property a flaky item carries: its signatures and rates


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """An item that passed with flaky failures only is reported as ``flaky``."""
    if report.when == "call" and report.passed and _flaky(report):
        return "flaky", "f", ("FLAKY", {"yellow": True})
    return None


def _flaky(report: pytest.TestReport) -> str:
    return next((str(v) for k, v in report.user_properties if k == FLAKY), "")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    options = options_of(config)
    flaky = terminalreporter.stats.get("flaky", [])
    if flaky:
        terminalreporter.section("amqpfuzz: flaky failures (not counted as failures)")
        for report in flaky:
            terminalreporter.write_line(f"{report.nodeid}: {_flaky(report)}")
    if options.active and (options.scenarios or options.fuzz or options.clients):
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
        kinds = "|".join(BROKERS)
        pytest.fail(f"amqp_broker needs a throwaway broker: --amqp-broker {kinds}")
    return broker


@pytest.fixture(scope="session")
def amqp_prefix(pytestconfig: pytest.Config) -> str:
    """The prefix for the names of the queues and exchanges a test creates (its own per
    pytest-xdist worker)."""
    return options_of(pytestconfig).prefix


@pytest.fixture
def amqp_connection(amqp_target: Target) -> Iterator[Connection]:
    """A raw AMQP 0-9-1 connection (amqpfuzz.fuzzer.protocols.amqp091.Connection), handshake
    done: send any bytes."""
    from ..protocols.amqp091 import Connection

    connection = Connection.open(amqp_target)
    yield connection
    connection.close()


@pytest.fixture
def amqp_channel(amqp_connection: Connection) -> RawChannel:
    """Channel 1 of :func:`amqp_connection`, opened."""
    from .session import RawChannel

    problem = amqp_connection.open_channel(1)
    if problem is not None:
        pytest.fail(f"cannot open channel 1: {problem}")
    return RawChannel(amqp_connection, 1)


@pytest.fixture
def amqp_pika(amqp_target: Target) -> Iterator[Any]:
    """A ``pika.BlockingConnection`` to the target."""
    from ..protocols.amqp091.clients import pika_connection

    connection = pika_connection(amqp_target)
    yield connection
    if connection.is_open:
        connection.close()
