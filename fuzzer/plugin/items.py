"""The pytest plugin's items: a scenario file per target, a fuzz item per method and operator.

:func:`collect` builds them under one collector, ``amqpfuzz``, so that node ids read
``amqpfuzz::scenarios::0-9-1::basic.publish/mandatory/01`` and
``amqpfuzz::fuzz::mutation::frame-end``. The items judge nothing themselves: the engine does,
and they turn its verdicts into pytest's outcomes. A scenario the target's profile records as a
deviation is a strict ``xfail`` (it passing is a failure: the profile is out of date); a
scenario that cannot run is a skip with its reason. A fuzz item is a Hypothesis test over the
engine's cases: its budget is the current Hypothesis profile's (``--hypothesis-profile``,
``max_examples``), its seed the run's; a case the profile covers makes the item ``xfail``.
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
from amqpfuzz.strategies import Case, case_methods, malformed_cases, operators, valid_cases

from ..engine.conformance import ScenarioTarget
from ..engine.events import CaseJudged, DivergenceFound, Judged, ScenarioJudged
from ..engine.seeding import Namespaced
from ..records import describe, reaction_of, replay_command
from .markers import CAPABILITIES, CLASSES, class_of
from .options import options_of
from .session import AmqpSession

__all__ = [
    "AmqpItem",
    "FuzzFailed",
    "FuzzItem",
    "ItemFailure",
    "ScenarioError",
    "ScenarioFailed",
    "ScenarioItem",
    "collect",
    "group",
]


class ItemFailure(Exception):
    """What an amqpfuzz item reports: :meth:`report` is the text pytest shows."""

    def report(self) -> str:
        raise NotImplementedError


class ScenarioReport(ItemFailure):
    """A scenario that did not pass: the rule, the step, what was expected and observed."""

    def __init__(self, verdict: ScenarioJudged) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict

    def report(self) -> str:
        verdict, scenario = self.verdict, self.verdict.scenario
        assert scenario is not None
        played = verdict.played
        lines = [
            f"scenario {scenario.protocol}/{scenario.path.name} {verdict.verdict} on "
            f"{verdict.target.label} ({verdict.target.url})",
            f"rule:     {scenario.spec_ref}"
            + (f" (on failure: {scenario.on_failure})" if scenario.on_failure else ""),
            textwrap.indent(textwrap.fill(" ".join(scenario.rule.split()), 96), "          "),
        ]
        if played is not None:
            if played.line:
                lines.append(f"step:     line {played.line} ({played.step}) of {scenario.path}")
            lines.append(f"expected: {describe(reaction_of(played.expected))}")
            lines.append(f"observed: {describe(reaction_of(played.observed))}")
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

    def __init__(self, judged: CaseJudged, reproducer: str) -> None:
        assert judged.failure is not None
        super().__init__(judged.failure["message"])
        self.judged, self.reproducer = judged, reproducer

    def report(self) -> str:
        judged = self.judged
        failure = judged.failure
        assert failure is not None
        label = judged.target.label
        lines = [
            f"{judged.mutation or 'valid'} case [{judged.spec_ref}] failed on "
            f"{label} ({judged.target.url})",
            f"oracle:    {failure['oracle']}: {failure['message']}",
            f"signature: {failure['signature']}",
            f"expected:  {judged.required}",
            f"observed:  {judged.outcome}",
            "frames (the smallest case Hypothesis found):",
            textwrap.indent(judged.case, "  "),
        ]
        confirmation = judged.extra.get("confirmation") or {}
        if confirmation:
            lines.append(f"replayed:  reproduced {confirmation.get('rate', '?')}")
        if self.reproducer:
            lines.append(f"replay:    {replay_command(self.reproducer)}")
        return "\n".join(lines)


class Divergence(ItemFailure):
    """Several targets reacted differently to the same case (each as the spec allows)."""

    def __init__(self, found: DivergenceFound) -> None:
        super().__init__("the targets reacted differently")
        self.found = found

    @property
    def reactions(self) -> dict[str, str]:
        return {label: describe(r) for label, r in self.found.reactions.items()}

    def report(self) -> str:
        shown = "\n".join(f"  {label}: {reaction}" for label, reaction in self.reactions.items())
        return f"targets diverge on {self.found.spec_ref}:\n{shown}\nframes:\n" + textwrap.indent(
            self.found.case, "  "
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
        verdict = self.state.conformance([]).play_one(self.scenario, self.target)
        played = verdict.played
        self.properties(
            spec_ref=self.scenario.spec_ref,
            target=self.target.target.safe_url,
            verdict=verdict.verdict,
            expected=describe(reaction_of(played.expected)) if played else None,
            observed=describe(reaction_of(played.observed)) if played else None,
            message=verdict.message,
        )
        if verdict.verdict == "skip":  # in the plugin's words: the CLI's --broker is ours
            reason = verdict.reason.replace("(--broker)", "(--amqp-broker)")
            # reported at the scenario file, as a skip mark would be (not at this line)
            raise pytest.skip.Exception(reason, _use_item_location=True)
        if verdict.verdict == "error":
            raise ScenarioError(verdict)
        # the profile's deviation is this item's strict xfail mark: the expectation that did
        # not hold is what it expects, and an xpass passes here for the mark to fail it
        if verdict.verdict in ("fail", "xfail"):
            raise ScenarioFailed(verdict)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.scenario.path, 0, f"scenario {self.scenario.spec_ref}"


class FuzzItem(AmqpItem):
    def __init__(self, *, kind: str, subject: str, state: AmqpSession, **kw: Any) -> None:
        super().__init__(**kw)
        self.kind, self.subject, self.state = kind, subject, state

    def strategy(self, frame_max: int) -> st.SearchStrategy[Case]:
        options = self.state.options
        prefix, protocol = options.prefix, options.protocol
        if self.kind == "mutation":
            return malformed_cases(
                [self.subject], protocol=protocol, frame_max=frame_max, prefix=prefix
            )
        return valid_cases([self.subject], protocol=protocol, frame_max=frame_max, prefix=prefix)

    def runtest(self) -> None:
        campaign = self.state.campaign()
        gate = self.state.gate
        assert gate is not None
        expected: list[str] = []
        covered: list[str] = []
        flaky: dict[str, str] = {}  # signature -> its replays' rate
        cases = [0]

        # the item's examples kept apart from every other item's (they share this function)
        database = settings().database  # the profile's (a user's ini or conftest may set it)
        namespaced = Namespaced(database, self.nodeid.encode()) if database else None

        @settings(deadline=None, suppress_health_check=list(HealthCheck), database=namespaced)
        @hypothesis_seed(self.state.options.seed_for(self.nodeid))
        @given(self.strategy(campaign.frame_max))
        def case_holds(case: Case) -> None:
            cases[0] += 1
            expected[:] = [str(case.expected)]
            judged = campaign.run_batch([case])
            gate.end_batch()
            self._judge(judged, covered, flaky)

        self.properties(
            spec_ref=self.subject if self.kind == "method" else f"mutation {self.subject}",
            target=", ".join(run.target.safe_url for run in campaign.targets),
            seed=self.state.options.seed_for(self.nodeid),
        )
        try:
            with gate.item():
                case_holds()
        except BaseException as exc:
            found = _failure_in(exc)
            if isinstance(found, Divergence):
                self.properties(verdict="fail", observed=found.reactions)
            elif isinstance(found, FuzzFailed):
                failure = found.judged.failure
                self.properties(
                    verdict="fail",
                    expected=found.judged.required,
                    observed=found.judged.outcome,
                    signature=failure["signature"] if failure else None,
                    reproducer=found.reproducer,
                )
            raise
        self.properties(
            verdict="xfail" if covered else "flaky" if flaky else "pass",
            expected=expected[0] if expected else None,
            observed=f"{cases[0]} cases, "
            + (f"{len(covered)} deviations the profile records" if covered else "all as required"),
        )
        if flaky and not covered:
            self.properties(flaky="; ".join(f"{s} (reproduced {r})" for s, r in flaky.items()))
        if covered:
            pytest.xfail(covered[0])

    def _judge(self, judged: list[Judged], covered: list[str], flaky: dict[str, str]) -> None:
        """The engine's verdicts of one case: a failure fails the item, a deviation the profile
        records is noted (the item is an xfail if nothing fails), a divergence fails it; a
        flaky failure is noted (the item is flaky if nothing fails), or fails the item with
        ``--amqp-flaky-fails``."""
        strict = self.state.options.flaky_fails
        for event in judged:
            if not isinstance(event, CaseJudged):
                continue
            if event.verdict == "xfail":
                covered.append(event.deviation or "")
            elif event.verdict == "flaky" and event.failure is not None and not strict:
                rate = (event.extra.get("confirmation") or {}).get("rate", "?")
                flaky.setdefault(event.failure["signature"], str(rate))
            elif event.verdict in ("fail", "flaky") and event.failure is not None:
                key = (event.target.label, event.failure["signature"])
                raise FuzzFailed(event, self.state.failures.get(key, event.reproducer or ""))
        divergences = [e for e in judged if isinstance(e, DivergenceFound)]
        if divergences and not covered:
            found = divergences[0]
            if found.verdict == "flaky" and not strict:
                rate = (found.extra.get("confirmation") or {}).get("rate", "?")
                flaky.setdefault(str(found.signature), str(rate))
            else:
                raise Divergence(found)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"fuzz {self.kind} {self.subject}"


# -- collection --------------------------------------------------------------------------------


def group(parent: pytest.Collector | pytest.Session, name: str) -> pytest.Collector:
    nodeid = f"{parent.nodeid}::{name}" if parent.nodeid else name
    return _Group.from_parent(parent, name=name, path=parent.path, nodeid=nodeid)


class _Group(pytest.Collector):
    """A level of the node ids; its items are made by :func:`collect`, not by collecting."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        return []


