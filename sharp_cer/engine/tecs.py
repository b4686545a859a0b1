"""The timed enumerable compact set (tECS) of CORE §4.

A node stands for a set of *open complex events* ``(start, marks)``: a
bottom node for the run that starts at its position with nothing marked yet,
an output node for its successor's sets extended by one marked position (with
the label of the variables it is bound to), a union node for the union of its
two children. Every node carries its *max-start*, the latest start it
represents, and the window key of that start (the position, or the running
maximum of the time or attribute the window measures, which never decreases
with the position), so enumeration can skip branches that are too old.

The operations keep the structure *time-ordered* (a union's left child has
the larger max-start), *3-bounded* (at most three union nodes down the left
spine before a non-union node) and, because the engine's automata are
I/O-deterministic, *duplicate-free*. ``union`` uses CORE's four gadgets
(Figure 5 a–d), ``merge`` the chain of Figure 5 e.

>>> b0, b1 = bottom(0, 0, 0), bottom(1, 1, 1)
>>> ul = [extend(b1, 2, 0)]
>>> _ = insert(ul, extend(b0, 2, 0))
>>> from sharp_cer.engine.enumeration import open_events
>>> open_events(merge(ul))
[(0, ((2, 0),)), (1, ((2, 0),))]
"""

from __future__ import annotations

from typing import Any

from sharp_cer.errors import EngineError

BOTTOM, OUTPUT, UNION = 0, 1, 2


class Node:
    """One tECS node; which slots mean what depends on ``kind``:
    bottom (``pos``, ``value`` = the start's window value), output (``pos``,
    ``label``, ``left`` = the next node), union (``left``, ``right``).

    >>> extend(bottom(3, 3, 3), 5, 0)
    <Output pos=5 max-start=3>
    """

    __slots__ = ("kind", "label", "left", "mask", "maxkey", "maxstart", "pos", "right", "summary", "tally", "value")

    def __init__(
        self,
        kind: int,
        pos: int,
        label: int,
        left: Node | None,
        right: Node | None,
        maxstart: int,
        maxkey: float,
        value: Any,
    ) -> None:
        self.kind = kind
        self.pos = pos
        self.label = label
        self.left = left
        self.right = right
        self.maxstart = maxstart
        self.maxkey = maxkey
        self.value = value
        # per term of the group's cross-event conditions: (lows, highs) over
        # the node's paths (see engine.conditions); None without such terms
        self.summary: Any = None
        # the queries (bits of the group's PSD) this node is still kept for:
        # load shedding by view clears bits, and a walk for a query never
        # enters a node without its bit (-1: every query)
        self.mask = -1
        # counting (``enumeration.count_matches``): the node's paths in a
        # window, with the starts that bound where that count stays valid
        self.tally: Any = None

    def __repr__(self) -> str:
        name = ("Bottom", "Output", "Union")[self.kind]
        return f"<{name} pos={self.pos} max-start={self.maxstart}>"


def bottom(position: int, key: float, value: float) -> Node:
    """A run starting at ``position``: the open complex event (position, {}).

    >>> from sharp_cer.engine.enumeration import open_events
    >>> open_events(bottom(2, 2, 2))
    [(2, ())]
    """
    return Node(BOTTOM, position, -1, None, None, position, key, value)


def extend(node: Node, position: int, label: int) -> Node:
    """Every open complex event of ``node`` plus the marked ``position``
    (with ``label``).

    >>> from sharp_cer.engine.enumeration import open_events
    >>> open_events(extend(bottom(2, 2, 2), 4, 7))
    [(2, ((4, 7),))]
    """
    return Node(OUTPUT, position, label, node, None, node.maxstart, node.maxkey, 0)


def _union_node(left: Node, right: Node) -> Node:
    node = Node(UNION, -1, -1, left, right, left.maxstart, left.maxkey, 0)
    first = left.summary
    if first is not None:
        second = right.summary
        if first is second:  # e.g. two runs whose marks change no term (the identity)
            node.summary = first
        else:
            # every union node pays this, for every term of the group: comparisons inline
            # (not min/max calls through map) take about half the time; each picks as
            # min(a, b) and max(a, b) do, but a NaN on either side stays (conditions._join)
            (l1, h1), (l2, h2) = first, second
            node.summary = (
                tuple([b if b < a or b != b else a for a, b in zip(l1, l2, strict=False)]),
                tuple([b if b > a or b != b else a for a, b in zip(h1, h2, strict=False)]),
            )
    return node


def union(n1: Node, n2: Node) -> Node:
    """The union of two safe nodes with equal max-start (CORE Figure 5 a–d).

    >>> b = bottom(1, 1, 1)
    >>> u = union(extend(b, 3, 0), extend(b, 4, 0))
    >>> from sharp_cer.engine.enumeration import open_events
    >>> open_events(u)
    [(1, ((3, 0),)), (1, ((4, 0),))]
    """
    if n1.kind == UNION and n1.right is None:  # its old branch was cut away
        n1 = n1.left  # type: ignore[assignment]
    if n2.kind == UNION and n2.right is None:
        n2 = n2.left  # type: ignore[assignment]
    if n1.kind != UNION:
        return _union_node(n1, n2)
    if n2.kind != UNION:
        return _union_node(n2, n1)
    r1, r2 = n1.right, n2.right
    assert r1 is not None and r2 is not None and n1.left is not None and n2.left is not None
    u2 = _union_node(r1, r2) if r1.maxstart >= r2.maxstart else _union_node(r2, r1)
    return _union_node(n1.left, _union_node(n2.left, u2))


