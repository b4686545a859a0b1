"""Which engine runs a query group: the compiled core (``engine._core``,
Cython in C++ mode) where it is exact, the Python ``QueryGroupRunner`` path
everywhere else.

The core runs CORE's Algorithm 1 over a whole batch (steps, union-lists,
depth-first enumeration with each query's window, cross-event conditions
compiled by ``condition_code``, the selection strategies and LIMIT among
one event's candidates, CONSUME BY with its ghost runs) for a query group
whose conditions that covers, with no trailing ABSENT, in an engine without
shedder, debug checks or a custom enumeration order; per batch also without
a quota, a query that joined while the stream ran (``Engine.update``'s
floors) or a dropped one. Every other group, or batch, runs on the Python
path, unchanged. An engine that only counts (``count_only``) runs a group
in the core unless a query of it is counted on the tECS without a walk
(``QueryPlan.counted``: a partition's window sums, per event about the
update's cost however many matches): the core walks as the Python path then
does and counts each walk's matches in C as the output path would put them
out (``_lines.counts``).

Lines (``Engine.process_lines``) are made in C from the core's buffers
(``_lines.lines``), a piece at a time, flushed to the emit as the Python
path flushes it, an event's blocks past EVENT_BLOCK included; in lockstep
(several groups with an emit) made per piece, put out event by event, each
as (end, rank, line) where the writer orders several queries' lines.

Under latency or queue observers (``Engine.observers``) the core walks as
the Python path then does (each query alone, a walk booked at every event
that completes the query) and its per-event units are booked in bulk: the
service log's units, the queue log's and what each query's matches cost
until they are out (``Observers.outs``) are the Python path's exactly; the
seconds are the wall time of each piece of the batch, shared among its
events and walks by their units (the Python path times each one).

The core holds its group's partitions in its own arena. Whoever reads
``runner.state.partitions`` (snapshots, ``Engine.update``, shedders, the
Python path) gets them as ``Partition`` objects with ``tecs.Node`` graphs;
from then on the Python objects are the state, and the core loads them back
at its next batch. ``SHARP_CER_PURE=1`` turns the core off.

>>> engine_line().startswith("engine: ")
True
"""

from __future__ import annotations

import functools
import importlib
import itertools
import time
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from sharp_cer.events.batch import EventBatch
from sharp_cer.events.match import line_head, line_key

from . import condition_code, density
from .core_module import CORE, WHY
from .core_module import PURE as PURE  # (the variable's name, for callers of this module)
from .cost import QueryCost
from .feed import batch_times, key_groups, keyed, partition_keys, visible, window_array, window_column
from .selection import distinct, limit_order
from .state import SWEEP_EVERY, Partition, QueryGroupState
from .symbols import AtomColumns
from .tecs import Node

#: a ``runtime.QueryGroupRunner`` (runtime imports this module, so not named here)
QueryGroupRunner = Any

_INF = float("inf")
#: strings a group's table codes beyond its live events' before it is looked at (``NativeGroup._recode``)
_STRINGS_SLACK = 1024
_CORE, _WHY = CORE, WHY  # (tests set ``_CORE`` to None to run the pure engine)


def _load_lines() -> Any:
    """The compiled JSON lines of the core's matches (``_lines.pyx``), or None: the core runs without it."""
    if _CORE is None:
        return None
    try:
        return importlib.import_module("sharp_cer.engine._lines")
    except ImportError:
        return None


_LINES = _load_lines()


def available() -> bool:
    """Whether the compiled core is built and not turned off."""
    return _CORE is not None


def engine_line() -> str:
    """One line saying which engine runs (``sharp-cer --version``, ``match``'s summary)."""
    if _CORE is not None:
        return "engine: compiled core (Cython C++) where a query group allows it, pure Python elsewhere"
    return f"engine: pure Python ({_WHY})"


def ineligible(runner: QueryGroupRunner) -> str | None:
    """Why the core cannot run ``runner``'s query group in this engine (None: it can)."""
    compiled, engine = runner.compiled, runner.engine
    if compiled.summaries is not None or any(compiled.checks.values()):
        reason = condition_code.why_not(runner)
        if reason is not None:
            return reason
    if any(q.trailing is not None for q in compiled.queries):
        return "a trailing ABSENT"
    if compiled.group.window[0] not in ("events", "time", "attribute"):
        return f"a window by {compiled.group.window[0]}"
    if engine.shedder is not None:
        return "a shedder"
    if engine.debug or engine.order is not None:
        return "debug or an enumeration order"
    if engine.count_only and any(q.counted for q in compiled.queries):
        # counted on the tECS without a walk (``QueryGroupRunner.counting``): the core would enumerate them
        return "a query counted without enumeration (count_only)"
    return None


def attach(runner: QueryGroupRunner) -> NativeGroup | None:
    """The core for ``runner``'s query group, if it is built and eligible."""
    if _CORE is None or ineligible(runner) is not None:
        return None
    return NativeGroup(runner)


