"""Which events of a batch are too far from their partition's other events
to be part of any match, so the engine need not step them.

When every match of a group holds at least ``fewest`` events of one
partition (CORE's substreams) within the group's largest window, an event
can be in a match only if some ``fewest`` consecutive events of its
partition, itself among them, fit in that window. An event that is in no
match can change nothing when nothing but the events of a match decides it:
every query of the group selects ALL, consumes nothing, has no LIMIT, no
NOT, no ABSENT and no contiguity (``:``, ``:+``) (``Density.of`` refuses
every other group). Shedding keeps the test exact: an event in no match of
the whole stream is in none of what is left once events or partial matches
are shed.

The test runs on one batch with numpy. It needs every event's window value,
none decreasing within a partition in the batch (else the batch is left as
it is);
across batches, the engine already takes values to fall at most the allowed
lateness below a partition's running maximum (``late_window_values`` counts
those that do). An event whose value lies within the window plus the
lateness of its partition's first or last event in the batch may be in a
match with events of the batches before or after, so it is kept: the batch
boundary costs at most a window's worth of events per partition, and the
test needs no state across batches.

>>> import numpy as np
>>> codes = np.array([0, 1, 0, 0, 1, 0, 0, 0, 0, 1])
>>> values = np.array([0.0, 1, 2, 3, 50, 40, 80, 81, 82, 90])
>>> far(codes, values, fewest=3, bound=10, inclusive=True, margin=0).tolist()
[False, False, False, False, True, True, False, False, False, False]

Partition 0 (values 0, 2, 3, 40, 80, 81, 82) has two runs of three events
within 10; 40 is in neither. Partition 1 (1, 50, 90) has none, but its first
and last events are kept: they may have neighbours in other batches. With a
margin of 45, every event within 45 of its partition's first or last is kept
for that reason too:

>>> far(codes, values, fewest=3, bound=10, inclusive=True, margin=45).tolist()
[False, False, False, False, False, False, False, False, False, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sharp_cer.language import ast
from sharp_cer.planner.plan import QueryGroup, QueryPlan, window_bound

#: Batches shorter than this are stepped whole: numpy's cost per call
#: outweighs the steps saved (a long-running detector feeds a few events at a time).
SMALLEST_BATCH = 4096


@dataclass(frozen=True)
class Density:
    """A group's density test: the fewest events of any match, the largest
    window, whether its size is inside, and the margin kept at batch edges
    (the window plus the allowed lateness)."""

    fewest: int
    bound: float
    inclusive: bool
    margin: float

    @staticmethod
    def of(group: QueryGroup, queries: Sequence[QueryPlan], lateness: float) -> Density | None:
        """The test for ``group`` (None: it does not apply).

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> def test(text):
        ...     plan = compile_plan([("q", parse_and_check(text, s))])
        ...     return Density.of(plan.groups[0], plan.queries, 0)
        >>> test("SELECT * WHERE A ; B+ ; A PARTITION BY [k] WITHIN 5 EVENTS")
        Density(fewest=3, bound=5, inclusive=True, margin=5)
        >>> test("SELECT * WHERE A : B ; A PARTITION BY [k] WITHIN 5 EVENTS") is None  # contiguity
        True
        >>> test("SELECT * WHERE A ; B+ ; A WITHIN 5 EVENTS") is None  # one partition
        True
        """
        if not group.partition_attributes:
            # one stream-wide partition: a window almost always holds enough
            # events somewhere, so the test would cost more than it saves
            return None
        reach = match_reach(group, queries, lateness)
        counts = [fewest_events(q.query.pattern) for q in queries]
        if reach is None or any(c is None for c in counts):
            return None
        fewest = min(c for c in counts if c is not None)
        if fewest < 2:
            return None  # every event of a lone event's type is a match
        return Density(fewest, *reach)

    def far(self, codes: npt.NDArray[np.int64], values: npt.NDArray[Any]) -> npt.NDArray[np.bool_] | None:
        """``far`` with this group's figures."""
        return far(codes, values, self.fewest, self.bound, self.inclusive, self.margin)


