"""The CEQL scanner's pieces that need no lark: the one regular expression
every token is matched with, and the token the fused parse loop makes.

Both parse paths share them: the fused loop (``driver``), which runs
without importing lark at all, and lark's own parser with
:class:`~sharp_cer.language.lexer.CeqlLexer` (only for texts the loop
refuses: errors are explained by lark).

>>> m = SCAN.match("  SELECT *")
>>> m.lastgroup, m.group("WORD")
('WORD', 'SELECT')
"""

from __future__ import annotations

import re

# Longest symbols first: Python's alternation takes the first that matches.
# Blanks before a token are matched with it (one match per token, not two);
# only line breaks and comments are matched on their own, as SKIP.
SCAN = re.compile(
    r"""
    [ \t]*
    (?:
        (?P<WORD>[A-Za-z_][A-Za-z_0-9]*)
      | (?P<SKIP>(?:\s+|--[^\n]*|/\*(?:.|\n)*?(?:\*/|\Z))+)
      | (?P<DOUBLE>\d*\.\d+(?:[eE][-+]?\d+)?|\d+\.?[eE][-+]?\d+)
      | (?P<INT>\d+)
      | (?P<QUOTED_NAME>`(?:[^`]|``)+`)
      | (?P<STRING>'(?:[^']|'')*')
      | (?P<SYMBOL>\.\.|:\+|<=|>=|==|!=|<>|[;:,*\[\]+()>.{}\-/%<=])
    )
    """,
    re.VERBOSE,
)
BLANKS = re.compile(r"[ \t]*")
#: the kinds of token that may hold a line break
MULTILINE = frozenset({"STRING", "QUOTED_NAME"})


class Token(str):
    """A token of the fused loop: its text, with the attributes the AST
    builders read from lark's ``Token`` (kind, positions), without lark.

    >>> t = Token("x"); t.type = "NAME"; t.line = 1
    >>> (t, t.type, isinstance(t, str))
    ('x', 'NAME', True)
    """

    __slots__ = ("column", "end_column", "end_line", "end_pos", "line", "start_pos", "type", "value")

    type: str
    value: str
    start_pos: int
    line: int
    column: int
    end_line: int
    end_column: int
    end_pos: int
