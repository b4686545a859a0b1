"""The engine: CORE's Algorithm 1 per query group and partition key.

For each event, every query group that sees its type runs one step of Algorithm 1
in the event's partition: a new run starts at the event (a bottom node from
the initial deterministic state), every active deterministic state takes its
marking and non-marking steps, nodes reaching the same state are united
through union-lists, and for each final state the matches of its queries are
enumerated, each query with its own window and projection. Runs whose every
start is outside the largest window of the query group are dropped, so their nodes
become unreachable and Python frees them; a partition with no live run is
evicted.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from sharp_cer.planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT BUY { p:int }, EVENT SELL { p:int } }")
>>> q = parse_and_check("SELECT * WHERE NOT(SELL) ; BUY ; SELL WITHIN 5 EVENTS", s)
>>> batch, _ = load_csv("SELL,1\\nBUY,1\\nBUY,1\\nSELL,1\\n", s)
>>> engine = Engine(compile_plan([("q", q)]), debug=True)
>>> [(m.start, m.end, m.events) for m in engine.process(batch)]
[(1, 3, (2, 3))]
"""

from __future__ import annotations

import copy
import gc
import heapq
import itertools
import operator
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from sharp_cer.errors import EngineError
from sharp_cer.events.batch import Column, EventBatch
from sharp_cer.events.match import Match
from sharp_cer.language import CheckedQuery
from sharp_cer.planner.compile import change_plan
from sharp_cer.planner.plan import Plan, QueryPlan
from sharp_cer.planner.sharing import prefix_states

from . import density, native
from .absence import TrailingAbsences
from .compiled import CompiledQueryGroup
from .cost import CostClock, QueryCost
from .counting import WindowCounter
from .determinize import Determinizer
from .enumeration import EnumerationOrder, Replay, SharedWalks, Walk, always, count_matches
from .feed import (
    attribute_rows,
    keyed,
    partition_codes,
    partition_keys,
    spread,
    visible,
    window_column,
    window_values,
)
from .latency import LatencyLog
from .observers import Observers
from .predicate_bits import PredicateBits
from .queueing import Backlog, QueueLog, Server, finish_times, live_arrivals
from .selection import SELECT, Projection, distinct, end_order, limit_order
from .shedder_protocol import Progress, Shedder, WalkControl
from .skipping import SkipIndex
from .state import (
    FORMAT_VERSION,
    SWEEP_EVERY,
    EngineSnapshot,
    Partition,
    QueryGroupState,
    plan_fingerprint,
)
from .symbols import AtomColumns
from .tecs import BOTTOM, OUTPUT, Node, check_node, cut_old_branches, insert, merge, oldest_position

_INF = float("inf")
#: The step of a run that dies at once: no move at all.
_DEAD = ((), -1)
#: Events looked at together when searching for the next busy one: at
#: most, and at least after a stretch was cut short.
_STRETCH = 2048
_MIN_STRETCH = 16
#: Nodes a partition creates before its first cut of out-of-window branches
#: (the default of ``Engine(cut_after=...)``).
CUT_AFTER = 256
#: With an ``emit`` (``Engine.process``): the matches held before they go
#: out, at the end of an event's step; and the matches of one query at one
#: event enumerated, ordered and put out together. An event with more
#: (``Engine.crowded_events``) puts them out in blocks of this many, each in
#: end order (start, then events) but not the event's whole, and one path
#: whose events a path of another block shares with other labels is not
#: merged with it (``selection.distinct``).
FLUSH_AT = 1024
EVENT_BLOCK = 10_000


#: the walk of a query no shedder controls
_UNCONTROLLED = WalkControl()
#: a match's row (start, output events, ...): one query's order at one end
_START_EVENTS = operator.itemgetter(0, 1)
_Rows = list[tuple[int, tuple[int, ...], tuple[int, ...]]]  # (start, positions, labels)


#: a value per event of a batch, by row (a dict: only the rows of the events seen)
_PerRow = Sequence[Any] | dict[int, Any]


class _Feed(NamedTuple):
    """What the steps of a batch read (``QueryGroupRunner._feed``)."""

    symbols: npt.NDArray[np.int64]
    progress: list[float] | None
    sees: int
    keys: _PerRow
    window: _PerRow
    positions: _PerRow
    attributes: _PerRow | None
    listed: _PerRow
    busy: npt.NDArray[np.bool_]
    busy_now: list[bool]


