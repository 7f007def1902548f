"""Valid 1.0 traffic in state: walks of a session that wait for the peer where the specification
makes them wait, run here against peers that number, credit and deliver in other ways than the
one a case is planned against; every frame they send is read back by our own checked decoder,
no transfer goes beyond the credit granted, every disposition settles deliveries the peer sent,
and settlement is as the attach negotiated. What a broker's profile restricts is kept out, and
malformed cases follow a shorter walk on their session."""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from amqpfuzz.fuzzer.brokers.profiles import find_profile
from amqpfuzz.fuzzer.protocols.families import driver_for
from amqpfuzz.spec import RemoteProtocolError
from amqpfuzz.spec.amqp10.codec import Composite, Frame, codec_for
from amqpfuzz.strategies import Case, Placement, case_builder
from amqpfuzz.strategies.amqp10.model import PREFIX_HANDLE
from amqpfuzz.strategies.amqp10.profile import Traffic
from amqpfuzz.strategies.amqp10.session import Nominal, View, serial
from amqpfuzz.strategies.amqp10.steps import Awaiting
from amqpfuzz.strategies.amqp10.traffic import SHAPES
from amqpfuzz.strategies.source import Source

PREFIX = "tt10-"
codec = codec_for("1.0")
SERIAL = 1 << 32


def rabbit() -> dict[str, Any]:
    profile = find_profile(None, "RabbitMQ", "3.10.8", "1.0")
    assert profile is not None and profile.traffic
    return dict(profile.traffic)


def walks(count: int, traffic: dict[str, Any] | None = None, seed: int = 1) -> list[Case]:
    build = case_builder(
        protocol="1.0", valid_share=0, traffic_share=1.0, state_share=0, prefix=PREFIX,
        traffic=traffic,
    )  # fmt: skip
    rnd = random.Random(seed)
    return [build(rnd.randbytes(512)) for _ in range(count)]


# Peers that answer otherwise than the nominal one: handles of their own, transfer and
# delivery ids about to wrap, little credit.
PEERS = {
    "nominal": {},
    "stingy": {"credit": 2, "offset": 7, "began": SERIAL - 3, "first": SERIAL - 2, "initial": 5},
    "no credit": {"credit": 0, "offset": 1},
}


def run(case: Case, peer: Nominal, channel: int = 3) -> Iterator[tuple[list[Frame], list[Any]]]:
    """Each segment of ``case`` as the runner sends it, against ``peer``: our frames (read
    back by the checked decoder) and the peer's before them; stops where an await is not met."""
    sent: list[bytes] = []
    for segment in case.segments():
        received = peer.answer(sent)
        if segment.after is not None and not segment.after.met(sent, received):
            return
        data = segment.render(channel, sent, received)
        frames = [codec.decode_frame(f, check=True) for f in _split(data)]
        assert all(f.channel == (0 if f.name in _CONNECTION else channel) for f in frames)
        yield [f for f in frames if f.name not in _CONNECTION], list(received)


_CONNECTION = ("sasl-init", "open")  # (a whole connection's: on channel 0)


def planned(case: Case) -> list[Frame]:
    """The frames of ``case`` as planned (those that decode: a malformed case's may not)."""
    found = []
    for data in _split(case.render(1)):
        with contextlib.suppress(RemoteProtocolError):
            found.append(codec.decode_frame(data, check=False))
    return found


def _split(data: bytes) -> list[bytes]:
    """The frames of ``data``, its protocol headers left out."""
    out, at = [], 0
    while at < len(data):
        if data.startswith(b"AMQP", at):
            at += 8
            continue
        size = int.from_bytes(data[at : at + 4], "big")
        if size < 8:  # (a malformed case's: what follows is no frame to us)
            break
        out.append(data[at : at + size])
        at += size
    return out


