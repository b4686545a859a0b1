"""Hypothesis strategies for random, syntactically valid CEQL syntax trees.

Every value drawn here is a tree the parser can produce: printing it with
``sharp_cer.language.printer`` and parsing the text back yields an equal tree.
That means, for instance, that number literals are never negative (``-5`` is
``Negate(NumberLiteral(5))``), unary ``+`` never appears (the parser drops it),
comparison operators are the normalized ones (``=`` and ``!=``), strategies and
consumption policies are upper case, name lists are never empty, and NOT(...) /
ABSENT(...) only wrap an event type, optionally under FILTERs.

The strategies are plain functions so other tests (the semantic checker, the
engine) can reuse them, usually with smaller pools of names, e.g.
``formulas(event_names=st.sampled_from(["A", "B"]))``.
"""

from __future__ import annotations

import re
import string as _string

from hypothesis import strategies as st

from sharp_cer.language import ast

#: Default bound on the number of leaves of recursive trees (keeps tests fast).
MAX_LEAVES = 12

#: Every keyword of the grammar (case-insensitive); such names need backquotes.
KEYWORDS = tuple(
    [
        "ABSENT",
        "ALL",
        "AND",
        "ANY",
        "AS",
        "BY",
        "CONSUME",
        "CREATE",
        "DECLARE",
        "EVENT",
        "EVENTS",
        "FALSE",
        "FILTER",
        "FROM",
        "HOUR",
        "HOURS",
        "IN",
        "LAST",
        "LIKE",
        "LIMIT",
        "MAX",
        "MINUTE",
        "MINUTES",
        "NEXT",
        "NONE",
        "NOT",
        "OR",
        "PARTITION",
        "RANGE",
        "SECOND",
        "SECONDS",
        "SELECT",
        "STREAM",
        "STRICT",
        "TRUE",
        "WHERE",
        "WITHIN",
    ]
)
_KEYWORD_SET = frozenset(KEYWORDS)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")

ARITHMETIC_OPS = ("+", "-", "*", "/", "%")
COMPARISON_OPS = ("<", "<=", ">", ">=", "=", "!=")
SEQUENCE_LINKS = (";", ":")
TIME_UNITS = ("hours", "minutes", "seconds", "milliseconds")


def is_plain_name(text: str) -> bool:
    """Whether ``text`` can be written without backquotes."""
    return bool(_PLAIN_NAME.match(text)) and text.upper() not in _KEYWORD_SET


# ---------------------------------------------------------------- names


def identifiers() -> st.SearchStrategy[str]:
    """Short plain identifiers (never keywords), e.g. ``a``, ``B_1``, ``_x``."""
    first = st.sampled_from(_string.ascii_letters + "_")
    rest = st.text(_string.ascii_letters + _string.digits + "_", max_size=3)
    return st.builds(lambda f, r: f + r, first, rest).filter(is_plain_name)


def keyword_names() -> st.SearchStrategy[str]:
    """Keywords in random letter case, e.g. ``select``, ``Or``, ``NONE``."""
    return st.builds(
        lambda kw, mask: "".join(c.lower() if m else c for c, m in zip(kw, mask, strict=False)),
        st.sampled_from(KEYWORDS),
        st.lists(st.booleans(), min_size=len(max(KEYWORDS, key=len)), max_size=len(max(KEYWORDS, key=len))),
    )


_AWKWARD_CHARS = st.one_of(
    st.sampled_from(" `'\"-;:>.,[]{}()+*/%=<!\n\t0123456789aZ_"),
    st.characters(),
)


def quoted_names() -> st.SearchStrategy[str]:
    """Non-empty names that need backquotes: keywords, or names with spaces,
    backquotes, punctuation, digits first or non-ASCII characters."""
    odd = st.text(_AWKWARD_CHARS, min_size=1, max_size=6).filter(lambda s: not is_plain_name(s))
    return st.one_of(keyword_names(), odd)


def names() -> st.SearchStrategy[str]:
    """Any name: mostly short identifiers, sometimes one that needs backquotes."""
    plain = identifiers()
    return st.one_of(plain, plain, plain, plain, quoted_names())


