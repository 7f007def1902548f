"""A throwaway broker driven from a worker process: the parent owns it, a worker may ask for a
restart.

``amqpfuzz run`` starts its throwaway broker in the parent process and fuzzes it from worker
processes. A worker's campaign restarts a broker that went down, as it would in-process; a
:class:`RemoteBroker` makes that a request to the parent (:class:`Restarts` serves it), so one
broker is restarted once however many workers saw it go down. Between two restarts, a worker
sees a crash at once from the broker process's state.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .broker import Broker, log_tail
from .errors import BrokerError
from .guardian import running as process_running

__all__ = ["AnyBroker", "RemoteBroker", "Restarts"]


@dataclass
class RemoteBroker:
    """The worker's handle on the parent's broker (picklable: queues and plain values)."""

    kind: str
    pid: int
    log_path: Path
    index: int  # the worker's
    requests: Any  # the parent's queue of (index, event); a restart is ("recover", data)
    replies: Any  # multiprocessing queue of this worker's answers
    generation: int = 0
    timeout: float = 180.0

    @property
    def crashed(self) -> bool:
        return not process_running(self.pid)

    crashed_at: float | None = None  # not known in a worker: its process is the parent's

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log_path, lines)

    def recover(self) -> RemoteBroker:
        """Ask the parent to restart the broker (unless another worker already had it
        restarted since this one last heard), and wait until it serves again."""
        self.requests.put((self.index, ("recover", {"generation": self.generation})))
        try:
            answer = self.replies.get(timeout=self.timeout)
        except queue.Empty:
            raise BrokerError(f"{self.kind}: no restart within {self.timeout:.0f} s") from None
        if answer.get("error"):
            raise BrokerError(answer["error"])
        self.pid, self.generation = answer["pid"], answer["generation"]
        return self


class Restarts:
    """The parent's side: restarts its broker for the workers, once per generation."""

    def __init__(self, broker: Broker, context: Any, requests: Any, workers: int) -> None:
        self.broker = broker
        self.requests = requests
        self.replies = {index: context.Queue() for index in range(workers)}
        self.generation = 0
        self.attempts = 3

    def handle(self, index: int) -> RemoteBroker:
        assert self.broker.process is not None
        return RemoteBroker(
            self.broker.kind,
            self.broker.process.pid,
            self.broker.log_path,
            index,
            self.requests,
            self.replies[index],
            self.generation,
        )

    def serve(self, index: int, data: dict[str, Any]) -> bool:
        """Answer one worker's request; True if the broker was restarted for it."""
        restarted = False
        answer: dict[str, Any] = {}
        if data["generation"] == self.generation:
            for _ in range(self.attempts):  # other workers' cases may kill it as it starts
                try:
                    self.broker.recover()
                except BrokerError as exc:
                    answer = {"error": str(exc)}
                    continue
                answer = {}
                break
            self.generation += 1
            restarted = not answer
        if not answer:
            process = self.broker.process
            answer = {"pid": process.pid} if process else {"error": "the broker is not running"}
        self.replies[index].put({**answer, "generation": self.generation})
        return restarted


# What a campaign and its runner may hold: the broker itself, or a worker's handle on it.
AnyBroker = Broker | RemoteBroker
