"""Rules that change while the stream runs (issue 39): ``Detector.update``
against the reference evaluator's rule 15 (``reference.evaluate_interval``):
a query added at p has the matches of its pattern over the events from p on,
a removed one nothing ending at or after its removal, a replaced one both,
and an unchanged one those of an uninterrupted run."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.errors import EngineError, SurfaceError
from sharp_cer.language import Workload, parse_and_check, parse_workload
from sharp_cer.reference import evaluate, evaluate_interval
from tests.engine_cases import SCHEMA, shared_workloads, streams, to_batch

SCHEMA_TEXT = """CREATE STREAM S {
  EVENT A { x:int, k:int, j:int, t:primary_time },
  EVENT B { x:int, k:int, j:int, t:primary_time },
  EVENT C { x:int, k:int, j:int, t:primary_time }
}
CREATE STREAM U { EVENT D { x:int, k:int, t:primary_time } }"""


def toml(queries: dict[str, str], tenants: dict[str, str] | None = None, schema: str = SCHEMA_TEXT) -> str:
    """A workload file of named query texts (json.dumps quotes them as TOML basic strings)."""
    lines = ["[workload]", 'name = "w"', f"schema = {json.dumps(schema)}"]
    for name, text in queries.items():
        tenant = json.dumps((tenants or {}).get(name, "t"))
        lines += ["[[query]]", f"name = {json.dumps(name)}", f"tenant = {tenant}", f"text = {json.dumps(text)}"]
    return "\n".join(lines) + "\n"


def workload(queries: dict[str, str], tenants: dict[str, str] | None = None, schema: str = SCHEMA_TEXT) -> Workload:
    """A workload of named query texts."""
    return parse_workload(toml(queries, tenants, schema))


def renamed(text: str) -> str:
    """The query with its variables v1, v2, ... called w1, w2, ... (states are shared modulo renaming)."""
    return re.sub(r"\bv(\d+)\b", r"w\1", text)


def _run(plan: list[tuple[int, dict[str, str], dict[str, str]]], rows: list[dict[str, Any]]) -> None:
    """Feed ``rows`` in slices, moving to each step's workload at its cut;
    each query's matches (collected by name) must equal the reference over
    its intervals, and each match carries the version of its feed."""
    batch = to_batch(rows)
    cuts = [cut for cut, _, _ in plan] + [len(rows)]
    detector = Detector.from_workload(workload(plan[0][1], plan[0][2]), allowed_lateness=4)
    found: dict[str, list[Any]] = {}
    intervals: dict[str, list[tuple[str, int, int | None]]] = {n: [(t, 0, None)] for n, t in plan[0][1].items()}
    current = dict(plan[0][1])
    for step, (cut, texts, tenants) in enumerate(plan):
        if step:
            detector.update(workload(texts, tenants))
            for name in current.keys() - texts.keys() | {
                n for n in current.keys() & texts.keys() if current[n] != texts[n]
            }:
                text, first, _ = intervals[name][-1]
                intervals[name][-1] = (text, first, cut)
            for name in texts.keys() - current.keys() | {
                n for n in current.keys() & texts.keys() if current[n] != texts[n]
            }:
                intervals.setdefault(name, []).append((texts[name], cut, None))
            current = dict(texts)
        for m in detector.feed(batch.take(np.arange(cut, cuts[step + 1]))):
            assert m.version == (step or None)
            assert m.tenant == tenants.get(m.query, "t")
            found.setdefault(m.query, []).append(m.key())
    for name, spans in intervals.items():
        expected = []
        for text, first, removed in spans:
            checked = parse_and_check(text, SCHEMA, name)
            expected += [m.key() for m in evaluate_interval(name, checked, batch, first, removed)]
        assert sorted(found.get(name, [])) == sorted(expected), (name, spans)
    _check_sharing(detector, plan)


def query_groups(detector: Detector) -> list[list[str]]:
    """The running query groups, as the sorted names of their queries."""
    return sorted(sorted(q.name for q in runner.queries) for runner in detector.engine.runners)


def _check_sharing(detector: Detector, plan: list[tuple[int, dict[str, str], dict[str, str]]]) -> None:
    """The updated detector groups its queries as the sharing planner groups
    the last workload from scratch, with as many shared states: added
    queries joined the running groups, removed ones' states are gone."""
    fresh = Detector.from_workload(workload(plan[-1][1]))
    assert query_groups(detector) == query_groups(fresh)
    assert detector.stats()["prefix_states"] == fresh.stats()["prefix_states"]


