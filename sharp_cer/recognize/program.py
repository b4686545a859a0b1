"""A row pattern compiled into a program for the thread-list matcher.

Instructions are tuples ``(opcode, ...)``. ``LABEL v`` consumes one row if
variable ``v``'s condition holds; ``SPLIT a b`` tries ``a`` before ``b``
(that order is the pattern's preference); ``LOOP``/``COUNT`` run a counted
quantifier ``{low,high}``. A counter counts iterations up to ``high``, or up
to ``low`` when unbounded: past that, an iteration that consumed no row
comes back to the same state and the matcher drops it, which is what keeps
empty iterations from cycling (``(A*)*``).

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> p = compile_pattern(parse_clause("MATCH_RECOGNIZE (PATTERN (A B*) DEFINE A AS true)").pattern, ["A", "B"])
>>> [describe(i) for i in p.code]
['LABEL 0', 'SPLIT 2 4', 'LABEL 1', 'JMP 1', 'MATCH']
"""

from __future__ import annotations

from dataclasses import dataclass

from . import nodes

LABEL, SPLIT, JMP, START, END, EXCL_IN, EXCL_OUT, LOOP, COUNT, MATCH = range(10)
_NAMES = ["LABEL", "SPLIT", "JMP", "START", "END", "EXCL_IN", "EXCL_OUT", "LOOP", "COUNT", "MATCH"]

Instruction = tuple[int, ...]


@dataclass(frozen=True)
class Program:
    """Compiled code; ``loops`` counters start at 0."""

    code: tuple[Instruction, ...]
    loops: int


def describe(instruction: Instruction) -> str:
    """An instruction as text, for docs and debugging."""
    return " ".join([_NAMES[instruction[0]], *(str(x) for x in instruction[1:])])


class _Emitter:
    def __init__(self, ids: dict[str, int]) -> None:
        self.ids = ids
        self.code: list[list[int]] = []
        self.loops = 0

    def emit(self, *parts: int) -> int:
        self.code.append(list(parts))
        return len(self.code) - 1

    def node(self, node: nodes.Pattern) -> None:
        if isinstance(node, nodes.Variable):
            self.emit(LABEL, self.ids[node.name])
        elif isinstance(node, nodes.Concatenation):
            for item in node.items:
                self.node(item)
        elif isinstance(node, nodes.Alternation):
            self.alternation(node.items)
        elif isinstance(node, nodes.Permute):
            self.node(nodes.permutations_in_order(node.items))
        elif isinstance(node, nodes.Anchor):
            self.emit(START if node.kind == "start" else END)
        elif isinstance(node, nodes.Exclusion):
            self.emit(EXCL_IN)
            self.node(node.body)
            self.emit(EXCL_OUT)
        else:
            self.quantified(node)

    def alternation(self, items: tuple[nodes.Pattern, ...]) -> None:
        jumps = []
        for i, item in enumerate(items):
            if i < len(items) - 1:
                split = self.emit(SPLIT, 0, 0)
                self.code[split][1] = split + 1
                self.node(item)
                jumps.append(self.emit(JMP, 0))
                self.code[split][2] = len(self.code)
            else:
                self.node(item)
        for jump in jumps:
            self.code[jump][1] = len(self.code)

    def split(self, at: int, body: int, leave: int, greedy: bool) -> None:
        self.code[at][1:3] = [body, leave] if greedy else [leave, body]

    def quantified(self, node: nodes.Quantified) -> None:
        low, high, greedy = node.low, node.high, node.greedy
        if (low, high) == (0, 1):
            at = self.emit(SPLIT, 0, 0)
            self.node(node.body)
            self.split(at, at + 1, len(self.code), greedy)
        elif high is None and low <= 1:
            if low == 1:
                self.node(node.body)
            at = self.emit(SPLIT, 0, 0)
            self.node(node.body)
            self.emit(JMP, at)
            self.split(at, at + 1, len(self.code), greedy)
        else:
            loop = self.loops
            self.loops += 1
            # LOOP counter low high(-1: none) greedy exit; the body follows; COUNT counter cap head
            head = self.emit(LOOP, loop, low, -1 if high is None else high, int(greedy), 0)
            self.node(node.body)
            self.emit(COUNT, loop, low if high is None else high, head)
            self.code[head][5] = len(self.code)


def compile_pattern(pattern: nodes.Pattern, variables: list[str]) -> Program:
    """Compile ``pattern``; variable ``variables[i]`` gets label id ``i``."""
    emitter = _Emitter({name: i for i, name in enumerate(variables)})
    emitter.node(pattern)
    emitter.emit(MATCH)
    return Program(tuple(tuple(i) for i in emitter.code), emitter.loops)
