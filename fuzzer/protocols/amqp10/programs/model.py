"""Stateful 1.0 programs through python-qpid-proton, the real client (as pika is for 0-9-1):
the program, its model of the nodes and its steps.

A program sends messages to a few durable nodes (at-most-once or at-least-once, now and then
on a link that asks for exactly-once, which the peer may offer or not; durable or not), receives them on one link per node with a credit window, settles each one (accepted,
rejected, released, modified with delivery-failed), closes a receiving link now and then (the
next receive attaches another), ends its connection (and with it its session and links) and
opens another now and then, may have a throwaway broker killed and restarted once, and at
its end drains every node. It checks the broker against its model on every delivery:

* none invented and none after it was accepted or rejected; every at-least-once message that
  was not accepted or rejected comes back by the end (none lost; a released or modified one
  comes again);
* the body and application properties as sent (the bare message, as the client decodes it);
* per-link order: on one receiving link, messages never delivered before come in the order
  their sending link sent them (two sending links have no order between them);
* no transfer beyond the credit the link granted (proton counts each against it);
* a message modified with delivery-failed comes again with its delivery-count one higher; one
  released, with the same;
* a durable at-least-once message survives the broker's kill and restart (messaging 3.2.1:
  "Durable Messages MUST NOT be lost even if an intermediary is unexpectedly terminated and
  restarted"); a message that was not durable may be lost then, never invented;
* every at-least-once send is accepted; every step answered within the timeout (a link closed
  by the program is answered by the peer's closing detach, transport 2.6.6).

A restart needs the broker's process: only a run's own throwaway broker, given as ``restart``.

A broken invariant raises :class:`~...family.Broken`; Hypothesis shrinks the program, whose steps
(:attr:`Program.trace`) are the reproducer :func:`~.replay.replay_program` runs again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from proton import Delivery, Endpoint, Link, Message, Terminus
from proton.reactor import AtLeastOnce, AtMostOnce, LinkOption
from proton.utils import BlockingConnection, BlockingReceiver

from ....brokers import Target
from ...family import Broken, NotReplayable, ProgramStep
from ...outcome import ConnectionFailed
from ..connection import Connection
from ..nodes import delete_nodes

__all__ = ["OUTCOMES", "Program", "Sent"]

OUTCOMES = ("accepted", "rejected", "released", "modified")
QUIET = 1.0  # seconds without a message that end a drain
RECOVERING = 3.0  # more, for what must come back after a restart
SURVIVE = "durable messages survive a restart"


class ExactlyOnce(LinkOption):
    """A sending link that asks the receiving peer to settle second (rcv-settle-mode second:
    exactly-once, transport 2.6.12); the peer's attach says whether it takes that mode."""

    def apply(self, link: Link) -> None:
        link.rcv_settle_mode = Link.RCV_SECOND


class Durable(LinkOption):
    """Durable termini that never expire: the node keeps what it holds across a restart
    (RabbitMQ's 1.0 plugin makes a durable queue for them)."""

    def apply(self, link: Link) -> None:
        for terminus in (link.source, link.target):
            terminus.durability = Terminus.DELIVERIES
            terminus.expiry_policy = Terminus.EXPIRE_NEVER


@dataclass
class Sent:
    seq: int
    body: bytes
    sure: bool  # at-least-once, accepted: it must come back unless accepted or rejected
    durable: bool = False
    count: int | None = None  # the delivery-count its next delivery must carry, if known
    delivered: bool = False
    restarted: bool = False  # it must have survived a restart of the broker
    link: str = "at-most-once"  # the sending link it went by (its mode)


