# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled core: Algorithm 1 of CORE over a whole batch, for the query
groups ``engine.native`` finds it exact for (no shedder or observer;
cross-event conditions compiled by ``engine.condition_code``, see the
section "cross-event conditions"; the strategies, LIMIT and CONSUME BY with
its ghost runs, see ``_consume`` and ``_choose``; ``native.ineligible``).

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
from libcpp.algorithm cimport sort as std_sort

import numpy as np


# ------------------------------------------------------------ cross-event conditions: value types
# (condcore) A value as the Python path holds it: null, an int (exact, int64), a double, a string
# (its code in the group's table; code 0 is the empty string) or a truth value (i: 0 or 1).
from libc.math cimport fmod, fabs, sqrt, sin, cos, asin, acos, isnan, isinf, isfinite

cdef enum:
    K_NUL = 0
    K_INT = 1
    K_FLT = 2
    K_STR = 3
    K_BOOL = 4

ctypedef struct Num:
    int32_t kind
    int64_t i
    double f

# an interval value of a bound program: unknown (0), an interval (1), a truth value (2, lo.i)
ctypedef struct Ival:
    int32_t kind
    Num lo
    Num hi

cdef extern from *:
    """
    static inline int cc_add_ovf(long long a, long long b, long long* r) { return __builtin_add_overflow(a, b, r); }
    static inline int cc_sub_ovf(long long a, long long b, long long* r) { return __builtin_sub_overflow(a, b, r); }
    static inline int cc_mul_ovf(long long a, long long b, long long* r) { return __builtin_mul_overflow(a, b, r); }
    """
    bint cc_add_ovf(long long a, long long b, long long* r)
    bint cc_sub_ovf(long long a, long long b, long long* r)
    bint cc_mul_ovf(long long a, long long b, long long* r)

cdef int64_t INT64_MIN_ = -9223372036854775807 - 1
cdef int64_t INT64_MAX_ = 9223372036854775807
cdef int64_t TWO53 = 9007199254740992
cdef double NAN_ = float("nan")
cdef double POS_INF_ = float("inf")


cdef inline Num _int(int64_t v):
    cdef Num r
    r.kind = K_INT
    r.i = v
    r.f = 0.0
    return r


cdef inline Num _flt(double v):
    cdef Num r
    r.kind = K_FLT
    r.i = 0
    r.f = v
    return r


cdef Num _num(int kind, object value) except *:
    """A constant or identity from ``condition_code`` (kind, Python value)."""
    cdef Num r
    if kind == K_INT:
        r = _int(value)
    elif kind == K_FLT:
        r = _flt(value)
    else:
        r.kind = kind
        r.i = value if kind == K_STR else 0
        r.f = 0.0
    return r


cdef inline char _flag(object value):
    if value:
        return 1
    return 0


cdef inline bint _nan(Num a):
    return a.kind == K_FLT and a.f != a.f


cdef inline double _dbl(Num a):
    return a.f if a.kind == K_FLT else <double>a.i


cdef inline int _icmpf(int64_t i, double f):
    """The sign of i - f, exact as Python compares an int with a float (2: f is NaN)."""
    if f != f:
        return 2
    if f >= 9223372036854775808.0:
        return -1
    if f < -9223372036854775808.0:
        return 1
    cdef int64_t t = <int64_t>f
    if i != t:
        return 1 if i > t else -1
    cdef double frac = f - <double>t
    if frac > 0:
        return -1
    if frac < 0:
        return 1
    return 0


cdef inline int _cmp(Num a, Num b):
    """Python's order of two numbers: -1, 0, 1, or 2 where a NaN makes them unordered; strings
    (codes) only equal (0) or not (1)."""
    if a.kind == K_STR or b.kind == K_STR:
        return 0 if a.kind == b.kind and a.i == b.i else 1
    if a.kind != K_FLT and b.kind != K_FLT:
        return (a.i > b.i) - (a.i < b.i)
    if a.kind == K_FLT and b.kind == K_FLT:
        if a.f != a.f or b.f != b.f:
            return 2
        return (a.f > b.f) - (a.f < b.f)
    cdef int c
    if a.kind == K_FLT:
        c = _icmpf(b.i, a.f)
        return 2 if c == 2 else -c
    return _icmpf(a.i, b.f)


cdef inline Num _lower(Num a, Num b):
    """``b if b < a or b != b else a`` (conditions._join: min, a NaN on either side stays)."""
    if _cmp(b, a) == -1 or _nan(b):
        return b
    return a


cdef inline Num _higher(Num a, Num b):
    """``b if b > a or b != b else a``."""
    if _cmp(b, a) == 1 or _nan(b):
        return b
    return a


cdef inline bint _compare(int op, Num a, Num b):
    """Python's ``== != < <= > >=`` (op 0..5) on two numbers or two strings."""
    cdef int c = _cmp(a, b)
    if op == 0:
        return c == 0
    if op == 1:
        return c != 0
    if op == 2:
        return c == -1
    if op == 3:
        return c == -1 or c == 0
    if op == 4:
        return c == 1
    return c == 1 or c == 0


cdef inline Num _truth(bint b):
    cdef Num r
    r.kind = K_BOOL
    r.i = 1 if b else 0
    r.f = 0.0
    return r


cdef inline Num _truthof(Num a):
    """``truth``: null stays unknown, else Python's bool (NaN is true; code 0 is the empty string)."""
    if a.kind == K_NUL or a.kind == K_BOOL:
        return a
    if a.kind == K_FLT:
        return _truth(a.f != 0.0)
    return _truth(a.i != 0)


cdef inline Num _xand(Num a, Num b):
    """``and3`` on truth values (K_NUL: unknown)."""
    if (a.kind == K_BOOL and a.i == 0) or (b.kind == K_BOOL and b.i == 0):
        return _truth(False)
    if a.kind == K_NUL or b.kind == K_NUL:
        return a if a.kind == K_NUL else b
    return _truth(True)


cdef inline Num _xor(Num a, Num b):
    """``or3`` on truth values."""
    if (a.kind == K_BOOL and a.i == 1) or (b.kind == K_BOOL and b.i == 1):
        return _truth(True)
    if a.kind == K_NUL or b.kind == K_NUL:
        return a if a.kind == K_NUL else b
    return _truth(False)


cdef inline Num _add(Num a, Num b):
    """``a + b`` as Python adds ints and floats; NaN where int64 would overflow."""
    cdef long long s
    if a.kind != K_FLT and b.kind != K_FLT:
        if cc_add_ovf(a.i, b.i, &s):
            return _flt(NAN_)
        return _int(s)
    return _flt(_dbl(a) + _dbl(b))


cdef inline Num _add_low(Num a, Num b):
    """``a + b`` for the low ends of two term ranges: where int64 would overflow, a lower bound
    of the exact sum (the largest int64 above, minus infinity below) instead of NaN, so that a
    union's pick of the lower low cannot drop it as it drops a NaN."""
    cdef long long s
    if a.kind != K_FLT and b.kind != K_FLT and cc_add_ovf(a.i, b.i, &s):
        return _int(INT64_MAX_) if a.i > 0 else _flt(-POS_INF_)
    return _add(a, b)


cdef inline Num _add_high(Num a, Num b):
    """``a + b`` for the high ends: an upper bound of the exact sum where int64 would overflow."""
    cdef long long s
    if a.kind != K_FLT and b.kind != K_FLT and cc_add_ovf(a.i, b.i, &s):
        return _flt(POS_INF_) if a.i > 0 else _int(INT64_MIN_)
    return _add(a, b)


cdef inline Num _neg(Num a):
    if a.kind == K_FLT:
        return _flt(-a.f)
    if a.i == INT64_MIN_:
        return _flt(NAN_)
    return _int(-a.i)


cdef Num _arith(int op, Num a, Num b, int* st):
    """``predicate_bits._ARITHMETIC`` on two non-null numbers; ``st`` 2: out of its domain,
    3: not exact in int64."""
    cdef long long r
    cdef bint bad
    cdef bint ints = a.kind != K_FLT and b.kind != K_FLT
    cdef double x, y, m
    if op <= 2:
        if ints:
            if op == 0:
                bad = cc_add_ovf(a.i, b.i, &r)
            elif op == 1:
                bad = cc_sub_ovf(a.i, b.i, &r)
            else:
                bad = cc_mul_ovf(a.i, b.i, &r)
            if bad:
                st[0] = 3
            return _int(r)
        x, y = _dbl(a), _dbl(b)
        if op == 0:
            return _flt(x + y)
        if op == 1:
            return _flt(x - y)
        return _flt(x * y)
    if (b.kind == K_FLT and b.f == 0.0) or (b.kind != K_FLT and b.i == 0):
        st[0] = 2
        return _int(0)
    if op == 3:
        if ints and (a.i > TWO53 or a.i < -TWO53 or b.i > TWO53 or b.i < -TWO53):
            st[0] = 3
        return _flt(_dbl(a) / _dbl(b))
    # % is math.fmod (truncating), an int if both are ints
    x, y = _dbl(a), _dbl(b)
    if isinf(y) and isfinite(x):
        m = x
    else:
        m = fmod(x, y)
        if m != m and x == x and y == y:
            st[0] = 2
            return _int(0)
    if ints:
        return _int(<int64_t>m)
    return _flt(m)


