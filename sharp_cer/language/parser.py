"""Text to AST: the LALR parser over ``ceql.lark`` and its transformer.

>>> q = parse_query("SELECT * FROM S WHERE SELL AS s ; BUY FILTER s[price > 100]")
>>> q.pattern.condition.condition
Comparison(op='>', left=AttributeRef(variable=None, attribute='price'), right=NumberLiteral(value=100))
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

from sharp_cer.errors import LanguageError, kind_of

from . import ast
from .diagnostics import (
    MAX_NESTING,
    CeqlSyntaxError,
    InvalidLiteralError,
    NestingLimitError,
    QueryError,
    did_you_mean,
    text_kind,
)
from .driver import REFUSED, FusedParser, UnsupportedTable, plain_table
from .grammar_cache import load_table, save_table, table_file
from .scan import Token
from .source import Source, Span, lines_of

if TYPE_CHECKING:  # lark is imported only to explain a refused text (or on a first run, to build the table)
    from lark import Lark
    from lark.exceptions import UnexpectedInput, UnexpectedToken


@functools.cache
def _grammar() -> str:
    return resources.files("sharp_cer.language").joinpath("ceql.lark").read_text()


@functools.cache
def _lark() -> Lark:
    from lark import Lark

    from .grammar_cache import cache_file
    from .lexer import CeqlLexer

    return Lark(
        _grammar(),
        parser="lalr",
        lexer=CeqlLexer,
        start=["query", "schema"],
        keep_all_tokens=True,  # spans need every token; each _reducer drops them as lark would
        maybe_placeholders=True,
        # no parse tree: each rule's AST is built as the LALR parser reduces it
        transformer=_reducers(),
        # the analysed grammar, kept between processes (0.08 s to build, 0.005 s to load)
        cache=cache_file(_grammar(), "ceql"),
    )


@functools.cache
def _fused() -> FusedParser | None:
    """The fused loop: its plain table from the user's cache (no lark
    imported), else made from lark's analysis and kept there; None if lark
    built callbacks the loop cannot run (lark then parses every text)."""
    path = table_file(_grammar())
    table = load_table(path) if path is not None else None
    if table is not None:
        try:
            return FusedParser(table, _reducers())
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # a damaged file: made again below
    try:
        table = plain_table(_lark())
    except UnsupportedTable:  # pragma: no cover - a lark that wraps callbacks otherwise
        return None
    if path is not None:
        save_table(path, table)
    return FusedParser(table, _reducers())


def _parse(text: str, start: str) -> Any:
    """lark's parse of ``text`` from ``start``, run by the fused loop; where
    that refuses the text, lark's own parser raises the located error."""
    if text.__class__ is str:  # else lark says what is wrong with it, as before
        fused = _fused()
        if fused is not None:
            root = fused.parse(text, start)
            if root is not REFUSED:
                return root
    return _lark().parse(text, start=start)


def _parsed(src: Source, start: str, what: str) -> Any:
    """The AST of ``src`` parsed from ``start``, or its located QueryError."""
    try:
        return _finish(_parse(src.text, start))
    except _Problem as problem:
        raise problem.error(src) from None
    except Exception as exc:
        # only lark's parser raises its errors: it is imported by then
        from lark.exceptions import UnexpectedInput

        if isinstance(exc, UnexpectedInput):
            raise _syntax_error(exc, src, what) from None
        raise


def _token_span(token: Token) -> Span:
    return Span(
        token.line or 1,
        token.column or 1,
        token.end_line or token.line or 1,
        token.end_column or (token.column or 1) + len(token),
    )


def unquote_name(text: str) -> str:
    """A name as written, without backquotes.

    >>> unquote_name("`my name`")
    'my name'
    """
    if text.startswith("`"):
        return text[1:-1].replace("``", "`")
    return text


def _string(token: Token) -> str:
    return token[1:-1].replace("''", "'")


_COMPARE_ALIASES = {"==": "=", "<>": "!="}


class _Interval:
    """The two bounds of ``{low..high}`` while the IN around them is built."""

    __slots__ = ("high", "low")

    def __init__(self, low: Any, high: Any) -> None:
        self.low = low
        self.high = high


def _spanless(method: Any) -> Any:
    """Marks a rule method that does not read its span (a name, a clause
    that only passes values up): its reducer makes none."""
    method.spanless = True
    return method


