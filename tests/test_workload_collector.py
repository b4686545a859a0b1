"""Loading a large workload (issue 33.11): Python's cycle collector is paused
while the queries load, because its passes walk every live AST again and again
(a quarter of a 10,000-query load), and it is left as the caller had it."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from sharp_cer.language import parse_workload
from sharp_cer.language.diagnostics import CeqlSyntaxError


def _collections_during(run: Any) -> int:
    """How many cycle-collector passes start while ``run()`` runs."""
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.collect()  # counts from zero: no pass due before run() starts
    gc.callbacks.append(count)
    try:
        run()
    finally:
        gc.callbacks.remove(count)
    return len(passes)


def test_the_cycle_collector_pauses_while_queries_load_and_resumes() -> None:
    # every live object walked again per pass: a quarter of a 10,000-query load
    head = '[workload]\nname = "w"\nschema = "CREATE STREAM S { EVENT A { x:int } }"\n'
    body = "".join(f'\n[[query]]\nname = "q{i}"\ntext = "SELECT * WHERE A WITHIN {i + 1} EVENTS"\n' for i in range(300))
    assert gc.isenabled()
    # at most the one pass due when the collector resumes (it then walks the
    # load's objects once); main: 24 passes for these 300 queries
    assert _collections_during(lambda: parse_workload(head + body)) <= 1
    assert gc.isenabled()
    with pytest.raises(CeqlSyntaxError):
        parse_workload(head + body.replace("WITHIN 7 EVENTS", "WITHIN"))
    assert gc.isenabled()
    gc.disable()
    try:
        parse_workload(head + body)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
