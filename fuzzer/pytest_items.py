"""The pytest plugin's items: a scenario file per target, a fuzz item per method and operator.

:func:`collect` builds them under one collector, ``amqpfuzz``, so that node ids read
``amqpfuzz::scenarios::0-9-1::basic.publish/mandatory/01`` and
``amqpfuzz::fuzz::mutation::frame-end``. A scenario the target's profile records as a deviation
is a strict ``xfail`` (it passing is a failure: the profile is out of date); a scenario that
cannot run (not runnable, a protocol the target does not speak, a restart of a broker we did
not start) is a skip with its reason. A fuzz item is a Hypothesis test: its budget is the
current Hypothesis profile's (``--hypothesis-profile``, ``max_examples``), its seed the run's,
and each case is judged by the fuzzer's oracles; failures the profile covers make the item
``xfail`` at run time.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from amqpfuzz.scenarios import Scenario, load_all
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec import codec_for
from amqpfuzz.strategies import Case, malformed_cases, mutations
from amqpfuzz.strategies.mutations import Context
from amqpfuzz.strategies.valid import valid

from .campaign import TargetRun
from .conformance import ScenarioTarget, Verdict
from .player import describe
from .pytest_plugin import CAPABILITIES, CLASSES, options_of
from .pytest_session import AmqpSession
from .runner import Result

__all__ = ["FuzzFailed", "FuzzItem", "ScenarioError", "ScenarioFailed", "ScenarioItem", "collect"]

PROTOCOL = "0-9-1"


class ItemFailure(Exception):
    """What an amqpfuzz item reports: :meth:`report` is the text pytest shows."""

    def report(self) -> str:
        raise NotImplementedError


class ScenarioReport(ItemFailure):
    """A scenario that did not pass: the rule, the step, what was expected and observed."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict

    def report(self) -> str:
        verdict, scenario = self.verdict, self.verdict.scenario
        played = verdict.played
        lines = [
            f"scenario {scenario.protocol}/{scenario.path.name} {verdict.verdict} on "
            f"{verdict.target.label} ({verdict.target.target.safe_url})",
            f"rule:     {scenario.spec_ref}"
            + (f" (on failure: {scenario.on_failure})" if scenario.on_failure else ""),
            textwrap.indent(textwrap.fill(" ".join(scenario.rule.split()), 96), "          "),
        ]
        if played is not None:
            if played.line:
                lines.append(f"step:     line {played.line} ({played.step}) of {scenario.path}")
            lines.append(f"expected: {describe(played.expected)}")
            lines.append(f"observed: {describe(played.observed)}")
        lines.append(f"message:  {verdict.message}")
        if verdict.reason:
            lines.append(f"profile:  {verdict.reason}")
        return "\n".join(lines)


class ScenarioFailed(ScenarioReport):
    """A scenario's expectation did not hold (the only failure a profile can expect)."""


class ScenarioError(ScenarioReport):
    """The scenario could not be played to its end (an unreachable broker): never an xfail."""


class FuzzFailed(ItemFailure):
    """A case the broker did not handle as the specification requires."""

    def __init__(self, case: Case, label: str, url: str, result: Result, reproducer: str) -> None:
        assert result.failure is not None
        super().__init__(result.failure.message)
        self.case, self.label, self.url = case, label, url
        self.result, self.reproducer = result, reproducer

    def report(self) -> str:
        failure = self.result.failure
        assert failure is not None
        lines = [
            f"{self.case.mutation or 'valid'} case [{self.case.spec_ref}] failed on "
            f"{self.label} ({self.url})",
            f"oracle:    {failure.oracle}: {failure.message}",
            f"signature: {failure.signature}",
            f"expected:  {self.case.expected}",
            f"observed:  {self.result.outcome}",
            "frames (the smallest case Hypothesis found):",
            textwrap.indent(repr(self.case), "  "),
        ]
        if self.reproducer:
            lines.append(f"replay:    amqpfuzz replay {self.reproducer}")
            if self.label.startswith("throwaway"):
                lines.append("           (with --url URL: the throwaway broker ended with the run)")
        return "\n".join(lines)


class Divergence(ItemFailure):
    """Several targets reacted differently to the same case (each as the spec allows)."""

    def __init__(self, case: Case, reactions: dict[str, str]) -> None:
        super().__init__("the targets reacted differently")
        self.case, self.reactions = case, reactions

    def report(self) -> str:
        shown = "\n".join(f"  {label}: {reaction}" for label, reaction in self.reactions.items())
        return f"targets diverge on {self.case.spec_ref}:\n{shown}\nframes:\n" + textwrap.indent(
            repr(self.case), "  "
        )


