"""Cross-event conditions: checked exactly during enumeration, and bounded
on whole tECS branches by node summaries so hopeless branches are skipped.

A cross-event FILTER (``sharp_cer.planner.plan.CrossFilter``) applies to each instance
of its pattern: the events whose label holds its tag, from one event whose
label holds its first-tag up to the next such event. Enumeration walks a
match from its last event back, so an instance is complete when its first
event is reached; the conditions are then evaluated exactly on the events'
stored attributes (:class:`ExactCondition`).

Summaries. Each condition is reduced to *terms*: ``sum``, ``count``,
``min``, ``max`` of a variable's attribute, and the *envelope* (smallest and
largest value) behind ``avg``, ``first``, ``last`` and plain ``x.a``. Every
tECS node carries, per term, the lowest and highest value the term's
contribution can take over the node's paths, down to the first event of
the instance (:class:`Summaries`); it is computed in O(1) per term when the
node is created. During enumeration the events already seen are combined
with a branch's summary and the conditions are evaluated on intervals
(:func:`bounds`); a branch whose best case is false is not entered.

>>> from sharp_cer.language import parse_query
>>> cond = parse_query("SELECT * WHERE A FILTER sum(b.x) < c.x").pattern.condition
>>> terms = Terms()
>>> test = compile_bounds(cond, terms)
>>> terms.keys
[('sum', 'b', 'x'), ('env', 'c', 'x')]
>>> test([(5, 9), (10, 10)]), test([(10, 12), (10, 10)]), test([(5, 12), (10, 10)])
(True, False, None)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from sharp_cer.language import ast
from sharp_cer.language.checker import AGGREGATES, expr_children
from sharp_cer.language.truth import and3, or3
from sharp_cer.planner.plan import CrossFilter

from .predicate_bits import OutOfDomain, compile_condition

_INF = math.inf
#: The identity of each term kind: its contribution over no events.
IDENTITY = {"sum": (0, 0), "count": (0, 0), "min": (_INF, _INF), "max": (-_INF, -_INF), "env": (_INF, -_INF)}
Interval = tuple[float, float]
#: Per term, the lowest and the highest value: (lows, highs).
Summary = tuple[tuple[float, ...], tuple[float, ...]]
#: Per event: the values of the group's stored attributes (None: null).
Values = tuple[Any, ...]


def join_sequence(kind: str, a: Interval, b: Interval) -> Interval:
    """The range of a term over two disjoint parts of an instance, from the
    ranges over each part.

    >>> join_sequence("sum", (1, 2), (10, 20)), join_sequence("min", (3, 3), (1, 5))
    ((11, 22), (1, 3))
    """
    return _join(JOIN_CODE[kind], a[0], a[1], b[0], b[1])


#: How each term kind joins two ranges (``join_sequence``): add them, take
#: the lower or the higher ends, or widen to both (the envelope).
JOIN_CODE = {"sum": 0, "count": 0, "min": 1, "max": 2, "env": 3}


def _join(code: int, a0: float, a1: float, b0: float, b1: float) -> Interval:
    """``join_sequence`` on a kind's code and the four ends. The hot paths
    (``FilterCheck.possible``, ``Summaries.output``) inline it; each end is
    picked as ``min`` and ``max`` pick it (the first unless the second is
    strictly beyond), except that a NaN on either side stays: a NaN end means
    "unknown" to the bound test, and dropping it would judge a path whose
    value is NaN by the other paths' values (and prune a match).

    >>> _join(0, 1, 2, 10, 20), _join(1, 3, 3, 1, 5), _join(2, 3, 3, 1, 5), _join(3, 3, 3, 1, 5)
    ((11, 22), (1, 3), (3, 5), (1, 5))
    >>> nan = float("nan"); _join(3, nan, nan, 0, 0), _join(3, 0, 0, nan, nan)
    ((nan, nan), (nan, nan))
    """
    if code == 0:
        return a0 + b0, a1 + b1
    if code == 1:
        return (b0 if b0 < a0 or b0 != b0 else a0), (b1 if b1 < a1 or b1 != b1 else a1)
    if code == 2:
        return (b0 if b0 > a0 or b0 != b0 else a0), (b1 if b1 > a1 or b1 != b1 else a1)
    return (b0 if b0 < a0 or b0 != b0 else a0), (b1 if b1 > a1 or b1 != b1 else a1)


class Terms:
    """The terms of a set of conditions, numbered in order of first use
    (see the module example)."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str, str]] = []

    def index(self, key: tuple[str, str, str]) -> int:
        """The number of a term, added if new.

        >>> t = Terms(); t.index(("sum", "b", "x")), t.index(("env", "c", "x")), t.index(("sum", "b", "x"))
        (0, 1, 0)
        """
        if key not in self.keys:
            self.keys.append(key)
        return self.keys.index(key)


