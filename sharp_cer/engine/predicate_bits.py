"""Evaluating the plan's predicate table on a batch: one bool column per atom.

Every atom of the table is evaluated once per batch, over the whole batch at
once (``engine.column_conditions``): a type atom is a comparison of type codes; a
condition atom is evaluated with numpy on the rows of its own type only. A
condition whose math is out of its domain (``asin(2)``, ``sqrt(-1)``,
division by zero) is false and counted; so is one that reads an attribute the
event's type lacks. A null attribute is read with SQL's three-valued logic
(the reference evaluator's rule 6): the condition holds only where it is
true, never where it is unknown. Should numpy ever refuse a condition, its rows are
evaluated one by one by the scalar evaluator below, with the same meaning.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from sharp_cer.planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A FILTER A[x > 1] WITHIN 1 EVENTS", s))])
>>> batch, _ = load_csv("A,1\\nA,5\\n", s)
>>> bits = PredicateBits(plan.predicates, batch.event_types)
>>> {atom: column.tolist() for atom, column in bits.evaluate(batch).items()}
{0: [True, True], 1: [False, True]}
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from sharp_cer.errors import EngineError
from sharp_cer.events.batch import EventBatch
from sharp_cer.language import EventSchema, ast
from sharp_cer.language.truth import and3, or3, truth
from sharp_cer.planner.predicates import ConditionAtom, PredicateTable, TypeAtom

from .column_conditions import Rows, VectorEvaluator, compile_vector, holds
from .symbols import AtomColumns

#: Reads attribute values of the event being evaluated.
Getter = Callable[[str], Any]
#: Evaluates a compiled condition on its context (a Getter, for one event).
Evaluator = Callable[[Any], Any]


class OutOfDomain(Exception):
    """Math outside its domain, or a missing attribute: the atom is false.

    >>> compile_condition(ast.Call("sqrt", (ast.NumberLiteral(-1),)))(lambda name: 0)
    Traceback (most recent call last):
    ...
    sharp_cer.engine.predicate_bits.OutOfDomain
    """


class PredicateBits:
    """Evaluates a plan's atoms on batches loaded with one schema layout
    (``event_types``, in code order); see the module example.

    ``checks`` counts condition evaluations (one per condition atom and
    event of its type), ``domain_errors`` the ones that were out of domain,
    ``scalar_rows`` the rows numpy refused (evaluated one by one instead).

    >>> PredicateBits(PredicateTable(), ()).checks_per_type
    []
    """

    def __init__(self, table: PredicateTable, event_types: tuple[EventSchema, ...]) -> None:
        self.table = table
        self.event_types = event_types
        self.domain_errors = 0
        self.checks = 0
        self.scalar_rows = 0
        by_type = {(e.stream, e.name): code for code, e in enumerate(event_types)}
        self.type_atoms: list[tuple[int, int]] = []  # (atom, type code)
        self.condition_atoms: list[tuple[int, int, VectorEvaluator | None, Evaluator]] = []
        self.checks_per_type = [0] * len(event_types)
        for index, atom in enumerate(table.atoms):
            code = by_type.get((atom.stream, atom.name))
            if code is None:
                continue  # a type this layout never carries: the atom never holds
            if isinstance(atom, TypeAtom):
                self.type_atoms.append((index, code))
            else:
                assert isinstance(atom, ConditionAtom)
                try:
                    vector: VectorEvaluator | None = compile_vector(atom.condition)
                except TypeError:
                    vector = None
                self.condition_atoms.append((index, code, vector, compile_condition(atom.condition)))
                self.checks_per_type[code] += 1
        self.absent = [i for i, a in enumerate(table.atoms) if (a.stream, a.name) not in by_type]

    def evaluate(self, batch: EventBatch) -> AtomColumns:
        """Every atom's column over ``batch`` (see the module example).

        >>> from sharp_cer.events.batch import EventBatch
        >>> empty = EventBatch((), np.array([], dtype=np.int64), np.array([], dtype=np.int32))
        >>> PredicateBits(PredicateTable(), ()).evaluate(empty)
        {}
        """
        if batch.event_types != self.event_types:
            raise EngineError(
                "a batch was loaded with another schema than the engine's first batch\n"
                "  hint: load every batch of one stream with the same schema"
            )
        n = len(batch)
        codes = batch.codes
        out: AtomColumns = {index: np.zeros(n, dtype=bool) for index in self.absent}
        of_type: dict[int, npt.NDArray[np.bool_]] = {}
        for index, code in self.type_atoms:
            out[index] = of_type.setdefault(code, codes == code)
        rows_of: dict[int, tuple[npt.NDArray[np.intp], Rows]] = {}
        for index, code, vector, scalar in self.condition_atoms:
            if code not in rows_of:
                where = np.flatnonzero(of_type.setdefault(code, codes == code))
                rows_of[code] = (where, Rows(len(where), batch.columns, where))
            where, rows = rows_of[code]
            column = np.zeros(n, dtype=bool)
            column[where] = self._holds(vector, scalar, rows)
            out[index] = column
            self.checks += rows.size
        return out

    def _holds(self, vector: VectorEvaluator | None, scalar: Evaluator, rows: Rows) -> npt.NDArray[np.bool_]:
        if vector is not None:
            try:
                values, errors, nulls = vector(rows)
                errors = np.broadcast_to(np.asarray(errors, dtype=bool), (rows.size,))
                found = holds(values, errors, rows.size, nulls)
            except (TypeError, ValueError, ArithmeticError, LookupError, NotImplementedError):
                pass  # numpy refused: the scalar evaluator decides, row by row
            else:
                self.domain_errors += int(errors.sum())
                return found
        self.scalar_rows += rows.size
        taken = {name: rows.column(name) for name in rows.columns}
        columns = {name: (c.values.tolist(), c.valid.tolist()) for name, c in taken.items() if c is not None}
        found = np.zeros(rows.size, dtype=bool)
        for i in range(rows.size):

            def get(attribute: str, i: int = i) -> Any:
                column = columns.get(attribute)
                if column is None:
                    raise OutOfDomain()
                return column[0][i] if column[1][i] else None  # the type declares it: not valid is null

            try:
                found[i] = bool(scalar(get))
            except OutOfDomain:
                self.domain_errors += 1
        return found


def compile_condition(expr: ast.Expr, leaf: Callable[[ast.Expr], Evaluator | None] | None = None) -> Evaluator:
    """A closure evaluating a condition on a context: by default a one-event
    condition on an attribute getter. ``leaf`` compiles the nodes it knows
    (returning None for the others), for evaluators with another context,
    such as the cross-event conditions of ``engine.conditions``.

    >>> from sharp_cer.language import parse_query
    >>> cond = parse_query("SELECT * WHERE A FILTER A[x % 3 = 1 AND name LIKE '^a']").pattern.condition.condition
    >>> f = compile_condition(cond)
    >>> f({"x": 4, "name": "ab"}.__getitem__), f({"x": -2, "name": "ab"}.__getitem__)
    (True, False)
    """
    if leaf is not None:
        special = leaf(expr)
        if special is not None:
            return special

    def sub(e: ast.Expr) -> Evaluator:
        return compile_condition(e, leaf)

    if isinstance(expr, (ast.NumberLiteral, ast.StringLiteral, ast.BoolLiteral)):
        constant = expr.value
        return lambda ctx: constant
    if isinstance(expr, ast.AttributeRef):
        name = expr.attribute
        return lambda get: get(name)
    # Nulls (None) follow SQL's three-valued logic, as the reference evaluator's rule 6 says:
    # None is also the truth value unknown, which holds nowhere (``bool(None)`` is False)
    if isinstance(expr, ast.Negate):
        operand = sub(expr.operand)
        return lambda ctx: _null_or(operand(ctx), lambda x: -x)
    if isinstance(expr, ast.Not):
        operand = sub(expr.operand)
        return lambda ctx: _null_or(truth(operand(ctx)), lambda x: not x)
    if isinstance(expr, ast.And):
        left, right = sub(expr.left), sub(expr.right)
        return lambda ctx: (lambda a: False if a is False else and3(a, truth(right(ctx))))(truth(left(ctx)))
    if isinstance(expr, ast.Or):
        left, right = sub(expr.left), sub(expr.right)
        return lambda ctx: (lambda a: True if a is True else or3(a, truth(right(ctx))))(truth(left(ctx)))
    if isinstance(expr, ast.Arithmetic):
        left, right, arith = sub(expr.left), sub(expr.right), _ARITHMETIC[expr.op]
        return lambda ctx: _both(left(ctx), right(ctx), arith)
    if isinstance(expr, ast.Comparison):
        left, right, compare = sub(expr.left), sub(expr.right), _COMPARE[expr.op]
        return lambda ctx: _both(left(ctx), right(ctx), compare)
    if isinstance(expr, ast.InSet):
        operand, negated = sub(expr.operand), expr.negated
        items = [sub(v) for v in expr.values]
        return lambda ctx: _null_or(operand(ctx), lambda x: any(x == item(ctx) for item in items) != negated)
    if isinstance(expr, ast.InInterval):
        operand, negated = sub(expr.operand), expr.negated
        low = sub(expr.low) if expr.low is not None else (lambda ctx: -math.inf)
        high = sub(expr.high) if expr.high is not None else (lambda ctx: math.inf)
        inside = _chain(low, operand, high)
        return lambda ctx: _null_or(inside(ctx), lambda x: x != negated)
    if isinstance(expr, ast.Between):
        return _chain(sub(expr.low), sub(expr.operand), sub(expr.high))
    if isinstance(expr, ast.Like):
        operand, pattern = sub(expr.operand), re.compile(expr.pattern)
        return lambda ctx: _null_or(operand(ctx), lambda x: pattern.search(x) is not None)
    if isinstance(expr, ast.Call):
        operand, function = sub(expr.args[0]), _MATH[expr.function.lower()]
        return lambda ctx: _null_or(operand(ctx), function)
    raise TypeError(f"not a condition this evaluator knows: {expr!r}")


def _null_or(value: Any, f: Callable[[Any], Any]) -> Any:
    return None if value is None else f(value)


def _both(left: Any, right: Any, f: Callable[[Any, Any], Any]) -> Any:
    return None if left is None or right is None else f(left, right)


def _chain(low: Evaluator, operand: Evaluator, high: Evaluator) -> Evaluator:
    """``low <= x <= high``: high is read unless ``low <= x`` is false."""

    def evaluate(ctx: Any) -> Any:
        lo, x = low(ctx), operand(ctx)
        above = _both(lo, x, _COMPARE["<="])
        return False if above is False else and3(above, _both(x, high(ctx), _COMPARE["<="]))

    return evaluate


def _checked_math(function: Callable[[float], float]) -> Callable[[Any], Any]:
    def apply(x: Any) -> Any:
        try:
            return function(x)
        except ValueError:
            raise OutOfDomain() from None

    return apply


_MATH: dict[str, Callable[[Any], Any]] = {
    "abs": abs,
    "sqrt": _checked_math(math.sqrt),
    "sin": _checked_math(math.sin),
    "cos": _checked_math(math.cos),
    "asin": _checked_math(math.asin),
    "acos": _checked_math(math.acos),
}


def _divide(left: Any, right: Any) -> Any:
    if right == 0:
        raise OutOfDomain()
    return left / right


def _modulo(left: Any, right: Any) -> Any:
    # Truncates toward zero, as CORE's C++ engine does.
    if right == 0:
        raise OutOfDomain()
    try:
        remainder = math.fmod(left, right)
    except ValueError:  # an infinite dividend
        raise OutOfDomain() from None
    return int(remainder) if isinstance(left, int) and isinstance(right, int) else remainder


_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _divide,
    "%": _modulo,
}

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: bool(a == b),
    "!=": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}
