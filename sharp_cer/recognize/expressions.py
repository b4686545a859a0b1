"""DEFINE conditions and MEASURES compiled into Python closures over a
match view, with SQL NULL semantics (None) throughout.

A column reference ``A.x`` means ``LAST(A.x)``: the last row mapped to ``A``
so far (RUNNING) or in the whole match (FINAL); a bare ``x`` reads the last
row of the match, in DEFINE the row being tested. ``PREV``/``NEXT`` move a
physical number of rows from the row their argument locates, inside the
partition but possibly outside the match; ``FIRST``/``LAST`` count rows
mapped to the variable.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> c = parse_clause("MATCH_RECOGNIZE (PATTERN (A+) DEFINE A AS A.v > PREV(A.v))")
>>> scope = Scope(["A"], {"A": frozenset({0})}, {"v"}, c.source)
>>> cond = compile_expr(c.definitions[0].condition, scope, define="A")
>>> view = View({"v": [1, 3, 2]}, start=0, labels=[0, 0], running=2, match_number=1)
>>> cond.fn(view, None), cond.row_local
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sharp_cer.language.diagnostics import did_you_mean, listing
from sharp_cer.language.source import Source
from sharp_cer.language.truth import and3, or3, truth

from . import nodes
from .clause_errors import ClauseError, MatchError, NotSupportedError

Fn = Callable[["View", "int | None"], Any]


class View:
    """What an expression sees: the partition's columns, the rows of the match
    (``labels[k]`` is the variable id of row ``start + k``), how many of them
    RUNNING sees, and the match's number."""

    __slots__ = ("columns", "labels", "match_number", "running", "size", "start", "states")

    def __init__(
        self,
        columns: dict[str, Sequence[Any]],
        start: int,
        labels: Sequence[int],
        running: int,
        match_number: int,
        size: int | None = None,
        states: dict[Running, Any] | None = None,
    ) -> None:
        self.columns = columns
        self.states = states
        self.start = start
        self.labels = labels
        self.running = running
        self.match_number = match_number
        self.size = size if size is not None else len(next(iter(columns.values()))) if columns else 0


@dataclass
class Scope:
    """Names an expression may use: primary variables (their ids are their
    positions), subsets as sets of ids, the input's columns."""

    primaries: list[str]
    sets: dict[str, frozenset[int]]
    columns: set[str]
    source: Source | None


@dataclass(frozen=True)
class Compiled:
    """A compiled expression; ``row_local``: it reads only the tested row and
    rows at physical offsets from it (so it does not depend on the match so far)."""

    fn: Fn
    row_local: bool
    reads: tuple[Read, ...] | None = ()
    """What a DEFINE condition reads of the match so far, beyond the start and
    the row count: None when it may read any row's label (then threads are
    told apart by all their labels)."""
    running: tuple[Running, ...] = ()
    """The RUNNING aggregates a DEFINE condition keeps per thread (``View.states``)."""


Read = tuple[frozenset[int], str, int]
"""``(members, kind, k)``: the first (``kind`` "first") or last ("last") ``k + 1``
rows mapped to ``members``, or all of them ("all"), with their labels."""


class _Failed:
    """A running aggregate's error, raised when its value is read (as the
    recomputation raises it then). ``value``: an argument's evaluation failed,
    which the recomputation meets before any reduction error."""

    __slots__ = ("error", "value")

    def __init__(self, error: Exception, value: bool) -> None:
        self.error = error
        self.value = value