@st.composite
def changing_workloads(
    draw: st.DrawFn,
) -> tuple[list[tuple[int, dict[str, str], dict[str, str]]], list[dict[str, Any]]]:
    """A stream and a plan of workloads: at each cut, queries are added,
    removed, replaced, renamed or moved to another tenant. The texts start
    alike (``shared_workloads``: one to three prefixes, cross-event filters
    sometimes), with renamed copies, so most additions join a running
    query group."""
    pool = draw(shared_workloads(min_size=3, max_size=6))
    pool += [renamed(t) for t in pool]
    rows = draw(streams(max_size=14))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(rows)), min_size=1, max_size=3))))
    names = [f"q{i}" for i in range(6)]
    texts = {
        n: draw(st.sampled_from(pool))
        for n in draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    }
    tenants: dict[str, str] = {}
    plan = [(0, dict(texts), dict(tenants))]
    for cut in cuts:
        texts, tenants = dict(texts), dict(tenants)
        for _ in range(draw(st.integers(1, 3))):
            name = draw(st.sampled_from(names))
            action = draw(st.sampled_from(["add", "remove", "replace", "tenant"]))
            if action == "remove" and name in texts and len(texts) > 1:
                del texts[name]
            elif action == "tenant" and name in texts:
                tenants[name] = draw(st.sampled_from(["u", "v"]))
            elif action in ("add", "replace"):
                texts[name] = draw(st.sampled_from(pool))
        plan.append((cut, texts, tenants))
    return [(0 if k == 0 else cut, t, n) for k, (cut, t, n) in enumerate(plan)], rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(changing_workloads())
def test_every_query_matches_the_reference_over_its_own_interval(case: Any) -> None:
    plan, rows = case
    _run(plan, rows)


SEQ = "SELECT * WHERE A AS a1 ; B AS b1 WITHIN 9 EVENTS"


def _rows(types: str) -> list[dict[str, Any]]:
    return [{"type": t, "x": 0, "k": 0, "j": 0, "t": i} for i, t in enumerate(types)]


def test_an_added_query_sharing_a_prefix_sees_no_partial_match_started_before_it() -> None:
    # Worked by hand: A A | A B. The running query p has partial matches at 0 and 1;
    # q, added at 2 with the same pattern under other names, matches only (2, 3).
    batch = to_batch(_rows("AAAB"))
    detector = Detector.from_workload(workload({"p": SEQ}))
    assert detector.feed(batch.take([0, 1])) == []
    version = detector.update(workload({"p": SEQ, "q": SEQ.replace("a1", "first").replace("b1", "then")}))
    assert version.describe() == "version 1 at position 2: added q"
    got = [(m.query, m.start, m.end, m.version) for m in detector.feed(batch.take([2, 3]))]
    assert got == [("p", 0, 3, 1), ("p", 1, 3, 1), ("p", 2, 3, 1), ("q", 2, 3, 1)]


