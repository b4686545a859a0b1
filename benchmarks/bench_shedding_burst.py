"""Load shedding under bursts, in capacity mode, against a clairvoyant
ceiling (issue 36).

Each run serves the events at a fixed capacity (cost units per second: the
deterministic mode) while they arrive at half of what that capacity keeps
up with, then, for 2,000 events, at ``burst`` times it (2x or 5x), then at
half again. A query's bound is a fraction (10 % to 90 %) of its mean
latency, queueing included, in the unshedded run under the same arrivals.

Shedders: every one asked for (``--shedders``), and the *oracle*, a
clairvoyant selector in two passes: the unshedded run records each (position,
label) a true match marks, and the oracle then takes out at creation every
new partial match whose (position, label) no true match marks (by instance,
or, like ``value``, by not creating it; it cannot lose a match) on top of
truncation's budget, with ``value``'s
weighted budgets (heaviest query first, lighter ones cut under pressure). It
is a ceiling for selectors that drop only dead partial matches, not for
every shedder: where the update alone fills the queue (DS2), dropping live
partial matches too pays off, and ``value`` passes it. A shedder's *gap
share* is (its weighted recall - truncation's) / (the oracle's -
truncation's): 1 closes the gap, 0 is truncation, negative is below it.

Workloads: DS1, DS2 (Sharp's), card fraud, stock trading (``configs/``) and
two of issue 36's own over DS2's generator (``workloads/burst_kleene.toml``:
``kleene``, Kleene queries with many matches; ``workloads/burst_pair.toml``:
``pair``, two queries sharing ``A ; B`` and ending on the same D events, for
weights 4:1 with ``--weights H=4 L=1``). ``--merge A B --name C`` joins runs
made in parallel (one per workload) into one table, JSON and PNG.

Figures per (workload, burst, bound, shedder), the mean over the seeds
(and the spread): recall, weighted recall (the workload's query weights),
share of events over the bound, p99 latency over the bound, throughput
(events per wall second) and the gap share. Writes
``results/shedding_burst[_NAME].json``, ``.md`` and ``.png``.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_shedding_burst.py            # the full grid
    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_shedding_burst.py --reduced  # ~15 CPU minutes

Full: the six workloads; 8,000 events (DS1/DS2 windows of
1,000 events); bursts 2x and 5x; bounds 10 %, 30 %, 50 %, 70 %, 90 %; three
seeds. ``--reduced``: DS1 and DS2 with windows of 300 events and card fraud,
5,000 events, burst 2x, bounds 10 %, 30 %, 50 %, 90 %, one seed.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sharp_cer.engine import Engine
from sharp_cer.engine.enumeration import Walk
from sharp_cer.engine.shedder_protocol import Candidate, Progress, QueryGroupView
from sharp_cer.engine.tecs import Node
from sharp_cer.events.generators import generate
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import parse_workload
from sharp_cer.planner import compile_plan
from sharp_cer.planner.plan import QueryPlan
from sharp_cer.shedding import ShedConfig, make_shedder
from sharp_cer.shedding.base import GroupState, LoadShedder

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CAPACITY = 1_000_000.0  # cost units per second
BURST_EVENTS = 2000
NEVER = 1e12

WORKLOADS = {
    "ds1": (HERE / "workloads" / "sharp_ds1.toml", "v"),
    "ds2": (HERE / "workloads" / "sharp_ds2.toml", "x"),
    "card_fraud": (HERE.parent / "configs" / "card_fraud.toml", "amount"),
    "stock_trading": (HERE.parent / "configs" / "stock_trading.toml", "price"),
    "kleene": (HERE / "workloads" / "burst_kleene.toml", "x"),
    "pair": (HERE / "workloads" / "burst_pair.toml", "x"),
}


class _Recorder(LoadShedder):
    """An idle shedder (bounds never reached) that records the (position,
    label) of every mark of every match found: the first pass of the oracle."""

    name = "recorder"

    def __init__(self, config: ShedConfig) -> None:
        super().__init__(config)
        self.useful: set[tuple[int, int]] = set()

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        return _RecordingGroup(self, view, tracked)


class _RecordingGroup(GroupState):
    def enumerated(self, query: QueryPlan, progress: Progress, walk: Walk, candidates: Sequence[Candidate]) -> None:
        super().enumerated(query, progress, walk, candidates)
        useful = self.owner_useful
        for _, marks in candidates:
            useful.update(marks)

    def __init__(self, owner: _Recorder, view: QueryGroupView, tracked: list[QueryPlan]) -> None:
        super().__init__(owner, view, tracked)
        self.owner_useful = owner.useful


class OracleShedder(LoadShedder):
    """The clairvoyant ceiling: truncation's budget, and every new partial
    match on no true match taken out at creation (see the module docstring)."""

    name = "oracle"

    def __init__(self, config: ShedConfig, useful: set[tuple[int, int]]) -> None:
        super().__init__(config)
        self.useful = useful

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        return _OracleGroup(self, view, tracked)


class _OracleGroup(GroupState):
    # weight-aware like ``value``: heaviest first, a lighter query cut under pressure
    weighted_budgets = True

    def __init__(self, owner: OracleShedder, view: QueryGroupView, tracked: list[QueryPlan]) -> None:
        super().__init__(owner, view, tracked)
        self.useful = owner.useful
        self.positions: list[int] = []
        self.position = 0

    def begin_batch(self, batch: Any) -> None:
        super().begin_batch(batch)
        self.positions = batch.positions.tolist()

    def admit(self, row: int, progress: Progress) -> bool:
        self.position = self.positions[row]
        return super().admit(row, progress)

    def discards(self, progress: Progress) -> Any:
        # like ``value``: a dead partial match is not even created (its creation costs no update)
        return self._discard

    def _discard(self, state: int, label: int, sources: list[Node]) -> bool:
        if (self.position, label) in self.useful or not self.sheddable_state(state):
            return False
        self.pms_removed += 1
        for k in range(len(self.tracked)):
            self.pms_shed[k] += 1
        return True

    def stepped(self, instance: Any, outputs: list[tuple[Node, int]], row: int, progress: Progress) -> None:
        super().stepped(instance, outputs, row, progress)
        dead: dict[int, set[int]] = {}
        for node, state in outputs:
            if (node.pos, node.label) not in self.useful and self.sheddable_state(state):
                dead.setdefault(state, set()).add(id(node))
        for state, ids in dead.items():
            ulist = self.view.union_list(instance, state)
            if ulist is not None:
                removed = self.view.take_out(instance, state, [id(e) not in ids for e in ulist])
                self.pms_removed += removed
                for k in range(len(self.tracked)):
                    self.pms_shed[k] += removed


@dataclass
class Case:
    """One workload, stream and arrival profile, with its unshedded truth."""

    name: str
    plan: Any
    batch: Any
    weights: dict[str, float]
    attribute: str
    arrivals: np.ndarray
    keys: dict[str, set[Any]]
    useful: set[tuple[int, int]]
    mean_ms: dict[str, float]


def arrivals_for(n: int, units_per_event: float, burst: float) -> np.ndarray:
    """Half the capacity's rate, ``burst`` times it for 2,000 events from a
    quarter of the stream on, then half again (seconds)."""
    keep_up = CAPACITY / units_per_event  # events per second the capacity serves
    rates = np.full(n, 0.5 * keep_up)
    start = n // 4
    rates[start : start + BURST_EVENTS] = burst * keep_up
    return np.concatenate([[0.0], np.cumsum(1.0 / rates[:-1])])


def make_case(name: str, n: int, seed: int, burst: float, window: int | None) -> Case:
    path, attribute = WORKLOADS[name]
    text = path.read_text()
    if window is not None:
        text = text.replace("WITHIN 1000 EVENTS", f"WITHIN {window} EVENTS")
    workload = parse_workload(text)
    queries = [(q.name, q.checked) for q in workload.queries]
    plan = compile_plan(queries)
    frame = generate(workload.generator or name, n, seed=seed)
    batch, _ = load_pandas(frame, workload.schema)
    # the cost per event, unshedded, sets the rates
    probe = Engine(plan)
    probe.process(batch)
    units = probe.clock.total_units / max(1, len(batch))
    arrivals = arrivals_for(len(batch), units, burst)
    recorder = _Recorder(ShedConfig(bounds=dict.fromkeys([q for q, _ in queries], NEVER)))
    engine = Engine(plan, shedder=recorder, record_latency=True, record_service=False, capacity=CAPACITY)
    found = engine.process(batch, arrivals)
    keys: dict[str, set[Any]] = {q: set() for q, _ in queries}
    for m in found:
        keys[m.query].add(m.key())
    unshedded = Engine(plan, record_latency=True, record_service=False, capacity=CAPACITY)
    unshedded.process(batch, arrivals)
    assert unshedded.queue is not None
    mean_ms = {q: float(unshedded.queue.summary(q)["ms"]["mean"]) for q, _ in queries}  # type: ignore[index]
    weights = {q.name: q.weight for q in workload.queries if q.shed}
    return Case(name, plan, batch, weights, attribute, arrivals, keys, recorder.useful, mean_ms)


def run(case: Case, shedder: str, fraction: float, seed: int) -> dict[str, Any]:
    names = [n for n in case.weights if case.keys.get(n) is not None]
    config = ShedConfig(
        bounds={},
        bounds_ms={n: max(1e-3, fraction * case.mean_ms[n]) for n in names},
        weights=case.weights,
        sketch_attributes={n: [case.attribute] for n in names},
        seed=seed,
    )
    made = OracleShedder(config, case.useful) if shedder == "oracle" else make_shedder(shedder, config)
    engine = Engine(case.plan, shedder=made, record_latency=True, record_service=False, capacity=CAPACITY)
    began = time.perf_counter()
    found = engine.process(case.batch, case.arrivals)
    wall = time.perf_counter() - began
    got: dict[str, set[Any]] = {n: set() for n in case.keys}
    for m in found:
        got[m.query].add(m.key())
    false = sum(len(got[n] - case.keys[n]) for n in case.keys)
    recall = {n: len(got[n] & case.keys[n]) / len(case.keys[n]) for n in names if case.keys[n]}
    total_weight = sum(case.weights[n] * len(case.keys[n]) for n in recall)
    weighted = sum(case.weights[n] * len(got[n] & case.keys[n]) for n in recall) / total_weight if total_weight else 1.0
    assert engine.queue is not None
    over, p99 = [], []
    for n in names:
        summary = engine.queue.summary(n)
        if summary["events"]:
            over.append(float(summary["over_bound_share"]))  # type: ignore[arg-type]
            p99.append(float(summary["ms"]["p99"]) / config.bounds_ms[n])  # type: ignore[index]
    return {
        "recall": recall,
        "mean_recall": float(np.mean(list(recall.values()))) if recall else 1.0,
        "weighted_recall": weighted,
        "false_matches": false,
        "over_bound": float(np.mean(over)) if over else 0.0,
        "p99_over_bound": float(np.mean(p99)) if p99 else 0.0,
        "events_per_second": len(case.batch) / wall,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reduced", action="store_true")
    parser.add_argument("--workloads", nargs="*")
    parser.add_argument("--shedders", nargs="*", default=["truncate", "sharp", "sharp-instance", "random-state"])
    parser.add_argument("--events", type=int)
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--name", default="")
    parser.add_argument("--bounds", type=float, nargs="*", help="fractions of the unshedded mean latency")
    parser.add_argument("--bursts", type=float, nargs="*")
    parser.add_argument("--window", type=int, help="DS1 and DS2's window in events (default: theirs, 1,000)")
    parser.add_argument("--weights", nargs="*", default=[], metavar="QUERY=W", help="override query weights")
    parser.add_argument("--merge", nargs="*", metavar="NAME", help="merge earlier runs' JSON into --name's")
    args = parser.parse_args(argv)
    if args.merge:
        merge(args.merge, args.name)
        return
    if args.reduced:
        workloads, n, window, bursts, bounds, seeds = (
            ["ds1", "ds2", "card_fraud"],
            5000,
            300,
            [2.0],
            [0.1, 0.3, 0.5, 0.9],
            1,
        )
    else:
        workloads, n, window, bursts = list(WORKLOADS), 8000, None, [2.0, 5.0]
        bounds, seeds = [0.1, 0.3, 0.5, 0.7, 0.9], 3
    workloads = args.workloads or workloads
    n = args.events or n
    seeds = args.seeds or seeds
    bounds = args.bounds or bounds
    bursts = args.bursts or bursts
    window = args.window or window
    weights = {k: float(v) for k, v in (w.split("=") for w in args.weights)}
    shedders = [*args.shedders, "oracle"]
    rows = []
    began = time.process_time()
    for name in workloads:
        for burst in bursts:
            cases = [
                make_case(name, n, seed + 1, burst, window if name in ("ds1", "ds2") else None) for seed in range(seeds)
            ]
            for case in cases:
                case.weights.update((q, w) for q, w in weights.items() if q in case.weights)
            for fraction in bounds:
                per: dict[str, list[dict[str, Any]]] = {}
                for seed, case in enumerate(cases):
                    for shedder in shedders:
                        per.setdefault(shedder, []).append(run(case, shedder, fraction, seed + 1))
                base = np.mean([r["weighted_recall"] for r in per["truncate"]]) if "truncate" in per else None
                ceiling = np.mean([r["weighted_recall"] for r in per["oracle"]])
                for shedder, runs in per.items():
                    weighted = float(np.mean([r["weighted_recall"] for r in runs]))
                    gap = None
                    if base is not None and ceiling - base > 1e-9:
                        gap = (weighted - base) / (ceiling - base)
                    row = {
                        "workload": name,
                        "burst": burst,
                        "bound": fraction,
                        "shedder": shedder,
                        "recall": float(np.mean([r["mean_recall"] for r in runs])),
                        "weighted_recall": weighted,
                        "weighted_recall_spread": float(np.ptp([r["weighted_recall"] for r in runs])),
                        "over_bound": float(np.mean([r["over_bound"] for r in runs])),
                        "p99_over_bound": float(np.mean([r["p99_over_bound"] for r in runs])),
                        "events_per_second": float(np.mean([r["events_per_second"] for r in runs])),
                        "false_matches": int(sum(r["false_matches"] for r in runs)),
                        "gap_share": gap,
                        "true_matches": int(np.mean([sum(map(len, c.keys.values())) for c in cases])),
                        "recall_by_query": {
                            q: float(np.mean([r["recall"].get(q, 1.0) for r in runs])) for q in runs[0]["recall"]
                        },
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    cpu = time.process_time() - began
    RESULTS.mkdir(exist_ok=True)
    stem = "shedding_burst" + (f"_{args.name}" if args.name else "") + ("_reduced" if args.reduced else "")
    meta = {"events": n, "window": window, "bursts": bursts, "bounds": bounds, "seeds": seeds, "cpu_seconds": cpu}
    (RESULTS / f"{stem}.json").write_text(json.dumps({"settings": meta, "rows": rows}, indent=1))
    (RESULTS / f"{stem}.md").write_text(table(rows))
    plot(rows, RESULTS / f"{stem}.png")
    print(table(rows))
    print(f"CPU seconds: {cpu:.0f}")


def merge(names: list[str], name: str) -> None:
    """Write one table, JSON and PNG from the runs ``names`` (e.g. one per workload, run in parallel)."""
    parts = [json.loads((RESULTS / f"shedding_burst_{n}.json").read_text()) for n in names]
    rows = [r for p in parts for r in p["rows"]]
    meta = {**parts[0]["settings"], "merged": names, "cpu_seconds": sum(p["settings"]["cpu_seconds"] for p in parts)}
    stem = "shedding_burst" + (f"_{name}" if name else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps({"settings": meta, "rows": rows}, indent=1))
    (RESULTS / f"{stem}.md").write_text(table(rows))
    plot(rows, RESULTS / f"{stem}.png")


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| workload | burst | bound | shedder | recall | weighted | spread | over bound | p99/bound | ev/s "
        "| gap share | false |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        gap = "-" if r["gap_share"] is None else f"{r['gap_share']:.2f}"
        lines.append(
            f"| {r['workload']} | {r['burst']:g}x | {r['bound']:.0%} | {r['shedder']} | {r['recall']:.3f} | "
            f"{r['weighted_recall']:.3f} | {r['weighted_recall_spread']:.3f} | {r['over_bound']:.3f} | "
            f"{r['p99_over_bound']:.2f} | {r['events_per_second']:,.0f} | {gap} | {r['false_matches']} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    panels = sorted({(r["workload"], r["burst"]) for r in rows})
    columns = min(4, len(panels))
    lines = -(-len(panels) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4.5 * columns, 3.6 * lines), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (name, burst) in zip(axes.flat, panels, strict=False):
        mine = [r for r in rows if r["workload"] == name and r["burst"] == burst]
        for shedder in dict.fromkeys(r["shedder"] for r in mine):
            pts = sorted(
                (r["bound"], r["weighted_recall"], r["weighted_recall_spread"]) for r in mine if r["shedder"] == shedder
            )
            xs, ys, spread = zip(*pts, strict=True)
            ax.errorbar(xs, ys, yerr=[s / 2 for s in spread], marker="o", label=shedder, capsize=2)
        ax.set_title(f"{name}, {burst:g}x burst")
        ax.set_xlabel("bound (fraction of unshedded mean latency)")
        ax.set_ylabel("weighted recall")
        ax.set_ylim(0, 1.05)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