def name_tuples(
    elements: st.SearchStrategy[str] | None = None, *, min_size: int = 1, max_size: int = 3
) -> st.SearchStrategy[tuple[str, ...]]:
    """Tuples of names, as in ``[a, b]`` lists (non-empty by default)."""
    return st.lists(elements if elements is not None else names(), min_size=min_size, max_size=max_size).map(tuple)


# ---------------------------------------------------------------- literals


INT64_MAX = 2**63 - 1


def non_negative_numbers(largest: float = INT64_MAX) -> st.SearchStrategy[int | float]:
    """Non-negative ints (64-bit: the parser refuses larger literals) and
    finite non-negative floats (never ``-0.0``), up to ``largest``."""
    return st.one_of(
        st.integers(min_value=0, max_value=min(1000, int(largest))),
        st.integers(min_value=0, max_value=int(largest)),
        st.floats(min_value=0.0, max_value=float(largest), allow_nan=False, allow_infinity=False).map(abs),
    )


def number_literals() -> st.SearchStrategy[ast.NumberLiteral]:
    """``NumberLiteral`` with a non-negative int or finite float value."""
    return st.builds(ast.NumberLiteral, non_negative_numbers())


def signed_number_literals() -> st.SearchStrategy[ast.NumberLiteral | ast.Negate]:
    """A number literal, or ``Negate`` of one (how ``-5`` parses)."""
    return st.one_of(number_literals(), number_literals().map(ast.Negate))


def texts() -> st.SearchStrategy[str]:
    """Any text, biased towards quotes, comment markers and unicode."""
    return st.text(
        st.one_of(st.sampled_from("'`\"\\-/*\n.%_"), st.characters()),
        max_size=8,
    )


def string_literals() -> st.SearchStrategy[ast.StringLiteral]:
    """``StringLiteral`` holding any text (including quotes and unicode)."""
    return st.builds(ast.StringLiteral, texts())


def bool_literals() -> st.SearchStrategy[ast.BoolLiteral]:
    """``TRUE`` or ``FALSE``."""
    return st.builds(ast.BoolLiteral, st.booleans())


def attribute_refs(
    variables: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.AttributeRef]:
    """``attr`` or ``x.attr``."""
    variables = variables if variables is not None else names()
    attributes = attributes if attributes is not None else names()
    return st.builds(ast.AttributeRef, st.none() | variables, attributes)


def set_values() -> st.SearchStrategy[ast.NumberLiteral | ast.StringLiteral | ast.Negate]:
    """One item of an ``IN {...}`` set: a (possibly negated) number or a string."""
    return st.one_of(signed_number_literals(), string_literals())


# ---------------------------------------------------------------- conditions


