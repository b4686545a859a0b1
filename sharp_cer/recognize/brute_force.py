"""The brute-force reference matcher: the oracle of the matcher's tests.

It walks the pattern's AST by backtracking, trying candidate matches from
one start row in preference order (greedy quantifiers try one more
iteration first, reluctant ones one fewer; alternatives left to right;
PERMUTE's orders lexicographically) and returns the first whose every row
satisfies its variable's condition. Exponential, for small inputs only.

Empty iterations: an unbounded quantifier ``{low,}`` accepts an iteration
that matched no row only while it has done fewer than ``low`` iterations;
a bounded one accepts up to ``high`` iterations of any length.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> pattern = parse_clause("MATCH_RECOGNIZE (PATTERN (A B+?) DEFINE A AS true)").pattern
>>> reference_match(pattern, ["A", "B"], 0, 5, lambda var, labels, pos: True)
Found(end=2, labels=(0, 1), excluded=())
"""

from __future__ import annotations

from collections.abc import Callable

from . import nodes
from .matcher import Condition, Found

# the state of a candidate: (labels, excluded rows, exclusion depth)
State = tuple[tuple[int, ...], tuple[int, ...], int]
Continuation = Callable[[int, State], "Found | None"]


def reference_match(
    pattern: nodes.Pattern, variables: list[str], start: int, size: int, condition: Condition
) -> Found | None:
    """The preferred match of ``pattern`` from row ``start``, by backtracking."""
    ids = {name: i for i, name in enumerate(variables)}

    def walk(node: nodes.Pattern, row: int, state: State, k: Continuation) -> Found | None:
        labels, excluded, depth = state
        if isinstance(node, nodes.Variable):
            variable = ids[node.name]
            if row >= size or not condition(variable, (*labels, variable), row):
                return None
            return k(row + 1, ((*labels, variable), (*excluded, row) if depth else excluded, depth))
        if isinstance(node, nodes.Concatenation):
            return sequence(node.items, row, state, k)
        if isinstance(node, nodes.Alternation):
            for item in node.items:
                found = walk(item, row, state, k)
                if found is not None:
                    return found
            return None
        if isinstance(node, nodes.Permute):
            return walk(nodes.permutations_in_order(node.items), row, state, k)
        if isinstance(node, nodes.Anchor):
            at_anchor = row == 0 if node.kind == "start" else row == size
            return k(row, state) if at_anchor else None
        if isinstance(node, nodes.Exclusion):
            inside = (labels, excluded, depth + 1)
            return walk(node.body, row, inside, lambda r, s: k(r, (s[0], s[1], s[2] - 1)))
        return repeat(node, 0, row, state, k)

    def sequence(items: tuple[nodes.Pattern, ...], row: int, state: State, k: Continuation) -> Found | None:
        if not items:
            return k(row, state)
        return walk(items[0], row, state, lambda r, s: sequence(items[1:], r, s, k))

    def repeat(node: nodes.Quantified, done: int, row: int, state: State, k: Continuation) -> Found | None:
        def again(r: int, s: State) -> Found | None:
            if node.high is None and done >= node.low and r == row:
                return None  # an empty iteration past the minimum of an unbounded quantifier
            return repeat(node, done + 1, r, s, k)

        tries: list[Callable[[], Found | None]] = []
        if node.high is None or done < node.high:
            tries.append(lambda: walk(node.body, row, state, again))
        if done >= node.low:
            tries.append(lambda: k(row, state))
        if not node.greedy:
            tries.reverse()
        for attempt in tries:
            found = attempt()
            if found is not None:
                return found
        return None

    return walk(pattern, start, ((), (), 0), lambda r, s: Found(r, s[0], s[1]))