class QueryGroupRunner:
    """Algorithm 1 for one query group, over all its partitions: it reads
    the compiled query group (``compiled``, shared, immutable but for the
    determinizer's cache), changes only its live state (``state``, plain
    data: ``engine.state``) and reports to the engine's observers. The
    rest of its fields are the event in process's scratch.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", s))]))
    >>> runner = engine.runners[0]
    >>> runner.largest, runner.det.initial
    (5, 0)
    """

    def __init__(self, engine: Engine, compiled: CompiledQueryGroup, state: QueryGroupState | None = None) -> None:
        self.engine = engine
        self.compiled = compiled
        self.state = state if state is not None else QueryGroupState()
        # what the per-event loop reads of the compiled query group, bound once
        self.group, self.number, self.plan = compiled.group, compiled.number, compiled.plan
        # queries of the group whose matches are not put out (none: ``Engine.update`` compiles
        # a group that loses queries again without them)
        self.dropped: frozenset[int] = frozenset()
        self.det, self.queries, self.symbols = compiled.det, compiled.queries, compiled.symbols
        self.summaries, self.checks, self.consumes = compiled.summaries, compiled.checks, compiled.consumes
        self.by_position, self.reach, self.largest = compiled.by_position, compiled.reach, compiled.largest
        # which symbols can change nothing (None: every event is processed);
        # its flags follow the live states, so it is scratch, not compiled
        self.index = SkipIndex(self.det, self.symbols) if compiled.skips else None
        # the index kept up to date in the batch in process (None: every event left is stepped)
        self.tracking = self.index
        self.log = engine.observers.latency  # the service log, read at each batch
        self.steps_here = 0  # enumeration steps of the event in process
        self.walks = SharedWalks()  # the event's walks, shared by queries that walk alike
        # per query: nothing but its window, filters and projection applies (see _enumerate_plain)
        self.plain_path = {q.id: compiled.projections[q.id].plain for q in self.queries}
        self.transitions = 0  # booked on the clock after each batch
        self.nodes_created = 0
        # the update units of the event in process before this query group's step
        self.floor = 0
        self.row = 0  # the event's row in its batch
        self.began = 0.0  # when its step began (recording latency)
        # the event's service units before this query group's step (earlier query groups' work)
        self.served = 0
        self.backlog: Backlog | None = None  # the queue as this query group sees it, while it runs
        # the shedder's test of the new partial matches it would take out at creation anyway, at
        # the event in process (``QueryGroupShedder.discards``; None: every one is created)
        self.discard: Callable[[int, int, list[Node]], bool] | None = None
        self.shedder = engine.shedder.for_group(self) if engine.shedder is not None else None
        # the order the query group's queries enumerate an event's matches in
        order = self.shedder.ranking() if self.shedder is not None else [q.id for q in self.queries]
        self.rank = {qid: k for k, qid in enumerate(order)}
        # counting a counted query's matches without walking (``counting``): its window test
        lone = self.queries[0] if len(self.queries) == 1 else None
        self.counting = compiled.windows[lone.id] if engine.count_only and lone is not None and lone.counted else None
        # counts taken by a partition's counter, and by a walk of the tECS
        self.counts_summed = self.counts_walked = 0
        # whether sweeps evict partitions (``sweep``), and its heap entries' tie-breaker
        window = self.group.window[0]
        self.sweeps = self.largest != _INF and window in ("events", "time") and not self.consumes
        self._sweep_tie = itertools.count()
        # the compiled core, where it runs this query group exactly (``engine.native``; None: Python)
        self.core = native.attach(self)

    # ------------------------------------------------------------ per batch
    def run(self, batch: EventBatch, atoms: AtomColumns, out: list[Match], units: list[int], floors: list[int]) -> int:
        """Process the events of ``batch`` this query group sees (``steps``, all at once)."""
        try:
            next(self.steps(batch, atoms, out, units, floors))
        except StopIteration as stop:
            return int(stop.value)
        raise EngineError("internal error: a query group stopped at an event outside lockstep")

    def steps(
        self,
        batch: EventBatch,
        atoms: AtomColumns,
        out: list[Match],
        units: list[int],
        floors: list[int],
        lockstep: bool = False,
    ) -> Generator[int, None, int]:
        """Process the events of ``batch`` this query group sees, given every
        atom's column; append their matches to ``out``, add each event's
        units to ``units`` (update and enumeration) and ``floors`` (update
        only) and return the update units spent. With a shedder, the
        engine's ``backlog`` is the queue it sees, and each event's work is
        reported to it. In ``lockstep``, the query group stops before each event
        it processes, yielding its row, so the engine can serve the query groups
        event by event (``Engine.process``).

        Events that can change nothing are skipped in bulk (``_feed``).
        """
        if self.core is not None and self.core.takes():
            limits = (FLUSH_AT, EVENT_BLOCK)  # read here: tests change them
            return (yield from self.core.steps(batch, atoms, out, units, floors, lockstep, limits))
        n = len(batch)
        if n == 0:
            return 0
        feed = self._feed(batch, atoms)
        symbols, progress, sees, keys, window, positions, attributes, listed, busy, busy_now = feed
        index, bits = self.tracking, self.symbols.bits
        clock, state, shedder = self.engine.clock, self.state, self.shedder
        # optional in the protocol: a shedder made before it existed has none
        discards = getattr(shedder, "discards", None)
        log = self.log = self.engine.observers.latency
        backlog = self.backlog = self.engine.observers.backlog
        if shedder is not None:
            shedder.begin_batch(batch)
        update = done = position = 0
        stretch, shed_before = _STRETCH, state.input_shed
        while position < n:
            # the events of the next stretch whose symbol is busy; the
            # stretch ends early when a step makes an idle symbol busy (and
            # the next one is shorter, as such steps tend to come in runs)
            end = min(position + stretch, n)
            todo = (busy[symbols[position:end]].nonzero()[0] + position).tolist()
            begun, position = position, end
            stretch = min(_STRETCH, 2 * stretch)
            for i in todo:
                if not busy_now[listed[i]]:
                    continue  # its symbol became idle since the stretch began
                if lockstep:
                    yield i  # resumed once every query group is done with the events before it
                self.floor, self.row, self.served = floors[i], i, units[i]
                if shedder is not None:
                    entry = self._progress(floors[i], 0)
                    if not shedder.admit(i, entry):
                        state.input_shed += 1
                        if log is not None:
                            log.floor(self.number, floors[i], 0.0, positions[i])
                        continue
                    self.discard = discards(entry) if discards is not None else None
                self.steps_here = 0
                if log is not None:
                    self.began = time.perf_counter()
                spent = self.step(
                    positions[i], bits[listed[i]], window[i], keys[i], out, attributes[i] if attributes else ()
                )
                update += spent
                units[i] += spent + self.steps_here
                floors[i] += spent
                done += 1
                if backlog is not None:
                    backlog.done(i, spent + self.steps_here)
                if len(out) >= FLUSH_AT and self.engine._emit is not None:
                    self.engine.flush(out)
                if clock.events + i + 1 >= state.next_sweep:
                    if progress is not None:
                        state.latest_time = max(state.latest_time, progress[i])
                    self._sweep_at(clock.events + i + 1, positions[i])
                if self.engine._quota is not None and self.engine._quota <= 0:
                    position = n  # enough matches are out: the rest of the batch is not needed
                    break
                if index is not None and index.grew:
                    index.grew = False
                    stretch = max(_MIN_STRETCH, 2 * (i + 1 - begun))
                    position = i + 1
                    break
        self._end_batch(batch, progress, sees - done - (state.input_shed - shed_before))
        state.processed += done
        return update

    def _end_batch(self, batch: EventBatch, progress: list[float] | None, skipped: int) -> None:
        """Book a batch: the stream's progress, a sweep if one is due, the
        events skipped, and the transitions and nodes on the clock."""
        state, clock, n = self.state, self.engine.clock, len(batch)
        if progress is not None:
            state.latest_time = max(state.latest_time, progress[-1])
        if clock.events + n >= state.next_sweep:
            self._sweep_at(clock.events + n, int(batch.positions[-1]))
        state.skipped += skipped
        self.discard = None
        clock.transitions += self.transitions
        clock.nodes_created += self.nodes_created
        self.transitions = self.nodes_created = 0
        self.backlog = None

    def _feed(self, batch: EventBatch, atoms: AtomColumns) -> _Feed:
        """What the steps of a batch read, per event (``steps``): the
        events' symbols (-1: not seen, or skipped by the density and
        relevance tests), the stream's progress, how many events the query
        group sees, and per event its partition key, window value,
        position, attributes and symbol; which symbols are busy.

        Events that can change nothing are skipped in bulk: an event is
        processed only if its symbol starts a run or is *busy* for some
        deterministic state live in some partition (``SkipIndex``). numpy
        finds the busy events of a stretch of the batch; when a step makes a
        symbol busy that was not, the stretch ends there and the next one
        starts after the event; a symbol that became idle is passed over.
        A query group whose STRICT check counts every event of a partition
        processes every event.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))]))
        >>> [(m.start, m.end) for m in engine.process(load_csv("C,1\\nB,1\\nA,1\\nC,1\\nC,1\\nB,1\\n", s)[0])]
        [(2, 5)]
        >>> engine.runners[0].state.processed, engine.runners[0].state.skipped
        (2, 4)
        """
        n = len(batch)
        symbols = self.symbols.encode(atoms, visible(self.group, batch) & keyed(self.group, batch))
        times = batch.times() if self.group.window[0] == "time" else None
        measure = window_column(self.group, batch, times)
        # the stream's progress up to each event, skipped events included: a
        # sweep in the middle of the batch must not judge by later events
        progress: list[float] | None = None
        if times is not None:
            seen = np.where(times.valid & (symbols >= 0), times.values.astype(np.float64), -_INF)
            progress = np.maximum.accumulate(seen).tolist() if n else []
        sees = int(np.count_nonzero(symbols >= 0))
        relevant = False  # whether (nearly) only events some accepted run may mark are left
        if measure is not None and n >= density.SMALLEST_BATCH:
            if self.compiled.density is not None:
                self._drop_far(batch, symbols, measure)
            if self.compiled.relevance is not None:
                relevant = self._drop_idle(batch, symbols, measure)
        # what the steps read, per event: for the live ones only when they are few
        live = (symbols >= 0).nonzero()[0]
        rows = live if len(live) * 4 < n else None
        keys = spread(partition_keys(self.group, batch, rows), rows)
        window = spread(window_values(measure, n, rows), rows)
        positions = spread((batch.positions if rows is None else batch.positions[rows]).tolist(), rows)
        attributes = spread(attribute_rows(self.summaries.attributes, batch, rows), rows) if self.summaries else None
        listed = spread((symbols if rows is None else symbols[rows]).tolist(), rows)
        # after the relevance test, the index would skip next to nothing
        # (on the kleene stock shape it stepped 37,153 of the 37,168 events
        # left) and keeping it up to date cost a third of the steps' time
        index = self.tracking = None if relevant else self.index
        bits = self.symbols.bits
        if index is not None:
            index.reset(s for inst in self.state.partitions.values() for s in (*inst.active, *inst.ghosts))
            busy, busy_now = index.flags, index.flag_list
        else:
            busy = np.ones(len(bits) + 1, dtype=bool)
            busy[-1] = False  # id -1: events the query group does not see
            busy_now = busy.tolist()
        return _Feed(symbols, progress, sees, keys, window, positions, attributes, listed, busy, busy_now)

    def _drop_far(self, batch: EventBatch, symbols: np.ndarray, measure: Column) -> None:
        """Hide the events no match can hold (``engine.density``) from the
        group: they are skipped like events it does not see."""
        assert self.compiled.density is not None
        rows = (symbols >= 0).nonzero()[0]
        if not measure.valid[rows].all():
            return  # an event without a window value: the test does not apply
        far = self.compiled.density.far(partition_codes(self.group, batch, rows), measure.values[rows])
        if far is not None:
            symbols[rows[far]] = -1

    def _drop_idle(self, batch: EventBatch, symbols: np.ndarray, measure: Column) -> bool:
        """Hide the events no accepted run can mark (``engine.relevance``)
        from the query group: they are skipped like events it does not see.
        True if nearly every event left is on an accepting path (False: the
        test did not apply, or it kept many events only because they are
        near the batch's edges)."""
        assert self.compiled.relevance is not None
        rows = (symbols >= 0).nonzero()[0]
        if not measure.valid[rows].all():
            return False  # an event without a window value: the test does not apply
        codes = partition_codes(self.group, batch, rows) if self.group.partition_attributes else None
        idle = self.compiled.relevance.idle(self.symbols.bits, symbols[rows], measure.values[rows], codes)
        if idle is None:
            return False
        symbols[rows[idle]] = -1
        return self.compiled.relevance.unsure * 10 <= len(rows) - int(np.count_nonzero(idle))

    def _sweep_at(self, events: int, position: int) -> None:
        """Sweep once ``events`` events have gone by, every SWEEP_EVERY."""
        self.sweep(position)
        self.state.next_sweep = events // SWEEP_EVERY * SWEEP_EVERY + SWEEP_EVERY

    # ------------------------------------------------------------ per event
    def step(
        self, position: int, bits: int, value: float, key: Any, out: list[Match], values: tuple[Any, ...] = ()
    ) -> int:
        """Process one event of this query group in partition ``key``; append its
        matches to ``out`` and return the update units spent (transitions
        and nodes created). ``values`` are the event's attributes that
        cross-event conditions read.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", s))]))
        >>> out = []
        >>> engine.runners[0].step(0, 0b01, 0.0, (), out), engine.runners[0].step(1, 0b10, 1.0, (), out)
        (3, 3)
        >>> [(m.start, m.end) for m in out]
        [(0, 1)]
        """
        engine, live = self.engine, self.state
        det = self.det
        initial = det.initial
        # the determinizer's steps: its memo first, a dict lookup per step (hits booked once)
        memo = det.memo
        start = memo.get((initial, bits))
        hits = 1
        if start is None:
            start = det.step(initial, bits)
            hits = 0
        instance = live.partitions.get(key)
        if instance is None:
            if start == _DEAD and self.log is None and self.shedder is None:
                # a partition without runs that this event does not start: it
                # would be made and evicted at once, with nothing to count but that
                if value > live.latest_time:
                    live.latest_time = value
                live.evicted += 1
                det.hits += hits
                return 0
            instance = live.partitions[key] = Partition()
            if self.counting is not None:
                instance.counter = WindowCounter(self.counting.test, self.counting.bound != _INF)
        if value > live.latest_time:
            live.latest_time = value
        if value == value and value > instance.running_max:  # NaN (no value) leaves it
            instance.running_max = value
        elif value < instance.running_max - engine.allowed_lateness:
            engine.late_window_values += 1
        # keys below the horizon are outside every window for every later event
        horizon = (position if self.by_position else instance.running_max) - self.reach
        instance.local += 1
        summaries = self.summaries
        consumes = self.consumes
        created: list[Node] = []
        shedder = self.shedder
        # the new partial matches and their states, for the shedder
        outputs: list[tuple[Node, int]] | None = [] if shedder is not None else None
        new: dict[int, list[Node]] = {}
        transitions = unions = 0
        merged = instance.merged
        ghosts = instance.ghosts
        index = self.tracking
        old_ghosts = set(ghosts) if consumes and index is not None else ghosts
        old = instance.active
        active: Iterable[tuple[int, list[Node]]] = old.items()
        counter = instance.counter
        discard, finals = self.discard, det.finals
        # each stepped state's targets, for the counter
        moves: dict[int, tuple[int, ...]] | None = {} if counter is not None else None
        if start != _DEAD:
            # a bottom node's label is the event's index in its partition (STRICT)
            first = Node(BOTTOM, position, instance.local, None, None, position, instance.running_max, value)
            if summaries is not None:
                first.summary = summaries.identity
            created.append(first)
            active = [(initial, [first]), *active]
        for state, ulist in active:
            length = len(ulist)
            while ulist and ulist[-1].maxkey < horizon:
                ulist.pop()  # every start below is outside every window
                if consumes:
                    ghosts.add(state)
            if not ulist:
                continue
            if state == initial:
                marks, skip = start
            else:
                found = memo.get((state, bits))
                if found is None:
                    found = det.step(state, bits)
                else:
                    hits += 1
                marks, skip = found
            if marks and discard is not None:
                # a partial match the shedder would take out at creation is not made: the same
                # runs go on, and it costs no transition, node or union (never a final state's:
                # its matches are enumerated at this event)
                marks = tuple((label, t) for label, t in marks if finals[t] or not discard(t, label, ulist))
            if moves is not None:
                moves[state] = (*(target for _, target in marks), skip) if skip >= 0 else tuple(t for _, t in marks)
            if marks or (skip >= 0 and skip in new):
                # one node for the whole union-list, reused from the last
                # event's output if the list is unchanged
                if len(ulist) == 1:
                    node = ulist[0]
                elif len(ulist) == length and state in merged:
                    node = merged[state]
                else:
                    node = self._merge(ulist, created)
                for label, target in marks:
                    output = Node(OUTPUT, position, label, node, None, node.maxstart, node.maxkey, 0)
                    if summaries is not None:
                        output.value = values
                        output.summary = summaries.output(label, values, node.summary)
                    created.append(output)
                    if outputs is not None:
                        outputs.append((output, target))
                    current = new.get(target)
                    if current is None:
                        new[target] = [output]
                    else:
                        unions += insert(current, output)
                transitions += len(marks)
            if skip >= 0:
                transitions += 1
                current = new.get(skip)
                if current is None:
                    new[skip] = ulist
                else:
                    unions += insert(current, node)
        if ghosts:
            instance.ghosts = ghosts = self._step_ghosts(ghosts, bits)
            transitions += len(ghosts)
        instance.active = new
        instance.merged = merged = {}
        if counter is not None:
            assert moves is not None
            if not counter.step(moves, initial if start != _DEAD else -1, value):
                instance.counter = counter = None  # a window value went back: count on the tECS
        if index is not None:
            if old.keys() != new.keys():
                index.moved(old.keys() - new.keys(), new.keys() - old.keys())
            if old_ghosts != ghosts:
                index.moved(old_ghosts - ghosts, ghosts - old_ghosts)
        if not new and not ghosts:
            del live.partitions[key]
            live.evicted += 1
        elif self.sweeps:
            live.touched[key] = None  # its newest run may have changed: the next sweep looks
        det.hits += hits
        accepted: dict[int, list[Node]] = {}
        accepting: list[int] = []  # the final states reached (the counted query's)
        dropped = self.dropped
        for state, ulist in new.items():
            if finals[state]:
                if len(ulist) == 1:
                    node = ulist[0]
                else:
                    node = merged[state] = self._merge(ulist, created)
                for qid in finals[state]:
                    if qid not in dropped:
                        accepted.setdefault(qid, []).append(node)
                        if counter is not None:
                            accepting.append(state)
        log = self.log
        if log is not None or accepted:
            # the event's update units so far: before this query group, and this query group's step
            floor = self.floor + transitions + len(created) + unions
            if log is not None:
                log.floor(self.number, floor, time.perf_counter() - self.began, position)
            order = sorted(accepted, key=self.rank.__getitem__)
            for k, qid in enumerate(order):
                after = tuple(order[k + 1 :]) if shedder is not None else ()
                self._enumerate(
                    qid, accepted[qid], position, value, instance.local, out, floor, after, (counter, accepting)
                )
        if consumes:
            self._consume(accepted, ghosts, key)
        if engine.debug:
            for n in created:
                check_node(n)
        nodes = len(created) + unions
        if new and horizon > -_INF:
            instance.created += nodes
            if instance.created > max(engine.cut_after, instance.reachable):
                instance.reachable = cut_old_branches([n for ul in new.values() for n in ul], horizon)
                instance.created = 0
        self.transitions += transitions
        self.nodes_created += nodes
        if shedder is not None and outputs is not None:
            self._stepped(instance, outputs, transitions + nodes)
        return transitions + nodes

    def _stepped(self, instance: Partition, outputs: list[tuple[Node, int]], update: int) -> None:
        """Tell the shedder the event is done in this query group (``update``: its units here)."""
        assert self.shedder is not None and self.backlog is not None
        progress = self._progress(self.floor + update, update + self.steps_here)
        self.shedder.stepped(instance, outputs, self.row, progress)

    def _progress(self, floor: int, spent: int) -> Progress:
        """Where the event in process stands, this query group having spent ``spent`` units on it."""
        backlog = self.backlog
        assert backlog is not None
        return Progress(floor, self.served + spent, backlog.latency(self.row, spent), backlog.capacity, backlog.wall)

    def _step_ghosts(self, ghosts: set[int], bits: int) -> set[int]:
        """Where the dropped runs go: every target, marking or not."""
        out: set[int] = set()
        # in ascending order, not a set's (its hashes'): the core steps them so, for equal cache figures
        for state in sorted(ghosts):
            marks, skip = self.det.step(state, bits)
            out.update(target for _, target in marks)
            if skip >= 0:
                out.add(skip)
        return out

    def _consume(self, accepted: dict[int, list[Node]], ghosts: set[int], key: Any) -> None:
        """CONSUME BY: if some run completes here with every condition, in
        the window or not, forget the query's partial matches (in this
        partition, or in every partition)."""
        (query,) = self.queries
        nodes = accepted.get(query.id, [])
        if self.checks[query.id]:
            walk = Walk(always, always, checks=self.checks[query.id], summaries=self.summaries)
            completed = next(iter(walk.run(nodes)), None) is not None
            self.engine.clock.enumeration_steps += walk.steps
        else:
            completed = bool(nodes) or any(query.id in self.det.finals[g] for g in ghosts)
        if not completed:
            return
        partitions = self.state.partitions
        for gone in list(partitions) if query.consume == "ANY" else [key] if key in partitions else []:
            self._drop(gone)

    def _drop(self, key: Any) -> None:
        """Forget a partition's runs."""
        instance = self.state.partitions.pop(key)
        self.state.evicted += 1
        if self.tracking is not None:
            self.tracking.moved((*instance.active, *instance.ghosts), ())

    def _merge(self, ulist: list[Node], created: list[Node]) -> Node:
        node = merge(ulist)
        n = node
        for _ in range(len(ulist) - 1):
            created.append(n)
            n = n.right  # type: ignore[assignment]
        return node

    def sweep(self, position: int) -> None:
        """Evict partitions whose every run is outside every window for good,
        judged by the progress of the whole stream (positions, or the primary
        time, which the loader keeps in order up to the allowed lateness).
        Attribute windows are judged per partition only, in ``step``.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> q = parse_and_check("SELECT * WHERE A ; B PARTITION BY [k] WITHIN 2 EVENTS", s)
        >>> engine = Engine(compile_plan([("q", q)]))
        >>> _ = engine.process(load_csv("A,1\\nA,2\\nA,3\\nA,4\\n", s)[0])
        >>> engine.partitions(), engine.runners[0].sweep(3), engine.partitions()
        (4, None, 3)
        """
        if not self.sweeps:
            return
        state = self.state
        horizon = self.compiled.horizon(position, state.latest_time)
        partitions, heap, due = state.partitions, state.sweep_heap, state.sweep_due
        if state.sweep_all:  # every partition, and a new heap
            state.sweep_all = False
            state.touched.clear()
            heap.clear()
            due.clear()
            keys: Iterable[Any] = list(partitions)
        else:
            # a partition stepped since the last sweep may hold a newest run older than its
            # entry in the heap says; the others' entries are at or below their newest runs' keys
            keys, state.touched = state.touched, {}
        for key in keys:
            instance = partitions.get(key)
            if instance is None:
                continue
            newest = _newest(instance)
            if newest < horizon:
                self._drop(key)
                continue
            entry = due.get(key)
            if entry is None or entry[0] > newest:  # else its entry comes due no later than it must
                tie = next(self._sweep_tie)
                due[key] = (newest, tie)
                heapq.heappush(heap, (newest, tie, key))
        while heap and heap[0][0] < horizon:
            _, tie, key = heapq.heappop(heap)
            entry = due.get(key)
            if entry is None or entry[1] != tie:
                continue  # an entry replaced by a lower one (already taken)
            instance = partitions.get(key)
            newest = -_INF if instance is None else _newest(instance)
            if newest < horizon:
                del due[key]
                if instance is not None:
                    self._drop(key)
            else:
                tie = next(self._sweep_tie)
                due[key] = (newest, tie)
                heapq.heappush(heap, (newest, tie, key))

    # ------------------------------------------------------------ enumeration
    def _enumerate(
        self,
        qid: int,
        nodes: list[Node],
        position: int,
        value: float,
        local: int,
        out: list[Any],
        floor: int = 0,
        after: tuple[int, ...] = (),
        counting: tuple[WindowCounter | None, list[int]] = (None, []),
    ) -> None:
        """Enumerate a query's matches ending here, from every final state
        that accepts it: one match per interval and output events, with the
        smallest variables (labels can differ where positions do not); then
        the strategy and LIMIT choose among them. A counted query is only
        counted: by the partition's counter if it has one (``counting``:
        it and the final states reached), else on the tECS."""
        engine = self.engine
        if (
            self.plain_path[qid]
            and self.shedder is None
            and self.log is None
            and engine._quota is None
            and not (engine.debug or engine.count_only)
            and engine.observers.queue is None
        ):
            self._enumerate_plain(qid, nodes, position, value, out, floor)
            return
        query = self.plan.queries[qid]
        test = self.compiled.windows[qid].test(position if self.group.window[0] == "events" else value)
        cost = engine.clock.per_query.get(query.name)
        if cost is None:
            cost = engine.clock.per_query[query.name] = QueryCost()
        limit = query.query.limit
        if engine.count_only and query.counted:
            counter, finals = counting
            steps = [0]
            if counter is not None:
                found = counter.count(finals)
                # the counter's work since the last count (its updates too), booked as steps
                steps[0], counter.work = counter.work, 0
                self.counts_summed += 1
                if engine.debug and found != count_matches(nodes, test, test):
                    raise EngineError(f"counting broken: the counter found {found} matches, the tECS holds others")
            else:
                found = count_matches(nodes, test, test, steps)
                self.counts_walked += 1
            self._book(query, cost, steps[0], 0, min(found, limit) if limit is not None else found)
            return
        if engine._quota is not None and engine._quota <= 0:
            return  # enough matches are out (see Engine.process)
        began = time.perf_counter() if self.log is not None else 0.0
        control = _UNCONTROLLED
        shedder = self.shedder if query.sheddable else None
        if shedder is not None:
            progress = self._progress(floor, floor - self.floor + self.steps_here)._replace(after=after)
            control = shedder.enumeration(query, progress)
        walk = Walk(
            test,
            test,
            checks=self.checks[qid],
            summaries=self.summaries,
            prune=engine.prune,
            order=control.order or engine.order,
            limit=control.limit,
            bit=control.bit,
            visit=control.visit,
            floor=self.compiled.floors.get(qid, -1),
        )
        projection = self.compiled.projections[qid]
        # a strategy or LIMIT chooses among all candidates: no early stop there
        quota = engine._quota if query.strategy not in SELECT and limit is None else None
        if quota is None and shedder is None and projection.plain and not engine.debug:
            plain = self._plain(query, projection, walk.run(nodes), position, cost, out)
            self._out(query, cost, walk, plain, out, began, floor)
            return
        seen: set[tuple[int, tuple[tuple[int, int], ...]]] | None = set() if engine.debug else None
        candidates: list[tuple[int, tuple[tuple[int, int], ...]]] = []
        for bottom_node, marks in walk.run(nodes):
            if seen is not None:
                if (bottom_node.pos, marks) in seen:
                    raise EngineError(
                        f"tECS invariant broken: a duplicate open complex event {(bottom_node.pos, marks)}"
                    )
                seen.add((bottom_node.pos, marks))
            if query.strict_by_filter and len(marks) != local - bottom_node.label + 1:
                continue
            candidates.append((bottom_node.pos, marks))
            if quota is not None and len(candidates) >= quota:
                break  # enough matches are out (see Engine.process)
        if shedder is not None:
            shedder.enumerated(query, progress, walk, candidates)
        if query.strategy in SELECT:
            candidates = SELECT[query.strategy](candidates)
        matches = distinct([projection.match(start, position, marks) for start, marks in candidates])
        if limit is not None and len(matches) > limit:
            matches = sorted(matches, key=limit_order)[:limit]
        self._out(query, cost, walk, self._put(query, matches), out, began, floor)

    def _enumerate_plain(
        self, qid: int, nodes: list[Node], position: int, value: float, out: list[Any], floor: int
    ) -> None:
        """``_enumerate`` where nothing but the query's window, filters and
        projection applies (no strategy, LIMIT, quota, shedder or observer),
        as most queries of a large workload: nothing is done for a query no
        start of whose window is in, and queries that differ only in their
        windows and SELECT lists walk once per event (``SharedWalks``)."""
        engine = self.engine
        query = self.plan.queries[qid]
        cost = engine.clock.per_query.get(query.name)
        if cost is None:
            cost = engine.clock.per_query[query.name] = QueryCost()
        window = self.compiled.windows[qid]
        end = position if self.by_position else value
        bound = window.bound
        # the window test on each branch's largest start key (QueryWindow.test, inlined)
        if bound == _INF:
            pass
        elif window.inclusive:
            if not any(end - n.maxkey <= bound for n in nodes):
                return
        elif not any(end - n.maxkey < bound for n in nodes):
            return
        test = window.test(end)
        compiled = self.compiled
        walk: Walk | Replay
        if compiled.walk_peers[qid]:
            walk = self.walks.replay(
                compiled.walk_class[qid],
                nodes,
                position,
                compiled.widest[qid].test(end),
                test,
                self.checks[qid],
                self.summaries,
                engine.prune,
                engine.order,
                compiled.floors.get(qid, -1),
            )
            if walk.idle:
                return  # its class walked already and found nothing: nothing to book
        else:
            walk = Walk(
                test,
                test,
                checks=self.checks[qid],
                summaries=self.summaries,
                prune=engine.prune,
                order=engine.order,
                floor=compiled.floors.get(qid, -1),
            )
        projection = compiled.projections[qid]
        plain = self._plain(query, projection, walk.run(nodes), position, cost, out)
        self._out(query, cost, walk, plain, out, 0.0, floor)

    def _plain(
        self,
        query: QueryPlan,
        projection: Projection,
        paths: Iterator[tuple[Node, tuple[tuple[int, int], ...]]],
        position: int,
        cost: QueryCost,
        out: list[Any],
    ) -> list[Any]:
        """The matches of a walk's ``paths`` where every candidate is a
        match and nothing chooses among them (``_block``). With an emit, or
        only counting, they are taken EVENT_BLOCK at a time, so one event's
        matches never need more memory than a block: every block but the
        last goes out (or is counted) here, the last is returned."""
        engine = self.engine
        if engine._emit is None and not engine.count_only:
            return self._block(query, projection, paths, position)
        chunk = list(itertools.islice(paths, EVENT_BLOCK))
        while len(chunk) == EVENT_BLOCK:
            more = list(itertools.islice(paths, EVENT_BLOCK))
            if not more:
                break
            found = self._block(query, projection, chunk, position)
            if not engine.count_only:
                if engine.crowded_at != position:
                    engine.crowded_events += 1
                    engine.crowded_at = position
                out.extend(found)
                engine.flush(out)
            cost.matches += len(found)
            chunk = more
        return self._block(query, projection, chunk, position)

    def _block(
        self,
        query: QueryPlan,
        projection: Projection,
        paths: Iterable[tuple[Node, tuple[tuple[int, int], ...]]],
        position: int,
    ) -> list[Any]:
        """The matches of ``paths``, every one a match: no candidate list,
        and ``distinct`` only when two share their events; for
        ``process_lines``, no Match objects either where no two matches
        share their events."""
        engine = self.engine
        if engine._lines is not None and projection.every_event:
            # nor Match objects: each match's (start, positions, labels),
            # then its line from a template of its labels, unless two
            # matches share their events
            # (marks are pairs: zip's strict check, on every match, would cost more than the rest)
            rows = cast(_Rows, [(bottom.pos, *zip(*marks, strict=False)) for bottom, marks in paths])
            if len(rows) > 1:
                rows.sort(key=_START_EVENTS)
                keys = list(map(_START_EVENTS, rows))  # two that share them are neighbours now
            if len(rows) < 2 or not any(map(operator.eq, keys, keys[1:])):
                made = projection.lines(engine._lines.get(query.name), position, rows)
                ranks = engine._ranks
                if ranks is not None:
                    rank = ranks[query.name]
                    return [(position, rank, line) for line in made]
                return made
            make = projection.match
            matches = [make(start, position, tuple(zip(at, labels, strict=True))) for start, at, labels in rows]
        else:
            make = projection.match
            matches = [make(bottom_node.pos, position, marks) for bottom_node, marks in paths]
        if len(matches) > 1 and len({(m.start, m.events) for m in matches}) < len(matches):
            matches = distinct(matches)
        return self._put(query, matches)

    def _put(self, query: QueryPlan, matches: list[Match]) -> list[Any]:
        """An enumeration's matches in end order, as the engine puts them
        out: Match objects, or their lines (``Engine.process_lines``)."""
        if len(matches) > 1:
            matches.sort(key=end_order)
        if self.engine._lines is None:
            return matches
        tenant = self.engine._lines.get(query.name)
        ranks = self.engine._ranks
        if ranks is not None:
            rank = ranks[query.name]
            return [(m.end, rank, m.line_of(tenant)) for m in matches]
        return [m.line_of(tenant) for m in matches]

    def _out(
        self,
        query: QueryPlan,
        cost: QueryCost,
        walk: Walk | Replay,
        found: list[Any],
        out: list[Any],
        began: float,
        floor: int,
        watched: bool = True,
    ) -> None:
        """Book an enumeration and put its matches (in end order) out; with
        ``watched``, report it to the observers too (the compiled core
        reports its walks in bulk: ``native._Observed``)."""
        engine = self.engine
        cost.truncated += walk.truncated
        engine.domain_errors += walk.domain_errors
        self._book(query, cost, walk.steps, walk.candidates, len(found))
        if not engine.count_only or query.trailing is not None:  # alerts are counted after the absence
            out.extend(found)
            if engine._quota is not None:
                engine._quota -= len(found)
        if not watched:
            return
        if self.log is not None:
            self.log.enumerated(self.number, query.name, walk.steps, time.perf_counter() - began)
        if engine.observers.queue is not None:
            # the event's service units until this query's matches are out
            engine.observers.outs.append((self.row, query.name, self.served + floor - self.floor + self.steps_here))

    def _book(self, query: QueryPlan, cost: QueryCost, steps: int, candidates: int, matches: int) -> None:
        self.engine.clock.enumeration_steps += steps
        cost.enumeration_steps += steps
        self.steps_here += steps
        cost.candidates += candidates
        cost.matches += matches

    # ------------------------------------------------------------ what shedders see (QueryGroupView)
    @property
    def window_events(self) -> int | None:
        """The query group's largest window in events (None: not counted in events)."""
        return self.compiled.window_events

    def psd_bit(self, query: int) -> int:
        """The PSD bit of the query with id ``query``."""
        return self.group.psd.bit(query)

    def state_bitmap(self, state: int) -> int:
        """The PSD bitmap of a deterministic state: the OR of its members'."""
        bitmaps = self.group.psd.bitmaps
        found = 0
        for member in self.det.states[state]:
            found |= bitmaps[member]
        return found

    def partial_matches(self) -> Iterator[tuple[Partition, int, list[Node]]]:
        """(partition, state, union-list) of every live state of every partition."""
        for instance in self.state.partitions.values():
            yield from ((instance, state, ulist) for state, ulist in instance.active.items())

    def union_list(self, partition: Partition, state: int) -> list[Node] | None:
        """The live union-list of ``state`` in ``partition`` (None: none)."""
        return partition.active.get(state)

    def take_out(self, partition: Partition, state: int, keep: list[bool]) -> int:
        """Take the partial matches of ``state``'s union-list in
        ``partition`` whose ``keep`` flag is False out of the list
        (shedding by instance); return how many were taken. Nodes created
        from them before stay valid: a removed partial match is only never
        extended again.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))]))
        >>> events = load_csv("A,1\\nA,1\\nB,1\\n", s)[0]
        >>> _ = engine.process(events.take([0, 1]))
        >>> runner = engine.runners[0]
        >>> (partition, state, ulist), = runner.partial_matches()
        >>> runner.take_out(partition, state, [True, False]), len(ulist)
        (1, 1)
        >>> [(m.start, m.end) for m in engine.process(events.take([2]))]  # only the kept one goes on
        [(1, 2)]
        """
        ulist = partition.active[state]
        kept = [node for node, flag in zip(ulist, keep, strict=True) if flag]
        removed = len(ulist) - len(kept)
        if not removed:
            return 0
        partition.merged.pop(state, None)  # its cached union no longer fits the list
        partition.counter = None  # nor do the counter's runs
        self.state.sweep_all = True  # nor may the sweep's key of its newest run
        if kept:
            ulist[:] = kept
        else:
            del partition.active[state]
            if self.tracking is not None:
                self.tracking.moved((state,), ())
        return removed

    # ------------------------------------------------------------ reports
    def live_nodes(self) -> int:
        """Nodes reachable from the live union-lists of every partition
        (see ``Engine.live_nodes``)."""
        if self.core is not None and self.core.owns:
            return self.core.live_nodes()
        return cut_old_branches(self._roots(), -_INF)  # a horizon below every key cuts nothing

    def partition_count(self) -> int:
        """Partition instances alive now (see ``Engine.partitions``); the core counts its own
        without handing its state to Python objects."""
        if self.core is not None and self.core.owns:
            return self.core.partition_count()
        return len(self.state.partitions)

    def oldest_position(self) -> float:
        """The oldest position a live run still holds (see ``Engine.oldest_position``)."""
        if self.core is not None and self.core.owns:
            return self.core.oldest_position()
        return oldest_position(self._roots())

    def _roots(self) -> list[Node]:
        return [n for inst in self.state.partitions.values() for ul in inst.active.values() for n in ul]


