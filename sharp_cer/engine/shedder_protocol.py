"""The seam through which a load shedder watches and prunes the engine;
the shedders themselves live in the ``shedding`` layer.

The engine asks a :class:`Shedder` once per query group for a
:class:`QueryGroupShedder` (None: that group is never shed), handing it the
group as a :class:`QueryGroupView` (its queries, the PSD bitmaps of its states,
its live partial matches, and the one way to take some out), and calls it
at five points of Algorithm 1:

* ``admit(row, progress)`` before an event is processed: False sheds the
  event for the group (input shedding; the group's state does not see it);
  then ``discards(progress)`` (optional: a shedder without it creates
  every partial match): which new partial matches not to create at all
  (those the shedder would take out at creation anyway);
* ``enumeration(query, progress)`` before a query's matches of an event are
  enumerated, with where the event stands (:class:`Progress`: its update
  units so far and its latency so far, queueing included): how to walk
  (:class:`WalkControl`: the step limit, the order, the keep-mask bit and
  a callback for the nodes the walk tests);
* ``enumerated(query, progress, walk, candidates)`` after it, with what the
  walk cost and the paths it found (to learn from);
* ``stepped(instance, outputs, row, progress)`` after the event, with the
  output nodes it created (the new partial matches) and their states; now
  the shedder may clear keep-mask bits of live partial matches (by view) or
  take them out of their union-lists (by instance, ``QueryGroupView.take_out``).

``ranking()`` tells the group in which order its queries enumerate the
matches of one event (one server: a query's matches wait for those of the
queries before it). Only queries that may be shed (``QueryPlan.sheddable``)
are asked about. ``latency_bounds()`` tells the engine which bound to
count each query's events over (``engine.queueing.QueueLog``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from sharp_cer.events.batch import EventBatch
from sharp_cer.planner.plan import QueryPlan

from .enumeration import EnumerationOrder, Walk
from .tecs import Node

#: (bottom position, marks) of a complete path, marks as ((position, label), ...)
Candidate = tuple[int, tuple[tuple[int, int], ...]]


class Progress(NamedTuple):
    """Where an event stands at some point of its service: ``floor``, the
    update units it has cost so far (condition checks and every group's
    step); ``service``, all its units so far (enumerations included);
    ``latency``, its latency so far in cost units (the time since it
    arrived, queueing included, times ``capacity``); ``capacity``, the cost
    units the engine serves per second (measured in wall mode);
    ``wall``, whether service is wall time (no capacity was given); and
    ``after``, the ids of the queries that enumerate the event's matches
    after the one about to (they share what is left of the budget)."""

    floor: int
    service: int
    latency: float
    capacity: float
    wall: bool
    after: tuple[int, ...] = ()


class WalkControl(NamedTuple):
    """How a shedder has a query's enumeration walk (see :class:`Walk`):
    its step limit, order and keep-mask bit (None: none) and the callback
    that sees every node it tests."""

    limit: int | None = None
    order: EnumerationOrder | None = None
    bit: int | None = None
    visit: Callable[[Node], None] | None = None


class QueryGroupView(Protocol):
    """What a shedder sees of one query group of the engine."""

    number: int  # the group's index in the plan
    queries: list[QueryPlan]

    @property
    def summaries(self) -> Any:
        """The group's condition summaries (``engine.conditions.Summaries``; None: no cross-event condition)."""
        ...

    @property
    def checks(self) -> Mapping[int, Sequence[Any]]:
        """Per query id, its cross-event filters' checks (``engine.conditions.FilterCheck``)."""
        ...

    @property
    def window_events(self) -> int | None:
        """The group's largest window in events (None: not counted in events)."""
        ...

    def psd_bit(self, query: int) -> int:
        """The PSD bit of the query with id ``query``."""
        ...

    def state_bitmap(self, state: int) -> int:
        """The PSD bitmap of a deterministic state: the queries its runs can still complete."""
        ...

    def partial_matches(self) -> Iterator[tuple[Any, int, list[Node]]]:
        """(partition, state, union-list) of every live state of every partition."""
        ...

    def union_list(self, partition: Any, state: int) -> list[Node] | None:
        """The live union-list of ``state`` in ``partition`` (None: none)."""
        ...

    def take_out(self, partition: Any, state: int, keep: list[bool]) -> int:
        """Take the entries of ``state``'s union-list whose ``keep`` flag is
        False out of it (shedding by instance); how many were taken."""
        ...


class QueryGroupShedder(Protocol):
    """One group's shedder (see the module docstring)."""

    def ranking(self) -> Sequence[int]:
        """The group's query ids in the order they enumerate an event's matches."""
        ...

    def begin_batch(self, batch: EventBatch) -> None:
        """A batch is about to be processed."""
        ...

    def admit(self, row: int, progress: Progress) -> bool:
        """Whether the group processes the batch's event at ``row``."""
        ...

    def discards(self, progress: Progress) -> Callable[[int, int, list[Node]], bool] | None:
        """At an event ``admit`` let in (``progress``: as ``admit`` saw it), the
        test of a new partial match the shedder would take out at creation
        whatever it is, given its deterministic state, its label and the
        union-list it would extend: the group then does not create it (the
        shedder counts it as shed). Never asked of a final state. None:
        every new partial match is created."""
        ...

    def enumeration(self, query: QueryPlan, progress: Progress) -> WalkControl:
        """How to walk ``query``'s matches now."""
        ...

    def enumerated(self, query: QueryPlan, progress: Progress, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """What enumerating ``query`` cost and found (``progress``: before the walk)."""
        ...

    def stepped(self, instance: Any, outputs: list[tuple[Node, int]], row: int, progress: Progress) -> None:
        """The event at ``row`` was processed in ``instance``; ``outputs`` are
        the (output node, deterministic state) pairs it created."""
        ...


class Shedder(Protocol):
    """A load shedder: a :class:`QueryGroupShedder` per query group, or None."""

    def for_group(self, group: QueryGroupView) -> QueryGroupShedder | None:
        """The shedder of ``group`` (None: never shed)."""
        ...

    def reconfigure(self, config: Any, running: Sequence[Any]) -> None:
        """Take ``config`` while the engine runs, for the queries ``running``
        (``Engine.update``); raise before changing anything if it cannot."""
        ...

    def latency_bounds(self) -> tuple[Mapping[str, float], Mapping[str, float]]:
        """The bounds the recorded latency is judged against, asked once the
        groups are made: per query, in milliseconds or else in cost units."""
        ...
