"""The live state of one query group, as plain data: its partitions (their
runs' union-lists of tECS nodes), horizons and counters; and snapshots of
it that pickle, and restore into an engine of the same plan.

A snapshot names a deterministic state by its set of automaton states, not
by its id in the determinizer (whose numbering depends on the order steps
were first taken), and holds the tECS nodes as an arena of plain tuples
whose children are indices of earlier entries: pickling it never recurses
down a long chain of nodes.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from sharp_cer.planner import compile_plan
>>> from sharp_cer.engine import Engine
>>> import pickle
>>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", s))])
>>> events = load_csv("A,1\\nA,2\\nB,3\\n", s)[0]
>>> first = Engine(plan)
>>> _ = first.process(events.take([0, 1]))
>>> second = Engine(plan)
>>> second.restore(pickle.loads(pickle.dumps(first.snapshot())))
>>> [(m.start, m.end) for m in second.process(events.take([2]))]
[(0, 2), (1, 2)]
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from sharp_cer.errors import EngineError
from sharp_cer.planner.plan import Plan

from .determinize import Determinizer
from .tecs import Node

#: The snapshot format; a snapshot of another version is refused.
FORMAT_VERSION = 1
#: Events between sweeps for idle partitions.
SWEEP_EVERY = 1024
_INF = float("inf")

#: A deterministic state in a snapshot: its automaton states, sorted.
StateSet = tuple[int, ...]
#: A node in a snapshot's arena: (kind, pos, label, left, right, maxstart,
#: maxkey, value, summary, mask), ``left`` and ``right`` the indices of
#: earlier entries (-1: none).
NodeRow = tuple[int, int, int, int, int, int, float, Any, Any, int]


class Partition:
    """The live runs of one query group in one partition: active
    deterministic states (insertion-ordered, as Algorithm 1 needs) to
    union-lists, and the running maximum of the window measure."""

    __slots__ = ("active", "counter", "created", "ghosts", "local", "merged", "reachable", "running_max")

    def __init__(self) -> None:
        self.active: dict[int, list[Node]] = {}
        # states of runs dropped as out of every window, kept (without their
        # nodes) where a consuming query must still see them complete
        self.ghosts: set[int] = set()
        self.local = -1  # the index of the latest event in the partition
        # final states' union-lists merged for output, reused by the next
        # event's step unless pruning shortened the list
        self.merged: dict[int, Node] = {}
        self.running_max = -_INF
        # nodes created since the last cut, and what that cut left reachable:
        # cutting again once as many were created keeps the cost amortized O(1)
        self.created = 0
        self.reachable = 0
        # the matches counted without walking (``counting.WindowCounter``):
        # None where they are counted on the tECS (not counting, a window
        # value that went back, a snapshot restored, a shedder's cut)
        self.counter: Any = None


class QueryGroupState:
    """The live partitions and counters of one query group."""

    __slots__ = (
        "evicted",
        "input_shed",
        "latest_time",
        "next_sweep",
        "partitions",
        "processed",
        "skipped",
        "sweep_all",
        "sweep_due",
        "sweep_heap",
        "touched",
    )

    def __init__(self) -> None:
        self.partitions: dict[Any, Partition] = {}
        self.evicted = 0  # partitions forgotten
        self.latest_time = -_INF  # the largest primary time seen, for sweeps
        self.next_sweep = SWEEP_EVERY  # the engine's event count at the next sweep
        # what a sweep reads, so it looks at the partitions stepped since the last sweep and
        # at those whose newest run may be out of every window, not at every partition (not in
        # snapshots: a restored state sweeps all once): the keys stepped since the last sweep;
        # per partition key, when to look at it again: a window key at or below its newest
        # run's (and a tie-breaker naming its entry in the heap); the heap of those entries,
        # (window key, tie-breaker, partition key); and whether the next sweep must look at
        # every partition (a state made or changed other than by steps)
        self.touched: dict[Any, None] = {}
        self.sweep_due: dict[Any, tuple[float, int]] = {}
        self.sweep_heap: list[tuple[float, int, Any]] = []
        self.sweep_all = True
        self.processed = 0  # events stepped
        self.skipped = 0  # events seen but skipped (they could change nothing)
        self.input_shed = 0  # events the shedder kept from the query group

    def snapshot(self, det: Determinizer) -> QueryGroupSnapshot:
        """The state as plain data (see the module docstring); ``det``
        names its deterministic states."""
        arena = _Arena()
        named = det.states

        def name(state: int) -> StateSet:
            return tuple(sorted(named[state]))

        partitions = []
        for key, part in self.partitions.items():
            active = tuple((name(s), tuple(map(arena.add, ulist))) for s, ulist in part.active.items())
            merged = tuple((name(s), arena.add(node)) for s, node in part.merged.items())
            ghosts = tuple(sorted(map(name, part.ghosts)))
            numbers = (part.local, part.running_max, part.created, part.reachable)
            partitions.append((key, numbers, active, ghosts, merged))
        counters = (self.evicted, self.latest_time, self.next_sweep, self.processed, self.skipped, self.input_shed)
        return QueryGroupSnapshot(tuple(arena.rows), tuple(partitions), counters)

    @classmethod
    def restore(cls, snapshot: QueryGroupSnapshot, det: Determinizer) -> QueryGroupState:
        """The state a snapshot holds, its deterministic states interned in ``det``."""
        state = cls()
        nodes = _nodes(snapshot.nodes)

        def intern(states: StateSet) -> int:
            return det.intern(frozenset(states))

        for key, numbers, active, ghosts, merged in snapshot.partitions:
            part = state.partitions[key] = Partition()
            part.local, part.running_max, part.created, part.reachable = numbers
            part.active = {intern(s): [nodes[i] for i in ulist] for s, ulist in active}
            part.ghosts = {intern(s) for s in ghosts}
            part.merged = {intern(s): nodes[i] for s, i in merged}
        (
            state.evicted,
            state.latest_time,
            state.next_sweep,
            state.processed,
            state.skipped,
            state.input_shed,
        ) = snapshot.counters
        return state


@dataclass(frozen=True)
class QueryGroupSnapshot:
    """One query group's state as plain data (``QueryGroupState.snapshot``):
    the node arena, per partition (key, (local, running max, created,
    reachable), active (states, node indices), ghost states, merged
    (states, node index)), and the counters."""

    nodes: tuple[NodeRow, ...]
    partitions: tuple[Any, ...]
    counters: tuple[Any, ...]


@dataclass(frozen=True)
class EngineSnapshot:
    """Everything an engine holds about the stream so far (``Engine.snapshot``):
    each query group's state, the cost clock and the server's counters,
    tagged with the format version and the plan they belong to."""

    version: int
    plan: str  # plan_fingerprint of the plan
    groups: tuple[QueryGroupSnapshot, ...]
    engine: dict[str, Any]

    def check(self, plan: Plan) -> None:
        """Refuse to restore into an engine of another format or plan.

        >>> from sharp_cer.planner import Plan, PredicateTable
        >>> EngineSnapshot(0, "", (), {}).check(Plan((), (), PredicateTable(), ()))
        Traceback (most recent call last):
        ...
        sharp_cer.errors.EngineError: this engine restores snapshots of format version 1, and this one is of version 0
          hint: restore it with the sharp-cer release that took it, and process the stream from there
        """
        self.check_fingerprint(plan_fingerprint(plan))

    def check_version(self) -> None:
        """Refuse a snapshot of another format version."""
        if self.version != FORMAT_VERSION:
            raise EngineError(
                f"this engine restores snapshots of format version {FORMAT_VERSION}, and this one is of "
                f"version {self.version}\n"
                "  hint: restore it with the sharp-cer release that took it, and process the stream from there"
            )

    def check_fingerprint(self, found: str) -> None:
        """``check`` against an engine's fingerprint (``Engine.fingerprint``:
        its plan's, or after updates its plans' and query groups')."""
        self.check_version()
        if self.plan != found:
            raise EngineError(
                f"this snapshot is of another plan (fingerprint {self.plan}) than the engine's ({found})\n"
                "  hint: restore it into an engine of the same queries, compiled the same way"
            )


