"""SQL's three-valued logic, which CEQL conditions and MATCH_RECOGNIZE's
DEFINE share: None is unknown (a null read), and a condition holds only
when it is true. The reference evaluator keeps its own copy on purpose: it
is the oracle these are tested against.

>>> and3(True, None), and3(False, None), or3(True, None), or3(False, None)
(None, False, True, None)
>>> truth(0), truth(None)
(False, None)
"""

from __future__ import annotations

from typing import Any


def truth(value: Any) -> bool | None:
    """A value as a truth value: None (unknown) for a null."""
    return None if value is None else bool(value)


def and3(a: bool | None, b: bool | None) -> bool | None:
    """AND: false if a side is false, else unknown if a side is."""
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def or3(a: bool | None, b: bool | None) -> bool | None:
    """OR: true if a side is true, else unknown if a side is."""
    if a is True or b is True:
        return True
    return None if a is None or b is None else False