class _Empty:
    """An envelope term over no events at all on every path (``avg``,
    ``first``, ``last`` of none; a ``min`` or ``max`` of none is read as its
    infinite identity, see ``_bounds``): out of its domain wherever it is read, so
    what reads it is too. It is not false: OR does not read its right side
    where its left is true, nor AND where its left is false (``reference``
    rule 6), and NOT keeps it out of domain."""


EMPTY = _Empty()


Bounds = Callable[[Sequence[Interval]], Any]


def compile_bounds(expr: ast.Expr, terms: Terms) -> Callable[[Sequence[Interval]], bool | None]:
    """A conjunct's truth on term intervals: True or False when every
    valuation within the intervals agrees, None when they may differ."""
    inner = _bounds(expr, terms)

    def test(intervals: Sequence[Interval]) -> bool | None:
        value = inner(intervals)
        if value is EMPTY:  # out of its domain on every path: the conjunct is false
            return False
        return value if isinstance(value, bool) or value is None else None

    return test


def _term(expr: ast.Expr) -> tuple[str, str, str] | None:
    if isinstance(expr, ast.AttributeRef) and expr.variable is not None:
        return ("env", expr.variable, expr.attribute)
    if isinstance(expr, ast.Call) and expr.function.lower() in AGGREGATES:
        fn, arg = expr.function.lower(), expr.args[0]
        assert isinstance(arg, ast.AttributeRef)
        if fn == "count":
            return ("count", arg.attribute if arg.variable is None else arg.variable, "")
        if arg.variable is None:
            return None
        kind = fn if fn in ("sum", "min", "max") else "env"
        return (kind, arg.variable, arg.attribute)
    return None


