"""One way from a workload (or queries over a schema) to a detector.

The CLI's ``match``, the Python API (``Detector.from_workload``) and Spark's
workers turn queries into a detector here: the plan, each query's tenant,
the allowed lateness, the capacity, the bounds judged without a shedder, and
the shedder with its bounds, weights and sketch attributes. A bound given as
a fraction is of each query's mean latency in an unshedded run
(``needs_reference``): the caller measures it over its own events
(``sharp_cer.shedding.bounds.unshedded_latency``) and passes it as
``reference_ms``.

>>> from sharp_cer.language import parse_workload
>>> w = parse_workload('''
... [workload]
... name = "w"
... schema = "CREATE STREAM S { EVENT A { x:int } }"
... capacity = 1000
... [[query]]
... name = "q"
... tenant = "t"
... latency_bound = "50%"
... text = "SELECT * WHERE A WITHIN 1 EVENTS"
... ''')
>>> b = DetectorBuilder.for_workload(w, DetectorConfig(shedder="truncate"))
>>> b.tenants, b.capacity, b.needs_reference
({'q': 't'}, 1000.0, True)
>>> b.shed_config({"q": 8.0}).bounds_ms
{'q': 4.0}
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sharp_cer.language import CheckedQuery, LatencyBound, Schema, Workload, WorkloadQuery
from sharp_cer.planner import Plan, compile_plan

if TYPE_CHECKING:
    from sharp_cer.shedding import ShedConfig


@dataclass(frozen=True)
class WorkloadChange:
    """What an update changes (``diff_workloads``), by query name: queries
    ``added``, ``removed``, ``replaced`` (another text: a removal and an
    addition at the same position) and ``in_place`` (only tenant, weight,
    bound, shedding or sketch attributes changed: their state is untouched).
    ``queries`` are the added and replaced queries, the only part compiled
    (into the running plan: ``Engine.update``); ``plan`` compiles them alone
    (None: none), on first use."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    replaced: tuple[str, ...]
    in_place: tuple[str, ...]
    queries: tuple[tuple[str, CheckedQuery], ...] = ()
    counting: bool = False

    @functools.cached_property
    def plan(self) -> Plan | None:
        """The added and replaced queries compiled alone (None: none)."""
        return compile_plan(self.queries, counting=self.counting) if self.queries else None

    @property
    def empty(self) -> bool:
        """Whether nothing changes."""
        return not (self.added or self.removed or self.replaced or self.in_place)

    def describe(self) -> str:
        """One line saying what changes, for logs and summaries.

        >>> WorkloadChange(("a",), (), ("b", "c"), ()).describe()
        'added a; replaced b, c'
        """
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("replaced", self.replaced),
                ("changed in place", self.in_place),
            )
            if names
        ]
        return "; ".join(parts) or "nothing"


def diff_workloads(old: Workload, new: Workload, *, counting: bool = False) -> WorkloadChange:
    """The change from ``old`` to ``new`` by query name (``WorkloadChange``),
    with the added and replaced queries compiled alone. Raises
    ``SurfaceError`` for what cannot change while a stream runs: the
    schema, the allowed lateness, the capacity.

    >>> from sharp_cer.language import parse_workload
    >>> def workload(*queries):
    ...     body = "".join(f'[[query]]\\nname = "{n}"\\ntenant = "{t}"\\ntext = "{q}"\\n' for n, t, q in queries)
    ...     head = '[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { x:int } }"\\n'
    ...     return parse_workload(head + body)
    >>> a, b = "SELECT * WHERE A WITHIN 1 EVENTS", "SELECT * WHERE A ; A WITHIN 2 EVENTS"
    >>> old = workload(("p", "t", a), ("q", "t", a), ("r", "t", a))
    >>> change = diff_workloads(old, workload(("p", "u", a), ("q", "t", b), ("s", "t", a)))
    >>> change.describe(), [q.name for q in change.plan.queries]
    ('added s; removed r; replaced q; changed in place p', ['q', 's'])
    """
    from sharp_cer.errors import SurfaceError
    from sharp_cer.language.printer import stream_declarations, to_ceql

    def fixed(w: Workload, schema: bool) -> dict[str, str]:
        return {
            "schema": stream_declarations(w.schema.declarations) if schema else "",
            "allowed lateness": str(w.allowed_lateness),
            "capacity": repr(w.capacity),
        }

    apart = new.schema is not old.schema  # the same object is the same schema; else the printed forms decide
    before, after = fixed(old, apart), fixed(new, apart)
    for part, value in before.items():
        if after[part] != value:
            raise SurfaceError(
                f"a running stream cannot change its workload's {part}: was {value!r}, now {after[part]!r}\n"
                "  hint: keep it as it was, or start a new stream (a new checkpoint) for the new one"
            )
    was = {q.name: q for q in old.queries}
    now = {q.name: q for q in new.queries}
    added = tuple(n for n in now if n not in was)
    removed = tuple(n for n in was if n not in now)
    replaced, in_place = [], []
    for name in now.keys() & was.keys():
        one, two = was[name], now[name]
        # the same checked query, or the same text, is the same query; else the printed forms decide
        same = one.checked is two.checked or one.checked.source.text == two.checked.source.text
        if not same and to_ceql(one.checked.query) != to_ceql(two.checked.query):
            replaced.append(name)
        elif _options(one) != _options(two):
            in_place.append(name)
    order = {name: k for k, name in enumerate(now)}
    replaced.sort(key=order.__getitem__)
    in_place.sort(key=order.__getitem__)
    compiled = tuple((n, now[n].checked) for n in order if n in added or n in replaced)
    return WorkloadChange(added, removed, tuple(replaced), tuple(in_place), compiled, counting)


