"""Client items (``--amqp-client NAME``): amqpfuzz plays a hostile broker to a client library.

An item per server-side operator of the protocol's family, and one of valid scripts, per client
(``amqpfuzz::client::pika::frame-end``): each serves :data:`CASES` scripts, drawn from the
item's seed, to the client's long-lived shim (one per client and pytest process), judged by the
client oracles and recorded like a client campaign's cases. A failure fails the item with its
signature and replay command; a failure the client's profile documents makes it ``xfail``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from ..clients.campaign import serving_of
from ..clients.judge import Judged
from ..clients.targets import client_targets
from ..records import replay_command
from .items import AmqpItem, ItemFailure, group
from .session import AmqpSession

__all__ = ["CASES", "ClientFailed", "ClientItem", "client_items"]

CASES = 4  # scripts per item


class ClientFailed(ItemFailure):
    def __init__(self, client: str, judged: Judged, reproducer: str) -> None:
        super().__init__(judged.signature)
        self.client, self.judged, self.reproducer = client, judged, reproducer

    def report(self) -> str:
        return "\n".join(
            (
                f"{self.client} failed a server script",
                f"oracle:    {self.judged.oracle}: {self.judged.message}",
                f"signature: {self.judged.signature}",
                f"replay:    {replay_command(self.reproducer, '--client', self.client)}",
            )
        )


class ClientItem(AmqpItem):
    def __init__(self, *, client: str, operator: str | None, state: AmqpSession, **kw: Any) -> None:
        super().__init__(**kw)
        self.client, self.operator, self.state = client, operator, state

    def runtest(self) -> None:
        lane = self.state.lane(self.client)
        chosen = (self.operator,) if self.operator else None
        # the scripts read as the item reads them: its reproducers say so, and replay as printed
        settings = replace(
            self.state.client_settings, operators=chosen, valid_share=0.0 if chosen else 1.0
        )
        serving = serving_of(settings.protocol)
        size, build = serving.scripts(settings.protocol, settings.operators, settings.valid_share)
        rnd = random.Random(self.state.options.seed_for(self.nodeid))
        known: list[str] = []
        flaky: dict[str, str] = {}  # signature -> its replays' rate
        strict = self.state.options.flaky_fails
        for _ in range(CASES):
            judged, verdict = lane.serve(build(rnd.randbytes(size)), settings)
            if verdict.verdict == "fail" or (verdict.verdict == "flaky" and strict):
                reproducer = lane.outcome.reproducers.get(judged.signature, "")
                self.properties(
                    verdict=verdict.verdict, signature=judged.signature, reproducer=reproducer
                )
                raise ClientFailed(self.client, judged, str(reproducer))
            if verdict.verdict == "flaky":
                confirmation = lane.outcome.confirmations.get(judged.signature, {})
                flaky.setdefault(judged.signature, str(confirmation.get("rate", "?")))
            if verdict.verdict == "xfail":
                known.append(verdict.reason)
        said = "xfail" if known else "flaky" if flaky else "pass"
        self.properties(verdict=said, observed=f"{CASES} scripts")
        if flaky and not known:
            self.properties(flaky="; ".join(f"{s} (reproduced {r})" for s, r in flaky.items()))
        if known:
            pytest.xfail(known[0])

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"client {self.client} {self.operator or 'valid'}"


def client_items(parent: pytest.Collector, state: AmqpSession) -> list[pytest.Item]:
    protocol = state.options.protocol
    names = serving_of(protocol).operators(protocol)
    items: list[pytest.Item] = []
    for client in client_targets(state.options.clients, (), protocol):
        under = group(parent, client.label)  # (two versions of one library: two groups)
        for operator in (None, *names):
            item = ClientItem.from_parent(
                under, name=operator or "valid", client=client.label, operator=operator, state=state
            )
            item.add_marker("amqp_client")
            items.append(item)
    return items
