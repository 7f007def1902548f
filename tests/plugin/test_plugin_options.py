"""The plugin's options without a broker: precedence, bad input, the seed, the light import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from amqpfuzz.fuzzer.brokers import free_port
from amqpfuzz.fuzzer.plugin import CAPABILITIES, CLASSES, MARKERS


def _seed_line(result: pytest.RunResult) -> str:
    lines = [line for line in result.outlines if line.startswith("amqpfuzz: seed")]
    assert lines, result.stdout.str()
    return lines[0]


def _usage_error(result: pytest.RunResult) -> str:
    """The one error line of a run that stopped on bad input (exit 4, no traceback)."""
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "Traceback" not in text
    errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, text
    return errors[0]


@pytest.mark.slow
def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = (
        "import sys, amqpfuzz.fuzzer.plugin\n"
        "heavy = ('hypothesis', 'pika', 'lxml', 'amqpfuzz.fuzzer.engine', 'amqpfuzz.fuzzer.protocols',"
        " 'amqpfuzz.spec', 'amqpfuzz.strategies', 'amqpfuzz.fuzzer.brokers')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_the_plugin_is_registered_by_its_entry_point(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--amqp-url*", "*--amqp-broker*", "*--amqp-seed*"])
    assert "amqp_url" in result.stdout.str()  # the ini key, in the help text


def test_a_run_without_amqp_options_shows_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "amqpfuzz:" not in result.stdout.str()


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        ["*amqp_fuzz:*", "*amqp_class_basic:*", "*amqp_second_connection:*", "*amqp_restart:*"]
    )


def test_marker_lists_match_the_engine() -> None:
    from amqpfuzz.fuzzer.plugin.markers import class_of as _class_of
    from amqpfuzz.scenarios import CAPABILITIES as engine_capabilities
    from amqpfuzz.scenarios import load_all

    assert set(CAPABILITIES) == set(engine_capabilities)
    assert {_class_of(s.spec_ref) for s in load_all()} <= set(CLASSES)
    assert all(name.startswith("amqp_") for name in MARKERS)


# -- precedence: command line > environment > ini > default ----------------------------------


def test_seed_precedence(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_plain(): pass")
    pytester.makeini("[pytest]\namqp_seed = 11\n")
    assert "seed 11 " in _seed_line(pytester.runpytest())
    monkeypatch.setenv("AMQPFUZZ_SEED", "22")
    assert "seed 22 " in _seed_line(pytester.runpytest())
    assert "seed 33 " in _seed_line(pytester.runpytest("--amqp-seed", "33"))


def test_url_precedence(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each source names a different port nobody listens on: the error says which won."""
    ini, env, cli = free_port(), free_port(), free_port()
    pytester.makeini(f"[pytest]\namqp_url = amqp://guest:guest@127.0.0.1:{ini}/\n")
    assert f":{ini}/" in _usage_error(pytester.runpytest())
    monkeypatch.setenv("AMQPFUZZ_URL", f"amqp://guest:guest@127.0.0.1:{env}/")
    assert f":{env}/" in _usage_error(pytester.runpytest())
    error = _usage_error(pytester.runpytest(f"--amqp-url=amqp://u:secret@127.0.0.1:{cli}/"))
    assert f"u@127.0.0.1:{cli}/" in error
    assert "secret" not in error


def test_profile_and_flag_precedence(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\namqp_profile = from-ini\namqp_scenarios = maybe\n")
    assert "'maybe' is not a yes/no value" in _usage_error(pytester.runpytest())
    monkeypatch.setenv("AMQPFUZZ_SCENARIOS", "0")
    assert "from-ini" in _usage_error(pytester.runpytest("--amqp-seed", "1"))
    monkeypatch.setenv("AMQPFUZZ_PROFILE", "from-env")
    assert "from-env" in _usage_error(pytester.runpytest("--amqp-seed", "1"))
    error = _usage_error(pytester.runpytest("--amqp-seed", "1", "--amqp-profile", "from-cli"))
    assert "no profile 'from-cli'" in error


# -- bad input: one line, no traceback ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--amqp-broker", "activemq"], "unknown broker 'activemq'"),
        (["--amqp-broker", "qpid-proton"], "qpid-proton does not serve AMQP 0-9-1"),
        (["--amqp-url", "http://127.0.0.1/"], "the scheme must be amqp:// or amqps://"),
        (["--amqp-url", "amqp://guest:pw@192.0.2.1/"], "say --amqp-allow-remote"),
        (["--amqp-seed", "soon"], "'soon' is not a seed"),
        (["--amqp-seed", "-3"], "'-3' is not a seed"),
        (["--amqp-seed", "last", "-p", "no:cacheprovider"], "no previous amqpfuzz seed"),
    ],
)
def test_bad_input_is_one_line(pytester: pytest.Pytester, args: list[str], words: str) -> None:
    assert words in _usage_error(pytester.runpytest(*args))


def test_a_bad_profile_file_is_one_line(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "mine.toml"
    bad.write_text('product = "x"\n[[deviation]]\nrule = "a/b"\n')
    error = _usage_error(pytester.runpytest("--amqp-profile", str(bad)))
    assert "mine.toml: deviation 1 gives no reason" in error


@pytest.mark.slow
def test_seed_last_reuses_the_previous_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): pass")
    first = _seed_line(pytester.runpytest("--amqp-seed", "4242"))
    assert "seed 4242 " in first
    assert "seed 4242 " in _seed_line(pytester.runpytest("--amqp-seed", "last"))
    fresh = _seed_line(pytester.runpytest_subprocess("--amqp-seed", "last", "-n", "2"))
    assert "seed 4242 " in fresh


@pytest.mark.slow
def test_a_project_with_folders_named_like_ours(pytester: pytest.Pytester) -> None:
    """A broker project's own spec/, strategies/ and fuzzer/ packages neither shadow amqpfuzz's
    (installed as amqpfuzz.*) nor are shadowed when the plugin loads."""
    for name in ("spec", "strategies", "fuzzer"):
        pytester.mkpydir(name).joinpath("mine.py").write_text(f"WHO = {name!r}\n")
    pytester.makepyfile(
        """
        from hypothesis import given
        from amqpfuzz.strategies import domain_values
        from spec.mine import WHO

        def test_ours_and_theirs():
            assert WHO == "spec"

        @given(domain_values("queue-name"))
        def test_a_strategy(name):
            assert len(name) <= 127
        """
    )
    result = pytester.runpytest_subprocess("--amqp-seed", "5", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["amqpfuzz: seed 5 *"])


def test_the_plugins_own_names_are_the_engines() -> None:
    """The plugin module stays light, so it keeps the broker kinds as plain names of its own."""
    from amqpfuzz.fuzzer import brokers
    from amqpfuzz.fuzzer.plugin import options

    assert tuple(brokers.BROKERS) == options.BROKERS
