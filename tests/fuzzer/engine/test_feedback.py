"""Feedback that steers a campaign: the corpus of seeds, its mutations, credit for new lines and
new reactions, arms that earn weight; on 0-9-1's real case builder, no broker."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from amqpfuzz.fuzzer.engine.corpus import HEAD, Corpus, CorpusError, Seed, mutate, splice
from amqpfuzz.fuzzer.engine.feedback import Arm as ArmStats
from amqpfuzz.fuzzer.engine.feedback import Feedback, Round, reactions
from amqpfuzz.fuzzer.protocols import Outcome
from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case, case_builder

SIZE = 512


@pytest.fixture(scope="module")
def chooser():  # type: ignore[no-untyped-def]
    return case_builder(valid_share=0.15, traffic_share=0.3, state_share=0.2, prefix="fb-")


def replied(*names: str) -> Outcome:
    return Outcome(OutcomeKind.REPLY, frames=tuple(SimpleNamespace(name=n) for n in names))


def test_a_mutant_keeps_its_size_and_mostly_its_arm(chooser) -> None:  # type: ignore[no-untyped-def]
    rnd = random.Random(3)
    kept = 0
    for _ in range(300):
        blob = rnd.randbytes(SIZE)
        child = mutate(blob, rnd)
        assert len(child) == SIZE
        kept += chooser.arm_of(child) == chooser.arm_of(blob)
        assert chooser(child).blob == child  # every mutant is a blob the builder reads
    assert kept > 250  # the head is left alone but one time in sixteen


def test_a_splice_is_the_first_head_and_the_second_tail() -> None:
    rnd = random.Random(5)
    first, second = bytes(SIZE), bytes([255]) * SIZE
    for _ in range(50):
        child = splice(first, second, rnd)
        assert len(child) == SIZE and child[:HEAD] == first[:HEAD]
        cut = child.index(255)
        assert child[:cut] == first[:cut] and child[cut:] == second[cut:]


def test_a_corpus_is_kept_on_disk_and_read_back(tmp_path: Path) -> None:
    corpus = Corpus(limit=3)
    rnd = random.Random(1)
    seeds = [Seed(rnd.randbytes(SIZE), f"arm {i}", gain=float(i)) for i in range(5)]
    for seed in seeds:
        corpus.add(seed)
    assert len(corpus) == 3 and corpus.added == 5
    assert {s.arm for s in corpus} == {"arm 2", "arm 3", "arm 4"}  # the least energy went
    assert corpus.save(tmp_path) == 3 and corpus.save(tmp_path) == 3  # written once each
    loaded = Corpus.load(tmp_path, SIZE)
    assert sorted(s.blob for s in loaded) == sorted(s.blob for s in corpus)
    assert all(s.loaded for s in loaded)


def test_a_bad_seed_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"blob": "00", "arm": "a", "gain": 1}))
    with pytest.raises(CorpusError, match=r"x\.json: a seed of 1 bytes, where cases read 512"):
        Corpus.load(tmp_path, SIZE)
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(CorpusError, match=r"x\.json: not a seed file"):
        Corpus.load(tmp_path, SIZE)
    with pytest.raises(CorpusError, match="no such corpus directory"):
        Corpus.load(tmp_path / "missing", SIZE)


def test_reactions_are_the_triple_and_the_transitions_between_replies() -> None:
    case = Case((), None, "queue.declare", operator="table-type")  # type: ignore[arg-type]
    found = reactions(case, replied("queue.declare-ok", "basic.qos-ok"))
    assert ("triple", "table-type", "queue.declare", "reply") in found
    assert ("next", "^", "queue.declare-ok") in found
    assert ("next", "queue.declare-ok", "basic.qos-ok") in found
    closed = reactions(case, Outcome(OutcomeKind.CHANNEL_CLOSE, 404))
    assert ("triple", "table-type", "queue.declare", "channel-close:404") in closed


def _batch(chooser, rnd: random.Random, count: int) -> list[Case]:  # type: ignore[no-untyped-def]
    return [chooser(rnd.randbytes(SIZE)) for _ in range(count)]


def test_new_lines_go_to_the_cases_that_showed_something_new(chooser) -> None:  # type: ignore[no-untyped-def]
    feedback = Feedback(chooser, SIZE)
    rnd = random.Random(2)
    base = _batch(chooser, rnd, 1)[0]
    cases = [replace(base, blob=rnd.randbytes(SIZE)) for _ in range(8)]  # alike but the blob
    outcomes = [replied("basic.qos-ok")] * 8
    feedback.learn(cases, outcomes, [Round(tuple(range(8)), 0)], set(), 1.0)
    assert len(feedback.corpus) == 0  # new reactions, but no new lines: no seed
    # a round that reached 30 lines: the one case with a reaction never seen is the seed
    outcomes = [replied("basic.qos-ok")] * 7 + [replied("queue.declare-ok", "basic.qos-ok")]
    cases = [replace(base, blob=rnd.randbytes(SIZE)) for _ in range(8)]
    feedback.learn(cases, outcomes, [Round(tuple(range(8)), 30)], set(), 2.0)
    seeds = list(feedback.corpus)
    assert [s.blob for s in seeds] == [cases[7].blob] and seeds[0].gain == 30.0
    assert seeds[0].arm == chooser.arm_of(cases[7].blob)
    # a case that crashed the broker is never a seed, whatever it reached
    cases = _batch(chooser, rnd, 2)
    outcomes = [replied("basic.get-ok"), replied("basic.get-empty")]
    feedback.learn(cases, outcomes, [Round((0, 1), 10)], {0, 1}, 3.0)
    assert len(feedback.corpus) == 1


def test_unmeasured_the_signal_is_new_reactions(chooser) -> None:  # type: ignore[no-untyped-def]
    feedback = Feedback(chooser, SIZE)
    cases = _batch(chooser, random.Random(4), 3)
    outcomes = [replied("a-ok"), replied("a-ok"), Outcome(OutcomeKind.CONNECTION_CLOSE, 501)]
    brought = feedback.learn(cases, outcomes, [Round((0, 1, 2), None)], set(), 1.0)
    assert feedback.signal == "reactions" and brought > 0
    assert {s.blob for s in feedback.corpus} >= {cases[0].blob, cases[2].blob}


def test_steering_mutates_seeds_and_aims_at_the_arms_that_brought_most(chooser) -> None:  # type: ignore[no-untyped-def]
    feedback = Feedback(chooser, SIZE)
    rnd = random.Random(6)
    rich = next(c for c in _batch(chooser, rnd, 50) if c.operator == "frame-end")
    poor = _batch(chooser, rnd, 200)
    for case in poor:  # many tries, nothing brought
        feedback.arms.setdefault(chooser.arm_of(case.blob), ArmStats()).tried += 5
    feedback.learn([rich], [replied("x-ok")], [Round((0,), 500)], set(), 1.0)
    fresh = [rnd.randbytes(SIZE) for _ in range(2000)]
    steered = feedback.steer(fresh, random.Random(9))
    assert len(steered) == len(fresh)
    arms = [chooser.arm_of(b) for b in steered]
    share = arms.count("frame-end") / len(arms)
    assert share > 0.3  # mutants of its seed, and aimed at its arm (blind: about 1 in 60)
    assert feedback.mutants > 800 and feedback.aimed > 350  # half, a quarter
    assert sum(b == f for b, f in zip(steered, fresh, strict=True)) > 350  # the rest as drawn


def test_loaded_seeds_go_first_as_they_are(chooser) -> None:  # type: ignore[no-untyped-def]
    feedback = Feedback(chooser, SIZE)
    rnd = random.Random(8)
    seeds = [Seed(rnd.randbytes(SIZE), "x", 1.0) for _ in range(3)]
    feedback.load(seeds)
    steered = feedback.steer([rnd.randbytes(SIZE) for _ in range(5)], rnd)
    assert steered[:3] == [s.blob for s in seeds]
    assert not feedback.pending  # sent once: then seeds like any other
    assert len(feedback.corpus) == 3
