"""The plan layer, between the language and the engine: compiling checked queries into automata
and query groups over one shared predicate table; within a group, queries
share their prefixes (``sharing``), every state has its pattern-sharing
degree (``psd``), and ``explain`` says what the plan shares.

It imports from the language and events layers only.

>>> from sharp_cer.language import Schema, parse_and_check
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
>>> plan = compile_plan([("q1", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s)),
...                      ("q2", parse_and_check("SELECT * WHERE A : B WITHIN 9 EVENTS", s))])
>>> len(plan.groups), plan.groups[0].queries, len(plan.predicates)
(1, (0, 1), 2)
"""

from __future__ import annotations

from typing import Any

from .automaton import Automaton, AutomatonBuilder, Transition
from .compile import compile_plan
from .plan import Plan, QueryGroup, QueryPlan
from .predicates import PredicateTable

__all__ = [
    "Automaton",
    "AutomatonBuilder",
    "Plan",
    "PredicateTable",
    "QueryGroup",
    "QueryPlan",
    "Transition",
    "compile_plan",
]


def __getattr__(name: str) -> Any:
    # ``Group`` was the 0.1 name of a query group; kept one release
    if name == "Group":
        from . import plan

        return plan.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
