"""A fast contextual lexer for the CEQL grammar, plugged into lark's LALR parser
(which parses only the texts the fused loop of ``driver`` refuses, to say why).

lark's own contextual lexer costs most of the parse time. This one scans with
a single compiled regular expression and decides, per word, between a keyword
and a plain name by asking the parser which terminals it can shift next (the
same decision lark's contextual lexer makes), so ``max(b.x)`` is a function
call while ``SELECT MAX`` is a strategy.

The terminal names come from the grammar itself, so the grammar stays the
single source of truth.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark import Token
from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer, LexerState

from .scan import BLANKS, MULTILINE, SCAN

# the scan is shared with the fused loop (``driver``), which runs without lark
_SCAN, _BLANKS, _MULTILINE = SCAN, BLANKS, MULTILINE
_new_str = str.__new__


class CeqlLexer(Lexer):
    """lark ``Lexer`` for ``ceql.lark`` (LALR only: it reads the parser state)."""

    # lark's interface 1: lex() receives the lexer state and the parser state.
    __future_interface__ = 1

    def __init__(self, lexer_conf: Any) -> None:
        self.symbols: dict[str, str] = {}
        self.keywords: dict[str, list[str]] = {}
        for term in lexer_conf.terminals:
            pattern = term.pattern
            if pattern.type == "str":
                self.symbols[pattern.value] = term.name
                continue
            m = re.fullmatch(r"\(\?i:([A-Z|?]+)\)\\b", pattern.value)
            if not m:
                continue
            for word in m.group(1).split("|"):
                forms = [word[:-2], word[:-1]] if word.endswith("?") else [word]
                for form in forms:
                    self.keywords.setdefault(form, []).append(term.name)

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        raw: Any = lexer_state.text
        text: str = raw.text if hasattr(raw, "text") else raw
        states = parser_state.parse_conf.parse_table.states
        symbols, keywords, match = self.symbols, self.keywords, _SCAN.match
        pos, line, line_start, end = 0, 1, 0, len(text)
        while pos < end:
            m = match(text, pos)
            if m is None:
                pos = _BLANKS.match(text, pos).end()  # type: ignore[union-attr]
                if pos == end:
                    break
                allowed = set(states[parser_state.position])
                raise UnexpectedCharacters(  # type: ignore[no-untyped-call]
                    text, pos, line, pos - line_start + 1, allowed=allowed
                )
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
            start = stop - len(value)
            if kind == "WORD":
                # a keyword only if the parser can take it here (names are the common case)
                candidates = keywords.get(value.upper())
                kind = "NAME" if candidates is None else self._word_kind(candidates, states[parser_state.position])
            elif kind == "SYMBOL":
                kind = symbols[value]
            end_line, end_start = line, line_start
            if kind in _MULTILINE:
                newlines = value.count("\n")
                if newlines:
                    end_line, end_start = line + newlines, start + value.rfind("\n") + 1
            # lark's Token, made without its constructor's argument handling (a fifth of the lexing)
            token = _new_str(Token, value)
            token.type = kind
            token.value = value
            token.start_pos = start
            token.line = line
            token.column = start - line_start + 1
            token.end_line = end_line
            token.end_column = stop - end_start + 1
            token.end_pos = stop
            yield token
            line, line_start, pos = end_line, end_start, stop

    def _word_kind(self, candidates: list[str], actions: dict[str, Any]) -> str:
        for name in candidates:
            if name in actions:
                return name
        # Not expected as a keyword here: a name if a name fits, else the
        # keyword (so the error message shows the word as written).
        return "NAME" if "NAME" in actions else candidates[0]