cdef Num _function(int fn, Num a, int* st):
    """``predicate_bits._MATH`` on a non-null number (math's domain errors: ``st`` 2)."""
    cdef double x, r
    if fn == 0:
        if a.kind == K_FLT:
            return _flt(fabs(a.f))
        if a.i == INT64_MIN_:
            st[0] = 3
            return a
        return _int(-a.i if a.i < 0 else a.i)
    x = _dbl(a)
    if fn == 1:
        r = sqrt(x)
    elif fn == 2:
        r = sin(x)
    elif fn == 3:
        r = cos(x)
    elif fn == 4:
        r = asin(x)
    else:
        r = acos(x)
    if (r != r and x == x) or (isinf(r) and isfinite(x)):
        st[0] = 2
    return _flt(r)


cdef inline Ival _unknown():
    cdef Ival r
    r.kind = 0
    return r


cdef inline Ival _tv(bint b):
    cdef Ival r
    r.kind = 2
    r.lo = _truth(b)
    return r


cdef Ival _and3(Ival a, Ival b):
    if (a.kind == 2 and a.lo.i == 0) or (b.kind == 2 and b.lo.i == 0):
        return _tv(False)
    if a.kind != 2 or b.kind != 2:
        return _unknown()
    return _tv(True)


cdef Ival _or3(Ival a, Ival b):
    if (a.kind == 2 and a.lo.i == 1) or (b.kind == 2 and b.lo.i == 1):
        return _tv(True)
    if a.kind != 2 or b.kind != 2:
        return _unknown()
    return _tv(False)


cdef inline Ival _bempty(Ival a, Ival b):
    """Kind 3 (out of its domain, ``conditions.EMPTY``) where either side is, else kind 0."""
    cdef Ival r
    r.kind = 3 if a.kind == 3 or b.kind == 3 else 0
    return r


cdef Ival _band(Ival a, Ival b):
    """``conditions._and``: the left read first; a right out of its domain under a left that may
    go either way is undecided."""
    if a.kind == 3 or (a.kind == 2 and a.lo.i == 0):
        return a
    if b.kind == 3:
        return b if a.kind == 2 else _unknown()
    return _and3(a, b)


cdef Ival _bor(Ival a, Ival b):
    """``conditions._or``."""
    if a.kind == 3 or (a.kind == 2 and a.lo.i == 1):
        return a
    if b.kind == 3:
        return b if a.kind == 2 else _unknown()
    return _or3(a, b)


cdef inline Ival _iv(Num lo, Num hi):
    cdef Ival r
    r.lo = lo
    r.hi = hi
    r.kind = 0 if _nan(lo) or _nan(hi) else 1
    return r


cdef Ival _iabs(Ival a):
    """``conditions._abs``."""
    if a.kind != 1:
        return _unknown()
    cdef int c = _cmp(a.lo, _int(0))
    if c == 0 or c == 1:
        return a
    c = _cmp(a.hi, _int(0))
    if c == 0 or c == -1:
        return _iv(_neg(a.hi), _neg(a.lo))
    cdef Num x = _neg(a.lo)
    return _iv(_int(0), a.hi if _cmp(a.hi, x) == 1 else x)


cdef inline Num _mul(Num a, Num b):
    cdef long long r
    if a.kind != K_FLT and b.kind != K_FLT:
        if cc_mul_ovf(a.i, b.i, &r):
            return _flt(NAN_)
        return _int(r)
    return _flt(_dbl(a) * _dbl(b))


cdef inline bint _mul_ovf(Num a, Num b):
    """Whether ``a * b`` is an int product beyond int64."""
    cdef long long r
    return a.kind != K_FLT and b.kind != K_FLT and cc_mul_ovf(a.i, b.i, &r)


cdef inline Num _sub(Num a, Num b):
    cdef long long r
    if a.kind != K_FLT and b.kind != K_FLT:
        if cc_sub_ovf(a.i, b.i, &r):
            return _flt(NAN_)
        return _int(r)
    return _flt(_dbl(a) - _dbl(b))


cdef inline Num _sub_low(Num a, Num b):
    """``a - b`` for a low end: a lower bound of the exact difference where int64 would overflow."""
    cdef long long s
    if a.kind != K_FLT and b.kind != K_FLT and cc_sub_ovf(a.i, b.i, &s):
        return _int(INT64_MAX_) if a.i >= 0 else _flt(-POS_INF_)
    return _sub(a, b)


cdef inline Num _sub_high(Num a, Num b):
    """``a - b`` for a high end: an upper bound of the exact difference where int64 would overflow."""
    cdef long long s
    if a.kind != K_FLT and b.kind != K_FLT and cc_sub_ovf(a.i, b.i, &s):
        return _flt(POS_INF_) if a.i >= 0 else _int(INT64_MIN_)
    return _sub(a, b)


cdef Ival _iarith(int op, Ival a, Ival b):
    """``conditions._arith`` (+ - *). Where an end's int arithmetic would leave int64 (Python's
    ints do not), the end is a bound of the exact one (the nearest int64 inside, infinity outside):
    the range holds Python's, and a comparison with it decides as Python's does where the other side
    is an int64 other than that bound, so the bound tests prune the branches Python prunes (an
    unknown range would keep them, and the walk would book more steps). Against a float or after
    more arithmetic it may still decide less than Python's exact ints: never more."""
    if a.kind != 1 or b.kind != 1:
        return _unknown()
    if op == 0:
        return _iv(_add_low(a.lo, b.lo), _add_high(a.hi, b.hi))
    if op == 1:
        return _iv(_sub_low(a.lo, b.hi), _sub_high(a.hi, b.lo))
    cdef Num x[2]
    cdef Num y[2]
    x[0], x[1], y[0], y[1] = a.lo, a.hi, b.lo, b.hi
    cdef int j, k
    cdef bint first = True
    cdef Num lo, hi, low, high
    for j in range(2):
        for k in range(2):
            if _mul_ovf(x[j], y[k]):
                # beyond int64: its sign is the product of the signs (neither is 0)
                if (x[j].i > 0) == (y[k].i > 0):
                    low, high = _int(INT64_MAX_), _flt(POS_INF_)
                else:
                    low, high = _flt(-POS_INF_), _int(INT64_MIN_)
            else:
                low = high = _mul(x[j], y[k])
            if first:
                lo, hi, first = low, high, False
                continue
            # Python's min and max: a NaN first stays (then ``_iv`` makes the range unknown), a later one
            # is passed over
            if _cmp(low, lo) == -1:
                lo = low
            if _cmp(high, hi) == 1:
                hi = high
    return _iv(lo, hi)


cdef Ival _icmp(int op, Ival a, Ival b):
    """``conditions._compare``."""
    cdef Ival t
    cdef int c
    if a.kind != 1 or b.kind != 1:
        return _unknown()
    if op == 4 or op == 5:
        t = a
        a = b
        b = t
        op = 2 if op == 4 else 3
    if op == 2:
        if _cmp(a.hi, b.lo) == -1:
            return _tv(True)
        c = _cmp(a.lo, b.hi)
        if c == 1 or c == 0:
            return _tv(False)
        return _unknown()
    if op == 3:
        c = _cmp(a.hi, b.lo)
        if c == -1 or c == 0:
            return _tv(True)
        if _cmp(a.lo, b.hi) == 1:
            return _tv(False)
        return _unknown()
    cdef bint disjoint = _cmp(a.hi, b.lo) == -1 or _cmp(b.hi, a.lo) == -1
    cdef bint same = _cmp(a.lo, a.hi) == 0 and _cmp(a.hi, b.lo) == 0 and _cmp(b.lo, b.hi) == 0
    if disjoint:
        return _tv(op != 0)
    if same:
        return _tv(op == 0)
    return _unknown()


cdef enum:
    BOTTOM = 0
    OUTPUT = 1
    UNION = 2

cdef double INF = float("inf")


cdef inline bint _within(double distance, double bound, bint inclusive):
    """A window test (``QueryWindow.test``): NaN distances fail both ways."""
    return distance <= bound if inclusive else distance < bound


