# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""JSON lines of the compiled core's matches, made in C from its flat buffers.

``Projection.line`` (``line_template`` + ``str.format``) makes one line per
match in Python: on dense queries without conditions that was the largest
part of a run once the core enumerated. Here a whole piece of the core's
output (records, matches, marks: see ``Core.take``) becomes its lines in one
call, byte for byte those ``Projection.line`` makes (a test compares them):
``{"query": Q, "tenant": T, "start": S, "end": E, "events": [P, ...],
"vars": {"V": [P, ...], ...}}``, the variables a match holds in the order of
their names, each with its positions in mark order. The head (query and
tenant) and each variable's quoted key come from Python (``json.dumps``, so
ASCII): only integers are written here.

A record's matches are put in (start, events) order, as ``native._lines``
orders them (with an emit, a record of more matches than the event block in
blocks of that many, as ``QueryGroupRunner._plain`` puts them); a record
whose query is not lined, or with two matches of equal start and events in
one block (the Python path then picks one by its variables) makes the whole
piece go the Python way.
"""

from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, strlen
from libcpp.string cimport string
from libcpp.vector cimport vector
from cpython.unicode cimport PyUnicode_DecodeASCII


cdef const int64_t *g_match
cdef const int64_t *g_at


cdef inline int _cmp(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Python's order of (start, [positions]) of matches a and b."""
    cdef int64_t sa = g_match[3 * a], sb = g_match[3 * b]
    if sa != sb:
        return -1 if sa < sb else 1
    cdef int64_t fa = g_match[3 * a + 1], na = g_match[3 * a + 2]
    cdef int64_t fb = g_match[3 * b + 1], nb = g_match[3 * b + 2]
    cdef int64_t i, x, y, m = na if na < nb else nb
    for i in range(m):
        x = g_at[fa + i]
        y = g_at[fb + i]
        if x != y:
            return -1 if x < y else 1
    if na != nb:
        return -1 if na < nb else 1
    return 0


cdef void _sort(vector[Py_ssize_t] &idx, vector[Py_ssize_t] &tmp) noexcept nogil:
    """A stable bottom-up merge sort of ``idx`` by ``_cmp``."""
    cdef Py_ssize_t n = idx.size(), width = 1, lo, mid, hi, i, j, k
    if n < 2:
        return
    tmp.resize(n)
    while width < n:
        lo = 0
        while lo < n:
            mid = lo + width if lo + width < n else n
            hi = lo + 2 * width if lo + 2 * width < n else n
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _cmp(idx[j], idx[i]) < 0:
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        idx.swap(tmp)
        width *= 2


#: "00" "01" ... "99": two digits of a number at a time
cdef const char *_PAIRS = (
    b"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    b"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    b"8081828384858687888990919293949596979899"
)
#: at most the characters of an int64 in decimal, its sign included
cdef enum:
    _INT_CHARS = 20


cdef inline char *_int(char *p, int64_t v) noexcept nogil:
    """Write ``v`` in decimal at ``p``, as ``str(v)`` writes it; the end of what was written. Digits two
    at a time from the end of a small buffer (``snprintf`` parsed its format at every call, a fifth of
    a dense query's whole run; a digit at a time was most of what a line cost after that)."""
    cdef char buf[24]
    cdef int at = 24
    cdef uint64_t u = <uint64_t>v, pair
    if v < 0:
        u = (~u) + 1  # the magnitude, INT64_MIN's included
    while u >= 100:
        pair = 2 * (u % 100)
        u //= 100
        at -= 2
        buf[at] = _PAIRS[pair]
        buf[at + 1] = _PAIRS[pair + 1]
    if u >= 10:
        at -= 2
        buf[at] = _PAIRS[2 * u]
        buf[at + 1] = _PAIRS[2 * u + 1]
    else:
        at -= 1
        buf[at] = <char>(48 + u)
    if v < 0:
        at -= 1
        buf[at] = 45  # '-'
    memcpy(p, &buf[at], 24 - at)
    return p + (24 - at)


cdef inline char *_text(char *p, const char *text) noexcept nogil:
    """Write the C string ``text`` at ``p`` (a literal: its length is known to the compiler)."""
    cdef size_t n = strlen(text)
    memcpy(p, text, n)
    return p + n


cdef inline char *_bytes(char *p, const string &text) noexcept nogil:
    memcpy(p, text.data(), text.size())
    return p + text.size()


