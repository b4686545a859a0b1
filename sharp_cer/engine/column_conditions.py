"""One-event conditions evaluated over many rows at once, with numpy.

``compile_vector`` turns a condition into a function of :class:`Rows` (the
events of one type in a batch) that returns ``(values, errors, nulls)``: the value
of every row, a mask of the rows where the scalar evaluator
(``engine.predicate_bits.compile_condition``) would have raised ``OutOfDomain``
(math outside its domain, a missing attribute), and a mask of the rows where
it is null (SQL's unknown, for a truth value: a null read, and what follows
from it by three-valued logic). The semantics are the
scalar evaluator's, row for row: AND and OR only report an error from their
right side where Python's short circuit would have evaluated it; integer
arithmetic that could overflow 64 bits switches to Python integers; LIKE runs
through pyarrow's vectorized RE2 search.

>>> import numpy as np
>>> from sharp_cer.events.batch import Column
>>> from sharp_cer.language import parse_query
>>> cond = parse_query("SELECT * WHERE A FILTER A[10 / x > 2 AND name LIKE '^a']").pattern.condition.condition
>>> rows = Rows(3, {"x": Column("int", np.array([4, 0, 2]), np.ones(3, bool)),
...                 "name": Column("string", np.array(["ab", "ab", "b"], dtype=object), np.ones(3, bool))})
>>> values, errors, nulls = compile_vector(cond)(rows)
>>> holds(values, errors, 3, nulls).tolist(), errors.tolist()
([True, False, False], [False, True, False])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from sharp_cer.events import arrow_compute as compute
from sharp_cer.events import arrow_numpy
from sharp_cer.events.batch import Column
from sharp_cer.language import ast

#: A vectorized value: a numpy array (or a scalar, for constants), an error
#: mask and a null mask (each a bool array, or False for none). Where a row is
#: null its value is a filler that raises nothing.
Vector = tuple[Any, Any, Any]
VectorEvaluator = Callable[["Rows"], Vector]

# Integer results below this bound in magnitude cannot have overflowed int64.
_SAFE_INT = 2**62


class Rows:
    """The attribute columns of ``size`` rows: the rows ``where`` of a
    batch's columns (every row when ``where`` is None), taken on first read;
    a missing column reads as an error on every row, and a row where a column
    is not valid as a null (the rows are of one type, which declares what its
    conditions read).

    >>> Rows(2, {}).column("x") is None
    True
    """

    __slots__ = ("_taken", "columns", "size", "where")

    def __init__(self, size: int, columns: dict[str, Column], where: npt.NDArray[np.intp] | None = None) -> None:
        self.size = size
        self.columns = columns
        self.where = where
        self._taken: dict[str, Column] = {}

    def column(self, name: str) -> Column | None:
        """The column ``name`` on these rows, or None."""
        column = self.columns.get(name)
        if column is None or self.where is None:
            return column
        taken = self._taken.get(name)
        if taken is None:
            taken = self._taken[name] = Column(column.kind, column.values[self.where], column.valid[self.where])
        return taken


def holds(values: Any, errors: Any, size: int, nulls: Any = False) -> npt.NDArray[np.bool_]:
    """Rows where a condition is true (not unknown) and raised nothing.

    >>> holds(np.array([1, 0, 2, 3]), np.array([False, False, True, False]), 4, np.array([0, 0, 0, 1], bool)).tolist()
    [True, False, False, False]
    """
    found = truthy(values) & ~np.asarray(errors, dtype=bool) & ~np.asarray(nulls, dtype=bool)
    return np.broadcast_to(found, (size,))


def truthy(values: Any) -> Any:
    """Python's ``bool`` of every value (NaN is true, as in Python).

    >>> truthy(np.array([0.0, np.nan, 2.0])).tolist(), truthy(np.array(["", "a"], dtype=object)).tolist()
    ([False, True, True], [False, True])
    """
    if not isinstance(values, np.ndarray):
        return bool(values)
    if values.dtype == np.bool_:
        return values
    if values.dtype == object:
        return np.fromiter(map(bool, values), dtype=bool, count=values.size)
    return values != 0


def compile_vector(expr: ast.Expr) -> VectorEvaluator:
    """A function computing ``expr`` on every row of a :class:`Rows` (see the
    module example). Raises TypeError for a node no one-event condition has.

    >>> compile_vector(ast.NumberLiteral(3))(Rows(2, {}))
    (3, False, False)
    """
    if isinstance(expr, (ast.NumberLiteral, ast.StringLiteral, ast.BoolLiteral)):
        constant = expr.value
        return lambda rows: (constant, False, False)
    if isinstance(expr, ast.AttributeRef):
        return _attribute(expr.attribute)
    if isinstance(expr, ast.Negate):
        operand = compile_vector(expr.operand)
        return lambda rows: _negate(*operand(rows))
    if isinstance(expr, ast.Not):
        operand = compile_vector(expr.operand)
        return lambda rows: _not(*operand(rows))
    if isinstance(expr, (ast.And, ast.Or)):
        return _logic(compile_vector(expr.left), compile_vector(expr.right), isinstance(expr, ast.And))
    if isinstance(expr, ast.Arithmetic):
        return _arithmetic(compile_vector(expr.left), compile_vector(expr.right), expr.op)
    if isinstance(expr, ast.Comparison):
        return _comparison(compile_vector(expr.left), compile_vector(expr.right), _COMPARE[expr.op])
    if isinstance(expr, ast.InSet):
        return _in_set(compile_vector(expr.operand), [compile_vector(v) for v in expr.values], expr.negated)
    if isinstance(expr, ast.InInterval):
        low = compile_vector(expr.low) if expr.low is not None else (lambda rows: (-np.inf, False, False))
        high = compile_vector(expr.high) if expr.high is not None else (lambda rows: (np.inf, False, False))
        return _chain(low, compile_vector(expr.operand), high, expr.negated)
    if isinstance(expr, ast.Between):
        return _chain(compile_vector(expr.low), compile_vector(expr.operand), compile_vector(expr.high), False)
    if isinstance(expr, ast.Like):
        return _like(compile_vector(expr.operand), expr.pattern)
    if isinstance(expr, ast.Call):
        return _call(compile_vector(expr.args[0]), expr.function.lower())
    raise TypeError(f"not a condition this evaluator knows: {expr!r}")


def _attribute(name: str) -> VectorEvaluator:
    def read(rows: Rows) -> Vector:
        column = rows.column(name)
        if column is None:
            return np.zeros(rows.size), np.ones(rows.size, dtype=bool), False
        values = column.values
        if column.valid.all():
            return values, False, False
        if values.dtype == object:  # strings: None where null would break comparisons
            values = np.where(column.valid, values, "")
        elif values.dtype.kind == "f":  # a null double's filler is NaN: 0 keeps math quiet
            values = np.where(column.valid, values, 0.0)
        return values, False, ~column.valid

    return read


def _either(a: Any, b: Any) -> Any:
    return a | b if a is not False else b


def _negate(values: Any, errors: Any, nulls: Any) -> Vector:
    return -_exact(values, values, "-"), errors, nulls


def _not(values: Any, errors: Any, nulls: Any) -> Vector:
    return ~np.asarray(truthy(values)), errors, nulls


def _logic(left: VectorEvaluator, right: VectorEvaluator, conjunction: bool) -> VectorEvaluator:
    # SQL's AND and OR: a side that is false (AND) or true (OR) decides, else unknown wins
    def evaluate(rows: Rows) -> Vector:
        lv, le, ln = left(rows)
        rv, re_, rn = right(rows)
        lt, rt = np.asarray(truthy(lv)), np.asarray(truthy(rv))
        ln, rn = np.asarray(ln, dtype=bool), np.asarray(rn, dtype=bool)
        if conjunction:
            decided = (~lt & ~ln) | (~rt & ~rn)  # a false side
            value = lt & rt
        else:
            decided = (lt & ~ln) | (rt & ~rn)  # a true side
            value = lt | rt
        nulls = (ln | rn) & ~decided
        # the right side runs only where the left does not decide alone
        reached = ~(~lt & ~ln) if conjunction else ~(lt & ~ln)
        errors = _either(le, reached & re_) if re_ is not False else le
        return value, errors, nulls if nulls.any() else False

    return evaluate


def _is_int(values: Any) -> bool:
    if isinstance(values, np.ndarray):
        return values.dtype.kind in "iub" or (values.dtype == object and all(isinstance(v, int) for v in values))
    return isinstance(values, int)


def _magnitude(values: Any) -> float:
    if isinstance(values, np.ndarray):
        return float(np.abs(values.astype(float)).max()) if values.size else 0.0
    return float(abs(values))


def _exact(a: Any, b: Any, op: str) -> Any:
    """``a`` as Python integers (an object array) when ``a op b`` on int64
    could overflow; unchanged otherwise."""
    if not isinstance(a, np.ndarray) or a.dtype == object or not (_is_int(a) and _is_int(b)):
        return a
    bound = _magnitude(a) * _magnitude(b) if op == "*" else _magnitude(a) + _magnitude(b)
    return a.astype(object) if bound >= _SAFE_INT else a


def _nulls(a: Any, b: Any) -> Any:
    return _either(a, b) if b is not False else a


def _not_null(mask: Any, nulls: Any) -> Any:
    """``mask`` where no operand is null: an operation on a null raises nothing."""
    return mask if nulls is False else mask & ~nulls


def _arithmetic(left: VectorEvaluator, right: VectorEvaluator, op: str) -> VectorEvaluator:
    def evaluate(rows: Rows) -> Vector:
        lv, le, ln = left(rows)
        rv, re_, rn = right(rows)
        errors, nulls = _either(le, re_), _nulls(ln, rn)
        if op in "+-*":
            lv, rv = _exact(lv, rv, op), _exact(rv, lv, op)
            with np.errstate(all="ignore"):  # inf - inf is NaN, as in Python
                return (lv + rv if op == "+" else lv - rv if op == "-" else lv * rv), errors, nulls
        zero = np.asarray(rv == 0)
        divisor = np.where(zero, 1, rv)
        if op == "/":
            with np.errstate(all="ignore"):
                return np.true_divide(lv, divisor), _either(errors, _not_null(zero, nulls)), nulls
        # % truncates toward zero through floats, as math.fmod does; fmod of
        # an infinity is a domain error there too
        as_float = np.asarray(lv, dtype=float)
        bad = zero | np.isinf(as_float)
        with np.errstate(all="ignore"):
            remainder = np.fmod(np.where(bad, 0.0, as_float), np.asarray(divisor, dtype=float))
        if _is_int(lv) and _is_int(rv):
            remainder = remainder.astype(np.int64)
        return remainder, _either(errors, _not_null(bad, nulls)), nulls

    return evaluate


def _comparison(left: VectorEvaluator, right: VectorEvaluator, compare: Callable[[Any, Any], Any]) -> VectorEvaluator:
    def evaluate(rows: Rows) -> Vector:
        lv, le, ln = left(rows)
        rv, re_, rn = right(rows)
        with np.errstate(all="ignore"):
            return np.asarray(compare(lv, rv), dtype=bool), _either(le, re_), _nulls(ln, rn)

    return evaluate


def _in_set(operand: VectorEvaluator, items: list[VectorEvaluator], negated: bool) -> VectorEvaluator:
    def evaluate(rows: Rows) -> Vector:
        values, errors, nulls = operand(rows)
        found: Any = False
        for item in items:  # literals: they raise nothing and are never null
            found = found | np.asarray(values == item(rows)[0], dtype=bool)
        return np.asarray(found, dtype=bool) != negated, errors, nulls

    return evaluate


def _chain(low: VectorEvaluator, operand: VectorEvaluator, high: VectorEvaluator, negated: bool) -> VectorEvaluator:
    # low <= x <= high, SQL's AND of the two tests: high is read unless low <= x is false
    def evaluate(rows: Rows) -> Vector:
        lv, le, ln = low(rows)
        ov, oe, on = operand(rows)
        hv, he, hn = high(rows)
        with np.errstate(all="ignore"):
            above = np.asarray(lv <= ov, dtype=bool)
            below = np.asarray(ov <= hv, dtype=bool)
        above_null = np.asarray(_nulls(ln, on), dtype=bool)
        below_null = np.asarray(_nulls(on, hn), dtype=bool)
        errors = _either(le, oe)
        if he is not False:
            errors = _either(errors, (above | above_null) & he)
        decided = (~above & ~above_null) | (~below & ~below_null)
        nulls = (above_null | below_null) & ~decided
        return (above & below) != negated, errors, nulls if nulls.any() else False

    return evaluate


#: texts ``_like`` looks at to judge whether a column's texts repeat
_SAMPLE = 1024


def _like(operand: VectorEvaluator, pattern: str) -> VectorEvaluator:
    def evaluate(rows: Rows) -> Vector:
        values, errors, nulls = operand(rows)
        texts = np.broadcast_to(values, (rows.size,)).tolist()
        # where a column holds few distinct texts (kinds, places), each is matched once, every loop in C
        # (a text's match does not depend on its row); where the first ones are mostly distinct (ids), all
        distinct = texts if len(set(texts[:_SAMPLE])) > _SAMPLE // 2 else list(dict.fromkeys(texts))
        # through arrow_numpy, not pa.array/to_numpy: those import pandas
        matched = compute.match_substring_regex(arrow_numpy.strings(distinct), pattern)
        found = arrow_numpy.to_numpy(matched, False).astype(bool)
        if len(distinct) == len(texts):
            return found, errors, nulls
        index = {text: k for k, text in enumerate(distinct)}
        return found[np.fromiter(map(index.__getitem__, texts), dtype=np.intp, count=len(texts))], errors, nulls

    return evaluate


def _call(operand: VectorEvaluator, function: str) -> VectorEvaluator:
    if function not in _DOMAIN:
        raise TypeError(f"not a function this evaluator knows: {function}")

    def evaluate(rows: Rows) -> Vector:
        values, errors, nulls = operand(rows)
        if function == "abs":  # abs of the smallest int64 leaves int64, as negation does
            return np.abs(_exact(values, values, "-")), errors, nulls
        x = np.asarray(values, dtype=float)
        outside = _DOMAIN[function](x)
        with np.errstate(all="ignore"):
            return _FUNCTIONS[function](np.where(outside, 0.0, x)), _either(errors, _not_null(outside, nulls)), nulls

    return evaluate


# Where math's functions raise ValueError (NaN passes through them).
_DOMAIN: dict[str, Callable[[Any], Any]] = {
    "abs": lambda x: False,
    "sqrt": lambda x: x < 0,
    "sin": np.isinf,
    "cos": np.isinf,
    "asin": lambda x: np.abs(x) > 1,
    "acos": lambda x: np.abs(x) > 1,
}
_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "asin": np.arcsin,
    "acos": np.arccos,
}
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
