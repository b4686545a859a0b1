"""The hooks through which a load shedder watches and prunes the engine
(partial matches shed by view or by instance, input events shed); the
shedders themselves live in the ``shedding`` layer.

The engine asks a :class:`Shedder` once per group for a
:class:`GroupShedder` (None: that group is never shed) and calls it at four
points of Algorithm 1:

* ``admit(row)`` before an event is processed: False sheds the event for the
  group (input shedding; the group's state does not see it);
* ``enumeration(query, floor)`` before a query's matches of an event are
  enumerated, with the update units the event has cost so far: how to walk
  (:class:`WalkControl`: the step limit, the order, the keep-mask bit and
  a callback for the nodes the walk tests);
* ``enumerated(query, floor, walk, candidates)`` after it, with what the
  walk cost and the paths it found (to learn from);
* ``stepped(instance, outputs, row, floor)`` after the event, with the
  output nodes it created (the new partial matches) and their states, and
  the update units the event cost up to here; now the
  shedder may clear keep-mask bits of live partial matches (by view) or take
  them out of their union-lists (by instance, :func:`remove_partial_matches`).

Only queries that may be shed (``QueryPlan.sheddable``) are asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from planner.plan import QueryPlan
from sharp_cer.events.batch import EventBatch

from .enumeration import EnumerationOrder, Walk
from .tecs import Node

if TYPE_CHECKING:
    from .runtime import GroupRunner

#: (bottom position, marks) of a complete path, marks as ((position, label), ...)
Candidate = tuple[int, tuple[tuple[int, int], ...]]


class WalkControl(NamedTuple):
    """How a shedder has a query's enumeration walk (see :class:`Walk`):
    its step limit, order and keep-mask bit (None: none) and the callback
    that sees every node it tests."""

    limit: int | None = None
    order: EnumerationOrder | None = None
    bit: int | None = None
    visit: Callable[[Node], None] | None = None


class GroupShedder(Protocol):
    """One group's shedder (see the module docstring)."""

    def begin_batch(self, batch: EventBatch) -> None:
        """A batch is about to be processed."""
        ...

    def admit(self, row: int) -> bool:
        """Whether the group processes the batch's event at ``row``."""
        ...

    def enumeration(self, query: QueryPlan, floor: int) -> WalkControl:
        """How to walk ``query``'s matches now."""
        ...

    def enumerated(self, query: QueryPlan, floor: int, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """What enumerating ``query`` cost and found."""
        ...

    def stepped(self, instance: Any, outputs: list[tuple[Node, int]], row: int, floor: int) -> None:
        """The event at ``row`` was processed in ``instance``; ``outputs`` are
        the (output node, deterministic state) pairs it created; ``floor``
        its update units so far."""
        ...


class Shedder(Protocol):
    """A load shedder: a :class:`GroupShedder` per group, or None."""

    def for_group(self, runner: GroupRunner) -> GroupShedder | None:
        """The shedder of ``runner``'s group (None: never shed)."""
        ...


def remove_partial_matches(runner: GroupRunner, instance: Any, state: int, keep: list[bool]) -> int:
    """Take the partial matches of ``state``'s union-list in ``instance``
    whose ``keep`` flag is False out of the list (shedding by instance);
    return how many were taken. Nodes created from them before stay valid:
    a removed partial match is only never extended again.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from planner import compile_plan
    >>> from sharp_cer.engine import Engine
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))]))
    >>> events = load_csv("A,1\\nA,1\\nB,1\\n", s)[0]
    >>> _ = engine.process(events.take([0, 1]))
    >>> runner = engine.runners[0]
    >>> (instance,) = runner.instances.values()
    >>> (state, ulist), = instance.active.items()
    >>> remove_partial_matches(runner, instance, state, [True, False]), len(ulist)
    (1, 1)
    >>> [(m.start, m.end) for m in engine.process(events.take([2]))]  # only the kept one goes on
    [(1, 2)]
    """
    ulist = instance.active[state]
    kept = [node for node, flag in zip(ulist, keep, strict=True) if flag]
    removed = len(ulist) - len(kept)
    if not removed:
        return 0
    instance.merged.pop(state, None)  # its cached union no longer fits the list
    if kept:
        ulist[:] = kept
    else:
        del instance.active[state]
        if runner.index is not None:
            runner.index.moved((state,), ())
    return removed
