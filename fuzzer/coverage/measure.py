"""A run's view of a broker's coverage: every sample's lines joined (a broker restarted from
scratch forgets what it covered; the run does not), counted per module and per named set.

:meth:`Measure.take` samples the broker and says how many lines no sample had shown before:
the signal a campaign steers by. :meth:`Measure.counts` and :meth:`Measure.unreached` are what
the summary, the records and the report show.
"""

from __future__ import annotations

from dataclasses import dataclass

from .probe import CoverageError, Layout, Probe

__all__ = ["Measure", "ModuleCount", "set_totals"]


@dataclass(frozen=True, slots=True)
class ModuleCount:
    """One module's lines covered so far, of its relevant lines; the named set it counts in."""

    module: str
    set: str | None
    covered: int
    relevant: int


def set_totals(counts: tuple[ModuleCount, ...]) -> dict[str, tuple[int, int]]:
    """Covered and relevant lines per named set."""
    totals: dict[str, tuple[int, int]] = {}
    for count in counts:
        if count.set is not None:
            covered, relevant = totals.get(count.set, (0, 0))
            totals[count.set] = (covered + count.covered, relevant + count.relevant)
    return totals


class Measure:
    """The lines (and functions) of ``probe``'s broker that any sample showed covered."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.lines: dict[str, set[int]] = {}
        self.entered: dict[str, set[str]] = {}
        self._layout: Layout | None = None
        self.failed = ""  # why the last sample could not be taken

    def take(self) -> int | None:
        """Sample the broker; how many lines were new (None: no sample could be taken, as from
        a broker that is down, and ``failed`` says why)."""
        try:
            sample = self.probe.sample()
        except CoverageError as exc:
            self.failed = str(exc)
            return None
        self.failed = ""
        new = 0
        for module, seen in sample.modules.items():
            lines = self.lines.setdefault(module, set())
            before = len(lines)
            lines |= seen.lines
            new += len(lines) - before
            self.entered.setdefault(module, set()).update(seen.functions)
        return new

    @property
    def layout(self) -> Layout:
        """What there is to cover (asked once, when first wanted; empty if it cannot be)."""
        if self._layout is None:
            try:
                self._layout = self.probe.layout()
            except CoverageError as exc:
                self.failed = str(exc)
                return Layout()
        return self._layout

    @property
    def total(self) -> int:
        return sum(len(lines) for lines in self.lines.values())

    def counts(self) -> tuple[ModuleCount, ...]:
        """Per module of the plan, in its order: covered and relevant lines."""
        plan, relevant = self.probe.plan, self.layout.relevant
        return tuple(
            ModuleCount(m, plan.set_of(m), len(self.lines.get(m, ())), relevant.get(m, 0))
            for m in self._modules()
        )

    def _modules(self) -> list[str]:
        """The plan's modules as the broker names them (a Python plan's are file patterns)."""
        named = [m for m in self.probe.plan.modules if m in self.layout.relevant]
        return named or sorted(m for m, lines in self.layout.relevant.items() if lines)

    def unreached(self) -> dict[str, list[tuple[str, int]]]:
        """Per module, the functions no sample showed entered, with their relevant lines."""
        found = {}
        for module, functions in self.layout.functions.items():
            entered = self.entered.get(module, set())
            missed = [(name, lines) for name, lines in functions.items() if name not in entered]
            if missed:
                found[module] = missed
        return found
