"""Matches: what every evaluator (the reference and the engine) outputs.

>>> m = Match("q", 1, 3, (2, 3), {"b": (2,)})
>>> m.to_json()
'{"query": "q", "start": 1, "end": 3, "events": [2, 3], "vars": {"b": [2]}}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Match:
    """One complex event of one query.

    ``start`` and ``end`` are the stream positions that open and close the
    interval; ``events`` the output positions after projection (sorted);
    ``vars`` the positions each variable holds (sorted tuples).
    """

    query: str
    start: int
    end: int
    events: tuple[int, ...]
    vars: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False)

    def key(self) -> tuple[str, int, int, tuple[int, ...], tuple[tuple[str, tuple[int, ...]], ...]]:
        """Everything that identifies the match, variables included, hashable."""
        return (self.query, self.start, self.end, self.events, tuple(sorted(self.vars.items())))

    def to_json(self) -> str:
        """The ``sharp-cer match`` output line."""
        return json.dumps(
            {
                "query": self.query,
                "start": self.start,
                "end": self.end,
                "events": list(self.events),
                "vars": {k: list(v) for k, v in sorted(self.vars.items())},
            }
        )