class Rules:
    """What the specification requires of the traffic, checked from both sides' frames and
    read here independently of the strategies' own view of the session."""

    def __init__(self) -> None:
        self.links: dict[int, dict[str, Any]] = {}  # our handle -> what we know of its link
        self.sent_transfers = 0
        self.delivering: set[int] = set()  # our handles with a delivery in progress

    def check(self, frames: list[Frame], received: list[Any]) -> None:
        peer = _peer_state(received)
        for frame in frames:
            body = frame.body
            assert body is not None
            getattr(self, f"_{frame.name}", lambda b, p: None)(body, peer)

    def _attach(self, body: Composite, peer: dict[str, Any]) -> None:
        self.links[int(body["handle"])] = {
            "name": body["name"], "role": body["role"], "sent": 0,
            "initial": int(body["initial-delivery-count"] or 0),
            "snd": int(body["snd-settle-mode"]), "rcv": int(body["rcv-settle-mode"]),
        }  # fmt: skip

    def _transfer(self, body: Composite, peer: dict[str, Any]) -> None:
        self.sent_transfers += 1
        handle = int(body["handle"])
        link = self.links[handle]
        assert link["role"] is False, "a transfer on a link we receive on"
        if handle not in self.delivering:
            link["sent"] += 1
            limit = peer["limits"].get(link["name"])
            assert limit is not None, "a transfer before the peer granted credit"
            # transport 2.6.7: the deliveries sent never pass delivery-count + link-credit
            assert serial(limit - link["initial"]) >= link["sent"], "beyond the credit granted"
            assert body["delivery-id"] is not None and body["delivery-tag"] is not None
            if link["snd"] == 1:
                assert body["settled"] is True
            if link["snd"] == 0:
                assert not body["settled"]
            mode = body["rcv-settle-mode"]
            assert mode is None or mode == 0 or peer["rcv"].get(link["name"]) == 1
        if body["more"]:
            self.delivering.add(handle)
        else:
            self.delivering.discard(handle)

    def _disposition(self, body: Composite, peer: dict[str, Any]) -> None:
        first = int(body["first"])
        last = int(body["last"]) if body["last"] is not None else first
        ids = {serial(first + i) for i in range(serial(last - first) + 1)}
        if body["role"]:  # as receiver: only deliveries the peer sent, and sent unsettled
            assert ids <= peer["unsettled"], (ids, peer["unsettled"])
        else:  # as sender: only our own deliveries
            assert max(ids) < SERIAL and len(ids) <= self.sent_transfers

    def _flow(self, body: Composite, peer: dict[str, Any]) -> None:
        # the session's counters as they stand: ours, and the peer's as far as we have read
        assert int(body["next-outgoing-id"]) == self.sent_transfers
        if peer["next"] is not None:
            assert body["next-incoming-id"] == peer["next"]


def _peer_state(received: list[Any]) -> dict[str, Any]:
    """What the peer's frames say: each link's credit limit (by our link's name), the
    deliveries it sent unsettled, its rcv-settle-modes, its next transfer-id."""
    names: dict[int, str] = {}
    state: dict[str, Any] = {"limits": {}, "unsettled": set(), "rcv": {}, "next": None}
    transfers, partial = 0, False
    for frame in received:
        body = frame.body
        if frame.name == "begin":
            state["next"] = int(body["next-outgoing-id"])
        elif frame.name == "attach":
            names[int(body["handle"])] = str(body["name"])
            state["rcv"][str(body["name"])] = int(body["rcv-settle-mode"])
        elif frame.name == "flow" and body["handle"] is not None and body["link-credit"]:
            name = names[int(body["handle"])]
            state["limits"][name] = serial(int(body["delivery-count"]) + int(body["link-credit"]))
        elif frame.name == "flow" and body["handle"] is not None:
            state["limits"].setdefault(names[int(body["handle"])], 0)
        elif frame.name == "transfer":
            transfers += 1
            if not partial and not body["settled"]:
                state["unsettled"].add(int(body["delivery-id"]))
            partial = bool(body["more"])
    if state["next"] is not None:
        state["next"] = serial(state["next"] + transfers)
    return state