class _ToAst:
    """Maps parse-tree rules to AST nodes: one method per rule or alias, called
    with the rule's span and its children (punctuation and keywords removed)."""

    # parentheses: the tree keeps them (for spans); the value is what is inside
    @_spanless
    def primary(self, span: Span | None, children: list[Any]) -> Any:
        return children[0]

    atom = primary

    # names and literals
    @_spanless
    def name(self, span: Span | None, children: list[Token]) -> str:
        return unquote_name(str(children[0]))

    def integer(self, span: Span | None, children: list[Token]) -> ast.NumberLiteral:
        return ast.NumberLiteral(_integer(children[0], span), span=span)

    def decimal(self, span: Span | None, children: list[Token]) -> ast.NumberLiteral:
        return ast.NumberLiteral(_decimal(children[0], span), span=span)

    def string(self, span: Span | None, children: list[Token]) -> ast.StringLiteral:
        return ast.StringLiteral(_string(children[0]), span=span)

    def true(self, span: Span | None, children: list[Token]) -> ast.BoolLiteral:
        return ast.BoolLiteral(True, span=span)

    def false(self, span: Span | None, children: list[Token]) -> ast.BoolLiteral:
        return ast.BoolLiteral(False, span=span)

    # expressions
    def attribute(self, span: Span | None, children: list[Any]) -> ast.AttributeRef:
        return ast.AttributeRef(None, children[0], span=span)

    def qualified_attribute(self, span: Span | None, children: list[Any]) -> ast.AttributeRef:
        return ast.AttributeRef(children[0], children[1], span=span)

    def call(self, span: Span | None, children: list[Any]) -> ast.Call:
        args = tuple(c for c in children[1:] if c is not None)
        return ast.Call(children[0], args, span=span)

    def variable_filter(self, span: Span | None, children: list[Any]) -> ast.VariableFilter:
        return ast.VariableFilter(children[0], children[1], span=span)

    def negate(self, span: Span | None, children: list[Any]) -> ast.Expr:
        sign, operand = children
        if sign == "+":
            return operand  # type: ignore[no-any-return]
        return ast.Negate(operand, span=span)

    def arith(self, span: Span | None, children: list[Any]) -> ast.Arithmetic:
        left, op, right = children
        return ast.Arithmetic(str(op), left, right, span=span)

    @_spanless
    def compare_op(self, span: Span | None, children: list[Token]) -> str:
        return str(children[0])

    def compare(self, span: Span | None, children: list[Any]) -> ast.Comparison:
        left, op, right = children
        return ast.Comparison(_COMPARE_ALIASES.get(str(op), str(op)), left, right, span=span)

    @_spanless
    def value_set(self, span: Span | None, children: list[Any]) -> tuple[Any, ...]:
        return tuple(children)

    @_spanless
    def value_range(self, span: Span | None, children: list[Any]) -> _Interval:
        low, _dots, high = children
        return _Interval(low, high)

    def set_number(self, span: Span | None, children: list[Any]) -> Any:
        sign, number = children
        if sign == "-":
            return ast.Negate(number, span=span)
        return number

    def in_set(self, span: Span | None, children: list[Any]) -> ast.Expr:
        return self._in(span, children, negated=False)

    def not_in_set(self, span: Span | None, children: list[Any]) -> ast.Expr:
        return self._in(span, children, negated=True)

    def _in(self, span: Span | None, children: list[Any], *, negated: bool) -> ast.Expr:
        operand, values = children
        if isinstance(values, _Interval):
            return ast.InInterval(operand, values.low, values.high, negated, span=span)
        return ast.InSet(operand, values, negated, span=span)

    def in_range(self, span: Span | None, children: list[Any]) -> ast.Between:
        operand, low, high = children
        return ast.Between(operand, low, high, span=span)

    def like(self, span: Span | None, children: list[Any]) -> ast.Like:
        operand, pattern = children
        return ast.Like(operand, _string(pattern), span=span)

    def and_(self, span: Span | None, children: list[Any]) -> ast.And:
        return ast.And(children[0], children[1], span=span)

    def or_(self, span: Span | None, children: list[Any]) -> ast.Or:
        return ast.Or(children[0], children[1], span=span)

    def not_(self, span: Span | None, children: list[Any]) -> ast.Not:
        return ast.Not(children[0], span=span)

    # formulas
    def event_ref(self, span: Span | None, children: list[Any]) -> tuple[str | None, str, Span | None]:
        if len(children) == 2:
            return (children[0], children[1], span)
        return (None, children[0], span)

    def event_type(self, span: Span | None, children: list[Any]) -> ast.EventType:
        stream, name, span = children[0]
        return ast.EventType(name, stream, span=span)

    def filtered_event(self, span: Span | None, children: list[Any]) -> ast.Filter:
        # ``F[cond]`` inside NOT/ABSENT is ``F FILTER F[cond]``, the same tree
        stream, name, ref_span = children[0]
        event = ast.EventType(name, stream, span=ref_span)
        return ast.Filter(event, ast.VariableFilter(name, children[1], span=span), span=span)

    def bind(self, span: Span | None, children: list[Any]) -> ast.Bind:
        return ast.Bind(children[0], children[1], span=span)

    def iteration(self, span: Span | None, children: list[Any]) -> ast.Iteration:
        return ast.Iteration(children[0], False, span=span)

    def contiguous_iteration(self, span: Span | None, children: list[Any]) -> ast.Iteration:
        return ast.Iteration(children[0], True, span=span)

    @_spanless
    def add_op(self, span: Span | None, children: list[Token]) -> str:
        return str(children[0])

    @_spanless
    def mul_op(self, span: Span | None, children: list[Token]) -> str:
        return str(children[0])

    def sequence(self, span: Span | None, children: list[Any]) -> ast.Sequence:
        parts = tuple(children[0::2])
        links = tuple(str(t) for t in children[1::2])
        return ast.Sequence(parts, links, span=span)

    def disjunction(self, span: Span | None, children: list[Any]) -> ast.Disjunction:
        return ast.Disjunction(children[0], children[1], span=span)

    def conjunction(self, span: Span | None, children: list[Any]) -> ast.Conjunction:
        return ast.Conjunction(tuple(children), span=span)

    def negation(self, span: Span | None, children: list[Any]) -> ast.Negation:
        return ast.Negation(children[0], span=span)

    def absence(self, span: Span | None, children: list[Any]) -> ast.Absence:
        return ast.Absence(children[0], span=span)

    def filter(self, span: Span | None, children: list[Any]) -> ast.Filter:
        return ast.Filter(children[0], children[1], span=span)

    # clauses
    @_spanless
    def strategy(self, span: Span | None, children: list[Token]) -> str:
        return str(children[0]).upper()

    def select_all(self, span: Span | None, children: list[Any]) -> ast.SelectAll:
        return ast.SelectAll(span=span)

    def select_none(self, span: Span | None, children: list[Any]) -> ast.SelectNone:
        return ast.SelectNone(span=span)

    def projection(self, span: Span | None, children: list[Any]) -> ast.Projection:
        stream, name, _ = children[0]
        attrs = tuple(children[1]) if children[1] is not None else None
        return ast.Projection(name, stream, attrs, span=span)

    @_spanless
    def select_list(self, span: Span | None, children: list[Any]) -> tuple[ast.Projection, ...]:
        return tuple(children)

    @_spanless
    def name_list(self, span: Span | None, children: list[Any]) -> list[str]:
        return list(children)

    @_spanless
    def select_clause(self, span: Span | None, children: list[Any]) -> tuple[str | None, ast.Selection]:
        return (children[0], children[1])

    @_spanless
    def from_clause(self, span: Span | None, children: list[Any]) -> tuple[str, ...]:
        return tuple(children)

    @_spanless
    def partition_clause(self, span: Span | None, children: list[Any]) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(c) for c in children)

    @_spanless
    def within_clause(self, span: Span | None, children: list[Any]) -> ast.Window:
        return children[0]  # type: ignore[no-any-return]

    def events_window(self, span: Span | None, children: list[Any]) -> ast.EventWindow:
        return ast.EventWindow(_integer(children[0], span), span=span)

    def attribute_window(self, span: Span | None, children: list[Any]) -> ast.AttributeWindow:
        return ast.AttributeWindow(_integer(children[0], span), children[1], span=span)

    def time_window(self, span: Span | None, children: list[Any]) -> ast.TimeWindow:
        parts: dict[str, int | float] = {}
        for kind, value in children[0]:
            parts[kind] = value
        window = ast.TimeWindow(**parts, span=span)  # type: ignore[arg-type]
        # times are int64 nanoseconds: a longer window cannot be compared with them
        seconds = (window.hours or 0) * 3600 + (window.minutes or 0) * 60 + (window.seconds or 0)
        seconds += (window.milliseconds or 0) / 1000
        if not seconds * 1_000_000_000 <= _INT64_MAX:
            raise _Problem(
                InvalidLiteralError,
                "the window is longer than times can be (about 292 years)",
                span,
                "a window up to 9,223,372,036 seconds (int64 nanoseconds)",
                "drop WITHIN to match over the whole stream",
            )
        return window

    @_spanless
    def time_span(self, span: Span | None, children: list[Any]) -> list[tuple[str, int | float]]:
        return [c for c in children if c is not None]

    @_spanless
    def hours(self, span: Span | None, children: list[Any]) -> tuple[str, int | float]:
        return ("hours", children[0].value)

    @_spanless
    def minutes(self, span: Span | None, children: list[Any]) -> tuple[str, int | float]:
        return ("minutes", children[0].value)

    @_spanless
    def seconds(self, span: Span | None, children: list[Any]) -> tuple[str, int | float]:
        return ("seconds", children[0].value)

    @_spanless
    def milliseconds(self, span: Span | None, children: list[Any]) -> tuple[str, int | float]:
        return ("milliseconds", children[0].value)

    @_spanless
    def consume_clause(self, span: Span | None, children: list[Token]) -> str:
        return str(children[0]).upper()

    def limit_clause(self, span: Span | None, children: list[Token]) -> int:
        return _integer(children[0], span)

    def query(self, span: Span | None, children: list[Any]) -> ast.Query:
        (strategy, selection), streams, pattern, partition, within, consume, limit = children
        return ast.Query(
            selection=selection,
            pattern=pattern,
            strategy=strategy,
            streams=streams or (),
            partition_by=partition or (),
            within=within,
            consume=consume,
            limit=limit,
            span=span,
        )

    # schemas
    def attribute_decl(self, span: Span | None, children: list[Any]) -> ast.AttributeDecl:
        return ast.AttributeDecl(children[0], children[2], span=span)

    def event_decl(self, span: Span | None, children: list[Any]) -> ast.EventDecl:
        attrs = tuple(c for c in children[1:] if c is not None)
        return ast.EventDecl(children[0], attrs, span=span)

    def stream_decl(self, span: Span | None, children: list[Any]) -> ast.StreamDecl:
        return ast.StreamDecl(children[0], tuple(children[1:]), span=span)

    @_spanless
    def schema(self, span: Span | None, children: list[Any]) -> tuple[ast.StreamDecl, ...]:
        return tuple(children)


