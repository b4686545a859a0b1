"""Per-query latency bounds in cost units: absolute, or a fraction of the
latency measured without shedding.

The latency a fraction refers to is a query's *largest* per-event latency
in an unshedded run over the same events (the engine's ``LatencyLog``): a
bound is a per-event bound, so 100% is the unshedded worst case and 50%
halves it.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B+ WITHIN 9 EVENTS", s))])
>>> reference = reference_latency(plan, [load_csv("A,1\\nB,1\\nB,1\\nB,1\\n", s)[0]])
>>> reference
{'q': 26.0}
>>> resolve_bounds({"q": LatencyBound(fraction=0.5)}, reference)
{'q': 13.0}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from planner.plan import Plan
from sharp_cer.engine import Engine
from sharp_cer.errors import SheddingError
from sharp_cer.events.batch import EventBatch
from sharp_cer.language.workload import LatencyBound, Workload

from .base import ShedConfig


def reference_latency(plan: Plan, batches: Iterable[EventBatch], **options: object) -> dict[str, float]:
    """Each query's largest per-event latency in cost units, unshedded."""
    engine = Engine(plan, record_latency=True, **options)  # type: ignore[arg-type]
    for batch in batches:
        engine.process(batch)
    assert engine.latency is not None
    out = {}
    for g, group in enumerate(plan.groups):
        for qid in group.queries:
            name = plan.queries[qid].name
            units = engine.latency.units(g, name)
            out[name] = float(units.max()) if len(units) else 0.0
    return out


def resolve_bounds(
    bounds: Mapping[str, LatencyBound], reference: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Bounds in cost units; fractions need ``reference`` (see ``reference_latency``)."""
    out = {}
    for name, bound in bounds.items():
        if bound.cost_units is not None:
            out[name] = bound.cost_units
        elif bound.fraction is not None:
            if reference is None or name not in reference:
                raise SheddingError(
                    f"query {name}: a bound of {bound.fraction:.0%} needs the latency measured without shedding\n"
                    "  hint: measure it with shedding.bounds.reference_latency over representative events"
                )
            out[name] = max(1.0, bound.fraction * reference[name])
    return out


def workload_config(workload: Workload, reference: Mapping[str, float] | None = None, seed: int = 0) -> ShedConfig:
    """A workload's shedding configuration: the bounds of its queries that
    may be shed (``shed``) in cost units, their weights and sketch attributes.

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('''
    ... [workload]
    ... name = "w"
    ... schema = "CREATE STREAM S { EVENT A { x:int } }"
    ... [[query]]
    ... name = "q"
    ... weight = 3
    ... latency_bound = "50%"
    ... sketch_attributes = ["x"]
    ... text = "SELECT * WHERE A WITHIN 1 EVENTS"
    ... ''')
    >>> c = workload_config(w, {"q": 80.0})
    >>> c.bounds, c.weights, c.sketch_attributes
    ({'q': 40.0}, {'q': 3.0}, {'q': ('x',)})
    """
    bounds = {q.name: q.latency_bound for q in workload.queries if q.shed and q.latency_bound is not None}
    return ShedConfig(
        bounds=resolve_bounds(bounds, reference),
        weights={q.name: q.weight for q in workload.queries},
        sketch_attributes={q.name: q.sketch_attributes for q in workload.queries},
        seed=seed,
    )
