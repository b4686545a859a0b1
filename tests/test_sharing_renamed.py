"""Sharing that real tenants get (issue 34): states shared whatever the
variable names, across queries that differ only at the end (windows,
cross-event conditions, SELECT lists), and guards tabled in a normal form.

Expectations: hand-counted prefix states (the same count with renamed
variables as with identical ones), the reference evaluator for every
query's matches (variables, projections and conditions by the query's own
names), and each query run alone. Hypothesis draws a query and a renamed,
reordered copy of it with another window: the shared plan gives each
exactly its matches alone, and the copy adds no prefix state."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, ast, parse_and_check, parse_query, to_ceql
from sharp_cer.planner import compile_plan
from sharp_cer.planner.explain import explain, render
from sharp_cer.planner.plan import Plan
from sharp_cer.planner.predicates import ConditionAtom
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, queries, streams, to_batch

SECURITY = Schema.parse(
    "CREATE STREAM S { EVENT LOGIN { user:int, ok:bool, country:string }, "
    "EVENT TRANSFER { user:int, amount:double }, EVENT RESET { user:int } }"
)
# four tenants' rules: two failed logins, then each tenant's own ending
TAILS = (
    "TRANSFER AS {c} FILTER {c}[amount > 1000]",
    "RESET AS {c}",
    "LOGIN AS {c} FILTER {c}[ok = true]",
    "TRANSFER AS {c} FILTER {c}[amount > 50]",
)
NAMES = (("f1", "f2", "t"), ("first", "second", "then"), ("a", "b", "c"), ("x1", "x2", "x3"))


def _plan(texts: dict[str, str], schema: Schema) -> Plan:
    return compile_plan([(name, parse_and_check(text, schema)) for name, text in texts.items()])


def _four_tenants(renamed: bool) -> dict[str, str]:
    texts = {}
    for i, tail in enumerate(TAILS):
        a, b, c = NAMES[i] if renamed else NAMES[0]
        texts[f"tenant{i}"] = (
            f"SELECT * WHERE LOGIN AS {a} ; LOGIN AS {b} ; {tail.format(c=c)} "
            f"FILTER {a}[ok = false] AND {b}[ok = false] PARTITION BY [user] WITHIN {10 + i} EVENTS"
        )
    return texts


def test_renamed_variables_share_exactly_as_identical_names_do() -> None:
    same = explain(_plan(_four_tenants(renamed=False), SECURITY))
    renamed = explain(_plan(_four_tenants(renamed=True), SECURITY))
    # hand count: LOGIN, LOGIN LOGIN shared, then one state per tenant's ending
    assert (same["states_shared"], same["states_separate"]) == (6, 12)
    assert (renamed["states_shared"], renamed["states_separate"]) == (6, 12)
    assert renamed["transitions_shared"] == same["transitions_shared"]


LOGINS = """\
LOGIN,1,false,fr
LOGIN,2,false,de
LOGIN,1,false,fr
TRANSFER,1,2000.5
LOGIN,2,,de
RESET,1
LOGIN,1,true,fr
LOGIN,2,false,de
TRANSFER,2,60
TRANSFER,1,70
"""


def _exact(texts: dict[str, str], schema: Schema, rows: str) -> Plan:
    """Every query's matches in the shared plan (variables by its own names)
    equal the reference's and its own run alone's."""
    named = [(name, parse_and_check(text, schema)) for name, text in texts.items()]
    batch, _ = load_csv(rows, schema)
    plan = compile_plan(named)
    found = Engine(plan, debug=True).process(batch)
    expected = evaluate(named, batch)
    for name, checked in named:
        alone = Engine(compile_plan([(name, checked)])).process(batch)
        got = sorted(m.key() for m in found if m.query == name)
        assert got == sorted(m.key() for m in alone), name
        assert got == sorted(m.key() for m in expected.per_query[name]), name
    return plan


def test_renamed_tenants_get_their_own_variables_projections_and_conditions() -> None:
    texts = _four_tenants(renamed=True)
    # cross-event conditions and SELECT lists by each tenant's own names
    texts["tenant0"] = (
        texts["tenant0"].replace("SELECT *", "SELECT t, f1").replace("FILTER f1", "FILTER t.user = f1.user AND f1")
    )
    texts["tenant3"] = texts["tenant3"].replace("SELECT *", "SELECT x3")
    plan = _exact(texts, SECURITY, LOGINS)
    assert plan.query("tenant1").own_names == {"$0": "first", "$1": "second", "$2": "then"}
    matches = Engine(plan).process(load_csv(LOGINS, SECURITY)[0])
    assert {tuple(sorted(m.vars)) for m in matches if m.query == "tenant0"} == {("f1", "t")}
    assert {tuple(sorted(m.vars)) for m in matches if m.query == "tenant1"} == {
        ("LOGIN", "RESET", "first", "second", "then")
    }


def test_queries_that_differ_at_the_end_share_every_common_state() -> None:
    base = "SELECT {sel} WHERE ((LOGIN AS {a} ; LOGIN AS {b}) FILTER {cond}) ; TRANSFER AS {c} FILTER {a}[ok = false]"
    texts = {
        "q1": base.format(sel="*", a="a", b="b", c="c", cond="a.user = b.user") + " WITHIN 5 EVENTS",
        "q2": base.format(sel="p, r", a="p", b="q", c="r", cond="q.user != p.user AND p.country = q.country")
        + " WITHIN 9 EVENTS",
        "q3": base.format(sel="m", a="m", b="n", c="o", cond="m.user < n.user") + " WITHIN 3 EVENTS",
    }
    plan = _exact(texts, SECURITY, LOGINS * 2)
    figures = explain(plan)
    assert figures["groups"] == 1
    alone = explain(_plan({"q1": texts["q1"]}, SECURITY))
    assert figures["states_shared"] == alone["states_shared"] == 3
    assert figures["states_separate"] == 9


def test_equal_guards_written_apart_are_one_guard() -> None:
    schema = Schema.parse("CREATE STREAM S { EVENT E { a:int, b:string, price:double }, EVENT F { a:int } }")
    texts = {
        "q1": "SELECT * WHERE E AS x ; F FILTER x[a > 5 AND b = 'z'] AND x.price >= 10",
        "q2": "SELECT * WHERE E AS y ; F FILTER y[b = 'z' AND 5 < a] AND NOT (y.price < 10)",
        "q3": "SELECT * WHERE E AS w ; F FILTER w[NOT (b != 'z') AND NOT (a <= 5)] AND NOT NOT (w.price >= 10)",
    }
    rows = "E,6,z,10\nF,1\nE,6,z,\nF,2\nE,6,,12\nE,5,z,11\nF,3\nE,7,z,9.5\nF,4\nE,9,z,inf\nF,5\n"
    plan = _exact(texts, schema, rows)
    conditions = [a for a in plan.predicates.atoms if isinstance(a, ConditionAtom)]
    assert len(conditions) == 3  # a > 5, b = 'z', price >= 10
    figures = explain(plan)
    assert (figures["states_shared"], figures["states_separate"]) == (2, 6)


def test_not_is_pushed_through_every_comparison_with_nulls_as_the_reference_has_them() -> None:
    schema = Schema.parse("CREATE STREAM S { EVENT E { v:double, s:string }, EVENT F { n:int } }")
    rows = "E,1.5,a\nF,1\nE,,b\nF,2\nE,3,\nF,3\nE,-inf,c\nF,4\nE,2,b\nF,5\n"
    for op in ("<", "<=", ">", ">=", "=", "!="):
        texts = {
            "number": f"SELECT * WHERE E AS e ; F FILTER NOT (e.v {op} 2)",
            "set": "SELECT * WHERE E AS e ; F FILTER NOT (e.s IN {'a', 'c'})",
        }
        if op in ("=", "!="):  # strings compare for equality only
            texts["text"] = f"SELECT * WHERE E AS e ; F FILTER NOT (e.s {op} 'b')"
        plan = _exact(texts, schema, rows)
        written = {str(a.condition) for a in plan.predicates.atoms if isinstance(a, ConditionAtom)}
        assert not any("Not(" in w for w in written), written


def test_explain_shows_the_renaming_the_normal_guards_and_why_groups_are_apart() -> None:
    texts = _four_tenants(renamed=True)
    texts["other"] = "SELECT * WHERE LOGIN AS z ; RESET FILTER NOT (z[user < 3]) WITHIN 4 EVENTS"
    figures = explain(_plan(texts, SECURITY))
    assert figures["variables"]["tenant1"] == {"$0": "first", "$1": "second", "$2": "then"}
    assert figures["guards"]["other"] == [
        {"written": "NOT z[user < 3]", "normalized": ["user >= 3"], "rewritten": True}
    ]
    apart = next(g for g in figures["group_details"] if g["queries"] == ["other"])
    assert "PARTITION BY" in apart["apart_from_others"]
    text = render(figures)
    assert "first -> $0" in text and "user >= 3" in text


# ------------------------------------------------------------------ hypothesis

_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


def _copy(query: ast.Query, names: dict[str, str], window: ast.Window | None) -> ast.Query:
    """``query`` with its variables renamed, every AND's sides swapped,
    comparisons with a constant written constant first, the SELECT list
    reversed and another window: the same query for a user."""

    def walk(node: Any) -> Any:
        if isinstance(node, tuple):
            return tuple(walk(n) for n in node)
        if not (dataclasses.is_dataclass(node) and type(node).__module__ == ast.__name__):
            return node
        fields = {f.name: walk(getattr(node, f.name)) for f in dataclasses.fields(node) if f.name != "span"}
        node = dataclasses.replace(node, **fields)  # type: ignore[type-var]
        if isinstance(node, (ast.Bind, ast.VariableFilter, ast.Projection)) and node.variable in names:
            node = dataclasses.replace(node, variable=names[node.variable])
        if isinstance(node, ast.AttributeRef):
            if node.variable in names:
                node = dataclasses.replace(node, variable=names[node.variable])
            elif node.variable is None and node.attribute in names:  # count(v)
                node = dataclasses.replace(node, attribute=names[node.attribute])
        if isinstance(node, ast.And):
            node = ast.And(node.right, node.left)
        if (
            isinstance(node, ast.Comparison)
            and isinstance(node.left, ast.AttributeRef)
            and isinstance(node.right, ast.NumberLiteral)
        ):
            node = ast.Comparison(_MIRRORED[node.op], node.right, node.left)
        return node

    copy = walk(query)
    if isinstance(copy.selection, tuple):
        copy = dataclasses.replace(copy, selection=tuple(reversed(copy.selection)))
    return dataclasses.replace(copy, within=window)


def _other_window(window: ast.Window | None, bump: int) -> ast.Window | None:
    """A window of the same kind (so the copy lands in the same group) and another size."""
    if isinstance(window, ast.EventWindow):
        return ast.EventWindow((window.count + bump) % 11)
    if isinstance(window, ast.TimeWindow):
        return ast.TimeWindow(seconds=((window.seconds or 0) + bump) % 7)
    if isinstance(window, ast.AttributeWindow):
        return ast.AttributeWindow(max(1, window.size + bump - 2), window.attribute)
    return None


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(queries(cross=True), st.integers(1, 5), streams(max_size=12))
def test_a_renamed_reordered_copy_with_another_window_shares_every_state(
    text: str, bump: int, rows: list[dict[str, Any]]
) -> None:
    original = parse_query(text)
    variables = sorted({n.variable for n in _nodes(original.pattern) if isinstance(n, ast.Bind)})
    names = {v: f"tenant_{len(variables) - i}" for i, v in enumerate(variables)}
    copy_text = to_ceql(_copy(original, names, _other_window(original.within, bump)))
    named = [("original", parse_and_check(text, SCHEMA)), ("copy", parse_and_check(copy_text, SCHEMA))]
    batch = to_batch(rows)
    plan = compile_plan(named)
    alone_plan = compile_plan(named[:1])
    assert len(plan.groups) == 1
    # the copy adds no prefix state (nor any state or move)
    shared, alone = explain(plan), explain(alone_plan)
    assert shared["states_shared"] == alone["states_shared"], (text, copy_text)
    assert plan.groups[0].automaton.n_states == alone_plan.groups[0].automaton.n_states
    assert shared["predicates"]["atoms"] == alone["predicates"]["atoms"]
    found = Engine(plan, allowed_lateness=4, debug=True).process(batch)
    expected = evaluate(named, batch)
    for name, checked in named:
        by_itself = Engine(compile_plan([(name, checked)]), allowed_lateness=4).process(batch)
        got = sorted(m.key() for m in found if m.query == name)
        assert got == sorted(m.key() for m in by_itself), (name, text, copy_text)
        assert got == sorted(m.key() for m in expected.per_query[name]), (name, text, copy_text)


def _nodes(formula: Any) -> list[Any]:
    """Every node of a syntax tree."""
    out = []
    stack = [formula]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif dataclasses.is_dataclass(node):
            out.append(node)
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node) if f.name != "span")
    return out


@pytest.mark.slow
def test_the_example_workload_shares_its_tenants_prefixes_and_matches_exactly() -> None:
    from pathlib import Path

    from sharp_cer.events.generators import generate
    from sharp_cer.events.loaders import load_pandas
    from sharp_cer.language import load_workload

    workload = load_workload(Path(__file__).resolve().parents[1] / "configs" / "shared_logins.toml")
    assert workload.warnings() == []
    named = [(q.name, q.checked) for q in workload.queries]
    plan = compile_plan(named)
    figures = explain(plan)
    # hand count: a failed login, a purchase of 700 or more (three tenants), an online one
    # (the fourth): 3 against 8 alone; a good login, a profile change, three endings: 5 against 9
    assert (figures["states_shared"], figures["states_separate"]) == (8, 17)
    assert workload.generator is not None
    batch, _ = load_pandas(generate(workload.generator, 4000, seed=5), workload.schema)
    found = Engine(plan).process(batch)
    assert len(found) == 3  # a planted failed login and cash-out, seen by three tenants
    expected = evaluate(named, batch)
    for name, checked in named:
        alone = Engine(compile_plan([(name, checked)])).process(batch)
        got = sorted(m.key() for m in found if m.query == name)
        assert got == sorted(m.key() for m in alone) == sorted(m.key() for m in expected.per_query[name]), name


def test_queries_that_walk_alike_give_their_own_lines_too() -> None:
    """Tenants whose queries differ only in windows and SELECT lists walk the
    tECS once per event; each still gets exactly its own matches, as Match
    objects and as output lines (each with its tenant), equal to its run alone."""
    base = "SELECT {sel} WHERE LOGIN AS {a} ; TRANSFER AS {b} FILTER {a}[ok = false] AND {b}.user = {a}.user"
    texts = {
        "wide": base.format(sel="*", a="a", b="b") + " WITHIN 9 EVENTS",
        "narrow": base.format(sel="t", a="l", b="t") + " WITHIN 2 EVENTS",
        "middle": base.format(sel="first", a="first", b="then") + " WITHIN 4 EVENTS",
    }
    plan = _exact(texts, SECURITY, LOGINS * 3)
    batch, _ = load_csv(LOGINS * 3, SECURITY)
    tenants = {name: f"tenant-{name}" for name in texts}
    objects = Engine(plan).process(batch)  # walks shared (the debug run of _exact checks each path)
    assert sorted(m.key() for m in objects) == sorted(m.key() for m in Engine(plan, debug=True).process(batch))
    lines = Engine(plan).process_lines(batch, tenants)
    assert sorted(lines) == sorted(dataclasses.replace(m, tenant=tenants[m.query]).to_json() for m in objects)
    counts = {name: sum(m.query == name for m in objects) for name in texts}
    assert counts["wide"] > counts["middle"] > counts["narrow"] > 0