def test_an_added_query_joins_the_running_group_and_reads_none_of_its_earlier_partial_matches() -> None:
    # Worked by hand: A B | A B D C. p = A;B;C runs with a partial match after A0 B1;
    # q = A;B;D (other variable names) added at 2 joins p's query group, sharing the
    # states of A and A;B. p keeps its partial matches: (0,1,5), (0,3,5), (2,3,5);
    # q's only match is over events from 2 on: (2,3,4), never A0 or B1.
    p = "SELECT * WHERE A AS a ; B AS b ; C AS c WITHIN 9 EVENTS"
    q = "SELECT * WHERE A AS first ; B AS then ; D AS last WITHIN 9 EVENTS"
    batch = to_batch(_rows("ABABDC" + "BBBBBB"))
    detector = Detector.from_workload(workload({"p": p}))
    assert detector.feed(batch.take([0, 1])) == []
    detector.update(workload({"p": p, "q": q}))
    assert query_groups(detector) == [["p", "q"]]  # one group: q shares p's states
    together = Detector.from_workload(workload({"p": p, "q": q}))
    assert detector.stats()["prefix_states"] == together.stats()["prefix_states"] == 4  # A, A;B, A;B;C, A;B;D
    got = sorted((m.query, m.events) for m in detector.feed(batch.take([2, 3, 4, 5])))
    assert got == [("p", (0, 1, 5)), ("p", (0, 3, 5)), ("p", (2, 3, 5)), ("q", (2, 3, 4))]
    assert detector.engine.floors == {1: 2}  # q (id 1) starts no match before 2
    detector.feed(batch.take(np.arange(6, 12)))
    assert detector.engine.floors == {}  # at 11, every run older than 2 is out of 9-event windows


def test_a_removed_query_s_own_states_are_freed_and_the_shared_ones_keep_their_partial_matches() -> None:
    # A C | B C: p = A;B;C and r = A;C;B share the state after A. After A0 C1, r has a
    # partial match after A;C that p cannot use; removing r drops it, p keeps A0.
    p = "SELECT * WHERE A AS a ; B AS b ; C AS c WITHIN 9 EVENTS"
    r = "SELECT * WHERE A AS a ; C AS c ; B AS b WITHIN 9 EVENTS"
    batch = to_batch(_rows("ACBC"))
    detector = Detector.from_workload(workload({"p": p, "r": r}))
    assert detector.feed(batch.take([0, 1])) == []
    before = detector.engine.live_nodes()
    detector.update(workload({"p": p}))
    assert query_groups(detector) == [["p"]]
    alone = Detector.from_workload(workload({"p": p}))
    assert detector.stats()["prefix_states"] == alone.stats()["prefix_states"] == 3  # r's states are gone
    assert detector.engine.live_nodes() < before  # r's partial match after A0 C1 is freed
    assert [(m.query, m.events) for m in detector.feed(batch.take([2, 3]))] == [("p", (0, 2, 3))]


def test_a_removed_query_frees_its_query_group_and_a_replaced_one_restarts() -> None:
    batch = to_batch(_rows("AABAB"))
    alone = "SELECT * WHERE C ; A PARTITION BY [k] WITHIN 9 EVENTS"  # another group: partitioned
    detector = Detector.from_workload(workload({"p": SEQ, "r": alone}))
    assert len(detector.engine.runners) == 2
    assert [(m.start, m.end) for m in detector.feed(batch.take([0, 1, 2]))] == [(0, 2), (1, 2)]
    detector.update(workload({"p": SEQ.replace("9 EVENTS", "8 EVENTS")}))  # r removed, p replaced
    assert len(detector.engine.runners) == 1  # r's group is gone; p's old group too (its only query)
    assert [(m.start, m.end) for m in detector.feed(batch.take([3, 4]))] == [(3, 4)]
    report = detector.version_report()
    assert report[1]["change"] == "removed r; replaced p"
    assert report[-1]["intervals"] == {"p": [[0, 2], [3, None]], "r": [[0, 2]]}
    assert "p: positions 0..2, 3.." in str(detector.summary())


def test_tenants_change_in_place_without_touching_state() -> None:
    batch = to_batch(_rows("AAB"))
    detector = Detector.from_workload(workload({"p": SEQ}, {"p": "acme"}))
    detector.feed(batch.take([0, 1]))
    nodes = detector.engine.live_nodes()
    change = detector.update(workload({"p": SEQ}, {"p": "globex"})).change
    assert (change.in_place, change.plan) == (("p",), None)
    assert detector.engine.live_nodes() == nodes
    assert [(m.start, m.tenant) for m in detector.feed(batch.take([2]))] == [(0, "globex"), (1, "globex")]


