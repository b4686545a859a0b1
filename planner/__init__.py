"""The plan layer (DESIGN.md §1, §4): compiling checked queries into automata,
the shared-prefix DAG, PSD bitmaps and the shared predicate table.

It imports from the language and events layers only. Its modules arrive with
the engine and planner issues; until then the package holds no code.
"""

from __future__ import annotations
