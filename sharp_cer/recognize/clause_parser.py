"""Clause text to AST: lark's LALR parser over ``clause.lark``, then the
checks that need no data (variables, subsets, quantifier bounds, options).

>>> c = parse_clause("MATCH_RECOGNIZE (ORDER BY id PATTERN (A B+) DEFINE B AS B.v < PREV(B.v))")
>>> c.pattern
Concatenation(items=(Variable(name='A'), Quantified(body=Variable(name='B'), low=1, high=None, greedy=True)))
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sharp_cer.language.diagnostics import did_you_mean, listing
from sharp_cer.language.source import Source, Span

from . import nodes
from .clause_errors import ClauseError, ClauseSyntaxError, NotSupportedError


@functools.cache
def _lark() -> Lark:
    grammar = resources.files("sharp_cer.recognize").joinpath("clause.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _span(node: Tree[Any] | Token) -> Span | None:
    if isinstance(node, Token):
        if node.line is None:
            return None
        return Span(node.line, node.column or 1, node.end_line or node.line, node.end_column or (node.column or 1) + 1)
    meta = node.meta
    if getattr(meta, "empty", True):
        return None
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _variable(tree: Tree[Any]) -> str:
    """A pattern variable's name: upper-cased unless quoted, as SQL folds identifiers."""
    token = tree.children[0]
    return _name(tree) if isinstance(token, Token) and token.type == "QUOTED" else str(token).upper()


def _name(tree: Tree[Any]) -> str:
    token = tree.children[0]
    text = str(token)
    if isinstance(token, Token) and token.type == "QUOTED":
        return text[1:-1].replace('""', '"')
    return text


_PRETTY = {
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "NAME": "a name",
    "QUOTED": "a name",
    "INT": "a number",
    "DECIMAL": "a number",
    "STRING": "a string",
    "$END": "the end of the clause",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "MUL_OP": "'/' or '%'",
    "CONCAT_OP": "'||'",
    "COMPARE": "a comparison",
    "EQ": "'='",
    "DOT": "'.'",
    "QMARK": "'?'",
    "CARET": "'^'",
    "DOLLAR": "'$'",
    "EXCL_OPEN": "'{-'",
    "EXCL_CLOSE": "'-}'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "VBAR": "'|'",
}


def _expected(names: set[str]) -> str:
    shown = sorted({_PRETTY.get(n, n if n.isupper() and n.isalpha() else repr(n)) for n in names})
    return ", ".join(shown[:10]) + (", ..." if len(shown) > 10 else "")


def _syntax_error(err: UnexpectedInput, source: Source) -> ClauseSyntaxError:
    line, column = err.line if err.line and err.line > 0 else 1, err.column if err.column and err.column > 0 else 1
    if isinstance(err, UnexpectedToken):
        token = err.token
        found = "the end of the clause" if token.type == "$END" else repr(str(token))
        width = max(1, len(str(token))) if token.type != "$END" else 1
        if token.type == "$END":
            lines = source.text.splitlines() or [""]
            line, column = len(lines), len(lines[-1]) + 1
        return ClauseSyntaxError(
            f"unexpected {found}",
            source,
            Span(line, column, line, column + width),
            expected=_expected(set(err.expected)),
            found=found,
        )
    if isinstance(err, UnexpectedCharacters):
        char = source.line_text(line)[column - 1 : column] or "?"
        return ClauseSyntaxError(
            f"unexpected character {char!r}",
            source,
            Span(line, column, line, column + 1),
            hint="strings take single quotes; names with odd characters take double quotes",
        )
    assert isinstance(err, UnexpectedEOF)
    return ClauseSyntaxError("the clause ends too early", source, Span(line, column, line, column + 1))


