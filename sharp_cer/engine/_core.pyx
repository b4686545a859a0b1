# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled core: Algorithm 1 of CORE over a whole batch, for the query
groups ``engine.native`` finds it exact for (no cross-event condition,
strategy ALL, no shedder or observer; see ``native.eligible``).

It mirrors ``runtime.QueryGroupRunner.step`` and ``Walk.run`` (depth-first)
decision for decision, on integers: deterministic states are the
determinizer's ids, with a dense (state x symbol) table of steps filled
lazily by calling ``Determinizer.step`` on a miss; tECS nodes are structs in
an arena, addressed by int32 ids (children always older, so smaller ids);
union-lists are int vectors per partition. The skip index of idle symbols
(``engine.skipping``), the sweeps and the cuts of out-of-window branches run
here as in Python, so the figures of ``Engine.stats`` stay equal. The arena
is compacted to what live union-lists reach once it doubles, so memory
follows the live state, not the stream's length.

Matches come out as flat rows (query, batch row, start, end, marks'
offset), the marks' positions and labels in two flat buffers; Python turns
them into Match objects or lines as the Python path does.
"""

from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

import numpy as np

cdef enum:
    BOTTOM = 0
    OUTPUT = 1
    UNION = 2

cdef double INF = float("inf")


cdef inline bint _within(double distance, double bound, bint inclusive):
    """A window test (``QueryWindow.test``): NaN distances fail both ways."""
    return distance <= bound if inclusive else distance < bound


cdef struct CNode:
    int32_t kind
    int32_t left
    int32_t right
    int64_t label
    int64_t pos
    int64_t maxstart
    double maxkey
    double value


cdef struct Part:
    bint alive
    double running_max
    int64_t local
    int64_t created
    int64_t reachable
    vector[int32_t] states
    vector[vector[int32_t]] lists
    vector[int32_t] mstates  # the merged cache: a final state's list as one node
    vector[int32_t] mnodes


cdef class Core:
    """The live state and compiled steps of one query group (see the module docstring)."""

    cdef vector[CNode] nodes
    cdef vector[Part] parts
    # steps: per state, per symbol, an offset into ``stepdata`` (-1: not known yet);
    # at the offset: number of marks m, then m (label, target) pairs, then the skip target
    cdef vector[vector[int32_t]] table
    cdef vector[int32_t] stepdata
    cdef vector[vector[int32_t]] finals  # per state, the group's query indices it accepts, in rank order
    cdef vector[char] known_state
    # the skip index (engine.skipping): per state its busy symbols, judged on the first ``rowknown``
    cdef vector[vector[int32_t]] rows
    cdef vector[int32_t] rowknown
    cdef vector[int64_t] counts
    cdef vector[int64_t] busy
    cdef vector[int32_t] startrow
    cdef int32_t startknown
    # per query: window bound and inclusiveness
    cdef vector[double] bounds
    cdef vector[int32_t] inclusive
    cdef public object det
    cdef public object bits  # the symbol table's bits (a list that grows)
    cdef public object query_index  # query id -> index in the group, rank order
    cdef int32_t initial
    cdef bint by_position
    cdef double reach
    cdef double largest
    cdef bint sweeps
    cdef int64_t cut_after
    cdef double allowed_lateness
    cdef public int64_t hits, evicted, late, transitions, created_total, next_sweep
    cdef public double latest_time
    cdef int64_t compact_at
    # whether the determinizer may have forgotten a step (``Determinizer.memo`` emptied or its cache
    # evicting): it cannot while fewer steps than its capacity were ever computed
    cdef bint forgets
    # scratch
    cdef vector[int32_t] nstates
    cdef vector[vector[int32_t]] nlists
    cdef vector[int32_t] stamp  # per state: index in nstates + 1 at this event's stamp
    cdef vector[int64_t] stampat
    cdef int64_t clock
    cdef vector[int32_t] marks_tmp
    cdef vector[int32_t] created_ids
    cdef vector[int32_t] pend_node
    cdef vector[int32_t] pend_depth
    cdef vector[int64_t] path_pos
    cdef vector[int64_t] path_lab
    cdef vector[int32_t] mark
    cdef int32_t markgen
    cdef vector[vector[int32_t]] accepted
    # output
    cdef vector[int64_t] o_rec  # per enumeration: query, row, first match, matches, steps, candidates
    cdef vector[int64_t] o_match  # per match: start, first mark, marks
    cdef vector[int64_t] o_pos
    cdef vector[int64_t] o_lab
    cdef vector[int64_t] o_spent  # per processed event: row, update units
    cdef public object accepted_queries
    # shared walks (SharedWalks): per query its class and whether it shares; per class the widest window
    # and, at this event, the roots walked and the range of their paths in c_path/c_value
    cdef vector[int32_t] wclass
    cdef vector[int32_t] wpeer
    cdef vector[double] wbound
    cdef vector[int32_t] wincl
    cdef vector[int64_t] cls_stamp
    cdef vector[vector[int32_t]] cls_roots
    cdef vector[int64_t] cls_first
    cdef vector[int64_t] cls_count
    cdef vector[int64_t] c_path
    cdef vector[double] c_value

    def __init__(self, det, bits, list windows, bint by_position, double reach, double largest, bint sweeps,
                 int64_t cut_after, double allowed_lateness, dict query_index):
        self.det = det
        self.bits = bits
        self.initial = det.initial
        self.by_position = by_position
        self.reach = reach
        self.largest = largest
        self.sweeps = sweeps
        self.cut_after = cut_after
        self.allowed_lateness = allowed_lateness
        self.query_index = query_index
        cdef int32_t flag
        for bound, incl in windows:
            self.bounds.push_back(bound)
            flag = 1 if incl else 0
            self.inclusive.push_back(flag)
        self.accepted.resize(len(windows))
        self.hits = self.evicted = self.late = self.transitions = self.created_total = 0
        self.next_sweep = 0
        self.latest_time = -INF
        self.compact_at = 1 << 16
        self.startknown = 0
        self.clock = 0
        self.markgen = 0
        self.accepted_queries = set()

    # ------------------------------------------------------------ determinizer
    cdef void _know_state(self, int32_t state) except *:
        cdef int32_t n = <int32_t>self.table.size()
        if state < n and self.known_state[state]:
            return
        if state >= n:
            self.table.resize(state + 1)
            self.known_state.resize(state + 1, 0)
            self.finals.resize(state + 1)
            self.rows.resize(state + 1)
            self.rowknown.resize(state + 1, 0)
            self.counts.resize(state + 1, 0)
            self.stamp.resize(state + 1, 0)
            self.stampat.resize(state + 1, -1)
        self.known_state[state] = 1
        index = self.query_index
        found = sorted(index[q] for q in self.det.finals[state] if q in index)
        for k in found:
            self.finals[state].push_back(k)

    cdef int32_t _step(self, int32_t state, int32_t sym) except -2:
        """The offset of the step of ``state`` on ``sym`` in ``stepdata``."""
        cdef vector[int32_t]* row = &self.table[state]
        cdef int32_t off
        if <int32_t>row.size() > sym:
            off = row[0][sym]
            if off >= 0:
                if not self.forgets:
                    self.hits += 1
                elif (state, self.bits[sym]) in self.det.memo:
                    self.hits += 1  # what the Python path finds in the memo
                else:
                    # the determinizer forgot this step (its memo was emptied, its cache full): the
                    # Python path asks it again, a hit or a miss of its cache; so does the core, for
                    # equal figures (only with a cache smaller than the steps in use)
                    self.det.step(state, self.bits[sym])
                return off
        marks, skip = self.det.step(state, self.bits[sym])
        self.forgets = self.det.misses >= self.det.capacity
        row = &self.table[state]
        if <int32_t>row.size() <= sym:
            row.resize(sym + 1, -1)
        off = <int32_t>self.stepdata.size()
        self.stepdata.push_back(len(marks))
        for label, target in marks:
            self.stepdata.push_back(label)
            self.stepdata.push_back(target)
            self._know_state(target)
        self.stepdata.push_back(skip)
        if skip >= 0:
            self._know_state(skip)
        row = &self.table[state]  # a new state may have moved the table
        row[0][sym] = off
        return off

    # ------------------------------------------------------------ the skip index
    cdef vector[int32_t]* _row(self, int32_t state) except NULL:
        """The symbols busy for ``state`` (-1: those that start a run)."""
        cdef int32_t nsym = len(self.bits)
        cdef int32_t s
        cdef vector[int32_t]* row
        if state < 0:
            row = &self.startrow
            if self.startknown < nsym:
                for s in range(self.startknown, nsym):
                    if self.det.starts(self.bits[s]):
                        row.push_back(s)
                self.startknown = nsym
            return row
        row = &self.rows[state]
        if self.rowknown[state] < nsym:
            for s in range(self.rowknown[state], nsym):
                if not self.det.idle(state, self.bits[s]):
                    row.push_back(s)
            self.rowknown[state] = nsym
        return row

    def reset_index(self):
        """``SkipIndex.reset`` from the live partitions' states."""
        cdef int32_t nsym = len(self.bits)
        cdef size_t i, j
        cdef int32_t s
        cdef vector[int32_t]* row
        for i in range(self.counts.size()):
            self.counts[i] = 0
        self.busy.assign(nsym, 0)
        for i in range(self.parts.size()):
            if self.parts[i].alive:
                for j in range(self.parts[i].states.size()):
                    self.counts[self.parts[i].states[j]] += 1
        row = self._row(-1)
        for j in range(row.size()):
            self.busy[row[0][j]] += 1
        for i in range(self.counts.size()):
            if self.counts[i] > 0:
                row = self._row(<int32_t>i)
                for j in range(row.size()):
                    self.busy[row[0][j]] += 1

    cdef void _moved_out(self, int32_t state) except *:
        cdef vector[int32_t]* row
        cdef size_t j
        self.counts[state] -= 1
        if self.counts[state] == 0:
            row = self._row(state)
            for j in range(row.size()):
                self.busy[row[0][j]] -= 1

    cdef void _moved_in(self, int32_t state) except *:
        cdef vector[int32_t]* row
        cdef size_t j
        self.counts[state] += 1
        if self.counts[state] == 1:
            row = self._row(state)
            for j in range(row.size()):
                self.busy[row[0][j]] += 1

    # ------------------------------------------------------------ the tECS
    cdef inline int32_t _new(self, int32_t kind, int64_t pos, int64_t label, int32_t left, int32_t right,
                             int64_t maxstart, double maxkey, double value):
        cdef CNode n
        n.kind = kind
        n.pos = pos
        n.label = label
        n.left = left
        n.right = right
        n.maxstart = maxstart
        n.maxkey = maxkey
        n.value = value
        self.nodes.push_back(n)
        return <int32_t>self.nodes.size() - 1

    cdef inline int32_t _union_node(self, int32_t left, int32_t right):
        cdef int64_t ms = self.nodes[left].maxstart
        cdef double mk = self.nodes[left].maxkey
        return self._new(UNION, -1, -1, left, right, ms, mk, 0.0)

    cdef int32_t _union(self, int32_t n1, int32_t n2):
        """tecs.union: CORE Figure 5 a-d."""
        if self.nodes[n1].kind == UNION and self.nodes[n1].right < 0:
            n1 = self.nodes[n1].left
        if self.nodes[n2].kind == UNION and self.nodes[n2].right < 0:
            n2 = self.nodes[n2].left
        if self.nodes[n1].kind != UNION:
            return self._union_node(n1, n2)
        if self.nodes[n2].kind != UNION:
            return self._union_node(n2, n1)
        cdef int32_t r1 = self.nodes[n1].right, r2 = self.nodes[n2].right
        cdef int32_t l1 = self.nodes[n1].left, l2 = self.nodes[n2].left
        cdef int32_t u2
        if self.nodes[r1].maxstart >= self.nodes[r2].maxstart:
            u2 = self._union_node(r1, r2)
        else:
            u2 = self._union_node(r2, r1)
        return self._union_node(l1, self._union_node(l2, u2))

    cdef inline bint _is_union(self, int32_t n):
        return self.nodes[n].kind == UNION and self.nodes[n].right >= 0

    cdef int64_t _insert(self, vector[int32_t]* ulist, int32_t node):
        """tecs.insert; the unions created."""
        cdef int64_t m = self.nodes[node].maxstart
        cdef size_t i
        cdef int32_t old
        if m > self.nodes[ulist[0][0]].maxstart:
            ulist.insert(ulist.begin(), node)
            return 0
        for i in range(1, ulist.size()):
            old = ulist[0][i]
            if self.nodes[old].maxstart == m:
                ulist[0][i] = self._union(old, node)
                return 3 if self._is_union(old) and self._is_union(node) else 1
            if self.nodes[old].maxstart < m:
                ulist.insert(ulist.begin() + i, node)
                return 0
        ulist.push_back(node)
        return 0

    cdef int32_t _merge(self, vector[int32_t]* ulist, int64_t* created):
        cdef int32_t node = ulist[0][ulist.size() - 1]
        cdef int64_t i
        for i in range(<int64_t>ulist.size() - 2, -1, -1):
            node = self._union_node(ulist[0][i], node)
        created[0] += <int64_t>ulist.size() - 1
        return node

    cdef int64_t _cut(self, Part* part, double horizon):
        """tecs.cut_old_branches over a partition's lists; the nodes still reachable."""
        self.markgen += 1
        if self.mark.size() < self.nodes.size():
            self.mark.resize(self.nodes.size(), 0)
        cdef int64_t seen = 0
        cdef int32_t n, right
        cdef size_t i, j
        self.pend_node.clear()
        for i in range(part.lists.size()):
            for j in range(part.lists[i].size()):
                self.pend_node.push_back(part.lists[i][j])
        while self.pend_node.size():
            n = self.pend_node.back()
            self.pend_node.pop_back()
            if self.mark[n] == self.markgen:
                continue
            self.mark[n] = self.markgen
            seen += 1
            if self.nodes[n].kind == UNION:
                right = self.nodes[n].right
                if right >= 0 and self.nodes[right].maxkey < horizon:
                    self.nodes[n].right = -1
                    right = -1
                self.pend_node.push_back(self.nodes[n].left)
                if right >= 0:
                    self.pend_node.push_back(right)
            elif self.nodes[n].kind == OUTPUT:
                self.pend_node.push_back(self.nodes[n].left)
        return seen

    # ------------------------------------------------------------ the batch
    def run(self, int64_t[::1] rows, int32_t[::1] syms, int32_t[::1] slots, double[::1] values,
            int64_t[::1] positions, double[::1] progress, bint times, bint track, int64_t base_events,
            int64_t first=0, int64_t budget=-1):
        """Process the events (``rows`` of the batch; their symbols,
        partition slots, window values, positions and the stream's
        progress up to each) from index ``first``; return (the events
        processed, the index to go on from: ``len(rows)`` when done). With a
        ``budget`` (>= 0), it stops after the event at which the output
        buffers pass that many entries, so a batch's matches go out in
        pieces (``Engine.process``'s ``emit`` keeps memory bounded). The
        matches and per-event units are then read with ``take``."""
        cdef int64_t n = rows.shape[0]
        cdef int64_t i, done = 0
        cdef int32_t sym, slot
        cdef int32_t nsym = len(self.bits)
        cdef int32_t nslots = 0
        for i in range(n):
            if slots[i] >= nslots:
                nslots = slots[i] + 1
        if <int32_t>self.parts.size() < nslots:
            self.parts.resize(nslots)
        self._know_state(self.initial)
        self.forgets = self.det.misses >= self.det.capacity
        if track:
            self.reset_index()
        self.o_rec.clear()
        self.o_match.clear()
        self.o_pos.clear()
        self.o_lab.clear()
        self.o_spent.clear()
        for i in range(first, n):
            sym = syms[i]
            if track and self.busy[sym] <= 0:
                continue  # idle for every live state: it changes nothing
            self._event(rows[i], positions[i], sym, values[i], slots[i], track)
            done += 1
            if base_events + rows[i] + 1 >= self.next_sweep:
                if times and progress[i] > self.latest_time:
                    self.latest_time = progress[i]
                self.sweep(positions[i], track)
                self.next_sweep = (base_events + rows[i] + 1) // 1024 * 1024 + 1024
            if <int64_t>self.nodes.size() > self.compact_at:
                self._compact()
            if budget >= 0 and <int64_t>(self.o_pos.size() + self.o_match.size()) > budget:
                return done, i + 1
        return done, n

    def sweep(self, int64_t position, bint track):
        """``QueryGroupRunner.sweep``: evict partitions whose every run is out of every window for good."""
        if not self.sweeps:
            return
        cdef double horizon = (position if self.by_position else self.latest_time) - self.reach
        cdef size_t i, j
        cdef bint old
        for i in range(self.parts.size()):
            if not self.parts[i].alive:
                continue
            old = True
            for j in range(self.parts[i].lists.size()):
                if not (self.nodes[self.parts[i].lists[j][0]].maxkey < horizon):
                    old = False
                    break
            if old:
                self._drop(&self.parts[i], track)

    cdef void _drop(self, Part* part, bint track) except *:
        cdef size_t j
        if track:
            for j in range(part.states.size()):
                self._moved_out(part.states[j])
        self._clear(part)
        self.evicted += 1

    cdef void _clear(self, Part* part):
        part.alive = False
        part.states.clear()
        part.lists.clear()
        part.mstates.clear()
        part.mnodes.clear()

    cdef void _event(self, int64_t row, int64_t position, int32_t sym, double value, int32_t slot,
                     bint track) except *:
        cdef int32_t initial = self.initial
        cdef int64_t hits0 = self.hits
        cdef int32_t start = self._step(initial, sym)
        cdef bint dead = self.stepdata[start] == 0 and self.stepdata[start + 1] < 0
        cdef Part* part = &self.parts[slot]
        cdef int64_t transitions = 0, unions = 0, created = 0
        cdef double horizon
        cdef size_t e, k, nold
        cdef int32_t state, off, nm, skip, label, target, node, out, length, idx, q, first
        cdef bint isfirst
        cdef vector[int32_t]* ulist
        if not part.alive:
            if dead:
                if value > self.latest_time:
                    self.latest_time = value
                self.evicted += 1
                self.o_spent.push_back(row)
                self.o_spent.push_back(0)
                return
            part.alive = True
            part.running_max = -INF
            part.local = -1
            part.created = 0
            part.reachable = 0
        if value > self.latest_time:
            self.latest_time = value
        if value == value and value > part.running_max:
            part.running_max = value
        elif value < part.running_max - self.allowed_lateness:
            self.late += 1
        horizon = (position if self.by_position else part.running_max) - self.reach
        part.local += 1
        # the new lists: nstates[k] -> nlists[k]; stamp finds a state's index
        self.clock += 1
        self.c_path.clear()
        self.c_value.clear()
        self.nstates.clear()
        nold = part.states.size()
        self.created_ids.clear()
        first = -1
        if not dead:
            first = self._new(BOTTOM, position, part.local, -1, -1, position, part.running_max, value)
            created += 1
        for e in range(nold + (0 if dead else 1)):
            isfirst = not dead and e == 0
            if isfirst:
                state = initial
                self.marks_tmp.assign(1, first)
                ulist = &self.marks_tmp
                length = 1
            else:
                k = e - (0 if dead else 1)
                state = part.states[k]
                ulist = &part.lists[k]
                length = <int32_t>ulist.size()
                while ulist.size() and self.nodes[ulist.back()].maxkey < horizon:
                    ulist.pop_back()
            if not ulist.size():
                continue
            off = start if state == initial else self._step(state, sym)
            nm = self.stepdata[off]
            skip = self.stepdata[off + 1 + 2 * nm]
            node = -1
            if nm or (skip >= 0 and self._index_of(skip) >= 0):
                if ulist.size() == 1:
                    node = ulist[0][0]
                elif <int32_t>ulist.size() == length and (not isfirst) and self._merged(part, state) >= 0:
                    node = self._merged(part, state)
                else:
                    node = self._merge(ulist, &created)
                for k in range(<size_t>nm):
                    label = self.stepdata[off + 1 + 2 * k]
                    target = self.stepdata[off + 2 + 2 * k]
                    out = self._new(OUTPUT, position, label, node, -1, self.nodes[node].maxstart,
                                    self.nodes[node].maxkey, 0.0)
                    created += 1
                    idx = self._index_of(target)
                    if idx < 0:
                        self._add_new(target).assign(1, out)
                    else:
                        unions += self._insert(&self.nlists[idx], out)
                transitions += nm
            if skip >= 0:
                transitions += 1
                idx = self._index_of(skip)
                if idx < 0:
                    self._add_new(skip)[0] = ulist[0]
                else:
                    unions += self._insert(&self.nlists[idx], node)
        if track:
            self._track(part)
        # the new lists become the partition's
        nold = self.nstates.size()
        part.states.assign(self.nstates.begin(), self.nstates.end())
        if part.lists.size() < nold:
            part.lists.resize(nold)
        for k in range(nold):
            part.lists[k].swap(self.nlists[k])
        part.lists.resize(nold)
        part.mstates.clear()
        part.mnodes.clear()
        if nold == 0:
            self._clear(part)
            self.evicted += 1
        # the queries accepted, each with its final nodes in the lists' order
        cdef bint any_accepted = False
        for k in range(self.accepted.size()):
            self.accepted[k].clear()
        for k in range(nold):
            state = part.states[k]
            if self.finals[state].size():
                ulist = &part.lists[k]
                if ulist.size() == 1:
                    node = ulist[0][0]
                else:
                    node = self._merge(ulist, &created)
                    part.mstates.push_back(state)
                    part.mnodes.push_back(node)
                for e in range(self.finals[state].size()):
                    self.accepted[self.finals[state][e]].push_back(node)
                    any_accepted = True
        cdef int64_t steps = 0
        if any_accepted:
            for q in range(<int32_t>self.accepted.size()):
                if self.accepted[q].size():
                    steps += self._enumerate(q, row, position, value)
        cdef int64_t nodes = created + unions
        if nold and horizon > -INF:
            part.created += nodes
            if part.created > max(self.cut_after, part.reachable):
                part.reachable = self._cut(part, horizon)
                part.created = 0
        self.transitions += transitions
        self.created_total += nodes
        self.o_spent.push_back(row)
        self.o_spent.push_back(transitions + nodes)

    cdef inline int32_t _index_of(self, int32_t state):
        if self.stampat[state] == self.clock:
            return self.stamp[state]
        return -1

    cdef vector[int32_t]* _add_new(self, int32_t state):
        cdef int32_t k = <int32_t>self.nstates.size()
        self.nstates.push_back(state)
        self.stamp[state] = k
        self.stampat[state] = self.clock
        if <int32_t>self.nlists.size() <= k:
            self.nlists.resize(k + 1)
        self.nlists[k].clear()
        return &self.nlists[k]

    cdef inline int32_t _merged(self, Part* part, int32_t state):
        cdef size_t k
        for k in range(part.mstates.size()):
            if part.mstates[k] == state:
                return part.mnodes[k]
        return -1

    cdef void _track(self, Part* part) except *:
        """``SkipIndex.moved`` for the partition's states going from its lists to the new ones."""
        cdef size_t k
        cdef bint same = part.states.size() == self.nstates.size()
        cdef int32_t s
        # the states are distinct in each; equal sets have equal sizes and every old one in the new
        if same:
            for k in range(part.states.size()):
                if self._index_of(part.states[k]) < 0:
                    same = False
                    break
        if same:
            return
        for k in range(part.states.size()):
            s = part.states[k]
            if self._index_of(s) < 0:
                self._moved_out(s)
        # old states: in part.states; mark them with a second stamp via a linear scan (few states)
        for k in range(self.nstates.size()):
            s = self.nstates[k]
            if not self._in(part.states, s):
                self._moved_in(s)

    cdef inline bint _in(self, vector[int32_t]& v, int32_t s):
        cdef size_t k
        for k in range(v.size()):
            if v[k] == s:
                return True
        return False

    cdef int64_t _enumerate(self, int32_t q, int64_t row, int64_t position, double value) except -1:
        """``_enumerate_plain``: the query's rows into the output buffers; the steps booked. Queries of one
        walk class (``CompiledQueryGroup.walk_class``) share one walk per event and final nodes, with the
        class's widest window, as ``SharedWalks`` does; each keeps the paths its own window takes."""
        cdef vector[int32_t]* roots = &self.accepted[q]
        cdef double end = position if self.by_position else value
        cdef double bound = self.bounds[q]
        cdef bint incl = self.inclusive[q]
        cdef size_t k
        cdef bint any_in
        cdef int32_t c = self.wclass[q]
        cdef int64_t first, count, j, steps = 0, candidates = 0
        self.accepted_queries.add(q)
        if bound != INF:
            any_in = False
            for k in range(roots.size()):
                if _within(end - self.nodes[roots[0][k]].maxkey, bound, incl):
                    any_in = True
                    break
            if not any_in:
                return 0
        if self.wpeer[q] and self.cls_stamp[c] == self.clock and self.cls_roots[c] == roots[0]:
            first, count = self.cls_first[c], self.cls_count[c]  # replayed: nothing booked
        else:
            first = <int64_t>self.c_value.size()
            if self.wpeer[q]:
                steps = self._walk(roots, end, self.wbound[c], self.wincl[c], &candidates)
                self.cls_stamp[c] = self.clock
                self.cls_roots[c] = roots[0]
                self.cls_first[c] = first
                self.cls_count[c] = <int64_t>self.c_value.size() - first
            else:
                steps = self._walk(roots, end, bound, incl, &candidates)
            count = <int64_t>self.c_value.size() - first
        cdef int64_t first_match = <int64_t>self.o_match.size() // 3
        for j in range(first, first + count):
            if bound == INF or _within(end - self.c_value[j], bound, incl):
                self.o_match.push_back(self.c_path[3 * j])
                self.o_match.push_back(self.c_path[3 * j + 1])
                self.o_match.push_back(self.c_path[3 * j + 2])
        self.o_rec.push_back(q)
        self.o_rec.push_back(row)
        self.o_rec.push_back(first_match)
        self.o_rec.push_back(<int64_t>self.o_match.size() // 3 - first_match)
        self.o_rec.push_back(steps)
        self.o_rec.push_back(candidates)
        return steps

    cdef int64_t _walk(self, vector[int32_t]* roots, double end, double bound, bint incl,
                       int64_t* candidates) except -1:
        """``Walk.run`` depth first with one window test on keys and start values: every path into
        ``c_path`` (start, first mark, marks; the marks in ``o_pos``/``o_lab``) and ``c_value``
        (the start's window value); the nodes visited."""
        cdef bint always = bound == INF
        cdef int64_t visited = 0
        cdef int32_t n, right, depth
        cdef int64_t i, kk
        self.pend_node.clear()
        self.pend_depth.clear()
        for kk in range(<int64_t>roots.size() - 1, -1, -1):
            n = roots[0][kk]
            if always or _within(end - self.nodes[n].maxkey, bound, incl):
                self.pend_node.push_back(n)
                self.pend_depth.push_back(0)
        while self.pend_node.size():
            n = self.pend_node.back()
            depth = self.pend_depth.back()
            self.pend_node.pop_back()
            self.pend_depth.pop_back()
            while True:
                visited += 1
                if self.nodes[n].kind == OUTPUT:
                    if <int32_t>self.path_pos.size() <= depth:
                        self.path_pos.resize(depth + 1)
                        self.path_lab.resize(depth + 1)
                    self.path_pos[depth] = self.nodes[n].pos
                    self.path_lab[depth] = self.nodes[n].label
                    depth += 1
                    n = self.nodes[n].left
                elif self.nodes[n].kind == UNION:
                    right = self.nodes[n].right
                    if right >= 0 and (always or _within(end - self.nodes[right].maxkey, bound, incl)):
                        self.pend_node.push_back(right)
                        self.pend_depth.push_back(depth)
                    n = self.nodes[n].left
                else:
                    if always or _within(end - self.nodes[n].value, bound, incl):
                        candidates[0] += 1
                        self.c_path.push_back(self.nodes[n].pos)
                        self.c_path.push_back(<int64_t>self.o_pos.size())
                        self.c_path.push_back(depth)
                        self.c_value.push_back(self.nodes[n].value)
                        # marks earliest first: the path was built from the end down
                        for i in range(depth - 1, -1, -1):
                            self.o_pos.push_back(self.path_pos[i])
                            self.o_lab.push_back(self.path_lab[i])
                    break
        return visited

    def set_walks(self, list walks):
        """Per query (walk class, whether it shares its walk, the class's widest bound, inclusive)."""
        cdef int32_t flag
        self.wclass.clear()
        self.wpeer.clear()
        self.wbound.clear()
        self.wincl.clear()
        cdef int32_t classes = 0
        for cls, peer, bound, incl in walks:
            self.wclass.push_back(cls)
            flag = 1 if peer else 0
            self.wpeer.push_back(flag)
            if cls + 1 > classes:
                classes = cls + 1
        self.wbound.resize(classes)
        self.wincl.resize(classes)
        for cls, peer, bound, incl in walks:
            self.wbound[cls] = bound
            flag = 1 if incl else 0
            self.wincl[cls] = flag
        self.cls_stamp.assign(classes, -1)
        self.cls_roots.resize(classes)
        self.cls_first.assign(classes, 0)
        self.cls_count.assign(classes, 0)

    def take(self):
        """The last ``run``'s output: (records, matches, positions, labels, spent) as int64 arrays;
        a record is (query, row, first match, matches, steps, candidates), a match (start, first mark,
        marks), spent (row, update units) per processed event."""
        return (
            _array(self.o_rec).reshape(-1, 6),
            _array(self.o_match).reshape(-1, 3),
            _array(self.o_pos),
            _array(self.o_lab),
            _array(self.o_spent).reshape(-1, 2),
        )

    # ------------------------------------------------------------ memory
    cdef void _push_roots(self):
        """``pend_node`` := the nodes the live partitions' union-lists and merged caches hold."""
        cdef size_t i, j
        cdef int32_t x
        self.pend_node.clear()
        for i in range(self.parts.size()):
            if not self.parts[i].alive:
                continue
            for j in range(self.parts[i].lists.size()):
                for x in self.parts[i].lists[j]:
                    self.pend_node.push_back(x)
            for x in self.parts[i].mnodes:
                self.pend_node.push_back(x)

    cdef void _compact(self) except *:
        """Keep only the nodes live lists and merged caches reach, renumbered in their order."""
        cdef size_t n = self.nodes.size()
        cdef vector[int32_t] remap
        remap.assign(n, -1)
        cdef size_t i, j
        cdef int32_t x
        self._push_roots()
        while self.pend_node.size():
            x = self.pend_node.back()
            self.pend_node.pop_back()
            if remap[x] >= 0:
                continue
            remap[x] = 0
            if self.nodes[x].left >= 0:
                self.pend_node.push_back(self.nodes[x].left)
            if self.nodes[x].right >= 0:
                self.pend_node.push_back(self.nodes[x].right)
        cdef int32_t k = 0
        for i in range(n):
            if remap[i] >= 0:
                remap[i] = k
                self.nodes[k] = self.nodes[i]
                if self.nodes[k].left >= 0:
                    self.nodes[k].left = remap[self.nodes[k].left]
                if self.nodes[k].right >= 0:
                    self.nodes[k].right = remap[self.nodes[k].right]
                k += 1
        self.nodes.resize(k)
        self.nodes.shrink_to_fit()
        for i in range(self.parts.size()):
            if not self.parts[i].alive:
                continue
            for j in range(self.parts[i].lists.size()):
                for x in range(<int32_t>self.parts[i].lists[j].size()):
                    self.parts[i].lists[j][x] = remap[self.parts[i].lists[j][x]]
            for x in range(<int32_t>self.parts[i].mnodes.size()):
                self.parts[i].mnodes[x] = remap[self.parts[i].mnodes[x]]
        self.mark.clear()
        self.compact_at = max(<int64_t>1 << 16, 2 * <int64_t>k)

    def dump(self):
        """The arena's nodes as (kind, pos, label, left, right, maxstart, maxkey, value) tuples (tests)."""
        return [(c.kind, c.pos, c.label, c.left, c.right, c.maxstart, c.maxkey, c.value) for c in self.nodes]

    def windows(self):
        """Per query (bound, inclusive) (tests)."""
        return [(self.bounds[k], bool(self.inclusive[k])) for k in range(self.bounds.size())]

    def dump(self):
        """The arena's nodes as (kind, pos, label, left, right, maxstart, maxkey, value) tuples (tests)."""
        return [(c.kind, c.pos, c.label, c.left, c.right, c.maxstart, c.maxkey, c.value) for c in self.nodes]

    def arena_size(self):
        """Nodes in the arena now (live ones and garbage not compacted yet)."""
        return self.nodes.size()

    def compact(self):
        """Compact the arena now (see ``_compact``)."""
        self._compact()

    def reachable(self):
        """(nodes reachable from the live union-lists, the smallest position among their non-union nodes)."""
        self.markgen += 1
        if self.mark.size() < self.nodes.size():
            self.mark.resize(self.nodes.size(), 0)
        cdef int64_t seen = 0
        cdef double low = INF
        cdef int32_t x
        cdef size_t i, j
        self.pend_node.clear()
        for i in range(self.parts.size()):
            if self.parts[i].alive:
                for j in range(self.parts[i].lists.size()):
                    for x in self.parts[i].lists[j]:
                        self.pend_node.push_back(x)
        while self.pend_node.size():
            x = self.pend_node.back()
            self.pend_node.pop_back()
            if self.mark[x] == self.markgen:
                continue
            self.mark[x] = self.markgen
            seen += 1
            if self.nodes[x].kind != UNION and self.nodes[x].pos < low:
                low = self.nodes[x].pos
            if self.nodes[x].left >= 0:
                self.pend_node.push_back(self.nodes[x].left)
            if self.nodes[x].right >= 0:
                self.pend_node.push_back(self.nodes[x].right)
        return seen, low

    # ------------------------------------------------------------ to and from Python's state
    def alive_slots(self):
        """The slots whose partition is alive."""
        return [i for i in range(self.parts.size()) if self.parts[i].alive]

    def export(self, node_class):
        """Per live slot: (slot, running_max, local, created, reachable, [(state, [node, ...])],
        [(state, node)]), the nodes as ``node_class(kind, pos, label, left, right, maxstart, maxkey,
        value)`` objects sharing their children."""
        made = {}
        cdef size_t i, j
        cdef int32_t x
        cdef CNode c
        cdef Part* p
        # children are older than their parents: building in id order finds them made
        cdef vector[int32_t] order
        self.markgen += 1
        if self.mark.size() < self.nodes.size():
            self.mark.resize(self.nodes.size(), 0)
        self._push_roots()
        while self.pend_node.size():
            x = self.pend_node.back()
            self.pend_node.pop_back()
            if self.mark[x] == self.markgen:
                continue
            self.mark[x] = self.markgen
            order.push_back(x)
            if self.nodes[x].left >= 0:
                self.pend_node.push_back(self.nodes[x].left)
            if self.nodes[x].right >= 0:
                self.pend_node.push_back(self.nodes[x].right)
        ids = sorted(order)
        for x in ids:
            c = self.nodes[x]
            made[x] = node_class(c.kind, c.pos, c.label, made.get(c.left), made.get(c.right), c.maxstart,
                                 c.maxkey, c.value)
        found = []
        for i in range(self.parts.size()):
            if not self.parts[i].alive:
                continue
            p = &self.parts[i]
            active = [(p.states[j], [made[x] for x in p.lists[j]]) for j in range(p.states.size())]
            merged = [(p.mstates[j], made[p.mnodes[j]]) for j in range(p.mstates.size())]
            found.append((i, p.running_max, p.local, p.created, p.reachable, active, merged))
        return found

    def load(self, list partitions):
        """Replace the live state by ``partitions``: per slot (slot, running_max, local, created,
        reachable, [(state, [node, ...])], [(state, node)]) of Python ``tecs.Node`` objects."""
        self.nodes.clear()
        self.parts.clear()
        ids = {}
        cdef Part* p
        for slot, running_max, local, created, reachable, active, merged in partitions:
            if <int64_t>self.parts.size() <= slot:
                self.parts.resize(slot + 1)
            p = &self.parts[slot]
            p.alive = True
            p.running_max = running_max
            p.local = local
            p.created = created
            p.reachable = reachable
            for state, ulist in active:
                self._know_state(state)
                p.states.push_back(state)
                p.lists.push_back(vector[int32_t]())
                for node in ulist:
                    p.lists.back().push_back(self._load_node(node, ids))
            for state, node in merged:
                p.mstates.push_back(state)
                p.mnodes.push_back(self._load_node(node, ids))
        self.compact_at = max(<int64_t>1 << 16, 2 * <int64_t>self.nodes.size())

    cdef int32_t _load_node(self, root, dict ids) except -2:
        stack = [root]
        while stack:
            node = stack[len(stack) - 1]
            if id(node) in ids:
                stack.pop()
                continue
            waiting = [c for c in (node.left, node.right) if c is not None and id(c) not in ids]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            left = ids[id(node.left)] if node.left is not None else -1
            right = ids[id(node.right)] if node.right is not None else -1
            value = node.value if node.kind == BOTTOM else 0.0
            ids[id(node)] = self._new(node.kind, node.pos, node.label, left, right, node.maxstart, node.maxkey,
                                      value)
        return ids[id(root)]

    def remap_slots(self, list mapping):
        """Move the partition of slot ``old`` to ``new`` for each (old, new), the rest dropped."""
        cdef vector[Part] moved
        cdef int64_t size = 0
        for old, new in mapping:
            if new + 1 > size:
                size = new + 1
        moved.resize(size)
        for old, new in mapping:
            moved[new] = self.parts[old]
        self.parts.swap(moved)


cdef object _array(vector[int64_t]& v):
    cdef int64_t n = v.size()
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] view = out
    cdef int64_t i
    for i in range(n):
        view[i] = v[i]
    return out


def assign_slots(list keys, dict slots, list free):
    """Each key's partition slot: the one it has, or a free one, or a new one."""
    cdef Py_ssize_t i, n = len(keys)
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] view = out
    cdef object found
    for i in range(n):
        key = keys[i]
        found = slots.get(key)
        if found is None:
            found = free.pop() if free else len(slots)
            slots[key] = found
        view[i] = found
    return out
