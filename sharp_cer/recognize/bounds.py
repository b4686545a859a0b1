"""What a DEFINE condition that reads the match so far still says about a
row on its own, so the completion sets (``search``) can prune threads:

- its row-local conjuncts (``name = 'AMAT' AND S2.t - S.t <= 60``: the row
  must be named AMAT whatever the match so far);
- a *window*: a conjunct ``x - S.x <= c`` (or ``<``, or ``FIRST(x)`` for
  ``S.x``) over the first ORDER BY column, ascending, of integers, where
  ``S`` is the pattern's first row. Rows are in that column's order, so the
  condition fails on every row past the last one within ``c`` of the
  match's start: a thread that needs the variable later cannot complete.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> c = parse_clause("MATCH_RECOGNIZE (ORDER BY t PATTERN (S X*? E) "
...                  "DEFINE E AS name = 'e' AND E.t - S.t <= 10)")
>>> [type(n).__name__ for n in local_conjuncts(c.definitions[0].condition)]
['Binary', 'Binary']
>>> window_of(c, c.definitions[0])
Window(column='t', limit=10, strict=False)
>>> window_end([1, 5, 11, 12, 30], 0, Window("t", 10, False))
2
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import nodes


@dataclass(frozen=True)
class Window:
    """The variable holds only on rows whose ``column`` is at most ``limit``
    (less than, if ``strict``) past the match's first row's."""

    column: str
    limit: int
    strict: bool


def local_conjuncts(condition: nodes.Expr) -> list[nodes.Expr]:
    """The top-level AND operands of ``condition``."""
    if isinstance(condition, nodes.Binary) and condition.op == "AND":
        return [*local_conjuncts(condition.left), *local_conjuncts(condition.right)]
    return [condition]


def conjunction(items: list[nodes.Expr]) -> nodes.Expr:
    """``items`` joined by AND (one item: itself)."""
    out = items[0]
    for item in items[1:]:
        out = nodes.Binary("AND", out, item)
    return out


def _first_variable(pattern: nodes.Pattern) -> str | None:
    """The variable every match's first row is mapped to, when the pattern
    begins with a plain variable used nowhere else."""
    if not isinstance(pattern, nodes.Concatenation) or not pattern.items:
        return None
    head = pattern.items[0]
    if not isinstance(head, nodes.Variable):
        return None
    uses = 0

    def count(node: nodes.Pattern) -> None:
        nonlocal uses
        if isinstance(node, nodes.Variable):
            uses += node.name == head.name
        elif isinstance(node, nodes.Concatenation | nodes.Alternation | nodes.Permute):
            for item in node.items:
                count(item)
        elif isinstance(node, nodes.Quantified | nodes.Exclusion):
            count(node.body)

    count(pattern)
    return head.name if uses == 1 else None


def window_of(clause: nodes.Clause, definition: nodes.Definition) -> Window | None:
    """The window a DEFINE condition's conjuncts put on its variable, if any."""
    if not clause.order or clause.order[0].descending or clause.order[0].nulls_first:
        return None
    column = clause.order[0].column
    first = _first_variable(clause.pattern)
    own = definition.variable

    def tested(node: nodes.Expr) -> bool:
        return isinstance(node, nodes.Column) and node.name == column and node.variable in (None, own)

    def at_start(node: nodes.Expr) -> bool:
        if isinstance(node, nodes.Column):
            return node.name == column and node.variable == first and first not in (None, own)
        return (
            isinstance(node, nodes.Call)
            and node.name == "first"
            and node.semantics is None
            and len(node.args) == 1
            and isinstance(node.args[0], nodes.Column)
            and node.args[0].variable is None
            and node.args[0].name == column
        )

    best: Window | None = None
    for item in local_conjuncts(definition.condition):
        if not isinstance(item, nodes.Binary):
            continue
        op, difference, bound = item.op, item.left, item.right
        if op in (">=", ">"):
            op, difference, bound = {">=": "<=", ">": "<"}[op], item.right, item.left
        if op not in ("<=", "<") or not isinstance(difference, nodes.Binary) or difference.op != "-":
            continue
        if not isinstance(bound, nodes.Literal) or isinstance(bound.value, bool) or not isinstance(bound.value, int):
            continue
        if tested(difference.left) and at_start(difference.right):
            window = Window(column, bound.value, op == "<")
            if best is None or (window.limit, not window.strict) < (best.limit, not best.strict):
                best = window
    return best


def window_end(values: Sequence[Any], start: int, window: Window) -> int:
    """The last row (``start - 1``: none) of a partition whose ``values``
    (the window's column, ascending, NULLs last) are within ``window`` of row
    ``start``'s. Non-integer values give the partition's last row (no bound)."""
    origin = values[start]
    if origin is None:
        return start - 1  # NULL arithmetic: the condition is never true
    if not isinstance(origin, int) or isinstance(origin, bool):
        return len(values) - 1
    known = bisect.bisect_left(values, True, start, len(values), key=lambda v: v is None)  # NULLs sort last
    if any(not isinstance(v, int) for v in (values[start], values[known - 1])):
        return len(values) - 1
    threshold = origin + window.limit
    if window.strict:
        return bisect.bisect_left(values, threshold, start, known) - 1
    return bisect.bisect_right(values, threshold, start, known) - 1
