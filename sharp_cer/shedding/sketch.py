"""Sharp's historical data sketch (Alg. 3), adapted to the tECS.

A partial match (PM) is an output node: one marked event, bound to a label
(the pattern variable, hence the automaton state it entered). Its *attribute
key* is that label plus the bucketed sketch attributes of its own event, one
int ``label * buckets + bucket``. Per key the sketch counts PMs created
(``pn``) and, per query, the complete matches whose paths pass through a PM
with that key (``cn``). From these, in O(1) per PM and query:

* Δ+ = weight × cn / pn, the matches a PM with the key is expected to end in;
* Δ- = Θ × tn / pn, the enumeration work it is expected to cost: in a tECS
  a PM costs no work per event (the update is constant in the number of
  PMs); it costs the walks that reach it, once per path above it that gets
  there, whether the walk goes on (towards a match or not) or a filter's
  summary turns it back. ``tn`` counts those tests per query (the walks
  report them), Θ is one test.
* the *yield* cn / tn, matches per test: what a PM of the key gives for what
  it costs, the greedy selector's quality.

Counts decay: every ``epoch`` events, older counts weigh ``decay`` times
less, so the model follows a drift. Decay is lazy: new counts are added with
a weight that grows by 1 / decay per epoch, and everything is rescaled once
the weight gets large (amortized O(1)).

>>> sketch = HistoricalSketch(queries=2, buckets=4, epoch=100, decay=0.5)
>>> for _ in range(4):
...     sketch.created(sketch.key(label=1, bucket=3))
>>> sketch.matched(0, [sketch.key(1, 3)]); sketch.matched(0, [sketch.key(1, 3)])
>>> sketch.contribution(sketch.key(1, 3), 0), sketch.contribution(sketch.key(1, 3), 1)
(0.5, 0.0)
>>> sketch.contribution(sketch.key(1, 2), 0)  # never seen: no evidence either way
0.0
>>> sketch.tested(0, sketch.key(1, 3), 8)
>>> sketch.overhead(sketch.key(1, 3), 0), sketch.yield_of(sketch.key(1, 3), 0), sketch.tests(sketch.key(1, 3), 0)
(2.0, 0.25, 8.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

#: Rescale the lazy decay weight once it passes this.
_RESCALE_AT = 1e100


class HistoricalSketch:
    """Counts of PMs created and matches per attribute key, decayed (see the
    module docstring). ``queries`` is the number of queries tracked (by
    index), ``buckets`` the number of attribute buckets per label."""

    def __init__(self, queries: int, buckets: int, epoch: int = 1000, decay: float = 0.5) -> None:
        self.queries = queries
        self.buckets = buckets
        self.epoch = epoch
        self.decay = decay
        self.weight = 1.0  # the lazy decay's weight of a count added now
        self.pn: dict[int, float] = {}
        self.cn: dict[int, list[float]] = {}
        self.tn: dict[int, list[float]] = {}
        self.events = 0

    def key(self, label: int, bucket: int) -> int:
        """The attribute key of a PM (see the module docstring)."""
        return label * self.buckets + bucket

    def tick(self) -> None:
        """One event went by (decay is counted in events)."""
        self.events += 1
        if self.events % self.epoch == 0:
            self.weight /= self.decay
            if self.weight > _RESCALE_AT:
                self._rescale()

    def _rescale(self) -> None:
        w = self.weight
        self.pn = {k: v / w for k, v in self.pn.items()}
        self.cn = {k: [c / w for c in v] for k, v in self.cn.items()}
        self.tn = {k: [c / w for c in v] for k, v in self.tn.items()}
        self.weight = 1.0

    def created(self, key: int) -> None:
        """A PM with ``key`` was created."""
        pn = self.pn
        pn[key] = pn.get(key, 0.0) + self.weight

    def matched(self, query: int, keys: Iterable[int]) -> None:
        """A match of ``query`` passed through PMs with ``keys``."""
        cn, w, n = self.cn, self.weight, self.queries
        for key in keys:
            row = cn.get(key)
            if row is None:
                row = cn[key] = [0.0] * n
            row[query] += w

    def tested(self, query: int, key: int, count: int = 1) -> None:
        """A walk of ``query`` tested PMs with ``key`` ``count`` times."""
        row = self.tn.get(key)
        if row is None:
            row = self.tn[key] = [0.0] * self.queries
        row[query] += count * self.weight

    def tests(self, key: int, query: int) -> float:
        """Tests of PMs with ``key`` by ``query``'s walks, in units of the
        current epoch's counts."""
        row = self.tn.get(key)
        return row[query] / self.weight if row is not None else 0.0

    def overhead(self, key: int, query: int) -> float:
        """Tests a PM with ``key`` is expected to cost ``query``'s walks
        (tn / pn; Δ- with Θ = 1)."""
        row = self.tn.get(key)
        pn = self.pn.get(key, 0.0)
        return row[query] / pn if row is not None and pn else 0.0

    def yield_of(self, key: int, query: int) -> float:
        """Matches of ``query`` per test of a PM with ``key`` (cn / tn)."""
        tn = self.tn.get(key)
        if tn is None or not tn[query]:
            return 0.0
        cn = self.cn.get(key)
        return cn[query] / tn[query] if cn is not None else 0.0

    def contribution(self, key: int, query: int) -> float:
        """Matches of ``query`` a PM with ``key`` is expected to end in
        (cn / pn, unweighted)."""
        row = self.cn.get(key)
        if row is None:
            return 0.0
        return row[query] / max(self.pn.get(key, 0.0), row[query])


class Bucketer:
    """Buckets of the sketch attributes: per attribute, quantile edges learned
    from the first batch that has values (then fixed, so keys keep their
    meaning); several attributes combine into one bucket number.

    >>> b = Bucketer(["v"], per_attribute=4)
    >>> b.buckets
    4
    >>> b.bucket_rows({"v": np.arange(100.0)}).tolist()[::25]
    [0, 1, 2, 3]
    """

    def __init__(self, attributes: Sequence[str], per_attribute: int = 8) -> None:
        self.attributes = tuple(attributes)
        self.per_attribute = per_attribute
        self.edges: dict[str, npt.NDArray[np.float64]] = {}
        self.buckets = per_attribute ** len(self.attributes) if self.attributes else 1

    def bucket_rows(self, columns: dict[str, npt.NDArray[np.float64]]) -> npt.NDArray[np.int64]:
        """The bucket of every row, given each attribute's values (NaN where
        a row has none: bucket 0 of that attribute)."""
        n = len(next(iter(columns.values()))) if columns else 0
        out = np.zeros(n, dtype=np.int64)
        for name in self.attributes:
            values = columns.get(name)
            out *= self.per_attribute
            if values is None:
                continue
            finite = values[np.isfinite(values)]
            if name not in self.edges and len(finite):
                qs = np.linspace(0, 1, self.per_attribute + 1)[1:-1]
                self.edges[name] = np.unique(np.quantile(finite, qs))
            edges = self.edges.get(name)
            if edges is not None:
                found = np.searchsorted(edges, np.nan_to_num(values, nan=-np.inf), side="right")
                out += np.where(np.isfinite(values), found, 0)
        return out