@functools.cache
def _token_rules() -> tuple[frozenset[str], frozenset[str]]:
    """The terminals the grammar names itself and the rules written with ``!``.

    lark keeps exactly these tokens in a tree without ``keep_all_tokens``:
    named terminals not starting with ``_``, and every token of a ``!`` rule.
    """
    text = _grammar()
    named = frozenset(re.findall(r"^([A-Z][A-Z_0-9]*)(?:\.\d+)?\s*:", text, re.MULTILINE))
    kept = frozenset(re.findall(r"^\??!([a-z_][a-z_0-9]*)\s*:", text, re.MULTILINE))
    return named, kept


class _Problem(Exception):
    """A located problem found while building the AST; the parse functions
    turn it into a :class:`QueryError` of ``kind`` with the source."""

    def __init__(self, kind: type[QueryError], message: str, span: Span | None, expected: str, hint: str) -> None:
        super().__init__(message)
        self.kind, self.message, self.span, self.expected, self.hint = kind, message, span, expected, hint

    def error(self, source: Source) -> QueryError:
        return self.kind(self.message, source, self.span, expected=self.expected, hint=self.hint)


# Rules that only hold parentheses: they add no nesting to the AST.
_TRANSPARENT = frozenset({"primary", "atom"})
_INT64_MAX = 2**63 - 1

