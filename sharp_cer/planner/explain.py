"""What a plan shares, in figures, words, DOT and a picture (``sharp-cer explain``).

The sharing figures compare the plan with one where every query runs alone:

- ``states_shared`` / ``states_separate``: prefix states, counted as Sharp's
  Fig. 2 counts them (one per non-empty prefix: the states a marking move
  enters), in the groups' automata against the sum over the queries'
  own automata (each compiled as if it were alone);
- ``transitions_shared`` / ``transitions_separate``: moves, likewise;
- predicates evaluated per event: the workload's one predicate table against
  the sum of the tables each query would evaluate alone (type checks plus
  the conditions on the event's type), averaged over event types, or
  weighted by a run's counts of each type.

A run's figures (deterministic states built, cache hit rate, the engine's own
count of prefix states) come from the surface that ran it: this layer does
not run the engine.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
>>> plan = compile_plan([(n, parse_and_check(t, s)) for n, t in [
...     ("q1", "SELECT * WHERE A ; B ; C WITHIN 5 EVENTS"), ("q2", "SELECT * WHERE A ; B ; A WITHIN 9 EVENTS")]])
>>> figures = explain(plan)
>>> figures["states_shared"], figures["states_separate"], figures["transitions_shared"], figures["transitions_separate"]
(4, 6, 6, 10)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from sharp_cer._extras import require
from sharp_cer.language import ast, printer
from sharp_cer.language.checker import conjuncts
from sharp_cer.language.diagnostics import counted

from .compile import erase_variables, group_automaton, is_cross, normal_form
from .plan import Plan, QueryGroup
from .predicates import ConditionAtom, TypeAtom, describe, guard_atoms
from .sharing import prefix_states


def explain(plan: Plan, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The plan's groups, shared-prefix graphs, PSD clusters and sharing
    figures as one JSON-ready object (see the module docstring). ``run``
    holds a run's figures (``deterministic_states``, ``cache_hit_rate``,
    ``prefix_states`` counted by the engine, ``events_per_type``) when there
    was one."""
    groups = [_group(plan, i, g) for i, g in enumerate(plan.groups)]
    weights = dict(run.get("events_per_type", {})) if run else {}
    figures: dict[str, Any] = {
        "queries": len(plan.queries),
        "groups": len(plan.groups),
        "shared_groups": sum(1 for g in groups if g["shares_states"]),
        "states_shared": sum(g["states_shared"] for g in groups),
        "states_separate": sum(g["states_separate"] for g in groups),
        "transitions_shared": sum(g["transitions_shared"] for g in groups),
        "transitions_separate": sum(g["transitions_separate"] for g in groups),
        "predicates": _predicates(plan, weights),
    }
    figures["variables"] = {q.name: q.own_names for q in plan.queries if q.variables}
    figures["guards"] = {q.name: found for q in plan.queries if (found := _guards(q.query.pattern))}
    if run is not None:
        figures["run"] = dict(run)
    _apart(plan, groups)
    figures["group_details"] = groups
    return figures


def _guards(pattern: ast.Formula) -> list[dict[str, Any]]:
    """Each single-event condition of a pattern as written and as tabled
    (``compile.normal_form``): the atoms that tenants writing it otherwise
    share."""
    found = []
    stack: list[Any] = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Filter):
            for part in conjuncts(node.condition):
                if not is_cross(part):
                    erased = erase_variables(part)
                    normal = [printer.expr(c) for c in normal_form(erased)]
                    # rewritten: more than the variable erased (split, turned around, NOT pushed in)
                    rewritten = normal != [printer.expr(erased)]
                    found.append({"written": printer.expr(part), "normalized": normal, "rewritten": rewritten})
        if isinstance(node, (ast.Filter, ast.Bind, ast.Iteration, ast.Negation, ast.Absence)):
            stack.append(node.formula)
        elif isinstance(node, (ast.Sequence, ast.Conjunction)):
            stack.extend(reversed(node.parts))
        elif isinstance(node, ast.Disjunction):
            stack.extend((node.right, node.left))
    return found