def _failure_in(error: BaseException) -> ItemFailure | None:
    """Our failure, also inside an exception group (Hypothesis's flaky or multiple bugs)."""
    if isinstance(error, ItemFailure):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _failure_in(inner)
            if found is not None:
                return found
    return None


class AmqpItem(pytest.Item):
    """What both kinds of items share: failures shown as amqpfuzz words."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        found = _failure_in(excinfo.value)
        if found is not None:
            return found.report()
        return super().repr_failure(excinfo, style=style)

    def properties(self, **values: object) -> None:
        """JUnit XML properties (``amqp_spec_ref``, ``amqp_observed``, ...)."""
        for name, value in values.items():
            if value not in (None, ""):
                self.user_properties.append((f"amqp_{name}", str(value)))


class ScenarioItem(AmqpItem):
    def __init__(
        self, *, scenario: Scenario, target: ScenarioTarget, state: AmqpSession, **kw: Any
    ) -> None:
        super().__init__(**kw)
        self.scenario, self.target, self.state = scenario, target, state

    def runtest(self) -> None:
        run = self.state.conformance([])
        verdict = run.play_one(self.scenario, self.target)
        played = verdict.played
        self.properties(
            spec_ref=self.scenario.spec_ref,
            target=self.target.target.safe_url,
            verdict=verdict.verdict,
            expected=describe(played.expected) if played else None,
            observed=describe(played.observed) if played else None,
            message=verdict.message,
        )
        if verdict.verdict == "skip":  # in the plugin's words: the CLI's --broker is ours
            reason = verdict.reason.replace("(--broker)", "(--amqp-broker)")
            # reported at the scenario file, as a skip mark would be (not at this line)
            raise pytest.skip.Exception(reason, _use_item_location=True)
        if verdict.verdict == "error":
            raise ScenarioError(verdict)
        if verdict.verdict in ("fail", "xfail"):
            raise ScenarioFailed(verdict)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.scenario.path, 0, f"scenario {self.scenario.spec_ref}"


class FuzzItem(AmqpItem):
    def __init__(self, *, kind: str, subject: str, state: AmqpSession, **kw: Any) -> None:
        super().__init__(**kw)
        self.kind, self.subject, self.state = kind, subject, state

    def strategy(self, frame_max: int) -> st.SearchStrategy[Case]:
        prefix = self.state.options.prefix
        if self.kind == "mutation":
            return malformed_cases([self.subject], frame_max=frame_max, prefix=prefix)
        spec = load(PROTOCOL)
        codec = codec_for(spec, "rabbit")
        return valid(spec, codec, [spec.method(self.subject)], frame_max, prefix=prefix)

    def runtest(self) -> None:
        campaign = self.state.campaign()
        frame_max = min(run.runner.frame_max for run in campaign.targets if run.runner)
        expected: list[str] = []
        covered: list[str] = []
        cases = [0]

        @settings(deadline=None, suppress_health_check=list(HealthCheck))
        @hypothesis_seed(self.state.options.seed_for(self.nodeid))
        @given(self.strategy(frame_max))
        def case_holds(case: Case) -> None:
            cases[0] += 1
            expected[:] = [str(case.expected)]
            outcomes = campaign.run_batch([case])
            self._judge(case, campaign.targets, outcomes, covered)

        case_holds._hypothesis_internal_database_key = self.nodeid.encode()  # type: ignore[attr-defined]
        self.properties(
            spec_ref=self.subject if self.kind == "method" else f"mutation {self.subject}",
            target=", ".join(run.target.safe_url for run in campaign.targets),
            seed=self.state.options.seed_for(self.nodeid),
        )
        try:
            case_holds()
        except BaseException as exc:
            found = _failure_in(exc)
            if isinstance(found, Divergence):
                self.properties(verdict="fail", observed=found.reactions)
            elif isinstance(found, FuzzFailed):
                self.properties(
                    verdict="fail",
                    expected=found.case.expected,
                    observed=found.result.outcome,
                    signature=found.result.failure.signature if found.result.failure else None,
                    reproducer=found.reproducer,
                )
            raise
        self.properties(
            verdict="xfail" if covered else "pass",
            expected=expected[0] if expected else None,
            observed=f"{cases[0]} cases, "
            + (f"{len(covered)} deviations the profile records" if covered else "all as required"),
        )
        if covered:
            pytest.xfail(covered[0])

    def _judge(
        self,
        case: Case,
        runs: list[TargetRun],
        outcomes: dict[str, list[Result]],
        covered: list[str],
    ) -> None:
        for run in runs:
            result = outcomes[run.label][0]
            failure = result.failure
            if failure is None:
                continue
            deviation = run.known(case, failure)
            if deviation is not None:
                covered.append(deviation.reason)
                continue
            reproducer = self.state.failures.get((run.label, failure.signature), "")
            raise FuzzFailed(case, run.label, run.target.safe_url, result, reproducer)
        if len(runs) > 1 and not covered:
            reactions = {label: str(results[0].outcome) for label, results in outcomes.items()}
            keys = {(r[0].outcome.kind, r[0].outcome.reply_code) for r in outcomes.values()}
            if len(keys) > 1:
                raise Divergence(case, reactions)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"fuzz {self.kind} {self.subject}"


# -- collection --------------------------------------------------------------------------------


def _group(parent: pytest.Collector | pytest.Session, name: str) -> pytest.Collector:
    nodeid = f"{parent.nodeid}::{name}" if parent.nodeid else name
    return _Group.from_parent(parent, name=name, path=parent.path, nodeid=nodeid)


class _Group(pytest.Collector):
    """A level of the node ids; its items are made by :func:`collect`, not by collecting."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        return []