# What a reducer returns, in place of a parse-tree node: the rule's AST value,
# the first and last tokens under it (its span), its height in operators
# (parentheses not counted), its rule and children (read only to locate a
# nesting error), and the first problem met under it with the last token of
# the node that met it (or None).
_Reduced = tuple[Any, Any, Any, int, str, list[Any], Any]


def _reducer(rule: str, method: Any, keep_all: bool, kept_types: frozenset[str]) -> Any:
    """lark's callback for ``rule``: ``method`` (a :class:`_ToAst` method)
    applied to the children lark's tree would have, with the rule's span.

    A problem (a literal out of range, ...) is carried up, not raised, so
    that a syntax error later in the text is reported first, as when the
    whole text was parsed before any AST was built; ``_finish`` raises it.
    """
    extra = 0 if rule in _TRANSPARENT else 1
    spanned = not getattr(method, "spanless", False)
    build = _builder(rule, method, keep_all, kept_types)

    def reduce(children: list[Any]) -> _Reduced:
        if len(children) == 1:
            child: Any = children[0]
            if isinstance(child, str):
                # one token (a literal, an operator): about half the calls
                token: Any = child  # (not narrowed to Token: its positions are set)
                kept: list[Any] = [token] if keep_all or token.type in kept_types else []
                span = Span(token.line, token.column, token.end_line, token.end_column) if spanned else None
                try:
                    return (method(span, kept), token, token, extra, rule, children, None)
                except _Problem as found:
                    return (None, token, token, extra, rule, children, (found, token))
            if child.__class__ is tuple and child[6] is None and child[1] is not None:
                # one node (an attribute's or an event type's name): build's steps, unrolled
                first, last = child[1], child[2]
                span = Span(first.line, first.column, last.end_line, last.end_column) if spanned else None
                try:
                    return (method(span, [child[0]]), first, last, child[3] + extra, rule, children, None)
                except _Problem as found:
                    return (None, first, last, child[3] + extra, rule, children, (found, last))
        return build(children)  # type: ignore[no-any-return]

    return reduce