def _bounds(expr: ast.Expr, terms: Terms) -> Bounds:
    key = _term(expr)
    if key is not None:
        i = terms.index(key)
        kind = key[0]

        def term(iv: Sequence[Interval]) -> Any:
            lo, hi = iv[i]
            if lo != lo or hi != hi:  # NaN: unknown
                return None
            # Only an inverted envelope says "no events on every path". A min of (inf, inf) may be
            # over no events or over +inf values (max, -inf): read as a value, which is sound, as a
            # path over no events is out of its domain and so never makes its conjunct true.
            if kind == "env" and lo > hi:
                return EMPTY
            return (lo, hi)

        return term
    if isinstance(expr, ast.NumberLiteral):
        point = (expr.value, expr.value)
        return lambda iv: point
    if isinstance(expr, ast.Negate):
        operand = _bounds(expr.operand, terms)
        return lambda iv: _map(operand(iv), lambda a: (-a[1], -a[0]))
    if isinstance(expr, ast.Arithmetic) and expr.op in ("+", "-", "*"):
        left, right, op = _bounds(expr.left, terms), _bounds(expr.right, terms), expr.op
        return lambda iv: _arith(op, left(iv), right(iv))
    if isinstance(expr, ast.Call) and expr.function.lower() == "abs":
        operand = _bounds(expr.args[0], terms)
        return lambda iv: _map(operand(iv), _abs)
    if isinstance(expr, ast.Comparison):
        left, right, op = _bounds(expr.left, terms), _bounds(expr.right, terms), expr.op
        return lambda iv: _compare(op, left(iv), right(iv))
    if isinstance(expr, ast.Between):
        operand, low, high = (_bounds(e, terms) for e in (expr.operand, expr.low, expr.high))
        return lambda iv: _between(operand(iv), low(iv), high(iv))
    if isinstance(expr, ast.And):
        a, b = _bounds(expr.left, terms), _bounds(expr.right, terms)
        return lambda iv: _and(a(iv), b(iv))
    if isinstance(expr, ast.Or):
        a, b = _bounds(expr.left, terms), _bounds(expr.right, terms)
        return lambda iv: _or(a(iv), b(iv))
    if isinstance(expr, ast.Not):
        a = _bounds(expr.operand, terms)
        return lambda iv: _not(a(iv))
    # Strings, sets, LIKE, x[...], division and other math: no bound, but the
    # terms inside still count (an empty one makes the conjunct false).
    # x[...] stays opaque: its bare attributes name each of x's events in turn
    children = () if isinstance(expr, ast.VariableFilter) else expr_children(expr)
    inner = [_bounds(child, terms) for child in children]

    def unknown(iv: Sequence[Interval]) -> Any:
        return EMPTY if any(child(iv) is EMPTY for child in inner) else None

    return unknown


def _map(value: Any, f: Callable[[Interval], Interval]) -> Any:
    if value is EMPTY:
        return EMPTY
    return f(value) if isinstance(value, tuple) else None


def _and(a: Any, b: Any) -> Any:
    """AND on bounds, its left read first: false where the left is false,
    else out of domain where either side is. With a left that may go
    either way, a right out of domain makes it false on some paths and out
    of domain on the others: undecided (under a NOT they differ)."""
    if a is EMPTY or a is False:
        return a
    if b is EMPTY:
        return EMPTY if a is True else None
    return and3(a, b)


def _or(a: Any, b: Any) -> Any:
    """OR on bounds, as ``_and`` with the sides' roles for true."""
    if a is EMPTY or a is True:
        return a
    if b is EMPTY:
        return EMPTY if a is False else None
    return or3(a, b)


def _between(operand: Any, low: Any, high: Any) -> Any:
    """``low <= operand <= high``, read as the exact check reads it: high
    only where ``low <= operand`` is not false."""
    return _and(_compare("<=", low, operand), _compare("<=", operand, high))


def _abs(a: Interval) -> Interval:
    if a[0] >= 0:
        return a
    if a[1] <= 0:
        return (-a[1], -a[0])
    return (0, max(-a[0], a[1]))


def _arith(op: str, a: Any, b: Any) -> Any:
    if a is EMPTY or b is EMPTY:
        return EMPTY
    if not (isinstance(a, tuple) and isinstance(b, tuple)):
        return None
    if op == "+":
        out = (a[0] + b[0], a[1] + b[1])
    elif op == "-":
        out = (a[0] - b[1], a[1] - b[0])
    else:
        products = [x * y for x in a for y in b]
        out = (min(products), max(products))
    return None if out[0] != out[0] or out[1] != out[1] else out


def _compare(op: str, a: Any, b: Any) -> Any:
    if a is EMPTY or b is EMPTY:
        return EMPTY
    if not (isinstance(a, tuple) and isinstance(b, tuple)):
        return None
    if op in (">", ">="):
        a, b, op = b, a, "<" if op == ">" else "<="
    if op == "<":
        return True if a[1] < b[0] else False if a[0] >= b[1] else None
    if op == "<=":
        return True if a[1] <= b[0] else False if a[0] > b[1] else None
    disjoint = a[1] < b[0] or b[1] < a[0]
    same_point = a[0] == a[1] == b[0] == b[1]
    equal = False if disjoint else True if same_point else None
    return equal if op == "=" else (None if equal is None else not equal)


