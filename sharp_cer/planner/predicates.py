"""The predicate table and transition guards.

Every transition of a plan's automata reads one event and fires when its
*guard* holds. A guard is a boolean formula over *atoms*; an atom is either
"the event has type R" or "the event, which has type R, satisfies condition
c" (a unary FILTER conjunct with every attribute reference pointing at the
event itself). Atoms live in one table per plan, so an atom that many queries
use is evaluated once per event (per batch, column by column, with numpy).

The engine turns an event into a bit vector (bit ``i`` set when atom ``i``
holds) and guards are evaluated on that integer, only when the
determinization cache misses.

>>> table = PredicateTable()
>>> a, b = table.type_atom("S", "A"), table.type_atom("S", "B")
>>> table.type_atom("S", "A") == a
True
>>> guard = AnyOf((Atom(a), Atom(b)))
>>> guard.holds(1 << b), Not(guard).holds(1 << b), TRUE.holds(0)
(True, False, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sharp_cer.language import ast, printer


@dataclass(frozen=True)
class TypeAtom:
    """The event is of type ``name`` in ``stream``.

    >>> TypeAtom("S", "A") == TypeAtom("S", "A")
    True
    """

    stream: str
    name: str


@dataclass(frozen=True)
class ConditionAtom:
    """The event, of type ``name`` in ``stream``, satisfies ``condition``:
    a condition whose attribute references all read that event (variables
    erased, so equal conditions on different variables share one atom).

    >>> ConditionAtom("S", "A", ast.BoolLiteral(True)).name
    'A'
    """

    stream: str
    name: str
    condition: ast.Expr


AtomKey = TypeAtom | ConditionAtom


@dataclass
class PredicateTable:
    """The distinct atoms of a plan, numbered in order of first use.

    >>> t = PredicateTable(); t.type_atom("S", "B"), t.type_atom("S", "A"), t.atoms[1]
    (0, 1, TypeAtom(stream='S', name='A'))
    """

    atoms: list[AtomKey] = field(default_factory=list)
    _index: dict[AtomKey, int] = field(default_factory=dict)

    def _add(self, key: AtomKey) -> int:
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.atoms)
            self.atoms.append(key)
        return found

    def type_atom(self, stream: str, name: str) -> int:
        """The index of the atom "event has this type".

        >>> PredicateTable().type_atom("S", "A")
        0
        """
        return self._add(TypeAtom(stream, name))

    def condition_atom(self, stream: str, name: str, condition: ast.Expr) -> int:
        """The index of the atom "event of this type satisfies ``condition``".

        >>> t = PredicateTable()
        >>> x = ast.Comparison(">", ast.AttributeRef(None, "x"), ast.NumberLiteral(1))
        >>> t.condition_atom("S", "A", x), t.condition_atom("S", "A", x), len(t)
        (0, 0, 1)
        """
        return self._add(ConditionAtom(stream, name, condition))

    def __len__(self) -> int:
        return len(self.atoms)


# ---------------------------------------------------------------- guards


@dataclass(frozen=True)
class Atom:
    """Atom ``index`` holds.

    >>> Atom(1).holds(0b10), Atom(0).holds(0b10)
    (True, False)
    """

    index: int

    def holds(self, bits: int) -> bool:
        """Evaluate on a bit vector (see the class example)."""
        return bool(bits >> self.index & 1)


@dataclass(frozen=True)
class Not:
    """The guard does not hold.

    >>> Not(Atom(0)).holds(0)
    True
    """

    guard: Guard

    def holds(self, bits: int) -> bool:
        """Evaluate on a bit vector (see the class example)."""
        return not self.guard.holds(bits)


@dataclass(frozen=True)
class AllOf:
    """Every guard holds (``AllOf(())`` is true).

    >>> AllOf((Atom(0), Atom(1))).holds(0b01), AllOf(()).holds(0)
    (False, True)
    """

    guards: tuple[Guard, ...]

    def holds(self, bits: int) -> bool:
        """Evaluate on a bit vector (see the class example)."""
        return all(g.holds(bits) for g in self.guards)


@dataclass(frozen=True)
class AnyOf:
    """Some guard holds (``AnyOf(())`` is false).

    >>> AnyOf((Atom(0), Atom(1))).holds(0b01), AnyOf(()).holds(0)
    (True, False)
    """

    guards: tuple[Guard, ...]

    def holds(self, bits: int) -> bool:
        """Evaluate on a bit vector (see the class example)."""
        return any(g.holds(bits) for g in self.guards)


Guard = Atom | Not | AllOf | AnyOf

#: The guard of a skip loop: any event.
TRUE: Guard = AllOf(())
#: A guard no event satisfies.
FALSE: Guard = AnyOf(())


def guard_atoms(guard: Guard) -> frozenset[int]:
    """The atoms a guard reads.

    >>> sorted(guard_atoms(AllOf((Atom(2), Not(AnyOf((Atom(0), Atom(2))))))))
    [0, 2]
    """
    if isinstance(guard, Atom):
        return frozenset((guard.index,))
    if isinstance(guard, Not):
        return guard_atoms(guard.guard)
    return frozenset().union(*(guard_atoms(g) for g in guard.guards))


def describe(guard: Guard, table: PredicateTable) -> str:
    """A guard in CEQL-like words, for plans shown to people.

    >>> t = PredicateTable(); a = t.type_atom("S", "A")
    >>> x = ast.Comparison(">", ast.AttributeRef(None, "x"), ast.NumberLiteral(1))
    >>> describe(AllOf((Atom(a), Atom(t.condition_atom("S", "A", x)))), t), describe(TRUE, t), describe(Not(Atom(a)), t)
    ('A & A[x > 1]', 'any', 'not A')
    """
    if isinstance(guard, Atom):
        atom = table.atoms[guard.index]
        if isinstance(atom, TypeAtom):
            return atom.name
        return f"{atom.name}[{printer.expr(atom.condition)}]"
    if isinstance(guard, Not):
        return f"not {describe(guard.guard, table)}"
    if not guard.guards:
        return "any" if isinstance(guard, AllOf) else "none"
    parts = [
        f"({describe(g, table)})" if isinstance(g, (AllOf, AnyOf)) and len(g.guards) > 1 else describe(g, table)
        for g in guard.guards
    ]
    return (" & " if isinstance(guard, AllOf) else " | ").join(parts)