def _remapped(
    state: QueryGroupState, old: Determinizer, new: Determinizer, mapped: Sequence[tuple[int, ...]]
) -> QueryGroupState:
    """A query group's live state carried onto its automaton compiled again
    (``Engine.update``): each deterministic state of ``old`` becomes the set
    of states its automaton states went to (``mapped``), interned in
    ``new``; runs whose states all went end there. Two states that land on
    one have their union-lists united (no open complex event is in both:
    each run was in one state)."""
    found: dict[int, int] = {}

    def target(state: int) -> int:
        got = found.get(state)
        if got is None:
            states = frozenset(t for s in old.states[state] for t in mapped[s])
            got = found[state] = new.intern(states) if states else -1
        return got

    for key, partition in list(state.partitions.items()):
        active: dict[int, list[Node]] = {}
        for s, ulist in partition.active.items():
            t = target(s)
            if t < 0:
                continue
            if t in active:
                for node in ulist:
                    insert(active[t], node)
            else:
                active[t] = ulist
        partition.active = active
        partition.ghosts = {g for g in map(target, partition.ghosts) if g >= 0}
        partition.merged = {}  # cached unions of the old states' lists
        partition.counter = None
        if not active and not partition.ghosts:
            del state.partitions[key]
            state.evicted += 1
    state.sweep_all = True  # runs went: the sweep's keys of newest runs may be off
    return state


