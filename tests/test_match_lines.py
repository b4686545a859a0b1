"""Matches read back from their output lines (``spark.match_lines``) are
the table ``api.matches_to_arrow`` makes of the Match objects themselves:
random matches (hypothesis), and the lines an engine writes for a workload
against its Match objects."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector, matches_to_arrow
from sharp_cer.events.generators import generate
from sharp_cer.events.match import Match
from sharp_cer.language import load_workload
from sharp_cer.spark.match_lines import of_lines

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
NAMES = st.text(alphabet="abcxyz_B", min_size=1, max_size=4)
POSITIONS = st.lists(st.integers(0, 2**62), max_size=4).map(tuple)


@st.composite
def matches(draw: st.DrawFn) -> Match:
    start = draw(st.integers(0, 2**62))
    return Match(
        draw(st.sampled_from(["q", "r", 'odd "name"', "é"])),
        start,
        draw(st.integers(start, 2**62)),
        draw(POSITIONS),
        draw(st.dictionaries(NAMES, POSITIONS, max_size=4)),
        tenant=draw(st.none() | st.sampled_from(["acme", "ünï"])),
        deadline=draw(st.none() | st.integers(-(2**63), 2**63 - 1)),
        version=draw(st.none() | st.integers(0, 9)),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(matches(), max_size=12))
def test_lines_read_back_as_the_matches_table(found: list[Match]) -> None:
    assert of_lines([m.to_json() for m in found]).equals(matches_to_arrow(found))


def test_an_engines_lines_read_back_as_its_matches() -> None:
    workload = load_workload(CONFIGS / "stock_trading.toml")
    events = generate(workload.generator or "", 3000, seed=2)
    found = Detector.from_workload(workload, history=False).feed(events)
    lines = Detector.from_workload(workload, history=False).feed_ranked_lines(
        events, {q.name: 0 for q in workload.queries}
    )
    assert len(found) > 50
    key = ["query", "end", "start"]
    assert of_lines([line for _, _, line in lines]).sort_by([(k, "ascending") for k in key]).to_pylist() == sorted(
        matches_to_arrow(found).to_pylist(), key=lambda r: (r["query"], r["end"], r["start"], r["events"])
    )