def _builder(rule: str, method: Any, keep_all: bool, kept_types: frozenset[str]) -> Any:
    """``rule``'s node made from its children (reduced nodes and tokens)."""
    extra = 0 if rule in _TRANSPARENT else 1
    spanned = not getattr(method, "spanless", False)

    def build(children: list[Any]) -> _Reduced:
        kept = []
        first: Any = None
        last: Any = None
        problem: Any = None
        height = 0
        for child in children:
            if child.__class__ is tuple:
                kept.append(child[0])
                if child[1] is not None:
                    if first is None:
                        first = child[1]
                    last = child[2]
                if child[3] > height:
                    height = child[3]
                if problem is None:
                    problem = child[6]
            elif child is None:
                kept.append(None)
            else:
                if first is None:
                    first = child
                last = child
                if keep_all or child.type in kept_types:
                    kept.append(child)
        value = None
        if problem is None:
            span = None
            if spanned and first is not None:
                span = Span(first.line, first.column, last.end_line, last.end_column)
            try:
                value = method(span, kept)
            except _Problem as found:
                problem = (found, last)
        return (value, first, last, height + extra, rule, children, problem)

    return build


# Flat operator lists of the grammar (``*_chain``) and the binary rules they
# stand for, with each operator's precedence (higher binds tighter).
_ARITH_LEVELS = {"add_op": 1, "mul_op": 2}
_LOGIC_LEVELS = {"_OR": 1, "_AND": 2}


def _fold(children: list[Any], level: Any, build: Any) -> Any:
    """The left-associative tree of ``operand (op operand)*`` by precedence
    (``level(op)``, higher binds tighter), each node ``build(op, [left, op,
    right])``: the nodes, spans and heights one grammar rule per level gives."""
    operands = [children[0]]
    ops: list[Any] = []
    for i in range(1, len(children), 2):
        op = children[i]
        rank = level(op)
        while ops and level(ops[-1]) >= rank:
            right = operands.pop()
            top = ops.pop()
            operands.append(build(top, [operands.pop(), top, right]))
        ops.append(op)
        operands.append(children[i + 1])
    while ops:
        right = operands.pop()
        top = ops.pop()
        operands.append(build(top, [operands.pop(), top, right]))
    return operands[0]


def _prefixed(children: list[Any], is_prefix: Any, build: Any) -> list[Any]:
    """``children`` with each operand's prefix operators (signs, NOT) made
    into its nodes, innermost first: operands and binary operators alternate."""
    flat: list[Any] = []
    prefixes: list[Any] = []
    operand_next = True
    for child in children:
        if not operand_next:
            flat.append(child)
            operand_next = True
        elif is_prefix(child):
            prefixes.append(child)
        else:
            while prefixes:
                child = build([prefixes.pop(), child])
            flat.append(child)
            operand_next = False
    return flat