def _apart(plan: Plan, groups: list[dict[str, Any]]) -> None:
    """Say, per group, why its queries share no state with the other
    groups' (only the predicate table): another stream, PARTITION BY or
    window kind, or a strategy that runs alone."""
    keys = [(g.event_types, g.partition_attributes, g.window) for g in plan.groups]
    names = ("streams", "PARTITION BY", "window kind")
    counts = [Counter(key[d] for key in keys) for d in range(3)]
    for details, key in zip(groups, keys, strict=True):
        if not details["shares_states"]:
            details["apart_from_others"] = "runs alone: its strategy, consumption or LIMIT"
            continue
        differ = [names[d] for d in range(3) if counts[d][key[d]] < len(keys)]
        details["apart_from_others"] = (
            "shares the predicate table only with other groups (they differ in " + ", ".join(differ) + ")"
            if differ
            else ""
        )


def _group(plan: Plan, index: int, group: QueryGroup) -> dict[str, Any]:
    names = [plan.queries[q].name for q in group.queries]
    first = plan.queries[group.queries[0]]
    alone = [
        group_automaton([part], plan.queries[q], plan.labels)
        for q, part in zip(group.queries, group.parts, strict=True)
    ]
    graph = group.graph
    psd = group.psd
    nodes = [
        {
            "state": state,
            "initial": data["initial"],
            "prefix": data["prefix"],
            "accepts": sorted(plan.queries[q].name for q in data["queries"]),
            "psd": hex(psd.bitmaps[state]),
        }
        for state, data in graph.nodes(data=True)
    ]
    edges = [
        {
            "source": source,
            "target": target,
            "moves": [
                {"guard": describe(guard, plan.predicates), "marks": _label(plan, label)} for guard, label in moves
            ],
        }
        for source, target, moves in graph.edges(data="moves")
    ]
    return {
        "group": index,
        "queries": names,
        "event_types": sorted(f"{e.stream}.{e.name}" for e in group.event_types),
        "partition_by": list(group.partition_attributes),
        "window": group.window[0] + (f" [{group.window[1]}]" if group.window[1] else ""),
        "shares_states": first.sheddable and not first.counted,
        "states": group.automaton.n_states,
        # counted on the graph, apart from the engine's own count (tests compare the two)
        "states_shared": sum(1 for _, prefix in graph.nodes(data="prefix") if prefix),
        "states_separate": sum(prefix_states(a) for a in alone),
        "transitions_shared": group.automaton.transition_count(),
        "transitions_separate": sum(a.transition_count() for a in alone),
        "clusters": [
            {
                "psd": hex(c.bitmap),
                "queries": [plan.queries[q].name for q in psd.queries_of(c.bitmap)],
                "states": list(c.states),
            }
            for c in psd.clusters
        ],
        "nodes": nodes,
        "edges": edges,
    }


def _label(plan: Plan, label: int | None) -> list[str] | None:
    return None if label is None else sorted(plan.labels[label])


def _predicates(plan: Plan, weights: Mapping[str, int]) -> dict[str, Any]:
    """Predicates evaluated per event, shared against alone. Per event type:
    every type atom is one comparison per event; a condition atom is
    evaluated on the events of its own type."""
    atoms = plan.predicates.atoms
    type_atoms = [i for i, a in enumerate(atoms) if isinstance(a, TypeAtom)]
    types = sorted({f"{a.stream}.{a.name}" for a in atoms if isinstance(a, TypeAtom)})

    def per_type(used: set[int]) -> dict[str, int]:
        kinds = sum(1 for i in used if isinstance(atoms[i], TypeAtom))
        counts = dict.fromkeys(types, kinds)
        for i in used:
            atom = atoms[i]
            if isinstance(atom, ConditionAtom):
                counts[f"{atom.stream}.{atom.name}"] += 1
        return counts

    shared = per_type(set(range(len(atoms))))
    separate = dict.fromkeys(types, 0)
    for group in plan.groups:
        for part in group.parts:
            used = {i for ts in part.transitions for t in ts for i in guard_atoms(t.guard)}
            for name, n in per_type(used).items():
                separate[name] += n
    total = sum(weights.get(t, 0) for t in types)

    def mean(counts: dict[str, int]) -> float:
        if not types:
            return 0.0
        if total:
            return sum(counts[t] * weights.get(t, 0) for t in types) / total
        return sum(counts.values()) / len(types)

    return {
        "atoms": len(atoms),
        "type_atoms": len(type_atoms),
        "condition_atoms": len(atoms) - len(type_atoms),
        "per_event_shared": mean(shared),
        "per_event_separate": mean(separate),
        "weighted_by": "run" if total else "event types, uniformly",
        "per_type_shared": shared,
        "per_type_separate": separate,
    }


