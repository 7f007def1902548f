"""Valid traffic in state: walks whose methods build on what they made, read by our own decoder
and sequence checker as valid; what a broker's profile adds (its extension, its arguments, its
pseudo queues) as data; malformed cases put after a shorter walk."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from amqpfuzz.fuzzer.brokers.profiles import find_profile
from amqpfuzz.fuzzer.engine.corpus import mutate, splice
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec import Heartbeat, MethodFrame, codec_for
from amqpfuzz.spec.amqp091.state import SequenceChecker
from amqpfuzz.strategies import case_builder
from amqpfuzz.strategies.amqp091.family import FAMILY
from amqpfuzz.strategies.amqp091.profile import Traffic
from amqpfuzz.strategies.amqp091.traffic import Walk
from amqpfuzz.strategies.source import Source

PREFIX = "tt-"
CHANNEL = 5


def rabbit() -> dict[str, Any]:
    profile = find_profile(None, "RabbitMQ", "3.10.8", "0-9-1")
    assert profile is not None and profile.traffic
    return dict(profile.traffic)


def walks(count: int, traffic: dict[str, Any] | None, seed: int = 1) -> list[Any]:
    build = case_builder(
        protocol="0-9-1", valid_share=0, traffic_share=1.0, state_share=0, prefix=PREFIX,
        traffic=traffic,
    )  # fmt: skip
    rnd = random.Random(seed)
    return [build(rnd.randbytes(512)) for _ in range(count)]


@pytest.mark.parametrize("traffic", [None, "rabbit"], ids=["spec only", "rabbitmq profile"])
def test_every_walk_is_valid_for_our_decoder_and_sequence_checker(traffic: str | None) -> None:
    spec = load("0-9-1-rabbit")  # reads what the broker's extension adds too
    codec = codec_for("0-9-1-rabbit")
    for case in walks(300, rabbit() if traffic else None):
        assert case.operator is None and case.expected.outcome == "reply"
        reader = codec.reader(frame_max=131072)
        reader.feed(codec.encode(Heartbeat()))
        frames = reader.feed(case.render(CHANNEL))
        assert reader.pending == 0 and frames
        assert SequenceChecker(spec, (CHANNEL,), sender="client").first_error(frames) is None
        for frame in frames:  # every name it gives a queue or an exchange is the run's
            if isinstance(frame, MethodFrame) and frame.method.name == "declare":
                values = dict(zip((f.name for f in frame.method.fields), frame.values, strict=True))
                name = values.get("queue", values.get("exchange"))
                assert name.startswith((PREFIX, "amq.")), frame


def test_a_walk_deletes_what_it_declared_but_the_shared_ones() -> None:
    for case in walks(300, rabbit(), seed=2):
        methods = [f for f in case.frames if isinstance(f, MethodFrame)]
        named = {
            (f.method.class_name, f.values[[x.name for x in f.method.fields].index(f.method.class_name)])
            for f in methods
            if f.method.name in ("declare", "delete") and f.method.class_name in ("queue", "exchange")
        }  # fmt: skip
        declared = {
            n for n in named
            if any(f.method.name == "declare" and n[1] in f.values for f in methods)
        }  # fmt: skip
        if any(f.method.full_name in ("tx.commit",) for f in methods):
            continue  # a walk ends at a commit, whose answer the broker wants first
        for kind, name in declared:
            if name.startswith(("amq.", f"{PREFIX}shared-")) or name == "":
                continue
            exclusive = any(
                f.method.full_name == "queue.declare" and f.values[1] == name and f.values[4]
                for f in methods
            )
            deleted = any(  # by its name, or by the empty name: the last queue declared
                f.method.full_name == f"{kind}.delete" and (name in f.values or "" in f.values[1:2])
                for f in methods
            )
            assert deleted or exclusive, (name, case.note)


def test_the_profile_brings_the_extension_the_arguments_and_the_pseudo_queues() -> None:
    plain = Counter(
        f.name for c in walks(1500, None) for f in c.frames if isinstance(f, MethodFrame)
    )
    rich = walks(1500, rabbit())
    names = Counter(f.name for c in rich for f in c.frames if isinstance(f, MethodFrame))
    extension = {"confirm.select", "basic.nack", "exchange.bind", "exchange.unbind"}
    assert extension <= set(names) and not extension & set(plain)
    assert names["basic.publish"] > 500 and names["queue.bind"] > 100
    arguments = Counter(
        key
        for c in rich
        for f in c.frames
        if isinstance(f, MethodFrame) and f.name == "queue.declare"
        for key in f.values[-1]
    )
    assert {"x-message-ttl", "x-max-length", "x-queue-type", "x-dead-letter-exchange"} <= set(
        arguments
    )
    queues = {
        f.values[1] for c in rich for f in c.frames
        if isinstance(f, MethodFrame) and f.name == "basic.consume"
    }  # fmt: skip
    assert "amq.rabbitmq.reply-to" in queues and f"{PREFIX}shared-q0" in queues | {
        f.values[1] for c in rich for f in c.frames if isinstance(f, MethodFrame) and f.name == "queue.declare"
    }  # fmt: skip
    # a channel in confirm mode is never made transacted, nor the other way round
    for case in rich:
        sent = {f.name for f in case.frames if isinstance(f, MethodFrame)}
        assert not {"confirm.select", "tx.select"} <= sent, case.note


def test_a_shared_queue_is_declared_alike_by_every_walk() -> None:
    seen: dict[str, set[str]] = {}
    for case in walks(1500, rabbit(), seed=3):
        for f in case.frames:
            if (
                isinstance(f, MethodFrame)
                and f.name == "queue.declare"
                and "shared-" in f.values[1]
            ):
                seen.setdefault(f.values[1], set()).add(repr(f.values[2:]))
    assert len(seen) >= 6 and all(len(forms) == 1 for forms in seen.values()), seen


def test_a_malformed_case_in_state_follows_a_walk_on_its_channel() -> None:
    build = case_builder(
        ["frame-end", "table-type"], protocol="0-9-1", valid_share=0, traffic_share=0,
        state_share=1.0, prefix=PREFIX, traffic=rabbit(),
    )  # fmt: skip
    rnd = random.Random(4)
    cases = [build(rnd.randbytes(512)) for _ in range(200)]
    assert {c.operator for c in cases} == {"frame-end", "table-type"}
    after = [c for c in cases if "after " in c.note]
    assert len(after) > 150
    for case in after:
        assert case.placement == "fresh" and len(case.steps) > 1
        # the operator's own reaction (frame-end's: the socket closed, section 4.2.3), with
        # the channel closes the walk's rules allow first
        own = case.expected.codes or case.expected.outcome == "socket-close"
        assert own and {c.name for c in case.expected.tolerated} <= {
            "access-refused", "not-found", "precondition-failed", "resource-locked",
            "not-allowed", "command-invalid",
        }  # fmt: skip


def test_no_blob_breaks_the_walk() -> None:
    """Any blob reads as a case (the campaign's blobs, and what feedback makes of them): the
    walk's model never loses track of what it made, whatever was drawn."""
    build = case_builder(
        protocol="0-9-1", valid_share=0.15, traffic_share=0.3, state_share=0.2, prefix=PREFIX,
        traffic=rabbit(),
    )  # fmt: skip
    rnd = random.Random(11)
    seeds = [rnd.randbytes(512) for _ in range(200)]
    for _ in range(15000):
        blob = rnd.choice(seeds)
        blob = splice(blob, rnd.choice(seeds), rnd) if rnd.random() < 0.2 else mutate(blob, rnd)
        assert build(blob).blob == blob
        if rnd.random() < 0.05:
            seeds.append(blob)


def test_cancelling_one_of_two_consumers_of_a_pseudo_queue() -> None:
    traffic = Traffic.of(rabbit())
    ctx = FAMILY.context("0-9-1", prefix=PREFIX, traffic=rabbit())
    (pseudo,) = traffic.pseudo
    walk = Walk(ctx, Source(bytes(64)), traffic)
    walk.consumers, walk.owners = ["a", "b"], {"a": pseudo.queue, "b": pseudo.queue}
    walk.replies = [pseudo, pseudo]
    walk.cancel(ctx.spec.method("basic.cancel"))
    assert len(walk.consumers) == 1 and set(walk.owners) == set(walk.consumers)
    assert walk.frames[-1].name == "basic.cancel"


def _frames(case: Any, protocol: str = "0-9-1-rabbit") -> list[MethodFrame]:
    reader = codec_for(protocol).reader(frame_max=131072)
    reader.feed(codec_for(protocol).encode(Heartbeat()))
    return [f for f in reader.feed(case.render(CHANNEL)) if isinstance(f, MethodFrame)]


def test_a_consumer_it_started_is_cancelled_only_if_started_with_no_wait() -> None:
    """RabbitMQ cannot take a cancel pipelined behind its consume (the profile's ``apart``):
    the walk cancels a consumer of its own only when it started it with no-wait, which the
    broker answers with nothing that could arrive after the cancel; and it does so."""
    mine = 0
    for case in walks(600, rabbit()):
        started: dict[str, bool] = {}
        for frame in _frames(case):
            if frame.name == "basic.consume":
                started[frame["consumer-tag"]] = frame["no-wait"]
            elif frame.name == "basic.cancel" and frame["consumer-tag"] in started:
                assert started[frame["consumer-tag"]], case.spec_ref
                mine += 1
    assert mine >= 10


def test_a_passive_declare_names_a_queue_the_walk_declared() -> None:
    passive = 0
    for case in walks(600, rabbit()):
        declared: set[str] = set()
        for frame in _frames(case):
            if frame.name != "queue.declare":
                continue
            if frame["passive"] and frame["queue"] != "amq.rabbitmq.reply-to":
                assert frame["queue"] in declared, case.spec_ref
                passive += 1
            declared.add(frame["queue"])
    assert passive >= 10


def test_garagemq_s_walks_send_nothing_it_answers_with_540_or_never_answers() -> None:
    """GarageMQ answers basic.recover, basic.recover-async and an immediate publish with 540
    NOT_IMPLEMENTED, and never answers exchange.delete or the tx class (its profiled
    deviations): its profile's traffic keeps valid walks off them, even the walk's own clean-up,
    which otherwise failed under the walk's own name (issue 36's false-alarm audit)."""
    profile = find_profile("garagemq-0.1")
    assert profile is not None and profile.traffic
    unanswered = {"basic.recover", "basic.recover-async", "exchange.delete", "tx.select"}
    spec_only = [f.name for case in walks(600, None) for f in _frames(case)]
    assert unanswered <= set(spec_only)  # (drawn without it)
    for case in walks(600, dict(profile.traffic)):
        for frame in _frames(case):
            assert frame.name not in unanswered and not frame.name.startswith("tx."), case
            assert not (frame.name == "basic.publish" and frame["immediate"]), case.spec_ref


def test_a_profile_leaves_kinds_of_odd_argument_value_out() -> None:
    """``odd_without``: the walks' odd argument values keep clear of a decoder defect the
    profile records (Broker-J drops the connection on an empty nested table)."""
    from amqpfuzz.strategies.amqp091.model import ODD_KINDS, _odd

    rnd = random.Random(5)
    drawn = [_odd(Source(rnd.randbytes(8))) for _ in range(400)]
    assert {ODD_KINDS[type(v)] for v in drawn} == set(ODD_KINDS.values())
    kept = [_odd(Source(rnd.randbytes(8)), ("table", "array")) for _ in range(400)]
    assert kept and not any(isinstance(v, dict | list) for v in kept)
    profile = find_profile(None, "Apache Qpid Broker-J Core", "10.1.0", "0-9-1")
    assert profile is not None
    assert Traffic.of(profile.traffic).odd_without == ("table",)


def test_a_method_the_profile_leaves_out_is_not_sent_even_to_set_up_another() -> None:
    """Broker-J's 0-8 profile leaves out basic.consume (its 0-8 decoder reads past it): a walk
    that cancels a consumer when it started none cancels a tag it never started instead of
    consuming first (which every basic.* walk of a default campaign once did)."""
    profile = find_profile(None, "Apache Qpid Broker-J Core", "10.1.0", "0-8")
    assert profile is not None and "basic.consume" in profile.traffic["without"]
    build = case_builder(
        protocol="0-8", valid_share=0, traffic_share=1.0, state_share=0, prefix=PREFIX,
        traffic=dict(profile.traffic),
    )  # fmt: skip
    rnd = random.Random(3)
    names = [f.name for _ in range(600) for f in _frames(build(rnd.randbytes(512)), "0-8")]
    assert "basic.cancel" in names and "basic.consume" not in names
