"""Evaluating the plan's predicate table on events: one bit vector per event.

Bit ``i`` of an event's vector is set when atom ``i`` of the plan's table
holds for it. Type atoms come from the event's type code; condition atoms
are evaluated only on events of their own type. A condition whose math is
out of its domain (``asin(2)``, ``sqrt(-1)``, division by zero) is false and
counted; so is one that reads an attribute the event does not have.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A FILTER A[x > 1] WITHIN 1 EVENTS", s))])
>>> batch, _ = load_csv("A,1\\nA,5\\n", s)
>>> bits = PredicateBits(plan.predicates, batch.event_types)
>>> bits.compute(batch)
[1, 3]
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from planner.predicates import ConditionAtom, PredicateTable, TypeAtom
from sharp_cer.errors import EngineError
from sharp_cer.events.batch import EventBatch
from sharp_cer.language import EventSchema, ast

#: Reads attribute values of the event being evaluated.
Getter = Callable[[str], Any]
#: Evaluates a compiled condition on its context (a Getter, for one event).
Evaluator = Callable[[Any], Any]


class OutOfDomain(Exception):
    """Math outside its domain, or a missing attribute: the atom is false.

    >>> compile_condition(ast.Call("sqrt", (ast.NumberLiteral(-1),)))(lambda name: 0)
    Traceback (most recent call last):
    ...
    sharp_cer.engine.predicates.OutOfDomain
    """


class PredicateBits:
    """Computes bit vectors for the events of batches loaded with one schema
    layout (``event_types``, in code order); see the module example.

    >>> PredicateBits(PredicateTable(), ()).type_bits
    []
    """

    def __init__(self, table: PredicateTable, event_types: tuple[EventSchema, ...]) -> None:
        self.table = table
        self.event_types = event_types
        self.domain_errors = 0
        self.checks = 0
        by_type = {(e.stream, e.name): code for code, e in enumerate(event_types)}
        self.type_bits = [0] * len(event_types)
        self.conditions: list[list[tuple[int, Evaluator]]] = [[] for _ in event_types]
        for index, atom in enumerate(table.atoms):
            code = by_type.get((atom.stream, atom.name))
            if code is None:
                continue  # a type this layout never carries
            if isinstance(atom, TypeAtom):
                self.type_bits[code] |= 1 << index
            else:
                assert isinstance(atom, ConditionAtom)
                self.conditions[code].append((index, compile_condition(atom.condition)))

    def compute(self, batch: EventBatch) -> list[int]:
        """The bit vector of every event of ``batch`` (see the module example).

        >>> from sharp_cer.events.batch import EventBatch
        >>> import numpy as np
        >>> empty = EventBatch((), np.array([], dtype=np.int64), np.array([], dtype=np.int32))
        >>> PredicateBits(PredicateTable(), ()).compute(empty)
        []
        """
        if batch.event_types != self.event_types:
            raise EngineError(
                "a batch was loaded with another schema than the engine's first batch\n"
                "  hint: load every batch of one stream with the same schema"
            )
        codes = batch.codes.tolist()
        columns = {name: (c.values.tolist(), c.valid.tolist()) for name, c in batch.columns.items()}
        out = []
        for i, code in enumerate(codes):
            bits = self.type_bits[code]
            checks = self.conditions[code]
            if checks:

                def get(attribute: str, i: int = i) -> Any:
                    column = columns.get(attribute)
                    if column is None or not column[1][i]:
                        raise OutOfDomain()
                    return column[0][i]

                for index, evaluate in checks:
                    self.checks += 1
                    try:
                        if evaluate(get):
                            bits |= 1 << index
                    except OutOfDomain:
                        self.domain_errors += 1
            out.append(bits)
        return out


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
    if isinstance(expr, ast.Negate):
        operand = sub(expr.operand)
        return lambda ctx: -operand(ctx)
    if isinstance(expr, ast.Not):
        operand = sub(expr.operand)
        return lambda ctx: not operand(ctx)
    if isinstance(expr, ast.And):
        left, right = sub(expr.left), sub(expr.right)
        return lambda ctx: bool(left(ctx)) and bool(right(ctx))
    if isinstance(expr, ast.Or):
        left, right = sub(expr.left), sub(expr.right)
        return lambda ctx: bool(left(ctx)) or bool(right(ctx))
    if isinstance(expr, ast.Arithmetic):
        left, right, arith = sub(expr.left), sub(expr.right), _ARITHMETIC[expr.op]
        return lambda ctx: arith(left(ctx), right(ctx))
    if isinstance(expr, ast.Comparison):
        left, right, compare = sub(expr.left), sub(expr.right), _COMPARE[expr.op]
        return lambda ctx: compare(left(ctx), right(ctx))
    if isinstance(expr, ast.InSet):
        operand, negated = sub(expr.operand), expr.negated
        items = [sub(v) for v in expr.values]
        return lambda ctx: (lambda x: any(x == item(ctx) for item in items))(operand(ctx)) != negated
    if isinstance(expr, ast.InInterval):
        operand, negated = sub(expr.operand), expr.negated
        low = sub(expr.low) if expr.low is not None else (lambda ctx: -math.inf)
        high = sub(expr.high) if expr.high is not None else (lambda ctx: math.inf)
        return lambda ctx: (low(ctx) <= operand(ctx) <= high(ctx)) != negated
    if isinstance(expr, ast.Between):
        operand, low, high = sub(expr.operand), sub(expr.low), sub(expr.high)
        return lambda ctx: low(ctx) <= operand(ctx) <= high(ctx)
    if isinstance(expr, ast.Like):
        operand, pattern = sub(expr.operand), re.compile(expr.pattern)
        return lambda ctx: pattern.search(operand(ctx)) is not None
    if isinstance(expr, ast.Call):
        operand, function = sub(expr.args[0]), _MATH[expr.function.lower()]
        return lambda ctx: function(operand(ctx))
    raise TypeError(f"not a condition this evaluator knows: {expr!r}")


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
    remainder = math.fmod(left, right)
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