def conditions(
    max_leaves: int = MAX_LEAVES,
    *,
    variables: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
    functions: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.Expr]:
    """Any expression tree, using every expression node type.

    Conditions are untyped here (``TRUE + 'a' < x`` is syntactically fine);
    the checker is the one that enforces types.
    """
    variables = variables if variables is not None else names()
    attributes = attributes if attributes is not None else names()
    functions = functions if functions is not None else names()

    leaves = st.one_of(
        number_literals(),
        string_literals(),
        bool_literals(),
        attribute_refs(variables, attributes),
    )

    def extend(children: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
        bound = st.none() | signed_number_literals()
        return st.one_of(
            st.builds(ast.Call, functions, st.lists(children, max_size=3).map(tuple)),
            st.builds(ast.Negate, children),
            st.builds(ast.Arithmetic, st.sampled_from(ARITHMETIC_OPS), children, children),
            st.builds(ast.Comparison, st.sampled_from(COMPARISON_OPS), children, children),
            st.builds(ast.InSet, children, st.lists(set_values(), min_size=1, max_size=4).map(tuple), st.booleans()),
            st.builds(ast.InInterval, children, bound, bound, st.booleans()),
            st.builds(ast.Between, children, children, children),
            st.builds(ast.Like, children, texts()),
            st.builds(ast.And, children, children),
            st.builds(ast.Or, children, children),
            st.builds(ast.Not, children),
            st.builds(ast.VariableFilter, variables, children),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


# ---------------------------------------------------------------- formulas


def event_types(
    event_names: st.SearchStrategy[str] | None = None,
    stream_names: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.EventType]:
    """``A`` or ``S>A``."""
    event_names = event_names if event_names is not None else names()
    stream_names = stream_names if stream_names is not None else names()
    return st.builds(ast.EventType, event_names, st.none() | stream_names)


def atomic_formulas(
    event_names: st.SearchStrategy[str] | None = None,
    stream_names: st.SearchStrategy[str] | None = None,
    filter_conditions: st.SearchStrategy[ast.Expr] | None = None,
) -> st.SearchStrategy[ast.EventType | ast.Filter]:
    """What NOT(...) and ABSENT(...) accept: an event type under 0 to 2 FILTERs."""
    filter_conditions = filter_conditions if filter_conditions is not None else conditions(4)

    def wrap(base: ast.EventType | ast.Filter, conds: list[ast.Expr]) -> ast.EventType | ast.Filter:
        for cond in conds:
            base = ast.Filter(base, cond)
        return base

    return st.builds(wrap, event_types(event_names, stream_names), st.lists(filter_conditions, max_size=2))


@st.composite
def _sequences(draw: st.DrawFn, parts: st.SearchStrategy[ast.Formula]) -> ast.Sequence:
    drawn = draw(st.lists(parts, min_size=2, max_size=4))
    links = draw(st.lists(st.sampled_from(SEQUENCE_LINKS), min_size=len(drawn) - 1, max_size=len(drawn) - 1))
    return ast.Sequence(tuple(drawn), tuple(links))


def formulas(
    max_leaves: int = MAX_LEAVES,
    *,
    event_names: st.SearchStrategy[str] | None = None,
    stream_names: st.SearchStrategy[str] | None = None,
    variables: st.SearchStrategy[str] | None = None,
    filter_conditions: st.SearchStrategy[ast.Expr] | None = None,
) -> st.SearchStrategy[ast.Formula]:
    """Any pattern: event types, AS, ``+``/``:+``, sequences, OR, AND(...),
    NOT(...), ABSENT(...) and FILTER, nested at random.

    ``filter_conditions`` defaults to small ``conditions()``; ``variables`` are
    the names introduced by AS.
    """
    variables = variables if variables is not None else names()
    filter_conditions = filter_conditions if filter_conditions is not None else conditions(4)
    atomic = atomic_formulas(event_names, stream_names, filter_conditions)
    leaves = st.one_of(
        event_types(event_names, stream_names),
        event_types(event_names, stream_names),
        st.builds(ast.Negation, atomic),
        st.builds(ast.Absence, atomic),
    )

    def extend(children: st.SearchStrategy[ast.Formula]) -> st.SearchStrategy[ast.Formula]:
        return st.one_of(
            st.builds(ast.Bind, children, variables),
            st.builds(ast.Iteration, children, st.booleans()),
            _sequences(children),
            st.builds(ast.Disjunction, children, children),
            st.builds(ast.Conjunction, st.lists(children, min_size=2, max_size=3).map(tuple)),
            st.builds(ast.Filter, children, filter_conditions),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


# ---------------------------------------------------------------- clauses


def projections(
    variables: st.SearchStrategy[str] | None = None,
    stream_names: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.Projection]:
    """``x``, ``S>x``, ``x[a, b]`` or ``S>x[a]`` in a SELECT list."""
    variables = variables if variables is not None else names()
    stream_names = stream_names if stream_names is not None else names()
    return st.builds(
        ast.Projection,
        variables,
        st.none() | stream_names,
        st.none() | name_tuples(attributes),
    )


def selections(
    variables: st.SearchStrategy[str] | None = None,
    stream_names: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.Selection]:
    """``*``, ``NONE`` or a non-empty tuple of projections."""
    return st.one_of(
        st.just(ast.SelectAll()),
        st.just(ast.SelectNone()),
        st.lists(projections(variables, stream_names, attributes), min_size=1, max_size=3).map(tuple),
    )


def strategies() -> st.SearchStrategy[str | None]:
    """No selection strategy, or one of ``ast.STRATEGIES``."""
    return st.none() | st.sampled_from(ast.STRATEGIES)


def consumption_policies() -> st.SearchStrategy[str | None]:
    """No CONSUME BY clause, or one of ``ast.CONSUMPTION_POLICIES``."""
    return st.none() | st.sampled_from(ast.CONSUMPTION_POLICIES)


def limits() -> st.SearchStrategy[int | None]:
    """No LIMIT clause, or a non-negative limit."""
    return st.none() | st.integers(min_value=0, max_value=10**9)


def partitions(attributes: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[tuple[tuple[str, ...], ...]]:
    """``PARTITION BY [a, b], [c]`` groups (possibly none)."""
    return st.lists(name_tuples(attributes), max_size=3).map(tuple)


@st.composite
def time_windows(draw: st.DrawFn) -> ast.TimeWindow:
    """``WITHIN h HOURS m MINUTES s SECONDS ms MILLISECONDS`` with any non-empty subset of units."""
    units = draw(st.sets(st.sampled_from(TIME_UNITS), min_size=1))
    # each unit below 2,000,000 keeps the window within int64 nanoseconds, the parser's limit
    return ast.TimeWindow(**{unit: draw(non_negative_numbers(2_000_000)) for unit in sorted(units)})


def windows(attributes: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[ast.Window]:
    """Every window kind: events, time, or attribute."""
    attributes = attributes if attributes is not None else names()
    sizes = st.one_of(st.integers(min_value=0, max_value=1000), st.integers(min_value=0, max_value=INT64_MAX))
    return st.one_of(
        st.builds(ast.EventWindow, sizes),
        time_windows(),
        st.builds(ast.AttributeWindow, sizes, attributes),
    )


def queries(
    max_leaves: int = MAX_LEAVES,
    *,
    patterns: st.SearchStrategy[ast.Formula] | None = None,
    selection: st.SearchStrategy[ast.Selection] | None = None,
    stream_names: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.Query]:
    """Whole queries with every clause present or absent at random."""
    return st.builds(
        ast.Query,
        selection=selection if selection is not None else selections(),
        pattern=patterns if patterns is not None else formulas(max_leaves),
        strategy=strategies(),
        streams=name_tuples(stream_names, min_size=0),
        partition_by=partitions(attributes),
        within=st.none() | windows(attributes),
        consume=consumption_policies(),
        limit=limits(),
    )


# ---------------------------------------------------------------- schemas


def attribute_decls(attributes: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[ast.AttributeDecl]:
    """``name:type`` with a type from ``ast.ATTRIBUTE_TYPES``."""
    return st.builds(
        ast.AttributeDecl,
        attributes if attributes is not None else names(),
        st.sampled_from(ast.ATTRIBUTE_TYPES),
    )


def event_decls(
    event_names: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.EventDecl]:
    """``EVENT A { ... }`` with zero to four attributes."""
    return st.builds(
        ast.EventDecl,
        event_names if event_names is not None else names(),
        st.lists(attribute_decls(attributes), max_size=4).map(tuple),
    )


def stream_decls(
    stream_names: st.SearchStrategy[str] | None = None,
    event_names: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[ast.StreamDecl]:
    """``CREATE STREAM S { EVENT ..., ... }`` with one to three event types."""
    return st.builds(
        ast.StreamDecl,
        stream_names if stream_names is not None else names(),
        st.lists(event_decls(event_names, attributes), min_size=1, max_size=3).map(tuple),
    )


def schemas(
    stream_names: st.SearchStrategy[str] | None = None,
    event_names: st.SearchStrategy[str] | None = None,
    attributes: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[tuple[ast.StreamDecl, ...]]:
    """A non-empty tuple of stream declarations (what a schema file holds)."""
    return st.lists(stream_decls(stream_names, event_names, attributes), min_size=1, max_size=3).map(tuple)
