"""What a run did per query, as users read it: matches, what was cut and
by which lever, and latency from arrival (queueing included) against the
bound: mean, p50, p99 and max in milliseconds and in cost units, and the
share of events over the bound (quantiles within 1% of numpy's:
``engine.queueing.QueueLog``). Used by ``--stats``, ``Detector.summary``
and the CLI's run summary.

>>> from sharp_cer.api import Detector
>>> from sharp_cer.engine.queueing import Pace
>>> from sharp_cer.language import Schema
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
>>> q = [("q", "SELECT * WHERE A ; B WITHIN 5 EVENTS")]
>>> d = Detector.from_queries(q, s, record_latency=True, capacity=1000, pace=Pace(rate=1))
>>> import pandas as pd
>>> _ = d.feed(pd.DataFrame({"type": ["A", "B"], "x": [1, 2]}))  # A at 0 s: 3 units; B at 1 s: 3 + 3
>>> row = d.summary()["q"]
>>> row["matches"], row["cuts"], row["latency"]["ms"]["max"], row["latency"]["units"]["mean"]
(1, {'events': 0, 'partial_matches': 0, 'enumerations_cut_short': 0}, 6.0, 4.5)
>>> print(render(d.summary()))  # doctest: +NORMALIZE_WHITESPACE
query  matches  bound  over bound  latency ms mean / p50 / p99 / max  units mean / p99  cut: events / PMs / enumerations
q            1      -           -    4.50 / 4.50 / 5.94 / 6.00          4 / 6          0 / 0 / 0
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sharp_cer.engine import Engine


def query_summaries(
    engine: Engine, shedder: Any, tenants: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per query (see the module docstring); latency needs an engine made
    with ``record_latency=True``. ``shedder`` is a ``shedding.LoadShedder``
    or None."""
    report = shedder.report() if shedder is not None else {}
    per_query = engine.clock.per_query
    pending = engine.absences.pending() if engine.absences is not None else {}
    out: dict[str, dict[str, Any]] = {}
    # every query that ran, removed ones included (``Engine.update``), each under its latest plan
    ran = {q.name: q for plan in engine.plans for q in plan.queries}
    # the queries no shedder cuts: they share the one server with the shed ones
    never_shed = [name for name in ran if name not in report] if report else []
    for query in ran.values():
        name = query.name
        shed = report.get(name, {})
        bound_ms, bound_units = shed.get("bound_ms"), shed.get("bound_units")
        if not shed and engine.queue is not None:  # no shedder: the bounds the queue log judges
            bound_ms, bound_units = engine.queue.bounds_ms.get(name), engine.queue.bounds_units.get(name)
        row: dict[str, Any] = {
            "matches": per_query[name].matches if name in per_query else 0,
            "bound_ms": bound_ms,
            "bound_units": bound_units,
            "cuts": {
                "events": shed.get("events_shed_by_group", 0) + shed.get("events_shed_for_floor", 0),
                "partial_matches": shed.get("partial_matches_shed", 0),
                "enumerations_cut_short": per_query[name].truncated if name in per_query else 0,
            },
        }
        if query.trailing is not None:
            # alerts of a trailing absence whose deadline event time has not passed yet
            row["pending_absences"] = pending.get(name, 0)
        if tenants is not None:
            row["tenant"] = tenants.get(name)
        if engine.queue is not None:
            row["latency"] = engine.queue.summary(name)
        if shed:
            row["shedder"] = {k: v for k, v in shed.items() if k not in ("bound_ms", "bound_units")}
            row["cut_by"] = getattr(shedder, "name", None)
            row["recall_kept_estimate"] = recall_estimate(
                row["matches"], float(shed.get("matches_lost_estimate", 0.0)), row["cuts"]
            )
            over = row.get("latency", {}).get("over_bound_share", 0.0)
            if over > 0:
                elsewhere = [n for n in never_shed if n not in shed.get("never_shed_in_group", ())]
                row["over_bound_why"] = over_bound_reasons(shed, elsewhere)
        out[name] = row
    return out


