"""Python's cycle collector, paused while a large structure is built.

Loading a workload and compiling its plan allocate many small objects that
stay alive (each query's syntax tree, checked form and plan pieces) and are
freed, when they are, by reference counting. The cyclic collector runs every
few hundred allocations and walks every live object each time: a quarter of
loading 10,000 queries and 40 % of planning them. Nothing built there needs
collecting midway, so the collector is paused and resumed, if it was on,
when the work ends, errors or not.

>>> import gc
>>> with collector_paused():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cycle collector for the ``with`` block; leave it as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