def insert(ulist: list[Node], node: Node) -> int:
    """Insert a safe node into a non-empty union-list, keeping the list
    sorted by decreasing max-start (equal ones are united, but for
    ``ulist[0]``); return the number of union nodes created.

    Algorithm 1 visits the states in the order of their lists' first
    max-start, so a node usually comes no younger than ``ulist[0]``. Once a
    shedder has taken a list's first entry out, that order no longer holds,
    and a younger node goes first (else the list would be out of order and
    walks and window cuts would miss runs).

    >>> ulist = [extend(bottom(5, 5, 5), 6, 0)]
    >>> insert(ulist, extend(bottom(2, 2, 2), 6, 0)), insert(ulist, extend(bottom(4, 4, 4), 6, 0))
    (0, 0)
    >>> [n.maxstart for n in ulist], insert(ulist, extend(bottom(4, 4, 4), 7, 0))
    ([5, 4, 2], 1)
    >>> insert(ulist, extend(bottom(6, 6, 6), 7, 0)), [n.maxstart for n in ulist]
    (0, [6, 5, 4, 2])
    """
    m = node.maxstart
    if m > ulist[0].maxstart:
        ulist.insert(0, node)
        return 0
    for i in range(1, len(ulist)):
        old = ulist[i]
        if old.maxstart == m:
            ulist[i] = union(old, node)
            return 3 if _is_union(old) and _is_union(node) else 1  # gadget (d) makes three
        if old.maxstart < m:
            ulist.insert(i, node)
            return 0
    ulist.append(node)
    return 0


def _is_union(node: Node) -> bool:
    return node.kind == UNION and node.right is not None


def merge(ulist: list[Node]) -> Node:
    """One node for the whole union-list (CORE Figure 5 e).

    >>> merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)])
    <Union pos=-1 max-start=5>
    """
    node = ulist[-1]
    for i in range(len(ulist) - 2, -1, -1):
        node = _union_node(ulist[i], node)
    return node


def cut_old_branches(roots: list[Node], horizon: float) -> int:
    """Cut every union branch whose max-start key is below ``horizon`` (out
    of every window for good) among the nodes reachable from ``roots``, so
    Python can free them; return the number of nodes still reachable.

    The cut changes no set any later enumeration can see. Every node left
    reachable then has its max-start key at or above the horizon: left
    children and successors share their parent's max-start, and only right
    branches can be older. This is CORE's memory rule (§5: drop references
    to nodes outside the window) without weak references.

    >>> old, young = extend(bottom(1, 1, 1), 5, 0), extend(bottom(4, 4, 4), 5, 0)
    >>> root = merge([young, old])
    >>> cut_old_branches([root], horizon=3), root.right is None
    (3, True)
    """
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.kind == UNION:
            right = n.right
            if right is not None and right.maxkey < horizon:
                n.right = right = None
            stack.append(n.left)  # type: ignore[arg-type]
            if right is not None:
                stack.append(right)
        elif n.kind == OUTPUT:
            stack.append(n.left)  # type: ignore[arg-type]
    return len(seen)


def oldest_position(roots: list[Node]) -> float:
    """The smallest position of a node reachable from ``roots`` (inf:
    none): no later match can hold an older event, so a caller keeping
    events' attributes for its matches may forget the older ones.

    >>> oldest_position([merge([extend(bottom(4, 4, 4), 5, 0), extend(bottom(1, 1, 1), 6, 0)])])
    1
    >>> oldest_position([])
    inf
    """
    seen: set[int] = set()
    stack = list(roots)
    low = float("inf")
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.kind == UNION:
            stack.append(n.left)  # type: ignore[arg-type]
            if n.right is not None:
                stack.append(n.right)
            continue
        low = min(low, n.pos)
        if n.kind == OUTPUT:
            stack.append(n.left)  # type: ignore[arg-type]
    return low


def check_node(node: Node) -> None:
    """The debug-mode invariants of a newly created node: time-ordered,
    max-start labels right, 3-bounded; raise EngineError if one fails.

    >>> check_node(merge([extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)]))
    >>> check_node(Node(UNION, -1, -1, bottom(1, 1, 1), bottom(5, 5, 5), 1, 1, 0))
    Traceback (most recent call last):
    ...
    sharp_cer.errors.EngineError: tECS invariant broken: union <Union pos=-1 max-start=1> is not time-ordered
    """
    if node.kind == UNION:
        left, right = node.left, node.right
        assert left is not None and right is not None
        if left.maxstart < right.maxstart or node.maxstart != left.maxstart:
            raise EngineError(f"tECS invariant broken: union {node!r} is not time-ordered")
        depth, n = 0, node
        while n.kind == UNION:
            depth += 1
            n = n.left  # type: ignore[assignment]
            if depth > 3:
                raise EngineError(f"tECS invariant broken: union {node!r} has output-depth above 3")
    elif node.kind == OUTPUT:
        assert node.left is not None
        if node.maxstart != node.left.maxstart or (node.pos <= node.left.pos and node.left.kind == OUTPUT):
            raise EngineError(f"tECS invariant broken: output {node!r} does not extend its successor")
