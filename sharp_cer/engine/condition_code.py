"""Cross-event conditions compiled for the compiled core (``engine._core``):
the tables of ``conditions.Summaries`` and each ``FilterCheck``'s
conjuncts as two small programs, one on exact values (the instance's
events) and one on term intervals (the bound test), with the meaning of
``conditions.ExactCondition`` and ``conditions.compile_bounds``.

What the programs cover: number and string literals, ``x.a`` of a named
variable, the aggregates, ``- + * / %``, ``abs sqrt sin cos asin acos``,
comparisons (strings only with ``=`` and ``!=``), BETWEEN, AND, OR and NOT,
over attributes whose type is the same in every event type of the group
(int or time, double, or string). Anything else (``x[...]``, sets, LIKE,
booleans, a bare attribute) leaves the query group on the Python path:
:func:`why_not` names it.

>>> from sharp_cer.language import parse_query
>>> cond = parse_query("SELECT * WHERE A FILTER count(b) >= 3 AND b.x < 2").pattern.condition
>>> program = Program({"x": "num"}, {"b": 0}, StringTable(), {"x": 0})
>>> program.exact(cond)  # count(b) >= 3, then (unless false) b.x < 2, combined by AND
[3, 0, 0, -1, 1, 0, 6, 5, 8, 10, 20, 2, 0, 0, 1, 1, 6, 2, 8, 12, 0]
>>> program.consts
[(1, 3), (1, 2)]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from sharp_cer.events.batch import EventBatch
from sharp_cer.language import ast
from sharp_cer.language.checker import AGGREGATES

from .conditions import IDENTITY, JOIN_CODE, Summaries, Terms, _term
from .predicate_bits import OutOfDomain

# opcodes shared with _core.pyx (its "cross-event conditions" section)
END, CONST, REF, AGG, NEG, ARITH, CMP, FUNC, TRUTH, NOT, JFALSE, JTRUE, AND3, OR3 = range(14)
CHAIN1, JCHAIN, CHAIN2, BETWEEN, UNKNOWN, TERM, ABS = range(14, 21)
_AGG = {"count": 0, "sum": 1, "avg": 2, "min": 3, "max": 4, "first": 5, "last": 6}
_ARITH = {"+": 0, "-": 1, "*": 2, "/": 3, "%": 4}
_CMP = {"=": 0, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
_FUNC = {"abs": 0, "sqrt": 1, "sin": 2, "cos": 3, "asin": 4, "acos": 5}
#: a summary term's kind, by name (``conditions.IDENTITY``)
KINDS = {"sum": 0, "count": 1, "min": 2, "max": 3, "env": 4}
#: value kinds in the core: null, int, double, string (its code)
NUL, INT, FLT, STR = 0, 1, 2, 3
_CLASS = {"int": "num", "primary_time": "num", "double": "num", "string": "str"}


class StringTable:
    """Codes of the strings a group's conditions compare (code 0: the empty string). It grows with
    the distinct strings met (values of the compared attributes), as a dictionary column does.

    >>> table = StringTable(); table.code("ab"), table.code(""), table.code("ab"), table.names[1]
    (1, 0, 1, 'ab')
    """

    def __init__(self) -> None:
        self.codes: dict[str, int] = {"": 0}
        self.names: list[str] = [""]
        self.fixed = 1  # the codes ``forget`` keeps (``seal``)

    def code(self, value: str) -> int:
        """The code of ``value`` (a new one if it is new)."""
        found = self.codes.get(value)
        if found is None:
            found = self.codes[value] = len(self.names)
            self.names.append(value)
        return found

    def seal(self) -> None:
        """Keep the codes given so far (the conditions' constants) through every ``forget``."""
        self.fixed = len(self.names)

    def forget(self) -> None:
        """Drop every code given since ``seal``.

        >>> table = StringTable(); _ = table.code("const"); table.seal(); _ = table.code("id-1"); table.forget()
        >>> table.names
        ['', 'const']
        >>> table.code("id-2")
        2
        """
        for name in self.names[self.fixed :]:
            del self.codes[name]
        del self.names[self.fixed :]


class Uncompiled(Exception):
    """What keeps a query group's conditions out of the core."""


class Program:
    """Compiles conjuncts over one group's attribute classes (``classes``:
    attribute -> "num" or "str"), variables (-> index) and string codes."""

    def __init__(
        self, classes: dict[str, str], variables: dict[str, int], strings: StringTable, columns: dict[str, int]
    ) -> None:
        self.classes = classes
        self.variables = variables
        self.strings = strings
        self.columns = columns  # attribute -> its place among the stored values
        self.consts: list[tuple[int, Any]] = []

    # ------------------------------------------------------------ types
    def _type(self, expr: ast.Expr) -> str:
        if isinstance(expr, ast.NumberLiteral):
            return "num"
        if isinstance(expr, ast.StringLiteral):
            return "str"
        if isinstance(expr, ast.AttributeRef):
            if expr.variable is None:
                raise Uncompiled("a bare attribute in a cross-event condition")
            found = self.classes.get(expr.attribute)
            if found is None:
                raise Uncompiled(f"a cross-event condition on {expr.attribute}, of mixed or boolean type")
            return found
        if isinstance(expr, ast.Call):
            name = expr.function.lower()
            if name in AGGREGATES:
                arg = expr.args[0]
                if name == "count":
                    return "num"
                kind = self._type(arg)
                if kind != "num" and name not in ("first", "last"):
                    raise Uncompiled(f"{name} of a string")
                return kind
            if name in _FUNC and self._type(expr.args[0]) == "num":
                return "num"
            raise Uncompiled(f"the function {name} in a cross-event condition")
        if isinstance(expr, ast.Negate) and self._type(expr.operand) == "num":
            return "num"
        if isinstance(expr, ast.Arithmetic) and self._type(expr.left) == self._type(expr.right) == "num":
            return "num"
        if isinstance(expr, ast.Comparison):
            left, right = self._type(expr.left), self._type(expr.right)
            if left == right == "num" or (left == right == "str" and expr.op in ("=", "!=")):
                return "bool"
            raise Uncompiled("an ordered comparison of strings in a cross-event condition")
        parts = (expr.operand, expr.low, expr.high) if isinstance(expr, ast.Between) else ()
        if parts and all(self._type(e) == "num" for e in parts):
            return "bool"
        if isinstance(expr, (ast.And, ast.Or)) and self._type(expr.left) == self._type(expr.right) == "bool":
            return "bool"
        if isinstance(expr, ast.Not) and self._type(expr.operand) == "bool":
            return "bool"
        raise Uncompiled(f"{type(expr).__name__} in a cross-event condition")

    def check(self, expr: ast.Expr) -> None:
        """Raise Uncompiled unless ``expr`` is a condition the programs cover."""
        if self._type(expr) != "bool":
            raise Uncompiled("a cross-event condition that is not a truth value")

    # ------------------------------------------------------------ exact
    def _const(self, value: Any) -> int:
        entry: tuple[int, Any]
        if isinstance(value, str):
            entry = (STR, self.strings.code(value))
        elif isinstance(value, int):
            entry = (INT, value)
        else:
            entry = (FLT, float(value))
        self.consts.append(entry)
        return len(self.consts) - 1

    def _column(self, attribute: str) -> int:
        return self.columns[attribute]

    def exact(self, expr: ast.Expr) -> list[int]:
        """The program of one conjunct on exact values (ends with END)."""
        code: list[int] = []
        self._exact(expr, code)
        code.append(END)
        return code

    def _exact(self, expr: ast.Expr, code: list[int]) -> None:
        if isinstance(expr, (ast.NumberLiteral, ast.StringLiteral)):
            code += [CONST, self._const(expr.value)]
        elif isinstance(expr, ast.AttributeRef):
            assert expr.variable is not None
            code += [REF, self.variables.get(expr.variable, -1), self._column(expr.attribute)]
        elif isinstance(expr, ast.Call) and expr.function.lower() in AGGREGATES:
            name, arg = expr.function.lower(), expr.args[0]
            assert isinstance(arg, ast.AttributeRef)
            if name == "count":
                var = arg.attribute if arg.variable is None else arg.variable
                code += [AGG, 0, self.variables.get(var, -1), -1]
            else:
                var = arg.variable or ""
                code += [AGG, _AGG[name], self.variables.get(var, -1), self._column(arg.attribute)]
        elif isinstance(expr, ast.Call):
            self._exact(expr.args[0], code)
            code += [FUNC, _FUNC[expr.function.lower()]]
        elif isinstance(expr, ast.Negate):
            self._exact(expr.operand, code)
            code.append(NEG)
        elif isinstance(expr, ast.Arithmetic):
            self._exact(expr.left, code)
            self._exact(expr.right, code)
            code += [ARITH, _ARITH[expr.op]]
        elif isinstance(expr, ast.Comparison):
            self._exact(expr.left, code)
            self._exact(expr.right, code)
            code += [CMP, _CMP[expr.op]]
        elif isinstance(expr, ast.Between):
            self._exact(expr.low, code)
            self._exact(expr.operand, code)
            code.append(CHAIN1)
            at = len(code)
            code += [JCHAIN, -1]
            self._exact(expr.high, code)
            code.append(CHAIN2)
            code[at + 1] = len(code)
        elif isinstance(expr, (ast.And, ast.Or)):
            self._exact(expr.left, code)
            code.append(TRUTH)
            at = len(code)
            code += [JFALSE if isinstance(expr, ast.And) else JTRUE, -1]
            self._exact(expr.right, code)
            code += [TRUTH, AND3 if isinstance(expr, ast.And) else OR3]
            code[at + 1] = len(code)
        elif isinstance(expr, ast.Not):
            self._exact(expr.operand, code)
            code += [TRUTH, NOT]
        else:  # pragma: no cover - check() refused it
            raise Uncompiled(type(expr).__name__)

    # ------------------------------------------------------------ bounds
    def bounds(self, expr: ast.Expr, local: Terms) -> tuple[list[int], list[int]]:
        """The bound program of one conjunct on its check's local terms
        (``conditions.compile_bounds``), and the local terms it reads."""
        code: list[int] = []
        read: list[int] = []
        self._bounds(expr, local, code, read)
        code.append(END)
        return code, read

    def _bounds(self, expr: ast.Expr, local: Terms, code: list[int], read: list[int]) -> None:
        key = _term(expr)
        if key is not None:
            i = local.index(key)
            read.append(i)
            code += [TERM, i]
        elif isinstance(expr, ast.NumberLiteral):
            code += [CONST, self._const(expr.value)]
        elif isinstance(expr, ast.Negate):
            self._bounds(expr.operand, local, code, read)
            code.append(NEG)
        elif isinstance(expr, ast.Arithmetic) and expr.op in ("+", "-", "*"):
            self._bounds(expr.left, local, code, read)
            self._bounds(expr.right, local, code, read)
            code += [ARITH, _ARITH[expr.op]]
        elif isinstance(expr, ast.Call) and expr.function.lower() == "abs":
            self._bounds(expr.args[0], local, code, read)
            code.append(ABS)
        elif isinstance(expr, ast.Comparison):
            self._bounds(expr.left, local, code, read)
            self._bounds(expr.right, local, code, read)
            code += [CMP, _CMP[expr.op]]
        elif isinstance(expr, ast.Between):
            # in compile_bounds' order (its terms are numbered so): operand, low, high
            for part in (expr.operand, expr.low, expr.high):
                self._bounds(part, local, code, read)
            code.append(BETWEEN)
        elif isinstance(expr, (ast.And, ast.Or)):
            self._bounds(expr.left, local, code, read)
            self._bounds(expr.right, local, code, read)
            code.append(AND3 if isinstance(expr, ast.And) else OR3)
        elif isinstance(expr, ast.Not):
            self._bounds(expr.operand, local, code, read)
            code.append(NOT)
        else:  # strings, division, other math: unknown, its terms still read
            children = _children(expr)
            for child in children:
                self._bounds(child, local, code, read)
            code += [UNKNOWN, len(children)]


def _children(expr: ast.Expr) -> list[ast.Expr]:
    from sharp_cer.language.checker import expr_children

    return list(expr_children(expr))


def _classes(runner: Any) -> dict[str, str]:
    """Each attribute's class (num or str) where it is one in every event type of the group."""
    found: dict[str, set[str]] = {}
    for event in runner.compiled.group.event_types:
        for name, kind in event.attributes.items():
            found.setdefault(name, set()).add(_CLASS.get(kind, "other"))
    return {name: next(iter(kinds)) for name, kinds in found.items() if len(kinds) == 1 and "other" not in kinds}


def why_not(runner: Any) -> str | None:
    """Why the core cannot run the group's cross-event conditions (None: it can)."""
    try:
        compile_group(runner, StringTable())
    except Uncompiled as error:
        return f"a cross-event condition the core does not compile ({error})"
    return None


def compile_group(runner: Any, strings: StringTable) -> dict[str, Any]:
    """The tables ``Core.set_conditions`` takes for the runner's group (raises Uncompiled)."""
    compiled = runner.compiled
    summaries: Summaries = compiled.summaries
    labels = compiled.plan.labels
    classes = _classes(runner)
    names = sorted({v for names in labels for v in names if v[0] != "#"})
    columns = {a: k for k, a in enumerate(summaries.attributes)}
    program = Program(classes, {v: k for k, v in enumerate(names)}, strings, columns)
    float_sum = False
    crosses = [f for q in compiled.queries for f in q.filters] if compiled.group.basis is None else None
    if crosses is None:
        raise Uncompiled("a query group that changed while it ran")
    checks = []
    for cross, check in zip(crosses, summaries.checks, strict=True):
        local = Terms()
        exact, bounds = [], []
        for conjunct in cross.conjuncts:
            program.check(conjunct)
            float_sum = float_sum or _sums_floats(conjunct, classes)
            exact.append(program.exact(conjunct))
            bounds.append(program.bounds(conjunct, local))
        if len(local.keys) != len(check.terms):
            raise Uncompiled("terms out of step with the summaries")  # pragma: no cover
        checks.append(
            {
                "whole": check.whole,
                "tag": [check.tag in names_ for names_ in labels],
                "first": [check.first_tag in names_ for names_ in labels],
                "terms": list(check.terms),
                "codes": [JOIN_CODE[k] for k in check.kinds],
                "kinds": [KINDS[k] for k in check.kinds],
                "exact": exact,
                "bounds": bounds,
            }
        )
    if float_sum and sys.version_info >= (3, 12):
        # Python 3.12's sum() of floats compensates its rounding; the core adds plainly
        raise Uncompiled("a sum or average of doubles on Python 3.12 or later")
    plans = []
    for label in range(len(labels)):
        plans.append(
            [
                (i, ("none", "one", "value", "unknown").index(own), column, int(starts), code)
                for i, own, column, starts, code, _ in summaries._plan(label)
            ]
        )
    index = {id(c): k for k, c in enumerate(summaries.checks)}
    engine = runner.engine
    queries = [[index[id(c)] for c in compiled.checks[q.id]] for q in compiled.queries]
    return {
        "terms": len(summaries.keys),
        "identity": [_num(v) for v in (*summaries.identity[0], *summaries.identity[1])],
        "kinds": [KINDS[k[1]] for k in summaries.keys],
        "attributes": len(summaries.attributes),
        "variables": len(names),
        "labvar": [[v in names_ for v in names] for names_ in labels],
        "plans": plans,
        "checks": checks,
        "queries": queries,
        "prune": bool(engine.prune),
        "consts": program.consts,
    }


def _sums_floats(expr: ast.Expr, classes: dict[str, str]) -> bool:
    """Whether ``expr`` sums (or averages) values of a double attribute."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Call) and e.function.lower() in ("sum", "avg"):
            return True  # doubles or not: a conservative answer keeps it simple
        stack.extend(_children(e))
    return False


def _num(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool) or value is None:
        return (NUL, 0)
    if isinstance(value, int):
        return (INT, value)
    return (FLT, float(value))


def columns(runner: Any, batch: EventBatch, live: np.ndarray, strings: StringTable) -> tuple[np.ndarray, ...]:
    """The live rows' stored attributes as (kinds, ints, doubles), each (rows x attributes)."""
    attributes = runner.compiled.summaries.attributes
    n, width = len(live), max(1, len(attributes))
    kinds = np.zeros((n, width), dtype=np.int8)
    ints = np.zeros((n, width), dtype=np.int64)
    floats = np.zeros((n, width), dtype=np.float64)
    for k, name in enumerate(attributes):
        column = batch.columns.get(name)
        if column is None:
            continue
        valid = column.valid[live]
        values = column.values[live]
        if column.kind in ("int", "primary_time"):
            kinds[:, k] = np.where(valid, INT, NUL)
            ints[:, k] = values
        elif column.kind == "double":
            kinds[:, k] = np.where(valid, FLT, NUL)
            floats[:, k] = values
        elif column.kind == "string":
            kinds[:, k] = np.where(valid, STR, NUL)
            ints[:, k] = _string_codes(values, valid, strings)
        # other kinds never reach here: ``why_not`` keeps such groups on the Python path
    return kinds, ints, floats


def _string_codes(values: np.ndarray, valid: np.ndarray, strings: StringTable) -> np.ndarray:
    """The codes of the valid ``values`` (0 for the others), new strings coded in order of first sight,
    as ``strings.code`` value by value would; every loop in C (``dict.fromkeys``, ``map``): one Python
    call per value was a tenth of a run with string conditions.

    >>> table = StringTable(); _ = table.code("b")
    >>> _string_codes(np.array(["a", "b", None, "c", "a"], dtype=object), np.array([1, 1, 0, 1, 1], bool), table)
    array([2, 1, 0, 3, 2])
    """
    everywhere = bool(valid.all())
    words = (values if everywhere else values[valid]).tolist()
    codes = strings.codes
    for word in dict.fromkeys(words):
        if word not in codes:
            strings.code(word)
    found = np.fromiter(map(codes.__getitem__, words), dtype=np.int64, count=len(words))
    if everywhere:
        return found
    out = np.zeros(len(values), dtype=np.int64)
    out[valid] = found
    return out


def python_value(kind: int, i: int, f: float, names: Sequence[str]) -> Any:
    """A stored value as the Python path holds it."""
    if kind == INT:
        return i
    if kind == FLT:
        return f
    if kind == STR:
        return names[i]
    return None


def holds(runner: Any, check: int, events: list[tuple[int, tuple[Any, ...]]]) -> int:
    """``Walk._holds`` on an instance's events (label, values) in stream order: 1 holds, 0 not,
    2 out of its math domain. The core asks it where its own arithmetic would not be exact."""
    summaries = runner.compiled.summaries
    labels = summaries.labels
    env: dict[str, list[tuple[Any, ...]]] = {}
    for label, values in events:
        for var in labels[label]:
            if var[0] != "#":
                env.setdefault(var, []).append(values)
    try:
        return 1 if summaries.checks[check].holds(env) else 0
    except OutOfDomain:
        return 2


__all__ = ["IDENTITY", "StringTable", "Uncompiled", "columns", "compile_group", "holds", "python_value", "why_not"]