def render(figures: Mapping[str, Any], max_groups: int = 20) -> str:
    """The figures for people: totals first, then the largest groups with
    their clusters.

    >>> print(render({"queries": 1, "groups": 0, "shared_groups": 0, "states_shared": 0, "states_separate": 0,
    ...     "transitions_shared": 0, "transitions_separate": 0, "group_details": [],
    ...     "predicates": {"atoms": 0, "per_event_shared": 0.0, "per_event_separate": 0.0,
    ...                    "weighted_by": "event types, uniformly"}}).splitlines()[0])
    1 query in 0 groups (0 sharing states)
    """
    lines = [
        f"{counted(figures['queries'], 'query', 'queries')} in {counted(figures['groups'], 'group')} "
        f"({figures['shared_groups']} sharing states)",
        f"prefix states: {figures['states_shared']} shared, {figures['states_separate']} if run alone"
        + _ratio(figures["states_separate"], figures["states_shared"]),
        f"transitions:   {figures['transitions_shared']} shared, {figures['transitions_separate']} if run alone"
        + _ratio(figures["transitions_separate"], figures["transitions_shared"]),
    ]
    p = figures["predicates"]
    lines.append(
        f"predicates:    {p['atoms']} distinct atoms; per event {p['per_event_shared']:.1f} shared, "
        f"{p['per_event_separate']:.1f} if run alone (weighted by {p['weighted_by']})"
    )
    run = figures.get("run")
    if run:
        lines.append(
            f"after a run of {run.get('events', 0)} events: {run.get('deterministic_states', 0)} deterministic states, "
            f"cache hit rate {run.get('cache_hit_rate', 0.0):.1%}, engine's prefix states {run.get('prefix_states')}"
        )
    renamed = figures.get("variables", {})
    if renamed:
        lines.append("variables as shared labels (states are shared whatever the names):")
        for name, labels in list(renamed.items())[:max_groups]:
            lines.append(f"  {name}: " + ", ".join(f"{own} -> {label}" for label, own in labels.items()))
        if len(renamed) > max_groups:
            lines.append(f"  ... and {len(renamed) - max_groups} more queries")
    rewritten = [(name, g) for name, found in figures.get("guards", {}).items() for g in found if g["rewritten"]]
    if rewritten:
        lines.append("guards in normal form (equal tests are one atom):")
        for name, g in rewritten[:max_groups]:
            lines.append(f"  {name}: {g['written']} -> {' AND '.join(g['normalized'])}")
        if len(rewritten) > max_groups:
            lines.append(f"  ... and {len(rewritten) - max_groups} more")
    details = sorted(figures["group_details"], key=lambda g: -len(g["queries"]))
    for g in details[:max_groups]:
        partition = "[" + ", ".join(g["partition_by"]) + "]" if g["partition_by"] else "-"
        lines.append(
            f"\ngroup {g['group']}: {counted(len(g['queries']), 'query', 'queries')} ({', '.join(g['queries'][:6])}"
            f"{', ...' if len(g['queries']) > 6 else ''}); partition {partition}; window {g['window']}; "
            + ("shares states" if g["shares_states"] and len(g["queries"]) > 1 else "")
            + ("runs alone: its strategy, consumption or LIMIT" if not g["shares_states"] else "")
        )
        if g.get("apart_from_others") and g["shares_states"]:
            lines.append(f"  {g['apart_from_others']}")
        lines.append(
            f"  prefix states {g['states_shared']} (alone {g['states_separate']}), "
            f"transitions {g['transitions_shared']} (alone {g['transitions_separate']}), "
            f"{counted(len(g['clusters']), 'PSD cluster')}"
        )
        for c in g["clusters"][:8]:
            lines.append(f"  PSD {c['psd']}: states {c['states']} -> {', '.join(c['queries'][:6])}")
    if len(details) > max_groups:
        lines.append(f"\n... and {len(details) - max_groups} more groups (--json has them all)")
    return "\n".join(lines)


def _ratio(separate: int, shared: int) -> str:
    return f" (x{separate / shared:.2f})" if shared else ""