def recall_estimate(matches: int, lost: float, cuts: Mapping[str, int]) -> float | None:
    """The recall kept, estimated: the matches found over those found plus
    the estimated lost (``GroupState.lost_estimate``); None (unknown) when
    something was cut but neither a match nor a loss was seen to estimate
    from (say, every event shed before any match).

    >>> none = {"events": 0, "partial_matches": 0, "enumerations_cut_short": 0}
    >>> recall_estimate(9, 1.0, none | {"events": 4}), recall_estimate(0, 0.0, none), recall_estimate(0, 2.0, none)
    (0.9, 1.0, 0.0)
    >>> print(recall_estimate(0, 0.0, none | {"events": 4}))
    None
    """
    if matches + lost > 0:
        return matches / (matches + lost)
    return None if any(cuts.values()) else 1.0


def over_bound_reasons(shed: Mapping[str, Any], elsewhere: Sequence[str] = ()) -> list[str]:
    """Why a shed query still passed its bound, from its shedder's report
    (``shedding.LoadShedder.report``) and the queries no shedder cuts in
    other query groups (``elsewhere``: they share the one server).

    >>> over_bound_reasons({"floor_above_bound_events": 3, "input_shedding": "allowed"})
    ['the update alone passed the bound on 3 events (the floor): only input shedding can meet it there']
    >>> shed = {"floor_above_bound_events": 0, "input_shedding": "forbidden: q2 read NOT"}
    >>> for line in over_bound_reasons(shed, ["audit"]):  # doctest: +NORMALIZE_WHITESPACE
    ...     print(line)
    input shedding is forbidden: q2 read NOT
    audit may not be shed: its update and enumeration wait in the same queue, never cut
    the queue passed the bound: events came faster than their work was served (a burst,
    or an input rate above the capacity) for longer than the cuts could make up
    """
    reasons = []
    floor = shed.get("floor_above_bound_events", 0)
    if floor:
        reasons.append(
            f"the update alone passed the bound on {floor} events (the floor): only input shedding can meet it there"
        )
    never = shed.get("never_shed_in_group") or []
    if never:
        reasons.append(
            f"{', '.join(never)} may not be shed and share the query group: their update and enumeration are never cut"
        )
    mode = str(shed.get("input_shedding", "allowed"))
    if mode != "allowed" and not never:
        reasons.append(f"input shedding is {mode}")
    if elsewhere:
        reasons.append(
            f"{', '.join(elsewhere)} may not be shed: {'its' if len(elsewhere) == 1 else 'their'} update and "
            "enumeration wait in the same queue, never cut"
        )
    if not floor:
        reasons.append(
            "the queue passed the bound: events came faster than their work was served (a burst, or an input "
            "rate above the capacity) for longer than the cuts could make up"
        )
    return reasons


