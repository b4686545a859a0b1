"""Reading one item ahead in a thread."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
_END = object()


def ahead(items: Iterator[T]) -> Iterator[T]:
    """The items, each made in a thread while the one before is used (the
    work is mostly arrow's, numpy's or a file's, which release the GIL).

    >>> list(ahead(iter([1, 2, 3])))
    [1, 2, 3]

    The thread is not waited for when the items stop (its one call in
    progress ends on its own): a reader left unfinished, for instance when
    a strict load raises, is closed whenever the garbage collector finds
    it, and waiting for a thread from there can deadlock (seen when the
    collection ran inside the start of another thread)."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        future = pool.submit(next, items, _END)
        while (item := future.result()) is not _END:
            future = pool.submit(next, items, _END)
            yield item  # type: ignore[misc]
    finally:
        pool.shutdown(wait=False)
