"""The LALR loop of a successful parse, fused with the lexer.

lark analyses ``ceql.lark`` and builds the parse table and the callbacks
(the transformer's reducers behind lark's own child filters); this module
only runs them. lark's loop pays, per token, a generator step, a method
call and a handful of attribute look-ups, and per reduction a look-up of
the callback keyed by a grammar ``Rule``, whose hash and equality are
Python methods: more than the reducers themselves cost (issue 33 item 11).
Here the table is turned once into plain dicts (an int: shift or go to that
state; a tuple: reduce by that rule) and the lexer's scan runs inside the
loop, deciding keyword against name from the same table row as
:class:`~sharp_cer.language.lexer.CeqlLexer` does.

The loop knows only success. At the first token the table refuses, or a
character no token starts with, it returns :data:`REFUSED` and the caller
parses the text again with lark's own parser, which raises the same
``UnexpectedInput`` as always (with its interactive parser for the
"expected" lists): errors are rare, and located exactly as before.

>>> from sharp_cer.language.parser import _lark
>>> loop = FusedParser(_lark())
>>> root = loop.parse("SELECT * WHERE A ; B", "query")
>>> type(root[0]).__name__, loop.parse("SELECT * WHERE ;", "query") is REFUSED
('Query', True)
"""

from __future__ import annotations

from typing import Any

from lark import Lark, Token
from lark.parse_tree_builder import ExpandSingleChild
from lark.parsers.lalr_analysis import Shift

from .lexer import _BLANKS, _MULTILINE, _SCAN, CeqlLexer

#: what :meth:`FusedParser.parse` returns when lark's parser must say why the text is refused
REFUSED: Any = object()

_new_str = str.__new__


class FusedParser:
    """lark's LALR table and callbacks for ``lark`` (built with
    :class:`CeqlLexer`), run by one loop per text."""

    def __init__(self, lark: Lark) -> None:
        frontend: Any = lark.parser
        lexer = getattr(frontend.lexer, "lexer", frontend.lexer)  # lark wraps a custom lexer
        assert isinstance(lexer, CeqlLexer), "the fused loop lexes as CeqlLexer does"
        self.symbols, self.keywords = lexer.symbols, lexer.keywords
        inner = frontend.parser.parser
        table, callbacks = inner.parse_table, inner.callbacks
        by_rule: dict[Any, tuple[int, Any, str]] = {}
        for rule, callback in callbacks.items():
            size = len(rule.expansion)
            # a ``?rule`` of one symbol keeps its child as it is: no call
            keep = size == 1 and callback.__class__ is ExpandSingleChild
            by_rule[rule] = (size, None if keep else callback, rule.origin.name)
        rows: dict[Any, dict[str, Any]] = {}
        for state, actions in table.states.items():
            rows[state] = {key: (arg if action is Shift else by_rule[arg]) for key, (action, arg) in actions.items()}
        self.rows = rows
        self.start_states = dict(table.start_states)
        self.end_states = dict(table.end_states)

    def parse(self, text: str, start: str) -> Any:
        """What lark's ``parse(text, start=start)`` returns, or :data:`REFUSED`
        where lark would raise (lark is then to be asked why)."""
        rows, symbols, keywords, match = self.rows, self.symbols, self.keywords, _SCAN.match
        multiline, new, token_class = _MULTILINE, _new_str, Token
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
                    if _BLANKS.match(text, pos).end() != end:  # type: ignore[union-attr]
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
                if action.__class__ is int:
                    if kind == "$END":
                        return REFUSED
                    push_state(action)
                    push_value(token)
                    row = rows[action]
                    break
                size, callback, origin = action
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