def _not(a: Any) -> Any:
    return a if a is None or a is EMPTY else not a


# ---------------------------------------------------------------- exact


Env = dict[str, list[Values]]
_Context = tuple[Env, dict[str, Values]]
_Exact = Callable[[_Context], Any]


class ExactCondition:
    """A cross-event conjunct evaluated on the events of one instance:
    ``env`` maps each variable to the stored values of its events, in
    stream order. Math out of its domain raises ``OutOfDomain``.

    >>> from sharp_cer.language import parse_query
    >>> cond = parse_query("SELECT * WHERE A FILTER sum(b.x) < c.x").pattern.condition
    >>> check = ExactCondition(cond, ("x",))
    >>> check({"b": [(1,), (2,)], "c": [(4,)]}), check({"b": [(1,), (3,)], "c": [(4,)]})
    (True, False)
    """

    def __init__(self, expr: ast.Expr, attributes: Sequence[str]) -> None:
        self.columns = {a: i for i, a in enumerate(attributes)}
        self.evaluate = compile_condition(expr, self._leaf)

    def __call__(self, env: Env) -> bool:
        return bool(self.evaluate((env, {})))

    def _read(self, values: Values, attribute: str) -> Any:
        return values[self.columns[attribute]]  # None: null (the checker made sure the type declares it)

    def _leaf(self, expr: ast.Expr) -> _Exact | None:
        """What reads events: attributes, ``x[...]`` and aggregates; the
        context is (variables to their events, the current events)."""
        read = self._read
        if isinstance(expr, ast.AttributeRef):
            var, attribute = expr.variable, expr.attribute

            def ref(ctx: _Context) -> Any:
                env, cur = ctx
                if var is None:
                    return read(cur[""], attribute)
                if var in cur:
                    return read(cur[var], attribute)
                held = env.get(var, [])
                if len(held) != 1:
                    raise OutOfDomain()
                return read(held[0], attribute)

            return ref
        if isinstance(expr, ast.VariableFilter):
            var, inner = expr.variable, compile_condition(expr.condition, self._leaf)

            def every(ctx: _Context) -> bool | None:
                # SQL's AND over x's events: false if one is false, else unknown if one is
                truth: bool | None = True
                for e in ctx[0].get(var, []):
                    value = inner((ctx[0], {**ctx[1], var: e, "": e}))
                    if value is None:
                        truth = None
                    elif not value:
                        return False
                return truth

            return every
        if isinstance(expr, ast.Call) and expr.function.lower() in AGGREGATES:
            return self._aggregate(expr)
        return None

    def _aggregate(self, expr: ast.Call) -> _Exact:
        fn, arg = expr.function.lower(), expr.args[0]
        assert isinstance(arg, ast.AttributeRef)
        if fn == "count":
            var = arg.attribute if arg.variable is None else arg.variable
            return lambda ctx: len(ctx[0].get(var, []))
        var, attribute, read = arg.variable or "", arg.attribute, self._read

        def aggregate(ctx: _Context) -> Any:
            values = [read(e, attribute) for e in ctx[0].get(var, [])]
            if fn in ("first", "last"):  # the first (last) event's value, null or not
                if not values:
                    raise OutOfDomain()
                return values[0] if fn == "first" else values[-1]
            values = [v for v in values if v is not None]  # aggregates skip nulls, as in SQL
            if fn == "sum":
                return sum(values)
            if not values:
                raise OutOfDomain()
            if fn == "avg":
                return sum(values) / len(values)
            return min(values) if fn == "min" else max(values)

        return aggregate


# ---------------------------------------------------------------- per query group