def test_a_change_that_cannot_apply_is_refused_and_changes_nothing() -> None:
    batch = to_batch(_rows("AAB"))
    detector = Detector.from_workload(workload({"p": SEQ}))
    detector.feed(batch.take([0, 1]))
    other = SCHEMA_TEXT.replace("EVENT D { x:int", "EVENT D { y:int, x:int")
    with pytest.raises(SurfaceError, match="cannot change its workload's schema"):
        detector.update(workload({"p": SEQ, "q": SEQ}, schema=other))
    assert detector.version == 0 and detector.builder is not None and len(detector.builder.changes) == 0
    assert [(m.start, m.end) for m in detector.feed(batch.take([2]))] == [(0, 2), (1, 2)]


def test_an_engine_with_a_shedder_refuses_to_change_without_its_new_configuration() -> None:
    # Detector.update gives it (tests/test_update_shedding.py)
    detector = Detector.from_workload(workload({"p": SEQ}), shedder="truncate")
    with pytest.raises(EngineError, match="shedder"):
        detector.engine.update(removed=["p"])


def test_a_snapshot_after_changes_restores_into_the_same_versions_and_continues() -> None:
    rows = _rows("AABACBAB")
    batch = to_batch(rows)
    versions = [workload({"p": SEQ}), workload({"p": SEQ, "q": "SELECT * WHERE A ; A WITHIN 4 EVENTS"})]
    first = Detector.from_workload(versions[0])
    first.feed(batch.take([0, 1, 2]))
    first.update(versions[1])
    first.feed(batch.take([3, 4]))
    snapshot = first.engine.snapshot()
    second = Detector.from_versions(versions)
    second.engine.restore(snapshot)
    second._last_position = 4  # as the stream left it (Spark feeds batches with their positions)
    tail = batch.take([5, 6, 7])
    assert [m.key() for m in second.feed(tail)] == [m.key() for m in first.feed(tail)]
    with pytest.raises(EngineError, match="another plan"):
        Detector.from_workload(versions[0]).engine.restore(snapshot)


def test_uninterrupted_queries_are_the_reference_whole_stream() -> None:
    # the rule's last clause, by hand: p runs through two changes of others
    rows = _rows("ABABAB")
    batch = to_batch(rows)
    detector = Detector.from_workload(workload({"p": SEQ}))
    out = detector.feed(batch.take([0, 1]))
    detector.update(workload({"p": SEQ, "q": SEQ}))
    out += detector.feed(batch.take([2, 3]))
    detector.update(workload({"p": SEQ}))
    out += detector.feed(batch.take([4, 5]))
    expected = evaluate([("p", parse_and_check(SEQ, SCHEMA))], batch).matches
    assert sorted(m.key() for m in out if m.query == "p") == sorted(m.key() for m in expected)


def test_lines_carry_the_version_once_updated() -> None:
    batch = to_batch(_rows("AB"))
    detector = Detector.from_workload(workload({"p": SEQ}))
    detector.update(workload({"p": SEQ}, {"p": "u"}))
    line = json.loads(detector.feed_lines(batch)[0])
    assert (line["tenant"], line["version"]) == ("u", 1)
    assert list(pd.DataFrame([line]).columns)[-1] == "version"


def _write(path: Any, queries: dict[str, str], tenant: str = "t") -> None:
    path.write_text(toml(queries, dict.fromkeys(queries, tenant)))


