"""The LALR loop of a successful parse, fused with the lexer, run without lark.

lark analyses ``ceql.lark`` and builds the parse table and the callbacks
(the transformer's reducers behind lark's own child filters); this module
only runs them. lark's loop pays, per token, a generator step, a method
call and a handful of attribute look-ups, and per reduction a look-up of
the callback keyed by a grammar ``Rule``, whose hash and equality are
Python methods: more than the reducers themselves cost (issue 33 item 11).
Here the table is plain data (:func:`plain_table`: per state, a dict from
symbol to an int, a state to shift to or go to, or ``-1 - r`` to reduce by
rule ``r``; per rule its size, its reducer's name, its origin and lark's
child filter), and the lexer's scan runs inside the loop, deciding keyword
against name from the same table row as
:class:`~sharp_cer.language.lexer.CeqlLexer` does.

Being plain data, the table is kept between processes (``grammar_cache``)
and a parse that succeeds imports no lark at all: importing lark and
loading its analysed grammar cost a process ~0.03-0.05 s of CPU, a sixth of
a ``sharp-cer match`` start-up. The loop makes its own tokens
(:class:`~sharp_cer.language.scan.Token`) and, for the grammar's repetition
rules, which have no reducer, its own minimal tree nodes, expanded into
their parent's children by the filters just as lark's are.

The loop knows only success. At the first token the table refuses, or a
character no token starts with, it returns :data:`REFUSED` and the caller
parses the text again with lark's own parser, which raises the same
``UnexpectedInput`` as always (with its interactive parser for the
"expected" lists): errors are rare, and located exactly as before.

>>> from sharp_cer.language.parser import _lark
>>> loop = FusedParser.from_lark(_lark())
>>> root = loop.parse("SELECT * WHERE A ; B", "query")
>>> type(root[0]).__name__, loop.parse("SELECT * WHERE ;", "query") is REFUSED
('Query', True)
"""

from __future__ import annotations

from typing import Any

from .scan import BLANKS, MULTILINE, SCAN, Token

#: what :meth:`FusedParser.parse` returns when lark's parser must say why the text is refused
REFUSED: Any = object()
#: the layout of :func:`plain_table`'s data (part of the name of its file between processes)
TABLE_FORMAT = 1

_new_str = str.__new__


class UnsupportedTable(Exception):
    """lark built a callback this module does not know how to run."""


class _Tree:
    """What lark's default callback makes of a rule without a reducer (the
    grammar's ``(...)*`` and ``(...)+`` helper rules): its children are
    spliced into its parent's by the parent's filter."""

    __slots__ = ("children", "data")

    def __init__(self, data: str, children: list[Any]) -> None:
        self.data, self.children = data, children


def plain_table(lark: Any) -> dict[str, Any]:
    """The parse table and rule callbacks of ``lark`` (a ``Lark`` built with
    :class:`~sharp_cer.language.lexer.CeqlLexer`) as plain data, which JSON
    keeps: what :class:`FusedParser` runs. Raises :class:`UnsupportedTable`
    where lark wraps a callback in a way the loop would not reproduce."""
    from lark.parse_tree_builder import ChildFilterLALR, ChildFilterLALR_NoPlaceholders, ExpandSingleChild
    from lark.parsers.lalr_analysis import Shift

    frontend: Any = lark.parser
    lexer = getattr(frontend.lexer, "lexer", frontend.lexer)  # lark wraps a custom lexer
    if not hasattr(lexer, "keywords"):
        raise UnsupportedTable("the fused loop lexes as CeqlLexer does")
    inner = frontend.parser.parser
    table, callbacks = inner.parse_table, inner.callbacks
    transformer = lark.options.transformer
    rules: list[list[Any]] = []
    index: dict[Any, int] = {}
    for rule, callback in callbacks.items():
        # lark's chain, outermost first: a child filter, then ExpandSingleChild, then the reducer
        described: Any = None
        function = callback
        if function.__class__ is ChildFilterLALR:
            described = [[[i, bool(x), n] for i, x, n in function.to_include], function.append_none]
            function = function.node_builder
        elif function.__class__ is ChildFilterLALR_NoPlaceholders:
            described = [[[i, bool(x), 0] for i, x in function.to_include], 0]
            function = function.node_builder
        expand = function.__class__ is ExpandSingleChild
        if expand:
            function = function.node_builder
        name = rule.alias or rule.options.template_source or rule.origin.name
        reducer = getattr(transformer, name, None)
        # the leaf is the reducer looked up by name, or lark's Tree (the loop's _Tree) without one
        known = function is reducer if reducer is not None else getattr(function, "func", None) is not None
        if not known:
            raise UnsupportedTable(f"rule {rule}: an unknown callback {function!r}")
        index[rule] = len(rules)
        rules.append([len(rule.expansion), name, rule.origin.name, expand, described])
    states = table.states
    if sorted(states) != list(range(len(states))):
        raise UnsupportedTable("the states are not numbered 0..n-1")
    rows = [
        {key: (arg if action is Shift else -1 - index[arg]) for key, (action, arg) in states[s].items()}
        for s in range(len(states))
    ]
    return {
        "format": TABLE_FORMAT,
        "rows": rows,
        "rules": rules,
        "start_states": dict(table.start_states),
        "end_states": dict(table.end_states),
        "symbols": dict(lexer.symbols),
        "keywords": {word: list(names) for word, names in lexer.keywords.items()},
    }


