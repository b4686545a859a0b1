"""Enumerating a query's matches from the tECS: in a pluggable order, within
a budget of steps, with cross-event conditions checked on the way; and
counting them without enumerating.

:class:`Walk` walks from a query's final nodes down to the bottom nodes of
the starts in its window. Its *order*
decides, at each union node, which branch is followed now and which waits
(``DepthFirst`` is CORE's order; ``BestFirst`` follows a score, as the
shedder does under overload); its *limit* stops it after that many steps
(nodes visited) and records that it was cut short. Cross-event conditions
(``conditions.FilterCheck``) are checked exactly when an instance of their
pattern is complete, and, with summaries, a branch none of whose paths can
satisfy them is not entered.

>>> from sharp_cer.engine.tecs import bottom, extend, merge
>>> node = merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)])
>>> walk = Walk(lambda key: True, lambda value: True)
>>> [(b.pos, marks) for b, marks in walk.run([node])], walk.steps
([(5, ((6, 0),)), (2, ((6, 0),))], 5)
>>> walk = Walk(lambda key: True, lambda value: True, limit=3)
>>> [(b.pos, marks) for b, marks in walk.run([node])], walk.truncated
([(5, ((6, 0),))], True)
>>> count_matches([node], lambda key: True, lambda value: True)
2
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from .conditions import Env, FilterCheck, Summaries
from .predicate_bits import OutOfDomain
from .tecs import BOTTOM, OUTPUT, UNION, Node

# A path is a linked list of marks, latest first: (pos, label, values, rest).
_Path = tuple[int, int, Any, Any] | None


class Pending(Protocol):
    """The branches waiting to be walked."""

    def push(self, node: Node, state: Any) -> None: ...

    def pop(self) -> tuple[Node, Any]: ...

    def __len__(self) -> int: ...


class EnumerationOrder(Protocol):
    """Where enumeration goes at a union node, and which waiting branch it
    takes up next."""

    def split(self, union: Node) -> tuple[Node, Node | None]:
        """(the child to follow now, the child to leave waiting)."""
        ...

    def pending(self) -> Pending:
        """An empty container of waiting branches."""
        ...


class _Stack(list[tuple[Node, Any]]):
    def push(self, node: Node, state: Any) -> None:
        self.append((node, state))


class DepthFirst:
    """CORE's order: depth first, the younger (left) branch first; starts
    come out latest first across the union-list.

    >>> from sharp_cer.engine.tecs import bottom, extend, merge
    >>> DepthFirst().split(merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)]))[0]
    <Output pos=6 max-start=5>
    """

    def split(self, union: Node) -> tuple[Node, Node | None]:
        """The left child now, the right one later."""
        return union.left, union.right  # type: ignore[return-value]

    def pending(self) -> Pending:
        """A stack."""
        return _Stack()


class _Heap:
    def __init__(self, score: Callable[[Node], float]) -> None:
        self.score = score
        self.items: list[tuple[float, int, Node, Any]] = []
        self.tie = itertools.count()

    def push(self, node: Node, state: Any) -> None:
        heapq.heappush(self.items, (-self.score(node), next(self.tie), node, state))

    def pop(self) -> tuple[Node, Any]:
        _, _, node, state = heapq.heappop(self.items)
        return node, state

    def __len__(self) -> int:
        return len(self.items)


class BestFirst:
    """Follow the child with the higher ``score`` first, and take up the
    waiting branch with the highest score next (ties: first pushed first).

    >>> from sharp_cer.engine.tecs import bottom, extend, merge
    >>> node = merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)])
    >>> oldest = BestFirst(lambda n: -n.maxstart)
    >>> [b.pos for b, _ in Walk(lambda k: True, lambda v: True, order=oldest).run([node])]
    [2, 5]
    """

    def __init__(self, score: Callable[[Node], float]) -> None:
        self.score = score

    def split(self, union: Node) -> tuple[Node, Node | None]:
        """The better-scored child now."""
        left, right = union.left, union.right
        assert left is not None
        if right is not None and self.score(right) > self.score(left):
            return right, left
        return left, right

    def pending(self) -> Pending:
        """A heap on the score."""
        return _Heap(self.score)


class Walk:
    """One enumeration: which starts are in the window (``key_test`` on a
    branch's max-start key prunes, ``value_test`` on a start's own value
    decides), the query's cross-event filters, the order and the step
    limit. ``run`` yields (bottom node, marks) with marks as
    ((position, label), ...), earliest first; afterwards ``steps`` holds the
    nodes visited, ``candidates`` the paths built to the end or until a
    filter rejected them, ``truncated`` whether the limit cut the walk
    short and ``left`` how many branches were still waiting then. With
    ``bit``, the walk never enters a node whose keep-mask lacks the bit (the
    query's partial matches shed by view). With ``visit``, the walk calls it
    with every output node it enters and every branch a filter's summary
    prunes (what a partial match costs the walks that reach it), and counts
    those calls in ``tests``. With ``floor``, only starts at or after that
    position count (a query that joined a running group: ``Engine.update``),
    and a branch whose latest start is older is not entered.

    >>> from sharp_cer.engine.tecs import bottom, extend, merge
    >>> node = merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)])
    >>> [b.pos for b, _ in Walk(always, always, floor=3).run([node])]
    [5]
    """

    def __init__(
        self,
        key_test: Callable[[float], bool],
        value_test: Callable[[float], bool],
        *,
        checks: Sequence[FilterCheck] = (),
        summaries: Summaries | None = None,
        prune: bool = True,
        order: EnumerationOrder | None = None,
        limit: int | None = None,
        bit: int | None = None,
        visit: Callable[[Node], None] | None = None,
        floor: int = -1,
    ) -> None:
        self.floor = floor
        self.key_test = key_test
        self.value_test = value_test
        self.checks = list(checks)
        self.whole = [check for check in self.checks if check.whole]  # checked once a path is complete
        self.summaries = summaries
        self.prune = prune and summaries is not None and bool(self.checks)
        self.order: EnumerationOrder = order or DepthFirst()
        self.limit = limit
        self.bit = bit
        self.visit = visit
        self.tests = 0
        self.steps = 0
        self.candidates = 0
        self.truncated = False
        #: branches still waiting when the limit cut the walk short
        self.left = 0
        self.domain_errors = 0

    def run(self, roots: Sequence[Node]) -> Iterator[tuple[Node, tuple[tuple[int, int], ...]]]:
        """Every open complex event of ``roots`` that passes the window and
        the filters (see the class docstring)."""
        key_test, value_test, order, floor = self.key_test, self.value_test, self.order, self.floor
        checked = bool(self.checks)
        start_state: Any = None
        if checked:
            assert self.summaries is not None
            # a filter over the whole match has its instance open from the last event on
            start_state = (None, self.summaries.identity, tuple(True if c.whole else None for c in self.checks))
        pending = order.pending()
        for root in reversed(roots):  # the first root is walked first
            if (
                root.maxstart >= floor
                and key_test(root.maxkey)
                and (not self.prune or self._possible(root, start_state))
            ):
                pending.push(root, start_state)
        limit, bit, visit = self.limit, self.bit, self.visit
        # off the hot path when unused
        prune: Callable[[Node, Any], bool] | None = self._possible if self.prune else None
        if visit is not None and prune is not None:
            prune = self._counting(prune, visit)
        visited = 0
        try:
            while pending:
                n, state = pending.pop()
                while True:
                    if bit is not None and not n.mask & bit:
                        break  # shed for this query (by view)
                    if limit is not None and visited >= limit:
                        self.truncated = True
                        self.left = len(pending) + 1
                        return
                    visited += 1
                    kind = n.kind
                    if kind == OUTPUT:
                        if visit is not None:
                            self.tests += 1
                            visit(n)
                        if checked:
                            state = self._advance(n, state)
                            if state is None:
                                break
                        else:
                            state = (n.pos, n.label, None, state)
                        n = n.left  # type: ignore[assignment]
                    elif kind == UNION:
                        first, second = order.split(n)
                        if (
                            second is not None
                            and second.maxstart >= floor
                            and key_test(second.maxkey)
                            and (prune is None or prune(second, state))
                        ):
                            pending.push(second, state)
                        # a left child has its union's max-start; a right one is older
                        if first is n.right and (first.maxstart < floor or not key_test(first.maxkey)):
                            break
                        if prune is not None and not prune(first, state):
                            break
                        n = first
                    else:
                        if value_test(n.value):
                            self.candidates += 1
                            path = state[0] if checked else state
                            if self.whole and not self._whole_holds(path):
                                break
                            marks = []
                            while path is not None:
                                marks.append((path[0], path[1]))
                                path = path[3]
                            yield n, tuple(marks)
                        break
        finally:
            self.steps += visited

    def _counting(
        self, prune: Callable[[Node, Any], bool], visit: Callable[[Node], None]
    ) -> Callable[[Node, Any], bool]:
        """``prune`` that reports each branch it rejects to ``visit``."""

        def possible(node: Node, state: Any) -> bool:
            if prune(node, state):
                return True
            self.tests += 1
            visit(node)
            return False

        return possible

    def _possible(self, node: Node, state: Any) -> bool:
        _, seen, instances = state
        summary = node.summary
        # asked at every branch a walk may enter: a loop, not a generator
        for check, instance in zip(self.checks, instances, strict=False):
            if instance is not None and not check.possible(seen, summary):
                return False
        return True

    def _advance(self, n: Node, state: Any) -> Any:
        """Take one output node into the path; None if a filter fails."""
        path, seen, instances = state
        path = (n.pos, n.label, n.value, path)
        summaries = self.summaries
        assert summaries is not None
        names = summaries.labels[n.label]
        if self.prune:
            seen = summaries.output(n.label, n.value, seen, reset=False)
        changed = list(instances)
        for k, check in enumerate(self.checks):
            if check.whole or check.tag not in names:
                continue
            if check.first_tag in names:
                if not self._holds(check, path, changed[k]):
                    self.candidates += 1  # a candidate built, then rejected
                    return None
                changed[k] = None
                if self.prune:
                    seen = summaries.cleared(seen, check)
            else:
                changed[k] = path if changed[k] is None else changed[k]
        return path, seen, tuple(changed)

    def _whole_holds(self, path: Any) -> bool:
        """Every filter over the whole match holds on the complete path."""
        return all(self._holds(check, path, None) for check in self.whole)

    def _holds(self, check: FilterCheck, path: Any, last: Any) -> bool:
        """The filter on the instance from the first event (the head of
        ``path``) to the event that opened it (``last``, or the head); a
        filter over the whole match reads the whole path."""
        assert self.summaries is not None
        labels = self.summaries.labels
        env: Env = {}
        node = path
        while node is not None:
            names = labels[node[1]]
            if check.whole or check.tag in names:
                for var in names:
                    if var[0] != "#":
                        env.setdefault(var, []).append(node[2])
            if not check.whole and (node is last or (last is None and node is path)):
                break
            node = node[3]
        try:
            return check.holds(env)
        except OutOfDomain:
            self.domain_errors += 1
            return False


class Replay:
    """One walk's paths as a walk of one query: those whose start passes
    the query's own window (``value_test``). Queries that differ only in
    their windows (and SELECT lists) walk the same paths; one walk with the
    widest window serves them all (:class:`SharedWalks`). The work is
    booked once, on the query that walked (``walk``).

    >>> from sharp_cer.engine.tecs import bottom, extend, merge
    >>> node = merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)])
    >>> walk = Walk(always, always)
    >>> paths = list(walk.run([node]))
    >>> replay = Replay(paths, lambda start: start >= 4, None)
    >>> [b.pos for b, _ in replay.run([node])], replay.steps, Replay(paths, always, walk).steps
    ([5], 0, 5)
    """

    __slots__ = ("candidates", "domain_errors", "found", "idle", "left", "steps", "tests", "truncated", "value_test")

    def __init__(self, found: list[tuple[Node, Any]], value_test: Callable[[float], bool], walk: Walk | None) -> None:
        self.found = found
        self.value_test = value_test
        self.steps = walk.steps if walk is not None else 0
        self.candidates = walk.candidates if walk is not None else 0
        self.domain_errors = walk.domain_errors if walk is not None else 0
        self.truncated = False
        self.left = 0
        self.tests = 0
        #: nothing to replay and nothing to book
        self.idle = walk is None and not found

    def run(self, roots: Sequence[Node]) -> Iterator[tuple[Node, Any]]:
        """The walked paths in this query's window (``roots`` are the walked ones)."""
        test = self.value_test
        return (path for path in self.found if test(path[0].value))


