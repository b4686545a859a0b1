"""The small frictions of a new user's trial (issue 33 item 15): import
paths README names, a typed summary, aligned tables for long names,
plurals, demo's queries per tenant, and card_fraud's LIMIT comment."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest

from sharp_cer.api import Detector
from sharp_cer.language import Schema, load_workload
from sharp_cer.language.diagnostics import counted
from sharp_cer.latency_summary import Summary, render

ROOT = Path(__file__).resolve().parents[1]


def test_every_import_readme_shows_works() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    imports = [line.strip() for b in blocks for line in b.splitlines() if re.match(r"\s*(from \S+ )?import ", line)]
    assert imports
    for line in imports:
        if "spark" in line:
            pytest.importorskip("pyspark")
        exec(line, {})  # each import README shows runs as written
    # names README uses in its text, from where a user would look for them
    from sharp_cer import Pace
    from sharp_cer.api import Pace as ApiPace
    from sharp_cer.events import iter_csv, iter_jsonl, iter_parquet, load_csv

    assert Pace is ApiPace
    assert all(callable(f) for f in (iter_csv, iter_jsonl, iter_parquet, load_csv))
    for name in re.findall(r"`(iter_\w+|load_\w+)`", text):
        if name != "load_workload":
            assert callable(getattr(__import__("sharp_cer.events", fromlist=[name]), name)), name


def test_summary_is_a_typed_record_printed_as_a_table() -> None:
    s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    long_name = "a_query_whose_name_is_longer_than_the_column"
    d = Detector.from_queries([(long_name, "SELECT * WHERE A WITHIN 1 EVENTS"), ("q", "SELECT * WHERE A : A")], s)
    d.feed(pd.DataFrame({"type": ["A", "A"], "x": [1, 2]}))
    summary = d.summary()
    assert isinstance(summary, Summary) and dataclasses.is_dataclass(summary)
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.queries = {}  # type: ignore[misc]
    assert summary[long_name]["matches"] == 2 and summary["q"]["matches"] == 1
    assert summary.to_json() == {name: summary[name] for name in summary}
    header, *rows = str(summary).splitlines()
    # every column ends where its header does, however long the names
    end = header.index("matches") + len("matches")
    assert [row[:end].split()[-1] for row in rows] == ["2", "1"]
    assert [row.split()[0] for row in rows] == [long_name, "q"]
    assert str(summary) == render(summary)


def test_plurals() -> None:
    assert counted(1, "query", "queries") == "1 query" and counted(2, "PSD cluster") == "2 PSD clusters"
    from sharp_cer.planner import compile_plan
    from sharp_cer.planner.explain import explain
    from sharp_cer.planner.explain import render as render_plan

    s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    from sharp_cer.language import parse_and_check

    text = render_plan(explain(compile_plan([("q", parse_and_check("SELECT * WHERE A WITHIN 1 EVENTS", s))])))
    assert "1 query in 1 group " in text and "1 PSD cluster" in text and "1 PSD clusters" not in text


def test_demo_prints_queries_per_tenant() -> None:
    from sharp_cer.cli.demo import queries_by_tenant

    workload = load_workload(ROOT / "configs" / "card_fraud.toml")
    text = queries_by_tenant(workload)
    for tenant in workload.tenants:
        block = text.split(f"tenant {tenant}:")[1].split("tenant ")[0]
        mine = {q.name for q in workload.queries if q.tenant == tenant}
        listed = {line.split()[0] for line in block.splitlines()[2:] if line.strip()}
        assert listed == mine, tenant


def test_card_fraud_limit_comment_says_what_limit_does() -> None:
    # LIMIT 100 caps the matches each purchase completes, not the rule's reports in all
    path = ROOT / "configs" / "card_fraud.toml"
    comment = path.read_text().split('name = "bin_attack"')[0].rsplit("# BIN attack", 1)[1]
    assert "stops after 100 reports" not in comment and "each purchase" in comment
    workload = load_workload(path)
    (bin_attack,) = [q for q in workload.queries if q.name == "bin_attack"]
    n = 24  # declined online purchases at one merchant on distinct cards: C(k, 2) triples end at the k-th
    frame = pd.DataFrame(
        {
            "type": ["PURCHASE"] * n,
            "card": range(n),
            "bank": ["b"] * n,
            "seq": range(n),
            "merchant": ["m"] * n,
            "mcc": [1] * n,
            "amount": [10.0] * n,
            "country": ["X"] * n,
            "channel": ["online"] * n,
            "approved": [False] * n,
            "t": range(n),
        }
    )
    detector = Detector.from_queries([("bin_attack", bin_attack.checked)], workload.schema)
    found = detector.feed(frame)
    per_end: dict[int, int] = {}
    for m in found:
        per_end[m.end] = per_end.get(m.end, 0) + 1
    assert max(per_end.values()) == 100 and len(found) > 100
    assert per_end == {k: min(k * (k - 1) // 2, 100) for k in range(2, n)}