@dataclass(frozen=True, eq=False)
class Running:
    """A RUNNING COUNT, SUM, MIN or MAX in DEFINE over the rows mapped to
    ``members`` (None: every row of the match), kept as a state that one row
    updates in O(1), in the match's row order so the result is the
    recomputation's, errors and NULLs included. ``value``: the argument at a
    row (None: ``COUNT(*)``)."""

    name: str
    members: frozenset[int] | None
    value: Fn | None

    def initial(self) -> Any:
        return 0 if self.name == "count" else None

    def add(self, state: Any, view: View, row: int) -> Any:
        """``state`` after ``row`` (mapped to ``members``)."""
        if self.value is None:
            return state + 1
        if isinstance(state, _Failed) and state.value:
            return state
        try:
            value = self.value(view, row)
        except Exception as err:  # the recomputation raises the first argument error when read
            return _Failed(err, True)
        if value is None or isinstance(state, _Failed):
            return state
        if self.name == "count":
            return state + 1
        if state is None:
            return value
        try:
            if self.name == "sum":
                return _checked(state + value)
            if self.name == "min":
                return value if value < state else state
            return value if value > state else state
        except (OverflowError, TypeError) as err:
            return _Failed(err, False)

    def result(self, state: Any) -> Any:
        if isinstance(state, _Failed):
            raise state.error
        return _checked(state) if self.name == "sum" and state is not None else state


def state_key(state: Any) -> object:
    """A running aggregate's state as threads are merged on it: equal only
    when the futures are (1, 1.0 and True, or 0.0 and -0.0, are told apart)."""
    if type(state) is float:
        return (state, float, math.copysign(1.0, state))
    return (state, type(state))


_INCREMENTAL = ("count", "sum", "min", "max")

_NAVIGATIONS = ("prev", "next", "first", "last")
_AGGREGATES = ("count", "sum", "avg", "min", "max", "array_agg", "arbitrary")


def _locate(view: View, members: frozenset[int] | None, from_last: bool, offset: int, final: bool) -> int | None:
    """Row of the ``offset``-th row (from the first or the last) mapped to ``members``
    (None: any). RUNNING (the default) sees the rows of the match up to the
    current one, FINAL the whole match, for FIRST as for LAST (Trino's
    documentation: in running semantics only the preceding part of the match
    plus the current row is visible): in ALL ROWS PER MATCH, ``FIRST(x, 1)`` is
    NULL on a match's first row and the second row's ``x`` from the second row
    on. In DEFINE the current row is the tested one; in ONE ROW PER MATCH the
    last row, so RUNNING and FINAL agree there."""
    visible = len(view.labels) if final else view.running
    if members is None:
        index = visible - 1 - offset if from_last else offset
        return view.start + index if 0 <= index < visible else None
    labels = view.labels
    if from_last:
        for k in range(visible - 1, -1, -1):
            if labels[k] in members:
                if offset == 0:
                    return view.start + k
                offset -= 1
        return None
    for k in range(visible):
        if labels[k] in members:
            if offset == 0:
                return view.start + k
            offset -= 1
    return None


def _rows(view: View, members: frozenset[int] | None, final: bool) -> list[int]:
    visible = len(view.labels) if final else view.running
    if members is None:
        return list(range(view.start, view.start + visible))
    return [view.start + k for k in range(visible) if view.labels[k] in members]


_LOW, _HIGH = -(2**63), 2**63 - 1


def _checked(value: Any) -> Any:
    """An integer result within the 64-bit range (SQL's BIGINT), else an overflow."""
    if type(value) is int and not _LOW <= value <= _HIGH:
        raise OverflowError
    return value


def _divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        quotient = abs(a) // abs(b)
        return quotient if (a >= 0) == (b > 0) else -quotient
    return a / b


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _divide(a, b)
    return math.fmod(a, b)


def _concat(a: Any, b: Any) -> Any:
    return f"{a}{b}"


_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "||": _concat,
    "+": lambda a, b: _checked(a + b),
    "-": lambda a, b: _checked(a - b),
    "*": lambda a, b: _checked(a * b),
    "/": lambda a, b: _checked(_divide(a, b)),
    "%": _modulo,
}
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


