"""Shared prefixes: many queries' automata merged into one (Sharp §3.1).

Two states are the same *prefix* when they are entered the same way: both
initial or both not, and the same moves (guard, label) from the same shared
states. :func:`share` hash-conses every state on that key, in an order where
a state's sources come first, so ``A ; B ; C ; D`` and ``A ; B ; E ; F``
keep one state for ``A`` and one for ``A ; B``. Guards compare by their
normalized atoms (the predicate table gives one atom per normalized
condition), labels by the variables they bind, named ``$0``, ``$1``, ... in
order of binding whatever the query calls them (``compile``), so tenants who
name variables apart still share.

A state on a cycle (Kleene) cannot wait for all its sources; such a strongly
connected part is keyed as a whole: the external moves into each member plus
its internal moves by position. The compiler numbers identical sub-patterns
identically, so identical loops still share.

Those parts are usually plain to see in the compiler's numbering: the states
between the two ends of a move that goes back in state order. When each such
run of states is a cycle, the runs are the strongly connected parts, in an
order where sources come first; only otherwise is networkx asked (its import
alone costs a ``match`` of a Kleene query a fifth of its start-up).

Why this is exact: by induction on the length of a run, every state merged
into a shared state is reached by exactly the same runs (sequences of guards
and labels) as the shared state, so adding all their outgoing moves and final
queries to it changes no query's matches.

>>> from sharp_cer.planner.predicates import TRUE, Atom
>>> from sharp_cer.planner.automaton import AutomatonBuilder
>>> def chain(atoms, query):
...     b = AutomatonBuilder(); states = [b.state() for _ in range(len(atoms) + 1)]
...     for i, atom in enumerate(atoms):
...         b.read(states[i], Atom(atom), atom, states[i + 1])
...     return b.epsilon_free({states[0]}, {states[-1]: query})
>>> shared = share([chain([0, 1, 2, 3], 0), chain([0, 1, 4, 5], 1), chain([0, 1, 4, 6], 2)])
>>> shared.n_states, prefix_states(shared)
(8, 7)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .automaton import Automaton, Transition


def share(automata: Sequence[Automaton]) -> Automaton:
    """One automaton accepting, for each query, exactly what its own
    automaton accepts, with equally entered states merged (see the module
    docstring). Each input must come from ``AutomatonBuilder.epsilon_free``.

    >>> from sharp_cer.planner.predicates import TRUE
    >>> from sharp_cer.planner.automaton import AutomatonBuilder
    >>> b = AutomatonBuilder(); s, e = b.state(), b.state(); b.read(s, TRUE, 0, e); b.read(e, TRUE, 0, e)
    >>> one = b.epsilon_free({s}, {e: 0})
    >>> two = Automaton(one.n_states, one.initial, one.transitions, {1: frozenset({1})})
    >>> share([one, two]).finals  # the loop is shared too
    {1: frozenset({0, 1})}
    """
    sharing = Sharing()
    for automaton in automata:
        sharing.add(automaton)
    return sharing.automaton()


class Sharing:
    """:func:`share` one automaton at a time: the hash-consed states so far,
    so that more queries can be shared into a running group later without
    sharing its queries again. A state keeps its number as automata are
    added (they only add states, and moves and queries to the states they
    share), which is what lets a running group's live state follow
    (``planner.compile.change_plan``). ``automaton(queries)`` keeps only
    the states from which one of ``queries`` can still be accepted.

    >>> from sharp_cer.planner.predicates import Atom
    >>> from sharp_cer.planner.automaton import AutomatonBuilder
    >>> def chain(atoms, query):
    ...     b = AutomatonBuilder(); states = [b.state() for _ in range(len(atoms) + 1)]
    ...     for i, atom in enumerate(atoms):
    ...         b.read(states[i], Atom(atom), atom, states[i + 1])
    ...     return b.epsilon_free({states[0]}, {states[-1]: query})
    >>> sharing = Sharing(); _ = sharing.add(chain([0, 1, 2], 0))
    >>> grown = sharing.copy(); grown.add(chain([0, 1, 3], 1))  # A ; B shared: one state more
    [0, 1, 2, 4]
    >>> sharing.automaton().n_states, grown.automaton().n_states, grown.automaton({1}).transition_count()
    (4, 5, 3)
    """

    def __init__(self) -> None:
        self._keys: dict[object, int] = {}
        self._moves: list[dict[tuple[object, int | None, int], None]] = []
        self._finals: dict[int, set[int]] = {}
        self._initial: set[int] = set()

    @property
    def n_states(self) -> int:
        """The shared states so far."""
        return len(self._moves)

    def copy(self) -> Sharing:
        """A sharing that grows apart from this one."""
        other = Sharing()
        other._keys = dict(self._keys)
        other._moves = [dict(m) for m in self._moves]
        other._finals = {s: set(q) for s, q in self._finals.items()}
        other._initial = set(self._initial)
        return other

    def add(self, automaton: Automaton) -> list[int]:
        """Share one more automaton in; return where each of its states went."""
        keys, moves = self._keys, self._moves
        incoming: list[list[Transition]] = [[] for _ in range(automaton.n_states)]
        cyclic = False
        for ts in automaton.transitions:
            for t in ts:
                incoming[t.target].append(t)
                cyclic = cyclic or t.source > t.target
        mapping = [-1] * automaton.n_states
        for component in _components(automaton) if cyclic else [[s] for s in range(automaton.n_states)]:
            key = _key(component, incoming, mapping, automaton.initial)
            base = keys.get(key)
            if base is None:
                base = keys[key] = len(moves)
                moves.extend({} for _ in component)
            for offset, state in enumerate(component):
                mapping[state] = base + offset
        for ts in automaton.transitions:
            for t in ts:
                moves[mapping[t.source]][(t.guard, t.label, mapping[t.target])] = None
        for state, queries in automaton.finals.items():
            self._finals.setdefault(mapping[state], set()).update(queries)
        self._initial.update(mapping[s] for s in automaton.initial)
        return mapping

    def automaton(self, queries: Collection[int] | None = None) -> Automaton:
        """The shared automaton; with ``queries``, only they are accepted
        and moves into states that can accept none of them are left out
        (those states stay, without moves: numbers do not change)."""
        finals = {s: frozenset(q if queries is None else q.intersection(queries)) for s, q in self._finals.items()}
        finals = {s: q for s, q in finals.items() if q}
        live = None if queries is None else self._coreachable(finals)
        transitions = tuple(
            tuple(
                Transition(source, guard, label, target)  # type: ignore[arg-type]
                for guard, label, target in out
                if live is None or target in live
            )
            if live is None or source in live
            else ()
            for source, out in enumerate(self._moves)
        )
        return Automaton(len(self._moves), frozenset(self._initial), transitions, finals)

    def _coreachable(self, finals: dict[int, frozenset[int]]) -> set[int]:
        """The states from which some final state is reachable."""
        back: list[list[int]] = [[] for _ in self._moves]
        for source, out in enumerate(self._moves):
            for _, _, target in out:
                back[target].append(source)
        seen = set(finals)
        todo = list(seen)
        while todo:
            for source in back[todo.pop()]:
                if source not in seen:
                    seen.add(source)
                    todo.append(source)
        return seen


def _components(automaton: Automaton) -> list[list[int]]:
    """The strongly connected parts, sources first, each in state order.

    >>> from sharp_cer.planner.predicates import TRUE
    >>> from sharp_cer.planner.automaton import AutomatonBuilder
    >>> b = AutomatonBuilder(); s = [b.state() for _ in range(5)]
    >>> for i in range(4): b.read(s[i], TRUE, 0, s[i + 1])
    >>> b.read(s[2], TRUE, 0, s[1]); b.read(s[3], TRUE, 0, s[3])
    >>> _components(b.epsilon_free({s[0]}, {s[4]: 0}))
    [[0], [1, 2], [3], [4]]
    """
    runs = _runs(automaton)
    if all(len(run) == 1 or _cycle(run, automaton) for run in runs):
        return runs
    import networkx as nx  # here, not at the top: its import costs 0.05-0.4 s that matching rarely needs

    graph = nx.DiGraph()
    graph.add_nodes_from(range(automaton.n_states))
    graph.add_edges_from((t.source, t.target) for ts in automaton.transitions for t in ts)
    dag = nx.condensation(graph)
    return [sorted(dag.nodes[c]["members"]) for c in nx.topological_sort(dag)]


def _runs(automaton: Automaton) -> list[list[int]]:
    """The states in order, cut into runs that no move going back crosses:
    a move from s back to t puts t..s in one run. Every cycle has such a
    move, so it lies in one run, and a move into a run from outside comes
    from an earlier run (from a later one it would go back, and put its
    source in the run): runs in order see their sources first."""
    reach = list(range(automaton.n_states))  # how far back-moves stretch each state's run
    for ts in automaton.transitions:
        for t in ts:
            if t.source > t.target:
                reach[t.target] = max(reach[t.target], t.source)
    runs: list[list[int]] = []
    end = -1
    for state in range(automaton.n_states):
        if state > end:
            runs.append([])
        runs[-1].append(state)
        end = max(end, reach[state])
    return runs


def _cycle(run: list[int], automaton: Automaton) -> bool:
    """Whether every state of ``run`` reaches every other inside it: its
    first state reaches them all, and they all reach it."""
    inside = set(run)
    ahead: dict[int, list[int]] = {s: [] for s in run}
    back: dict[int, list[int]] = {s: [] for s in run}
    for s in run:
        for t in automaton.transitions[s]:
            if t.target in inside:
                ahead[s].append(t.target)
                back[t.target].append(s)
    return all(_reached(run[0], moves) == inside for moves in (ahead, back))


def _reached(start: int, moves: dict[int, list[int]]) -> set[int]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in moves[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _key(component: list[int], incoming: list[list[Transition]], mapping: list[int], initial: frozenset[int]) -> object:
    """How the component's states are entered: moves from outside by shared
    state, moves inside by position in the component."""
    if len(component) == 1:
        (state,) = component
        return (
            state in initial,
            frozenset(
                (("self" if t.source == state else mapping[t.source]), t.guard, t.label) for t in incoming[state]
            ),
        )
    position = {s: i for i, s in enumerate(component)}
    return tuple(
        (
            s in initial,
            frozenset(
                (("in", position[t.source]) if t.source in position else mapping[t.source], t.guard, t.label)
                for t in incoming[s]
            ),
        )
        for s in component
    )


def prefix_states(automaton: Automaton) -> int:
    """How many states a marking move enters: one per non-empty prefix of a
    pattern, as Sharp counts the states of a plan (its Fig. 2). Skip states
    and the initial state are ways of waiting, not prefixes.

    >>> from sharp_cer.planner.predicates import TRUE
    >>> marks = Transition(0, TRUE, 0, 1)
    >>> prefix_states(Automaton(3, frozenset({0}), ((marks,), (Transition(1, TRUE, None, 2),), ()), {}))
    1
    """
    return len({t.target for ts in automaton.transitions for t in ts if t.label is not None})
