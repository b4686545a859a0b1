"""What a Spark detection did: matches per query and tenant, what was
cut and by which lever, and each query's latency against its bound, in
cost units per event and in milliseconds, aggregated on the cluster from
the workers' statistics rows; rendered as text and drawn over time
(matches and latency per time bin).

The latency in ms is engine-side: from an event's arrival at its worker
(the engine of its key group) to its matches, queueing within the key group
included; each key group keeps it in a log-spaced histogram
(``engine.queueing.QueueLog``) and the driver merges them by adding their
bins, so mean and max are exact and p50 and p99 within 1% of numpy's. A
bound in ms judges this latency, event by event, in each key group.

Latency percentiles come from exact histograms of cost units, read off
as the engine's latency log reads its own (numpy's linear interpolation:
``engine.histogram.weighted_percentile``). A bound given as a fraction
is of the query's mean engine-side latency in an unshedded run, as
in-process: without shedding, of this run's (shown, not counted); with
shedding, each key group resolved it in ms against its own unshedded run
(``worker.KeyGroupRun``), counted the events over it, and the largest
resolved bound is shown.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sharp_cer._extras import require
from sharp_cer.engine.histogram import LogHistogram, weighted_percentile
from sharp_cer.engine.queueing import QueueLog

from .columns import BIN, COUNTER, DEAD_LETTER, LATENCY, LATENCY_MS
from .telemetry import CUTS, ENGINE, aggregate, aggregate_collected

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sharp_cer.language import Workload


@dataclass(frozen=True)
class QuerySummary:
    """One query's figures: ``p50`` .. ``max`` in cost units per event,
    ``latency_ms`` the engine-side events (every event that reached the
    query's engines), mean, p50, p99 and max in ms (empty without events),
    ``over_bound_share`` the share of those events over the bound (a bound
    in units judges the latency in units, as in-process: queueing included
    at the workload's capacity, else the event's service), ``cuts`` the work
    cut per lever (events, partial matches, enumerations cut short)."""

    name: str
    tenant: str
    matches: int
    events: int
    bound: str
    bound_units: float | None
    p50: float
    p99: float
    max: float
    over_bound: int | None
    shed: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    cuts: dict[str, int] = field(default_factory=dict)
    over_bound_share: float | None = None
    #: the bound in ms (a fraction resolved by a shedder: the largest of the key groups'); None: none in ms
    bound_ms: float | None = None


@dataclass(frozen=True)
class Summary:
    """A detection's figures (see the module docstring); ``bins`` holds,
    per query, the time bins (of ``bin_width`` positions) with matches,
    events, largest and mean latency."""

    workload: str
    rows: int
    dead_letters: dict[str, int]
    engines: int
    events_shed: int
    shedder: str | None
    queries: tuple[QuerySummary, ...]
    bin_width: int
    bins: dict[str, dict[str, list[float]]]
    #: whether bounds in ms are judged: not on a batch run, whose events all arrive at once, each waiting
    #: behind its whole key group (``MS_NOT_JUDGED``)
    ms_bounds_judged: bool = True
    #: whether the key groups recorded each event's latency (``run_detection(latency=...)``); if not, the
    #: latency columns and the over-bound counts are empty
    latency_recorded: bool = True

    @property
    def tenants(self) -> dict[str, int]:
        """Matches per tenant."""
        out: dict[str, int] = {}
        for q in self.queries:
            out[q.tenant] = out.get(q.tenant, 0) + q.matches
        return out

    def to_json(self) -> dict[str, Any]:
        """The figures as plain JSON data."""
        return {
            "workload": self.workload,
            "rows": self.rows,
            "dead_letters": self.dead_letters,
            "engines": self.engines,
            "events_shed": self.events_shed,
            "shedder": self.shedder,
            "tenants": self.tenants,
            "queries": {q.name: {k: v for k, v in q.__dict__.items() if k != "name"} for q in self.queries},
            "ms_bounds_judged": self.ms_bounds_judged,
            "latency_recorded": self.latency_recorded,
        }

    def render(self) -> str:
        """A table per query and a line per tenant."""
        dead = sum(self.dead_letters.values())
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.dead_letters.items()))
        # columns as wide as the longest name, so they stay aligned
        wide = max([22, *(len(q.name) for q in self.queries)])
        tenant_wide = max([18, *(len(q.tenant) for q in self.queries)])
        lines = [
            f"{self.workload}: {self.rows:,} rows, {self.rows - dead:,} events, {dead:,} dead-lettered"
            + (f" ({kinds})" if kinds else "")
            + f"; {self.engines:,} engines (lane x key group)"
            + (f"; shedder {self.shedder}, {self.events_shed:,} events shed" if self.shedder else ""),
            f"  {'query':<{wide}} {'tenant':<{tenant_wide}} {'matches':>9} {'p50':>7} {'p99':>8} {'max':>9} "
            f"{'ms mean / p50 / p99 / max':<30} {'bound':>18} {'over':>7} cut: events / PMs / enumerations",
        ]
        for q in self.queries:
            over = "-" if q.over_bound_share is None else f"{q.over_bound_share:.1%}"
            ms = " / ".join(f"{q.latency_ms[k]:.2f}" for k in ("mean", "p50", "p99", "max")) if q.latency_ms else "-"
            cuts = " / ".join(f"{q.cuts.get(k, 0):,}" for k in CUTS)
            units = f"{q.p50:>7.0f} {q.p99:>8.0f} {q.max:>9.0f}"
            if not self.latency_recorded:
                units = f"{'-':>7} {'-':>8} {'-':>9}"
            lines.append(
                f"  {q.name:<{wide}} {q.tenant:<{tenant_wide}} {q.matches:>9,} "
                f"{units} "
                f"{ms:<30} {q.bound:>18} {over:>7} {cuts}"
            )
        lines += self._shedding_lines()
        if not self.latency_recorded:
            lines.append(f"  {LATENCY_NOT_RECORDED}")
        elif not self.ms_bounds_judged and any(q.bound.endswith("ms") for q in self.queries):
            lines.append(f"  {MS_NOT_JUDGED}")
        if self.latency_recorded:  # else the columns are "-" and the line above says why
            lines.append(
                "  latency: cost units per event (update + the query's enumeration), and ms from an event's arrival"
                " at its key group's engine to its matches; over: events over the bound"
            )
        lines.append("  per tenant: " + ", ".join(f"{t} {n:,}" for t, n in self.tenants.items()))
        return "\n".join(lines)

    def _shedding_lines(self) -> list[str]:
        """With a shedder, why a shed query passed its bound, and the recall
        kept per tenant, estimated from what was cut (as in-process:
        ``latency_summary``), over every key group.

        >>> q = QuerySummary("q", "t", 9, 100, "5", 5.0, 1.0, 2.0, 3.0, 4, {"matches_lost_estimate": 1.0,
        ...     "floor_above_bound_events": 0.0, "input_shedding_forbidden": 2.0}, {}, {"events": 3}, 0.04)
        >>> s = Summary("w", 100, {}, 2, 3, "value", (q,), 10, {})
        >>> print("\\n".join(s._shedding_lines()))  # doctest: +NORMALIZE_WHITESPACE
          q passed its bound: input shedding is forbidden in its query group (a query there reads an absence
          or may not be shed)
          q passed its bound: the queue passed the bound: events came faster than their work was served
          (a burst, or an input rate above the capacity) for longer than the cuts could make up
          recall kept (an estimate from what was cut, not measured): t 0.900
        """
        from sharp_cer.latency_summary import over_bound_reasons, recall_estimate, tenant_recall

        if not self.shedder:
            return []
        lines = []
        rows: dict[str, dict[str, Any]] = {}
        for q in self.queries:
            if "matches_lost_estimate" not in q.shed:
                continue  # not shed
            lost = q.shed["matches_lost_estimate"]
            estimate = recall_estimate(q.matches, lost, q.cuts)
            rows[q.name] = {"tenant": q.tenant, "matches": q.matches, "recall_kept_estimate": estimate}
            rows[q.name]["shedder"] = {"matches_lost_estimate": lost}
            if q.over_bound_share:
                forbidden = q.shed.get("input_shedding_forbidden", 0) > 0
                report = {
                    "floor_above_bound_events": int(q.shed.get("floor_above_bound_events", 0)),
                    "input_shedding": "forbidden in its query group (a query there reads an absence or may not be shed)"
                    if forbidden
                    else "allowed",
                }
                lines += [f"  {q.name} passed its bound: {reason}" for reason in over_bound_reasons(report)]
        figures = ", ".join(
            f"{owner} {'unknown' if value is None else f'{value:.3f}'}" for owner, value in tenant_recall(rows).items()
        )
        if figures:
            lines.append(f"  recall kept (an estimate from what was cut, not measured): {figures}")
        return lines

    def plot_data(self) -> PlotData:
        """What ``plot`` draws, per query with events: its bins' positions,
        matches, latency in cost units (largest and mean) and in ms (largest
        and mean, engine-side), and its bounds: in units, and in ms where ms
        are judged (``ms_bounds_judged``: a stream; not a batch run, whose
        ``ms_note`` says so when a query has a bound in ms).

        >>> q = QuerySummary("q", "t", 1, 4, "5ms", None, 1.0, 2.0, 3.0, 0, bound_ms=5.0)
        >>> bins = {"q": {"bin": [0.0, 1.0], "matches": [1.0, 0.0], "events": [2.0, 2.0], "units_max": [3.0, 1.0],
        ...               "units_mean": [2.0, 1.0], "ms_events": [2.0, 2.0], "ms_max": [4.0, 6.0],
        ...               "ms_mean": [3.0, 5.0]}}
        >>> judged = Summary("w", 4, {}, 1, 0, None, (q,), 10, bins).plot_data()
        >>> judged.lines[0].x, judged.lines[0].ms_max, judged.lines[0].bound_ms, judged.ms_note
        ([0.0, 10.0], [4.0, 6.0], 5.0, None)
        >>> batch = Summary("w", 4, {}, 1, 0, None, (q,), 10, bins, ms_bounds_judged=False).plot_data()
        >>> batch.lines[0].bound_ms, batch.ms_note == MS_NOT_JUDGED_PLOT
        (None, True)
        """
        lines = []
        for q in self.queries:
            data = self.bins.get(q.name, {})
            if not data.get("bin"):
                continue
            lines.append(
                PlotLine(
                    q.name,
                    q.tenant,
                    [b * self.bin_width for b in data["bin"]],
                    data["matches"],
                    data["units_max"],
                    data["units_mean"],
                    q.bound_units,
                    data.get("ms_max", []),
                    data.get("ms_mean", []),
                    q.bound_ms if self.ms_bounds_judged else None,
                )
            )
        in_ms = any(q.bound_ms is not None for q in self.queries)
        note = MS_NOT_JUDGED_PLOT if in_ms and not self.ms_bounds_judged else None
        return PlotData(self.workload, self.bin_width, tuple(lines), note)

    def plot(self, path: str) -> None:
        """Draw matches and latency (largest and mean per bin, in cost units
        and in ms) over the stream, one colour per query, with each query's
        bounds (``plot_data``), into a PNG."""
        matplotlib = require("matplotlib", "the summary's plot")
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        data = self.plot_data()
        fig, (top, units, ms) = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
        for q in data.lines:
            (line,) = top.plot(q.x, q.matches, label=f"{q.query} ({q.tenant})", linewidth=1.2)
            colour = line.get_color()
            units.plot(q.x, q.units_max, color=colour, linewidth=1.2)
            units.plot(q.x, q.units_mean, color=colour, linewidth=0.8, linestyle=":")
            if q.bound_units:
                units.axhline(q.bound_units, color=colour, linewidth=0.6, linestyle="--")
            if q.ms_max:
                ms.plot(q.x, q.ms_max, color=colour, linewidth=1.2)
                ms.plot(q.x, q.ms_mean, color=colour, linewidth=0.8, linestyle=":")
            if q.bound_ms is not None:
                ms.axhline(q.bound_ms, color=colour, linewidth=0.6, linestyle="--")
        top.set_ylabel(f"matches per {data.bin_width:,} events")
        top.set_title(f"{data.workload}: matches and latency over the stream")
        if top.lines:  # an empty input draws nothing, and a legend of nothing warns
            top.legend(fontsize=7, ncol=2)
        else:
            top.text(0.5, 0.5, "no events", transform=top.transAxes, ha="center", va="center")
        units.set_yscale("symlog")
        units.set_ylabel("latency, cost units\n(solid: max, dotted: mean, dashed: bound)")
        ms.set_yscale("symlog")
        bounds = ", dashed: bound" if data.ms_note is None else ""
        ms.set_ylabel(f"latency, ms, engine side\n(solid: max, dotted: mean{bounds})")
        if data.ms_note is not None:
            ms.text(0.01, 0.96, textwrap.fill(data.ms_note, 110), transform=ms.transAxes, ha="left", va="top",
                    fontsize=8, bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "grey"})  # fmt: skip
        ms.set_xlabel("stream position (events)")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


@dataclass(frozen=True)
class PlotLine:
    """One query's series on the plot (``Summary.plot_data``): x in stream
    positions, a value per bin; ``bound_ms`` None where ms are not judged."""

    query: str
    tenant: str
    x: list[float]
    matches: list[float]
    units_max: list[float]
    units_mean: list[float]
    bound_units: float | None
    ms_max: list[float]
    ms_mean: list[float]
    bound_ms: float | None


@dataclass(frozen=True)
class PlotData:
    """What a summary's plot draws: the queries' series, and the note it
    shows where bounds in ms are not judged (None: they are, or none is in ms)."""

    workload: str
    bin_width: int
    lines: tuple[PlotLine, ...]
    ms_note: str | None


#: what a batch run's plot says of bounds in ms (``MS_NOT_JUDGED``, shorter)
MS_NOT_JUDGED_PLOT = (
    "bounds in ms are not judged on a batch run (its events arrive all at once): "
    "sharp-cer match --rate N (or --replay-speed) judges them at an arrival rate, sharp-cer stream as events arrive"
)


#: what a batch run's summary says of bounds in ms (the "over" column is empty for them)
MS_NOT_JUDGED = (
    "bounds in ms are not judged on a batch run: its events arrive all at once, each waiting behind its whole "
    "key group; `sharp-cer match WORKLOAD --events FILE --rate N` (or --replay-speed) judges them at an arrival "
    "rate, and `sharp-cer stream` as events arrive"
)


#: what a summary says when the key groups recorded no latency
LATENCY_NOT_RECORDED = (
    "latency not recorded (less work per event): `sharp-cer run --latency` records each event's, in cost units "
    "and ms, and counts the events over each bound"
)


def summarize_rows(
    output: DataFrame,
    workload: Workload,
    shedder: str | None,
    bin_width: int,
    rows_read: int,
    dead: dict[str, int] | None,
    *,
    ms_judged: bool = True,
    latency: bool = True,
) -> Summary:
    """The summary of the workers' telemetry rows (``telemetry.aggregate``;
    counters summed, or maxed and minned as ``Aggregated.combined`` says);
    ``dead`` the dead letters per kind (None: the output carries them as
    ``DEAD_LETTER`` rows of value 1, counted in the same collect);
    ``ms_judged`` False: bounds in ms are not judged (a batch run);
    ``latency`` False: the key groups recorded no latency."""
    kinds = (LATENCY, LATENCY_MS, BIN, COUNTER)
    # a batch run's rows (dead letters carried: ``dead`` None) are few: summed on the driver, no shuffle
    rows = aggregate(output, kinds) if dead is not None else aggregate_collected(output, (*kinds, DEAD_LETTER))
    if dead is None:
        dead = {r.name or "": int(r.total) for r in rows if r.kind == DEAD_LETTER}
        rows = [r for r in rows if r.kind != DEAD_LETTER]
    counters: dict[str, dict[str, float]] = {}
    histograms: dict[str, dict[int, float]] = {}
    in_ms: dict[str, dict[int, float]] = {}
    bins: dict[str, dict[int, dict[str, float]]] = {}
    for r in rows:
        if r.kind == COUNTER:
            assert r.name is not None
            counters.setdefault(r.query, {})[r.name] = r.combined
        elif r.kind == LATENCY:
            assert r.bin is not None
            histograms.setdefault(r.query, {})[r.bin] = r.total
        elif r.kind == LATENCY_MS:
            assert r.bin is not None
            in_ms.setdefault(r.query, {})[r.bin] = r.total
        else:
            assert r.bin is not None and r.name is not None
            value = r.top if r.name in ("units_max", "ms_max") else r.total
            bins.setdefault(r.query, {}).setdefault(r.bin, {})[r.name] = value
    queries = []
    shed_keys = ("bound_units", "over_bound", "weight", "matches", "events", "ms_sum", "ms_min", "ms_max")
    for q in workload.queries:
        histogram = sorted(histograms.get(q.name, {}).items())
        values, counts = [v for v, _ in histogram], [c for _, c in histogram]
        mine = counters.get(q.name, {})
        largest = float(values[-1]) if values else 0.0
        ms = _milliseconds(in_ms.get(q.name, {}), mine)
        bound, units, over = _bound(q, shedder is not None, ms.get("mean", 0.0), mine)
        bound_ms = q.latency_bound.milliseconds if q.latency_bound is not None else None
        if bound_ms is None and shedder is not None and "bound_ms" in mine:  # a fraction, resolved per key group
            bound_ms = mine["bound_ms"]
        if not ms_judged and bound.endswith("ms"):
            over = None
        judged = ms.get("events", 0)  # the key groups judged every event that reached them
        queries.append(
            QuerySummary(
                q.name,
                q.tenant,
                int(mine.get("matches", 0)),
                int(mine.get("events", 0)),
                bound,
                units,
                weighted_percentile(values, counts, 50),
                weighted_percentile(values, counts, 99),
                largest,
                over,
                {k: v for k, v in mine.items() if k not in shed_keys and not k.startswith("cut_")},
                ms,
                {k: int(mine.get(f"cut_{k}", 0)) for k in CUTS},
                None if over is None else over / max(1, judged),
                None if bound_ms is None else float(bound_ms),
            )
        )
    engine = counters.get(ENGINE, {})
    per_bin: dict[str, dict[str, list[float]]] = {}
    for name, found in bins.items():
        order = sorted(found)
        events = [found[b].get("events", 0.0) for b in order]
        per_bin[name] = {
            "bin": [float(b) for b in order],
            "matches": [found[b].get("matches", 0.0) for b in order],
            "events": events,
            "units_max": [found[b].get("units_max", 0.0) for b in order],
            "units_mean": [
                found[b].get("units_sum", 0.0) / e if e else 0.0 for b, e in zip(order, events, strict=True)
            ],
            # engine-side latency in ms (``telemetry.MS_BINS``): what a bound in ms judges
            "ms_events": [found[b].get("ms_events", 0.0) for b in order],
            "ms_max": [found[b].get("ms_max", 0.0) for b in order],
            "ms_mean": [
                found[b].get("ms_sum", 0.0) / found[b]["ms_events"] if found[b].get("ms_events") else 0.0 for b in order
            ],
        }
    return Summary(
        workload.name,
        rows_read,
        dead,
        int(engine.get("engines", 0)),
        int(engine.get("events_shed", 0)),
        shedder,
        tuple(queries),
        bin_width,
        per_bin,
        ms_judged,
        latency,
    )


def _milliseconds(bins: dict[int, float], counters: dict[str, float]) -> dict[str, float]:
    """Events, mean, p50, p99 and max in ms of the key groups' histograms, added."""
    histogram = LogHistogram(QueueLog.ERROR)
    histogram.add_bins(
        list(bins),
        list(bins.values()),
        total=counters.get("ms_sum", 0.0),
        least=counters.get("ms_min", 0.0),
        most=counters.get("ms_max", 0.0),
    )
    if not histogram.count:
        return {}
    p50, p99 = histogram.quantiles([50, 99])
    figures = {"mean": histogram.total / histogram.count, "p50": p50, "p99": p99, "max": histogram.max}
    return {"events": histogram.count, **{k: round(v, 6) for k, v in figures.items()}}


def _bound(
    query: Any, shedding: bool, mean_ms: float, counters: dict[str, float]
) -> tuple[str, float | None, int | None]:
    """The bound as shown, in units, and the events over it if the workers
    counted them; ``mean_ms`` is the query's mean latency in this run."""
    bound = query.latency_bound
    if bound is None:
        return "-", None, None
    # judged on the engine side: from an event's arrival at its worker to its matches
    over = int(counters["over_bound"]) if "over_bound" in counters else None
    if bound.cost_units is not None:
        return f"{bound.cost_units:g}", bound.cost_units, over
    if bound.milliseconds is not None:
        return f"{bound.milliseconds:g}ms", None, over
    assert bound.fraction is not None
    if shedding and "bound_ms" in counters:
        return f"{bound.fraction:.0%}/key group <={counters['bound_ms']:.4g}ms", None, over
    return f"{bound.fraction:.0%} of {mean_ms:.4g}ms", None, None
