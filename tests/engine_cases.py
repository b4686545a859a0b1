"""Random small workloads and streams for differential tests of the engine
against the reference evaluator.

Queries are drawn as CEQL text over one schema (event types A, B, C with an
int ``x``, a partition attribute ``k`` and a primary time ``t``; D lives in
another stream, for FROM), from the operators the engine runs: sequence and
contiguity, OR, Kleene (nested too), NOT, ABSENT, unary conditions on event
types and on AS variables, every kind of window, PARTITION BY and projection.
Every drawn query is safe and well-formed by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from sharp_cer.events.batch import EventBatch
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    """CREATE STREAM S {
         EVENT A { x:int, k:int, t:primary_time },
         EVENT B { x:int, k:int, t:primary_time },
         EVENT C { x:int, k:int, t:primary_time }
       }
       CREATE STREAM U { EVENT D { x:int, k:int, t:primary_time } }"""
)
TYPES = ("A", "B", "C")
SECOND = 1_000_000_000


@dataclass
class _Names:
    """Fresh AS names for one query."""

    count: int = 0
    types: set[str] = field(default_factory=set)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"


def _condition(draw: st.DrawFn, target: str, form: str) -> str:
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="]))
    value = draw(st.integers(0, 3))
    kind = draw(st.sampled_from(["compare", "set", "arith"]))
    inner = {
        "compare": f"x {op} {value}",
        "set": f"x IN {{{value}, {(value + 2) % 4}}}",
        "arith": f"x % 2 {op} {value % 2}",
    }[kind]
    if form == "bracket":
        return f"{target}[{inner}]"
    return inner.replace("x", f"{target}.x", 1)


@st.composite
def _single(draw: st.DrawFn) -> str:
    """A one-event formula for NOT(...) and ABSENT(...)."""
    kind = draw(st.sampled_from(TYPES))
    if draw(st.booleans()):
        return f"{kind} FILTER {_condition(draw, kind, 'bracket')}"
    return kind


def _leaf(draw: st.DrawFn, names: _Names) -> str:
    kind = draw(st.sampled_from(TYPES))
    names.types.add(kind)
    choice = draw(st.sampled_from(["plain", "plain", "plain", "filter", "as", "as_filter"]))
    if choice == "plain":
        return kind
    if choice == "filter":
        return f"{kind} FILTER {_condition(draw, kind, draw(st.sampled_from(['bracket', 'dot'])))}"
    var = names.fresh()
    if choice == "as":
        return f"{kind} AS {var}"
    return f"{kind} AS {var} FILTER {_condition(draw, var, draw(st.sampled_from(['bracket', 'dot'])))}"


def _pattern(draw: st.DrawFn, names: _Names, depth: int) -> str:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw, names)
    op = draw(st.sampled_from(["seq", "seq", "or", "kleene", "bind"]))
    if op == "seq":
        parts = [_pattern(draw, names, depth - 1) for _ in range(draw(st.integers(2, 3)))]
        text = f"({parts[0]})"
        for part in parts[1:]:
            link = draw(st.sampled_from([";", ";", ":"]))
            if link == ";" and draw(st.integers(0, 3)) == 0:
                text += f" ; ABSENT({draw(_single())})"
            elif link == ";" and draw(st.integers(0, 4)) == 0:
                text += f" ; NOT({draw(_single())})"
            text += f" {link} ({part})"
        if draw(st.integers(0, 4)) == 0:
            text = f"NOT({draw(_single())}) ; {text}"
        return text
    if op == "or":
        return f"({_pattern(draw, names, depth - 1)}) OR ({_pattern(draw, names, depth - 1)})"
    if op == "kleene":
        return f"({_pattern(draw, names, depth - 1)}){draw(st.sampled_from(['+', ':+']))}"
    var = names.fresh()
    inner = _pattern(draw, names, depth - 1)
    if draw(st.booleans()):
        return f"({inner}) AS {var} FILTER {_condition(draw, var, 'bracket')}"
    return f"({inner}) AS {var}"


@st.composite
def queries(draw: st.DrawFn, depth: int = 3) -> str:
    """One query's text."""
    names = _Names()
    pattern = _pattern(draw, names, depth)
    selection = draw(st.sampled_from(["*", "*", "NONE", "project"]))
    if selection == "project":
        candidates = sorted(names.types | {f"v{i}" for i in range(1, names.count + 1)})
        chosen = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
        selection = ", ".join(chosen)
    source = draw(st.sampled_from(["", "", " FROM S", " FROM S, U"]))
    text = f"SELECT {selection}{source} WHERE {pattern}"
    if draw(st.integers(0, 2)) == 0:
        text += " PARTITION BY [k]"
    window = draw(st.sampled_from(["events", "events", "time", "attribute", "none"]))
    if window == "events":
        text += f" WITHIN {draw(st.integers(0, 10))} EVENTS"
    elif window == "time":
        text += f" WITHIN {draw(st.integers(0, 6))} SECONDS"
    elif window == "attribute":
        # t never decreases; x does, so [x] needs the engine's lateness (x spans 0..3)
        attribute = draw(st.sampled_from(["t", "x"]))
        size = draw(st.sampled_from([1, SECOND, 2 * SECOND + 1])) if attribute == "t" else draw(st.integers(1, 3))
        text += f" WITHIN {size} [{attribute}]"
    return text


@st.composite
def streams(draw: st.DrawFn, max_size: int = 10) -> list[dict[str, Any]]:
    """Events with non-decreasing t (seconds apart, sometimes equal)."""
    n = draw(st.integers(0, max_size) | st.just(max_size))
    t = 0
    rows = []
    for _ in range(n):
        t += draw(st.sampled_from([0, SECOND // 2, SECOND, 2 * SECOND]))
        kind = draw(st.sampled_from([*TYPES, *TYPES, *TYPES, "D"]))
        rows.append({"type": kind, "x": draw(st.integers(0, 3)), "k": draw(st.integers(0, 1)), "t": t})
    return rows


def to_batch(rows: list[dict[str, Any]]) -> EventBatch:
    """Load rows through the pandas loader, as a user would."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["type", "x", "k", "t"])
    frame = frame.astype({"x": np.int64, "k": np.int64, "t": np.int64})
    batch, report = load_pandas(frame, SCHEMA)
    assert report.accepted == len(rows), report.summary()
    return batch
