"""Matches: what every evaluator (the reference and the engine) outputs.

>>> m = Match("q", 1, 3, (2, 3), {"b": (2,)}, tenant="acme")
>>> m.to_json()
'{"query": "q", "tenant": "acme", "start": 1, "end": 3, "events": [2, 3], "vars": {"b": [2]}}'
>>> m == Match("q", 1, 3, (2, 3))  # the tenant follows from the query; variables are labels
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True, order=True)
class Match:
    """One complex event of one query.

    ``start`` and ``end`` are the stream positions that open and close the
    interval; ``events`` the output positions after projection (sorted);
    ``vars`` the positions each variable holds (sorted tuples); ``tenant``
    the query's tenant when it came from a workload (None otherwise).
    A trailing absence's alert (``p ; ABSENT(F) WITHIN d``) ends at its
    ``deadline``, a primary time (nanoseconds), when event time passed it
    with no F; ``end`` keeps the position of p's last event. Other matches
    have no deadline (None).

    >>> Match("q", 0, 0, (0,), {"h": (0,)}, deadline=30_000_000_000).to_json()
    '{"query": "q", "tenant": null, "start": 0, "end": 0, "events": [0], "vars": {"h": [0]}, "deadline": 30000000000}'
    """

    query: str
    start: int
    end: int
    events: tuple[int, ...]
    vars: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False)
    tenant: str | None = field(default=None, compare=False)
    deadline: int | None = None
    #: the workload version the match was produced under (``Detector.update``;
    #: None: the first, in a detector never updated)
    version: int | None = field(default=None, compare=False)

    def key(self) -> tuple[str, int, int, tuple[int, ...], tuple[tuple[str, tuple[int, ...]], ...]]:
        """Everything that identifies the match, variables included, hashable."""
        return (self.query, self.start, self.end, self.events, tuple(sorted(self.vars.items())))

    def to_json(self) -> str:
        """The ``sharp-cer match`` output line: ``json.dumps`` of the match as
        a dict, variables sorted, written out directly (the output of a long
        run is mostly these lines). Positions are ints, whose ``str`` of a
        list is JSON's array; the names' quoted pieces are cached."""
        return self.line_of(self.tenant)

    def line_of(self, tenant: str | None) -> str:
        """``to_json`` of this match with ``tenant`` as its tenant: what
        ``dataclasses.replace(self, tenant=tenant).to_json()`` writes, without
        making that copy (the engine's lines name the workload's tenant).

        >>> Match("q", 1, 3, (2, 3)).line_of("acme") == Match("q", 1, 3, (2, 3), tenant="acme").to_json()
        True
        """
        held = self.vars
        pairs = ", ".join([key + str(list(held[name])) for name, key in _keys(tuple(held))])
        tail = "}" if self.deadline is None else f', "deadline": {self.deadline}}}'
        if self.version is not None:
            tail = f'{tail[:-1]}, "version": {self.version}}}'
        return (
            f"{_head(self.query, tenant)}{self.start}, "
            f'"end": {self.end}, "events": {list(self.events)}, "vars": {{{pairs}}}{tail}'
        )


def line_template(query: str, tenant: str | None, events: int, held: Mapping[str, Sequence[int]]) -> str:
    """A ``str.format`` template of the output line of matches whose
    ``events`` output events are the fields 2, 3, ... (start and end: 0 and
    1) and whose variables hold the fields ``held`` names (by event index):
    one line per match is then one ``format`` call.

    >>> template = line_template("q", "acme", 2, {"b": [0]})
    >>> template.format(1, 3, 2, 3) == Match("q", 1, 3, (2, 3), {"b": (2,)}, "acme").to_json()
    True
    """

    def fields(slots: Sequence[int]) -> str:
        return "[" + ", ".join(f"{{{k + 2}}}" for k in slots) + "]"

    def literal(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}")

    pairs = ", ".join(literal(key) + fields(held[name]) for name, key in _keys(tuple(held)))
    head = literal(_head(query, tenant))
    return head + '{0}, "end": {1}, "events": ' + fields(range(events)) + ', "vars": {{' + pairs + "}}}}"


def line_head(query: str, tenant: str | None) -> str:
    """A match's output line up to its start (the same for every match of a
    query), as ``to_json`` writes it; JSON's escapes keep it ASCII.

    >>> line_head("q", None) + "1" == Match("q", 1, 2, (2,), {}).to_json()[: len(line_head("q", None)) + 1]
    True
    """
    return _head(query, tenant)


def line_key(name: str) -> str:
    """A variable's key in the ``vars`` of an output line, with its colon.

    >>> line_key("x")
    '"x": '
    """
    return f"{_quoted(name)}: "


#: names (queries, tenants, variables) recur in every line: quoted once each
_quoted = lru_cache(maxsize=4096)(json.dumps)


@lru_cache(maxsize=4096)
def _head(query: str, tenant: str | None) -> str:
    """A line up to its start: the same for every match of a query."""
    return f'{{"query": {_quoted(query)}, "tenant": {_quoted(tenant)}, "start": '


@lru_cache(maxsize=4096)
def _keys(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Variable names in output order, each with its quoted key: a query's
    matches have few sets of variables."""
    return tuple([(name, f"{_quoted(name)}: ") for name in sorted(names)])