@pytest.mark.parametrize("peer", list(PEERS))
@pytest.mark.parametrize("traffic", [None, "rabbit"], ids=["spec only", "rabbitmq profile"])
def test_every_walk_keeps_the_rules_against_any_peer(peer: str, traffic: str | None) -> None:
    """Our checked decoder reads every frame back; no transfer passes the credit, every
    disposition is of deliveries the peer sent unsettled, settlement is as negotiated, the
    session's counters are as they stand; against a peer that grants no credit, no transfer
    goes at all."""
    transfers = dispositions = 0
    for case in walks(120, rabbit() if traffic else None, seed=len(peer)):
        assert case.operator is None and case.expected.outcome == "reply"
        rules = Rules()
        for frames, received in run(case, Nominal(codec, **PEERS[peer])):
            rules.check(frames, received)
            transfers += sum(1 for f in frames if f.name == "transfer")
            dispositions += sum(1 for f in frames if f.name == "disposition")
    if peer == "no credit":
        assert transfers == 0
    else:
        assert transfers > 100 and dispositions > 10


def test_a_case_as_planned_is_what_it_sends_to_the_nominal_peer() -> None:
    """A case's bytes (its reproducer's, its record's) are those it sends when the peer
    answers as planned."""
    cases = walks(60, seed=3)
    assert sum(c.waits for c in cases) > 50  # (a connection with nothing on its session: none)
    for case in cases:
        sent: list[bytes] = []
        peer = Nominal(codec)
        for segment in case.segments():
            assert segment.after is None or segment.after.met(sent, peer.answer(sent))
            segment.render(4, sent, peer.answer(sent))
        assert b"".join(sent) == case.render(4)


def test_every_shape_is_an_arm_a_blob_can_be_aimed_at() -> None:
    chooser = case_builder(protocol="1.0", prefix=PREFIX, traffic_share=0.5, state_share=0.2)
    shapes = [k for k in chooser.keys if k.startswith("traffic ")]
    assert shapes == [f"traffic {s}" for s in SHAPES] + ["traffic connection"]
    rnd = random.Random(5)
    for key in shapes:
        for _ in range(5):
            blob = chooser.aim(rnd.randbytes(512), key)
            case = chooser(blob)
            assert chooser.arm_of(blob) == key
            assert case.operator is None and case.note.startswith(key.removeprefix("traffic "))


def test_the_traffic_sends_every_performative_a_session_has() -> None:
    sent = Counter(f.name for case in walks(300, seed=6) for f in planned(case))
    assert {"attach", "detach", "flow", "transfer", "disposition", "begin", "end", "open"} <= set(
        sent
    )
    modes = Counter(
        (f.body["role"], int(f.body["snd-settle-mode"]), int(f.body["rcv-settle-mode"]))
        for case in walks(300, seed=7)
        for f in planned(case)
        if f.name == "attach"
    )
    for role in (False, True):  # links of each role with every settle mode
        assert {m[1] for m in modes if m[0] is role} == {0, 1, 2}
        assert {m[2] for m in modes if m[0] is role} == {0, 1}


def test_the_rabbitmq_profile_keeps_out_what_it_refuses() -> None:
    """Its [traffic] table: no delivery annotations, no rcv-settle-mode second, no modified
    or received state, no drain, arrays only of the constructors it reads, amqp-value lists as
    sequences, no user-id; addresses in its forms."""
    allowed = set(rabbit()["fields"]["array.constructors"])
    addresses: set[str] = set()
    for case in walks(300, rabbit(), seed=8):
        for frame in planned(case):
            body = frame.body
            if frame.name == "attach":
                assert int(body["rcv-settle-mode"]) == 0
                for end in (body["source"], body["target"]):
                    if isinstance(end, Composite) and end["address"]:
                        addresses.add(str(end["address"]).split(PREFIX)[0])
            elif frame.name == "flow":
                assert not body["drain"]
            elif frame.name == "disposition":
                state = body["state"]
                assert state is None or state.name in ("accepted", "rejected", "released")
            elif frame.name == "transfer" and body["delivery-id"] is not None and not body["more"]:
                for section in codec.sections(frame.payload):
                    name = getattr(section, "name", None) or str(section.descriptor)
                    assert name != "delivery-annotations"
                    if name == "properties":
                        assert section["user-id"] is None
                    if name == "amqp-value":
                        assert not isinstance(section.value, list)
                    _arrays_within(section, allowed)
    assert {"", "/queue/", "/exchange/amq.direct/", "/topic/"} <= addresses


