"""The fast path for DEFINE conditions that read only their own row and rows
at physical offsets from it: each is evaluated once over whole columns with
numpy, and a row's variables become one code (a bit per variable), over
which the pattern's automaton (``search``) finds the matches without
backtracking. ONE ROW PER MATCH measures that read a column at a
variable's first or last row, counts and match numbers are computed for all
matches at once.

>>> import numpy as np
>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> c = parse_clause("MATCH_RECOGNIZE (PATTERN (A B+) DEFINE B AS v < PREV(v))")
>>> conds = vector_conditions(c, ["A", "B"], {"v": np.array([3.0, 2.0, 1.0, 4.0])},
...                           {"v": np.ones(4, bool)}, np.zeros(4, np.int64))
>>> conds[1].tolist()
[False, True, True, False]
>>> row_codes(conds, 4).tolist()
[1, 3, 3, 1]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import nodes


class _Unsupported(Exception):
    """The expression has a construct the column-wise evaluator does not run."""


# a column-wise value: (values, valid) — valid False is SQL NULL
Vector = tuple[np.ndarray, np.ndarray]


def _scalar(value: Any, size: int) -> Vector:
    if value is None:
        return np.zeros(size), np.zeros(size, bool)
    return np.full(size, value, dtype=object if isinstance(value, str) else None), np.ones(size, bool)


class _Evaluator:
    def __init__(self, values: dict[str, np.ndarray], valid: dict[str, np.ndarray], partition: np.ndarray) -> None:
        self.values = values
        self.valid = valid
        self.partition = partition
        self.size = len(partition)

    def shift(self, vector: Vector, by: int) -> Vector:
        """The value ``by`` rows later (earlier if negative) in the same partition."""
        values, valid = vector
        size = self.size
        out_values = np.zeros_like(values)
        out_valid = np.zeros(size, bool)
        if by < 0 and -by < size:
            out_values[-by:] = values[:by]
            out_valid[-by:] = valid[:by] & (self.partition[-by:] == self.partition[:by])
        elif by > 0 and by < size:
            out_values[:-by] = values[by:]
            out_valid[:-by] = valid[by:] & (self.partition[:-by] == self.partition[by:])
        elif by == 0:
            return vector
        return out_values, out_valid

    def expr(self, node: nodes.Expr) -> Vector:
        if isinstance(node, nodes.Literal):
            value = node.value
            if isinstance(value, int) and not isinstance(value, bool) and not _LOW <= value <= _HIGH:
                raise _Unsupported  # beyond int64: the general evaluator computes exactly
            if isinstance(value, bool | int | float | str) or value is None:
                return _scalar(value, self.size)
            raise _Unsupported
        if isinstance(node, nodes.Column):
            return self.values[node.name], self.valid[node.name]
        if isinstance(node, nodes.Call):
            return self.call(node)
        if isinstance(node, nodes.Unary):
            values, valid = self.expr(node.operand)
            if node.op == "NOT":
                return ~values.astype(bool), valid
            _no_int_minimum(values, valid)
            return -values, valid
        if isinstance(node, nodes.Binary):
            return self.binary(node)
        if isinstance(node, nodes.IsNull):
            _, valid = self.expr(node.operand)
            return (valid if node.negated else ~valid), np.ones(self.size, bool)
        if isinstance(node, nodes.Between):
            low = nodes.Binary(">=", node.operand, node.low)
            high = nodes.Binary("<=", node.operand, node.high)
            both = self.binary(nodes.Binary("AND", low, high))
            return (~both[0] if node.negated else both[0]), both[1]
        raise _Unsupported

    def call(self, node: nodes.Call) -> Vector:
        if node.name == "abs" and len(node.args) == 1:
            values, valid = self.expr(node.args[0])
            _no_int_minimum(values, valid)
            return np.abs(values), valid
        if node.name not in ("prev", "next", "last") or not node.args:
            raise _Unsupported
        offset = 1 if node.name != "last" else 0
        if len(node.args) == 2:
            arg = node.args[1]
            if not isinstance(arg, nodes.Literal) or not isinstance(arg.value, int):
                raise _Unsupported
            offset = arg.value
        target = node.args[0]
        if node.name == "last":
            if offset != 0:
                raise _Unsupported
            return self.expr(target)
        if isinstance(target, nodes.Call):
            if target.name != "last" or len(target.args) != 1:
                raise _Unsupported
            target = target.args[0]
        return self.shift(self.expr(target), -offset if node.name == "prev" else offset)

    def binary(self, node: nodes.Binary) -> Vector:
        (a, a_ok), (b, b_ok) = self.expr(node.left), self.expr(node.right)
        op = node.op
        if op in ("AND", "OR"):
            a, b = a.astype(bool), b.astype(bool)
            if op == "AND":  # false wins over unknown
                known_false = (a_ok & ~a) | (b_ok & ~b)
                return a & b & a_ok & b_ok, known_false | (a_ok & b_ok)
            known_true = (a_ok & a) | (b_ok & b)
            return known_true, known_true | (a_ok & b_ok)
        apply = _NUMPY.get(op)
        if apply is None:
            raise _Unsupported
        valid = a_ok & b_ok
        _exact_mix(a, b, valid)
        with np.errstate(all="ignore"):
            result = apply(a, b)
        if op in ("+", "-", "*") and _integers(a) and _integers(b) and _overflows(op, a, b, result, valid):
            raise _Unsupported  # numpy wraps around; the general evaluator raises the located overflow
        return result, valid


_LOW, _HIGH = -(2**63), 2**63 - 1
_EXACT_FLOAT = 2**53  # integers up to this size are exact as float64


def _integers(values: np.ndarray) -> bool:
    return values.dtype.kind in "iu"


def _no_int_minimum(values: np.ndarray, valid: np.ndarray) -> None:
    """Negating int64's minimum wraps around in numpy."""
    if _integers(values) and bool(np.any(valid & (values == np.iinfo(np.int64).min))):
        raise _Unsupported