def _chain_reducers(bang: frozenset[str], kept_types: frozenset[str]) -> dict[str, Any]:
    """The reducers of the grammar's flat operator lists."""
    to_ast = _ToAst()

    def builder(rule: str, method: Any) -> Any:
        return _builder(rule, method, rule in bang, kept_types)

    arith, negate = builder("arith", to_ast.arith), builder("negate", to_ast.negate)
    and_, or_, not_ = builder("and_", to_ast.and_), builder("or_", to_ast.or_), builder("not_", to_ast.not_)
    sequence, disjunction = builder("sequence", to_ast.sequence), builder("disjunction", to_ast.disjunction)

    def arith_level(op: Any) -> int:
        return _ARITH_LEVELS[op[4]]

    def logic_level(op: Any) -> int:
        return _LOGIC_LEVELS[op.type]

    def logic_node(op: Any, children: list[Any]) -> Any:
        return and_(children) if op.type == "_AND" else or_(children)

    def is_sign(item: Any) -> bool:
        return item[4] == "add_op"  # type: ignore[no-any-return]

    def is_not(item: Any) -> bool:
        return isinstance(item, str) and item.type == "_NOT"  # type: ignore[attr-defined,no-any-return]

    def arith_chain(children: list[Any]) -> Any:
        return _fold(_prefixed(children, is_sign, negate), arith_level, lambda op, c: arith(c))

    def logic_chain(children: list[Any]) -> Any:
        return _fold(_prefixed(children, is_not, not_), logic_level, logic_node)

    def pattern_chain(children: list[Any]) -> Any:
        # OR is loosest: ';'/':' runs between ORs are Sequences, ORs fold left
        groups = [[children[0]]]
        ors = []
        for i in range(1, len(children), 2):
            op = children[i]
            if op.type == "_OR":
                ors.append(op)
                groups.append([children[i + 1]])
            else:
                groups[-1] += (op, children[i + 1])
        node = groups[0][0] if len(groups[0]) == 1 else sequence(groups[0])
        for op, group in zip(ors, groups[1:], strict=True):
            right = group[0] if len(group) == 1 else sequence(group)
            node = disjunction([node, op, right])
        return node

    return {"arith_chain": arith_chain, "logic_chain": logic_chain, "pattern_chain": pattern_chain}


@functools.cache
def _reducers() -> object:
    """The object lark takes as its transformer: one reducer per rule or alias."""
    named, bang = _token_rules()
    kept_types = frozenset(t for t in named if not t.startswith("_"))
    reducers = type("_Reducers", (), {})()
    for rule in dir(_ToAst):
        if not rule.startswith("_"):
            method = getattr(_ToAst(), rule)
            setattr(reducers, rule, _reducer(rule, method, rule in bang, kept_types))
    for rule, reduce in _chain_reducers(bang, kept_types).items():
        setattr(reducers, rule, reduce)
    reducers.name = _name  # type: ignore[attr-defined]
    return reducers


def _name(children: list[Any]) -> _Reduced:
    """The reducer of ``name`` (a fifth of all reductions): what
    ``_reducer("name", _ToAst.name, ...)`` gives, without its generic steps."""
    token = children[0]
    value = token.value
    if value[:1] == "`":
        value = unquote_name(value)
    return (value, token, token, 1, "name", children, None)


def _finish(root: Any) -> Any:
    """The AST of a parsed text, or its first problem: operators nested more
    than ``MAX_NESTING`` deep (every later pass walks the AST recursively),
    or what a rule refused. Whichever comes first reading the text's tree
    top-down, with each rule's value made after its children's."""
    problem = root[6]
    if root[3] > MAX_NESTING:
        deep = _first_too_deep(root)
        assert deep[1] is not None
        # a problem completed before the deep node starts is met first
        if problem is None or problem[1].start_pos >= deep[1].start_pos:
            raise _Problem(
                NestingLimitError,
                f"operators are nested more than {MAX_NESTING} deep",
                _token_span(deep[1]),
                f"at most {MAX_NESTING} operators (AND, OR, NOT, +, AS, calls, ...) inside one another",
                "split the query, or write long lists of conditions as IN {...} sets",
            )
    if problem is not None:
        raise problem[0]
    return root[0]


