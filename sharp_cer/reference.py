"""The reference evaluator: the formal semantics of CEQL, by brute force.

It is the oracle of the test suite: slow, exhaustive and written straight from
the definitions below, never used on the hot path. It imports only the
language and events layers.

The rules (the language's semantics, after CORE §2–3 and CEL §2–5):

1. **Valuations.** A pattern denotes a set of valuations ``(interval, data,
   vars)``: an interval ``[start, end]`` of stream positions, the output
   positions ``data`` and, per variable, the set of positions it holds. An
   event type ``R`` matches one event of type R and binds the variable R to it.
   ``p AS x`` binds x to all output positions of p. Variables are sets:
   ``p ; q`` and ``AND(p, q)`` unite them.
2. **Sequence.** ``p ; q`` needs p's interval to end before q's begins;
   ``p : q`` needs q's interval to begin at the event right after p's end
   (in the partition's substream).
3. **Iteration.** ``p+`` is ``p`` or ``p ; p+`` (``p:+`` with ``:``); each
   iteration binds its own variables and filters inside p apply per
   iteration; outside, a variable holds the events of all iterations.
4. **Disjunction** is union; **conjunction** ``AND(p, q)`` takes one valuation
   of each with disjoint output positions, in any interleaving; its interval
   spans both.
5. **NOT(F)** is one event that does not satisfy F; it is not an output event
   but it opens (or closes) the interval: ``NOT(SELL); BUY; SELL`` over SELL,
   BUY, BUY, SELL gives one match, events {2, 3}, interval [1, 3].
   **Absence** ``p ; ABSENT(F) ; q``: no event satisfying F strictly between
   the end of p and the start of q (in the substream).
6. **Conditions.** ``x[P]``: every event x holds satisfies P (bare attributes
   name that event). A FILTER conjunct that names one variable and no
   aggregate likewise holds for every event of that variable. Otherwise a
   plain ``x.a`` takes the value of x's single event, and aggregates run over
   x's events in stream order (``sum`` of none is 0; ``avg``, ``min``,
   ``max``, ``first``, ``last`` of none are out of domain). Math out of its
   domain (``asin(2)``, ``sqrt(-1)``, division or modulo by zero) makes the
   whole conjunct false, and is counted. ``LIKE`` searches the regex
   anywhere in the string unless anchored. ``IN RANGE`` and ``IN {a..b}``
   include both bounds: ``x IN RANGE(lo, hi)`` is ``lo <= x AND x <= hi``,
   so ``hi`` is read (and may be out of domain) unless x is below ``lo``.
   **Nulls** (an attribute that is there and null, see
   ``sharp_cer.events.loaders``) follow SQL's three-valued logic: arithmetic,
   math and LIKE of a null are null (null ``/ 0`` too, which is then no
   domain error); a comparison, ``IN``, ``NOT IN`` or ``IN RANGE`` reading a
   null is *unknown*; NOT unknown is unknown; AND is false if a side is
   false, else unknown if a side is; OR is true if a side is true, else
   unknown if a side is; ``x[P]`` is false if some event of x makes P false,
   else unknown if some makes it unknown. A condition holds only when it is
   true: unknown is not enough, so ``A[NOT (x > 3)]`` and ``A[x <= 3]`` hold on
   the same events, and neither on an A whose x is null (``NOT(A[x > 3])``, an
   event that does not satisfy ``A[x > 3]``, is such an A). AND's right side
   is read (and may be out of domain) unless the left is false, OR's unless
   it is true. Aggregates skip nulls: ``sum``, ``avg``, ``min`` and ``max``
   run over x's non-null values (so over only nulls they are as over none);
   ``count(x)`` counts x's events; ``first`` and ``last`` are the value of
   x's first and last event, null if it is. An attribute window ``n [attr]``
   needs the value at both ends: a null there is outside the window.
7. **Clause order.** PARTITION BY, then WHERE with every FILTER, then WITHIN,
   then the strategy, then projection. PARTITION BY splits the stream into
   substreams, as CORE's paper defines them (§3): the key is every attribute
   the clause names, whatever the brackets (``[a], [b]`` and ``[a, b]`` are
   one key of a and b); a substream is the events with equal values of all of
   them, and an event that lacks one, or holds null in one, belongs to no
   substream.
8. **WITHIN.** ``n EVENTS``: end position minus start position at most n
   (positions of the whole input); ``n [attr]``: attr of the end event minus
   attr of the start event below n; time units: primary time of the end event
   minus that of the start event at most the duration, in nanoseconds.
9. **Strategies** choose among matches with the same end position. ALL and
   ANY keep all; STRICT keeps those whose interval holds only output events
   of the substream; NEXT keeps the one whose smallest differing output
   position (against every other) is its own; LAST the one whose largest
   differing position is its own; MAX those whose output positions no other
   match strictly contains.
10. **Sets.** Two valuations with the same interval and output positions are
    one match; it reports the variables of the smallest such valuation
    (variables sorted by name, positions in order).
11. **CONSUME BY.** When an event completes a valuation of the pattern with
    every condition (whatever the window then says), ANY forgets the query's
    partial matches in every partition, PARTITION in that partition only:
    later matches start after that event. NONE keeps them.
12. **LIMIT n**: at most n matches per query and triggering (end) event: the
    ones with the latest start, ties broken by the latest output positions.
13. **Projection.** ``*``: all output positions; ``NONE``: none;
    ``x, y[attrs]``: the positions those variables hold. ``vars`` lists the
    selected variables (all variables holding events for ``*`` and NONE).
14. **Trailing absence** ``p ; ABSENT(F) WITHIN d`` (a time window; the
    absence ends the whole pattern, under any FILTERs around it). Take the
    matches of the query with pattern p, selecting ``*`` (rules 1-12: the
    window, strategy, LIMIT and CONSUME BY act on p's matches). A match m of
    p, with first event at time t0, has the *deadline* ``D = t0 + d``. Event
    time is the largest primary time of the events read so far, minus the
    allowed lateness: every input event with a primary time moves it,
    whatever its type, partition or stream. m is an alert when (a) no event
    of m's substream after m's end, with time at most D, satisfies F (its
    conditions read F's event under its type's name and m's variables, which
    may name p's events: ``ABSENT(LOGOUT[user = l.user])``), and (b) event
    time passes D (rises above it) at some event of the input: the alert is
    output there, with m's start, end and events projected (rule 13, then
    rule 10) and its ``deadline`` D. A match for which (a) holds and (b) not
    yet is *pending*: at the end of a finite input it is counted
    (``ReferenceResult.pending``), not output. An event accepted after event
    time passed D cannot be at most D (it would be late), so (a) is decided
    by then.
15. **Rules that change** (``Detector.update``). A query runs over an
    interval of the stream: added at position ``p`` (0: from the start),
    it has the matches of rules 1-14 over the events at positions ``p``
    and after, positions kept (no match holds an earlier event, as if it
    had run alone from p); removed at position ``r``, it has those of them
    that end before ``r`` (nothing ending at or after r). A query replaced
    at p (same name, new text) is the old one removed at p and the new one
    added at p. A query no change touches runs over [0, end of stream]: its
    matches are those of an uninterrupted run. Tenants, weights and
    bounds may change anywhere; they change no match. ``evaluate_interval``
    evaluates one interval.

>>> from sharp_cer.language import Schema, parse_and_check
>>> schema = Schema.parse("CREATE STREAM S { EVENT BUY { p:int }, EVENT SELL { p:int } }")
>>> q = parse_and_check("SELECT * WHERE NOT(SELL) ; BUY ; SELL WITHIN 5 EVENTS", schema)
>>> stream = [{"type": t, "p": 0} for t in ["SELL", "BUY", "BUY", "SELL"]]
>>> [(m.start, m.end, m.events) for m in evaluate([("q", q)], stream).matches]
[(1, 3, (2, 3))]
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .events.batch import EventBatch
from .events.match import Match
from .language import ast
from .language.checker import AGGREGATES, CheckedQuery, conjuncts, has_aggregate, referenced_variables
from .language.trailing import absent_event, split

Event = Mapping[str, Any]
# A valuation over a substream: local indices (start, end, output indices,
# sorted ((variable, indices), ...)).
_Vars = tuple[tuple[str, frozenset[int]], ...]
_Valuation = tuple[int, int, frozenset[int], _Vars]


class _OutOfDomain(Exception):
    """Math outside its domain: the enclosing conjunct is false."""


@dataclass
class ReferenceResult:
    """Matches of every query in order, and how many conditions hit math out
    of its domain."""

    matches: list[Match]
    domain_errors: int = 0
    per_query: dict[str, list[Match]] = field(default_factory=dict)
    #: per query with a trailing absence: alerts whose deadline event time has not passed (rule 14)
    pending: dict[str, int] = field(default_factory=dict)


def evaluate(
    queries: Sequence[tuple[str, CheckedQuery]],
    events: EventBatch | Iterable[Event],
    *,
    allowed_lateness: int = 0,
) -> ReferenceResult:
    """Evaluate named checked queries over a loaded batch, or over dicts with
    ``type``, the attributes, and optionally ``position`` (default: the index).
    ``allowed_lateness`` (nanoseconds) holds event time back (rule 14)."""
    if isinstance(events, EventBatch):
        rows = []
        for i in range(len(events)):
            row = events.row(i)
            rows.append({"type": row["type"], "position": row["position"], **row["attributes"]})
    else:
        rows = [dict(e) for e in events]
        for i, row in enumerate(rows):
            row.setdefault("position", i)
    result = ReferenceResult([])
    for name, checked in queries:
        found = _Query(name, checked, rows, result, allowed_lateness).run()
        result.per_query[name] = found
        result.matches.extend(found)
    return result


def evaluate_interval(
    name: str,
    checked: CheckedQuery,
    events: EventBatch | Iterable[Event],
    first: int,
    removed: int | None = None,
    *,
    allowed_lateness: int = 0,
) -> list[Match]:
    """The matches of one query added at position ``first`` and removed at
    position ``removed`` (None: never), by rule 15.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> schema = Schema.parse("CREATE STREAM S { EVENT A { p:int }, EVENT B { p:int } }")
    >>> q = parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", schema)
    >>> stream = [{"type": t, "p": 0} for t in ["A", "A", "B", "A", "B"]]
    >>> [(m.start, m.end) for m in evaluate_interval("q", q, stream, 1, 4)]
    [(1, 2)]
    """
    if isinstance(events, EventBatch):
        later: EventBatch | list[dict[str, Any]] = events.take(events.positions >= first)
    else:
        listed = [dict(e) for e in events]
        for i, row in enumerate(listed):
            row.setdefault("position", i)
        later = [row for row in listed if row["position"] >= first]
    found = evaluate([(name, checked)], later, allowed_lateness=allowed_lateness).matches
    return [m for m in found if removed is None or m.end < removed]


def _vars_union(a: _Vars, b: _Vars) -> _Vars:
    merged: dict[str, frozenset[int]] = dict(a)
    for k, v in b:
        merged[k] = merged.get(k, frozenset()) | v
    return tuple(sorted(merged.items()))


class _Query:
    def __init__(
        self, name: str, checked: CheckedQuery, rows: list[dict[str, Any]], result: ReferenceResult, lateness: int = 0
    ) -> None:
        self.name = name
        self.checked = checked
        self.query = checked.query
        self.result = result
        self.lateness = lateness
        self.all_rows = rows
        prefix, self.absence = split(self.query.pattern)
        if self.absence is not None:
            # rule 14: p's matches, selecting *; the absence and the projection come after
            self.query = dataclasses.replace(self.query, pattern=prefix, selection=ast.SelectAll())
        scope = self.query.streams or tuple(checked.schema.streams)
        visible = {e.name for e in checked.schema.event_types(scope)}
        self.rows = [r for r in rows if r["type"] in visible]
        self.time_attribute = {e.name: e.primary_time or "" for e in checked.schema.event_types()}
        self.sub: list[dict[str, Any]] = []  # the substream being evaluated

    # ------------------------------------------------------------ driver
    def run(self) -> list[Match]:
        q = self.query
        substreams: dict[Any, list[dict[str, Any]]] = {}
        for row in self.rows:
            key = self._partition_key(row)
            if key is not None:
                substreams.setdefault(key, []).append(row)
        candidates: dict[int, list[tuple[Any, _Valuation]]] = {}
        for key, sub in substreams.items():
            self.sub = sub
            for v in self._eval(q.pattern):
                candidates.setdefault(sub[v[1]]["position"], []).append((key, v))
        barriers: list[tuple[int, Any]] = []  # (position, partition) of counted completions
        out: list[Match] = []
        for end in sorted(candidates):
            alive = []
            for key, v in candidates[end]:
                sub = substreams[key]
                start = sub[v[0]]["position"]
                if any(start <= j and (q.consume == "ANY" or k == key) for j, k in barriers):
                    continue  # its partial match was consumed before it completed
                alive.append((key, v, sub))
            if q.consume in ("ANY", "PARTITION"):
                barriers.extend({(end, key) for key, _, _ in alive})
            in_window = [(k, v, sub) for k, v, sub in alive if self._within(sub[v[0]], sub[v[1]])]
            best: dict[tuple[int, int, tuple[int, ...]], Match] = {}
            for _, v, sub in self._strategy(in_window):
                m = self._to_match(v, sub)
                k = (m.start, m.end, m.events)
                if k not in best or sorted(m.vars.items()) < sorted(best[k].vars.items()):
                    best[k] = m
            matches = sorted(best.values(), key=_limit_order)
            if q.limit is not None:
                matches = matches[: q.limit]
            out.extend(sorted(matches))
        if self.absence is not None:
            return self._trailing(out, substreams)
        return out

    # ------------------------------------------------------------ trailing absence (rule 14)
    def _time(self, row: dict[str, Any]) -> int | None:
        attribute = self.time_attribute.get(row["type"], "")
        return row.get(attribute) if attribute else None

    def _trailing(self, found: list[Match], substreams: dict[Any, list[dict[str, Any]]]) -> list[Match]:
        assert self.absence is not None and isinstance(self.query.within, ast.TimeWindow)
        d = self.query.within.nanoseconds
        by_position = {r["position"]: r for r in self.all_rows}
        # event time after each input event: (position, watermark), in input order
        clock: list[tuple[int, float]] = []
        highest = -math.inf
        for row in self.all_rows:
            t = self._time(row)
            if t is not None:
                highest = max(highest, t)
            clock.append((row["position"], highest - self.lateness))
        event, conditions = absent_event(self.absence)
        alerts: list[tuple[int, Match]] = []
        pending: set[tuple[int, int, tuple[int, ...]]] = set()
        for m in found:
            first = by_position[m.start]
            deadline = int(self._time(first)) + d  # type: ignore[arg-type]
            sub = substreams[self._partition_key(first)]
            index = {r["position"]: i for i, r in enumerate(sub)}
            binding = {k: [index[p] for p in v] for k, v in m.vars.items()}
            self.sub = sub
            killed = False
            for i in range(index[m.end] + 1, len(sub)):
                row = sub[i]
                t = self._time(row)
                if row["type"] != event.name or t is None or t > deadline:
                    continue
                # F's event under its type's name, beside m's variables (rule 14)
                held = {k: frozenset(s) for k, s in binding.items()}
                held[event.name] = frozenset({i})
                v: _Valuation = (i, i, frozenset({i}), tuple(sorted(held.items())))
                if all(self._holds(c, v) for c in conditions):
                    killed = True
                    break
            if killed:
                continue
            fired = next((p for p, now in clock if now > deadline), None)
            projected = self._project(m, deadline)
            if fired is None:
                pending.add((projected.start, projected.end, projected.events))
            else:
                alerts.append((fired, projected))
        best: dict[tuple[int, int, tuple[int, ...]], tuple[int, Match]] = {}
        for fired, a in alerts:
            k = (a.start, a.end, a.events)
            if k not in best or sorted(a.vars.items()) < sorted(best[k][1].vars.items()):
                best[k] = (fired, a)
        self.result.pending[self.name] = len(pending)
        return [a for _, a in sorted(best.values(), key=lambda fa: (fa[0], fa[1]))]

    def _project(self, m: Match, deadline: int) -> Match:
        """Rule 13 on a match of p selected with ``*``."""
        selection = self.checked.query.selection
        if isinstance(selection, ast.SelectAll):
            events, shown = m.events, m.vars
        elif isinstance(selection, ast.SelectNone):
            events, shown = (), m.vars
        else:
            names = [p.variable for p in selection]
            shown = {k: m.vars[k] for k in names if k in m.vars}
            events = tuple(sorted({p for k in shown for p in shown[k]}))
        return Match(self.name, m.start, m.end, events, shown, deadline=deadline)

    def _partition_key(self, row: dict[str, Any]) -> Any:
        """The row's values of the key's attributes (rule 7); None: no substream."""
        key = tuple(row.get(a) for a in self.query.partition_attributes)
        return None if None in key else key

    # ------------------------------------------------------------ patterns
    def _eval(self, node: ast.Formula) -> set[_Valuation]:
        sub = self.sub
        if isinstance(node, ast.EventType):
            return {
                (i, i, frozenset({i}), ((node.name, frozenset({i})),))
                for i, r in enumerate(sub)
                if r["type"] == node.name
            }
        if isinstance(node, ast.Bind):
            return {(s, e, d, _vars_union(m, ((node.variable, d),))) for s, e, d, m in self._eval(node.formula)}
        if isinstance(node, ast.Filter):
            return {v for v in self._eval(node.formula) if self._holds(node.condition, v)}
        if isinstance(node, ast.Disjunction):
            return self._eval(node.left) | self._eval(node.right)
        if isinstance(node, ast.Negation):
            matching = {v[0] for v in self._eval(node.formula)}
            return {(i, i, frozenset(), ()) for i in range(len(sub)) if i not in matching}
        if isinstance(node, ast.Iteration):
            return self._iterate(self._eval(node.formula), node.contiguous)
        if isinstance(node, ast.Conjunction):
            acc = self._eval(node.parts[0])
            for part in node.parts[1:]:
                right = self._eval(part)
                acc = {
                    (min(a[0], b[0]), max(a[1], b[1]), a[2] | b[2], _vars_union(a[3], b[3]))
                    for a in acc
                    for b in right
                    if not (a[2] & b[2])
                }
            return acc
        if isinstance(node, ast.Sequence):
            return self._sequence(node)
        raise TypeError(f"ABSENT(...) outside a sequence: {node!r}")

    def _sequence(self, node: ast.Sequence) -> set[_Valuation]:
        acc = self._eval(node.parts[0])
        absent: list[set[int]] = []
        for link, part in zip(node.links, node.parts[1:], strict=True):
            if isinstance(part, ast.Absence):
                absent.append({v[0] for v in self._eval(part.formula)})
                continue
            right = self._eval(part)
            forbidden = set().union(*absent) if absent else set()
            acc = {
                (a[0], b[1], a[2] | b[2], _vars_union(a[3], b[3]))
                for a in acc
                for b in right
                if (b[0] == a[1] + 1 if link == ":" else a[1] < b[0]) and not any(a[1] < k < b[0] for k in forbidden)
            }
            absent = []
        return acc

    def _iterate(self, base: set[_Valuation], contiguous: bool) -> set[_Valuation]:
        result = set(base)
        frontier = set(base)
        while frontier:
            grown = {
                (a[0], b[1], a[2] | b[2], _vars_union(a[3], b[3]))
                for a in frontier
                for b in base
                if (b[0] == a[1] + 1 if contiguous else a[1] < b[0])
            }
            frontier = grown - result
            result |= frontier
        return result

    # ------------------------------------------------------------ conditions
    def _holds(self, condition: ast.Expr, v: _Valuation) -> bool:
        binding = {k: sorted(s) for k, s in v[3]}
        for part in conjuncts(condition):
            try:
                if not self._conjunct(part, binding):
                    return False
            except _OutOfDomain:
                self.result.domain_errors += 1
                return False
        return True

    def _conjunct(self, part: ast.Expr, binding: dict[str, list[int]]) -> bool:
        variables = referenced_variables(part)
        if len(variables) == 1 and not has_aggregate(part) and not isinstance(part, ast.VariableFilter):
            (var,) = variables
            return all(_truth(self._value(part, binding, {var: i})) is True for i in binding.get(var, []))
        return _truth(self._value(part, binding, {})) is True

    def _range(self, node: ast.InInterval | ast.Between, binding: Any, current: Any) -> bool | None:
        """``low <= x AND x <= high`` (rule 6): ``high`` is read unless ``low <= x`` is false."""
        value = self._value(node.operand, binding, current)
        low = self._value(node.low, binding, current) if node.low is not None else -math.inf
        above = _compare("<=", low, value)
        if above is False:
            return False
        high = self._value(node.high, binding, current) if node.high is not None else math.inf
        return _and(above, _compare("<=", value, high))

    def _value(self, node: ast.Expr, binding: dict[str, list[int]], current: dict[str, int]) -> Any:
        if isinstance(node, (ast.NumberLiteral, ast.StringLiteral, ast.BoolLiteral)):
            return node.value
        if isinstance(node, ast.AttributeRef):
            return self.sub[self._event_of(node, binding, current)][node.attribute]
        if isinstance(node, ast.VariableFilter):
            # Bare attributes inside x[...] name x's current event ("" remembers x).
            truth: bool | None = True
            for i in binding.get(node.variable, []):
                value = _truth(self._value(node.condition, binding, {**current, node.variable: i, "": i}))
                if value is False:
                    return False
                truth = None if value is None else truth
            return truth
        if isinstance(node, ast.Call):
            return self._call(node, binding, current)
        if isinstance(node, ast.Negate):
            value = self._value(node.operand, binding, current)
            return None if value is None else -value
        if isinstance(node, ast.Arithmetic):
            return _arithmetic(
                node.op, self._value(node.left, binding, current), self._value(node.right, binding, current)
            )
        if isinstance(node, ast.Comparison):
            return _compare(
                node.op, self._value(node.left, binding, current), self._value(node.right, binding, current)
            )
        if isinstance(node, ast.InSet):
            value = self._value(node.operand, binding, current)
            items = [self._value(item, binding, current) for item in node.values]
            if value is None:
                return None
            return any(value == item for item in items) != node.negated
        if isinstance(node, (ast.InInterval, ast.Between)):
            inside = self._range(node, binding, current)
            negated = isinstance(node, ast.InInterval) and node.negated
            return None if inside is None else inside != negated
        if isinstance(node, ast.Like):
            text = self._value(node.operand, binding, current)
            return None if text is None else re.search(node.pattern, text) is not None
        if isinstance(node, ast.And):
            left = _truth(self._value(node.left, binding, current))
            return False if left is False else _and(left, _truth(self._value(node.right, binding, current)))
        if isinstance(node, ast.Or):
            left = _truth(self._value(node.left, binding, current))
            return True if left is True else _or(left, _truth(self._value(node.right, binding, current)))
        if isinstance(node, ast.Not):
            truth = _truth(self._value(node.operand, binding, current))
            return None if truth is None else not truth
        raise TypeError(f"unknown expression {node!r}")

    def _event_of(self, node: ast.AttributeRef, binding: dict[str, list[int]], current: dict[str, int]) -> int:
        """The substream index of the event an attribute reference reads."""
        if node.variable is None:
            return current[""]
        if node.variable in current:
            return current[node.variable]
        held = binding.get(node.variable, [])
        if len(held) != 1:
            raise _OutOfDomain()  # the checker rules this out for well-formed queries
        return held[0]

    def _call(self, node: ast.Call, binding: dict[str, list[int]], current: dict[str, int]) -> Any:
        fn = node.function.lower()
        arg = node.args[0]
        if fn in AGGREGATES:
            assert isinstance(arg, ast.AttributeRef)
            if fn == "count":
                return len(binding.get(arg.attribute if arg.variable is None else arg.variable, []))
            values = [self.sub[i][arg.attribute] for i in binding.get(arg.variable or "", [])]
            if fn in ("first", "last"):
                if not values:
                    raise _OutOfDomain()
                return values[0] if fn == "first" else values[-1]
            values = [v for v in values if v is not None]  # aggregates skip nulls
            if fn == "sum":
                return sum(values)
            if not values:
                raise _OutOfDomain()
            if fn == "avg":
                return sum(values) / len(values)
            return min(values) if fn == "min" else max(values)
        x = self._value(arg, binding, current)
        if x is None:
            return None
        try:
            return _MATH[fn](x)
        except ValueError:
            raise _OutOfDomain() from None

    # ------------------------------------------------------------ window, strategy, output
    def _within(self, first: dict[str, Any], last: dict[str, Any]) -> bool:
        w = self.query.within
        if w is None:
            return True
        if isinstance(w, ast.EventWindow):
            return bool(last["position"] - first["position"] <= w.count)
        if isinstance(w, ast.AttributeWindow):
            low, high = first[w.attribute], last[w.attribute]
            return low is not None and high is not None and bool(high - low < w.size)
        t0 = first[self.time_attribute[first["type"]]]
        t1 = last[self.time_attribute[last["type"]]]
        return bool(t1 - t0 <= w.nanoseconds)

    def _strategy(
        self, same_end: list[tuple[Any, _Valuation, list[dict[str, Any]]]]
    ) -> list[tuple[Any, _Valuation, list[dict[str, Any]]]]:
        strategy = self.query.effective_strategy
        if strategy == "ALL":
            return same_end
        if strategy == "STRICT":
            return [c for c in same_end if set(range(c[1][0], c[1][1] + 1)) <= c[1][2]]
        data = [frozenset(c[2][i]["position"] for i in c[1][2]) for c in same_end]
        if strategy == "MAX":
            return [c for c, d in zip(same_end, data, strict=True) if not any(d < other for other in data)]
        pick = min if strategy == "NEXT" else max

        def wins(d: frozenset[int]) -> bool:
            return all(d == o or pick(d ^ o) in d for o in data)

        return [c for c, d in zip(same_end, data, strict=True) if wins(d)]

    def _to_match(self, v: _Valuation, sub: list[dict[str, Any]]) -> Match:
        def positions(indices: Iterable[int]) -> tuple[int, ...]:
            return tuple(sorted(sub[i]["position"] for i in indices))

        held = {k: positions(s) for k, s in v[3] if s}
        selection = self.query.selection
        if isinstance(selection, ast.SelectAll):
            events, shown = positions(v[2]), held
        elif isinstance(selection, ast.SelectNone):
            events, shown = (), held
        else:
            names = [p.variable for p in selection]
            shown = {k: held[k] for k in names if k in held}
            events = tuple(sorted({p for k in shown for p in shown[k]}))
        return Match(self.name, sub[v[0]]["position"], sub[v[1]]["position"], events, shown)


_MATH: dict[str, Callable[[Any], Any]] = {
    "abs": abs,
    "sqrt": math.sqrt,
    "sin": math.sin,
    "cos": math.cos,
    "asin": math.asin,
    "acos": math.acos,
}


def _truth(value: Any) -> bool | None:
    """A value as a truth value: None (unknown) for a null."""
    return None if value is None else bool(value)


def _and(left: bool | None, right: bool | None) -> bool | None:
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def _or(left: bool | None, right: bool | None) -> bool | None:
    if left is True or right is True:
        return True
    return None if left is None or right is None else False


def _arithmetic(op: str, left: Any, right: Any) -> Any:
    if left is None or right is None:
        return None
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise _OutOfDomain()
    if op == "/":
        return left / right
    # % truncates toward zero, as in CORE's C++ engine.
    try:
        remainder = math.fmod(left, right)
    except ValueError:  # an infinite dividend: out of its domain, as in the engine
        raise _OutOfDomain() from None
    return int(remainder) if isinstance(left, int) and isinstance(right, int) else remainder


def _compare(op: str, left: Any, right: Any) -> bool | None:
    if left is None or right is None:
        return None
    if op == "=":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _limit_order(m: Match) -> tuple[int, tuple[int, ...]]:
    # Latest start first, then latest output positions first.
    return (-m.start, tuple(-p for p in reversed(m.events)))
