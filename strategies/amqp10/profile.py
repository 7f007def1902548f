"""What a 1.0 peer takes beyond or short of the specification in valid traffic, as data: its
profile's ``[traffic]`` table (:class:`Traffic`), which a walk (:mod:`.traffic`) draws from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Traffic"]


@dataclass(frozen=True)
class Traffic:
    """What a peer takes beyond or short of the specification (its profile's ``traffic``
    table): ``fields`` by ``performative.field``, the values drawn for it (a restricted
    type's choice names, an outcome's name); ``addresses``, the forms of address it reads
    (``@node``: a node the walk names, whose messages stay until taken; ``@key``: a name
    messages are routed by, which reach only the receivers attached before they were sent)."""

    fields: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    addresses: tuple[str, ...] = ("@node",)

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> Traffic:
        data = data or {}
        return cls(
            {str(k): tuple(v) for k, v in data.get("fields", {}).items()},
            tuple(str(a) for a in data.get("addresses", ())) or ("@node",),
        )

    def allowed(self, key: str, options: Sequence[str]) -> tuple[str, ...]:
        """``options`` that the profile lets traffic draw for ``key`` (all of them, when it
        says nothing of it)."""
        wanted = self.fields.get(key)
        if wanted is None:
            return tuple(options)
        return tuple(o for o in options if o in {str(w).lower() for w in wanted})