def _widen(state: QueryGroupState, terms: int, attributes: int) -> None:
    """Give every live node a summary of ``terms`` terms, and every output
    node the values of ``attributes`` stored attributes: a group that
    gained cross-event filters (``Engine.update``) summarizes and stores
    more. The nodes' own terms and values stay (the layers keep their
    places); the new terms get the interval of everything, which never
    prunes a branch, and the new attributes a null (only the joined
    queries read them, and they never match these events: they started
    after them)."""
    seen: set[int] = set()
    todo = [node for partition in state.partitions.values() for ulist in partition.active.values() for node in ulist]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        lows, highs = node.summary if node.summary is not None else ((), ())
        if len(lows) < terms:
            missing = terms - len(lows)
            node.summary = ((*lows, *(-_INF,) * missing), (*highs, *(_INF,) * missing))
        if node.kind == OUTPUT:
            values = node.value if isinstance(node.value, tuple) else ()
            if len(values) < attributes:
                node.value = (*values, *(None,) * (attributes - len(values)))
        todo.extend(child for child in (node.left, node.right) if child is not None)


def _newest(instance: Partition) -> float:
    """The window key of a partition's newest run (-inf: none); every run is
    outside every window once the horizon passes it."""
    return max([ulist[0].maxkey for ulist in instance.active.values()], default=-_INF)