def _first_too_deep(root: _Reduced) -> _Reduced:
    """The first node, top-down and left to right, with more than
    ``MAX_NESTING`` operators above it and itself (the root counts one)."""
    stack: list[tuple[_Reduced, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return node
        below = [c for c in node[5] if c.__class__ is tuple]
        for child in reversed(below):
            stack.append((child, depth + (child[4] not in _TRANSPARENT)))
    raise AssertionError("no node is nested that deep")  # pragma: no cover


def _integer(token: Token, span: Span | None) -> int:
    """An integer literal that fits a 64-bit integer (what columns hold)."""
    text = str(token)
    if len(text) > 19 or int(text) > _INT64_MAX:
        raise _Problem(
            InvalidLiteralError,
            f"the integer {text[:24]}{'...' if len(text) > 24 else ''} is too large",
            span,
            f"an integer up to {_INT64_MAX:,} (64 bits)",
            "use a smaller number, or a decimal such as 1.5e20 in conditions",
        )
    return int(text)


def _decimal(token: Token, span: Span | None) -> float:
    value = float(str(token))
    if value == float("inf"):
        raise _Problem(
            InvalidLiteralError,
            f"the number {token} is too large for a double",
            span,
            "a number below about 1.8e308",
            "use a smaller exponent",
        )
    return value


# Human names for the grammar's terminals, used in "expected ..." lines.
_TERMINAL_NAMES = {
    "NAME": "a name",
    "QUOTED_NAME": "a `quoted name`",
    "INT": "an integer",
    "DOUBLE": "a number",
    "STRING": "a 'string'",
    "SEMICOLON": "';'",
    "COLON": "':'",
    "RANGE_DOTS": "'..'",
    "CONSUME_POLICY": "ANY, PARTITION or NONE",
    "_MILLISECONDS": "MILLISECONDS (or MS)",
    "$END": "the end of the query",
}


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    for term in _lark().terminals:
        if term.name == name:
            if term.pattern.type == "str":
                return repr(term.pattern.value)
            raw = term.pattern.value
            if raw.startswith("(?i:") and raw.endswith(")\\b"):
                return raw[4:-3].replace("?", "").upper()
    return name.lstrip("_")


def _expected(names: set[str]) -> str:
    # LALR's tables also hold rule names (schema_plus_7): the user wrote none of them
    described = sorted({_describe_terminal(n) for n in names if not n.lstrip("_")[:1].islower()})
    if len(described) > 8:
        described = [*described[:8], "..."]
    return ", ".join(described)


def _syntax_error(exc: UnexpectedInput, source: Source, what: str) -> CeqlSyntaxError:
    error = _located_syntax_error(exc, source, what)
    kind = text_kind(source.text)
    if kind is not None and kind != what:
        error.message = f"this is a {kind}, not a {what}"
        error.hint = {
            "workload": "a workload is a .toml file: give it where a workload is expected (sharp-cer check W.toml)",
            "schema": "a schema is a .core file: pass it with --schema",
            "query": "a query is a .ceql file: pass it with --query, or as a FILE to check with --schema",
        }[kind]
    return error


def _located_syntax_error(exc: UnexpectedInput, source: Source, what: str) -> CeqlSyntaxError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        line_count = max(1, len(lines_of(source.text)))
        last = source.line_text(line_count)
        span = Span(line_count, len(last) + 1, line_count, len(last) + 2)
        return CeqlSyntaxError(
            f"{what} ends too early",
            source,
            span,
            expected=_expected(_acceptable(exc)),
            found="the end of the text",
            hint="finish the clause, or remove the trailing keyword",
        )
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        expected = _acceptable(exc)
        hint = _keyword_hint(token, expected) or _hint_for(str(token), expected)
        return CeqlSyntaxError(
            f"unexpected {_found(token)} in {what}",
            source,
            _token_span(token),
            expected=_expected(expected),
            found=_found(token),
            hint=hint,
        )
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        char = source.text[pos] if pos < len(source.text) else ""
        allowed = set(exc.allowed or ())
        return CeqlSyntaxError(
            f"unexpected character {char!r} in {what}",
            source,
            Span(exc.line, exc.column, exc.line, exc.column + 1),
            expected=_expected(allowed) if allowed else None,
            found=repr(char),
            hint=_char_hint(char),
        )
    if isinstance(exc, UnexpectedEOF):
        return CeqlSyntaxError(f"{what} ends too early", source, None)
    return CeqlSyntaxError(f"cannot parse {what}: {exc}", source, None)


def _acceptable(exc: UnexpectedToken) -> set[str]:
    """Terminals the parser can really shift here: LALR's merged states make
    ``exc.expected`` an over-approximation."""
    try:
        accepted: set[str] = exc.interactive_parser.accepts()  # type: ignore[no-untyped-call]
    except Exception:  # pragma: no cover - fall back to the table's view
        return set(exc.expected)
    return accepted or set(exc.expected)


def _found(token: Token) -> str:
    if token.type == "$END":
        return "the end of the text"
    return repr(str(token))


def _keyword_hint(token: Token, expected: set[str]) -> str | None:
    """'did you mean PARTITION?' for a name where a keyword was expected."""
    if token.type != "NAME":
        return None
    keywords = {d for d in map(_describe_terminal, expected) if d.isalpha() and d.isupper()}
    hint = did_you_mean(str(token).upper(), keywords)
    if hint and "_MILLISECONDS" in expected:
        return f"{hint.replace(chr(39), '')} ({_TIME_UNITS_HINT})"
    return hint.replace("'", "") if hint and str(token).upper() not in keywords else None


_TIME_UNITS_HINT = (
    "time units, largest first: HOURS, MINUTES, SECONDS, MILLISECONDS (or MS), e.g. WITHIN 1 SECONDS 500 MS"
)


def _hint_for(text: str, expected: set[str]) -> str | None:
    upper = text.upper()
    if "_MILLISECONDS" in expected and not text[:1].isdigit():
        return _TIME_UNITS_HINT
    if upper in {"SELECT", "WHERE"}:
        return "one file holds one query; put each query in its own file"
    if "_WHERE" in expected and "SEMICOLON" not in expected:
        return "a query needs WHERE followed by a pattern"
    if text == '"' or text.startswith('"'):
        return "strings use single quotes: 'like this'"
    if upper == "AND" and "SEMICOLON" in expected:
        return "to require two patterns in any order write AND(p, q); to add conditions write FILTER"
    if "RPAR" in expected and len(expected) <= 3:
        return "a '(' is not closed before this point"
    if "_FILTER" in expected and text in {"[", "."}:
        return "conditions go after FILTER, e.g. FILTER x[price > 10]"
    return None


def _char_hint(char: str) -> str | None:
    if char == '"':
        return "strings use single quotes: 'like this'"
    if char == "&":
        return "write AND instead of &&"
    if char == "|":
        return "write OR instead of ||"
    if char == "!":
        return "write != for inequality and NOT for negation"
    return None


def _expect_text(text: object, source: Source | None, function: str, what: str) -> None:
    """A text that is not a ``str`` refused by name (lark's own message is "Cannot lex")."""
    if source is None and not isinstance(text, str):
        raise LanguageError(f"{function} takes {what}, found {kind_of(text)}")


def parse_query(text: str, name: str = "<query>", *, source: Source | None = None) -> ast.Query:
    """Parse one CEQL query into its AST; raise :class:`CeqlSyntaxError`.

    >>> parse_query("SELECT * WHERE A ; B+ AS b WITHIN 10 EVENTS").within
    EventWindow(count=10)
    >>> parse_query(None)
    Traceback (most recent call last):
    ...
    sharp_cer.errors.LanguageError: parse_query takes the query's text, found None
    """
    _expect_text(text, source, "parse_query", "the query's text")
    src = source or Source(text, name)
    result: ast.Query = _parsed(src, "query", "query")
    return result


def parse_stream_declarations(
    text: str, name: str = "<schema>", *, source: Source | None = None
) -> tuple[ast.StreamDecl, ...]:
    """Parse ``CREATE STREAM`` declarations; raise :class:`CeqlSyntaxError`.

    >>> [s.name for s in parse_stream_declarations("CREATE STREAM S { EVENT A { x:int } }")]
    ['S']
    """
    _expect_text(text, source, "parse_stream_declarations", "the CREATE STREAM text")
    src = source or Source(text, name)
    result: tuple[ast.StreamDecl, ...] = _parsed(src, "schema", "schema")
    return result