def _exact_mix(a: np.ndarray, b: np.ndarray, valid: np.ndarray) -> None:
    """numpy compares and combines a large integer with a float as two floats;
    Python (the general evaluator) compares them exactly."""
    for ints, other in ((a, b), (b, a)):
        big = _integers(ints) and other.dtype.kind == "f" and np.any(valid & (np.abs(ints) > _EXACT_FLOAT))
        if big:
            raise _Unsupported


def _overflows(op: str, a: np.ndarray, b: np.ndarray, result: np.ndarray, valid: np.ndarray) -> bool:
    """Did an int64 ``a op b`` wrap around on a valid row?"""
    if result.dtype != np.int64:
        return True  # uint64 or mixed signedness: leave it to the exact evaluator
    a, b = np.broadcast_to(a, result.shape), np.broadcast_to(b, result.shape)
    if op == "+":
        wrapped = ((a ^ result) & (b ^ result)) < 0
    elif op == "-":
        wrapped = ((a ^ b) & (a ^ result)) < 0
    else:
        wrapped = np.abs(a.astype(np.float64) * b.astype(np.float64)) >= 2.0**62  # near the edge: exact path
    return bool(np.any(wrapped & valid))


_NUMPY: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "=": np.equal,
    "<>": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def vector_conditions(
    clause: nodes.Clause,
    variables: list[str],
    values: dict[str, np.ndarray],
    valid: dict[str, np.ndarray],
    partition: np.ndarray,
) -> list[np.ndarray | None] | None:
    """Each variable's condition over all rows (None: undefined, always true),
    or None if some condition has a construct the column-wise evaluator lacks.
    Only call it with row-local conditions."""
    evaluator = _Evaluator(values, valid, partition)
    out: list[np.ndarray | None] = [None] * len(variables)
    try:
        for definition in clause.definitions:
            result, known = evaluator.expr(definition.condition)
            out[variables.index(definition.variable)] = np.asarray(result, dtype=bool) & known
    except (_Unsupported, TypeError, OverflowError):
        return None
    return out