class MatchingMemoryError(EngineError, MemoryError):
    """Matching a batch ran out of memory (a ``MemoryError``, and the engine
    layer's ``SharpCerError``): the engine's state is not to be used after.

    >>> print(MatchingMemoryError(9000))
    error: out of memory while matching a batch of 9000 events
      why: the queries' partial or complete matches outgrew memory: a window that holds many events, with Kleene
        (+) or OR and few conditions, can complete millions of matches at one event
      hint: narrow the WITHIN window or add conditions; or count the matches (sharp-cer match --count, Detector
        count_only) instead of writing them; or feed smaller batches with emit; then start a new engine
    """

    def __init__(self, events: int) -> None:
        super().__init__(
            f"error: out of memory while matching a batch of {events} events\n"
            "  why: the queries' partial or complete matches outgrew memory: a window that holds many events, "
            "with Kleene\n    (+) or OR and few conditions, can complete millions of matches at one event\n"
            "  hint: narrow the WITHIN window or add conditions; or count the matches (sharp-cer match --count, "
            "Detector\n    count_only) instead of writing them; or feed smaller batches with emit; "
            "then start a new engine"
        )
        self.events = events


class Engine:
    """Runs a plan over batches of events; ``process`` returns the matches
    each batch completes, in order of their end position.

    ``debug`` checks the tECS invariants on every node and enumeration;
    ``cache_capacity`` bounds each query group's determinization cache;
    ``allowed_lateness`` is how far (in the window's unit) a time or
    attribute window value may go back, as the loader allowed it;
    ``cut_after`` is how many nodes a partition creates before its first cut
    of out-of-window branches (later cuts wait as long as the last one left
    nodes reachable). ``count_only`` counts matches (in ``stats()`` and
    ``clock.per_query``) instead of returning them, by dynamic programming
    over the tECS where the plan allows it (``compile_plan(counting=True)``).
    ``order`` is the enumeration order (default ``DepthFirst``); ``prune`` turns the
    summaries of cross-event conditions on or off; ``skip`` turns bulk
    skipping of events that can change nothing on or off (``QueryGroupRunner.run``;
    with it, events too far from the rest of their partition to be in a
    match, ``engine.density``, and events no accepted run can mark,
    ``engine.relevance``).
    ``shedder`` sheds load (``engine.shedder_protocol``: it also caps each event's
    enumeration steps per query, for queries whose output does not depend on
    what else is output); ``record_latency`` keeps each query's latency per
    event in ``latency`` (the event's service only) and in ``queue`` (from
    its arrival, queueing included, in fixed memory per query:
    ``engine.queueing.QueueLog``; ``latency`` grows with the stream: for
    measuring, so a long-running job passes ``record_service=False`` to keep
    only ``queue``); ``queue`` judges each query's events against
    ``bounds`` (milliseconds, cost units: ``QueueLog``), or, with a shedder,
    against the shedder's bounds. ``capacity`` is
    the cost units served per second in the deterministic mode (None:
    service is wall time); ``process`` takes the events' arrivals.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A : B WITHIN 1 EVENTS", s))]))
    >>> [m.events for m in engine.process(load_csv("A,1\\nB,1\\nA,1\\nB,1\\n", s)[0])]
    [(0, 1), (2, 3)]
    """

    def __init__(
        self,
        plan: Plan,
        *,
        debug: bool = False,
        cache_capacity: int = 65536,
        allowed_lateness: float = 0,
        cut_after: int = CUT_AFTER,
        count_only: bool = False,
        order: EnumerationOrder | None = None,
        prune: bool = True,
        skip: bool = True,
        shedder: Shedder | None = None,
        record_latency: bool = False,
        record_service: bool | None = None,
        capacity: float | None = None,
        bounds: tuple[Mapping[str, float], Mapping[str, float]] | None = None,
    ) -> None:
        if shedder is not None and count_only:
            raise EngineError(
                "load shedding needs matches enumerated, and this engine only counts them (count_only=True)\n"
                "  hint: pass count_only=False, or no shedder"
            )
        self.plan = plan
        self.shedder = shedder
        self.observers = Observers(
            LatencyLog() if (record_latency if record_service is None else record_service) else None,
            QueueLog(*(bounds or ())) if record_latency else None,
            Server(capacity),
        )
        self.began = 0.0  # when the batch in process began (wall clock)
        self.skip = skip
        self.cut_after = cut_after
        self.count_only = count_only
        self.order = order
        self.prune = prune
        self.domain_errors = 0
        self.debug = debug
        self.cache_capacity = cache_capacity
        self.allowed_lateness = allowed_lateness
        self.clock = CostClock()
        self.late_window_values = 0
        # the batch in process's quota and output mode (``process``,
        # ``process_lines``), set for the call only
        self._quota: int | None = None
        self._lines: Mapping[str, str | None] | None = None
        #: with lines of several query groups, each query's rank in the caller's order: each line goes
        #: out as (end, rank, line), for the caller to order those of one end (``process_lines``)
        self._ranks: Mapping[str, int] | None = None
        self._emit: Any = None
        #: the compiled core's units and floors of the batch in process, per row, added to the
        #: Python lists once at its end (``added``): two arrays, or None while no core ran
        self._added: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
        #: events whose matches of one query were more than EVENT_BLOCK,
        #: put out in blocks (with an emit: ``process``), and the latest
        self.crowded_events = 0
        self.crowded_at: int | None = None
        # the density and relevance tests stay on under a shedder: an event in
        # no match of the whole stream is in none of a shed one either (issue 36)
        self.compiled = [
            CompiledQueryGroup(plan, k, cache_capacity=cache_capacity, allowed_lateness=allowed_lateness, skip=skip)
            for k in range(len(plan.groups))
        ]
        self.runners = [QueryGroupRunner(self, c) for c in self.compiled]
        self.absences = TrailingAbsences.of(plan, allowed_lateness)
        if self.observers.queue is not None and shedder is not None:
            self.observers.queue = QueueLog(*shedder.latency_bounds())
        self._bits: PredicateBits | None = None
        #: the plans this engine ran: the first, then the one each ``update``
        #: made (its query groups are the ones running since; ``current``)
        self.plans: list[Plan] = [plan]
        # what the predicate bits of smaller tables counted (an update grows the table)
        self._retired_errors = self._retired_rows = 0
        self._numbered = len(plan.groups)  # query groups numbered so far (``update`` numbers on)
        #: per query that joined a running query group (``update``): the first start of its matches
        self.floors: dict[int, int] = {}
        # per such query: its query group's latest window value then (``_settle_floors``)
        self._floor_values: dict[int, float] = {}
        self._next = 0  # the position after the last event seen: where an update applies

    @property
    def latency(self) -> LatencyLog | None:
        """Each query's service per event (``observers.latency``; None: not kept)."""
        return self.observers.latency

    @property
    def queue(self) -> QueueLog | None:
        """Each query's latency from arrival (``observers.queue``; None: not kept)."""
        return self.observers.queue

    @property
    def server(self) -> Server:
        """The server serving the events (``observers.server``)."""
        return self.observers.server

    def process(
        self, batch: EventBatch, arrivals: Any = None, *, quota: int | None = None, emit: Any = None
    ) -> list[Match]:
        """Feed a batch (positions must keep increasing across batches) and
        return the matches its events complete, in order of their end (one
        query's matches at one end by start, then output events).
        ``arrivals`` are the events' arrival times in seconds (a float
        array; None: now, as when fed live). ``quota`` is how many matches
        are still wanted (None: all): once that many are out, enumeration
        stops, even within one event's, and so does processing; the matches
        out are true ones, the first in end order for one query group.

        With ``emit`` (a function taking a list), the matches go to it as
        they are enumerated instead of being returned (the result is
        empty): in lists of about FLUSH_AT, each in end order and after the
        ones before (the query groups run event by event), so memory holds
        the live state and this buffer, not the batch's matches; an event's
        matches of one query beyond EVENT_BLOCK go out in blocks
        (``crowded_events``).

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))]))
        >>> [(m.start, m.end) for m in engine.process(load_csv("A,1\\nA,1\\nB,1\\n", s)[0])]
        [(0, 2), (1, 2)]
        >>> got = []
        >>> Engine(engine.plan).process(load_csv("A,1\\nB,1\\n", s)[0], emit=got.extend), got[0].events
        ([], (0, 1))
        """
        return cast(list[Match], self._run(batch, arrivals, quota, None, emit))

    def process_lines(
        self,
        batch: EventBatch,
        tenants: Mapping[str, str | None],
        arrivals: Any = None,
        *,
        quota: int | None = None,
        emit: Any = None,
        ranks: Mapping[str, int] | None = None,
    ) -> list[Any]:
        """``process``, returning the matches' output lines
        (``Match.to_json``, each query's tenant from ``tenants``) instead of
        Match objects: for a writer of one query group's matches
        (``Detector.feed_lines``), whose lines are then built without the
        objects where nothing chooses among the matches.

        With ``ranks`` (each query's rank in the writer's order), each line
        comes as ``(end, rank, line)``, in end order; those of one end and
        one query in order of start and events (but an event's blocks past
        EVENT_BLOCK, see ``process``), so the writer orders one end's lines
        by (end, rank) alone: for a plan of several query groups too.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))]))
        >>> engine.process_lines(load_csv("A,1\\nB,1\\n", s)[0], {"q": "acme"})
        ['{"query": "q", "tenant": "acme", "start": 0, "end": 1, "events": [0, 1], "vars": {"A": [0], "B": [1]}}']
        """
        if len(self.runners) > 1 and ranks is None:
            raise EngineError(
                f"Engine.process_lines needs a plan of one query group, found {len(self.runners)}: the matches "
                "of several are ordered by their ends\n  hint: use Detector.feed_lines, which handles several queries"
            )
        return self._run(batch, arrivals, quota, tenants, emit, ranks)

    def flush(self, out: list[Any]) -> None:
        """Put the matches held in ``out`` out to the emit, if there is one (``process``)."""
        if self._emit is not None and out:
            self._emit(out[:])
            out.clear()

    def _run(
        self,
        batch: EventBatch,
        arrivals: Any,
        quota: int | None,
        lines: Mapping[str, str | None] | None,
        emit: Any = None,
        ranks: Mapping[str, int] | None = None,
    ) -> list[Any]:
        # Python's cycle collector would walk every live node, match and
        # per-event list again and again within a batch (a fourth to a third
        # of the time on queries with many matches), though the engine makes
        # no reference cycles: reference counting frees its garbage. It is
        # paused for the batch and left as it was after.
        if self.absences is not None and (lines is not None or emit is not None):
            # alerts are decided after enumeration, on the batch's Match objects
            found: list[Any] = self._run(batch, arrivals, quota, None)
            if lines is not None and ranks is not None:
                found = [(m.end, ranks[m.query], m.line_of(lines.get(m.query))) for m in found]
            elif lines is not None:
                found = [m.line_of(lines.get(m.query)) for m in found]
            if emit is not None and found:
                emit(found)
                return []
            return found
        collecting = gc.isenabled()
        gc.disable()
        self._quota, self._lines, self._emit = quota, lines, emit
        self._ranks = ranks if lines is not None else None
        try:
            out = self._process(batch, arrivals)
            self.flush(out)
            return out
        except MemoryError as exc:
            if isinstance(exc, MatchingMemoryError):
                raise
            # the compiled core's std::bad_alloc arrives as a bare MemoryError, the Python engine's too
            raise MatchingMemoryError(len(batch)) from exc
        finally:
            self._quota = self._lines = self._emit = self._ranks = None
            if collecting:
                gc.enable()

    def _process(self, batch: EventBatch, arrivals: Any) -> list[Match]:
        began = self.began = time.perf_counter()
        if arrivals is None:
            arrivals = live_arrivals(len(batch))
        if self._bits is None:
            self._bits = PredicateBits(self.current.predicates, batch.event_types)
        checks_before = self._bits.checks
        # one table for every query group: an update adds atoms, never renumbers them
        atoms = self._bits.evaluate(batch)
        self.clock.condition_checks += self._bits.checks - checks_before
        # every event costs its condition checks; the query groups add their work
        per_type = np.asarray(self._bits.checks_per_type, dtype=np.int64)
        if len(batch):
            self._next = int(batch.positions[-1]) + 1
        units = per_type[batch.codes].tolist() if len(batch) else []
        update = sum(units)
        floors = list(units)
        self._added = None
        out: list[Match] = []
        observers = self.observers
        if self.shedder is not None:
            observers.backlog = Backlog(observers.server, arrivals, units, began)
        if (observers.backlog is not None or self._emit is not None) and len(self.runners) > 1:
            # event by event: one server's queue, or matches out in end order as they come
            update += self._lockstep(batch, atoms, out, units, floors)
        else:
            for runner in self.runners:
                if self._quota is not None and self._quota <= 0:
                    break
                update += runner.run(batch, atoms, out, units, floors)
        observers.backlog = None
        if self._added is not None:
            # only the Python path reads an event's units or floor as it steps, and only with a shedder
            # (which no core runs beside) or latency observers (where the core adds its units itself, in
            # group order: ``native._Observed``): adding the core's at the end is the same
            added_units, _ = self._added
            self._added = None
            units[:] = (np.asarray(units, dtype=np.int64) + added_units).tolist()
            # ``floors`` is read by no one once the groups are done (a list of this batch's): not made up to date
        if len(self.runners) > 1:
            # stable: query groups keep their order at one end
            ordered: list[Any] = out
            ordered.sort(key=_RANKED_END if self._ranks is not None else _MATCH_END)
        if self.absences is not None:
            out = self._trailing(batch, out)
        if self.floors:
            self._settle_floors()
        self.clock.record_batch(units, update)
        self.clock.wall_seconds += time.perf_counter() - began
        if units:
            self._serve(arrivals, units, began, batch.positions)
        return out

    def added(self, n: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Where the compiled core adds its units and floors per row of the batch in process (``n`` rows)."""
        if self._added is None:
            self._added = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
        return self._added

    def _trailing(self, batch: EventBatch, out: list[Match]) -> list[Match]:
        """The batch's matches with p's matches of trailing absences replaced
        by the alerts the batch's events decide (``engine.absence``), in the
        order they come out: an alert at the event that moved time past its
        deadline, after the matches ending there."""
        assert self.absences is not None
        errors = self.absences.domain_errors()
        alerts = self.absences.step(batch, out, self.clock.per_query)
        self.domain_errors += self.absences.domain_errors() - errors
        if self.count_only or not alerts:
            return out
        rows = np.searchsorted(batch.positions, [m.end for m in out]).tolist() if out else []
        merged = [(row, 0, i, m) for i, (row, m) in enumerate(zip(rows, out, strict=True))]
        merged += [(row, 1, i, m) for i, (row, m) in enumerate(alerts)]
        merged.sort(key=lambda entry: entry[:3])
        return [m for *_, m in merged]

    def advance(self, time: int) -> list[Match]:
        """Move event time to ``time`` (a primary time, ns) with no event and
        return the trailing absences' alerts whose deadline it passes (see
        ``engine.absence``; none without trailing absences)."""
        if self.absences is None:
            return []
        found = self.absences.advance(time, self.clock.per_query)
        return [] if self.count_only else found

    def _lockstep(
        self,
        batch: EventBatch,
        atoms: AtomColumns,
        out: list[Match],
        units: list[int],
        floors: list[int],
    ) -> int:
        """Run the query groups over a batch event by event, each event's query groups
        in plan order, as one server serves them: the shedder's view of the
        queue (``backlog``) then holds every query group's work on the events
        before the one in process. Returns the update units spent."""
        update = 0
        waiting: list[tuple[int, int, Generator[int, None, int]]] = []  # (next row, group, its steps)
        for number, runner in enumerate(self.runners):
            steps = runner.steps(batch, atoms, out, units, floors, lockstep=True)
            try:
                waiting.append((next(steps), number, steps))
            except StopIteration as stop:
                update += stop.value
        heapq.heapify(waiting)
        while waiting:
            _, number, steps = waiting[0]
            try:
                heapq.heapreplace(waiting, (next(steps), number, steps))
            except StopIteration as stop:
                update += stop.value
                heapq.heappop(waiting)
        for runner in self.runners:  # units the compiled core held back (``native.NativeGroup.settle``)
            if runner.core is not None:
                runner.core.settle(units, floors)
        return update

    def _serve(self, arrivals: Any, units: list[int], began: float, positions: Any = None) -> None:
        """The server's side of a batch: when it is free again, and, when
        recording, each query's latency per event (``engine.queueing``; by
        the events' ``positions``, for its bins)."""
        observers = self.observers
        server = observers.server
        capacity = server.capacity
        if capacity is not None:
            service = np.asarray(units, dtype=np.float64) / capacity
            finish = finish_times(arrivals, service, server.free)
            server.free = float(finish[-1])
        else:
            now = time.perf_counter()
            finish = np.full(len(units), max(server.free, float(arrivals.max())) + now - began)
            server.free = float(finish[-1])
            server.units += sum(units)
            server.busy += now - began
        queue = observers.queue
        if queue is None:
            return
        default = finish - arrivals  # the event's whole service: no match of the query ends here
        outs: dict[str, list[tuple[int, int]]] = {}
        for row, name, spent in observers.outs:
            outs.setdefault(name, []).append((row, spent))
        observers.outs = []
        for query in self.queries():
            seconds = default.copy()
            if capacity is not None:
                found = outs.get(query.name)
                if found:
                    rows, spent = np.array(found, dtype=np.int64).T
                    seconds[rows] = finish[rows] - service[rows] + spent / capacity - arrivals[rows]
                latency_units = seconds * capacity
            else:
                latency_units = np.asarray(units, dtype=np.float64)
                for row, spent in outs.get(query.name, ()):
                    latency_units[row] = spent
            queue.add(query.name, seconds, latency_units, positions)

    # ------------------------------------------------------------ changes
    @property
    def current(self) -> Plan:
        """The plan running now: the first, or the one the last ``update`` made."""
        return self.plans[-1]

    def update(
        self,
        added: Plan | Sequence[tuple[str, CheckedQuery]] | None = None,
        removed: Iterable[str] = (),
        shed_config: Any = None,
        *,
        position: int | None = None,
    ) -> None:
        """Change the queries while the stream runs, between two batches
        (``reference`` rule 15 says what this means for matches): the
        queries named in ``removed`` put out nothing more; the ``added``
        ones (named checked queries, or the queries of a plan) match from
        ``position`` on (default: the position after the last event seen),
        never an earlier event. The other queries' matches are untouched.
        A name both removed and added is a replaced query.

        The change is planned as the sharing planner would plan the new
        workload (``planner.compile.change_plan``): an added query joins the
        running query group it can share states with, whose automaton is
        compiled again with it (only that group: the others run on as they
        are), and the group's live partial matches are carried onto the new
        automaton, so the added query shares them; it reads only those that
        started at or after ``position`` (its *floor*, ``floors``). A group
        that loses queries is compiled again without them, and the runs
        only they could have accepted end; a group left with none is freed
        with its state. Added queries that join no group form new groups,
        whose state starts empty. An added trailing ``ABSENT(...)`` decides
        its alerts by the engine's event time from here on.

        With a shedder, ``shed_config`` is the new workload's shedding
        configuration: added queries are shed by it, running ones take their
        new bounds and weights (``shedding.base.LoadShedder.reconfigure``).

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }")
        >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))])
        >>> engine = Engine(plan)
        >>> events = load_csv("A,1\\nA,2\\nB,3\\nA,4\\nB,5\\n", s)[0]
        >>> [(m.query, m.start, m.end) for m in engine.process(events.take([0, 1]))]
        []
        >>> engine.update([("r", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))])
        >>> len(engine.runners), engine.floors  # r joined q's query group, from position 2 on
        (1, {1: 2})
        >>> [(m.query, m.start, m.end) for m in engine.process(events.take([2, 3]))]  # r saw no A yet
        [('q', 0, 2), ('q', 1, 2)]
        >>> engine.update(removed=["q"])
        >>> [(m.query, m.start, m.end) for m in engine.process(events.take([4]))]
        [('r', 3, 4)]
        >>> engine.update([("c", parse_and_check("SELECT * WHERE C PARTITION BY [k]", s))], ["r"])
        >>> [[q.name for q in r.queries] for r in engine.runners]  # r's group is gone, c has its own
        [['c']]
        """
        if self.shedder is not None and (shed_config is None or not hasattr(self.shedder, "reconfigure")):
            raise EngineError(
                "changing the queries of an engine with a shedder needs the new shedding configuration\n"
                "  hint: Detector.update gives it (shed_config)"
            )
        gone = set(removed)
        running = self.queries()
        live = {q.name for q in running}
        unknown = sorted(gone - live)
        if unknown:
            raise EngineError(
                f"cannot remove {', '.join(unknown)}: no such query runs (running: {', '.join(sorted(live))})"
            )
        if isinstance(added, Plan):
            new = [(q.name, q.trailing if q.trailing is not None else q.checked) for q in added.queries]
        else:
            new = list(added or ())
        clash = sorted({name for name, _ in new} & (live - gone))
        if clash:
            raise EngineError(
                f"cannot add {', '.join(clash)}: a query of that name runs already\n"
                "  hint: remove it in the same update to replace it"
            )
        ids = {q.id for q in running if q.name in gone}
        change = change_plan(self.current, ids, new, counting=self.count_only)
        if self.shedder is not None:  # raises before anything changed when it cannot follow
            self.shedder.reconfigure(shed_config, [q for q in running if q.name not in gone])
            for runner in self.runners:  # the enumeration order follows the new bounds and weights
                if runner.shedder is not None:
                    runner.rank = {qid: k for k, qid in enumerate(runner.shedder.ranking())}
        start = self._next if position is None else position
        self.floors = {q: f for q, f in self.floors.items() if q not in ids}
        self.floors.update(dict.fromkeys(change.joined, start))
        self._floor_values = {q: v for q, v in self._floor_values.items() if q in self.floors}
        runners = []
        for k, (source, mapped) in enumerate(zip(change.sources, change.maps, strict=True)):
            if source is not None and mapped is None:
                runners.append(self.runners[source])  # untouched
                continue
            compiled = CompiledQueryGroup(
                change.plan,
                k,
                cache_capacity=self.cache_capacity,
                allowed_lateness=self.allowed_lateness,
                skip=self.skip,
            )
            compiled.set_floors(self.floors)
            if source is None:
                runner = QueryGroupRunner(self, compiled)
                # a number no other query group had: the latency log keeps each one's events apart
                runner.number = self._numbered
                self._numbered += 1
            else:
                assert mapped is not None
                old = self.runners[source]
                state = _remapped(old.state, old.det, compiled.det, mapped)
                was, now = old.compiled.summaries, compiled.summaries
                if now is not None and (
                    was is None or len(was.keys) < len(now.keys) or len(was.attributes) < len(now.attributes)
                ):
                    _widen(state, len(now.keys), len(now.attributes))
                runner = QueryGroupRunner(self, compiled, state)
                runner.number = old.number
                det = compiled.det
                det.hits, det.misses, det.evictions = old.det.hits, old.det.misses, old.det.evictions
            runners.append(runner)
        self.runners = runners
        self.compiled = [r.compiled for r in runners]
        added_queries = change.plan.queries[len(self.current.queries) :]
        if self.absences is not None:  # before the additions: a replaced query's name comes back
            self.absences.drop(gone)
        # an added trailing ABSENT(...) decides its alerts by the event time from here on (rule 15)
        if self.absences is None:
            self.absences = TrailingAbsences.of(change.plan, self.allowed_lateness)
        else:
            self.absences.add(added_queries)
        self.plans.append(change.plan)
        joined = set(change.joined)
        for runner in runners:
            for q in runner.queries:
                if q.id in joined:
                    self._floor_values[q.id] = runner.state.latest_time
        if self._bits is not None and len(change.plan.predicates) != len(self._bits.table):
            self._retired_errors += self._bits.domain_errors
            self._retired_rows += self._bits.scalar_rows
            self._bits = PredicateBits(change.plan.predicates, self._bits.event_types)

    def _settle_floors(self) -> None:
        """Forget the floors that can no longer matter: every run that
        started before a floor is out of its query group's largest window
        for every later event (positions: the next event is that far from
        the floor; time: the group's latest time, less the allowed
        lateness, is that far past the latest time seen before it), so the
        joined query's own window keeps those starts out. Its walks are then
        again those of the queries it shares them with."""
        for runner in self.runners:
            compiled = runner.compiled
            if not compiled.floors or compiled.largest == _INF:
                continue
            kind = runner.group.window[0]
            if kind == "events":
                done = [q for q, f in compiled.floors.items() if self._next >= f + compiled.largest]
            elif kind == "time":
                latest = runner.state.latest_time - compiled.reach
                done = [q for q in compiled.floors if latest > self._floor_values.get(q, _INF)]
            else:
                continue  # attribute windows are judged per partition
            if done:
                for q in done:
                    self.floors.pop(q, None)
                    self._floor_values.pop(q, None)
                compiled.set_floors(self.floors)

    def queries(self) -> list[QueryPlan]:
        """The queries running now, in the order of their query groups (see ``update``)."""
        return [q for r in self.runners for q in r.queries if q.id not in r.dropped]

    def fingerprint(self) -> str:
        """What the engine's state depends on: its plan's fingerprint
        (``engine.state.plan_fingerprint``), after updates the current
        plan's (which holds every query that ran, and the query groups
        running)."""
        return plan_fingerprint(self.current)

    def _bit_errors(self) -> int:
        """Domain errors the predicate bits counted, of every table."""
        return (self._bits.domain_errors if self._bits else 0) + self._retired_errors

    # ------------------------------------------------------------ reports
    def live_nodes(self) -> int:
        """tECS nodes still reachable from some live run.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))]))
        >>> _ = engine.process(load_csv("A,1\\n", s)[0]); engine.live_nodes()  # an output node and its bottom
        2
        """
        return sum(r.live_nodes() for r in self.runners)

    def oldest_position(self) -> float:
        """The smallest position any later match may still include (inf:
        none): every event it marks is a node live runs reach, or an event
        not processed yet.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))]))
        >>> _ = engine.process(load_csv("B,1\\nA,1\\nB,1\\n", s)[0]); engine.oldest_position()  # the A at 1
        1
        """
        oldest = min((r.oldest_position() for r in self.runners), default=_INF)
        if self.absences is not None:
            oldest = min(oldest, self.absences.oldest_position())
        return oldest

    def partitions(self) -> int:
        """Partition instances alive now, over all query groups (see ``sweep``)."""
        return sum(r.partition_count() for r in self.runners)

    def stats(self) -> dict[str, Any]:
        """The cost clock, the determinization caches and memory figures.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.events.loaders import load_csv
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))]))
        >>> _ = engine.process(load_csv("A,1\\nB,1\\nA,1\\nB,1\\n", s)[0])
        >>> {k: engine.stats()[k] for k in ("events", "transitions", "cache_hit_rate", "partitions")}
        {'events': 4, 'transitions': 7, 'cache_hit_rate': 0.375, 'partitions': 1}
        """
        hits = sum(r.det.hits for r in self.runners)
        misses = sum(r.det.misses for r in self.runners)
        return {
            **self.clock.summary(),
            # states a marking move enters, over the automata this engine runs (Sharp's count of a plan)
            "prefix_states": sum(prefix_states(r.group.automaton) for r in self.runners),
            "deterministic_states": sum(len(r.det.states) for r in self.runners),
            "cache_hits": hits,
            "cache_misses": misses,
            "cache_hit_rate": hits / (hits + misses) if hits + misses else 0.0,
            "cache_evictions": sum(r.det.evictions for r in self.runners),
            "live_nodes": self.live_nodes(),
            "partitions": self.partitions(),
            "partitions_evicted": sum(r.state.evicted for r in self.runners),
            "domain_errors": self._bit_errors() + self.domain_errors,
            "matches": {name: cost.matches for name, cost in self.clock.per_query.items()},
            "truncated_enumerations": sum(cost.truncated for cost in self.clock.per_query.values()),
            "late_window_values": self.late_window_values,
            "events_processed": sum(r.state.processed for r in self.runners),
            "events_skipped": sum(r.state.skipped for r in self.runners),
            "scalar_rows": (self._bits.scalar_rows if self._bits else 0) + self._retired_rows,
            "events_shed": sum(r.state.input_shed for r in self.runners),
            # per query with a trailing absence: alerts whose deadline event time has not passed
            "pending_absences": self.absences.pending() if self.absences is not None else {},
        }

    # ------------------------------------------------------------ state
    def snapshot(self) -> EngineSnapshot:
        """Everything the engine holds about the stream so far, as plain
        data that pickles (``engine.state``): each query group's live
        partitions and counters, the cost clock and, with a capacity, the
        server's timeline. The logs (``observers``) are not in it: they are
        the caller's to report. See ``engine.state`` for an example.
        """
        if self.shedder is not None:
            raise EngineError(
                "a snapshot of an engine with a shedder is not supported: the shedder's own statistics "
                "would not be in it\n  hint: snapshot an engine without a shedder"
            )
        server = self.server
        engine = {
            "clock": copy.deepcopy(self.clock),
            "server": (server.free if server.capacity is not None else None, server.units, server.busy),
            "late_window_values": self.late_window_values,
            "domain_errors": self.domain_errors + self._bit_errors(),
            "absences": self.absences.state() if self.absences is not None else None,
            "floors": dict(self.floors),
            "floor_values": dict(self._floor_values),
            "next": self._next,
        }
        groups = tuple(r.state.snapshot(r.det) for r in self.runners)
        return EngineSnapshot(FORMAT_VERSION, self.fingerprint(), groups, engine)

    def restore(self, snapshot: EngineSnapshot) -> None:
        """Continue from ``snapshot`` (``Engine.snapshot`` of an engine of
        the same plan): this engine's state so far is replaced. Raises
        EngineError for a snapshot of another format version or plan."""
        snapshot.check_fingerprint(self.fingerprint())
        if self.shedder is not None:
            raise EngineError(
                "restoring into an engine with a shedder is not supported: the shedder would not know the "
                "partial matches\n  hint: restore into an engine without a shedder"
            )
        for runner, group in zip(self.runners, snapshot.groups, strict=True):
            runner.state = QueryGroupState.restore(group, runner.det)
        saved = snapshot.engine
        self.clock = copy.deepcopy(saved["clock"])
        free, self.server.units, self.server.busy = saved["server"]
        if free is not None and self.server.capacity is not None:
            self.server.free = free
        self.late_window_values = saved["late_window_values"]
        self.domain_errors = saved["domain_errors"] - self._bit_errors()
        if self.absences is not None and saved.get("absences") is not None:
            self.absences.restore(copy.deepcopy(saved["absences"]))
        self.floors = dict(saved.get("floors", {}))
        self._floor_values = dict(saved.get("floor_values", {}))
        self._next = saved.get("next", self._next)
        for runner in self.runners:
            runner.compiled.set_floors(self.floors)


_RANKED_END = operator.itemgetter(0)
_MATCH_END = operator.attrgetter("end")


def run(plan: Plan, batches: Iterable[EventBatch], **options: Any) -> list[Match]:
    """All matches of a plan over batches, in order of end position.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))])
    >>> [(m.start, m.end) for m in run(plan, [load_csv("A,1\\nB,1\\n", s)[0]])]
    [(0, 1)]
    """
    engine = Engine(plan, **options)
    out: list[Match] = []
    for batch in batches:
        out.extend(engine.process(batch))
    return out