def _class_of(ref: str) -> str:
    return ref.split(":")[0].split("/")[0].split(".")[0]


def _mark(item: pytest.Item, ref: str, capabilities: Iterable[str] = ()) -> None:
    if _class_of(ref) in CLASSES:
        item.add_marker(f"amqp_class_{_class_of(ref)}")
    for capability in capabilities:
        if capability in CAPABILITIES:
            item.add_marker(f"amqp_{capability.replace('-', '_')}")


def collect(session: pytest.Session, state: AmqpSession) -> list[pytest.Item]:
    options = options_of(session.config)
    root = _group(session, "amqpfuzz")
    items: list[pytest.Item] = []
    if options.scenarios:
        items += _scenario_items(_group(root, "scenarios"), state)
    if options.fuzz:
        items += _fuzz_items(_group(root, "fuzz"), state)
    # as a collector's report, so that "collected N items" counts them
    session.config.hook.pytest_collectreport(
        report=pytest.CollectReport(
            root.nodeid, "passed", None, list[pytest.Item | pytest.Collector](items)
        )
    )
    return items


def _scenario_items(parent: pytest.Collector, state: AmqpSession) -> list[pytest.Item]:
    scenarios = list(load_all())
    run = state.conformance(scenarios)
    seen: dict[tuple[str, str], int] = {}
    for scenario in scenarios:
        key = (scenario.protocol, scenario.spec_ref)
        seen[key] = seen.get(key, 0) + 1
    groups = {p: _group(parent, p) for p in dict.fromkeys(s.protocol for s in scenarios)}
    items: list[pytest.Item] = []
    for scenario in scenarios:
        name = scenario.spec_ref
        if seen[(scenario.protocol, scenario.spec_ref)] > 1:  # probes beside a rule's file
            name = f"{scenario.spec_ref}@{scenario.name}"
        for target in run.targets:
            label = f"[{target.label}]" if len(run.targets) > 1 else ""
            item = ScenarioItem.from_parent(
                groups[scenario.protocol],
                name=name + label,
                scenario=scenario,
                target=target,
                state=state,
                path=scenario.path,
            )
            item.add_marker("amqp_scenario")
            _mark(item, scenario.spec_ref, scenario.capabilities)
            _expectations(item, run.skip_reason(scenario, target), scenario, target)
            items.append(item)
    return items


def _expectations(
    item: pytest.Item, skip: str | None, scenario: Scenario, target: ScenarioTarget
) -> None:
    """The profile's deviation as a strict xfail. (A scenario that cannot run is skipped when
    it runs, so that its record says so.)"""
    deviation = target.known(scenario) if skip is None else None
    if deviation is not None and target.profile is not None:
        reason = f"{target.profile.name}: {deviation.reason}"
        item.add_marker(pytest.mark.xfail(strict=True, reason=reason, raises=ScenarioFailed))


def _fuzz_items(parent: pytest.Collector, state: AmqpSession) -> list[pytest.Item]:
    spec = load(PROTOCOL)
    context = Context(spec, codec_for(spec, "rabbit"), 131072)
    items: list[pytest.Item] = []
    methods = _group(parent, "method")
    for method in context.channel_methods:
        item = FuzzItem.from_parent(
            methods, name=method.full_name, kind="method", subject=method.full_name, state=state
        )
        _mark(item, method.full_name)
        items.append(item)
    operators = _group(parent, "mutation")
    for operator in mutations(PROTOCOL):
        items.append(
            FuzzItem.from_parent(
                operators, name=operator.name, kind="mutation", subject=operator.name, state=state
            )
        )
    for each in items:
        each.add_marker("amqp_fuzz")
    return items