def plan_fingerprint(plan: Plan) -> str:
    """A digest of what a plan's state depends on: its queries' names and
    windows, and each query group's queries, partition attributes, window
    kind and automaton; the same in every process (sets are sorted).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> one = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", s))])
    >>> two = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 6 EVENTS", s))])
    >>> plan_fingerprint(one) == plan_fingerprint(one), plan_fingerprint(one) == plan_fingerprint(two)
    (True, False)
    """
    parts = (
        [(q.name, q.window, q.selected, q.filters, q.strict_by_filter) for q in plan.queries],
        [(g.queries, g.partition_attributes, g.window, g.automaton) for g in plan.groups],
        plan.labels,
    )
    return hashlib.sha256(_canonical(parts).encode()).hexdigest()[:16]


def _canonical(value: Any) -> str:
    """A text for ``value`` that does not depend on set order or hashing."""
    if is_dataclass(value) and not isinstance(value, type):
        inner = ", ".join(f"{f.name}={_canonical(getattr(value, f.name))}" for f in fields(value))
        return f"{type(value).__name__}({inner})"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(map(_canonical, value)) + ")"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(map(_canonical, value))) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{_canonical(k)}: {_canonical(v)}" for k, v in value.items())) + "}"
    return repr(value)


class _Arena:
    """Nodes numbered children first, each once (they form a DAG)."""

    def __init__(self) -> None:
        self.rows: list[NodeRow] = []
        self.index: dict[int, int] = {}  # id(node) -> its row

    def add(self, root: Node) -> int:
        index = self.index
        found = index.get(id(root))
        if found is not None:
            return found
        # depth first without recursion: a node is written once its children are
        stack: list[Node] = [root]
        while stack:
            node = stack[-1]
            if id(node) in index:
                stack.pop()
                continue
            waiting = [c for c in (node.left, node.right) if c is not None and id(c) not in index]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            left = index[id(node.left)] if node.left is not None else -1
            right = index[id(node.right)] if node.right is not None else -1
            index[id(node)] = len(self.rows)
            self.rows.append(
                (
                    node.kind,
                    node.pos,
                    node.label,
                    left,
                    right,
                    node.maxstart,
                    node.maxkey,
                    node.value,
                    node.summary,
                    node.mask,
                )
            )
        return index[id(root)]


def _nodes(rows: tuple[NodeRow, ...]) -> list[Node]:
    """The nodes of an arena, children first."""
    nodes: list[Node] = []
    for kind, pos, label, left, right, maxstart, maxkey, value, summary, mask in rows:
        node = Node(
            kind,
            pos,
            label,
            nodes[left] if left >= 0 else None,
            nodes[right] if right >= 0 else None,
            maxstart,
            maxkey,
            value,
        )
        node.summary, node.mask = summary, mask
        nodes.append(node)
    return nodes
