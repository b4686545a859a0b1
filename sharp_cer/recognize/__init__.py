"""SQL:2016 row pattern recognition (MATCH_RECOGNIZE) over ordered rows.

The clause's language (``parse_clause``), its thread-list matcher and the
run over a pandas or Arrow table (``match_recognize``). It stands beside
CEQL and does not use the CEQL engine.
"""

from __future__ import annotations

from typing import Any

__all__ = ["match_recognize", "parse_clause"]


def __getattr__(name: str) -> Any:
    if name == "parse_clause":
        from .parser import parse_clause

        return parse_clause
    if name == "match_recognize":
        from .run import match_recognize

        return match_recognize
    raise AttributeError(name)