def _options(query: WorkloadQuery) -> tuple[object, ...]:
    """What of a query may change in place (its state untouched)."""
    return (query.tenant, query.weight, query.latency_bound, query.shed, query.sketch_attributes)


def tenants_of(workload: Workload | None) -> dict[str, str]:
    """Each query's tenant, carried by its matches (none without a workload)."""
    return {q.name: q.tenant for q in workload.queries} if workload is not None else {}


@dataclass(frozen=True)
class DetectorConfig:
    """How queries become a detector: the shedder (a name of
    ``shedding.SHEDDERS``; None: no shedding) and its seed; ``bound``, one
    latency bound for every query that may be shed instead of each query's
    own (the CLI's ``--latency-bound``); ``sketch_attributes`` added to each
    such query's; ``capacity`` in cost units per second (None: the
    workload's); ``count_only``: a plan that counts matches."""

    shedder: str | None = None
    seed: int = 0
    bound: LatencyBound | None = None
    sketch_attributes: tuple[str, ...] = ()
    capacity: float | None = None
    count_only: bool = False


class DetectorBuilder:
    """The parts of a detector for named, checked queries over a schema,
    and the workload that gives their tenants, weights, bounds, sketch
    attributes, lateness and capacity (None: queries alone, without
    tenants). ``plan``: the queries' plan, compiled already (Spark's
    workers keep one per lane); default: compiled here, once."""

    def __init__(
        self,
        schema: Schema,
        queries: Sequence[tuple[str, CheckedQuery]],
        config: DetectorConfig,
        *,
        workload: Workload | None = None,
        allowed_lateness: int = 0,
        plan: Plan | None = None,
    ) -> None:
        self.schema = schema
        self.queries = list(queries)
        self.config = config
        self.workload = workload
        self.allowed_lateness = workload.allowed_lateness if workload is not None else allowed_lateness
        self.plan = plan if plan is not None else compile_plan(self.queries, counting=config.count_only)
        #: each query's tenant, carried by its matches (none without a workload)
        self.tenants = tenants_of(workload)
        #: cost units served per second (None: wall time)
        self.capacity = config.capacity
        if self.capacity is None and workload is not None:
            self.capacity = workload.capacity
        #: the changes applied since the plan was compiled (``update``)
        self.changes: list[WorkloadChange] = []

    @classmethod
    def for_workload(cls, workload: Workload, config: DetectorConfig, plan: Plan | None = None) -> DetectorBuilder:
        """The builder of every query of a workload."""
        queries = [(q.name, q.checked) for q in workload.queries]
        return cls(workload.schema, queries, config, workload=workload, plan=plan)

    def update(self, workload: Workload) -> WorkloadChange:
        """Move the builder to ``workload`` (``diff_workloads`` against its
        own: only the added and replaced queries are compiled); the caller
        applies the change to its running engine (``Detector.update``).
        The builder's ``plan`` stays the first one; ``changes`` lists
        every change since."""
        if self.workload is None:
            from sharp_cer.errors import SurfaceError

            raise SurfaceError(
                "only a detector built from a workload can be updated with another\n"
                "  hint: build it with Detector.from_workload or DetectorBuilder.for_workload"
            )
        change = diff_workloads(self.workload, workload, counting=self.config.count_only)
        self.workload = workload
        self.queries = [(q.name, q.checked) for q in workload.queries]
        self.tenants = tenants_of(workload)
        self.changes.append(change)
        return change

    @property
    def _bounds(self) -> dict[str, LatencyBound]:
        """The bound of each query that may be shed: the config's one, else each query's own."""
        if self.config.bound is not None:
            given = {q.name: q for q in self.workload.queries} if self.workload is not None else {}
            return {q.name: self.config.bound for q in self.plan.queries if q.name not in given or given[q.name].shed}
        if self.workload is None:
            return {}
        return {q.name: q.latency_bound for q in self.workload.queries if q.shed and q.latency_bound is not None}

    @property
    def needs_reference(self) -> bool:
        """Whether the bounds need each query's mean latency in an unshedded
        run (``reference_ms``): a bound given as a fraction, to shed to, or
        to judge (the config's one bound without a shedder)."""
        used = self.config.shedder is not None or self.config.bound is not None
        return used and any(b.fraction is not None for b in self._bounds.values())

    def shed_config(self, reference_ms: Mapping[str, float] | None = None) -> ShedConfig:
        """The shedder's bounds (fractions of ``reference_ms``), weights,
        sketch attributes and seed. With the config's one bound, only the
        queries it bounds get weights and sketch attributes (the workload's
        and the config's); else every query of the workload gets its own."""
        from sharp_cer.shedding import ShedConfig
        from sharp_cer.shedding.bounds import resolve_bounds, workload_config

        config = self.config
        if config.bound is None and self.workload is not None:
            return workload_config(self.workload, seed=config.seed, reference_ms=reference_ms)
        bounds = self._bounds
        units, ms = resolve_bounds(bounds, reference_ms=reference_ms)
        given = {q.name: q for q in self.workload.queries} if self.workload is not None else {}
        attributes = {
            name: tuple(
                dict.fromkeys([*(given[name].sketch_attributes if name in given else ()), *config.sketch_attributes])
            )
            for name in bounds
        }
        weights = {name: given[name].weight for name in bounds if name in given}
        return ShedConfig(bounds=units, bounds_ms=ms, weights=weights, sketch_attributes=attributes, seed=config.seed)

    def judged_bounds(
        self, reference_ms: Mapping[str, float] | None = None
    ) -> tuple[dict[str, float], dict[str, float]] | None:
        """The bounds a run without a shedder is judged against (ms, cost
        units), never enforced: the config's one bound for every query it
        bounds, else the workload's (``shedding.bounds.judged_bounds``);
        None with a shedder (its own bounds are judged), or with neither.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> q = [("q", parse_and_check("SELECT * WHERE A WITHIN 1 EVENTS", s))]
        >>> DetectorBuilder(s, q, DetectorConfig(bound=LatencyBound(milliseconds=50))).judged_bounds()
        ({'q': 50}, {})
        >>> shed = DetectorConfig(bound=LatencyBound(milliseconds=50), shedder="truncate")
        >>> DetectorBuilder(s, q, shed).judged_bounds()
        """
        if self.config.shedder is not None:
            return None
        from sharp_cer.shedding.bounds import judged_bounds, resolve_bounds

        if self.config.bound is not None:
            bounds = {
                name: bound
                for name, bound in self._bounds.items()
                if bound.fraction is None or (reference_ms is not None and name in reference_ms)
            }
            units, ms = resolve_bounds(bounds, reference_ms)
            return ms, units
        if self.workload is None:
            return None

        return judged_bounds(self.workload, reference_ms)

    def shedder(self, reference_ms: Mapping[str, float] | None = None, config: ShedConfig | None = None) -> Any:
        """The config's shedder over ``shed_config(reference_ms)`` (or the
        ``config`` given, built from it), or None."""
        if self.config.shedder is None:
            return None
        from sharp_cer.shedding import make_shedder

        return make_shedder(self.config.shedder, config if config is not None else self.shed_config(reference_ms))

    def detector_options(
        self, reference_ms: Mapping[str, float] | None = None, shed_config: ShedConfig | None = None
    ) -> dict[str, Any]:
        """The keyword arguments of ``Detector`` (``api.Detector.from_builder``)
        that come from the workload and the config."""
        return {
            "allowed_lateness": self.allowed_lateness,
            "capacity": self.capacity,
            "tenants": self.tenants,
            "count_only": self.config.count_only,
            "shedder": self.shedder(reference_ms, shed_config),
            "bounds": self.judged_bounds(reference_ms),
        }
