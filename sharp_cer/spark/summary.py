"""What a Spark detection did: matches per query and tenant, what was
shed, and each query's latency (cost units per event) against its bound,
aggregated on the cluster from the workers' statistics rows; rendered as
text and drawn over time (matches and latency per time bin).

Latency percentiles come from exact histograms of cost units, read off
as the engine's latency log reads its own (numpy's linear interpolation:
``engine.histogram.weighted_percentile``). A bound given as a fraction
is, without shedding, the fraction of the query's largest latency in this
(unshedded) run; with shedding, each key group resolved it against its
own unshedded run, and the largest resolved bound is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sharp_cer.engine.histogram import weighted_percentile

from .worker import BIN, COUNTER, LATENCY, MAX_COUNTERS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sharp_cer.language import Workload

    from .pipeline import Detection


@dataclass(frozen=True)
class QuerySummary:
    """One query's figures."""

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
        }

    def render(self) -> str:
        """A table per query and a line per tenant."""
        dead = sum(self.dead_letters.values())
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.dead_letters.items()))
        lines = [
            f"{self.workload}: {self.rows:,} rows, {self.rows - dead:,} events, {dead:,} dead-lettered"
            + (f" ({kinds})" if kinds else "")
            + f"; {self.engines:,} engines (lane x key group)"
            + (f"; shedder {self.shedder}, {self.events_shed:,} events shed" if self.shedder else ""),
            f"  {'query':<22} {'tenant':<18} {'matches':>9} {'p50':>7} {'p99':>8} {'max':>9} "
            f"{'bound':>18} {'over':>7} shed",
        ]
        for q in self.queries:
            over = "-" if q.over_bound is None else f"{q.over_bound / max(1, q.events):.1%}"
            shed = int(q.shed.get("partial_matches_shed", 0) + q.shed.get("events_shed_for_floor", 0))
            lines.append(
                f"  {q.name:<22} {q.tenant:<18} {q.matches:>9,} {q.p50:>7.0f} {q.p99:>8.0f} {q.max:>9.0f} "
                f"{q.bound:>18} {over:>7} {shed if self.shedder and q.shed else '-'}"
            )
        lines.append("  latency: cost units per event (update + the query's enumeration); over: events over the bound")
        lines.append("  per tenant: " + ", ".join(f"{t} {n:,}" for t, n in self.tenants.items()))
        return "\n".join(lines)

    def plot(self, path: str) -> None:
        """Draw matches and latency (largest and mean per bin) over the
        stream, one colour per query, into a PNG."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
        for q in self.queries:
            data = self.bins.get(q.name, {})
            x = [b * self.bin_width for b in data.get("bin", [])]
            if not x:
                continue
            (line,) = top.plot(x, data["matches"], label=f"{q.name} ({q.tenant})", linewidth=1.2)
            bottom.plot(x, data["units_max"], color=line.get_color(), linewidth=1.2)
            bottom.plot(x, data["units_mean"], color=line.get_color(), linewidth=0.8, linestyle=":")
            if q.bound_units:
                bottom.axhline(q.bound_units, color=line.get_color(), linewidth=0.6, linestyle="--")
        top.set_ylabel(f"matches per {self.bin_width:,} events")
        top.set_title(f"{self.workload}: matches and latency over the stream")
        if top.lines:  # an empty input draws nothing, and a legend of nothing warns
            top.legend(fontsize=7, ncol=2)
        else:
            top.text(0.5, 0.5, "no events", transform=top.transAxes, ha="center", va="center")
        bottom.set_yscale("symlog")
        bottom.set_ylabel("latency, cost units\n(solid: max, dotted: mean, dashed: bound)")
        bottom.set_xlabel("stream position (events)")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


def summarize(detection: Detection) -> Summary:
    """Aggregate the workers' statistics rows (one Spark job, a small
    collect) and the dead letters per kind."""
    dead = {r["kind"]: r["count"] for r in detection.dead_letters.groupBy("kind").count().collect()}
    job = detection.job
    return summarize_rows(detection.output, job.workload, job.shedder, job.bin_width, detection.prepared.rows, dead)


def summarize_rows(
    output: DataFrame, workload: Workload, shedder: str | None, bin_width: int, rows_read: int, dead: dict[str, int]
) -> Summary:
    """The summary of workers' output rows (``worker.OUTPUT``'s kinds;
    counters summed, or maxed for ``MAX_COUNTERS``)."""
    from pyspark.sql import functions as F

    rows = (
        output.where(F.col("kind").isin(LATENCY, BIN, COUNTER))
        .groupBy("kind", "query", "bin", "name")
        .agg(F.sum("value").alias("total"), F.max("value").alias("top"))
        .collect()
    )
    counters: dict[str, dict[str, float]] = {}
    histograms: dict[str, dict[int, float]] = {}
    bins: dict[str, dict[int, dict[str, float]]] = {}
    for r in rows:
        if r["kind"] == COUNTER:
            counters.setdefault(r["query"], {})[r["name"]] = r["top"] if r["name"] in MAX_COUNTERS else r["total"]
        elif r["kind"] == LATENCY:
            histograms.setdefault(r["query"], {})[r["bin"]] = r["total"]
        else:
            value = r["top"] if r["name"] == "units_max" else r["total"]
            bins.setdefault(r["query"], {}).setdefault(r["bin"], {})[r["name"]] = value
    queries = []
    shed_keys = ("bound_units", "over_bound", "weight", "matches", "events")
    for q in workload.queries:
        histogram = sorted(histograms.get(q.name, {}).items())
        values, counts = [v for v, _ in histogram], [c for _, c in histogram]
        mine = counters.get(q.name, {})
        largest = float(values[-1]) if values else 0.0
        bound, units, over = _bound(q, shedder is not None, largest, mine)
        if over is None and units is not None:
            over = int(sum(c for v, c in histogram if v > units))
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
                {k: v for k, v in mine.items() if k not in shed_keys},
            )
        )
    engine = counters.get("", {})
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
    )


def _bound(
    query: Any, shedding: bool, largest: float, counters: dict[str, float]
) -> tuple[str, float | None, int | None]:
    """The bound as shown, in units, and the events over it if the workers counted them."""
    bound = query.latency_bound
    if bound is None:
        return "-", None, None
    if bound.cost_units is not None:
        over = int(counters["over_bound"]) if shedding and "over_bound" in counters else None
        return f"{bound.cost_units:g}", bound.cost_units, over
    if bound.milliseconds is not None:
        # judged on the engine side: from an event's arrival at its worker to its matches
        over = int(counters["over_bound"]) if shedding and "over_bound" in counters else None
        return f"{bound.milliseconds:g}ms", None, over
    assert bound.fraction is not None
    if shedding and "bound_units" in counters:
        units = counters["bound_units"]
        return f"{bound.fraction:.0%}/group <={units:.0f}", units, int(counters.get("over_bound", 0))
    units = max(1.0, bound.fraction * largest)
    return f"{bound.fraction:.0%} = {units:.0f}", units, None
