"""Mutation operators: each breaks frames the way it says, and the reaction comes from the spec."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from amqpfuzz import strategies as afs
from amqpfuzz.spec import RemoteProtocolError, protocols_of
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.codec import Frame, Heartbeat, MethodFrame, codec_for
from amqpfuzz.spec.amqp091.state import SequenceChecker
from amqpfuzz.strategies import CASE_CHANNEL, Case, Special
from amqpfuzz.strategies.amqp091.operators import handshake

FRAME_MAX = 4096
CHANNEL = 7
SETTINGS = settings(
    max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
FIND = settings(
    max_examples=2000,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
# the operators on the connection itself, judged against a model of a server's handshake below
CONNECTION = {op.name for op in handshake.OPERATORS}
OPERATORS = [
    (p, op.name)
    for p in protocols_of("amqp091")
    for op in afs.operators(p)
    if op.name not in CONNECTION
]
HANDSHAKE = [(p, n) for p in protocols_of("amqp091") for n in sorted(CONNECTION)]


def _judge(protocol: str, case: Case) -> str:
    """The error category our decoder or, past it, the sequence checker gives the case."""
    spec = load(protocol)
    codec = codec_for(protocol)
    reader = codec.reader(frame_max=FRAME_MAX, check_asserts=True)
    reader.feed(codec.encode(Heartbeat()))  # the stream has started: no protocol header next
    channel = CHANNEL if case.placement != "none" else 1
    try:
        frames: list[Frame] = reader.feed(case.render(channel))
    except RemoteProtocolError as error:
        return f"decoder:{error.category}"
    assert reader.pending == 0, f"{case!r} left {reader.pending} bytes unread"
    open_channels = {"open": (CHANNEL,), "fresh": (CHANNEL,), "none": (1,)}.get(case.placement, ())
    verdict = SequenceChecker(spec, open_channels, sender="client").first_error(frames)
    return f"checker:{verdict.code}" if verdict is not None else "accepted"


@pytest.mark.parametrize(
    ("protocol", "name"),
    OPERATORS,
    ids=[f"{p}:{n}" for p, n in OPERATORS],
)
def test_every_malformed_case_is_refused_as_its_operator_says(protocol: str, name: str) -> None:
    op = next(o for o in afs.operators(protocol) if o.name == name)
    expected = op.names_in(load(protocol))[0]

    spec = load(protocol)

    @SETTINGS
    @given(afs.malformed_cases([name], protocol=protocol, frame_max=FRAME_MAX))
    def check(case: Case) -> None:
        assert case.operator == name
        judged = _judge(protocol, case)
        if op.level == "frame":
            assert judged == f"decoder:{expected}", case
        elif op.level == "sequence":
            assert judged in (f"decoder:{expected}", f"checker:{expected}"), case
        else:  # a rule of the spec, broken: only a broker can tell, the frames are sound
            assert judged == "accepted", case
            assert spec.rule(case.spec_ref).on_failure == case.expected.codes[0].name
        if op.scope is Special.SILENT:  # closed without a word: the code is our decoder's
            assert case.expected.outcome == "socket-close" and not case.expected.codes, case
            return
        # the code a case expects is its operator's, or the one a rule on its field names
        first = case.expected.codes[0].name
        if first != expected:
            method, _, field = case.spec_ref.partition("/")
            rules = (
                spec.method(method)
                .fields[[f.name for f in spec.method(method).fields].index(field)]
                .rules
            )
            assert first in {r.on_failure for r in rules}, case

    check()


def test_the_catalogue() -> None:
    spec = load("0-9-1")
    ops = afs.operators("0-9-1")
    assert len(ops) >= 20
    assert len({op.name for op in ops}) == len(ops)
    for op in ops:
        assert op.description and op.breaks and op.level in ("frame", "sequence", "rule")
        reaction = op.reaction(spec)
        if not op.codes:  # the server must close the socket: no code, no negotiated close
            assert op.name in CONNECTION and reaction.outcome == "socket-close"
            assert not reaction.codes and reaction.code is None
            continue
        if op.scope is Special.SILENT:  # 4.2.3: closed "without sending any further data"
            assert reaction.outcome == "socket-close" and not reaction.responses
            assert not reaction.codes and not reaction.tolerated
            continue
        first = spec.constant(op.names_in(spec)[0])
        assert reaction.codes[0] is first
        # hard or soft comes from the constant's class in the XML, not from the operator
        assert (reaction.outcome == "connection-close") == first.is_hard_error
        assert reaction.code == first.value


def test_reactions_come_from_the_spec_model() -> None:
    spec = load("0-9-1")
    reopen = next(op for op in afs.operators() if op.name == "channel-reopen")
    assert spec.rule("channel.open/state").on_failure == reopen.names_in(spec)[0] == "channel-error"
    oversized = next(op for op in afs.operators() if op.name == "above-frame-max")
    assert str(oversized.reaction(spec)) == "connection-close 501 frame-error"
    # section 4.2.3: a frame-end that is not 0xCE is closed "without sending any further data"
    frame_end = next(op for op in afs.operators() if op.name == "frame-end")
    assert str(frame_end.reaction(spec)) == "socket-close"
    # 0-8 has no unexpected-frame constant: the operators that need it do not apply there
    names_08 = {op.name for op in afs.operators("0-8")}
    assert "header-alone" not in names_08 and "frame-end" in names_08


@pytest.mark.parametrize("name", [op.name for op in afs.operators()])
def test_every_operator_is_reachable_in_a_mixed_campaign(name: str) -> None:
    case = find(
        afs.malformed_cases(frame_max=FRAME_MAX), lambda c: c.operator == name, settings=FIND
    )
    assert case.operator == name


def replayed(strategy: SearchStrategy[Case], blob: bytes) -> Case:
    """The case ``strategy`` draws from ``blob``, replayed from an example database the way
    a campaign replays a failing case to shrink it."""
    database = InMemoryExampleDatabase()
    seen: list[Case] = []

    @settings(database=database, phases=[Phase.reuse], max_examples=1, deadline=None)
    @given(strategy)
    def replay(case: Case) -> None:
        seen.append(case)

    replay._hypothesis_internal_database_key = b"replayed"  # type: ignore[attr-defined]
    database.save(b"replayed", choices_to_bytes((blob,)))
    replay()
    return seen[0]


def test_a_batch_case_is_the_case_its_blob_makes_alone() -> None:
    # a campaign draws cases in batches, and shrinks a failing one alone from its blob
    batches: list[list[Case]] = []

    @settings(max_examples=3, database=None, deadline=None, phases=[Phase.generate])
    @given(afs.fuzz_batches(20, valid_share=0.5, frame_max=FRAME_MAX, prefix="af-b-"))
    def draw(batch: list[Case]) -> None:
        batches.append(batch)

    draw()
    alone = afs.fuzz_cases(valid_share=0.5, frame_max=FRAME_MAX, prefix="af-b-")
    assert batches and all(len(batch) == 20 for batch in batches)
    for case in (case for batch in batches for case in batch[:4]):
        again = replayed(alone, case.blob)
        assert repr(again) == repr(case) and again.render(3) == case.render(3)


def test_a_batch_must_hold_a_case() -> None:
    with pytest.raises(InvalidArgument, match="size=0"):
        afs.fuzz_batches(0)


@SETTINGS
@given(afs.malformed_cases(frame_max=FRAME_MAX, prefix="af-x-"))
def test_cases_read_well_and_keep_their_bytes(case: Case) -> None:
    text = repr(case)
    assert case.operator is not None and case.operator in text
    assert "expect " in text and "ch=-1" not in text
    assert case.render(5) == case.render(5)
    if any(step.channel == CASE_CHANNEL for step in case.steps):
        assert case.render(5) != case.render(6)


def test_a_case_repr_names_method_arguments_and_mutation() -> None:
    case = find(
        afs.malformed_cases(["frame-end"], frame_max=FRAME_MAX),
        lambda c: c.spec_ref == "queue.declare",
        settings=FIND,
    )
    text = repr(case)
    assert text.startswith("frame-end [queue.declare]")
    assert "queue.declare(ch=N, queue=" in text and "with frame-end 0x" in text
    assert text.endswith("expect socket-close")


def test_the_catalogue_keeps_its_order() -> None:
    """Hypothesis shrinks towards the first operator, and a seed draws operators by their
    place: the order is part of what a seed means, across releases."""
    assert [op.name for op in afs.operators("0-9-1")] == [
        "frame-end", "size-larger", "size-smaller", "unknown-frame-type", "above-frame-max",
        "heartbeat-payload", "heartbeat-channel",
        "truncated-arguments", "trailing-bytes", "unknown-class", "unknown-method",
        "assert-violation", "string-overrun", "invalid-utf8", "table-type", "table-overrun",
        "deep-table",
        "header-class", "property-flags", "header-alone", "body-alone", "body-too-long",
        "method-in-content",
        "closed-channel", "before-open", "channel-reopen", "connection-on-channel", "channel-zero",
        "server-method",
        "missing-entity", "reserved-name", "not-transacted", "unknown-delivery-tag",
        "bad-protocol-header", "other-protocol-header", "unknown-mechanism", "refused-login",
        "malformed-response", "login-skipped", "tune-out-of-range", "unknown-vhost",
        "out-of-order", "channel-above-max", "handshake-again",
    ]  # fmt: skip


# -- the operators on the connection itself ------------------------------------------------------

# A server as the specification describes it, for judging a case on the connection itself: what
# it proposes (PLAIN; the limits RabbitMQ proposes), whom it knows, its virtual hosts.
MECHANISMS = ("PLAIN",)
USERS = {"guest": "guest"}
LIMITS = {"channel_max": 2047, "frame_max": 131072}
VHOSTS = ("/",)
# every AMQP version's protocol header, as its specification prints it (0-8's both ways)
AMQP_HEADERS = {
    b"AMQP\x01\x01\x08\x00", b"AMQP\x01\x01\x09\x01", b"AMQP\x01\x01\x00\x09",
    b"AMQP\x00\x00\x09\x01", b"AMQP\x01\x01\x00\x0a", b"AMQP\x00\x01\x00\x00",
    b"AMQP\x02\x01\x00\x00", b"AMQP\x03\x01\x00\x00",
}  # fmt: skip
# what each operator's cases must break, as the model below finds it
BREAKS = {
    "bad-protocol-header": "header:none",
    "other-protocol-header": "header:other",
    "unknown-mechanism": "mechanism",
    "refused-login": "login",
    "malformed-response": "response",
    "login-skipped": "order",
    "tune-out-of-range": "tune",
    "unknown-vhost": "vhost",
    "out-of-order": "order",
    "channel-above-max": "channel-max",
    "handshake-again": "order",
}
# where each stage leaves the handshake (a case with no stage runs on an open connection)
STATES = {"start": "starting", "tune": "tuning", "narrow": "running", None: "running"}


def _plain(response: bytes) -> tuple[str, str] | None:
    """RFC 4616: [authzid] NUL authcid NUL passwd, authcid and passwd not empty."""
    parts = response.split(b"\0")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return None
    return parts[1].decode(), parts[2].decode()


def _handshake_judge(protocol: str, case: Case) -> str:
    """The first thing a case on the connection itself breaks, by the model server above: its
    header (none, or another version's), the login's mechanism, response or credentials, the
    order of the handshake, the tune-ok's limits, the virtual host, the channel-max; or
    ``accepted``."""
    codec = codec_for(protocol)
    stage = handshake.STAGES.get(case.operator or "")
    data = case.render(CHANNEL)
    if stage == "header":
        if data[:8] == codec.spec.protocol_header:
            return "accepted"
        return "header:other" if data[:8] in AMQP_HEADERS else "header:none"
    reader = codec.reader(check_asserts=False)
    reader.feed(codec.spec.protocol_header)
    frames = reader.feed(data)
    assert reader.pending == 0, f"{case!r} left {reader.pending} bytes unread"
    state = STATES[stage]
    channel_max = handshake.NARROW if stage == "narrow" else LIMITS["channel_max"]
    open_channels = {1}
    for frame in frames:
        assert isinstance(frame, MethodFrame), case
        name, args = frame.name, frame.arguments
        if state == "starting":
            if name != "connection.start-ok":
                return "order"
            if args["mechanism"] not in MECHANISMS:
                return "mechanism"
            login = _plain(bytes(args["response"]))
            if login is None:
                return "response"
            if USERS.get(login[0]) != login[1]:
                return "login"
            state = "tuning"
        elif state == "tuning":
            if name != "connection.tune-ok":
                return "order"
            if (
                not 0 < args["channel_max"] <= LIMITS["channel_max"]
                or not 4096 <= args["frame_max"] <= LIMITS["frame_max"]
            ):
                return "tune"
            channel_max, state = args["channel_max"], "opening"
        elif state == "opening":
            if name != "connection.open":
                return "order"
            if args["virtual_host"] not in VHOSTS:
                return "vhost"
            state = "running"
        elif frame.method.class_name == "connection":
            if name not in ("connection.close", "connection.close-ok"):
                return "order"
        elif name == "channel.open":
            if frame.channel > channel_max or len(open_channels) >= channel_max:
                return "channel-max"
            open_channels.add(frame.channel)
    return "accepted"


@pytest.mark.parametrize(("protocol", "name"), HANDSHAKE, ids=[f"{p}:{n}" for p, n in HANDSHAKE])
def test_every_connection_case_breaks_the_handshake_as_its_operator_says(
    protocol: str, name: str
) -> None:
    op = next(o for o in afs.operators(protocol) if o.name == name)
    spec = load(protocol)

    @SETTINGS
    @given(afs.malformed_cases([name], protocol=protocol, frame_max=FRAME_MAX, prefix="af-h-"))
    def check(case: Case) -> None:
        assert case.operator == name
        assert _handshake_judge(protocol, case) == BREAKS[name], case
        if op.codes:  # a negotiated close, with the operator's codes (those the spec has)
            assert case.expected.outcome == "connection-close", case
            assert {c.name for c in case.expected.codes} <= {*op.codes, "unexpected-frame"}
            assert all(spec.constant(c.name) is c for c in case.expected.codes)
        else:  # the socket closed, after the server's own header where the header was wrong
            assert case.expected.outcome == "socket-close" and not case.expected.codes, case
            assert ("protocol header" in case.expected.responses) == (
                handshake.STAGES[name] == "header"
            )
        # nothing in it is a credential of the target's: the names are made for the case
        assert b"\0guest\0guest" not in case.render(CHANNEL)

    check()