class _Compiler:
    def __init__(self, scope: Scope, define: str | None) -> None:
        self.scope = scope
        self.define = define
        self.row_local = True
        self.reads: set[Read] = set()
        self.any_label = False
        self.running: list[Running] = []

    def error(self, message: str, node: Any, cls: type[ClauseError] = ClauseError, **kw: Any) -> ClauseError:
        return cls(message, self.scope.source, getattr(node, "span", None), **kw)

    def members(self, variable: str | None, node: Any) -> frozenset[int] | None:
        if variable is None:
            return None
        if variable not in self.scope.sets:
            names = list(self.scope.sets)
            raise self.error(
                f"{variable!r} is not a pattern variable or subset",
                node,
                expected=f"one of {listing(names)}",
                hint=did_you_mean(variable, names),
            )
        return self.scope.sets[variable]

    def final(self, node: nodes.Call) -> bool:
        if node.semantics == "FINAL":
            if self.define is not None:
                raise self.error(
                    "FINAL cannot be used in DEFINE", node, hint="DEFINE sees only the match so far; drop FINAL"
                )
            return True
        return False

    def check_column(self, node: nodes.Column) -> None:
        if node.name not in self.scope.columns:
            raise self.error(
                f"no column {node.name!r}",
                node,
                expected=f"a column: {listing(self.scope.columns)}",
                hint=did_you_mean(node.name, self.scope.columns),
            )

    def not_local(self, members: frozenset[int] | None, from_last: bool, offset: int) -> None:
        """Record that a located row depends on the match so far."""
        if self.define is None:
            return
        own = self.scope.sets[self.define]
        if not (from_last and offset == 0 and (members is None or own <= members)):
            self.row_local = False
            if members is not None:  # the universal variable's rows follow from the start and the row
                self.reads.add((members, "last" if from_last else "first", offset))

    def read_all(self, members: frozenset[int] | None) -> None:
        if self.define is not None and members is not None:
            self.reads.add((members, "all", 0))

    # --- the tree ---

    def expr(self, node: nodes.Expr, row_var: list[str | None] | None = None) -> Fn:
        """``row_var`` set: inside a navigation or aggregate argument, where
        columns read the row the caller passes, and whose variable is collected."""
        if isinstance(node, nodes.Literal):
            value = node.value
            return lambda view, row: value
        if isinstance(node, nodes.Column):
            self.check_column(node)
            name = node.name
            members = self.members(node.variable, node)
            if row_var is not None:
                row_var.append(node.variable)
                return lambda view, row: view.columns[name][row] if row is not None else None
            self.not_local(members, True, 0)

            def column(view: View, row: int | None) -> Any:
                at = _locate(view, members, True, 0, False)
                return None if at is None else view.columns[name][at]

            return column
        if isinstance(node, nodes.Star):
            raise self.error("'*' is only an argument of COUNT", node, hint="write COUNT(*) or COUNT(A.*)")
        if isinstance(node, nodes.Call):
            return self.call(node, row_var)
        if isinstance(node, nodes.Unary):
            operand = self.expr(node.operand, row_var)
            if node.op == "NOT":
                return lambda view, row: None if (v := truth(operand(view, row))) is None else not v
            return self.guard(node, lambda view, row: None if (v := operand(view, row)) is None else _checked(-v))
        if isinstance(node, nodes.Binary):
            return self.binary(node, row_var)
        if isinstance(node, nodes.IsNull):
            operand = self.expr(node.operand, row_var)
            negated = node.negated
            return lambda view, row: (operand(view, row) is None) != negated
        if isinstance(node, nodes.Between):
            x, lo, hi = (self.expr(e, row_var) for e in (node.operand, node.low, node.high))
            negated = node.negated

            def between(view: View, row: int | None) -> Any:
                v, a, b = x(view, row), lo(view, row), hi(view, row)
                low = None if v is None or a is None else a <= v
                high = None if v is None or b is None else v <= b
                both = and3(low, high)
                return None if both is None else both != negated

            return self.guard(node, between)
        if isinstance(node, nodes.InList):
            x = self.expr(node.operand, row_var)
            items = [self.expr(e, row_var) for e in node.items]
            negated = node.negated

            def in_list(view: View, row: int | None) -> Any:
                v = x(view, row)
                if v is None:
                    return None
                values = [f(view, row) for f in items]
                if v in [w for w in values if w is not None]:
                    return not negated
                return None if None in values else negated

            return in_list
        assert isinstance(node, nodes.Case)
        whens = [(self.expr(c, row_var), self.expr(v, row_var)) for c, v in node.whens]
        otherwise = self.expr(node.otherwise, row_var) if node.otherwise is not None else (lambda view, row: None)

        def case(view: View, row: int | None) -> Any:
            for condition, value in whens:
                if truth(condition(view, row)):
                    return value(view, row)
            return otherwise(view, row)

        return case

    def guard(self, node: Any, fn: Fn) -> Fn:
        """Type errors and division by zero become a located error, not a traceback."""
        source = self.scope.source
        span = getattr(node, "span", None)

        def guarded(view: View, row: int | None) -> Any:
            try:
                return fn(view, row)
            except ZeroDivisionError:
                raise MatchError("division by zero", source, span) from None
            except OverflowError:
                raise MatchError(
                    "integer overflow: the result is beyond the 64-bit range",
                    source,
                    span,
                    hint="integers lie within -9223372036854775808 .. 9223372036854775807; CAST is not supported, "
                    "so compute with a decimal operand (1.0 * x) to leave the integer range",
                ) from None
            except TypeError as err:
                raise MatchError(
                    f"operands of incompatible types ({err})",
                    source,
                    span,
                    hint="compare and combine values of the same type",
                ) from None

        return guarded

    def binary(self, node: nodes.Binary, row_var: list[str | None] | None) -> Fn:
        left, right = self.expr(node.left, row_var), self.expr(node.right, row_var)
        op = node.op
        if op == "AND":
            return lambda view, row: and3(truth(left(view, row)), truth(right(view, row)))
        if op == "OR":
            return lambda view, row: or3(truth(left(view, row)), truth(right(view, row)))
        apply = _ARITHMETIC.get(op) or _COMPARE[op]

        def binary(view: View, row: int | None) -> Any:
            a = left(view, row)
            if a is None:
                return None
            b = right(view, row)
            return None if b is None else apply(a, b)

        return self.guard(node, binary)

    def offset(self, node: nodes.Call) -> int:
        if len(node.args) == 1:
            return 1 if node.name in ("prev", "next") else 0
        arg = node.args[1]
        if len(node.args) != 2 or not isinstance(arg, nodes.Literal) or not isinstance(arg.value, int) or arg.value < 0:
            raise self.error(
                f"{node.name.upper()} takes an expression and a non-negative integer offset",
                node,
                found=f"{len(node.args)} arguments",
            )
        if arg.value >= 2**63:
            raise self.error(
                f"{node.name.upper()}'s offset {arg.value} is beyond the 64-bit range", arg, hint="use a smaller offset"
            )
        return int(arg.value)

    def single_var(self, variables: list[str | None], node: nodes.Call) -> str | None:
        named = {v for v in variables}
        if len(named) > 1:
            raise self.error(
                f"the argument of {node.name.upper()} refers to several pattern variables: "
                f"{listing(str(v) if v else '(universal)' for v in named)}",
                node,
                hint="all columns inside one navigation or aggregate must name the same variable",
            )
        return next(iter(named)) if named else None

    def call(self, node: nodes.Call, row_var: list[str | None] | None) -> Fn:
        name = node.name
        if name in _NAVIGATIONS:
            if row_var is not None:
                raise self.error(
                    f"{name.upper()} cannot be nested here",
                    node,
                    NotSupportedError,
                    hint="only PREV/NEXT around FIRST/LAST may be nested",
                )
            return self.navigation(node)
        if name in _AGGREGATES:
            if row_var is not None:
                raise self.error("aggregates cannot be nested in navigations or aggregates", node)
            return self.aggregate(node)
        if name == "classifier":
            if len(node.args) > 1 or (node.args and not isinstance(node.args[0], nodes.Column | nodes.Literal)):
                raise self.error("CLASSIFIER takes at most one pattern variable", node)
            variable = None
            if node.args:
                arg = node.args[0]
                variable = arg.name if isinstance(arg, nodes.Column) and arg.variable is None else None
                if variable is None:
                    raise self.error("CLASSIFIER takes a pattern variable", node)
            members = self.members(variable, node)
            final = self.final(node)
            names = self.scope.primaries
            if row_var is not None:
                row_var.append(variable)

                if self.define is not None:
                    self.any_label = True

                def classifier_at(view: View, row: int | None) -> Any:
                    if row is None or not 0 <= row - view.start < len(view.labels):
                        return None
                    return names[view.labels[row - view.start]]

                return classifier_at
            if self.define is not None:
                self.row_local = False
                if members is not None:
                    self.reads.add((members, "last", 0))

            def classifier(view: View, row: int | None) -> Any:
                at = _locate(view, members, True, 0, final)
                return None if at is None else names[view.labels[at - view.start]]

            return classifier
        if name == "match_number":
            if node.args:
                raise self.error("MATCH_NUMBER takes no argument", node)
            if self.define is not None:
                self.row_local = False
            return lambda view, row: view.match_number
        if node.semantics is not None:
            raise self.error(f"{node.semantics} applies to navigations and aggregates, not to {name}", node)
        args = [self.expr(a, row_var) for a in node.args]
        if name == "abs" and len(args) == 1:
            (a,) = args
            return self.guard(node, lambda view, row: None if (v := a(view, row)) is None else _checked(abs(v)))
        if name in ("lower", "upper") and len(args) == 1:
            (a,) = args
            upper = name == "upper"
            return self.guard(
                node, lambda view, row: None if (v := a(view, row)) is None else (v.upper() if upper else v.lower())
            )
        if name == "coalesce" and args:

            def coalesce(view: View, row: int | None) -> Any:
                for f in args:
                    value = f(view, row)
                    if value is not None:
                        return value
                return None

            return coalesce
        raise self.error(
            f"function {name!r} is not supported",
            node,
            NotSupportedError,
            expected="PREV, NEXT, FIRST, LAST, CLASSIFIER, MATCH_NUMBER, COUNT, SUM, AVG, MIN, MAX, ARRAY_AGG, "
            "ARBITRARY, ABS, COALESCE, LOWER, UPPER",
        )

    def navigation(self, node: nodes.Call) -> Fn:
        if not node.args:
            raise self.error(f"{node.name.upper()} takes an expression", node)
        physical = 0
        from_last, logical = True, 0
        final = self.final(node)
        target = node.args[0]
        if node.name in ("prev", "next"):
            physical = self.offset(node) * (-1 if node.name == "prev" else 1)
            if isinstance(target, nodes.Call) and target.name in ("first", "last"):
                if node.semantics is not None:
                    raise self.error(f"put {node.semantics} on the inner {target.name.upper()}", node)
                from_last, logical = target.name == "last", self.offset(target)
                final = self.final(target)
                if not target.args:
                    raise self.error(f"{target.name.upper()} takes an expression", target)
                target = target.args[0]
            elif isinstance(target, nodes.Call) and target.name in ("prev", "next"):
                raise self.error(
                    "PREV and NEXT cannot be nested in each other", target, hint="add the offsets: PREV(x, 2)"
                )
        else:
            from_last, logical = node.name == "last", self.offset(node)
        variables: list[str | None] = []
        inner = self.expr(target, variables)
        if not variables:
            raise self.error(
                f"the argument of {node.name.upper()} reads no column",
                node,
                hint="navigate over a column, e.g. PREV(A.price)",
            )
        members = self.members(self.single_var(variables, node), node)
        self.not_local(members, from_last, logical)

        def navigate(view: View, row: int | None) -> Any:
            at = _locate(view, members, from_last, logical, final)
            if at is None:
                return None
            at += physical
            return inner(view, at) if 0 <= at < view.size else None

        return navigate

    def aggregate(self, node: nodes.Call) -> Fn:
        name = node.name
        final = self.final(node)
        if name == "count" and not node.args:
            node = nodes.Call(name, (nodes.Star(None, node.span),), node.semantics, node.span)  # COUNT() is COUNT(*)
        if len(node.args) != 1:
            raise self.error(f"{name.upper()} takes one argument", node, found=f"{len(node.args)} arguments")
        arg = node.args[0]
        if self.define is not None:
            self.row_local = False
        if isinstance(arg, nodes.Star):
            if name != "count":
                raise self.error(f"{name.upper()}(*) is not defined", arg, hint="only COUNT takes *")
            members = self.members(arg.variable, arg)
            star: Fn = lambda view, row: len(_rows(view, members, final))  # noqa: E731
            return self.incremental(Running(name, members, None), star, members)
        variables: list[str | None] = []
        any_label = self.any_label
        inner = self.expr(arg, variables)
        members = self.members(self.single_var(variables, node), node)
        by_row = self.any_label == any_label  # the argument reads its own row only (no CLASSIFIER)
        if name not in _INCREMENTAL or not by_row:
            self.read_all(members)

        if name == "array_agg":  # keeps NULLs, in match order
            return lambda view, row: [inner(view, r) for r in _rows(view, members, final)] or None

        def values(view: View) -> list[Any]:
            out = (inner(view, r) for r in _rows(view, members, final))
            return [v for v in out if v is not None]

        if name == "count":
            counted: Fn = lambda view, row: len(values(view))  # noqa: E731
            return self.incremental(Running(name, members, inner), counted, members) if by_row else counted
        reduce = _REDUCERS[name]
        again: Fn = lambda view, row: reduce(vs) if (vs := values(view)) else None  # noqa: E731
        if name in _INCREMENTAL and by_row:
            again = self.incremental(Running(name, members, inner), again, members)
        return self.guard(node, again)

    def incremental(self, spec: Running, again: Fn, members: frozenset[int] | None) -> Fn:
        """In DEFINE, the aggregate read from the thread's state when the
        matcher keeps one (``View.states``), else ``again``: recomputed over
        the match so far."""
        if self.define is None:
            return again
        self.running.append(spec)

        def running(view: View, row: int | None) -> Any:
            states = view.states
            if states is None:
                return again(view, row)
            state = states[spec]
            k = view.running - 1  # the tested row, not yet in the state
            if k >= 0 and (members is None or view.labels[k] in members):
                state = spec.add(state, view, view.start + k)
            return spec.result(state)

        return running


def _sum(values: list[Any]) -> Any:
    """SUM as SQL engines add BIGINTs: an overflow of any partial sum is an error."""
    total = values[0]
    for value in values[1:]:
        total = _checked(total + value)
    return _checked(total)


def _average(values: list[Any]) -> Any:
    return sum(values) / len(values)


_REDUCERS: dict[str, Callable[[list[Any]], Any]] = {
    "sum": lambda values: _sum(values),
    "min": min,
    "max": max,
    "avg": _average,
    "arbitrary": lambda values: values[0],
}


def compile_expr(node: nodes.Expr, scope: Scope, *, define: str | None = None) -> Compiled:
    """Compile a measure (``define`` None) or the DEFINE condition of variable ``define``."""
    compiler = _Compiler(scope, define)
    fn = compiler.expr(node)
    reads = None if compiler.any_label else tuple(sorted(compiler.reads, key=lambda r: (sorted(r[0]), r[1], r[2])))
    return Compiled(fn, compiler.row_local, reads, tuple(compiler.running))