cdef int _put_lines(
    list out,
    vector[Py_ssize_t] &idx,
    const int64_t[:, ::1] matches,
    const int64_t[::1] at,
    const int64_t[::1] labels,
    string &head,
    vector[string] &keys,
    vector[uint64_t] &masks,
    int64_t end,
    string &line,
    object ranked,
) except -1:
    """Append the lines of the matches ``idx`` (sorted, their labels checked) to ``out``; with
    ``ranked`` (the end and the query's rank), each as (end, rank, line). Each line is written into
    ``line``, first made as long as the longest the match can make (no check per character)."""
    cdef Py_ssize_t i, j, k, f, nm, v, n_keys = keys.size()
    cdef size_t keys_size = 0, most
    cdef int64_t lab
    cdef bint any_held, opened
    cdef char *base
    cdef char *p
    for v in range(n_keys):
        keys_size += keys[v].size()
    for i in range(<Py_ssize_t>idx.size()):
        k = idx[i]
        f, nm = matches[k, 1], matches[k, 2]
        # head, start, end, every mark's position in the events and at most once under every key
        most = head.size() + 64 + 2 * _INT_CHARS + (nm + 1) * (_INT_CHARS + 2) * (n_keys + 1) + keys_size + 4 * n_keys
        if line.size() < most:
            line.resize(most)
        base = &line[0]
        p = _bytes(base, head)
        p = _int(p, matches[k, 0])
        p = _text(p, b', "end": ')
        p = _int(p, end)
        p = _text(p, b', "events": [')
        for j in range(nm):
            if j:
                p = _text(p, b", ")
            p = _int(p, at[f + j])
        p = _text(p, b'], "vars": {')
        any_held = False
        for v in range(n_keys):
            opened = False
            for j in range(nm):
                lab = labels[f + j]
                if masks[lab] >> v & 1:
                    if not opened:
                        if any_held:
                            p = _text(p, b", ")
                        p = _bytes(p, keys[v])
                        p = _text(p, b"[")
                        opened = True
                        any_held = True
                    else:
                        p = _text(p, b", ")
                    p = _int(p, at[f + j])
            if opened:
                p = _text(p, b"]")
        p = _text(p, b"}}")
        text = PyUnicode_DecodeASCII(base, p - base, NULL)
        out.append(text if ranked is None else (ranked[0], ranked[1], text))
    return 0


def lines(
    const int64_t[:, ::1] records,
    const int64_t[:, ::1] matches,
    const int64_t[::1] at,
    const int64_t[::1] labels,
    const int64_t[::1] positions,
    list tables,
    int64_t event_block,
    Py_ssize_t already,
    Py_ssize_t flush_at,
    object flush,
    list ranks=None,
):
    """The lines of a piece's ``records`` (query, row, first match, matches,
    steps, candidates), in record order. With ``flush`` (an emit is set),
    the lines go to ``flush(lines, crowded)`` where the Python path flushes
    the emit between them (``already`` lines waiting, a flush once
    ``flush_at`` wait when an event's records begin), so only those since
    the last flush are held (a piece's lines all at once filled memory the
    allocator kept asking the kernel for again); ``crowded`` is the end
    position of a block put out ahead of its event's last, else -1: a
    record of more than ``event_block`` matches goes out as
    ``QueryGroupRunner._plain`` puts it, in blocks of that many in walk
    order, each sorted and flushed, but the last. Returns the lines not
    flushed, or None if the piece must go the Python way (see the module),
    decided before any line is made. ``tables[q]``: None (query ``q`` is
    not lined) or (head bytes, quoted keys in name order, per mark label a
    bit mask of the keys it holds). With ``ranks`` (per query its rank in
    the writer's order), each line comes as (end, rank, line)."""
    cdef Py_ssize_t n_rec = records.shape[0], r, i, j, first, count, lo, hi, at_order
    cdef int64_t q, row, last = -1, end, lab
    cdef Py_ssize_t waiting = already
    cdef bint emit = flush is not None
    cdef vector[Py_ssize_t] idx, tmp, order
    cdef string line
    # the tables in C++ once per call: a piece has many records, a group few queries
    cdef vector[bint] lined
    cdef vector[string] heads
    cdef vector[vector[string]] keys_of
    cdef vector[vector[uint64_t]] masks_of
    cdef list out = []
    global g_match, g_at
    for table in tables:
        lined.push_back(table is not None)
        heads.push_back(table[0] if table is not None else b"")
        keys_of.push_back(table[1] if table is not None else [])
        masks_of.push_back(table[2] if table is not None else [])
    if matches.shape[0]:
        g_match = &matches[0, 0]
    if at.shape[0]:
        g_at = &at[0]
    # first every record's blocks sorted and checked: nothing goes out of a piece that goes the Python way
    for r in range(n_rec):
        q, first, count = records[r, 0], records[r, 2], records[r, 3]
        if q < 0 or q >= <int64_t>lined.size() or not lined[q]:
            return None
        lo = first
        while lo < first + count:
            hi = first + count
            if emit and hi - lo > event_block:  # blocks of ``event_block`` in walk order (the last may be full)
                hi = lo + event_block
            idx.clear()
            for i in range(lo, hi):
                idx.push_back(i)
                for j in range(matches[i, 1], matches[i, 1] + matches[i, 2]):
                    lab = labels[j]
                    if lab < 0 or lab >= <int64_t>masks_of[q].size():
                        return None
            _sort(idx, tmp)
            for i in range(1, <Py_ssize_t>idx.size()):
                if _cmp(idx[i - 1], idx[i]) == 0:
                    return None  # two share start and events: the Python path picks one by its variables
            for i in range(<Py_ssize_t>idx.size()):
                order.push_back(idx[i])
            lo = hi
    at_order = 0
    for r in range(n_rec):
        q, row, first, count = records[r, 0], records[r, 1], records[r, 2], records[r, 3]
        if row != last:
            if last >= 0 and emit and waiting >= flush_at:
                flush(out, -1)
                out = []
                waiting = 0
            last = row
        if count == 0:
            continue
        end = positions[row]
        ranked = None if ranks is None else (end, ranks[q])
        lo = 0
        while lo < count:
            hi = count
            if emit and hi - lo > event_block:
                hi = lo + event_block
            idx.clear()
            for i in range(at_order + lo, at_order + hi):
                idx.push_back(order[i])
            _put_lines(out, idx, matches, at, labels, heads[q], keys_of[q], masks_of[q], end, line, ranked)
            if hi < count:  # a block ahead of the event's last: out at once (``_plain``)
                flush(out, end)
                out = []
                waiting = 0
            else:
                waiting += hi - lo
            lo = hi
        at_order += count
    return out