def test_a_bad_file_in_a_watched_folder_is_refused_located_and_a_fixed_one_is_taken(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    batch = to_batch(_rows("AABAB"))
    _write(tmp_path / "acme.toml", {"p": SEQ}, "acme")
    first = Detector.from_workload(workload({"p": SEQ}, {"p": "acme"}))
    first.watch(tmp_path)  # the same rules: no new version
    assert first.version == 0
    assert [(m.start, m.end) for m in first.feed(batch.take([0, 1]))] == []
    bad = SEQ.replace("B AS b1", "B AS b1 [x >> 1]")
    _write(tmp_path / "globex.toml", {"q": SEQ, "r": bad}, "globex")
    with caplog.at_level("ERROR", logger="sharp_cer"):
        assert [(m.query, m.start, m.end) for m in first.feed(batch.take([2]))] == [("p", 0, 2), ("p", 1, 2)]
    assert first.version == 0 and len(first.refusals) == 1
    error = first.refusals[0]["error"]
    assert "globex.toml:" in error and "^" in error  # file, line, column and caret
    assert "refused" in caplog.text and "globex.toml" in caplog.text
    assert "refused at position 2" in str(first.summary()) and first.stats()["workload_refusals"] == 1
    _write(tmp_path / "globex.toml", {"q": SEQ}, "globex")  # fixed: taken at the next feed
    got = [(m.query, m.start, m.end, m.tenant, m.version) for m in first.feed(batch.take([3, 4]))]
    assert got == [("p", 0, 4, "acme", 1), ("p", 1, 4, "acme", 1), ("p", 3, 4, "acme", 1), ("q", 3, 4, "globex", 1)]
    _write(tmp_path / "other.toml", {"q": SEQ}, "x")  # a name in two files: located in the second
    assert first.poll_workload() is None
    assert "other.toml:5:" in first.refusals[-1]["error"] and "also in globex.toml" in first.refusals[-1]["error"]


def test_a_stream_key_group_switches_between_the_events_before_and_after_the_version_s_position() -> None:
    # the Spark stream's key group (no Spark needed): events held across the
    # change are released under the workload they came under
    from sharp_cer.spark.stream_key_group import KeyGroupStream
    from sharp_cer.spark.worker import Job

    old, new = workload({"p": SEQ}), workload({"p": SEQ, "q": SEQ}, {"q": "u"})
    group = KeyGroupStream(Job(old, lanes=(("p",),), bin_width=100), lane=0)
    line = '{{"type": "{}", "x": 0, "k": 0, "j": 0, "t": {}}}'
    texts = [line.format(t, i) for i, t in enumerate("AAAB")]
    group.release(texts[:1], [0], [0], now_ms=0)
    group.switch(Job(new, lanes=(("p", "q"),), bin_width=100, version=1), 2)
    group.switch(Job(new, lanes=(("p", "q"),), bin_width=100, version=1), 2)  # told twice: once
    out = group.release(texts[1:], [1, 2, 3], [0, 0, 0], now_ms=0)
    rows = [r for r in out.to_pylist() if r["kind"] == "match"]
    got = [(r["query"], r["tenant"], r["start"], r["end"], r["version"]) for r in rows]
    assert got == [("p", "t", 0, 3, 1), ("p", "t", 1, 3, 1), ("p", "t", 2, 3, 1), ("q", "u", 2, 3, 1)]
    assert group.pending == [] and group.detector is not None and group.detector.version == 1


def test_a_watched_stream_refuses_a_bad_file_and_takes_the_fixed_one(tmp_path: Any) -> None:
    # run_stream's watcher, without Spark: what it decides between micro-batches
    from sharp_cer.spark.stream import _Watcher

    spec = tmp_path / "w.toml"
    _write(spec, {"p": SEQ})
    watcher = _Watcher(workload({"p": SEQ}), spec)
    assert not watcher.changed()
    _write(spec, {"p": SEQ, "q": SEQ.replace("WITHIN", "WITHN")})
    assert not watcher.changed() and len(watcher.refusals) == 1
    assert "w.toml:" in watcher.refusals[0]["error"] and "^" in watcher.refusals[0]["error"]
    _write(spec, {"p": SEQ, "q": SEQ})
    assert watcher.changed() and [q.name for q in watcher.next.queries] == ["p", "q"]
    assert watcher.taken() is watcher.current and watcher.said == "query q added"