def _mark(item: pytest.Item, ref: str, capabilities: Iterable[str] = ()) -> None:
    if class_of(ref) in CLASSES:
        item.add_marker(f"amqp_class_{class_of(ref)}")
    for capability in capabilities:
        if capability in CAPABILITIES:
            item.add_marker(f"amqp_{capability.replace('-', '_')}")


def collect(session: pytest.Session, state: AmqpSession) -> list[pytest.Item]:
    options = options_of(session.config)
    root = group(session, "amqpfuzz")
    items: list[pytest.Item] = []
    if options.scenarios:
        items += _scenario_items(group(root, "scenarios"), state)
    if options.fuzz:
        items += _fuzz_items(group(root, "fuzz"), state)
    if options.clients:
        from .clients import client_items  # the client campaigns' modules, when asked for

        items += client_items(group(root, "client"), state)
    # as a collector's report, so that "collected N items" counts them
    session.config.hook.pytest_collectreport(
        report=pytest.CollectReport(
            root.nodeid, "passed", None, list[pytest.Item | pytest.Collector](items)
        )
    )
    return items


def _scenario_items(parent: pytest.Collector, state: AmqpSession) -> list[pytest.Item]:
    scenarios = [s for s in load_all() if not s.for_client]  # a client's: --amqp-client
    run = state.conformance(scenarios)
    seen: dict[tuple[str, str], int] = {}
    for scenario in scenarios:
        key = (scenario.protocol, scenario.spec_ref)
        seen[key] = seen.get(key, 0) + 1
    groups = {p: group(parent, p) for p in dict.fromkeys(s.protocol for s in scenarios)}
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
            if run.skip_reason(scenario, target) is None:
                _expectation(item, scenario, target)
            items.append(item)
    return items


