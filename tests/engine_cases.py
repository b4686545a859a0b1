"""Random small workloads and streams for differential tests of the engine
against the reference evaluator.

Queries are drawn as CEQL text over one schema (event types A, B, C with an
int ``x``, partition attributes ``k`` and ``j`` and a primary time ``t``; D
lives in another stream, for FROM, and has no ``j``, so a key naming j puts
D's events in no partition), from the operators the engine runs: sequence
and contiguity, OR, Kleene (nested too), NOT, ABSENT, unary conditions on
event types and on AS variables, every kind of window, PARTITION BY on one
attribute or two (in one list or in two) and projection.
Options of :func:`queries` add, each off by default (so the default draws are
unchanged): an explicit selection strategy (ALL, ANY, NEXT, LAST, MAX,
STRICT), CONSUME BY, LIMIT, conjunction ``AND(p, q[, r])``, and cross-event
FILTERs (comparisons of single-event variables, aggregates over variables
that hold many events, AND/OR of those, with a unary conjunct) on the whole
pattern and on sub-patterns, Kleene bodies and OR branches included.
:func:`full_queries` turns every option on. Every drawn query is safe and
well-formed by construction: each sub-pattern is drawn with the variables it
binds on every path and how many events each can hold, as the checker
counts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from sharp_cer.events.batch import EventBatch
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    """CREATE STREAM S {
         EVENT A { x:int, k:int, j:int, t:primary_time },
         EVENT B { x:int, k:int, j:int, t:primary_time },
         EVENT C { x:int, k:int, j:int, t:primary_time }
       }
       CREATE STREAM U { EVENT D { x:int, k:int, t:primary_time } }"""
)
TYPES = ("A", "B", "C")
SECOND = 1_000_000_000
STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
COMPARE_OPS = ("<", "<=", ">", ">=", "=", "!=")
#: PARTITION BY clauses: one attribute, or both in one list or in two (the same key)
PARTITIONS = ("[k]", "[k]", "[j]", "[k], [j]", "[j, k]", "[k], [k, j]")
AGGREGATES = ("sum", "min", "max", "avg", "first", "last")  # and count(v), drawn apart


@dataclass
class _Names:
    """Fresh AS names for one query."""

    count: int = 0
    types: set[str] = field(default_factory=set)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"


@dataclass(frozen=True)
class _Options:
    """Which optional pattern features to draw."""

    conjunction: bool = False
    cross: bool = False
    negation: bool = False  # NOT, NOT IN and OR in unary and cross-event conditions


@dataclass(frozen=True)
class _Part:
    """A drawn sub-pattern: its text, the events per match each variable it
    mentions can hold (1, or 2 for many; as the checker counts them), the
    variables it binds on every path, and its output events per match
    (capped at 2)."""

    text: str
    counts: Mapping[str, int]
    bound: frozenset[str]
    size: int

    @staticmethod
    def event(text: str, *variables: str) -> _Part:
        return _Part(text, dict.fromkeys(variables, 1), frozenset(variables), 1)

    def single(self) -> list[str]:
        """Variables bound on every path to exactly one event."""
        return sorted(v for v in self.bound if self.counts[v] == 1)

    def many(self) -> list[str]:
        """Variables bound on every path that can hold many events."""
        return sorted(v for v in self.bound if self.counts[v] > 1)


def _concat(text: str, parts: list[_Part]) -> _Part:
    """A sequence or conjunction of parts: counts and sizes add up."""
    counts: dict[str, int] = {}
    for part in parts:
        for var, n in part.counts.items():
            counts[var] = min(2, counts.get(var, 0) + n)
    bound = frozenset().union(*(p.bound for p in parts))
    return _Part(text, counts, bound, min(2, sum(p.size for p in parts)))


def _either(text: str, left: _Part, right: _Part) -> _Part:
    counts = {v: max(left.counts.get(v, 0), right.counts.get(v, 0)) for v in {*left.counts, *right.counts}}
    return _Part(text, counts, left.bound & right.bound, max(left.size, right.size))


def _condition(draw: st.DrawFn, target: str, form: str, negation: bool = False) -> str:
    """A unary condition on ``target``'s x; with ``negation``, also NOT, NOT IN
    and OR (where SQL's nulls make a difference)."""
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="]))
    value = draw(st.integers(0, 3))
    kinds = ["compare", "set", "arith"] + (["not", "not_in", "or", "not_or"] if negation else [])
    kind = draw(st.sampled_from(kinds))
    inner = {
        "compare": f"X {op} {value}",
        "set": f"X IN {{{value}, {(value + 2) % 4}}}",
        "arith": f"X % 2 {op} {value % 2}",
        "not": f"NOT (X {op} {value})",
        "not_in": f"X NOT IN {{{value}, {(value + 2) % 4}}}",
        "or": f"(X {op} {value} OR X % 2 = {value % 2})",
        "not_or": f"NOT (X {op} {value} OR X = {(value + 1) % 4})",
    }[kind]
    if form == "bracket":
        return f"{target}[{inner.replace('X', 'x')}]"
    return inner.replace("X", f"{target}.x")


def _cross_atom(draw: st.DrawFn, single: list[str], many: list[str]) -> str:
    """One cross-event comparison: plain references name single-event
    variables, aggregates name many-event ones."""
    kinds = (["less", "sum", "equal"] if len(single) >= 2 else []) + (["aggregate", "count", "span"] if many else [])
    kind = draw(st.sampled_from(kinds))
    op = draw(st.sampled_from(COMPARE_OPS))
    if kind in ("less", "sum", "equal"):
        a, b = draw(st.lists(st.sampled_from(single), min_size=2, max_size=2, unique=True))
        if kind == "less":
            return f"{a}.x {op} {b}.x"
        if kind == "sum":
            return f"{a}.x + {b}.x {op} {draw(st.integers(0, 6))}"
        attribute = draw(st.sampled_from(["x", "x", "k"]))
        return f"{a}.{attribute} = {b}.{attribute}"
    var = draw(st.sampled_from(many))
    if kind == "count":
        return f"count({var}) {op} {draw(st.integers(1, 3))}"
    if kind == "span":
        return f"last({var}.t) - first({var}.t) {op} {draw(st.sampled_from([0, SECOND, 2 * SECOND]))}"
    function = draw(st.sampled_from(AGGREGATES))
    other = draw(st.sampled_from(["value", "aggregate", *(["single"] * bool(single))]))
    if other == "single":
        right = f"{draw(st.sampled_from(single))}.x"
    elif other == "aggregate":
        right = f"{draw(st.sampled_from(AGGREGATES))}({draw(st.sampled_from(many))}.x)"
    else:
        right = str(draw(st.integers(0, 6)))
    return f"{function}({var}.x) {op} {right}"


def _cross_condition(draw: st.DrawFn, part: _Part, negation: bool = False) -> str:
    """A cross-event condition the checker accepts on ``part``: one or two
    atoms (under AND or OR), sometimes with a unary conjunct on any variable
    the part binds."""
    single, many = part.single(), part.many()
    condition = _cross_atom(draw, single, many)
    joint = draw(st.sampled_from(["", "", "AND", "OR"]))
    if joint:
        condition = f"({condition}) {joint} ({_cross_atom(draw, single, many)})"
    if negation and draw(st.integers(0, 2)) == 0:
        condition = f"NOT ({condition})"
    if draw(st.integers(0, 2)) == 0:
        if joint == "OR":  # AND binds tighter: keep the unary conjunct outside the OR
            condition = f"({condition})"
        var = draw(st.sampled_from(sorted(part.bound)))
        unary = _condition(draw, var, draw(st.sampled_from(["bracket", "dot"])), negation)
        condition = f"{unary} AND {condition}" if draw(st.booleans()) else f"{condition} AND {unary}"
    return condition


def _maybe_cross(draw: st.DrawFn, part: _Part, percent: int, negation: bool = False) -> _Part:
    """``part`` under a cross-event FILTER, ``percent`` times in 100 (when
    the part binds two single-event variables or a many-event one)."""
    if percent <= 0 or not (len(part.single()) >= 2 or part.many()):
        return part
    if draw(st.integers(1, 100)) > percent:
        return part
    condition = _cross_condition(draw, part, negation)
    return _Part(f"({part.text}) FILTER {condition}", part.counts, part.bound, part.size)


@st.composite
def _single(draw: st.DrawFn, negation: bool = False) -> str:
    """A one-event formula for NOT(...) and ABSENT(...)."""
    kind = draw(st.sampled_from(TYPES))
    if draw(st.booleans()):
        return f"{kind} FILTER {_condition(draw, kind, 'bracket', negation)}"
    return kind


def _leaf(draw: st.DrawFn, names: _Names, negation: bool = False) -> _Part:
    kind = draw(st.sampled_from(TYPES))
    names.types.add(kind)
    choice = draw(st.sampled_from(["plain", "plain", "plain", "filter", "as", "as_filter"]))
    if choice == "plain":
        return _Part.event(kind, kind)
    if choice == "filter":
        condition = _condition(draw, kind, draw(st.sampled_from(["bracket", "dot"])), negation)
        return _Part.event(f"{kind} FILTER {condition}", kind)
    var = names.fresh()
    if choice == "as":
        return _Part.event(f"{kind} AS {var}", kind, var)
    condition = _condition(draw, var, draw(st.sampled_from(["bracket", "dot"])), negation)
    return _Part.event(f"{kind} AS {var} FILTER {condition}", kind, var)


def _pattern(draw: st.DrawFn, names: _Names, depth: int, options: _Options, cross: int = 0) -> _Part:
    """A pattern of at most ``depth`` nested operators; compound ones get a
    cross-event FILTER ``cross`` times in 100 (with ``options.cross``)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw, names, options.negation)
    inner = 25 if options.cross else 0
    ops = ["seq", "seq", "or", "kleene", "bind"] + (["and"] if options.conjunction else [])
    op = draw(st.sampled_from(ops))
    if op == "seq":
        parts = [_pattern(draw, names, depth - 1, options, inner) for _ in range(draw(st.integers(2, 3)))]
        text = f"({parts[0].text})"
        for part in parts[1:]:
            link = draw(st.sampled_from([";", ";", ":"]))
            if link == ";" and draw(st.integers(0, 3)) == 0:
                text += f" ; ABSENT({draw(_single(options.negation))})"
            elif link == ";" and draw(st.integers(0, 4)) == 0:
                text += f" ; NOT({draw(_single(options.negation))})"
            text += f" {link} ({part.text})"
        if draw(st.integers(0, 4)) == 0:
            text = f"NOT({draw(_single(options.negation))}) ; {text}"
        result = _concat(text, parts)
    elif op == "and":
        parts = [_pattern(draw, names, depth - 1, options, inner) for _ in range(draw(st.sampled_from([2, 2, 3])))]
        result = _concat("AND(" + ", ".join(f"({p.text})" for p in parts) + ")", parts)
    elif op == "or":
        left = _pattern(draw, names, depth - 1, options, 2 * inner)
        right = _pattern(draw, names, depth - 1, options, 2 * inner)
        result = _either(f"({left.text}) OR ({right.text})", left, right)
    elif op == "kleene":
        body = _pattern(draw, names, depth - 1, options, 2 * inner)
        text = f"({body.text}){draw(st.sampled_from(['+', ':+']))}"
        result = _Part(text, {v: 2 for v in body.counts}, body.bound, 2)
    else:
        var = names.fresh()
        body = _pattern(draw, names, depth - 1, options, inner)
        text = f"({body.text}) AS {var}"
        if draw(st.booleans()):
            text += f" FILTER {_condition(draw, var, 'bracket', options.negation)}"
        counts = {**body.counts, var: max(body.counts.get(var, 0), body.size)}
        result = _Part(text, counts, body.bound | {var}, body.size)
    return _maybe_cross(draw, result, cross, options.negation)


@st.composite
def queries(
    draw: st.DrawFn,
    depth: int = 3,
    *,
    strategies: bool = False,
    consume: bool = False,
    limit: bool = False,
    conjunction: bool = False,
    cross: bool = False,
    negation: bool = False,
) -> str:
    """One query's text; the keyword options add features (see the module
    docstring). Keep streams short (``streams(max_size=14)`` or less): the
    reference then takes milliseconds per query even with every option on."""
    names = _Names()
    part = _pattern(draw, names, depth, _Options(conjunction=conjunction, cross=cross, negation=negation))
    pattern = _maybe_cross(draw, part, 60, negation).text if cross else part.text
    selection = draw(st.sampled_from(["*", "*", "NONE", "project"]))
    if selection == "project":
        candidates = sorted(names.types | {f"v{i}" for i in range(1, names.count + 1)})
        chosen = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
        selection = ", ".join(chosen)
    if strategies:
        selection = f"{draw(st.sampled_from(STRATEGIES))} {selection}"
    source = draw(st.sampled_from(["", "", " FROM S", " FROM S, U"]))
    text = f"SELECT {selection}{source} WHERE {pattern}"
    partitioned = draw(st.integers(0, 2)) == 0
    if partitioned:
        text += f" PARTITION BY {draw(st.sampled_from(PARTITIONS))}"
    window = draw(st.sampled_from(["events", "events", "time", "attribute", "none"]))
    if window == "events":
        text += f" WITHIN {draw(st.integers(0, 10))} EVENTS"
    elif window == "time":
        text += f" WITHIN {draw(st.integers(0, 6))} SECONDS"
    elif window == "attribute":
        # t never decreases; x does, so [x] needs the engine's lateness (x spans 0..3)
        attribute = draw(st.sampled_from(["t", "x"]))
        size = draw(st.sampled_from([1, SECOND, 2 * SECOND + 1])) if attribute == "t" else draw(st.integers(1, 3))
        text += f" WITHIN {size} [{attribute}]"
    if consume and draw(st.booleans()):
        text += f" CONSUME BY {draw(st.sampled_from(['ANY', 'NONE', *(['PARTITION'] * partitioned)]))}"
    if limit and draw(st.booleans()):
        text += f" LIMIT {draw(st.integers(1, 3))}"
    return text


def full_queries(depth: int = 3, *, negation: bool = False) -> st.SearchStrategy[str]:
    """Queries with every option of :func:`queries` on (``negation`` apart,
    off by default so the draws stay as they were)."""
    return queries(depth, strategies=True, consume=True, limit=True, conjunction=True, cross=True, negation=negation)


@st.composite
def streams(draw: st.DrawFn, max_size: int = 10, nulls: bool = False) -> list[dict[str, Any]]:
    """Events with non-decreasing t (seconds apart, sometimes equal); with
    ``nulls``, x, k and j are sometimes None (a null, loaded as SQL's null)."""
    n = draw(st.integers(0, max_size) | st.just(max_size))
    t = 0
    rows = []

    def value(high: int, chance: int) -> int | None:
        if nulls and draw(st.integers(0, chance - 1)) == 0:
            return None
        return draw(st.integers(0, high))

    for _ in range(n):
        t += draw(st.sampled_from([0, SECOND // 2, SECOND, 2 * SECOND]))
        kind = draw(st.sampled_from([*TYPES, *TYPES, *TYPES, "D"]))
        row = {"type": kind, "x": value(3, 3), "k": value(1, 8), "t": t}
        if kind != "D":
            row["j"] = value(1, 8)
        rows.append(row)
    return rows


def to_batch(rows: list[dict[str, Any]]) -> EventBatch:
    """Load rows through the pandas loader, as a user would (a row of A, B
    or C without ``j`` gets j = 0; a None is a null)."""
    import pandas as pd

    if any(None in (r["x"], r["k"], r.get("j", 0)) for r in rows):
        rows = [r if r["type"] == "D" else {"j": 0, **r} for r in rows]
        frame = pd.DataFrame(rows, columns=["type", "x", "k", "j", "t"])
        frame = frame.astype({"x": "Int64", "k": "Int64", "j": "Int64", "t": np.int64})
    else:
        frame = pd.DataFrame(rows, columns=["type", "x", "k", "j", "t"])
        frame["j"] = frame["j"].where(frame["type"] == "D", frame["j"].fillna(0))
        frame = frame.astype({"x": np.int64, "k": np.int64, "j": "Int64", "t": np.int64})
    batch, report = load_pandas(frame, SCHEMA)
    assert report.accepted == len(rows), report.summary()
    return batch


@st.composite
def shared_workloads(draw: st.DrawFn, min_size: int = 2, max_size: int = 20) -> list[str]:
    """Workloads whose queries start alike, as tenants' copies of a few
    templates do: one to three prefixes (each a sequence of one to three
    drawn sub-patterns), each query one of them followed by its own
    sub-pattern, sometimes with a cross-event FILTER, mostly over the same
    window kind and partitioning so that they land in one group, sometimes a
    strategy that must keep a query alone."""
    prefixes = []
    for _ in range(draw(st.integers(1, 3))):
        names = _Names()
        parts = [_pattern(draw, names, 2, _Options()) for _ in range(draw(st.integers(1, 3)))]
        prefixes.append((" ; ".join(f"({p.text})" for p in parts), names.count, _concat("", parts)))
    texts = []
    for _ in range(draw(st.integers(min_size, max_size))):
        prefix, used, bound = draw(st.sampled_from(prefixes))
        names = _Names(count=used)
        tail = _pattern(draw, names, 2, _Options(cross=True), cross=20)
        link = draw(st.sampled_from([";", ";", ":"]))
        whole = _maybe_cross(draw, _concat(f"{prefix} {link} ({tail.text})", [bound, tail]), 15)
        strategy = draw(st.sampled_from(["", "", "", "", "ALL ", "ANY ", "NEXT ", "STRICT "]))
        text = f"SELECT {strategy}* WHERE {whole.text}"
        if draw(st.integers(0, 4)) == 0:
            text += f" PARTITION BY {draw(st.sampled_from(PARTITIONS))}"
        if draw(st.integers(0, 4)) == 0:
            text += f" WITHIN {draw(st.integers(0, 6))} SECONDS"
        else:
            text += f" WITHIN {draw(st.integers(0, 10))} EVENTS"
        texts.append(text)
    return texts


def _absent_condition(draw: st.DrawFn, kind: str, part: _Part) -> str:
    """F's conditions inside a trailing ABSENT: on F alone, or reading p's
    variables (a single event's attribute, or an aggregate over many)."""
    # inside ABSENT(F[...]) the name of F's type is F's event: read p's other variables
    single = [v for v in part.single() if v != kind]
    many = [v for v in part.many() if v != kind]
    choices = ["none", "unary"] + (["single"] * 2 if single else []) + (["many"] if many else [])
    choice = draw(st.sampled_from(choices))
    if choice == "none":
        return kind
    if choice == "unary":
        return f"{kind} FILTER {_condition(draw, kind, 'bracket')}"
    op = draw(st.sampled_from(COMPARE_OPS))
    if choice == "single":
        var = draw(st.sampled_from(single))
        attribute = draw(st.sampled_from(["x", "x", "k"]))
        form = draw(st.sampled_from(["bracket", "dot"]))
        if form == "bracket":
            return f"{kind}[{attribute} {op} {var}.{attribute}]"
        return f"{kind} FILTER {kind}.{attribute} {op} {var}.{attribute}"
    var = draw(st.sampled_from(many))
    return f"{kind}[x {op} {draw(st.sampled_from(AGGREGATES))}({var}.x)]"


@st.composite
def trailing_queries(draw: st.DrawFn, depth: int = 2, *, full: bool = False) -> str:
    """``SELECT ... WHERE p ; ABSENT(F) ... WITHIN d`` (issue 35): p drawn as
    :func:`queries` draws patterns, F an event type with conditions that may
    read p's variables, d in seconds or milliseconds; with ``full``, also
    strategies, CONSUME BY, LIMIT and cross-event FILTERs in p."""
    names = _Names()
    options = _Options(conjunction=full, cross=full)
    part = _pattern(draw, names, depth, options)
    if full:
        part = _maybe_cross(draw, part, 40)
    absent = _absent_condition(draw, draw(st.sampled_from(TYPES)), part)
    pattern = f"({part.text}) ; ABSENT({absent})"
    selection = draw(st.sampled_from(["*", "*", "NONE", "project"]))
    if selection == "project":
        candidates = sorted(names.types | {f"v{i}" for i in range(1, names.count + 1)})
        selection = ", ".join(draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True)))
    if full:
        selection = f"{draw(st.sampled_from(STRATEGIES))} {selection}"
    source = draw(st.sampled_from(["", "", " FROM S", " FROM S, U"]))
    text = f"SELECT {selection}{source} WHERE {pattern}"
    partitioned = draw(st.booleans())
    if partitioned:
        text += f" PARTITION BY {draw(st.sampled_from(PARTITIONS))}"
    if draw(st.booleans()):
        text += f" WITHIN {draw(st.integers(0, 5))} SECONDS"
    else:
        text += f" WITHIN {draw(st.sampled_from([1, 500, 1500, 2000, 3500]))} MILLISECONDS"
    if full and draw(st.booleans()):
        text += f" CONSUME BY {draw(st.sampled_from(['ANY', 'NONE', *(['PARTITION'] * partitioned)]))}"
    if full and draw(st.booleans()):
        text += f" LIMIT {draw(st.integers(1, 3))}"
    return text


@st.composite
def late_streams(draw: st.DrawFn, max_size: int = 12) -> list[dict[str, Any]]:
    """Events whose t sometimes goes back (by up to 2 s): with an allowed
    lateness some are accepted out of order and some are dead-lettered."""
    rows = draw(streams(max_size))
    for row in rows:
        row["t"] = max(0, row["t"] - draw(st.sampled_from([0, 0, 0, SECOND // 2, SECOND, 2 * SECOND])))
    return rows


def to_late_batch(rows: list[dict[str, Any]], lateness: int) -> EventBatch:
    """Rows loaded with an allowed lateness: late ones are dead-lettered."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["type", "x", "k", "j", "t"])
    frame["j"] = frame["j"].where(frame["type"] == "D", frame["j"].fillna(0))
    frame = frame.astype({"x": np.int64, "k": np.int64, "j": "Int64", "t": np.int64})
    batch, report = load_pandas(frame, SCHEMA, allowed_lateness=lateness)
    assert report.accepted + len(report.dead_letters) == len(rows)
    return batch