class _Builder:
    """Parse tree to AST, one method per rule or alias."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.column_spans: list[tuple[str, Span]] = []

    def build(self, tree: Tree[Any]) -> nodes.Clause:
        parts = {c.data: c for c in tree.children if isinstance(c, Tree)}
        partition: tuple[str, ...] = ()
        if "partition" in parts:
            partition = tuple(self._column_name(c) for c in parts["partition"].children if isinstance(c, Tree))
        order: tuple[nodes.SortKey, ...] = ()
        if "order" in parts:
            order = tuple(self._sort_key(c) for c in parts["order"].children if isinstance(c, Tree))
        measures: tuple[nodes.Measure, ...] = ()
        if "measures" in parts:
            measures = tuple(
                nodes.Measure(_name(m.children[2]), self.expr(m.children[0]), _span(m))
                for m in parts["measures"].children
                if isinstance(m, Tree)
            )
        rows, empty = "one", "show"
        if "all_rows" in parts:
            rows = "all"
            option = parts["all_rows"].children[-1]
            if isinstance(option, Tree):
                empty = {"show_empty": "show", "omit_empty": "omit", "with_unmatched": "unmatched"}[str(option.data)]
        skip = nodes.Skip()
        for kind in ("skip_past_last", "skip_next_row", "skip_to_first", "skip_to_last"):
            if kind in parts:
                node = parts[kind]
                variable = _variable(node.children[-1]) if isinstance(node.children[-1], Tree) else None
                skip = nodes.Skip(kind[len("skip_") :], variable, _span(node))
        if "initial" in parts and str(parts["initial"].children[0]).upper() == "SEEK":
            raise NotSupportedError(
                "SEEK is not supported",
                self.source,
                _span(parts["initial"]),
                hint="MATCH_RECOGNIZE always searches from each row (INITIAL); drop SEEK",
            )
        pattern_tree = parts["pattern"]
        pattern = self.pattern(pattern_tree.children[1])
        subsets: tuple[tuple[str, tuple[str, ...]], ...] = ()
        subset_spans: dict[str, Span | None] = {}
        if "subset" in parts:
            items = []
            for item in parts["subset"].children:
                if isinstance(item, Tree):
                    names = [_variable(n) for n in item.children if isinstance(n, Tree)]
                    items.append((names[0], tuple(names[1:])))
                    subset_spans[names[0]] = _span(item)
            subsets = tuple(items)
        definitions: tuple[nodes.Definition, ...] = ()
        if "define" in parts:
            definitions = tuple(
                nodes.Definition(_variable(d.children[0]), self.expr(d.children[2]), _span(d))
                for d in parts["define"].children
                if isinstance(d, Tree)
            )
        clause = nodes.Clause(
            partition,
            order,
            measures,
            rows,
            empty,
            skip,
            pattern,
            subsets,
            definitions,
            self.source,
            _span(pattern_tree),
            tuple(self.column_spans),
        )
        _check(clause, subset_spans)
        return clause

    def _column_name(self, tree: Tree[Any]) -> str:
        names = [c for c in tree.children if isinstance(c, Tree)]
        if len(names) != 1:
            raise ClauseError(
                "PARTITION BY and ORDER BY take plain column names",
                self.source,
                _span(tree),
                found=".".join(_name(n) for n in names),
                hint="drop the variable",
            )
        name = _name(names[0])
        span = _span(tree)
        if span is not None:
            self.column_spans.append((name, span))
        return name

    def _sort_key(self, tree: Tree[Any]) -> nodes.SortKey:
        column = self._column_name(tree.children[0])
        direction, nulls = tree.children[1], tree.children[2]
        descending = direction is not None and str(direction.children[0]).upper() == "DESC"
        nulls_first = nulls is not None and str(nulls.children[1]).upper() == "FIRST"
        return nodes.SortKey(column, descending, nulls_first, _span(tree))

    # --- patterns ---

    def pattern(self, tree: Tree[Any]) -> nodes.Pattern:
        kind = str(tree.data)
        span = _span(tree)
        if kind == "alternation":
            items = tuple(self.pattern(c) for c in tree.children)
            return items[0] if len(items) == 1 else nodes.Alternation(items, span)
        if kind == "concatenation":
            parts = tuple(self.pattern(c) for c in tree.children)
            return parts[0] if len(parts) == 1 else nodes.Concatenation(parts, span)
        if kind == "quantified":
            body = self.pattern(tree.children[0])
            if tree.children[1] is None:
                return body
            return self.quantifier(body, tree.children[1], span)
        if kind == "variable":
            return nodes.Variable(_variable(tree.children[0]), span)
        if kind == "group":
            inner = self.pattern(tree.children[0])
            return inner if not isinstance(inner, nodes.Concatenation) or inner.items else nodes.Concatenation((), span)
        if kind == "start_anchor":
            return nodes.Anchor("start", span)
        if kind == "end_anchor":
            return nodes.Anchor("end", span)
        if kind == "exclusion":
            return nodes.Exclusion(self.pattern(tree.children[1]), span)
        assert kind == "permute", kind
        return nodes.Permute(tuple(self.pattern(c) for c in tree.children if isinstance(c, Tree)), span)

    def quantifier(self, body: nodes.Pattern, tree: Tree[Any], span: Span | None) -> nodes.Quantified:
        head, reluctant = tree.children[0], tree.children[1] is not None
        low: int
        high: int | None
        if isinstance(head, Token):
            low, high = {"STAR": (0, None), "PLUS": (1, None), "QMARK": (0, 1)}[head.type]
        elif head.data == "exact":
            low = high = int(str(head.children[0]))
        else:
            low = int(str(head.children[0])) if head.children[0] is not None else 0
            high = int(str(head.children[1])) if head.children[1] is not None else None
            if high is not None and high < low:
                raise ClauseError(
                    f"quantifier {{{low},{high}}} has its upper bound below its lower bound",
                    self.source,
                    _span(head),
                    hint=f"write {{{high},{low}}}",
                )
            if high == 0:
                raise ClauseError("a quantifier's upper bound must be at least 1", self.source, _span(head))
        return nodes.Quantified(body, low, high, not reluctant, span)

    # --- expressions ---

    def expr(self, node: Tree[Any] | Token) -> nodes.Expr:
        span = _span(node)
        if isinstance(node, Token):
            raise ClauseSyntaxError(f"unexpected {str(node)!r}", self.source, span)
        kind = str(node.data)
        c = node.children
        method = getattr(self, "_" + kind, None)
        if method is not None:
            result: nodes.Expr = method(c, span)
            return result
        if kind in ("or_expr", "and_expr"):
            result = self.expr(c[0])
            for right in c[2::2]:
                result = nodes.Binary(kind[:-5].upper(), result, self.expr(right), span)
            return result
        if kind in ("sum", "product", "concat"):
            result = self.expr(c[0])
            for op, right in zip(c[1::2], c[2::2], strict=True):
                result = nodes.Binary(str(op), result, self.expr(right), span)
            return result
        raise ClauseSyntaxError(f"unexpected {kind}", self.source, span)  # pragma: no cover - grammar and builder agree

    def _not_(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Unary("NOT", self.expr(c[1]), span)

    def _compare(self, c: list[Any], span: Span | None) -> nodes.Expr:
        op = {"!=": "<>"}.get(str(c[1]), str(c[1]))
        return nodes.Binary(op, self.expr(c[0]), self.expr(c[2]), span)

    def _is_null(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.IsNull(self.expr(c[0]), False, span)

    def _is_not_null(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.IsNull(self.expr(c[0]), True, span)

    def _between_(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Between(self.expr(c[0]), self.expr(c[2]), self.expr(c[4]), False, span)

    def _not_between(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Between(self.expr(c[0]), self.expr(c[3]), self.expr(c[5]), True, span)

    def _in_(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.InList(self.expr(c[0]), tuple(self.expr(x) for x in c[2:]), False, span)

    def _not_in(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.InList(self.expr(c[0]), tuple(self.expr(x) for x in c[3:]), True, span)

    def _negate(self, c: list[Any], span: Span | None) -> nodes.Expr:
        operand = self.expr(c[1])
        return operand if str(c[0]) == "+" else nodes.Unary("-", operand, span)

    def _int_literal(self, c: list[Any], span: Span | None) -> nodes.Expr:
        value = int(c[0])
        if value > 2**63:  # 2**63 itself is allowed: -9223372036854775808 is its negation
            raise ClauseError(
                f"integer {value} is beyond the 64-bit range",
                self.source,
                span,
                hint="integers lie within -9223372036854775808 .. 9223372036854775807; write a decimal (1e20) "
                "for a larger number",
            )
        return nodes.Literal(value, span)

    def _decimal_literal(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Literal(float(c[0]), span)

    def _string_literal(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Literal(str(c[0])[1:-1].replace("''", "'"), span)

    def _true_literal(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Literal(True, span)

    def _false_literal(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Literal(False, span)

    def _null_literal(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Literal(None, span)

    def _column(self, c: list[Any], span: Span | None) -> nodes.Expr:
        if c[1] is None:
            return nodes.Column(None, _name(c[0]), span)
        return nodes.Column(_variable(c[0]), _name(c[1]), span)

    def _call(self, c: list[Any], span: Span | None) -> nodes.Expr:
        semantics = str(c[0].children[0]).upper() if c[0] is not None else None
        name = _name(c[1]).lower()
        trees = [a for a in c[2:] if a is not None]
        if name == "classifier" and len(trees) == 1 and trees[0].data == "column" and trees[0].children[1] is None:
            # CLASSIFIER(v) names a variable, not a column
            variable = nodes.Column(None, _variable(trees[0].children[0]), _span(trees[0]))
            return nodes.Call(name, (variable,), semantics, span)
        return nodes.Call(name, tuple(self.expr(a) for a in trees), semantics, span)

    def _star(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Star(None, span)

    def _var_star(self, c: list[Any], span: Span | None) -> nodes.Expr:
        return nodes.Star(_variable(c[0]), span)

    def _case(self, c: list[Any], span: Span | None) -> nodes.Expr:
        whens = tuple(
            (self.expr(w.children[1]), self.expr(w.children[3])) for w in c if isinstance(w, Tree) and w.data == "when"
        )
        otherwise = None
        for i, item in enumerate(c):
            if isinstance(item, Token) and item.type == "ELSE":
                otherwise = self.expr(c[i + 1])
        return nodes.Case(whens, otherwise, span)


def _walk_patterns(node: nodes.Pattern) -> list[nodes.Pattern]:
    out: list[nodes.Pattern] = [node]
    if isinstance(node, nodes.Concatenation | nodes.Alternation | nodes.Permute):
        for item in node.items:
            out.extend(_walk_patterns(item))
    elif isinstance(node, nodes.Quantified | nodes.Exclusion):
        out.extend(_walk_patterns(node.body))
    return out


MAX_PERMUTE = 7
"""PERMUTE lists at most this many items: it stands for every order of them
(7 items: 5,040 orders)."""

MAX_PATTERN_SIZE = 100_000
"""A pattern compiles to at most this many instructions, PERMUTE expanded."""


def _pattern_size(node: nodes.Pattern) -> int:
    """Instructions the pattern compiles to, about (PERMUTE: every order)."""
    if isinstance(node, nodes.Permute):
        return math.factorial(len(node.items)) * (2 + sum(_pattern_size(i) for i in node.items))
    if isinstance(node, nodes.Concatenation | nodes.Alternation):
        return 2 * len(node.items) + sum(_pattern_size(i) for i in node.items)
    if isinstance(node, nodes.Quantified | nodes.Exclusion):
        return 2 + _pattern_size(node.body)
    return 1


def _check_permutes(clause: nodes.Clause) -> None:
    source = clause.source
    for node in _walk_patterns(clause.pattern):
        if isinstance(node, nodes.Permute) and len(node.items) > MAX_PERMUTE:
            raise ClauseError(
                f"PERMUTE of {len(node.items)} items stands for {math.factorial(len(node.items)):,} orders; "
                f"at most {MAX_PERMUTE} items are allowed",
                source,
                node.span,
                hint="list fewer items, or write the orders that matter as an alternation",
            )
    size = _pattern_size(clause.pattern)
    if size > MAX_PATTERN_SIZE:
        raise ClauseError(
            f"the pattern expands to about {size:,} instructions (PERMUTE counts every order); "
            f"at most {MAX_PATTERN_SIZE:,} are allowed",
            source,
            clause.pattern_span,
            hint="nest fewer PERMUTEs or give them fewer items",
        )


def _check(clause: nodes.Clause, subset_spans: dict[str, Span | None]) -> None:
    source = clause.source
    primaries = nodes.pattern_variables(clause.pattern)
    if not primaries:
        raise ClauseError(
            "the pattern names no variable",
            source,
            clause.pattern_span,
            hint="a pattern needs at least one variable, e.g. PATTERN (() | A)",
        )
    known = set(primaries)
    for name, members in clause.subsets:
        span = subset_spans.get(name)
        if name in known:
            raise ClauseError(
                f"subset {name!r} has the name of a pattern variable", source, span, hint="give the subset its own name"
            )
        for member in members:
            if member not in primaries:
                raise ClauseError(
                    f"subset {name!r} names {member!r}, which is not a pattern variable",
                    source,
                    span,
                    expected=f"one of {listing(primaries)}",
                    hint=did_you_mean(member, primaries),
                )
        known.add(name)
    seen: set[str] = set()
    for definition in clause.definitions:
        if definition.variable not in primaries:
            raise ClauseError(
                f"DEFINE names {definition.variable!r}, which the pattern does not use",
                source,
                definition.span,
                expected=f"one of {listing(primaries)}",
                hint=did_you_mean(definition.variable, primaries),
            )
        if definition.variable in seen:
            raise ClauseError(f"{definition.variable!r} is defined twice", source, definition.span)
        seen.add(definition.variable)
    if clause.skip.variable is not None and clause.skip.variable not in known:
        raise ClauseError(
            f"AFTER MATCH SKIP names {clause.skip.variable!r}, which is not a pattern variable or subset",
            source,
            clause.skip.span,
            expected=f"one of {listing(known)}",
            hint=did_you_mean(clause.skip.variable, known),
        )
    if clause.empty == "unmatched":
        for node in _walk_patterns(clause.pattern):
            if isinstance(node, nodes.Exclusion):
                raise ClauseError(
                    "pattern exclusion {- ... -} cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS",
                    source,
                    node.span,
                    hint="remove the exclusion or the WITH UNMATCHED ROWS option",
                )
    _check_permutes(clause)
    names = [m.name for m in clause.measures]
    for measure in clause.measures:
        if names.count(measure.name) > 1:
            raise ClauseError(f"two measures are named {measure.name!r}", source, measure.span)


def parse_clause(text: str, name: str = "<clause>") -> nodes.Clause:
    """Parse and check a ``MATCH_RECOGNIZE ( ... )`` clause; located errors on bad text.

    >>> parse_clause("MATCH_RECOGNIZE (PATTERN (A B) DEFINE C AS true)")
    Traceback (most recent call last):
    ...
    sharp_cer.recognize.clause_errors.ClauseError: <clause>:1:39: error: DEFINE names 'C', which the pattern does not use
      1 | MATCH_RECOGNIZE (PATTERN (A B) DEFINE C AS true)
        |                                       ^^^^^^^^^
      expected: one of A, B
    """
    source = Source(text, name)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, source) from None
    _check_depth(tree, source)
    clause = _Builder(source).build(tree)
    for node in [*(m.expr for m in clause.measures), *(d.condition for d in clause.definitions)]:
        _check_depth(node, source)
    return clause


MAX_DEPTH = 200


def _children(node: object) -> list[object]:
    if isinstance(node, Tree):
        return [c for c in node.children if isinstance(c, Tree)]
    fields = getattr(node, "__dataclass_fields__", {})
    out: list[object] = []
    for field in fields:
        if field == "span":
            continue
        value = getattr(node, field)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, tuple):
                out.extend(item)  # CASE's (condition, value) pairs
            elif hasattr(item, "__dataclass_fields__"):
                out.append(item)
    return out


def _check_depth(root: object, source: Source) -> None:
    """Nesting deeper than MAX_DEPTH (parentheses, operators, calls) is a
    located error: the parser and the evaluator would run out of stack."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            span = _span(node) if isinstance(node, Tree) else getattr(node, "span", None)
            raise ClauseError(
                f"the clause is nested more than {MAX_DEPTH} deep",
                source,
                span,
                hint="split the expression or the pattern into simpler parts",
            )
        stack.extend((child, depth + 1) for child in _children(node))