def _callback(name: str, expand: bool, described: Any, reducers: object) -> Any:
    """The function lark would call for a rule: its child filter around
    ExpandSingleChild around its reducer (or a tree node without one)."""
    reducer = getattr(reducers, name, None)
    if reducer is None:

        def leaf(children: list[Any]) -> Any:
            return _Tree(name, children)

    else:
        leaf = reducer
    function = leaf
    if expand:

        def function(children: list[Any]) -> Any:
            return children[0] if len(children) == 1 else leaf(children)

    if described is None:
        return function
    included = [(i, x, n) for i, x, n in described[0]]
    append_none: int = described[1]
    then = function

    def filtered(children: list[Any]) -> Any:
        kept: list[Any] = []
        for i, expand_child, nones in included:
            if nones:
                kept += [None] * nones
            if expand_child:
                if kept:
                    kept += children[i].children
                else:  # the left-recursive helper's list, grown in place
                    kept = children[i].children
            else:
                kept.append(children[i])
        if append_none:
            kept += [None] * append_none
        return then(kept)

    return filtered


class FusedParser:
    """A :func:`plain_table` and the reducers it names (lark's transformer,
    ``parser._reducers()``), run by one loop per text."""

    def __init__(self, table: dict[str, Any], reducers: object) -> None:
        if table.get("format") != TABLE_FORMAT:
            raise ValueError(f"a parse table of format {table.get('format')!r}, not {TABLE_FORMAT}")
        self.symbols: dict[str, str] = table["symbols"]
        self.keywords: dict[str, list[str]] = table["keywords"]
        self.rules: list[tuple[int, Any, str]] = []
        for size, name, origin, expand, described in table["rules"]:
            # a ``?rule`` of one symbol keeps its child as it is: no call
            keep = expand and described is None and size == 1
            self.rules.append((size, None if keep else _callback(name, expand, described, reducers), origin))
        self.rows: list[dict[str, int]] = table["rows"]
        self.start_states: dict[str, int] = table["start_states"]
        self.end_states: dict[str, int] = table["end_states"]

    @classmethod
    def from_lark(cls, lark: Any) -> FusedParser:
        """The loop of ``lark``'s table and transformer."""
        return cls(plain_table(lark), lark.options.transformer)

    def parse(self, text: str, start: str) -> Any:
        """What lark's ``parse(text, start=start)`` returns, or :data:`REFUSED`
        where lark would raise (lark is then to be asked why)."""
        rows, rules, symbols, keywords, match = self.rows, self.rules, self.symbols, self.keywords, SCAN.match
        multiline, new, token_class = MULTILINE, _new_str, Token
        states = [self.start_states[start]]
        values: list[Any] = []
        push_state, push_value = states.append, values.append
        row = rows[states[-1]]
        pos, line, line_start, end = 0, 1, 0, len(text)
        token: Any = None
        end_state = self.end_states[start]
        while True:
            if pos < end:
                m = match(text, pos)
                if m is None:
                    if BLANKS.match(text, pos).end() != end:  # type: ignore[union-attr]
                        return REFUSED
                    pos = end  # only blanks left: the end of the text
                    continue
                kind: str = m.lastgroup  # type: ignore[assignment]
                stop = m.end()
                if kind == "SKIP":
                    value = m.group()
                    newlines = value.count("\n")
                    if newlines:
                        line += newlines
                        line_start = pos + value.rfind("\n") + 1
                    pos = stop
                    continue
                value = m.group(kind)
                start_pos = stop - len(value)
                if kind == "WORD":
                    # a keyword only if the parser can take it here (names are the common case)
                    candidates = keywords.get(value.upper())
                    kind = "NAME" if candidates is None else _word_kind(candidates, row)
                elif kind == "SYMBOL":
                    kind = symbols[value]
                end_line, end_start = line, line_start
                if kind in multiline:
                    newlines = value.count("\n")
                    if newlines:
                        end_line, end_start = line + newlines, start_pos + value.rfind("\n") + 1
                token = new(token_class, value)
                token.type = kind
                token.value = value
                token.start_pos = start_pos
                token.line = line
                token.column = start_pos - line_start + 1
                token.end_line = end_line
                token.end_column = stop - end_start + 1
                token.end_pos = stop
            else:
                kind = "$END"  # the end of the text: reduce until the start rule is complete
            # reduce while the table says so, then shift the token
            while True:
                action = row.get(kind)
                if action is None:
                    return REFUSED
                if action >= 0:
                    if kind == "$END":
                        return REFUSED
                    push_state(action)
                    push_value(token)
                    row = rows[action]
                    break
                size, callback, origin = rules[~action]
                if callback is None:  # the value stays, under the rule's state
                    goto = states[-1] = rows[states[-2]][origin]
                else:
                    if size:
                        children = values[-size:]
                        del states[-size:]
                        del values[-size:]
                    else:
                        children = []
                    goto = rows[states[-1]][origin]
                    push_value(callback(children))
                    push_state(goto)
                if goto == end_state and kind == "$END":
                    return values[-1]
                row = rows[goto]
            line, line_start, pos = end_line, end_start, stop


def _word_kind(candidates: list[str], row: dict[str, Any]) -> str:
    # as CeqlLexer._word_kind: the keyword the parser can take here, else a
    # name where a name fits, else the keyword (for the error message)
    for name in candidates:
        if name in row:
            return name
    return "NAME" if "NAME" in row else candidates[0]