def match_reach(group: QueryGroup, queries: Sequence[QueryPlan], lateness: float) -> tuple[float, bool, float] | None:
    """The largest window of ``group`` (its bound, and whether a match may
    span the bound exactly) and the margin kept at batch edges (the window
    plus the allowed lateness), if only the events of a match decide the
    group's output: every query selects ALL, consumes nothing, has no LIMIT,
    no STRICT, no NOT, no ABSENT, no contiguity and a finite window. None
    otherwise.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> def reach(text):
    ...     plan = compile_plan([("q", parse_and_check(text, s))])
    ...     return match_reach(plan.groups[0], plan.queries, 2)
    >>> reach("SELECT * WHERE A ; B+ WITHIN 5 EVENTS"), reach("SELECT * WHERE A ; B+ WITHIN 5 [k]")
    ((5, True, 5), (5, False, 7))
    >>> reach("SELECT * WHERE A ; NOT(A) ; B WITHIN 5 EVENTS") is None
    True
    """
    if not queries or any(not q.sheddable or q.strict_by_filter for q in queries):
        return None
    bounds = [window_bound(q.window) for q in queries]
    if any(fewest_events(q.query.pattern) is None for q in queries) or any(b == float("inf") for b, _ in bounds):
        return None
    bound = max(b for b, _ in bounds)
    inclusive = any(i for b, i in bounds if b == bound)
    return bound, inclusive, bound if group.window[0] == "events" else bound + lateness


def fewest_events(formula: ast.Formula) -> int | None:
    """The fewest events a match of ``formula`` holds; None where events
    outside a match can decide it (NOT, ABSENT, contiguity).

    >>> fewest_events(ast.Sequence((ast.EventType("A"), ast.Iteration(ast.EventType("B"))), (";",)))
    2
    >>> fewest_events(ast.Disjunction(ast.EventType("A"), ast.Conjunction((ast.EventType("A"), ast.EventType("B")))))
    1
    """
    if isinstance(formula, ast.EventType):
        return 1
    if isinstance(formula, ast.Bind | ast.Filter):
        return fewest_events(formula.formula)
    if isinstance(formula, ast.Iteration):
        return None if formula.contiguous else fewest_events(formula.formula)
    if isinstance(formula, ast.Disjunction):
        left, right = fewest_events(formula.left), fewest_events(formula.right)
        return None if left is None or right is None else min(left, right)
    if isinstance(formula, ast.Sequence | ast.Conjunction):
        if isinstance(formula, ast.Sequence) and ":" in formula.links:
            return None
        parts = [fewest_events(p) for p in formula.parts]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
    return None  # NOT, ABSENT


def far(
    codes: npt.NDArray[np.int64],
    values: npt.NDArray[Any],
    fewest: int,
    bound: float,
    inclusive: bool,
    margin: float,
) -> npt.NDArray[np.bool_] | None:
    """Which events (in stream order, with their partition codes and window
    values) are in no run of ``fewest`` consecutive events of their
    partition spanning at most ``bound`` (less than it unless
    ``inclusive``), and further than ``margin`` from their partition's first
    and last event here (see the module example). None: some value is NaN
    or falls within a partition, so the test does not apply."""
    m = len(codes)
    # integer values (positions, times) stay integers: their differences are exact
    if m == 0 or (values.dtype.kind == "f" and np.isnan(values).any()):
        return None
    if values.dtype.kind in "iu" and int(values.max()) - int(values.min()) >= 1 << 62:
        return None  # differences could overflow 64 bits
    low = int(codes.min())
    if int(codes.max()) - low < 1 << 16:
        codes = (codes - low).astype(np.uint16)  # numpy sorts 16-bit keys by radix: 40 times faster
    order = np.argsort(codes, kind="stable")  # stable: each partition's events stay in stream order
    c, v = codes[order], values[order]
    same = c[1:] == c[:-1]
    if (np.diff(v)[same] < 0).any():
        return None
    new = np.concatenate(([True], ~same))
    starts = np.flatnonzero(new)
    ends = np.concatenate((starts[1:], [m])) - 1
    block = np.cumsum(new) - 1
    keep = (v - v[starts][block] <= margin) | (v[ends][block] - v <= margin)
    if m >= fewest:
        span = v[fewest - 1 :] - v[: m - fewest + 1]
        fits = (c[fewest - 1 :] == c[: m - fewest + 1]) & (span <= bound if inclusive else span < bound)
        runs = np.concatenate(([0], np.cumsum(fits)))
        # event j is in a fitting run that starts at some p in [j - fewest + 1, j]
        j = np.arange(m)
        covered = runs[np.minimum(j + 1, m - fewest + 1)] - runs[np.clip(j - fewest + 1, 0, m - fewest + 1)] > 0
        keep |= covered
    out = np.zeros(m, dtype=bool)
    out[order] = ~keep
    return out
