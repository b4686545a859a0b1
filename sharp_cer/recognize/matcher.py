"""The thread-list matcher (a Pike VM): every live way of matching the
pattern from one start row advances in lock step over the rows, kept in the
pattern's preference order, so the first match in that order comes out
without exponential backtracking.

A thread carries what DEFINE can read: the labels of the rows matched so
far, the quantifier counters and the exclusion depth. Two threads that
reach the same instruction with the same state at the same row have the
same future, so only the first (preferred) one lives. When every condition
reads only its own row (and rows at physical offsets from it), the labels
cannot change the future and are left out of that state: threads merge,
and work per row is bounded by the program's size. Otherwise labels are part
of the state and ``max_threads`` caps the live threads with a located error.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> from sharp_cer.recognize.program import compile_pattern
>>> prog = compile_pattern(parse_clause("MATCH_RECOGNIZE (PATTERN (A B+) DEFINE A AS true)").pattern, ["A", "B"])
>>> ok = lambda var, labels, pos: var == 0 or pos != 2
>>> first_match(prog, 0, 5, ok, labels_matter=False)
Found(end=2, labels=(0, 1), excluded=())
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sharp_cer.language.source import Source, Span

from .clause_errors import MatchError
from .program import CHECK, COUNT, END, EXCL_IN, EXCL_OUT, JMP, LABEL, LOOP, MARK, MATCH, SPLIT, START, Program, step

Condition = Callable[[int, tuple[int, ...], int], bool]
"""``condition(variable, labels, row)``: does ``row`` fit ``variable`` when the
match so far has ``labels`` (ending with ``variable`` for ``row`` itself)?"""

Alive = Callable[[int, tuple[int, tuple[int, ...], int]], bool]
"""``alive(row, (pc, counters, depth))``: can a thread in that state at ``row`` still complete?"""

DEFAULT_MAX_THREADS = 100_000


class Tracked(Protocol):
    """Conditions that read a thread's history (``reads`` plus running
    aggregate states) instead of only its labels: ``condition`` sees the
    history before ``row``, ``advance`` gives it after ``row`` got ``variable``."""

    initial: tuple[object, ...]

    def condition(self, variable: int, labels: Sequence[int], row: int, history: tuple[object, ...]) -> bool: ...

    def advance(
        self, history: tuple[object, ...], variable: int, labels: Sequence[int], row: int
    ) -> tuple[object, ...]: ...


@dataclass(frozen=True)
class Found:
    """A match: rows ``start..end-1`` with ``labels``; ``excluded`` rows are not output."""

    end: int
    labels: Sequence[int]
    excluded: tuple[int, ...]


class Labels(Sequence[int]):
    """A match's labels so far as a chain from the last row back, shared by
    the threads that grew from it, so adding a row costs O(1) (a tuple copy
    costs the match's length). The last label is read in O(1); any other
    index builds the tuple once per chain link (what a tuple costs anyway).

    >>> first = Labels(None, 0)
    >>> grown = Labels(Labels(first, 1), 2)
    >>> len(grown), grown[-1], grown[0], tuple(grown)
    (3, 2, 0, (0, 1, 2))
    """

    __slots__ = ("_flat", "label", "parent", "size")

    def __init__(self, parent: Labels | None, label: int) -> None:
        self.parent = parent
        self.label = label
        self.size: int = 1 + (parent.size if parent is not None else 0)
        self._flat: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, at: Any) -> Any:
        if at == -1 or at == self.size - 1:
            return self.label
        return self.flat()[at]

    def __iter__(self) -> Iterator[int]:
        return iter(self.flat())

    def flat(self) -> tuple[int, ...]:
        if self._flat is None and self.parent is not None and self.parent._flat is not None:
            # the parent's tuple moves to this link: a long chain never holds a tuple per link
            self._flat, self.parent._flat = (*self.parent._flat, self.label), None
        if self._flat is None:
            out: list[int] = []
            link: Labels | None = self
            while link is not None:
                out.append(link.label)
                link = link.parent
            self._flat = tuple(reversed(out))
        return self._flat


# A thread: (pc, counters, exclusion depth, labels, excluded rows, history)
Thread = tuple[int, tuple[int, ...], int, Sequence[int], tuple[int, ...], tuple[object, ...]]

Read = tuple[frozenset[int], str, int]
"""What conditions read of the match so far (``expressions.Read``): the first
or last ``k + 1`` rows mapped to a set of variables, or all of them."""


def _remember(history: tuple[object, ...], reads: Sequence[Read], row: int, variable: int) -> tuple[object, ...]:
    """``history`` (one tuple of (row, label) per read) after ``row`` got ``variable``."""
    out: list[object] = []
    for (members, kind, k), kept in zip(reads, history, strict=True):
        assert isinstance(kept, tuple)
        if variable in members and (kind != "first" or len(kept) <= k):
            kept = (*kept, (row, variable))
            if kind == "last" and len(kept) > k + 1:
                kept = kept[1:]
        out.append(kept)
    return tuple(out)


def first_match(
    program: Program,
    start: int,
    size: int,
    condition: Condition,
    *,
    labels_matter: bool,
    max_threads: int = DEFAULT_MAX_THREADS,
    alive: Alive | None = None,
    reads: Sequence[Read] | None = None,
    where: tuple[Source | None, Span | None] = (None, None),
    tracked: Tracked | None = None,
) -> Found | None:
    """The preferred match starting at row ``start`` of ``size`` rows, or None.
    ``alive``: which states can still complete at a row (threads elsewhere are
    dropped). ``reads``: all that the conditions read of the labels (None:
    anything), so threads that agree on it merge even when labels matter.
    ``tracked`` (with ``reads``): the history it keeps replaces ``reads``'s,
    and its condition replaces ``condition``."""
    code = program.code
    marked = program.marks > 0  # only then does consuming a row change a thread's counters
    threads: list[Thread] = []
    history: tuple[object, ...] = tuple(() for _ in reads) if reads is not None else ()
    if tracked is not None and reads is not None:
        history = tracked.initial
    else:
        tracked = None
    merge = labels_matter and reads is not None
    if merge:
        labels_matter = False
    limit = (max_threads, start, where)
    _close(
        program,
        (0, program.initial, 0, (), (), history),
        start,
        size,
        threads,
        set(),
        labels_matter,
        alive,
        merge,
        limit,
    )
    found: Found | None = None
    row = start
    while threads:
        following: list[Thread] = []
        seen: set[tuple[object, ...]] = set()
        for thread in threads:
            pc, counters, depth, labels, excluded, history = thread
            instruction = code[pc]
            if instruction[0] == MATCH:
                found = Found(row, tuple(labels), excluded)
                break  # lower-priority threads can only give less preferred matches
            if row < size:
                variable = instruction[1]
                grown: Sequence[int] = (
                    Labels(labels if isinstance(labels, Labels) else None, variable)
                    if tracked is not None
                    else (*labels, variable)
                )
                if (
                    tracked.condition(variable, grown, row, history)
                    if tracked is not None
                    else condition(variable, grown, row)  # type: ignore[arg-type]  # a tuple without tracking
                ):
                    moved = (*excluded, row) if depth else excluded
                    if tracked is not None:
                        history = tracked.advance(history, variable, grown, row)
                    elif merge:
                        assert reads is not None
                        history = _remember(history, reads, row, variable)
                    _close(
                        program,
                        (pc + 1, program.consumed(counters) if marked else counters, depth, grown, moved, history),
                        row + 1,
                        size,
                        following,
                        seen,
                        labels_matter,
                        alive,
                        merge,
                        limit,
                    )
        if len(following) > max_threads:
            raise _too_many(max_threads, start, where)
        threads = following
        row += 1
    return found


def _too_many(max_threads: int, start: int, where: tuple[Source | None, Span | None]) -> MatchError:
    return MatchError(
        f"more than {max_threads} live threads while matching from row {start}",
        where[0],
        where[1],
        hint="DEFINE conditions that read the match so far (aggregates, FIRST/LAST, CLASSIFIER) and nested "
        "counted quantifiers keep threads apart; narrow the pattern's quantifiers or raise max_threads",
    )


def _close(
    program: Program,
    thread: Thread,
    row: int,
    size: int,
    out: list[Thread],
    seen: set[tuple[object, ...]],
    labels_matter: bool,
    alive: Alive | None = None,
    merge: bool = False,
    limit: tuple[int, int, tuple[Source | None, Span | None]] | None = None,
) -> None:
    """Follow the non-consuming instructions from ``thread`` at ``row`` in
    preference order (depth first), appending the threads that wait on a row
    or a match to ``out``; a state already reached at this row is dropped."""
    code = program.code
    stack = [thread]
    while stack:
        thread = stack.pop()
        pc, counters, depth, labels, excluded, history = thread
        key: tuple[object, ...] = (pc, counters, depth)
        if labels_matter:
            key = (pc, counters, depth, labels)
        elif merge:
            key = (pc, counters, depth, history)
        if key in seen:
            continue
        seen.add(key)
        if alive is not None and not alive(row, (pc, counters, depth)):
            continue  # no match can complete from here
        instruction = code[pc]
        op = instruction[0]
        if op in (LABEL, MATCH):
            out.append(thread)
            if limit is not None and len(out) > limit[0]:
                raise _too_many(*limit)  # before a closure of nested counters runs away
        elif op == SPLIT:
            stack.append((instruction[2], counters, depth, labels, excluded, history))
            stack.append((instruction[1], counters, depth, labels, excluded, history))
        elif op == JMP:
            stack.append((instruction[1], counters, depth, labels, excluded, history))
        elif op == START:
            if row == 0:
                stack.append((pc + 1, counters, depth, labels, excluded, history))
        elif op == END:
            if row == size:
                stack.append((pc + 1, counters, depth, labels, excluded, history))
        elif op in (EXCL_IN, EXCL_OUT):
            stack.append((pc + 1, counters, depth + (1 if op == EXCL_IN else -1), labels, excluded, history))
        elif op == LOOP:
            _, loop, low, high, greedy, leave = instruction
            count = counters[loop]
            options = []
            if high < 0 or count < high:
                options.append((pc + 1, counters, depth, labels, excluded, history))
            if count >= low:
                reset = (*counters[:loop], 0, *counters[loop + 1 :])
                options.append((leave, reset, depth, labels, excluded, history))
            if not greedy:
                options.reverse()
            stack.extend(reversed(options))
        elif op == COUNT:
            _, loop, cap, head = instruction
            counted = (*counters[:loop], min(counters[loop] + 1, cap), *counters[loop + 1 :])
            stack.append((head, counted, depth, labels, excluded, history))
        else:
            assert op in (MARK, CHECK)
            for after in step(instruction, counters, program.loops) or ():
                stack.append((pc + 1, after, depth, labels, excluded, history))