class SharedWalks:
    """The walks of the event in process, by class of queries that walk
    alike (same cross-event filters: see ``CompiledQueryGroup.walk_class``)
    and final nodes: the first query of a class walks with the class's
    widest window, the others replay its paths.

    >>> from sharp_cer.engine.tecs import bottom, extend
    >>> node = extend(bottom(2, 2, 2), 6, 0)
    >>> walks = SharedWalks()
    >>> first = walks.replay(0, [node], 6, always, lambda start: False)
    >>> second = walks.replay(0, [node], 6, always, always)
    >>> [len(list(r.run([node]))) for r in (first, second)], first.steps, second.steps
    ([0, 1], 2, 0)
    """

    def __init__(self) -> None:
        self.position = -1
        self.walked: dict[tuple[int, tuple[int, ...]], list[tuple[Node, Any]]] = {}

    def replay(
        self,
        walk_class: int,
        nodes: Sequence[Node],
        position: int,
        widest: Callable[[float], bool],
        value_test: Callable[[float], bool],
        checks: Sequence[FilterCheck] = (),
        summaries: Summaries | None = None,
        prune: bool = True,
        order: EnumerationOrder | None = None,
        floor: int = -1,
    ) -> Replay:
        """The paths in one query's window (``value_test``) from the walk of
        its class at this event over ``nodes``, walked now with ``widest``
        (and the class's ``checks``) if it is the first."""
        if position != self.position:
            self.walked.clear()
            self.position = position
        key = (walk_class, tuple(map(id, nodes)))
        found = self.walked.get(key)
        if found is not None:
            return Replay(found, value_test, None)
        walk = Walk(widest, widest, checks=checks, summaries=summaries, prune=prune, order=order, floor=floor)
        found = self.walked[key] = list(walk.run(nodes))
        return Replay(found, value_test, walk)