def tenant_recall(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """Per tenant (or query, without one), the estimated recall kept: the
    matches found over those found plus the estimated lost, over its shed
    queries (``recall_kept_estimate``); None (unknown) if one of them is
    unknown (cut, and no match found to estimate from).

    >>> rows = {"a": {"tenant": "t", "matches": 9, "recall_kept_estimate": 0.9},
    ...         "b": {"tenant": "t", "matches": 1, "recall_kept_estimate": 1.0},
    ...         "c": {"tenant": "u", "matches": 0, "recall_kept_estimate": None},
    ...         "d": {"tenant": "v", "matches": 0, "recall_kept_estimate": 0.0,
    ...               "shedder": {"matches_lost_estimate": 4.0}},
    ...         "e": {"tenant": "v", "matches": 4, "recall_kept_estimate": 1.0,
    ...               "shedder": {"matches_lost_estimate": 0.0}}}
    >>> figures = tenant_recall(rows); round(figures["t"], 3), figures["u"], figures["v"]
    (0.909, None, 0.5)
    """
    found: dict[str, float] = {}
    expected: dict[str, float | None] = {}
    for name, row in summaries.items():
        if "recall_kept_estimate" not in row:
            continue
        owner = row.get("tenant") or name
        estimate, had, matches = row["recall_kept_estimate"], expected.get(owner, 0.0), row["matches"]
        found[owner] = found.get(owner, 0.0) + matches
        if estimate is None or had is None:
            expected[owner] = None
            continue
        lost = row.get("shedder", {}).get("matches_lost_estimate")
        expected[owner] = had + (matches + lost if lost is not None else matches / estimate if estimate else 0.0)
    out: dict[str, float | None] = {}
    for owner, total in expected.items():
        out[owner] = None if total is None else found[owner] / total if total else 1.0
    return out


@dataclass(frozen=True, eq=False)
class Summary(Mapping[str, dict[str, Any]]):
    """What ``Detector.summary()`` returns: per query (by name, in plan
    order), its row (see the module docstring); ``str()`` is the table
    ``render`` prints, ``to_json()`` plain data for JSON.

    >>> row = {"matches": 2, "bound_ms": None, "bound_units": None,
    ...        "cuts": {"events": 0, "partial_matches": 0, "enumerations_cut_short": 0}}
    >>> summary = Summary({"a_query_with_a_long_descriptive_name": row})
    >>> summary["a_query_with_a_long_descriptive_name"]["matches"], len(summary)
    (2, 1)
    >>> header, row = str(summary).splitlines()  # the name column as wide as the longest name
    >>> row.split()[:2], header.index("matches") + 7 == row.index(" 2 ") + 2
    (['a_query_with_a_long_descriptive_name', '2'], True)
    """

    queries: Mapping[str, dict[str, Any]]
    #: the workload versions (``Detector.version_report``; empty: never updated)
    versions: Sequence[dict[str, Any]] = ()

    def __getitem__(self, name: str) -> dict[str, Any]:
        return self.queries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def __str__(self) -> str:
        table = render(self.queries)
        if not self.versions:
            return table
        lines = [table, "workload versions:"]
        for row in self.versions:
            if "refused" in row:
                first = row["refused"].splitlines()[0]
                lines.append(f"  refused at position {row['position']} ({row['time']}): {first}")
            elif "intervals" in row:
                for name, pairs in row["intervals"].items():
                    spans = ", ".join(f"{a}..{'' if b is None else b}" for a, b in pairs)
                    lines.append(f"  {name}: positions {spans}")
            else:
                when = f" ({row['time']})" if row["time"] else ""
                lines.append(f"  version {row['version']} at position {row['position']}{when}: {row['change']}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, dict[str, Any]]:
        """Plain dicts, as ``--stats`` writes them."""
        return dict(self.queries)


def render(summaries: Mapping[str, dict[str, Any]]) -> str:
    """The summaries as a table, one line per query; the query column is
    as wide as the longest name (at least 22), so columns stay aligned."""
    wide = max([22, *map(len, summaries)])
    # the shedder that cut, by name (a run has one)
    by = sorted({row["cut_by"] for row in summaries.values() if row.get("cut_by")})
    head = (
        f"{'query':<{wide}} {'matches':>8} {'bound':>12} {'over bound':>11}  "
        f"{'latency ms mean / p50 / p99 / max':<36} {'units mean / p99':<17} "
        f"cut{' by ' + ', '.join(by) if by else ''}: events / PMs / enumerations"
    )
    lines = [head]
    for name, row in summaries.items():
        bound = "-"
        if row["bound_ms"] is not None:
            bound = f"{row['bound_ms']:g} ms"
        elif row["bound_units"] is not None:
            bound = f"{row['bound_units']:g} units"
        latency = row.get("latency", {})
        ms, units = latency.get("ms"), latency.get("units")
        over = f"{latency['over_bound_share']:.2%}" if "over_bound_share" in latency else "-"
        figures = " / ".join(f"{ms[k]:.2f}" for k in ("mean", "p50", "p99", "max")) if ms else "-"
        unit_figures = f"{units['mean']:,.0f} / {units['p99']:,.0f}" if units else "-"
        cuts = row["cuts"]
        lines.append(
            f"{name:<{wide}} {row['matches']:>8} {bound:>12} {over:>11}  {figures:<36} {unit_figures:<17} "
            f"{cuts['events']} / {cuts['partial_matches']} / {cuts['enumerations_cut_short']}"
        )
    for name, row in summaries.items():
        for reason in row.get("over_bound_why", ()):
            lines.append(f"{name} passed its bound: {reason}")
    recall = tenant_recall(summaries)
    if recall:
        figures = ", ".join(
            f"{owner} {'unknown (cut, and no match found to estimate from)' if value is None else f'{value:.3f}'}"
            for owner, value in recall.items()
        )
        lines.append(f"recall kept (an estimate from what was cut, not measured): {figures}")
    return "\n".join(lines)