def to_dot(plan: Plan) -> str:
    """The groups' shared-prefix graphs in Graphviz DOT: one cluster per
    group, prefix states as circles (double when final), waiting states as
    points, edges labelled with their guards.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> dot = to_dot(compile_plan([("q", parse_and_check("SELECT * WHERE A", s))]))
    >>> dot.startswith("digraph plan {"), "g0s1 [" in dot
    (True, True)
    """
    return str(_pydot(plan).to_string())


def _pydot(plan: Plan) -> Any:
    pydot = require("pydot", "the plan's DOT graph (explain --dot)")

    dot = pydot.Dot("plan", graph_type="digraph", rankdir="LR")
    for index, group in enumerate(plan.groups):
        names = ", ".join(plan.queries[q].name for q in group.queries[:4])
        more = ", ..." if len(group.queries) > 4 else ""
        cluster = pydot.Cluster(f"group{index}", label=f"group {index}: {names}{more}")
        graph = group.graph
        for state, data in graph.nodes(data=True):
            accepts = ", ".join(plan.queries[q].name for q in sorted(data["queries"]))
            if data["prefix"]:
                shape = "doublecircle" if accepts else "circle"
                label = f"{state}\\n{hex(group.psd.bitmaps[state])}" + (f"\\n{accepts}" if accepts else "")
                cluster.add_node(pydot.Node(f"g{index}s{state}", shape=shape, label=label))
            else:
                shape = "doublecircle" if accepts else ("point" if not data["initial"] else "circle")
                cluster.add_node(pydot.Node(f"g{index}s{state}", shape=shape, label=f"{state}"))
        for source, target, moves in graph.edges(data="moves"):
            label = "\\n".join(
                describe(g, plan.predicates) + ("" if label is None else " / " + ",".join(sorted(plan.labels[label])))
                for g, label in moves
            )
            cluster.add_edge(pydot.Edge(f"g{index}s{source}", f"g{index}s{target}", label=label))
        dot.add_subgraph(cluster)  # type: ignore[arg-type]  # a Cluster is a subgraph in DOT
    return dot


def draw(plan: Plan, path: str | Path, max_states: int = 400) -> None:
    """A PNG of the shared-prefix graphs of the groups that share the most,
    up to ``max_states`` states: states in layers by distance from the
    initial state, coloured by PSD cluster, prefix states larger.

    >>> import tempfile, os
    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B", s))])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     draw(plan, os.path.join(d, "plan.png")); os.path.getsize(os.path.join(d, "plan.png")) > 0
    True
    """
    matplotlib = require("matplotlib", "the plan's drawing (explain --png)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen: list[tuple[int, QueryGroup]] = []
    total = 0
    for index, group in sorted(enumerate(plan.groups), key=lambda ig: -len(ig[1].queries)):
        if chosen and total + group.automaton.n_states > max_states:
            break
        chosen.append((index, group))
        total += group.automaton.n_states
    picture = nx.DiGraph()
    layer: dict[tuple[int, int], int] = {}
    for index, group in chosen:
        depth = nx.multi_source_dijkstra_path_length(group.graph, group.automaton.initial)
        for state in group.graph.nodes:
            picture.add_node((index, state))
            layer[index, state] = depth.get(state, 0)
        picture.add_edges_from(((index, s), (index, t)) for s, t in group.graph.edges)
    nx.set_node_attributes(picture, layer, "layer")
    positions = nx.multipartite_layout(picture, subset_key="layer") if len(picture) else {}
    colours = []
    sizes = []
    for index, state in picture.nodes:
        group = plan.groups[index]
        bitmap = group.psd.bitmaps[state]
        colours.append(hash((index, bitmap)) % 20)
        sizes.append(120 if group.graph.nodes[state]["prefix"] else 30)
    figure, axes = plt.subplots(figsize=(12, 8))
    nx.draw_networkx(
        picture,
        positions,
        ax=axes,
        node_color=colours,
        cmap="tab20",
        vmin=0,
        vmax=19,
        node_size=sizes,
        with_labels=False,
        arrowsize=6,
        width=0.5,
    )
    shown = sum(len(g.queries) for _, g in chosen)
    axes.set_title(
        f"shared-prefix graphs of {len(chosen)} of {counted(len(plan.groups), 'group')} "
        f"({counted(shown, 'query', 'queries')}); "
        "colour = PSD cluster, large = prefix state"
    )
    axes.set_axis_off()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