def _arrays_within(value: Any, allowed: set[int]) -> None:
    from amqpfuzz.spec.amqp10.codec import Array, Described

    if isinstance(value, Array):
        assert codec.encoder.element(value)[0][-1] in allowed
    items: Any = ()
    if isinstance(value, Described):
        items = (value.value,)
    elif isinstance(value, Composite):
        items = value.fields.values()
    elif isinstance(value, list | tuple | Array):
        items = value.items if isinstance(value, Array) else value
    elif isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    for item in items:
        _arrays_within(item, allowed)


def test_every_name_carries_the_prefix_and_the_driver_deletes_its_nodes() -> None:
    driver = driver_for("1.0")
    for case in walks(200, rabbit(), seed=9):
        created = {name for _, name in driver.created(case, [], PREFIX)}
        for frame in planned(case):
            body = frame.body
            if frame.name == "attach":
                assert str(body["name"]).startswith(PREFIX)
                for end in (body["source"], body["target"]):
                    address = end["address"] if isinstance(end, Composite) else None
                    if address and PREFIX in address:
                        assert address in created
            elif frame.name == "open":
                assert str(body["container-id"]).startswith(PREFIX)


def test_a_malformed_case_in_state_follows_a_walk_on_its_session() -> None:
    build = case_builder(
        ["frame-size-small", "unknown-constructor", "handle-in-use"], protocol="1.0",
        valid_share=0, traffic_share=0, state_share=1.0, prefix=PREFIX,
    )  # fmt: skip
    rnd = random.Random(10)
    cases = [build(rnd.randbytes(512)) for _ in range(150)]
    for case in cases:
        if case.operator == "handle-in-use":  # a rule of the session's state: as it was
            assert not case.waits and "after " not in case.note
            continue
        assert case.placement == Placement.OPEN and case.waits and "after " in case.note
        assert case.expected.outcome == "connection-close" and not case.expected.tolerated
        # the walk's links keep clear of the operator's handles, and the case goes once the
        # peer has answered them
        attaches = [f for f in planned(case) if f.name == "attach"]
        assert all(int(f.body["handle"]) >= PREFIX_HANDLE for f in attaches[:-1] or attaches)
        last = case.segments()[-1]
        assert isinstance(last.after, Awaiting) and last.after.kind == "answered"


def test_the_view_reads_credit_across_the_wrap_and_links_attached_again() -> None:
    """Serial arithmetic: credit granted from a delivery-count about to wrap; a link detached
    and attached again by name is counted anew, answered in order."""
    peer = Nominal(codec, credit=3, began=SERIAL - 1, initial=SERIAL - 1)
    attach = codec.composite(
        "attach", name="l", handle=0, role=False, source=codec.composite("source"),
        target=codec.composite("target", address="n"), initial_delivery_count=SERIAL - 2,
    )  # fmt: skip
    sent = [codec.frame(attach)]
    view = View(codec, sent, peer.answer(sent))
    link = view.link("l")
    assert link is not None and link.answered and link.credit == 3
    detach = codec.frame(codec.composite("detach", handle=0))
    sent += [detach, codec.frame(attach)]
    view = View(codec, sent, Nominal(codec).answer(sent[:1]))  # the second not yet answered
    link = view.link("l")
    assert link is not None and link.attaches == 2 and not link.answered and link.credit == 0


def test_a_traffic_table_reads_from_profile_data() -> None:
    traffic = Traffic.of(rabbit())
    assert traffic.allowed("attach.rcv-settle-mode", ["first", "second"]) == ("first",)
    assert traffic.allowed("flow.drain", ["true"]) == ()
    assert Traffic.of(None).allowed("anything", ["a", "b"]) == ("a", "b")
    assert Traffic.of(None).addresses == ("@node",)
    assert Source(b"").byte() == 0