cdef inline void _add_unique(vector[int32_t]& v, int32_t s):
    """Add ``s`` to the small set ``v`` (a vector) unless it holds it."""
    cdef size_t k
    for k in range(v.size()):
        if v[k] == s:
            return
    v.push_back(s)


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
    # (consume37) the states of runs dropped as out of every window, kept without their nodes where
    # a consuming query must still see them complete (``Partition.ghosts``); a set, in no order
    vector[int32_t] ghosts


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
    # latency or queue observers watch (``Engine.observers``): every accepted query has a record at every
    # event, as ``QueryGroupRunner._enumerate`` books one even where no start is in its window
    cdef public bint observed
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
    cdef vector[int64_t] c_blab  # per path: its bottom node's label (the start's index in its partition)

    # ---- (consume37) strategies, LIMIT, STRICT checked on marks and CONSUME BY (``_enumerate``'s
    # candidate path and ``_consume`` of ``runtime.QueryGroupRunner``)
    cdef bint consumes
    cdef bint consume_any
    cdef bint consume_checked  # the consuming query has cross-event checks: a walk decides
    cdef public int64_t consume_steps  # the consuming walks' steps (booked on the clock only)
    cdef vector[char] q_plain  # per query: every candidate is a match (ALL, no LIMIT, no STRICT check)
    cdef vector[int32_t] q_strategy  # 0 none, 1 NEXT, 2 LAST, 3 MAX
    cdef vector[int64_t] q_limit  # -1: none
    cdef vector[char] q_strict  # STRICT checked on marks
    cdef vector[int32_t] q_shows  # what a match shows: 0 every marked event, 1 none, 2 the marks of q_shown
    cdef vector[vector[char]] q_shown  # per query, per mark label: whether a match shows its event
    cdef vector[int32_t] old_ghosts
    cdef vector[int32_t] new_ghosts
    cdef vector[int64_t] sel  # the candidates (indices into c_path) of one enumeration
    cdef vector[int64_t] sel_tmp
    cdef vector[int64_t] key_off  # per candidate of ``sel``: its shown positions in ``key_pos``
    cdef vector[int64_t] key_len
    cdef vector[int64_t] key_pos
    cdef vector[char] keep

    # ---- cross-event conditions (condcore; the section "cross-event conditions" below)
    cdef bint conds
    cdef bint cprune
    cdef int32_t nterms, nattrs, nvars, nlabels
    cdef vector[Num] sumv  # per node: its terms' lows, then their highs (Summaries)
    cdef vector[Num] valv  # per node: the stored attributes of the event it marks (output nodes)
    cdef vector[Num] ident
    cdef vector[int32_t] tkind
    cdef vector[char] labvar
    cdef vector[int32_t] plan_off
    cdef vector[int32_t] plan_data
    cdef vector[char] ck_whole
    cdef vector[char] ck_tag
    cdef vector[char] ck_first
    cdef vector[int32_t] ck_toff
    cdef vector[int32_t] ck_terms
    cdef vector[int32_t] ck_codes
    cdef vector[int32_t] ck_kinds
    cdef vector[int32_t] ck_coff
    cdef vector[int64_t] cj_exact
    cdef vector[int64_t] cj_bound
    cdef vector[int64_t] xcode
    cdef vector[int64_t] bcode
    cdef vector[Num] consts
    cdef vector[int32_t] q_off
    cdef vector[int32_t] q_checks
    cdef vector[Num] cur_seen
    cdef vector[int32_t] cur_inst
    cdef vector[Num] pend_seen
    cdef vector[int32_t] pend_inst
    cdef vector[int32_t] path_node
    cdef vector[int32_t] inst_nodes
    cdef vector[Num] xstack
    cdef vector[Ival] bstack
    cdef vector[Num] ivl
    cdef vector[Num] tmp_sum
    cdef public object py_holds  # (check, [(label, values)]) -> 1, 0 or 2 where the core is not exact
    cdef public object strings  # condition_code.StringTable
    cdef public int64_t domain_errors
    cdef int64_t cur_at  # the event in process's index in the run's rows
    cdef signed char[:, ::1] v_kind
    cdef int64_t[:, ::1] v_int
    cdef double[:, ::1] v_flt

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
        self.observed = False
        cdef size_t k
        for k in range(len(windows)):
            self.q_plain.push_back(1)
            self.q_strategy.push_back(0)
            self.q_limit.push_back(-1)
            self.q_strict.push_back(0)
            self.q_shows.push_back(0)
        self.q_shown.resize(len(windows))
        self.consume_steps = 0

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
        return self._record(state, sym, marks, skip)

    cdef int32_t _record(self, int32_t state, int32_t sym, object marks, int32_t skip) except -2:
        """Keep a step the determinizer gave in the table; its offset in ``stepdata``."""
        cdef vector[int32_t]* row = &self.table[state]
        cdef int32_t off
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

    cdef int32_t _ghost_step(self, int32_t state, int32_t sym) except -2:
        """``_step`` for a ghost state: the Python path asks the determinizer itself for every ghost
        step (``_step_ghosts``), a hit of its cache or a miss; the core books the same. Once the
        determinizer may have forgotten steps, it is asked (so its cache sees the same lookups);
        before, every step the table knows is in its cache, a hit."""
        cdef vector[int32_t]* row = &self.table[state]
        cdef int32_t off
        if not self.forgets:
            if <int32_t>row.size() > sym and row[0][sym] >= 0:
                # the hit moves the step to the end of the determinizer's LRU cache, as ``det.step``
                # does on the Python path: the order its evictions follow once it is full (its memo
                # already holds every step while nothing was forgotten, so it needs no update)
                key = (state, self.bits[sym])
                cache = self.det._cache
                if key in cache:
                    cache.move_to_end(key)
                self.hits += 1
                return row[0][sym]
            return self._step(state, sym)
        marks, skip = self.det.step(state, self.bits[sym])
        row = &self.table[state]
        if <int32_t>row.size() > sym and row[0][sym] >= 0:
            return row[0][sym]
        return self._record(state, sym, marks, skip)

    cdef void _step_ghosts(self, Part* part, int32_t sym) except *:
        """``QueryGroupRunner._step_ghosts``: where the dropped runs go, every target, marking or not."""
        cdef size_t g, k
        cdef int32_t off, nm, skip
        self.new_ghosts.clear()
        # in ascending order, as the Python path: the determinizer's cache sees the same lookups
        std_sort(part.ghosts.begin(), part.ghosts.end())
        for g in range(part.ghosts.size()):
            off = self._ghost_step(part.ghosts[g], sym)
            nm = self.stepdata[off]
            for k in range(<size_t>nm):
                _add_unique(self.new_ghosts, self.stepdata[off + 2 + 2 * k])
            skip = self.stepdata[off + 1 + 2 * nm]
            if skip >= 0:
                _add_unique(self.new_ghosts, skip)
        part.ghosts.swap(self.new_ghosts)

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
                for j in range(self.parts[i].ghosts.size()):
                    self.counts[self.parts[i].ghosts[j]] += 1
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
        if self.conds:
            self._cond_fit()
        return <int32_t>self.nodes.size() - 1

    cdef inline int32_t _union_node(self, int32_t left, int32_t right):
        cdef int64_t ms = self.nodes[left].maxstart
        cdef double mk = self.nodes[left].maxkey
        cdef int32_t u = self._new(UNION, -1, -1, left, right, ms, mk, 0.0)
        if self.conds and self.nterms:
            self._sum_union(u, left, right)
        return u

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
            self.cur_at = i
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
            for j in range(part.ghosts.size()):
                self._moved_out(part.ghosts[j])
        self._clear(part)
        self.evicted += 1

    cdef void _clear(self, Part* part):
        part.alive = False
        part.states.clear()
        part.lists.clear()
        part.mstates.clear()
        part.mnodes.clear()
        part.ghosts.clear()

    cdef void _event(self, int64_t row, int64_t position, int32_t sym, double value, int32_t slot,
                     bint track) except *:
        cdef int32_t initial = self.initial
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
        if self.consumes and track:
            self.old_ghosts.assign(part.ghosts.begin(), part.ghosts.end())
        # the new lists: nstates[k] -> nlists[k]; stamp finds a state's index
        self.clock += 1
        self.c_path.clear()
        self.c_value.clear()
        self.c_blab.clear()
        self.nstates.clear()
        nold = part.states.size()
        self.created_ids.clear()
        first = -1
        if not dead:
            first = self._new(BOTTOM, position, part.local, -1, -1, position, part.running_max, value)
            if self.conds and self.nterms:
                self._sum_ident(first)
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
                    ulist.pop_back()  # every start below is outside every window
                    if self.consumes:
                        _add_unique(part.ghosts, state)
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
                    if self.conds:
                        self._cond_output(out, node, label)
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
        if part.ghosts.size():
            self._step_ghosts(part, sym)
            transitions += <int64_t>part.ghosts.size()
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
        if nold == 0 and part.ghosts.size() == 0:
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
                    steps += self._enumerate(q, row, position, value, part.local)
        if self.consumes:
            self._consume(part, track)
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
        if self.consumes:  # the ghost states, from what they were before the event (``old_ghosts``)
            for k in range(self.old_ghosts.size()):
                if not self._in(part.ghosts, self.old_ghosts[k]):
                    self._moved_out(self.old_ghosts[k])
            for k in range(part.ghosts.size()):
                if not self._in(self.old_ghosts, part.ghosts[k]):
                    self._moved_in(part.ghosts[k])
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

    cdef int64_t _enumerate(self, int32_t q, int64_t row, int64_t position, double value, int64_t local) except -1:
        """``_enumerate_plain``: the query's rows into the output buffers; the steps booked. Queries of one
        walk class (``CompiledQueryGroup.walk_class``) share one walk per event and final nodes, with the
        class's widest window, as ``SharedWalks`` does; each keeps the paths its own window takes. When
        ``observed``, it is ``_enumerate`` instead: each query walks alone, and books a walk (a record)
        even when no start is in its window."""
        cdef vector[int32_t]* roots = &self.accepted[q]
        cdef double end = position if self.by_position else value
        cdef double bound = self.bounds[q]
        cdef bint incl = self.inclusive[q]
        cdef size_t k
        cdef bint any_in
        cdef int32_t c = self.wclass[q]
        cdef int64_t first, count, j, first_match, steps = 0, candidates = 0
        self.accepted_queries.add(q)
        if bound != INF:
            any_in = False
            for k in range(roots.size()):
                if _within(end - self.nodes[roots[0][k]].maxkey, bound, incl):
                    any_in = True
                    break
            if not any_in:
                if self.observed:  # a walk none of whose roots is in the window: no step, no candidate
                    first_match = <int64_t>self.o_match.size() // 3
                    self.o_rec.push_back(q)
                    self.o_rec.push_back(row)
                    self.o_rec.push_back(first_match)
                    self.o_rec.push_back(0)
                    self.o_rec.push_back(0)
                    self.o_rec.push_back(0)
                return 0
        # a query that chooses among its candidates walks alone (it is a group of its own anyway), and so
        # does every query when observed (``_enumerate`` walks each query on its own: its latency is its walk)
        cdef bint peer = self.wpeer[q] and self.q_plain[q] and not self.observed
        if peer and self.cls_stamp[c] == self.clock and self.cls_roots[c] == roots[0]:
            first, count = self.cls_first[c], self.cls_count[c]  # replayed: nothing booked
        else:
            first = <int64_t>self.c_value.size()
            if peer:
                steps = self._walk_any(q, roots, end, self.wbound[c], self.wincl[c], &candidates)
                self.cls_stamp[c] = self.clock
                self.cls_roots[c] = roots[0]
                self.cls_first[c] = first
                self.cls_count[c] = <int64_t>self.c_value.size() - first
            else:
                steps = self._walk_any(q, roots, end, bound, incl, &candidates)
            count = <int64_t>self.c_value.size() - first
        first_match = <int64_t>self.o_match.size() // 3
        if not self.q_plain[q]:
            self._choose(q, first, count, end, bound, incl, local)
            for k in range(self.sel.size()):
                j = self.sel[k]
                self.o_match.push_back(self.c_path[3 * j])
                self.o_match.push_back(self.c_path[3 * j + 1])
                self.o_match.push_back(self.c_path[3 * j + 2])
        else:
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

    # ---------------- (consume37) CONSUME BY, strategies, LIMIT, STRICT checked on marks
    cdef void _consume(self, Part* part, bint track) except *:
        """``QueryGroupRunner._consume``: if a run of the group's one query completes here with every
        condition, in the window or not, forget its partial matches in this partition (BY PARTITION)
        or in every partition (BY ANY). With cross-event checks a walk without window decides (its
        steps booked on the clock only, its domain errors not at all, as the Python path does);
        without, a final node or a ghost state that accepts the query."""
        cdef vector[int32_t]* roots = &self.accepted[0]
        cdef bint completed = False
        cdef size_t k, c0, v0, b0, o0
        cdef int64_t candidates = 0, errors
        if self.consume_checked:
            if roots.size():
                c0, v0, b0, o0 = self.c_path.size(), self.c_value.size(), self.c_blab.size(), self.o_pos.size()
                errors = self.domain_errors
                self.consume_steps += self._walk_checked(0, roots, 0.0, INF, True, &candidates, True, True)
                completed = self.c_value.size() > v0
                self.domain_errors = errors
                self.c_path.resize(c0)
                self.c_value.resize(v0)
                self.c_blab.resize(b0)
                self.o_pos.resize(o0)
                self.o_lab.resize(o0)
        else:
            completed = roots.size() > 0
            for k in range(part.ghosts.size()):
                if self.finals[part.ghosts[k]].size():
                    completed = True
        if not completed:
            return
        if self.consume_any:
            for k in range(self.parts.size()):
                if self.parts[k].alive:
                    self._drop(&self.parts[k], track)
        elif part.alive:
            self._drop(part, track)

    cdef void _choose(self, int32_t q, int64_t first, int64_t count, double end, double bound, bint incl,
                      int64_t local) except *:
        """``sel`` := the candidates of paths ``first``.. that ``_enumerate``'s candidate path keeps, in
        walk order: in the window, STRICT checked on marks, then the strategy (``selection.SELECT``),
        then LIMIT over the distinct matches (``limit_order``). Of two candidates that are one match
        (same start and shown events) both stay; the output path keeps one, as ``distinct`` does."""
        cdef int64_t j, limit = self.q_limit[q]
        self.sel.clear()
        for j in range(first, first + count):
            if bound != INF and not _within(end - self.c_value[j], bound, incl):
                continue
            if self.q_strict[q] and self.c_path[3 * j + 2] != local - self.c_blab[j] + 1:
                continue
            self.sel.push_back(j)
        if self.sel.size() > 1:
            if self.q_strategy[q] == 1 or self.q_strategy[q] == 2:
                self._select_first(self.q_strategy[q] == 2)
            elif self.q_strategy[q] == 3:
                self._select_max()
        if limit >= 0 and <int64_t>self.sel.size() > limit:
            self._limit(q, limit)

    cdef int _cmp_first(self, int64_t a, int64_t b, bint last):
        """NEXT's order of two paths (LAST's with ``last``): positions ascending (descending from the
        end), a longer path before its prefix (the key's trailing infinity)."""
        cdef int64_t fa = self.c_path[3 * a + 1], na = self.c_path[3 * a + 2]
        cdef int64_t fb = self.c_path[3 * b + 1], nb = self.c_path[3 * b + 2]
        cdef int64_t i, x, y, m = na if na < nb else nb
        for i in range(m):
            if last:
                x, y = self.o_pos[fa + na - 1 - i], self.o_pos[fb + nb - 1 - i]
                if x != y:
                    return -1 if x > y else 1
            else:
                x, y = self.o_pos[fa + i], self.o_pos[fb + i]
                if x != y:
                    return -1 if x < y else 1
        if na != nb:
            return -1 if na > nb else 1
        return 0

    cdef void _select_first(self, bint last) except *:
        """NEXT or LAST: the candidates whose key is the least."""
        cdef size_t k
        cdef int64_t best = self.sel[0]
        for k in range(1, self.sel.size()):
            if self._cmp_first(self.sel[k], best, last) < 0:
                best = self.sel[k]
        self.sel_tmp.clear()
        for k in range(self.sel.size()):
            if self._cmp_first(self.sel[k], best, last) == 0:
                self.sel_tmp.push_back(self.sel[k])
        self.sel.swap(self.sel_tmp)

    cdef bint _inside(self, int64_t a, int64_t b):
        """Whether path ``a``'s positions are a strict subset of ``b``'s (both ascending)."""
        cdef int64_t fa = self.c_path[3 * a + 1], na = self.c_path[3 * a + 2]
        cdef int64_t fb = self.c_path[3 * b + 1], nb = self.c_path[3 * b + 2]
        cdef int64_t i = 0, j = 0
        if na >= nb:
            return False
        while i < na:
            while j < nb and self.o_pos[fb + j] < self.o_pos[fa + i]:
                j += 1
            if j == nb or self.o_pos[fb + j] != self.o_pos[fa + i]:
                return False
            i += 1
            j += 1
        return True

    cdef void _select_max(self) except *:
        """MAX: the candidates whose positions no other's strictly contain."""
        cdef size_t k, m
        cdef bint maximal
        self.sel_tmp.clear()
        for k in range(self.sel.size()):
            maximal = True
            for m in range(self.sel.size()):
                if self._inside(self.sel[k], self.sel[m]):
                    maximal = False
                    break
            if maximal:
                self.sel_tmp.push_back(self.sel[k])
        self.sel.swap(self.sel_tmp)

    cdef int _cmp_limit(self, int64_t a, int64_t b):
        """``limit_order`` of candidates ``a`` and ``b`` of ``sel`` (their keys in ``key_*``): the later
        start first, then the later shown positions from the last one back, a shorter key first."""
        cdef int64_t sa = self.c_path[3 * self.sel[a]], sb = self.c_path[3 * self.sel[b]]
        if sa != sb:
            return -1 if sa > sb else 1
        cdef int64_t fa = self.key_off[a], la = self.key_len[a], fb = self.key_off[b], lb = self.key_len[b]
        cdef int64_t i, x, y, m = la if la < lb else lb
        for i in range(m):
            x, y = self.key_pos[fa + la - 1 - i], self.key_pos[fb + lb - 1 - i]
            if x != y:
                return -1 if x > y else 1
        if la != lb:
            return -1 if la < lb else 1
        return 0

    cdef void _limit(self, int32_t q, int64_t limit) except *:
        """LIMIT: of the distinct matches (start and shown events), the ``limit`` first in
        ``limit_order``; ``sel`` keeps the candidates of those, in walk order."""
        cdef int64_t n = <int64_t>self.sel.size(), k, j, i, f, m, d
        cdef int32_t shows = self.q_shows[q]
        cdef vector[char]* shown = &self.q_shown[q]
        cdef int64_t label
        self.key_off.resize(n)
        self.key_len.resize(n)
        self.key_pos.clear()
        for k in range(n):
            j = self.sel[k]
            f, m = self.c_path[3 * j + 1], self.c_path[3 * j + 2]
            self.key_off[k] = <int64_t>self.key_pos.size()
            if shows == 0:
                for i in range(m):
                    self.key_pos.push_back(self.o_pos[f + i])
            elif shows == 2:
                # marks are in ascending positions, each once: the shown ones are sorted and distinct
                for i in range(m):
                    label = self.o_lab[f + i]
                    if label >= 0 and label < <int64_t>shown.size() and shown[0][label]:
                        self.key_pos.push_back(self.o_pos[f + i])
            self.key_len[k] = <int64_t>self.key_pos.size() - self.key_off[k]
        # candidate indices in limit order: a stable bottom-up merge sort
        cdef vector[int64_t] idx, tmp
        idx.resize(n)
        tmp.resize(n)
        for k in range(n):
            idx[k] = k
        cdef int64_t width = 1, lo, mid, hi, a, b, c
        while width < n:
            lo = 0
            while lo < n:
                mid = lo + width if lo + width < n else n
                hi = lo + 2 * width if lo + 2 * width < n else n
                a, b, c = lo, mid, lo
                while a < mid and b < hi:
                    if self._cmp_limit(idx[b], idx[a]) < 0:
                        tmp[c] = idx[b]
                        b += 1
                    else:
                        tmp[c] = idx[a]
                        a += 1
                    c += 1
                while a < mid:
                    tmp[c] = idx[a]
                    a += 1
                    c += 1
                while b < hi:
                    tmp[c] = idx[b]
                    b += 1
                    c += 1
                lo = hi
            idx.swap(tmp)
            width *= 2
        self.keep.assign(n, 0)
        d = 0
        for k in range(n):
            if k == 0 or self._cmp_limit(idx[k - 1], idx[k]) != 0:
                d += 1  # a new distinct match
            if d > limit:
                break
            self.keep[idx[k]] = 1
        self.sel_tmp.clear()
        for k in range(n):
            if self.keep[k]:
                self.sel_tmp.push_back(self.sel[k])
        self.sel.swap(self.sel_tmp)

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
                        self.c_blab.push_back(self.nodes[n].label)
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

    def set_selection(self, list queries):
        """Per query (by index): (plain, strategy 0 none / 1 NEXT / 2 LAST / 3 MAX, LIMIT or -1, STRICT
        checked on marks, shows 0 every marked event / 1 none / 2 the labels flagged in ``shown``,
        shown: per mark label whether a match shows its event)."""
        cdef size_t k = 0
        cdef char flag
        for plain, strategy, limit, strict, shows, shown in queries:
            self.q_plain[k] = _flag(plain)
            self.q_strategy[k] = strategy
            self.q_limit[k] = limit
            self.q_strict[k] = _flag(strict)
            self.q_shows[k] = shows
            self.q_shown[k].clear()
            for flag in shown:
                self.q_shown[k].push_back(flag)
            k += 1

    def set_consume(self, str consume, bint checked):
        """CONSUME BY of the group's one query: "NONE", "PARTITION" or "ANY"; ``checked``: the query
        has cross-event checks (a walk decides whether a run completed)."""
        self.consumes = consume != "NONE"
        self.consume_any = consume == "ANY"
        self.consume_checked = checked

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
                if self.conds:
                    self._cond_move(k, i)
                if self.nodes[k].left >= 0:
                    self.nodes[k].left = remap[self.nodes[k].left]
                if self.nodes[k].right >= 0:
                    self.nodes[k].right = remap[self.nodes[k].right]
                k += 1
        self.nodes.resize(k)
        self.nodes.shrink_to_fit()
        if self.conds:
            self._cond_fit()
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
        [(state, node)], [ghost state, ...]), the nodes as ``node_class(kind, pos, label, left, right, maxstart, maxkey,
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
            if self.conds:
                self._cond_export(made[x], x)
        found = []
        for i in range(self.parts.size()):
            if not self.parts[i].alive:
                continue
            p = &self.parts[i]
            active = [(p.states[j], [made[x] for x in p.lists[j]]) for j in range(p.states.size())]
            merged = [(p.mstates[j], made[p.mnodes[j]]) for j in range(p.mstates.size())]
            found.append((i, p.running_max, p.local, p.created, p.reachable, active, merged, list(p.ghosts)))
        return found

    def load(self, list partitions):
        """Replace the live state by ``partitions``: per slot (slot, running_max, local, created,
        reachable, [(state, [node, ...])], [(state, node)], [ghost state, ...]) of Python ``tecs.Node``
        objects."""
        self.nodes.clear()
        self.parts.clear()
        ids = {}
        cdef Part* p
        for slot, running_max, local, created, reachable, active, merged, ghosts in partitions:
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
            for state in ghosts:
                self._know_state(state)
                p.ghosts.push_back(state)
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
            if self.conds:
                self._cond_load(ids[id(node)], node)
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

    # ------------------------------------------------------------ cross-event conditions (condcore)
    # ``conditions.Summaries`` (per-node term intervals), ``FilterCheck.possible`` (the bound test that
    # prunes branches) and ``ExactCondition`` (the check of a complete instance) on the programs of
    # ``engine.condition_code``. Every rule below mirrors the Python one it names; where int arithmetic
    # would leave int64 (Python's ints do not overflow), an exact check asks ``py_holds`` and a bound
    # or summary goes unknown (NaN), which only keeps a branch the Python path might prune.
    def set_conditions(self, dict t, py_holds, strings):
        """Load the tables of ``condition_code.compile_group``."""
        cdef Num x
        self.conds = True
        self.py_holds = py_holds
        self.strings = strings
        self.domain_errors = 0
        self.cprune = t["prune"]
        self.nterms = t["terms"]
        self.nattrs = t["attributes"]
        self.nvars = t["variables"]
        self.nlabels = len(t["plans"])
        for kind, value in t["identity"]:
            self.ident.push_back(_num(kind, value))
        for kind in t["kinds"]:
            self.tkind.push_back(kind)
        for row in t["labvar"]:
            for flag in row:
                self.labvar.push_back(_flag(flag))
        for plan in t["plans"]:
            self.plan_off.push_back(self.plan_data.size())
            for entry in plan:
                for v in entry:
                    self.plan_data.push_back(v)
        self.plan_off.push_back(self.plan_data.size())
        for kind, value in t["consts"]:
            self.consts.push_back(_num(kind, value))
        self.ck_coff.push_back(0)
        self.ck_toff.push_back(0)
        for c in t["checks"]:
            self.ck_whole.push_back(_flag(c["whole"]))
            for flag in c["tag"]:
                self.ck_tag.push_back(_flag(flag))
            for flag in c["first"]:
                self.ck_first.push_back(_flag(flag))
            for k in range(len(c["terms"])):
                self.ck_terms.push_back(c["terms"][k])
                self.ck_codes.push_back(c["codes"][k])
                self.ck_kinds.push_back(c["kinds"][k])
            self.ck_toff.push_back(self.ck_terms.size())
            for code in c["exact"]:
                self.cj_exact.push_back(self.xcode.size())
                for op in code:
                    self.xcode.push_back(op)
            for code, _ in c["bounds"]:  # the terms a conjunct reads: the program reads them itself
                self.cj_bound.push_back(self.bcode.size())
                for op in code:
                    self.bcode.push_back(op)
            self.ck_coff.push_back(self.cj_exact.size())
        self.q_off.push_back(0)
        for checks in t["queries"]:
            for k in checks:
                self.q_checks.push_back(k)
            self.q_off.push_back(self.q_checks.size())
        self.cur_seen.resize(2 * self.nterms)
        self.ivl.resize(2 * self.nterms)
        self.tmp_sum.resize(2 * self.nterms)
        self.cur_inst.resize(max(<size_t>1, self.ck_whole.size()))
        self._cond_fit()

    def set_values(self, signed char[:, ::1] kinds, int64_t[:, ::1] ints, double[:, ::1] floats):
        """The stored attributes of the next ``run``'s events (rows x attributes)."""
        self.v_kind = kinds
        self.v_int = ints
        self.v_flt = floats

    cdef void _cond_fit(self) except *:
        """The per-node arrays as long as the arena."""
        self.sumv.resize(self.nodes.size() * 2 * self.nterms)
        self.valv.resize(self.nodes.size() * self.nattrs)

    cdef void _cond_move(self, size_t to, size_t frm) except *:
        cdef int32_t k
        for k in range(2 * self.nterms):
            self.sumv[to * 2 * self.nterms + k] = self.sumv[frm * 2 * self.nterms + k]
        for k in range(self.nattrs):
            self.valv[to * self.nattrs + k] = self.valv[frm * self.nattrs + k]

    cdef void _sum_ident(self, int32_t node) except *:
        cdef int32_t k
        for k in range(2 * self.nterms):
            self.sumv[<size_t>node * 2 * self.nterms + k] = self.ident[k]

    cdef void _sum_union(self, int32_t node, int32_t left, int32_t right) except *:
        """``tecs._union_node``: each low the lower, each high the higher (as min and max pick)."""
        cdef int32_t T = self.nterms, k
        cdef Num* d = &self.sumv[<size_t>node * 2 * T]
        cdef Num* a = &self.sumv[<size_t>left * 2 * T]
        cdef Num* b = &self.sumv[<size_t>right * 2 * T]
        for k in range(T):
            d[k] = _lower(a[k], b[k])
            d[T + k] = _higher(a[T + k], b[T + k])

    cdef void _sum_output(self, Num* dst, Num* src, int64_t label, Num* vals, bint reset) except *:
        """``Summaries.output`` (dst may be src)."""
        cdef int32_t T = self.nterms, e, i, own, column, code
        cdef Num a0, a1, b0, b1, lo, hi
        if dst != src:
            for i in range(2 * T):
                dst[i] = src[i]
        if label < 0 or label >= self.nlabels:
            return
        for e in range(self.plan_off[label], self.plan_off[label + 1], 5):
            i = self.plan_data[e]
            own = self.plan_data[e + 1]
            column = self.plan_data[e + 2]
            code = self.plan_data[e + 4]
            if self.plan_data[e + 3] and reset:
                b0, b1 = self.ident[i], self.ident[T + i]
            else:
                b0, b1 = src[i], src[T + i]
            if own == 0:
                dst[i], dst[T + i] = b0, b1
                continue
            if own == 1:
                a0 = _int(1)
                a1 = a0
            elif own == 2 and vals[column].kind != K_NUL:
                a0 = vals[column]
                a1 = a0
            elif own == 2 and code != 3:
                a0, a1 = self.ident[i], self.ident[T + i]
            else:
                a0, a1 = _flt(-INF), _flt(INF)
            if code == 0:
                dst[i], dst[T + i] = _add_low(a0, b0), _add_high(a1, b1)
            elif code == 1:
                lo = _lower(a0, b0)
                hi = _lower(a1, b1)
                dst[i], dst[T + i] = lo, hi
            elif code == 2:
                lo = _higher(a0, b0)
                hi = _higher(a1, b1)
                dst[i], dst[T + i] = lo, hi
            else:
                lo = _lower(a0, b0)
                hi = _higher(a1, b1)
                dst[i], dst[T + i] = lo, hi

    cdef void _cond_output(self, int32_t out, int32_t below, int64_t label) except *:
        """An output node's stored values (the event in process's) and summary."""
        cdef int32_t A = self.nattrs, k, T = self.nterms
        cdef int64_t at = self.cur_at
        cdef Num* vals = &self.valv[<size_t>out * A] if A else NULL
        for k in range(A):
            vals[k].kind = self.v_kind[at, k]
            vals[k].i = self.v_int[at, k]
            vals[k].f = self.v_flt[at, k]
        if T:
            self._sum_output(&self.sumv[<size_t>out * 2 * T], &self.sumv[<size_t>below * 2 * T], label, vals, True)

    # ---------------- the walk with checks (``Walk.run`` with checks, summaries, depth first)
    cdef int64_t _walk_any(self, int32_t q, vector[int32_t]* roots, double end, double bound, bint incl,
                           int64_t* candidates) except -1:
        if not self.conds or self.q_off[q] == self.q_off[q + 1]:
            return self._walk(roots, end, bound, incl, candidates)
        return self._walk_checked(q, roots, end, bound, incl, candidates, self.cprune, False)

    cdef bint _possible(self, int32_t q, int32_t node) except -1:
        """``Walk._possible``: every open instance's check may still hold below ``node``."""
        cdef int32_t e, k
        for e in range(self.q_off[q], self.q_off[q + 1]):
            if self.cur_inst[e - self.q_off[q]] != -2:
                k = self.q_checks[e]
                if not self._check_possible(k, &self.cur_seen[0], &self.sumv[<size_t>node * 2 * self.nterms]):
                    return False
        return True

    cdef bint _check_possible(self, int32_t k, Num* seen, Num* below) except -1:
        """``FilterCheck.possible``."""
        cdef int32_t T = self.nterms, j, t, code, n = self.ck_toff[k + 1] - self.ck_toff[k]
        cdef Num a0, a1, c0, c1
        cdef Num* iv = &self.ivl[0]
        for j in range(n):
            t = self.ck_terms[self.ck_toff[k] + j]
            code = self.ck_codes[self.ck_toff[k] + j]
            a0, a1, c0, c1 = seen[t], seen[T + t], below[t], below[T + t]
            if code == 0:
                iv[2 * j], iv[2 * j + 1] = _add_low(a0, c0), _add_high(a1, c1)
            elif code == 1:
                iv[2 * j] = _lower(a0, c0)
                iv[2 * j + 1] = _lower(a1, c1)
            elif code == 2:
                iv[2 * j] = _higher(a0, c0)
                iv[2 * j + 1] = _higher(a1, c1)
            else:
                iv[2 * j] = _lower(a0, c0)
                iv[2 * j + 1] = _higher(a1, c1)
        cdef int32_t c
        for c in range(self.ck_coff[k], self.ck_coff[k + 1]):
            if self._bound(k, c) == 0:
                return False
        return True

    cdef int _bound(self, int32_t k, int32_t c) except -2:
        """``compile_bounds``' test of conjunct ``c`` on ``ivl``: 1 true, 0 false, -1 unknown.

        An envelope term over no events on every path (not NaN) is out of its domain where it is read: its
        value is kind 3 (``conditions.EMPTY``), which what reads it passes on, except where AND's
        left is false or OR's left is true (the right is not read there); the conjunct is then false."""
        cdef int32_t j, kind, op
        cdef Num* iv = &self.ivl[0]
        cdef int64_t pc = self.cj_bound[c]
        cdef Ival a, b, x, y, r
        self.bstack.clear()
        while True:
            op = <int32_t>self.bcode[pc]
            if op == 0:  # END
                break
            if op == 19:  # TERM
                j = <int32_t>self.bcode[pc + 1]
                pc += 2
                r.lo, r.hi = iv[2 * j], iv[2 * j + 1]
                r.kind = 0 if _nan(r.lo) or _nan(r.hi) else 1
                if r.kind == 1:
                    kind = self.ck_kinds[self.ck_toff[k] + j]
                    if kind == 4 and _cmp(r.lo, r.hi) == 1:  # only an envelope tells no events (``conditions._bounds``)
                        r.kind = 3
                self.bstack.push_back(r)
            elif op == 1:  # CONST
                r.kind = 1
                r.lo = self.consts[self.bcode[pc + 1]]
                r.hi = r.lo
                pc += 2
                self.bstack.push_back(r)
            elif op == 4:  # NEG
                pc += 1
                a = self.bstack.back()
                if a.kind == 1:
                    r.lo, r.hi = _neg(a.hi), _neg(a.lo)
                    r.kind = 0 if _nan(r.lo) or _nan(r.hi) else 1
                else:
                    r.kind = 3 if a.kind == 3 else 0
                self.bstack[self.bstack.size() - 1] = r
            elif op == 20:  # ABS
                pc += 1
                a = self.bstack.back()
                if a.kind != 3:
                    self.bstack[self.bstack.size() - 1] = _iabs(a)
            elif op == 5:  # ARITH
                b = self.bstack.back()
                self.bstack.pop_back()
                a = self.bstack.back()
                if a.kind == 3 or b.kind == 3:
                    a.kind = 3
                    self.bstack[self.bstack.size() - 1] = a
                else:
                    self.bstack[self.bstack.size() - 1] = _iarith(<int32_t>self.bcode[pc + 1], a, b)
                pc += 2
            elif op == 6:  # CMP
                b = self.bstack.back()
                self.bstack.pop_back()
                a = self.bstack.back()
                if a.kind == 3 or b.kind == 3:
                    a.kind = 3
                    self.bstack[self.bstack.size() - 1] = a
                else:
                    self.bstack[self.bstack.size() - 1] = _icmp(<int32_t>self.bcode[pc + 1], a, b)
                pc += 2
            elif op == 17:  # BETWEEN: operand, low, high
                b = self.bstack.back()
                self.bstack.pop_back()
                a = self.bstack.back()
                self.bstack.pop_back()
                x = self.bstack.back()
                # read as the exact check reads it (``conditions._between``): high where low <= x is not false
                r = _bempty(a, x)
                if r.kind != 3:
                    r = _icmp(3, a, x)
                y = _bempty(x, b)
                if y.kind != 3:
                    y = _icmp(3, x, b)
                self.bstack[self.bstack.size() - 1] = _band(r, y)
                pc += 1
            elif op == 12 or op == 13:  # AND3, OR3
                b = self.bstack.back()
                self.bstack.pop_back()
                a = self.bstack.back()
                self.bstack[self.bstack.size() - 1] = _band(a, b) if op == 12 else _bor(a, b)
                pc += 1
            elif op == 9:  # NOT
                a = self.bstack.back()
                if a.kind == 2:
                    a.lo.i = 1 - a.lo.i
                elif a.kind != 3:
                    a.kind = 0
                self.bstack[self.bstack.size() - 1] = a
                pc += 1
            elif op == 18:  # UNKNOWN n
                r.kind = 0
                for j in range(<int32_t>self.bcode[pc + 1]):
                    if self.bstack.back().kind == 3:
                        r.kind = 3
                    self.bstack.pop_back()
                self.bstack.push_back(r)
                pc += 2
            else:
                raise RuntimeError(f"bound program: opcode {op}")
        r = self.bstack.back()
        if r.kind == 2:
            return <int>r.lo.i
        return 0 if r.kind == 3 else -1

    cdef int _exact(self, int32_t k, int32_t deepest, int32_t latest) except -1:
        """``Walk._holds``: check ``k`` on the path's events from depth ``deepest`` (the instance's
        first event) up to ``latest`` (its last); 1 holds, 0 not, 2 out of its math domain."""
        cdef int32_t d, node, label
        cdef bint whole = self.ck_whole[k]
        cdef int result
        self.inst_nodes.clear()
        for d in range(deepest, latest - 1, -1):
            node = self.path_node[d]
            label = <int32_t>self.nodes[node].label
            if whole or self.ck_tag[<size_t>k * self.nlabels + label]:
                self.inst_nodes.push_back(node)
        cdef int32_t c
        for c in range(self.ck_coff[k], self.ck_coff[k + 1]):
            result = self._run_exact(self.cj_exact[c])
            if result == 3:
                return self._exact_python(k)
            if result != 1:
                return result
        return 1

    cdef int _exact_python(self, int32_t k) except -1:
        """The Python check on the instance in ``inst_nodes`` (exact where int64 is not)."""
        events = []
        cdef int32_t node, a
        for node in self.inst_nodes:
            values = tuple([self._py(self.valv[<size_t>node * self.nattrs + a]) for a in range(self.nattrs)])
            events.append((self.nodes[node].label, values))
        return int(self.py_holds(k, events))

    cdef object _py(self, Num v):
        if v.kind == K_INT:
            return v.i
        if v.kind == K_FLT:
            return v.f
        if v.kind == K_STR:
            return self.strings.names[v.i]
        return None

    cdef int _run_exact(self, int64_t pc) except -1:
        """One conjunct's exact program on ``inst_nodes``: 1 true, 0 false or unknown, 2 out of its
        domain, 3 not exact in int64 (the Python check decides)."""
        cdef int32_t op, var, col, fn, A = self.nattrs, V = self.nvars
        cdef int st = 0
        cdef Num a, b, x, r
        cdef size_t e
        cdef int64_t count
        cdef int32_t node
        cdef int64_t base = pc
        self.xstack.clear()
        while True:
            op = <int32_t>self.xcode[pc]
            if op == 0:
                break
            if op == 1:  # CONST
                self.xstack.push_back(self.consts[self.xcode[pc + 1]])
                pc += 2
            elif op == 2:  # REF var col: the variable's one event
                var = <int32_t>self.xcode[pc + 1]
                col = <int32_t>self.xcode[pc + 2]
                pc += 3
                count = 0
                for e in range(self.inst_nodes.size()):
                    node = self.inst_nodes[e]
                    if var >= 0 and self.labvar[<size_t>self.nodes[node].label * V + var]:
                        count += 1
                        r = self.valv[<size_t>node * A + col]
                if count != 1:
                    return 2
                self.xstack.push_back(r)
            elif op == 3:  # AGG fn var col
                fn = <int32_t>self.xcode[pc + 1]
                var = <int32_t>self.xcode[pc + 2]
                col = <int32_t>self.xcode[pc + 3]
                pc += 4
                st = self._aggregate(fn, var, col, &r)
                if st:
                    return st
                self.xstack.push_back(r)
            elif op == 4:  # NEG
                a = self.xstack.back()
                pc += 1
                if a.kind == K_NUL:
                    continue
                if a.kind == K_FLT:
                    a.f = -a.f
                else:
                    if a.i == INT64_MIN_:
                        return 3
                    a.i = -a.i
                    a.kind = K_INT
                self.xstack[self.xstack.size() - 1] = a
            elif op == 5 or op == 6:  # ARITH, CMP: both sides read, then null if one is
                b = self.xstack.back()
                self.xstack.pop_back()
                a = self.xstack.back()
                fn = <int32_t>self.xcode[pc + 1]
                pc += 2
                if a.kind == K_NUL or b.kind == K_NUL:
                    r.kind = K_NUL
                elif op == 5:
                    r = _arith(fn, a, b, &st)
                    if st:
                        return st
                else:
                    r = _truth(_compare(fn, a, b))
                self.xstack[self.xstack.size() - 1] = r
            elif op == 7:  # FUNC
                fn = <int32_t>self.xcode[pc + 1]
                pc += 2
                a = self.xstack.back()
                if a.kind == K_NUL:
                    continue
                r = _function(fn, a, &st)
                if st:
                    return st
                self.xstack[self.xstack.size() - 1] = r
            elif op == 8:  # TRUTH
                self.xstack[self.xstack.size() - 1] = _truthof(self.xstack.back())
                pc += 1
            elif op == 9:  # NOT
                a = self.xstack.back()
                if a.kind == K_BOOL:
                    a.i = 1 - a.i
                self.xstack[self.xstack.size() - 1] = a
                pc += 1
            elif op == 10:  # JFALSE
                a = self.xstack.back()
                if a.kind == K_BOOL and a.i == 0:
                    pc = base + self.xcode[pc + 1]  # jumps are within the conjunct's program
                else:
                    pc += 2
            elif op == 11:  # JTRUE
                a = self.xstack.back()
                if a.kind == K_BOOL and a.i == 1:
                    pc = base + self.xcode[pc + 1]  # jumps are within the conjunct's program
                else:
                    pc += 2
            elif op == 12 or op == 13:  # AND3, OR3
                b = self.xstack.back()
                self.xstack.pop_back()
                a = self.xstack.back()
                self.xstack[self.xstack.size() - 1] = _xand(a, b) if op == 12 else _xor(a, b)
                pc += 1
            elif op == 14:  # CHAIN1: low, x -> x, low <= x
                x = self.xstack.back()
                self.xstack.pop_back()
                a = self.xstack.back()
                if a.kind == K_NUL or x.kind == K_NUL:
                    r.kind = K_NUL
                else:
                    r = _truth(_compare(3, a, x))
                self.xstack[self.xstack.size() - 1] = x
                self.xstack.push_back(r)
                pc += 1
            elif op == 15:  # JCHAIN
                a = self.xstack.back()
                if a.kind == K_BOOL and a.i == 0:
                    self.xstack.pop_back()
                    self.xstack[self.xstack.size() - 1] = a
                    pc = base + self.xcode[pc + 1]  # jumps are within the conjunct's program
                else:
                    pc += 2
            elif op == 16:  # CHAIN2: x, above, high -> and3(above, x <= high)
                b = self.xstack.back()
                self.xstack.pop_back()
                a = self.xstack.back()
                self.xstack.pop_back()
                x = self.xstack.back()
                if x.kind == K_NUL or b.kind == K_NUL:
                    r.kind = K_NUL
                else:
                    r = _truth(_compare(3, x, b))
                self.xstack[self.xstack.size() - 1] = _xand(a, r)
                pc += 1
            else:
                raise RuntimeError(f"exact program: opcode {op}")
        a = _truthof(self.xstack.back())
        return 1 if a.kind == K_BOOL and a.i == 1 else 0

    cdef int _aggregate(self, int32_t fn, int32_t var, int32_t col, Num* out) except -1:
        """``ExactCondition._aggregate`` over ``var``'s events in ``inst_nodes`` (0, or 2/3 as
        ``_run_exact``)."""
        cdef size_t e
        cdef int32_t node, A = self.nattrs, V = self.nvars
        cdef int64_t n = 0, present = 0
        cdef Num v, acc, m
        cdef long long s
        cdef bint found = False
        acc = _int(0)
        m.kind = K_NUL
        for e in range(self.inst_nodes.size()):
            node = self.inst_nodes[e]
            if var < 0 or not self.labvar[<size_t>self.nodes[node].label * V + var]:
                continue
            n += 1
            if fn == 0:
                continue
            v = self.valv[<size_t>node * A + col]
            if fn == 5:  # first
                if n == 1:
                    m = v
                continue
            if fn == 6:  # last
                m = v
                continue
            if v.kind == K_NUL:
                continue  # aggregates skip nulls, as in SQL
            present += 1
            if fn == 1 or fn == 2:  # sum (Python 3.11's sum(): ints exactly, then doubles in order)
                if acc.kind == K_INT and v.kind != K_FLT:
                    if cc_add_ovf(acc.i, v.i, &s):
                        return 3
                    acc.i = s
                elif acc.kind == K_INT:
                    acc = _flt(<double>acc.i + v.f)
                else:
                    acc.f = acc.f + (v.f if v.kind == K_FLT else <double>v.i)
            elif not found:
                m = v
                found = True
            elif fn == 3 and _cmp(v, m) == -1:
                m = v
            elif fn == 4 and _cmp(v, m) == 1:
                m = v
        if fn == 0:
            out[0] = _int(n)
            return 0
        if fn == 5 or fn == 6:
            if n == 0:
                return 2
            out[0] = m
            return 0
        if fn == 1:
            out[0] = acc
            return 0
        if present == 0:
            return 2
        if fn == 2:
            if acc.kind == K_INT:
                if acc.i > TWO53 or acc.i < -TWO53:
                    return 3
                out[0] = _flt(<double>acc.i / <double>present)
            else:
                out[0] = _flt(acc.f / <double>present)
            return 0
        out[0] = m
        return 0

    cdef int64_t _walk_checked(self, int32_t q, vector[int32_t]* roots, double end, double bound, bint incl,
                               int64_t* candidates, bint prune, bint first_only) except -1:
        """``_walk`` with the query's cross-event checks: ``Walk.run`` with ``_advance``, ``_possible``
        and ``_whole_holds``, depth first. Pending branches carry the seen summary and the open
        instances (per check: -2 none, -1 the whole match, else the depth of its last event). With
        ``first_only``, the walk ends at its first path (``_consume``)."""
        cdef bint always = bound == INF
        cdef int64_t visited = 0
        cdef int32_t n, right, depth, e, k, kk, nq = self.q_off[q + 1] - self.q_off[q], T = self.nterms
        cdef int32_t label, latest, t
        cdef int64_t i, root
        cdef int result
        cdef bint failed
        cdef size_t at
        if self.cur_inst.size() < <size_t>max(nq, 1):
            self.cur_inst.resize(nq)
        self.pend_node.clear()
        self.pend_depth.clear()
        self.pend_seen.clear()
        self.pend_inst.clear()
        for root in range(<int64_t>roots.size() - 1, -1, -1):
            n = roots[0][root]
            for k in range(2 * T):
                self.cur_seen[k] = self.ident[k]
            for e in range(nq):
                if self.ck_whole[self.q_checks[self.q_off[q] + e]]:
                    self.cur_inst[e] = -1
                else:
                    self.cur_inst[e] = -2
            if (always or _within(end - self.nodes[n].maxkey, bound, incl)) and (
                    not prune or self._possible(q, n)):
                self._push(n, 0, nq)
        while self.pend_node.size():
            n = self.pend_node.back()
            depth = self.pend_depth.back()
            self.pend_node.pop_back()
            self.pend_depth.pop_back()
            at = self.pend_node.size()
            for k in range(2 * T):
                self.cur_seen[k] = self.pend_seen[at * 2 * T + k]
            for e in range(nq):
                self.cur_inst[e] = self.pend_inst[at * nq + e]
            self.pend_seen.resize(at * 2 * T)
            self.pend_inst.resize(at * nq)
            while True:
                visited += 1
                if self.nodes[n].kind == OUTPUT:
                    if <int32_t>self.path_pos.size() <= depth:
                        self.path_pos.resize(depth + 1)
                        self.path_lab.resize(depth + 1)
                    if <int32_t>self.path_node.size() <= depth:
                        self.path_node.resize(depth + 1)
                    label = <int32_t>self.nodes[n].label
                    self.path_pos[depth] = self.nodes[n].pos
                    self.path_lab[depth] = label
                    self.path_node[depth] = n
                    if prune:
                        self._sum_output(&self.cur_seen[0], &self.cur_seen[0], label,
                                         &self.valv[<size_t>n * self.nattrs] if self.nattrs else NULL, False)
                    failed = False
                    for e in range(nq):
                        k = self.q_checks[self.q_off[q] + e]
                        if self.ck_whole[k] or not self.ck_tag[<size_t>k * self.nlabels + label]:
                            continue
                        if self.ck_first[<size_t>k * self.nlabels + label]:
                            latest = depth
                            if self.cur_inst[e] >= 0:
                                latest = self.cur_inst[e]
                            result = self._exact(k, depth, latest)
                            if result != 1:
                                if result == 2:
                                    self.domain_errors += 1
                                candidates[0] += 1  # a candidate built, then rejected
                                failed = True
                                break
                            self.cur_inst[e] = -2
                            if prune:  # Summaries.cleared
                                for kk in range(self.ck_toff[k], self.ck_toff[k + 1]):
                                    t = self.ck_terms[kk]
                                    self.cur_seen[t] = self.ident[t]
                                    self.cur_seen[T + t] = self.ident[T + t]
                        elif self.cur_inst[e] == -2:
                            self.cur_inst[e] = depth
                    if failed:
                        break
                    depth += 1
                    n = self.nodes[n].left
                elif self.nodes[n].kind == UNION:
                    right = self.nodes[n].right
                    if right >= 0 and (always or _within(end - self.nodes[right].maxkey, bound, incl)) and (
                            not prune or self._possible(q, right)):
                        self._push(right, depth, nq)
                    n = self.nodes[n].left
                    if prune and not self._possible(q, n):
                        break
                else:
                    if always or _within(end - self.nodes[n].value, bound, incl):
                        candidates[0] += 1
                        failed = False
                        for e in range(nq):
                            k = self.q_checks[self.q_off[q] + e]
                            if self.ck_whole[k]:
                                result = self._exact(k, depth - 1, 0)
                                if result != 1:
                                    if result == 2:
                                        self.domain_errors += 1
                                    failed = True
                                    break
                        if failed:
                            break
                        self.c_path.push_back(self.nodes[n].pos)
                        self.c_path.push_back(<int64_t>self.o_pos.size())
                        self.c_path.push_back(depth)
                        self.c_value.push_back(self.nodes[n].value)
                        self.c_blab.push_back(self.nodes[n].label)
                        for i in range(depth - 1, -1, -1):
                            self.o_pos.push_back(self.path_pos[i])
                            self.o_lab.push_back(self.path_lab[i])
                        if first_only:  # ``next(walk.run(...))``: the first path ends the walk
                            self.pend_node.clear()
                            self.pend_depth.clear()
                            self.pend_seen.clear()
                            self.pend_inst.clear()
                    break
        return visited

    cdef void _push(self, int32_t n, int32_t depth, int32_t nq) except *:
        cdef int32_t k
        self.pend_node.push_back(n)
        self.pend_depth.push_back(depth)
        for k in range(2 * self.nterms):
            self.pend_seen.push_back(self.cur_seen[k])
        for k in range(nq):
            self.pend_inst.push_back(self.cur_inst[k])

    # ---------------- to and from Python's nodes
    cdef void _cond_export(self, object made, int32_t x) except *:
        cdef int32_t T = self.nterms, k
        if T:
            made.summary = (
                tuple([self._py(self.sumv[<size_t>x * 2 * T + k]) for k in range(T)]),
                tuple([self._py(self.sumv[<size_t>x * 2 * T + T + k]) for k in range(T)]),
            )
        if self.nodes[x].kind == OUTPUT:
            made.value = tuple([self._py(self.valv[<size_t>x * self.nattrs + k]) for k in range(self.nattrs)])

    cdef void _cond_load(self, int32_t x, object node) except *:
        cdef int32_t T = self.nterms, k
        summary = node.summary
        if T:
            if summary is None:
                self._sum_ident(x)
            else:
                for k in range(T):
                    self.sumv[<size_t>x * 2 * T + k] = self._num_of(summary[0][k], -1)
                    self.sumv[<size_t>x * 2 * T + T + k] = self._num_of(summary[1][k], 1)
        if node.kind == OUTPUT and isinstance(node.value, tuple):
            for k in range(self.nattrs):
                self.valv[<size_t>x * self.nattrs + k] = self._num_of(node.value[k], 0)

    cdef Num _num_of(self, object v, int side) except *:
        """A Python value in the core; ``side`` -1 (a range's low end) or 1 (its high end) widens
        an int beyond int64 to a bound of it (as ``_add_low``/``_add_high``), 0 makes it NaN."""
        cdef Num r
        if v is None or isinstance(v, bool):
            r.kind = K_NUL
        elif isinstance(v, int):
            if -INT64_MAX_ <= v <= INT64_MAX_:
                r = _int(v)
            elif side < 0:
                r = _int(INT64_MAX_) if v > 0 else _flt(-POS_INF_)
            elif side > 0:
                r = _flt(POS_INF_) if v > 0 else _int(INT64_MIN_)
            else:
                r = _flt(NAN_)  # beyond int64: unknown to the core
        elif isinstance(v, float):
            r = _flt(v)
        else:
            r.kind = K_STR
            r.i = self.strings.code(v)
        return r


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


def string_codes(list words):
    """``feed._codes`` of a batch's strings: an int64 per word, equal where the words are equal, by order
    of first sight (the first distinct word 0, the next 1, ...). One dict look-up per word in C; the
    Python way (``dict.fromkeys``, then ``map`` into ``np.fromiter``) cost ~500 instructions a word."""
    cdef Py_ssize_t i, n = len(words)
    cdef dict index = {}
    cdef object found
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] view = out
    for i in range(n):
        word = words[i]
        found = index.get(word)
        if found is None:
            found = len(index)
            index[word] = found
        view[i] = found
    return out