@dataclass
class Program:
    """One program: its connection, its model of the nodes, the steps it took."""

    target: Target
    prefix: str
    timeout: float = 10.0
    trace: list[ProgramStep] = field(default_factory=list)
    broken: Broken | None = None
    nodes: dict[int, list[Sent]] = field(default_factory=dict)
    gone: dict[int, set[int]] = field(default_factory=dict)  # accepted or rejected seqs
    seq: int = 0
    links: int = 0
    connection: BlockingConnection | None = None
    senders: dict[tuple[int, str], Any] = field(default_factory=dict)
    receivers: dict[int, BlockingReceiver] = field(default_factory=dict)
    # per node's receiving link and the sending link a message came by (its mode): the last
    # never-delivered seq received (order holds per link, not across two senders' links)
    last: dict[tuple[int, str], int] = field(default_factory=dict)
    restart: Callable[[], object] | None = None  # kills and restarts the throwaway broker
    restarted: bool = False

    # -- connecting ------------------------------------------------------------------------

    def open(self) -> None:
        self._step({"step": "open"}, self._open)

    def _open(self) -> None:
        target = self.target
        try:  # which login the peer takes (the Proton broker: ANONYMOUS alone)
            probe = Connection.open(target, timeout=self.timeout)
        except ConnectionFailed as exc:
            raise Broken("no unexpected error", "open", str(exc)) from None
        mechanism = probe.mechanism or "ANONYMOUS"
        probe.close(timeout=1.0)
        where = f"{target.host}:{target.port}"
        if mechanism == "PLAIN":
            url = f"amqp://{target.user}:{target.password}@{where}"
        else:
            url = f"amqp://{where}"
        self.connection = BlockingConnection(url, timeout=self.timeout, allowed_mechs=mechanism)

    def close(self) -> None:
        self._let_go()
        names = [self.address(n) for n in self.nodes]
        if names:
            delete_nodes(self.target, names, self.timeout)

    def _let_go(self, timeout: float | None = None) -> None:
        """Close the program's connection (waiting ``timeout`` at most for the peer's close);
        its links go with it."""
        if self.connection is not None:
            if timeout is not None:
                self.connection.timeout = timeout
            with contextlib.suppress(Exception):  # a broken program's connection may be gone
                self.connection.close()
            self.connection = None
        self.senders.clear()
        self.receivers.clear()
        self.last.clear()

    def address(self, node: int) -> str:
        return f"{self.prefix}n{node}"

    def _link_name(self) -> str:
        """A link name of its own (proton's default is the same for two links to a node)."""
        self.links += 1
        return f"{self.prefix}link-{self.links}"

    # -- steps -----------------------------------------------------------------------------

    def _step(self, record: ProgramStep, run: Callable[[], object]) -> None:
        """Run one step, recorded first; an error of the client breaks an invariant (a
        timeout: ``timely answer``)."""
        self.trace.append(record)
        name = str(record["step"])
        try:
            run()
        except Broken as exc:
            self.broken = exc
            raise
        except NotReplayable:
            raise  # a program the place it runs cannot play: not the broker's doing
        except Exception as exc:
            timed_out = type(exc).__name__ == "Timeout"
            ended = self._peer_ended() if timed_out else None
            if ended is not None:  # proton waited on a link the peer had ended: that happened
                self.broken = Broken(ended[0], name, ended[1])
                raise self.broken from None
            invariant = Broken.HUNG if timed_out else "no unexpected error"
            self.broken = Broken(invariant, name, f"{type(exc).__name__}: {exc}")
            raise self.broken from None

    def _peer_ended(self) -> tuple[str, str] | None:
        """What the peer said when it ended one of the program's links or sessions, if it
        did (proton does not raise it while it waits)."""
        links = [*self.senders.values(), *self.receivers.values()]
        return next((e for e in map(self._ended, links) if e is not None), None)

    def fail(self, invariant: str, step: str, message: str) -> NoReturn:
        raise Broken(invariant, step, message)

    def send(
        self, node: int, count: int, sure: bool, durable: bool = False, exactly: bool = False
    ) -> None:
        """Send ``count`` messages to the node: at-least-once if ``sure`` (on a link that asks
        for exactly-once, if ``exactly``), else at-most-once; durable or not."""
        record = {"step": "send", "node": node, "count": count, "sure": sure}
        if durable:
            record["durable"] = True
        if exactly and sure:
            record["exactly"] = True
        self._step(record, lambda: self._send(node, count, sure, durable, exactly and sure))

    def _send(self, node: int, count: int, sure: bool, durable: bool, exactly: bool) -> None:
        mode = "exactly-once" if exactly else "at-least-once" if sure else "at-most-once"
        sender = self.senders.get((node, mode)) or self._sender(node, mode)
        # exactly-once where the peer offers it: it settles second, after our settle
        second = sender.link.remote_rcv_settle_mode == Link.RCV_SECOND
        model = self.nodes.setdefault(node, [])
        for _ in range(count):
            self.seq += 1
            body = f"{self.prefix}{self.seq}".encode()
            sent = Sent(self.seq, body, sure, durable, link=mode)
            message = Message(body=body, properties={"seq": self.seq}, durable=durable)
            if second:
                self._send_second(sender, message)
            else:
                sender.send(message)
            model.append(sent)  # (at-least-once: only now, accepted)

    def _sender(self, node: int, mode: str) -> Any:
        """The node's sending link of this mode (one for the connection's life)."""
        assert self.connection is not None
        options: list[LinkOption] = [AtMostOnce() if mode == "at-most-once" else AtLeastOnce()]
        if mode == "exactly-once":
            options.append(ExactlyOnce())
        options.append(Durable())
        try:
            sender = self.connection.create_sender(
                self.address(node), name=self._link_name(), options=options
            )
        except Exception as exc:
            if type(exc).__name__ != "Timeout" or mode != "exactly-once":
                raise
            self.fail(Broken.HUNG, "exactly-once",
                      f"no attach answered a sending link's attach with rcv-settle-mode second "
                      f"(exactly-once) in {self.timeout:g} s (transport 2.6.3: the partner "
                      f"answers an attach, with the settle mode it takes)")  # fmt: skip
        self.senders[(node, mode)] = sender
        return sender

    def _send_second(self, sender: Any, message: Message) -> None:
        """One exactly-once send: the peer's outcome comes unsettled; ours settles it, and
        the peer's settle follows (transport 2.6.12)."""
        assert self.connection is not None
        delivery = sender.link.send(message)
        self.connection.wait(
            lambda: bool(delivery.remote_state) or delivery.settled,
            msg=f"Sending on sender {sender.link.name}",
            timeout=self.timeout,
        )
        if delivery.remote_state != Delivery.ACCEPTED:
            self.fail("no unexpected error", "send",
                      f"an exactly-once send answered with {delivery.remote_state}, "
                      f"settled={delivery.settled}")  # fmt: skip
        delivery.settle()

    def detach(self, node: int) -> None:
        """Close the node's receiving link; the next receive attaches another. What the link
        held unsettled goes back to the node."""
        self._step({"step": "detach", "node": node}, lambda: self._detach(node))

    def _detach(self, node: int) -> None:
        receiver = self.receivers.pop(node, None)
        for mode in ("at-most-once", "at-least-once", "exactly-once"):
            self.last.pop((node, mode), None)
        for sent in self.nodes.get(node, []):
            sent.count = None  # one the closed link held may come again counted as delivered
        if receiver is None:
            return
        try:
            receiver.close()  # type: ignore[no-untyped-call]  # waits for the closing detach
        except Exception as exc:
            if type(exc).__name__ != "Timeout":
                raise
            self.fail(Broken.HUNG, "detach",
                      f"no detach with closed=true answered the link's closing detach in "
                      f"{self.timeout:g} s (transport 2.6.6: the partner replies with its own "
                      f"detach, closed set)")  # fmt: skip

    def reconnect(self) -> None:
        """End the program's connection, its session and links with it, and open another.
        What its receiving links held unsettled goes back to the nodes."""
        self._step({"step": "reconnect"}, self._reconnect)

    def _reconnect(self) -> None:
        assert self.connection is not None
        connection, self.connection = self.connection, None
        self._let_go()  # (the links and what they knew go with the connection)
        for model in self.nodes.values():
            for sent in model:
                sent.count = None  # one a closed link held may come again counted as delivered
        try:
            connection.close()  # waits for the peer's close
        except Exception as exc:
            if type(exc).__name__ != "Timeout":
                raise
            self.fail(Broken.HUNG, "reconnect",
                      f"no close answered the connection's close in {self.timeout:g} s "
                      f"(transport 2.4.3: the partner replies with its own close)")  # fmt: skip
        self._open()

    def restart_broker(self) -> None:
        """Kill the broker and start it again (a crash, not a clean stop), then connect again.
        Durable at-least-once messages must all be there; the others may be gone."""
        self._step({"step": "restart"}, self._restart)

    def _restart(self) -> None:
        if self.restart is None:
            raise NotReplayable(
                "the program restarts the broker: replay it on a throwaway broker (--broker)"
            )
        self._let_go(timeout=2.0)
        self.restart()
        self.restarted = True
        self._open()
        for model in self.nodes.values():
            for sent in model:
                sent.sure = sent.sure and sent.durable
                sent.restarted = sent.sure
                sent.count = None  # the count need not outlive the broker's process

    def receive(self, node: int, credit: int, take: int, outcome: str) -> None:
        record = {"step": "receive", "node": node, "credit": credit, "take": take}
        record["outcome"] = outcome
        self._step(record, lambda: self._receive(node, credit, take, outcome))

    def _receiver(self, node: int, credit: int) -> BlockingReceiver:
        """The node's receiving link (one for the program's life: what it holds stays on it,
        and its order is one link's), made with ``credit`` the first time."""
        assert self.connection is not None
        if node not in self.receivers:
            receiver = self.connection.create_receiver(
                self.address(node),
                credit=credit,
                name=self._link_name(),
                options=[AtLeastOnce(), Durable()],
            )
            self.receivers[node] = receiver
        return self.receivers[node]

    def _receive(self, node: int, credit: int, take: int, outcome: str, quiet: float = 0) -> int:
        receiver = self._receiver(node, credit)
        got = 0
        while take == 0 or got < take:
            try:
                message = receiver.receive(timeout=quiet or self.timeout)
            except Exception as exc:
                if type(exc).__name__ != "Timeout":
                    raise
                ended = self._ended(receiver)
                if ended is not None:
                    self.fail(ended[0], "receive", ended[1])
                if quiet:
                    break  # drained
                # the model holds at least ``take`` at-least-once messages there
                self.fail(self._lost(self.nodes.get(node, [])), "receive",
                          f"{take - got} of {take} messages did not come from node {node} "
                          f"in {self.timeout:g} s")  # fmt: skip
            got += 1
            if receiver.link.credit < 0:  # proton counts each transfer against the credit
                self.fail("credit respected", "receive",
                          f"{-receiver.link.credit} transfer(s) beyond the credit granted")  # fmt: skip
            self._check(node, message)
            self._settle(receiver, node, message, outcome)
        return got

    @staticmethod
    def _ended(link: Any) -> tuple[str, str] | None:
        """The invariant broken, and what the peer said, if it ended the link (a blocking
        sender or receiver) or its session, which proton does not raise while it waits: with
        an error, ``no error from the peer (its condition)``."""
        for end in (link.link, link.link.session):
            condition = end.remote_condition
            if condition is not None or end.state & Endpoint.REMOTE_CLOSED:
                what = "link" if end is link.link else "session"
                invariant = "no unexpected error"
                if condition is not None:
                    invariant = f"no error from the peer ({condition.name})"
                return invariant, f"the peer ended the {what}: {condition}"
        return None

    def _check(self, node: int, message: Message) -> None:
        """The model's checks on one delivery."""
        properties: dict[str, Any] = dict(message.properties or {})
        seq = properties.get("seq")
        model = {s.seq: s for s in self.nodes.get(node, [])}
        sent = model.get(seq) if isinstance(seq, int) else None
        if sent is None:
            gone = seq in self.gone.get(node, set())
            why = "after it was accepted or rejected" if gone else "that was never sent there"
            self.fail("none invented", "receive", f"a message (seq {seq!r}) {why}")
        if message.body != sent.body:
            self.fail("bare message unmodified", "receive",
                      f"seq {seq}: body {message.body!r}, sent {sent.body!r}")  # fmt: skip
        if not sent.delivered:  # in the order its sending link sent it, on this receiving link
            last_new = self.last.get((node, sent.link), 0)
            if sent.seq < last_new:
                self.fail("per-link order", "receive", f"seq {sent.seq} after {last_new}")
            self.last[(node, sent.link)] = sent.seq
        if sent.count is not None and message.delivery_count != sent.count:
            self.fail("delivery-count", "receive",
                      f"seq {sent.seq}: delivery-count {message.delivery_count}, "
                      f"{sent.count} expected")  # fmt: skip
        sent.delivered = True

    @staticmethod
    def _lost(missing: list[Sent]) -> str:
        """The invariant messages missing from a node break: survival, if one of them was
        there when the broker restarted."""
        return SURVIVE if any(s.sure and s.restarted for s in missing) else "no message lost"

    def _settle(self, receiver: BlockingReceiver, node: int, message: Message, how: str) -> None:
        properties: dict[str, Any] = dict(message.properties or {})
        seq = int(properties["seq"])  # (checked: a seq of the model)
        model = self.nodes[node]
        sent = next(s for s in model if s.seq == seq)
        if how in ("accepted", "rejected"):
            receiver.accept() if how == "accepted" else receiver.reject()
            model.remove(sent)
            self.gone.setdefault(node, set()).add(seq)
        elif how == "released":
            receiver.release(delivered=False)
            sent.count = message.delivery_count  # unchanged (messaging 3.4.4)
        else:  # modified, delivery-failed: the count goes up (messaging 3.4.5)
            assert receiver.fetcher is not None
            delivery = receiver.fetcher.unsettled.popleft()
            delivery.local.failed = True
            delivery.update(Delivery.MODIFIED)
            delivery.settle()
            sent.count = message.delivery_count + 1

    def drain(self) -> None:
        """Every node emptied (accepting); then nothing at-least-once may be missing."""
        self._step({"step": "drain"}, self._drain)

    def _drain(self) -> None:
        for node in sorted(self.nodes):
            self._receive(node, 50, 0, "accepted", quiet=QUIET)
            if self.restarted and any(s.sure for s in self.nodes[node]):
                # (a broker just restarted may still be recovering its queues under load)
                self._receive(node, 50, 0, "accepted", quiet=min(self.timeout, RECOVERING))
            missing = [s for s in self.nodes[node] if s.sure]
            lost = [s.seq for s in missing]
            if lost:
                self.fail(self._lost(missing), "drain",
                          f"{len(lost)} message(s) never came back from node {node}: {lost[:10]}")  # fmt: skip
