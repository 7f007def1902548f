"""``amqpfuzz run``'s worker processes: each runs the engine with its own seed, prefix and record
file, and forwards its events to the process that started it.

A worker's events go to its record file (a :class:`~amqpfuzz.fuzzer.records.RecordHandler`)
and, through a queue, to the parent, whose handlers show progress and make the summary. The
same queue carries a worker's request to restart the parent's throwaway broker
(:mod:`amqpfuzz.fuzzer.brokers.control`). Ctrl-C stops every worker cleanly: the records written
so far stay, their files moved into place.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..brokers import Broker, Target
from ..brokers.control import RemoteBroker, Restarts
from ..coverage import Probe
from ..engine.campaign import Campaign, CampaignSettings, TargetRun
from ..engine.events import Emitter, Judged, RunFinished
from ..engine.programs import ProgramSettings, run_programs
from ..engine.targets import TargetState
from ..recording import RecordHandler
from ..records import RecordWriter

__all__ = ["WorkerDone", "WorkerFailed", "WorkerJob", "supervise"]


@dataclass
class WorkerJob:
    """What one worker process does (picklable: targets carry their passwords in memory)."""

    index: int
    targets: list[Target]
    out: str
    run_id: str
    prefix: str
    profile: str | None
    fuzz: CampaignSettings | None  # a fuzz campaign, with its budget
    programs: ProgramSettings | None  # then stateful programs, with theirs
    broker: RemoteBroker | None = None  # the parent's throwaway broker, restartable on request
    coverage: tuple[Probe | None, ...] = ()  # per target: how its code's coverage is measured


@dataclass(frozen=True)
class WorkerFailed:
    """A worker stopped on an error it could not go on from (one line for the user)."""

    message: str


@dataclass(frozen=True)
class WorkerDone:
    interrupted: bool = False


def _die_with_parent(parent: int) -> None:
    """A worker ends when the process that started it (``parent``) ends, SIGKILL included: the
    kernel is asked to kill it then (Linux), and a thread watches for the parent's end all the
    same. ``parent`` comes from the parent itself: it may have ended before this runs."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="amqpfuzz-parent").start()
    if os.getppid() != parent:  # it ended before the kernel was asked
        os._exit(1)


PR_SET_PDEATHSIG = 1


def _work(job: WorkerJob, events: Any, parent: int) -> None:
    """One worker: its campaign and programs, its events recorded and sent to the parent."""
    _die_with_parent(parent)

    def forward(event: Any) -> None:
        # the parent shows progress and makes the summary: what was judged stays here, in
        # the record file (one pickled event per case would cost the broker a core)
        if not isinstance(event, Judged):
            events.put((job.index, event))

    writer = RecordWriter(
        Path(job.out), job.run_id, f"{os.uname().nodename}-{os.getpid()}-w{job.index}"
    )
    records = RecordHandler(writer)
    emit = Emitter(records, forward)
    interrupted = False
    try:
        if job.fuzz is not None:
            _fuzz(job, job.fuzz, emit)
        if job.programs is not None:
            targets = [
                TargetState(t, broker=job.broker, profile_name=job.profile, coverage=probe)
                for t, probe in zip(job.targets, _probes(job), strict=True)
            ]
            run_programs(
                targets, job.programs, out=Path(job.out), run_id=job.run_id,
                prefix=job.prefix, emit=emit,
            )  # fmt: skip
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # reported to the parent, which prints one line
        events.put((job.index, WorkerFailed(f"{type(exc).__name__}: {exc}")))
    finally:
        records.close()
        events.put((job.index, WorkerDone(interrupted)))


def _probes(job: WorkerJob) -> tuple[Probe | None, ...]:
    return job.coverage or (None,) * len(job.targets)


def _fuzz(job: WorkerJob, config: CampaignSettings, emit: Emitter) -> None:
    runs = [
        TargetRun(t, broker=job.broker, profile_name=job.profile, coverage=probe)
        for t, probe in zip(job.targets, _probes(job), strict=True)
    ]
    campaign = Campaign(
        runs, config, out=Path(job.out), run_id=job.run_id, prefix=job.prefix, emit=emit
    )
    try:
        campaign.start()
    except BaseException:
        campaign.finish()
        raise
    campaign.run()


def supervise(
    jobs: list[WorkerJob],
    broker: Broker | None,
    handle: Callable[[int, Any], None],
) -> tuple[list[RunFinished], list[str], bool]:
    """Run ``jobs`` in worker processes until all are done; each event a worker emits goes to
    ``handle(index, event)``, and a request to restart ``broker`` is served here. Returns the
    workers' run summaries, their errors, and whether the user interrupted."""
    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    restarts = None if broker is None else Restarts(broker, context, events, len(jobs))
    for job in jobs:
        job.broker = None if restarts is None else restarts.handle(job.index)
    processes = [context.Process(target=_work, args=(job, events, os.getpid())) for job in jobs]
    for process in processes:
        process.start()
    finished: list[RunFinished] = []
    errors: list[str] = []
    done: set[int] = set()
    interrupted = False
    try:
        while len(done) < len(jobs):
            try:
                index, event = events.get(timeout=0.5)
            except queue.Empty:
                if not any(p.is_alive() for p in processes) and events.empty():
                    break
                continue
            if isinstance(event, tuple) and event[0] == "recover":  # from a worker's handle
                _, data = event
                if restarts is not None and restarts.serve(index, data):
                    handle(index, "restarted")
                continue
            if isinstance(event, WorkerFailed):
                errors.append(event.message)
            elif isinstance(event, WorkerDone):
                done.add(index)
                interrupted = interrupted or event.interrupted
            elif isinstance(event, RunFinished):
                finished.append(event)
            handle(index, event)
    except KeyboardInterrupt:
        interrupted = True
        handle(-1, "interrupted")
    for process in processes:
        process.join(60)
        if process.is_alive():
            process.terminate()
    return finished, errors, interrupted