class NativeGroupState(QueryGroupState):
    """A query group's state whose partitions the core holds until someone reads them."""

    __slots__ = ("native",)

    def __init__(self) -> None:
        self.native: NativeGroup | None = None
        super().__init__()

    @property  # type: ignore[override]
    def partitions(self) -> dict[Any, Partition]:
        """The partitions as Python objects (taken from the core, which lets go of them)."""
        native = self.native
        if native is not None:
            self.native = None
            _SLOT.__set__(self, native.export())
            # the Python sweep's heap and touched keys did not follow the core's steps
            self.sweep_all = True
        found: dict[Any, Partition] = _SLOT.__get__(self)
        return found

    @partitions.setter
    def partitions(self, value: dict[Any, Partition]) -> None:
        self.native = None
        _SLOT.__set__(self, value)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as a plain ``QueryGroupState`` with Python partitions: the receiving process
        (a Spark worker, one with ``SHARP_CER_PURE=1`` or without the compiled core) decides its
        own engine, and the core loads the partitions back at its next batch."""
        values = {name: getattr(self, name) for name in QueryGroupState.__slots__ if hasattr(self, name)}
        return (_plain_state, (values,))


def _plain_state(values: dict[str, Any]) -> QueryGroupState:
    """A ``QueryGroupState`` with these slots' values (an unpickled ``NativeGroupState``)."""
    state = QueryGroupState.__new__(QueryGroupState)
    for name, value in values.items():
        setattr(state, name, value)
    return state


_SLOT: Any = QueryGroupState.__dict__["partitions"]
#: output buffer entries (int64) of one piece of a batch in the core: ~8 MB
_BUDGET = 1 << 20
_COUNTERS = ("evicted", "input_shed", "latest_time", "next_sweep", "processed", "skipped")


class _Booked:
    """What ``QueryGroupRunner._out`` reads of a walk."""

    __slots__ = ("candidates", "domain_errors", "steps", "truncated")

    def __init__(self, steps: int, candidates: int) -> None:
        self.steps, self.candidates, self.truncated, self.domain_errors = steps, candidates, False, 0


class _Start:
    """A match's start, as the Python path's bottom node shows it (``pos``)."""

    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos


