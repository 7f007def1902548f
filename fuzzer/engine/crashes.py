"""A broker that goes down in a campaign: restarted, and the crash pinned and confirmed.

A batch that brought a throwaway broker down is dealt with before the next is sent: the broker
is restarted (for as long as the budget lasts, with a growing pause when it will not start), and
the crash is pinned on the case that does it alone (twice, on the restarted broker: :mod:`.triage`)
or on the traffic of the cases that do it together, cut down by delta debugging. What the replays
showed is each crash signature's :class:`~.confirm.Confirmation`: a crash that did not happen
again when its traffic was sent once more is flaky. A URL target cannot be restarted: the crash
keeps all the traffic in flight and the campaign ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..brokers import BrokerError
from ..protocols import ConnectionFailed
from .confirm import Confirmation, unconfirmed
from .events import BrokerDown, BrokerRestarted, Emitter
from .runner import Result, Runner, Sent
from .state import CampaignSettings, Stats, TargetRun
from .traffic import send, survives
from .triage import side_by_side, triage, unattributed, went_down

__all__ = ["Crashes"]

_FOUND = "the broker went down with the case in flight"


class Crashes:
    """Restarts and triage for a campaign's targets; ``confirmed`` is what the replays of each
    crash signature showed. ``connect`` makes a target's runner, ``measure`` takes a point of
    the coverage, ``deadline`` is the campaign's end."""

    def __init__(
        self,
        config: CampaignSettings,
        stats: Stats,
        emit: Emitter,
        connect: Callable[[TargetRun], Runner],
        measure: Callable[[], None],
        deadline: Callable[[], float],
    ) -> None:
        self.config, self.stats, self.emit = config, stats, emit
        self._connect, self._measure, self._deadline = connect, measure, deadline
        self.confirmed: dict[str, Confirmation] = {}

    def restart(self, run: TargetRun) -> bool:
        """Restart a throwaway broker that went down (for as long as the budget lasts, unless
        ``restarts`` says fewer), trying again with a growing pause when it will not start;
        if it cannot be, the campaign is over (:attr:`Stats.broker_down` says why)."""
        limit = self.config.restarts
        failed = 0
        while run.broker is not None and (limit is None or run.restarts < limit):
            run.restarts += 1
            self.emit(BrokerDown(run.label, run.broker.log_tail(10), restarting=True))
            self._measure()  # (a point while it is down too: what was reached stands)
            try:
                run.broker.recover()
            except BrokerError as exc:
                failed += 1
                if failed >= 3 or time.monotonic() > self._deadline():
                    self.stats.broker_down = f"{run.label} could not be restarted: {exc}"
                    return False
                time.sleep(2.0**failed)  # the machine may need a moment
                continue
            try:
                self._reconnect(run)
            except ConnectionFailed:
                continue  # down again already (another worker's case): once more
            self.emit(BrokerRestarted(run.label))
            self._measure()
            return True
        self.stats.broker_down = f"{run.label} stopped accepting connections"
        return False

    def renew(self, run: TargetRun) -> bool:
        """Restart a throwaway broker that is still up, so that what comes next meets it
        fresh (a hang's replays: :class:`~.state.CampaignSettings` ``fresh_hangs``); one that
        will not come back is dealt with as a crash's restart is."""
        if run.broker is None:
            return False
        self._measure()  # (the lines reached so far stand)
        try:
            run.broker.recover()
            self._reconnect(run)
        except (BrokerError, ConnectionFailed):
            return self.restart(run)
        self._measure()
        return True

    def _reconnect(self, run: TargetRun) -> None:
        """A new runner for a broker that was restarted (ConnectionFailed: down again)."""
        if run.runner is not None:
            run.runner.close()
        run.runner = self._connect(run)

    def after_batch(
        self, run: TargetRun, results: list[Result], traffic: tuple[Sent, ...]
    ) -> list[Result]:
        """A batch that brought the broker down: restart it and pin the crash on the case
        that does it alone, or on the traffic of the cases that do it together; if it cannot
        be restarted (a URL target, a broker that will not come back), the crash keeps all the
        traffic in flight and the campaign ends."""

        def runner() -> Runner:
            assert run.runner is not None
            return run.runner

        now = time.monotonic()  # triage has its budget, within the run's (a few seconds past)
        until = min(now + self.config.triage_budget, max(self._deadline(), now + 5.0))
        pinned: set[int] = set()
        while True:
            suspects = [i for i, r in enumerate(results) if went_down(r) and i not in pinned]
            if not suspects:
                return results
            if not self.restart(run):
                why = "it could not be restarted to find which"
                return self._unreplayed(unattributed(results, suspects, why, traffic), why)
            found = triage(results, suspects, runner, lambda: self.restart(run), until)
            results = found.results
            pinned.update(found.pinned)
            for index in found.pinned:  # brought it down alone, twice: confirmed
                self._confirm(results[index], 2, 2, ("down, the case alone",) * 2)
            if found.gone:
                why = "it went down for good while its cases ran alone"
                return self._unreplayed(results, why)
            if found.pinned or found.rest:  # the others run again, together
                if time.monotonic() > until:  # no time left to find which: the traffic of
                    # them all, sent once more to see that it still brings the broker down
                    rest = [i for i in found.rest if went_down(results[i])]
                    crashed = self._crashes(run)(list(traffic))
                    how = "brings it down" if crashed else "did not bring it down again when sent"
                    why = f"there was no time left to find which; their traffic, kept, {how}"
                    marked = unattributed(results, rest, why, traffic)
                    return self._sent_again(marked, rest, bool(crashed))
                again = runner().run([results[i].case for i in found.rest])
                traffic = tuple(runner().traffic)
                for i, result in zip(found.rest, again, strict=True):
                    results[i] = result
                continue
            # every suspect ran alone and none brought the broker down: it takes several
            budget = self.config.minimize_budget
            marked, crashed = side_by_side(results, suspects, traffic, self._crashes(run), budget)
            if crashed is None:
                return self._unreplayed(marked, "no traffic of theirs was kept")
            return self._sent_again(marked, suspects, crashed)

    def _crashes(self, run: TargetRun) -> Callable[[list[Sent]], bool | None]:
        """Whether traffic brings ``run``'s broker down (it is restarted if so; None if it
        will not come back)."""

        def test(chosen: list[Sent]) -> bool | None:
            driver, timeout = run.driver, self.config.timeout
            send(driver, run.target, chosen, timeout)
            if survives(driver, run.target, timeout, run.broker):
                return False
            return True if self.restart(run) else None

        return test

    # -- what the replays showed -----------------------------------------------------------

    def _confirm(self, result: Result, runs: int, hits: int, seen: tuple[str, ...]) -> None:
        if result.failure is not None:
            confirmation = Confirmation(runs, hits, _FOUND, seen)
            self.confirmed.setdefault(result.failure.signature, confirmation)

    def _sent_again(
        self, results: list[Result], suspects: list[int], crashed: bool
    ) -> list[Result]:
        """A crash's traffic sent once more: it did it again (1/1) or not (flaky: 0/1)."""
        seen = ("down, the traffic sent again",) if crashed else ("up, the traffic sent again",)
        for index in suspects[:1]:
            self._confirm(results[index], 1, int(crashed), seen)
        return results

    def _unreplayed(self, results: list[Result], why: str) -> list[Result]:
        """A crash that could not be replayed: the broker is down, which is its evidence."""
        for result in results:
            if went_down(result) and result.failure is not None:
                self.confirmed.setdefault(result.failure.signature, unconfirmed(_FOUND, why))
        return results