cdef Py_ssize_t _distinct(vector[Py_ssize_t] &idx, vector[Py_ssize_t] &tmp) noexcept nogil:
    """How many distinct (start, positions) the matches ``idx`` hold (``g_match``/``g_at``)."""
    cdef Py_ssize_t i, n = idx.size(), found
    if n == 0:
        return 0
    _sort(idx, tmp)
    found = 1
    for i in range(1, n):
        if _cmp(idx[i - 1], idx[i]) != 0:
            found += 1
    return found


def counts(
    const int64_t[:, ::1] records,
    const int64_t[:, ::1] matches,
    const int64_t[::1] at,
    const int64_t[::1] labels,
    list queries,
    int64_t event_block,
):
    """Per query of a group, the matches a piece's ``records`` put out (``--count``), counted as the
    output path would write them, without a Python object per match: one per start and shown
    events (``selection.distinct``), taken per block of ``event_block`` matches in walk order where
    every candidate is a match (``QueryGroupRunner._plain``), else over the record's candidates with
    the query's LIMIT after (``native._chosen``). ``queries[q]``: (plain, LIMIT or -1, per mark label
    whether a match shows its event, or None: every marked event)."""
    cdef Py_ssize_t n_rec = records.shape[0], n_q = len(queries), r, i, j, k, lo, hi, f, nm
    cdef int64_t q, first, count, limit, lab, found
    cdef vector[bint] plain
    cdef vector[int64_t] limits
    cdef vector[bint] every
    cdef vector[vector[char]] shows
    cdef vector[int64_t] totals
    cdef vector[Py_ssize_t] idx, tmp
    cdef vector[int64_t] kmatch, kat  # a record's matches with only their shown events, for ``_cmp``
    cdef const int64_t *all_match = NULL
    cdef const int64_t *all_at = NULL
    global g_match, g_at
    for entry in queries:
        plain.push_back(entry[0])
        limits.push_back(entry[1])
        every.push_back(entry[2] is None)
        shows.push_back(entry[2] if entry[2] is not None else b"")
    totals.assign(n_q, 0)
    if matches.shape[0]:
        all_match = &matches[0, 0]
    if at.shape[0]:
        all_at = &at[0]
    for r in range(n_rec):
        q, first, count = records[r, 0], records[r, 2], records[r, 3]
        if count <= 0:
            continue
        if q < 0 or q >= n_q:
            raise ValueError(f"a record of query {q} in a group of {n_q}")
        if every[q]:
            g_match, g_at = all_match, all_at
            lo = first
        else:
            kmatch.clear()
            kat.clear()
            for i in range(first, first + count):
                f, nm = matches[i, 1], matches[i, 2]
                kmatch.push_back(matches[i, 0])
                kmatch.push_back(<int64_t>kat.size())
                for j in range(nm):
                    lab = labels[f + j]
                    if lab < 0 or lab >= <int64_t>shows[q].size():
                        raise ValueError(f"a mark label {lab} query {q} does not know")
                    if shows[q][lab]:
                        kat.push_back(at[f + j])
                kmatch.push_back(<int64_t>kat.size() - kmatch[kmatch.size() - 1])
            g_match = kmatch.data()
            g_at = kat.data()
            lo = 0
        if plain[q]:
            found = 0
            k = 0
            while k < count:
                hi = k + event_block if k + event_block < count else count
                idx.clear()
                for i in range(lo + k, lo + hi):
                    idx.push_back(i)
                found += _distinct(idx, tmp)
                k = hi
        else:
            idx.clear()
            for i in range(lo, lo + count):
                idx.push_back(i)
            found = _distinct(idx, tmp)
            limit = limits[q]
            if limit >= 0 and found > limit:
                found = limit
        totals[q] += found
    return [totals[k] for k in range(n_q)]
