"""The language layer: CEQL grammar, AST, printer, checks, schemas, workloads.

>>> from sharp_cer.language import Schema, parse_and_check
>>> schema = Schema.parse("CREATE STREAM S { EVENT BUY { price:double } }")
>>> parse_and_check("SELECT * WHERE BUY FILTER BUY[price > 10] WITHIN 5 EVENTS", schema).warnings
()
"""

from __future__ import annotations

from .checker import CheckedQuery, VariableInfo, check_query, parse_and_check
from .diagnostics import QueryError, QueryWarning
from .parser import parse_query, parse_stream_declarations
from .printer import to_ceql
from .schema import EventSchema, Schema
from .source import Source, Span
from .workload import LatencyBound, Workload, WorkloadQuery, load_workload, parse_workload

__all__ = [
    "CheckedQuery",
    "EventSchema",
    "LatencyBound",
    "QueryError",
    "QueryWarning",
    "Schema",
    "Source",
    "Span",
    "VariableInfo",
    "Workload",
    "WorkloadQuery",
    "check_query",
    "load_workload",
    "parse_and_check",
    "parse_query",
    "parse_stream_declarations",
    "parse_workload",
    "to_ceql",
]