class FilterCheck:
    """One cross-event filter of a query: its exact conjuncts, its bound
    tests and the terms they use (indices into the group's summaries)."""

    def __init__(self, cross: CrossFilter, summaries: Summaries) -> None:
        self.tag = cross.tag
        self.first_tag = cross.first_tag
        self.whole = cross.whole  # over the whole match: no tags, checked at its first event
        self.exact = [ExactCondition(c, summaries.attributes) for c in cross.conjuncts]
        local = Terms()
        self.bounds = [compile_bounds(c, local) for c in cross.conjuncts]
        self.terms = [summaries.term(self.tag, key) for key in local.keys]
        self.kinds = [key[0] for key in local.keys]
        self._joins = [(JOIN_CODE[kind], t) for kind, t in zip(self.kinds, self.terms, strict=True)]

    def holds(self, env: Env) -> bool:
        """Every conjunct holds on the instance (raises OutOfDomain)."""
        return all(check(env) for check in self.exact)

    def possible(self, seen: Summary, below: Summary) -> bool:
        """Whether some path below a node summarized by ``below`` can still
        satisfy every conjunct, given the events of the open instance
        already ``seen`` (summarized the same way)."""
        # every walk asks this at every branch it may enter: join_sequence inlined
        s0, s1, b0, b1 = seen[0], seen[1], below[0], below[1]
        intervals: list[Interval] = []
        for code, t in self._joins:
            a0, a1, c0, c1 = s0[t], s1[t], b0[t], b1[t]
            if code == 0:
                intervals.append((a0 + c0, a1 + c1))
            elif code == 1:
                intervals.append(((c0 if c0 < a0 or c0 != c0 else a0), (c1 if c1 < a1 or c1 != c1 else a1)))
            elif code == 2:
                intervals.append(((c0 if c0 > a0 or c0 != c0 else a0), (c1 if c1 > a1 or c1 != c1 else a1)))
            else:
                intervals.append(((c0 if c0 < a0 or c0 != c0 else a0), (c1 if c1 > a1 or c1 != c1 else a1)))
        for test in self.bounds:  # noqa: SIM110  (no generator on this path)
            if test(intervals) is False:
                return False
        return True