def open_events(node: Node) -> list[tuple[int, tuple[tuple[int, int], ...]]]:
    """Every open complex event of a node, as sorted (start, marks) pairs.

    >>> from sharp_cer.engine.tecs import bottom, extend
    >>> open_events(extend(bottom(1, 1, 1), 3, 0))
    [(1, ((3, 0),))]
    """
    return sorted((b.pos, marks) for b, marks in Walk(always, always).run([node]))


def always(value: float) -> bool:
    """A window test every start passes (no window)."""
    return True


def count_matches(
    roots: Sequence[Node],
    key_test: Callable[[float], bool],
    value_test: Callable[[float], bool],
    steps: list[int] | None = None,
) -> int:
    """The number of open complex events of ``roots`` whose start is in the
    window, by dynamic programming over the tECS: each node is counted once
    however many paths reach it (``steps[0]`` adds the nodes counted).

    The tests are one window test, monotone in the start (a start passes,
    so does every later one). Each node keeps its count with the largest
    start the test rejected and the smallest it accepted below it
    (``Node.tally``): a later count whose test still rejects the one and
    accepts the other reuses it without walking below, since no start of the
    node lies between them. So a count walks only the nodes whose window
    edge moved past one of their starts since they were last counted, not
    every live node at every event. (A cut branch, ``tecs.cut_old_branches``,
    only held starts below every later window: a tally that counted one
    fails the test on its smallest accepted start and is redone.)

    >>> from sharp_cer.engine.tecs import bottom, extend, merge, union
    >>> b = bottom(1, 1, 1)
    >>> chain = extend(union(extend(b, 2, 0), extend(b, 3, 0)), 4, 0)  # {2,4} and {3,4}
    >>> count_matches([merge([extend(chain, 5, 0), chain])], lambda k: True, lambda v: True)
    4
    >>> root = merge([extend(bottom(7, 7, 7), 8, 0), extend(bottom(4, 4, 4), 8, 0)])
    >>> walked = [0]
    >>> count_matches([root], lambda s: s >= 3, lambda s: s >= 3, walked), walked
    (2, [5])
    >>> count_matches([root], lambda s: s >= 4, lambda s: s >= 4, walked), walked  # no start crossed
    (2, [5])
    >>> count_matches([root], lambda s: s >= 5, lambda s: s >= 5, walked)  # the start at 4 left the window
    1
    """
    visited = 0
    total = 0
    for root in roots:
        if not key_test(root.maxkey):
            continue
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            kind = n.kind
            if not expanded:
                if _fresh(n.tally, value_test):
                    continue
                if kind == BOTTOM:
                    visited += 1
                    v = n.value
                    if value_test(v):
                        n.tally = (1, None, v)
                    else:
                        n.tally = (0, v if v == v else None, None)  # NaN: no value, in no window
                    continue
                stack.append((n, True))
                stack.append((n.left, False))  # type: ignore[arg-type]
                right = n.right
                if kind == UNION and right is not None and key_test(right.maxkey):
                    stack.append((right, False))
                continue
            visited += 1
            count, rejected, accepted = n.left.tally  # type: ignore[union-attr]
            right = n.right
            if kind == UNION and right is not None:
                if key_test(right.maxkey):
                    more, low, high = right.tally
                    count += more
                    if low is not None and (rejected is None or low > rejected):
                        rejected = low
                    if high is not None and (accepted is None or high < accepted):
                        accepted = high
                elif right.maxkey == right.maxkey and (rejected is None or right.maxkey > rejected):
                    rejected = right.maxkey  # its starts are at most its key: rejected too
            n.tally = (count, rejected, accepted)
        total += root.tally[0]
    if steps is not None:
        steps[0] += visited
    return total


def _fresh(tally: Any, test: Callable[[float], bool]) -> bool:
    """Whether a node's tally holds under ``test``: it still rejects the
    largest start rejected and accepts the smallest accepted."""
    return tally is not None and (tally[1] is None or not test(tally[1])) and (tally[2] is None or test(tally[2]))
