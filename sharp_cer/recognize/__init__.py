"""SQL:2016 row pattern recognition (MATCH_RECOGNIZE) over ordered rows.

The clause's language (``parse_clause``), its thread-list matcher and the
run over a pandas or Arrow table (``match_recognize``). It stands beside
CEQL and does not use the CEQL engine.

>>> import pyarrow as pa
>>> from sharp_cer.recognize import match_recognize
>>> rows = pa.table({"id": [1, 2, 3, 4], "v": [5, 3, 4, 1]})
>>> out = match_recognize(rows, "MATCH_RECOGNIZE (ORDER BY id MEASURES CLASSIFIER() AS label "
...                             "ALL ROWS PER MATCH PATTERN (A B+) DEFINE B AS v < PREV(v))")
>>> out.select(["id", "label"]).to_pylist()
[{'id': 1, 'label': 'A'}, {'id': 2, 'label': 'B'}, {'id': 3, 'label': 'A'}, {'id': 4, 'label': 'B'}]
"""

from __future__ import annotations

from typing import Any

__all__ = ["match_recognize", "parse_clause"]


def __getattr__(name: str) -> Any:
    if name == "parse_clause":
        from .clause_parser import parse_clause

        return parse_clause
    if name == "match_recognize":
        from .run import match_recognize

        return match_recognize
    raise AttributeError(name)