def row_codes(conditions: Sequence[np.ndarray | None], size: int) -> np.ndarray:
    """One code per row: bit ``i`` set when variable ``i``'s condition holds."""
    codes = np.zeros(size, np.int64)
    for i, condition in enumerate(conditions):
        codes |= (np.ones(size, bool) if condition is None else condition).astype(np.int64) << i
    return codes


# --- ONE ROW PER MATCH measures over all matches at once ----------------------


@dataclass(frozen=True)
class Locator:
    """A measure that reads one column at the first or last row of a set of
    variables (None: any row) in the whole match, moved ``shift`` rows."""

    column: str
    members: frozenset[int] | None
    from_last: bool
    shift: int


@dataclass(frozen=True)
class Counter:
    """``COUNT(*)`` or ``COUNT(v.*)``."""

    members: frozenset[int] | None


class MatchNumber:
    """``MATCH_NUMBER()``."""


Plan = Locator | Counter | MatchNumber


def measure_plan(node: nodes.Expr, sets: dict[str, frozenset[int]]) -> Plan | None:
    """The column-wise plan of a ONE ROW PER MATCH measure, or None if it
    needs the general evaluator."""
    shift = 0
    if isinstance(node, nodes.Call) and node.name in ("prev", "next") and node.args:
        if len(node.args) == 2:
            arg = node.args[1]
            if not isinstance(arg, nodes.Literal) or not isinstance(arg.value, int):
                return None
            shift = arg.value
        elif len(node.args) != 1:
            return None
        else:
            shift = 1
        if shift > 2**31:
            return None  # numpy would wrap the moved row around; the general evaluator gives NULL
        shift = -shift if node.name == "prev" else shift
        node = node.args[0]
    from_last = True
    if isinstance(node, nodes.Call) and node.name in ("first", "last") and len(node.args) == 1:
        from_last = node.name == "last"
        node = node.args[0]
    if isinstance(node, nodes.Column):
        return Locator(node.name, None if node.variable is None else sets[node.variable], from_last, shift)
    if shift or not from_last:
        return None
    if isinstance(node, nodes.Call) and node.name == "match_number" and not node.args:
        return MatchNumber()
    if isinstance(node, nodes.Call) and node.name == "count" and len(node.args) <= 1:
        star = node.args[0] if node.args else nodes.Star(None)
        if isinstance(star, nodes.Star):
            return Counter(None if star.variable is None else sets[star.variable])
    return None


def plan_rows(
    plan: Locator, starts: np.ndarray, ends: np.ndarray, spans: np.ndarray, groups: tuple[int, ...]
) -> np.ndarray:
    """Each match's row for a locator (-1: none); ``spans[m, g]`` is group g's
    (begin, end) in match m, begin -1 when the group took no part."""
    if plan.members is None:
        rows = ends - 1 if plan.from_last else starts.copy()
        rows[ends == starts] = -1
        return rows
    chosen = [g for g, v in enumerate(groups) if v in plan.members]
    if not chosen:
        return np.full(len(starts), -1)
    begins, finishes = spans[:, chosen, 0], spans[:, chosen, 1]
    used = (begins >= 0) & (finishes > begins)  # a quantified group can take part with no row
    if plan.from_last:
        return np.asarray(np.where(used, finishes - 1, -1).max(axis=1))
    big = np.iinfo(np.int64).max
    first = np.where(used, begins, big).min(axis=1)
    return np.where(first == big, -1, first)


def plan_counts(plan: Counter, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each match's row count for ``COUNT(*)``/``COUNT(v.*)``; ``counts[m, v]``
    is variable v's row count in match m."""
    if plan.members is None:
        return np.asarray(ends - starts)
    return np.asarray(counts[:, sorted(plan.members)].sum(axis=1))