class Summaries:
    """The terms every cross-event filter of a group uses, and how each
    labelled event changes them (see the module docstring).

    ``attributes`` are the attributes stored with each marked event (those
    the conditions read); ``numeric`` those with numeric values, the only
    ones summarized. With ``layers`` (the filters in the order a running
    group gained them: ``QueryGroup.basis``), each layer's terms and
    attributes come after the earlier layers', so the live nodes' summaries
    and values keep their layout as a group grows.

    >>> from sharp_cer.language import parse_query
    >>> def cross(text):
    ...     return CrossFilter("#0", "#0^", (parse_query(f"SELECT * WHERE A FILTER {text}").pattern.condition,))
    >>> one, two = cross("a.y < b.y"), cross("a.x < b.x")
    >>> Summaries([one, two], [], set()).attributes, Summaries([one, two], [], set(), [[one], [two]]).attributes
    (('x', 'y'), ('y', 'x'))
    """

    def __init__(
        self,
        filters: Sequence[CrossFilter],
        labels: Sequence[frozenset[str]],
        numeric: set[str],
        layers: Sequence[Sequence[CrossFilter]] | None = None,
    ) -> None:
        self.labels = labels
        order: list[str] = []
        for layer in layers if layers is not None else [filters]:
            attributes: set[str] = set()
            for cross in layer:
                for c in cross.conjuncts:
                    attributes |= _attributes(c)
            order += sorted(attributes - set(order))
        self.attributes = tuple(order)
        self.numeric = numeric
        # filters over a whole match tag no label: every event of the query's paths counts
        self.whole = {cross.tag for cross in filters if cross.whole}
        self.keys: list[tuple[str, str, str, str]] = []  # (tag, kind, variable, attribute)
        # one per filter, in order: filters of many queries may share a tag (their place in
        # the pattern) and so the terms of their summaries
        self.checks = [FilterCheck(cross, self) for cross in filters]
        self.identity = (
            tuple(IDENTITY[k[1]][0] for k in self.keys),
            tuple(IDENTITY[k[1]][1] for k in self.keys),
        )
        self._plans: dict[int, list[tuple[int, str, int, bool, int, str]]] = {}

    def term(self, tag: str, key: tuple[str, str, str]) -> int:
        """The index of a filter's term among the group's summaries."""
        full = (tag, *key)
        if full not in self.keys:
            self.keys.append(full)
        return self.keys.index(full)

    def _plan(self, label: int) -> list[tuple[int, str, int, bool, int, str]]:
        """Per term: (index, what the event adds, attribute column, whether
        the event starts its instance, its kind's ``JOIN_CODE``, its kind);
        terms of other filters pass."""
        plan = self._plans.get(label)
        if plan is None:
            names = self.labels[label]
            plan = []
            for i, (tag, kind, var, attribute) in enumerate(self.keys):
                if tag not in names and tag not in self.whole:
                    continue
                starts = tag + "^" in names
                if var not in names:
                    if not starts:
                        continue  # the term passes unchanged (many, once many queries' filters share the terms)
                    own = "none"
                elif kind == "count":
                    own = "one"
                elif attribute in self.numeric:
                    own = "value"
                else:
                    own = "unknown"
                column = self.attributes.index(attribute) if own == "value" else -1
                plan.append((i, own, column, starts, JOIN_CODE[kind], kind))
            self._plans[label] = plan
        return plan

    def output(self, label: int, values: Values, below: Summary, reset: bool = True) -> Summary:
        """The summary of an output node marking an event with ``label``
        and ``values`` over a successor summarized by ``below``. With
        ``reset`` False the event never drops what ``below`` holds (for
        events seen during enumeration, which come latest first)."""
        plan = self._plan(label)
        if not plan:
            return below
        los, his = list(below[0]), list(below[1])
        low, high = self.identity
        a0: float
        a1: float
        # every output node of a group with cross-event conditions pays this: join_sequence
        # inlined (the event's range a0..a1 first, then the range below b0..b1)
        for i, own, column, starts, code, kind in plan:
            if starts and reset:
                b0, b1 = low[i], high[i]
            else:
                b0, b1 = los[i], his[i]
            if own == "none":
                los[i], his[i] = b0, b1
                continue
            if own == "one":
                a0 = a1 = 1
            elif own == "value" and values[column] is not None:
                a0 = a1 = values[column]
            elif own == "value" and code != 3:
                a0, a1 = IDENTITY[kind]  # sum, min and max skip a null, as their exact values do
            else:  # unknown: a null read as a plain value, first or last makes its comparisons unknown
                a0, a1 = -_INF, _INF
            if code == 0:
                los[i], his[i] = a0 + b0, a1 + b1
            elif code == 1:
                los[i], his[i] = (b0 if b0 < a0 or b0 != b0 else a0), (b1 if b1 < a1 or b1 != b1 else a1)
            elif code == 2:
                los[i], his[i] = (b0 if b0 > a0 or b0 != b0 else a0), (b1 if b1 > a1 or b1 != b1 else a1)
            else:
                los[i], his[i] = (b0 if b0 < a0 or b0 != b0 else a0), (b1 if b1 > a1 or b1 != b1 else a1)
        return tuple(los), tuple(his)

    def cleared(self, seen: Summary, check: FilterCheck) -> Summary:
        """``seen`` with one filter's terms back to their identity (its
        instance is complete)."""
        los, his = list(seen[0]), list(seen[1])
        for t in check.terms:
            los[t], his[t] = self.identity[0][t], self.identity[1][t]
        return tuple(los), tuple(his)


def _attributes(expr: ast.Expr) -> set[str]:
    out: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.AttributeRef):
            out.add(node.attribute)
        if isinstance(node, ast.Call) and node.function.lower() == "count":
            continue  # count reads no attribute
        stack.extend(expr_children(node))
    return out
