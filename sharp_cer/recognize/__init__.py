"""SQL:2016 row pattern recognition (MATCH_RECOGNIZE) over ordered rows.

The clause's language (``parse_clause``), its thread-list matcher and the
run over a pandas or Arrow table (``match_recognize``). It stands beside
CEQL and does not use the CEQL engine.
"""

from __future__ import annotations

from typing import Any

__all__ = ["parse_clause"]


def __getattr__(name: str) -> Any:
    if name == "parse_clause":
        from .parser import parse_clause

        return parse_clause
    raise AttributeError(name)