def _expectation(item: pytest.Item, scenario: Scenario, target: ScenarioTarget) -> None:
    """The profile's deviation from the scenario's rule as a strict xfail (a race's, which
    happens now and then, as one that may pass). (A scenario that cannot run is skipped when
    it runs, so that its record says so.)"""
    deviation = target.deviation(None, rule=scenario.spec_ref, protocol=scenario.protocol)
    if deviation is not None and target.profile is not None:
        reason = f"{target.profile.name}: {deviation.reason}"
        strict = not deviation.sometimes
        item.add_marker(pytest.mark.xfail(strict=strict, reason=reason, raises=ScenarioFailed))


def _fuzz_items(parent: pytest.Collector, state: AmqpSession) -> list[pytest.Item]:
    protocol = state.options.protocol
    items: list[pytest.Item] = []
    methods = group(parent, "method")
    for method in case_methods(protocol):
        item = FuzzItem.from_parent(
            methods, name=method, kind="method", subject=method, state=state
        )
        _mark(item, method)
        items.append(item)
    mutations = group(parent, "mutation")
    for operator in operators(protocol):
        items.append(
            FuzzItem.from_parent(
                mutations, name=operator.name, kind="mutation", subject=operator.name, state=state
            )
        )
    for each in items:
        each.add_marker("amqp_fuzz")
    return items