class NativeGroup:
    """The compiled core of one query group and its partition keys' slots."""

    def __init__(self, runner: QueryGroupRunner) -> None:
        self.runner = runner
        self.strings = condition_code.StringTable()  # the codes of the strings conditions compare
        self.recode_at = _STRINGS_SLACK  # the table's size at which it is next looked at (``_recode``)
        self.core: Any = self._make()
        self.slots: dict[Any, int] = {}
        self.free: list[int] = []
        #: the last ``_tables`` made, with what they were made for
        self._lined_tables: tuple[Any, list[Any]] | None = None
        #: observed in lockstep where every group runs in the core: the batch's units are booked once all
        #: groups are done with it (``settle``), the pieces held till then (``deferred``)
        self.settles_later = False
        self.deferred: list[_Observed] = []

    def __getstate__(self) -> dict[str, Any]:
        # the core itself does not travel: the state went as Python objects (``NativeGroupState``),
        # and the receiving process makes its own core if it has one and may use it (``takes``)
        return {
            "runner": self.runner,
            "core": None,
            "slots": {},
            "free": [],
            "_lined_tables": None,
            "settles_later": False,
            "deferred": [],
            "strings": condition_code.StringTable(),
            "recode_at": _STRINGS_SLACK,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _make(self) -> Any:
        """A new core for the runner's query group."""
        runner = self.runner
        compiled = runner.compiled
        kind = compiled.group.window[0]
        windows = [(compiled.windows[q.id].bound, compiled.windows[q.id].inclusive) for q in compiled.queries]
        core = _CORE.Core(
            compiled.det,
            compiled.symbols.bits,
            windows,
            compiled.by_position,
            float(compiled.reach),
            float(compiled.largest),
            compiled.largest != _INF and kind in ("events", "time") and not compiled.consumes,
            runner.engine.cut_after,
            float(runner.engine.allowed_lateness),
            {q.id: k for k, q in enumerate(compiled.queries)},
        )
        if compiled.summaries is not None:
            tables = condition_code.compile_group(runner, self.strings)
            core.set_conditions(tables, functools.partial(condition_code.holds, runner), self.strings)
        core.set_selection([_selection(compiled, q) for q in compiled.queries])
        if compiled.consumes:
            (query,) = compiled.queries  # a consuming query is a group of its own
            core.set_consume(query.consume, bool(compiled.checks[query.id]))
        self.strings.seal()  # the conditions' own strings keep their codes for the core's life
        return core

    @property
    def owns(self) -> bool:
        """Whether the core holds the group's partitions now."""
        state = self.runner.state
        return isinstance(state, NativeGroupState) and state.native is self

    def takes(self) -> bool:
        """Whether the core runs the next batch (else the Python path does)."""
        runner, engine = self.runner, self.runner.engine
        if self.core is None:  # unpickled: this process's own core, if it has one
            if _CORE is None:
                return False
            self.core = self._make()
        return engine._quota is None and not runner.compiled.floors and not runner.dropped and runner.shedder is None

    # ------------------------------------------------------------ state
    def _adopt(self) -> QueryGroupState:
        """The runner's state, held by the core (loaded from Python's objects if it was not)."""
        state = self.runner.state
        if isinstance(state, NativeGroupState) and state.native is self:
            return state
        partitions = state.partitions
        mine = NativeGroupState()
        for name in _COUNTERS:
            setattr(mine, name, getattr(state, name))
        self.slots = {key: k for k, key in enumerate(partitions)}
        self.free = []
        self.core.load(
            [
                (
                    k,
                    float(p.running_max),
                    p.local,
                    p.created,
                    p.reachable,
                    list(p.active.items()),
                    list(p.merged.items()),
                    sorted(p.ghosts),
                )
                for k, p in enumerate(partitions.values())
            ]
        )
        mine.native = self
        self.runner.state = mine
        return mine

    def export(self) -> dict[Any, Partition]:
        """The core's partitions as Python objects."""
        keys = {slot: key for key, slot in self.slots.items()}
        found: dict[Any, Partition] = {}
        for slot, running_max, local, created, reachable, active, merged, ghosts in self.core.export(Node):
            partition = Partition()
            partition.running_max = running_max
            partition.local = local
            partition.created = created
            partition.reachable = reachable
            partition.active = dict(active)
            partition.merged = dict(merged)
            partition.ghosts = set(ghosts)
            found[keys[slot]] = partition
        return found

    def live_nodes(self) -> int:
        """``QueryGroupRunner.live_nodes`` on the core's arena."""
        return int(self.core.reachable()[0])

    def oldest_position(self) -> float:
        """``QueryGroupRunner.oldest_position`` on the core's arena."""
        low = float(self.core.reachable()[1])
        return int(low) if low != _INF else low

    def partition_count(self) -> int:
        """``QueryGroupRunner.partition_count`` on the core's partitions."""
        return len(self.core.alive_slots())

    def arena_size(self) -> int:
        """Nodes in the core's arena (live and not compacted yet)."""
        return int(self.core.arena_size())

    def _recode(self) -> None:
        """Keep the string table to the live events' strings: it codes every string the conditions
        compare as it arrives and forgets none, so once it is more than twice what the live nodes
        can hold, the state goes to Python objects (strings as text) and the table back to the
        conditions' own strings; ``_adopt`` codes the live ones again. Looked at only each time
        the table has doubled, so the cost is amortized over the strings coded."""
        strings = self.strings
        if len(strings.names) < self.recode_at:
            return
        summaries = self.runner.compiled.summaries
        width = len(summaries.attributes) if summaries is not None else 0
        if self.owns and len(strings.names) > 2 * (strings.fixed + self.live_nodes() * width):
            self.runner.state.partitions  # noqa: B018  (the hand-over to Python objects)
            strings.forget()
        self.recode_at = 2 * len(strings.names) + _STRINGS_SLACK

    # ------------------------------------------------------------ per batch
    def steps(
        self,
        batch: EventBatch,
        atoms: AtomColumns,
        out: list[Any],
        units: list[int],
        floors: list[int],
        lockstep: bool = False,
        limits: tuple[int, int] = (1024, 10_000),
    ) -> Generator[int, None, int]:
        """``QueryGroupRunner.steps`` on the core: the whole batch at once,
        then its matches in order (in ``lockstep``, stopping before each
        event with matches); ``limits`` are runtime's FLUSH_AT and
        EVENT_BLOCK."""
        n = len(batch)
        if n == 0:
            return 0
        runner, core = self.runner, self.core
        engine, compiled, group = runner.engine, runner.compiled, runner.group
        self._recode()
        state = self._adopt()
        symbols = runner.symbols.encode(atoms, visible(group, batch) & keyed(group, batch))
        times = batch_times(batch) if group.window[0] == "time" else None
        measure = window_column(group, batch, times)
        progress: np.ndarray | None = None
        if times is not None:
            seen = np.where(times.valid & (symbols >= 0), times.values.astype(np.float64), -_INF)
            progress = np.maximum.accumulate(seen)
        sees = int(np.count_nonzero(symbols >= 0))
        relevant = False
        if measure is not None and n >= density.SMALLEST_BATCH:
            if compiled.density is not None:
                runner._drop_far(batch, symbols, measure)
            if compiled.relevance is not None:
                relevant = runner._drop_idle(batch, symbols, measure)
        live = (symbols >= 0).nonzero()[0]
        grouped = key_groups(group, batch, live)
        if grouped is None:
            slots = _CORE.assign_slots(partition_keys(group, batch, live), self.slots, self.free)
        else:  # a slot per distinct key, in order of first sight (as per event), spread to the events
            keys, which = grouped
            slots = np.ascontiguousarray(_CORE.assign_slots(keys, self.slots, self.free)[which])
        values = window_array(measure, live)
        positions = batch.positions[live].astype(np.int64)
        track = runner.index is not None and not relevant
        runner.tracking = None
        core.latest_time, core.next_sweep = float(state.latest_time), state.next_sweep
        core.evicted = core.hits = core.late = core.transitions = core.created_total = core.consume_steps = 0
        core.accepted_queries = set()
        observers = engine.observers
        observed = observers.latency is not None or observers.queue is not None
        # counting walks as the Python path then does (``_enumerate``: each query alone), so the steps agree
        core.observed = observed or engine.count_only
        self.deferred = []  # (a batch stopped by an error leaves its pieces unbooked: they are not this batch's)
        # no group reads the units of an event as it runs when every one runs in the core: book them later
        self.settles_later = (
            lockstep and observed and all(r.core is not None and r.core.takes() for r in engine.runners)
        )
        core.set_walks(
            [
                (
                    compiled.walk_class[q.id],
                    compiled.walk_peers[q.id],
                    compiled.widest[q.id].bound,
                    compiled.widest[q.id].inclusive,
                )
                for q in compiled.queries
            ]
        )
        here = progress[live] if progress is not None else np.zeros(len(live))
        rows, syms = live.astype(np.int64), symbols[live].astype(np.int32)
        here = np.ascontiguousarray(here, dtype=np.float64)
        if compiled.summaries is not None:
            core.set_values(*condition_code.columns(runner, batch, live, self.strings))
        done = update = 0
        at = 0
        while True:
            # the batch in pieces of bounded output: each piece's matches go out before the next runs
            began = time.perf_counter() if observed else 0.0
            took, at = core.run(
                rows, syms, slots, values, positions, here, times is not None, track, engine.clock.events, at, _BUDGET
            )
            done += took
            engine.domain_errors += core.domain_errors  # booked per walk on the Python path: same total
            core.domain_errors = 0
            engine.clock.enumeration_steps += core.consume_steps  # CONSUME BY's walks (``_consume``)
            core.consume_steps = 0
            for q in sorted(core.accepted_queries):
                name = compiled.queries[q].name
                if name not in engine.clock.per_query:
                    engine.clock.per_query[name] = QueryCost()
            update += yield from self._piece(batch, out, units, floors, lockstep, limits, began)
            if at >= len(rows):
                break
        # the batch's end (QueryGroupRunner._end_batch)
        if progress is not None:
            core.latest_time = max(core.latest_time, float(progress[-1]))
        if engine.clock.events + n >= core.next_sweep:
            core.sweep(int(batch.positions[-1]), track)
            core.next_sweep = (engine.clock.events + n) // SWEEP_EVERY * SWEEP_EVERY + SWEEP_EVERY
        latest = core.latest_time
        state.latest_time = latest if latest != -_INF else state.latest_time
        state.next_sweep = core.next_sweep
        state.evicted += core.evicted
        state.processed += done
        state.skipped += sees - done
        runner.det.hits += core.hits
        engine.late_window_values += core.late
        engine.clock.transitions += core.transitions
        engine.clock.nodes_created += core.created_total
        self._forget_slots()
        return update

    def _piece(
        self,
        batch: EventBatch,
        out: list[Any],
        units: list[int],
        floors: list[int],
        lockstep: bool,
        limits: tuple[int, int],
        began: float = 0.0,
    ) -> Generator[int, None, int]:
        """The last ``run``'s units booked and matches put out; its update units. Observed, the
        units go to the observers too (the run began at ``began``, ``perf_counter``'s time)."""
        records, matches, marks_at, marks_label, spent = self.core.take()
        engine = self.runner.engine
        # each event's units: its update units, and its enumeration steps
        update = int(spent[:, 1].sum()) if len(spent) else 0
        watched = engine.observers.latency is not None or engine.observers.queue is not None
        observed = _Observed(self, batch, records, spent, began) if watched and len(spent) else None
        if observed is not None and lockstep and not self.settles_later:
            # event by event, as the Python groups read the units of the events they are at
            yield from self._observed_lockstep(
                observed, batch, records, matches, marks_at, marks_label, out, units, floors, limits
            )
            return update
        if observed is not None and lockstep:
            self.deferred.append(observed)  # booked once every group is done with the batch (``settle``)
        elif observed is not None:
            self._add(records, spent, units, floors, observed)
        elif len(spent):
            # unobserved, nothing reads an event's units before the batch's end: added to the engine's
            # lists once, there (``Engine.added``)
            added_units, added_floors = self.runner.engine.added(len(batch))
            np.add.at(added_floors, spent[:, 0], spent[:, 1])
            np.add.at(added_units, spent[:, 0], spent[:, 1])
            if len(records):
                np.add.at(added_units, records[:, 1], records[:, 4])
        if engine.count_only and len(records):
            self._count(batch, records, matches, marks_at, marks_label, out, limits)
        elif len(records):
            if lockstep:
                lined = self._lined_lockstep(batch, records, matches, marks_at, marks_label, out, limits)
                if lined is not None:
                    yield from lined
                    return update
            elif self._lined(batch, records, matches, marks_at, marks_label, out, limits):
                return update
            at, labels = marks_at.tolist(), marks_label.tolist()
            yield from self._put(batch, records, matches, at, labels, out, lockstep, limits)
        return update

    def _add(
        self, records: np.ndarray, spent: np.ndarray, units: list[int], floors: list[int], observed: _Observed | None
    ) -> None:
        """Add a piece's units to its events' ``units`` (update and walks) and ``floors`` (update), booking
        them to the observers first (``observed``) with the units of the groups before this one."""
        old_floors = np.asarray(floors, dtype=np.int64)
        add = np.zeros(len(floors), dtype=np.int64)
        np.add.at(add, spent[:, 0], spent[:, 1])
        floors[:] = (old_floors + add).tolist()
        if len(records):
            np.add.at(add, records[:, 1], records[:, 4])
        old_units = np.asarray(units, dtype=np.int64)
        if observed is not None:
            observed.book(old_floors, old_units)
        units[:] = (old_units + add).tolist()

    def settle(self, units: list[int], floors: list[int]) -> None:
        """Book the pieces held back in lockstep (``settles_later``): called for every group in order once
        all are done with the batch, each group then sees exactly the units of the groups before it."""
        for observed in self.deferred:
            self._add(observed.records, observed.spent, units, floors, observed)
        self.deferred = []

    def _lined(
        self,
        batch: EventBatch,
        records: np.ndarray,
        matches: np.ndarray,
        marks_at: np.ndarray,
        marks_label: np.ndarray,
        out: list[Any],
        limits: tuple[int, int],
    ) -> bool:
        """A piece's matches put out as JSON lines made in C (``_lines.pyx``), costs booked per query, emit
        flushed where ``_put`` would flush it; False (nothing done) where ``_put`` must run instead."""
        engine = self.runner.engine
        if _LINES is None or engine._lines is None or engine.count_only:
            return False
        flush_at, event_block = limits
        tables = self._tables(engine._lines, _labels_of(marks_label))
        positions = np.ascontiguousarray(batch.positions, dtype=np.int64)

        def flush(made: list[str], crowded: int) -> None:
            if crowded >= 0 and engine.crowded_at != crowded:
                # a block of a crowded event out ahead of its last (``QueryGroupRunner._plain``)
                engine.crowded_events += 1
                engine.crowded_at = crowded
            out.extend(made)
            engine.flush(out)

        emit = engine._emit is not None
        ranks = engine._ranks
        rest = _LINES.lines(
            records, matches, marks_at, marks_label, positions, tables, event_block, len(out), flush_at,
            flush if emit else None, None if ranks is None else [ranks[q.name] for q in self.runner.compiled.queries],
        )  # fmt: skip
        if rest is None:
            return False
        self._book(records, with_matches=True)
        out.extend(rest)
        if len(out) >= flush_at and emit:
            engine.flush(out)
        return True

    def _lined_lockstep(
        self,
        batch: EventBatch,
        records: np.ndarray,
        matches: np.ndarray,
        marks_at: np.ndarray,
        marks_label: np.ndarray,
        out: list[Any],
        limits: tuple[int, int],
    ) -> Generator[int, None, None] | None:
        """``_put`` in lockstep with the piece's lines made in C at once (``_lines.pyx``): each event's
        lines put out when the groups are at it, emit flushed where ``_put`` flushes it; None (nothing
        done) where ``_put`` must run instead, as where an event has more matches of a query than
        EVENT_BLOCK (they go out in blocks, flushed amid the event's)."""
        engine = self.runner.engine
        if _LINES is None or engine._lines is None or engine.count_only:
            return None
        flush_at, event_block = limits
        counts = records[:, 3]
        if int(counts.max()) > event_block:
            return None
        tables = self._tables(engine._lines, _labels_of(marks_label))
        positions = np.ascontiguousarray(batch.positions, dtype=np.int64)
        ranks = engine._ranks
        made = _LINES.lines(
            records, matches, marks_at, marks_label, positions, tables, event_block, 0, flush_at, None,
            None if ranks is None else [ranks[q.name] for q in self.runner.compiled.queries],
        )  # fmt: skip
        if made is None:
            return None
        self._book(records, with_matches=True)
        kept = records[counts > 0]
        return self._lined_rows(kept[:, 1].tolist(), np.cumsum(kept[:, 3]).tolist(), made, out, flush_at)

    def _lined_rows(
        self, rows: list[int], ends: list[int], made: list[Any], out: list[Any], flush_at: int
    ) -> Generator[int, None, None]:
        """Each record's lines (``made[ends[k-1]:ends[k]]``) put out at its row, stopping before each row."""
        engine = self.runner.engine
        emit = engine._emit is not None
        last = -1
        begun = 0
        for row, end in zip(rows, ends, strict=True):
            if row != last:
                if last >= 0 and emit and len(out) >= flush_at:
                    engine.flush(out)
                yield row
                last = row
            out.extend(made[begun:end])
            begun = end
        if emit and len(out) >= flush_at:
            engine.flush(out)

    def _tables(self, tenants: Any, labels: tuple[int, ...]) -> list[Any]:
        """Per query (by id) what ``_lines.lines`` needs to write its lines (None: not lined): the head
        up to the start, the quoted keys of its variables in name order and per mark label (of
        ``labels``, those the piece's marks carry) the bit mask of the keys it holds, as
        ``Projection.line``'s template has them."""
        compiled = self.runner.compiled
        key = (tuple(tenants.get(q.name) for q in compiled.queries), labels)
        if self._lined_tables is not None and self._lined_tables[0] == key:
            return self._lined_tables[1]  # type: ignore[no-any-return]
        size = labels[-1] + 1 if labels else 0
        tables: list[Any] = []
        for query in compiled.queries:
            projection = compiled.projections[query.id]
            names = sorted({v for label in labels for v in projection.variables[label]})
            if not projection.every_event or len(names) > 64:
                tables.append(None)
                continue
            bit = {name: 1 << k for k, name in enumerate(names)}
            masks = [0] * size
            for label in labels:
                masks[label] = sum(bit[v] for v in set(projection.variables[label]))
            head = line_head(query.name, tenants.get(query.name)).encode("ascii")
            tables.append((head, [line_key(name).encode("ascii") for name in names], masks))
        self._lined_tables = (key, tables)
        return tables

    def _put(
        self,
        batch: EventBatch,
        records: np.ndarray,
        matches: np.ndarray,
        at: list[int],
        labels: list[int],
        out: list[Any],
        lockstep: bool,
        limits: tuple[int, int],
    ) -> Generator[int, None, None]:
        """The batch's matches, event by event, as the Python path puts them out (``_plain``, ``_out``)."""
        engine = self.runner.engine
        # Most records are walks that found nothing (a condition failed): their steps and candidates are
        # booked here for all at once, per query, and only the records with matches go through Python.
        # Skipping the others changes nothing put out: in lockstep they yielded a row at which nothing
        # went out, and ``emit`` was flushed where it is now, with nothing added in between.
        self._book(records, with_matches=False)
        records = records[records[:, 3] > 0]
        if not len(records):
            return
        put = self._putter(batch, matches, at, labels, out, limits[1])
        flush_at = limits[0]
        last = -1
        for q, row, first, count, _, _ in records.tolist():
            if row != last:
                if last >= 0 and len(out) >= flush_at and engine._emit is not None:
                    engine.flush(out)
                if lockstep:
                    yield row
                last = row
            put(q, row, first, count)
        if len(out) >= flush_at and engine._emit is not None:
            engine.flush(out)

    def _putter(
        self, batch: EventBatch, matches: np.ndarray, at: list[int], labels: list[int], out: list[Any], block: int
    ) -> Callable[[int, int, int, int], None]:
        """What puts one record's matches out (its query, row, first match and matches; ``block``: runtime's
        EVENT_BLOCK), as the Python path does (``_plain``, ``_out``); the walk's costs are booked apart."""
        runner = self.runner
        engine, compiled = runner.engine, runner.compiled
        queries, per_query = compiled.queries, engine.clock.per_query
        rows = matches.tolist()
        positions = batch.positions  # read per record with matches only: most records have none
        lines = engine._lines
        booked = _Booked(0, 0)  # steps and candidates are booked apart (``_book``)

        def put(q: int, row: int, first: int, count: int) -> None:
            query = queries[q]
            cost = per_query[query.name]
            projection = compiled.projections[query.id]
            end = int(positions[row])
            if not projection.plain:
                # the core chose the candidates (strategy, LIMIT, STRICT): the match of each, one per
                # start and events, in end order, as ``_enumerate``'s candidate path puts them out
                found = runner._put(query, _chosen(query, projection, end, rows[first : first + count], at, labels))
                runner._out(query, cost, booked, found, out, 0.0, 0, watched=False)
                return
            if lines is not None and projection.every_event and count <= block and not engine.count_only:
                # lines without Match objects, as ``_block`` makes them, unless two matches share their events
                found = _lines(lines.get(query.name), projection, end, rows[first : first + count], at, labels)
                if found is not None:
                    if engine._ranks is not None:
                        rank = engine._ranks[query.name]
                        found = [(end, rank, line) for line in found]
                    runner._out(query, cost, booked, found, out, 0.0, 0, watched=False)
                    return
            paths = (
                (_Start(start), tuple(zip(at[k : k + m], labels[k : k + m], strict=True)))
                for start, k, m in rows[first : first + count]
            )
            found = runner._plain(query, projection, paths, end, cost, out)
            runner._out(query, cost, booked, found, out, 0.0, 0, watched=False)

        return put

    def _observed_lockstep(
        self,
        observed: _Observed,
        batch: EventBatch,
        records: np.ndarray,
        matches: np.ndarray,
        marks_at: np.ndarray,
        marks_label: np.ndarray,
        out: list[Any],
        units: list[int],
        floors: list[int],
        limits: tuple[int, int],
    ) -> Generator[int, None, None]:
        """A piece's events in lockstep under observers: stopping before each processed event, as the Python
        path does, so its units are added when the groups before this one are done with it (the units the
        observers read include the groups before, never after), then its matches put out."""
        engine = self.runner.engine
        self._book(records, with_matches=False)
        put = self._putter(batch, matches, marks_at.tolist(), marks_label.tolist(), out, limits[1])
        flush_at = limits[0]
        walks = records.tolist()
        for k, row in enumerate(observed.rows.tolist()):
            yield row
            lo, hi = observed.event(k, units, floors)
            for q, _, first, count, _, _ in walks[lo:hi]:
                if count:
                    put(q, row, first, count)
            if len(out) >= flush_at and engine._emit is not None:
                engine.flush(out)

    def _count(
        self,
        batch: EventBatch,
        records: np.ndarray,
        matches: np.ndarray,
        marks_at: np.ndarray,
        marks_label: np.ndarray,
        out: list[Any],
        limits: tuple[int, int],
    ) -> None:
        """Book a piece's walks and matches where the engine only counts (``count_only``): each record's
        matches counted in C as the output path would put them out (``_lines.counts``), no Python object
        per match; the Python way (``_put``, which books without putting out) where ``_lines`` is not built."""
        if _LINES is None:
            at, labels = marks_at.tolist(), marks_label.tolist()
            for _ in self._put(batch, records, matches, at, labels, out, False, limits):
                pass  # not in lockstep: it stops nowhere
            return
        compiled = self.runner.compiled
        queries = []
        for query in compiled.queries:
            projection = compiled.projections[query.id]
            limit = query.query.limit
            shows: bytes | None = None
            if not projection.every_event:
                selected = set(projection.selected or ())
                variables = projection.variables
                shows = bytes(
                    int(any(v in selected for v in variables[label])) for label in range(len(compiled.variables))
                )
            queries.append((projection.plain, -1 if limit is None else int(limit), shows))
        found = _LINES.counts(records, matches, marks_at, marks_label, queries, limits[1])
        self._book(records, with_matches=False)
        per_query = self.runner.engine.clock.per_query
        for query, n in zip(compiled.queries, found, strict=True):
            if n:
                per_query[query.name].matches += n

    def _book(self, records: np.ndarray, with_matches: bool) -> None:
        """The bookings of ``QueryGroupRunner._out``/``_book`` for ``records``, summed per query: steps and
        candidates, and with ``with_matches`` the matches (each record's count: none was cut to distinct ones)."""
        runner, compiled, per_query = self.runner, self.runner.compiled, self.runner.engine.clock.per_query
        if not len(records):
            return
        n = len(compiled.queries)
        q = records[:, 0]
        steps = np.bincount(q, weights=records[:, 4], minlength=n).astype(np.int64).tolist()
        candidates = np.bincount(q, weights=records[:, 5], minlength=n).astype(np.int64).tolist()
        found = np.bincount(q, weights=records[:, 3], minlength=n).astype(np.int64).tolist() if with_matches else None
        for k, query in enumerate(compiled.queries):  # a record's query is its index in the group
            if steps[k] or candidates[k] or (found is not None and found[k]):
                cost = per_query[query.name]
                cost.enumeration_steps += steps[k]
                cost.candidates += candidates[k]
                if found is not None:
                    cost.matches += found[k]
        total = int(sum(steps))
        runner.engine.clock.enumeration_steps += total
        runner.steps_here += total

    def _forget_slots(self) -> None:
        """Give back the slots of partitions gone, once they are many."""
        alive = self.core.alive_slots()
        if len(self.slots) <= 2 * len(alive) + 64:
            return
        keep = set(alive)
        kept = [(key, slot) for key, slot in self.slots.items() if slot in keep]
        self.core.remap_slots([(slot, k) for k, (_, slot) in enumerate(kept)])
        self.slots = {key: k for k, (key, _) in enumerate(kept)}
        self.free = []


class _Observed:
    """A piece of a batch as the observers take it (``Observers``; ``QueryGroupRunner.step`` and ``_out``
    book the same event by event): per processed event (``rows``, in order) the group's update units,
    booked as the event's floor in the service log; per walk (a record of the core, in the order the
    Python path walks: by event, then the group's queries in order) its steps, booked as the query's
    enumeration at its event, and what the event's service has cost when the walk's matches are out (the
    units of the groups before this one, this group's update, its walks so far: ``Observers.outs``).
    The piece's wall time is shared among its events and walks by their units, plus one each."""

    def __init__(self, group: NativeGroup, batch: EventBatch, records: np.ndarray, spent: np.ndarray, began: float):
        runner = group.runner
        observers = runner.engine.observers
        self.log, self.queue, self.outs = observers.latency, observers.queue, observers.outs
        self.number = runner.number
        self.names = [q.name for q in runner.compiled.queries]
        self.records, self.spent = records, spent
        self.rows, self.update = spent[:, 0], spent[:, 1]
        self.positions = batch.positions[self.rows].astype(np.int64)
        steps = records[:, 4]
        elapsed = time.perf_counter() - began
        share = elapsed / (int(self.update.sum()) + len(self.update) + int(steps.sum()) + len(steps))
        self.floor_seconds = (self.update + 1) * share
        self.walk_seconds = (steps + 1) * share
        # each walk's event among the processed ones, and its walks' steps up to it (itself included)
        self.of = np.searchsorted(self.rows, records[:, 1])
        done = np.cumsum(steps)
        first = np.ones(len(steps), dtype=bool)
        first[1:] = records[1:, 1] != records[:-1, 1]
        begins = np.maximum.accumulate(np.where(first, np.arange(len(steps)), 0)) if len(steps) else first
        self.through = done - (done - steps)[begins]

    def book(self, floors: np.ndarray, units: np.ndarray) -> None:
        """Book the whole piece, the events' ``floors`` and ``units`` being what the groups before this one
        left (every one done with the piece's events: not in lockstep)."""
        records, rows = self.records, self.rows
        if self.log is not None:
            base = self.log.floors(
                self.number,
                (floors[rows] + self.update).tolist(),
                self.floor_seconds.tolist(),
                self.positions.tolist(),
            )
            if len(records):
                at, queries = base + self.of, records[:, 0]
                for q in _labels_of(queries):
                    mine = queries == q
                    self.log.walks(
                        self.names[q], at[mine].tolist(), records[mine, 4].tolist(), self.walk_seconds[mine].tolist()
                    )
        if self.queue is not None and len(records):
            spent = units[records[:, 1]] + self.update[self.of] + self.through
            names = self.names
            self.outs.extend(
                zip(records[:, 1].tolist(), [names[q] for q in records[:, 0].tolist()], spent.tolist(), strict=True)
            )

    def event(self, k: int, units: list[int], floors: list[int]) -> tuple[int, int]:
        """Book the piece's ``k``-th processed event, the groups before this one being done with it, and add
        its units to ``units`` and ``floors``; its walks' range among the records."""
        if k == 0:  # the lists, made once per piece
            self._rows, self._update = self.rows.tolist(), self.update.tolist()
            self._fsec, self._positions = self.floor_seconds.tolist(), self.positions.tolist()
            self._wsec, self._walks = self.walk_seconds.tolist(), self.records[:, [0, 4]].tolist()
            bounds = np.searchsorted(self.records[:, 1], self.rows, side="left").tolist()
            self._bounds = [*bounds, len(self.records)]
        row, update = self._rows[k], self._update[k]
        lo, hi = self._bounds[k], self._bounds[k + 1]
        served = units[row]
        floors[row] = floor = floors[row] + update
        log, names = self.log, self.names
        if log is not None:
            log.floor(self.number, floor, self._fsec[k], self._positions[k])
        spent = served + update
        for j in range(lo, hi):
            q, steps = self._walks[j]
            spent += steps
            if log is not None:
                log.enumerated(self.number, names[q], steps, self._wsec[j])
            if self.queue is not None:
                self.outs.append((row, names[q], spent))
        units[row] = spent
        return lo, hi


_STRATEGIES = {"NEXT": 1, "LAST": 2, "MAX": 3}


def _selection(compiled: Any, query: Any) -> tuple[bool, int, int, bool, int, list[int]]:
    """What the core's ``set_selection`` takes of a query: whether every candidate is a match, its
    strategy, LIMIT (-1: none), STRICT checked on marks, what a match shows (0 every marked event,
    1 none, 2 the events of the labels flagged) and per mark label of the plan whether a match shows
    its event (``Projection.parts``: a mark shows if one of its variables is selected)."""
    projection = compiled.projections[query.id]
    limit = query.query.limit
    shows, shown = 0, []
    if projection.select_none:
        shows = 1
    elif projection.selected is not None:
        shows = 2
        if not projection.plain:
            selected = set(projection.selected)
            variables = projection.variables
            shown = [int(any(v in selected for v in variables[label])) for label in range(len(compiled.variables))]
    return (
        projection.plain,
        _STRATEGIES.get(query.strategy, 0),
        -1 if limit is None else int(limit),
        bool(query.strict_by_filter),
        shows,
        shown,
    )


def _chosen(
    query: Any, projection: Any, end: int, rows: list[list[int]], at: list[int], labels: list[int]
) -> list[Any]:
    """The matches of a query's chosen candidates ending at ``end`` (``rows``: start, first mark, marks):
    one per start and events (``distinct``), at most LIMIT of them (the core kept the candidates of
    that many)."""
    make = projection.match
    matches = distinct(
        [make(start, end, tuple(zip(at[k : k + m], labels[k : k + m], strict=True))) for start, k, m in rows]
    )
    limit = query.query.limit
    if limit is not None and len(matches) > limit:
        matches = sorted(matches, key=limit_order)[:limit]
    return matches


def _lines(
    tenant: str | None, projection: Any, end: int, rows: list[list[int]], at: list[int], labels: list[int]
) -> list[str] | None:
    """The output lines of one query's matches ending at ``end`` (``rows``: start, first mark, marks), in
    end order; None where two share their start and events (``_block`` then picks by variables)."""
    found = [(start, at[k : k + m], tuple(labels[k : k + m])) for start, k, m in rows]
    if len(found) > 1:
        found.sort(key=_START_EVENTS)
        keys = [(start, events) for start, events, _ in found]
        if any(a == b for a, b in itertools.pairwise(keys)):
            return None
    line = projection.line
    return [line(tenant, start, end, events, labelled) for start, events, labelled in found]


def _labels_of(marks_label: np.ndarray) -> tuple[int, ...]:
    """The distinct values of small non-negative codes (a piece's mark labels, its records' queries),
    ascending: counted, not
    sorted, and without ``np.unique``, whose plain form imports ``numpy.ma`` (~17 ms of a process's start).

    >>> _labels_of(np.array([3, 1, 3, 0])), _labels_of(np.array([], dtype=np.int64))
    ((0, 1, 3), ())
    """
    return tuple(np.flatnonzero(np.bincount(marks_label)).tolist())


def _START_EVENTS(row: tuple[int, list[int], tuple[int, ...]]) -> tuple[int, list[int]]:
    return row[0], row[1]
