"""A row pattern compiled into a program for the thread-list matcher.

Instructions are tuples ``(opcode, ...)``. ``LABEL v`` consumes one row if
variable ``v``'s condition holds; ``SPLIT a b`` tries ``a`` before ``b``
(that order is the pattern's preference); ``LOOP``/``COUNT`` run a counted
quantifier ``{low,high}``. A counter counts iterations up to ``high``, or up
to ``low`` when unbounded.

An iteration of an unbounded quantifier past its minimum that consumes no
row is no iteration: its path dies, as in the brute-force matcher, which is
also what keeps ``(A*)*`` from cycling. A body that can match nothing gets
``MARK m`` at the start of such an iteration and ``CHECK m`` at its end:
the mark is a flag in the thread's state, set by ``MARK``, cleared by every
row consumed, and a thread reaching ``CHECK`` with it still set dies. The
flag must be state, not history: without it a thread that starts a new
outer iteration in ``(A*?)*`` looks like the inner loop going on, and the
matcher's "same state, same row" rule would merge paths the pattern orders
differently. Marks sit after the loop counters in the same tuple.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> p = compile_pattern(parse_clause("MATCH_RECOGNIZE (PATTERN (A B*) DEFINE A AS true)").pattern, ["A", "B"])
>>> [describe(i) for i in p.code]
['LABEL 0', 'SPLIT 2 4', 'LABEL 1', 'JMP 1', 'MATCH']
"""

from __future__ import annotations

from dataclasses import dataclass

from . import nodes

LABEL, SPLIT, JMP, START, END, EXCL_IN, EXCL_OUT, LOOP, COUNT, MATCH, MARK, CHECK = range(12)
_NAMES = ["LABEL", "SPLIT", "JMP", "START", "END", "EXCL_IN", "EXCL_OUT", "LOOP", "COUNT", "MATCH", "MARK", "CHECK"]

Instruction = tuple[int, ...]


@dataclass(frozen=True)
class Program:
    """Compiled code; ``loops`` counters then ``marks`` flags, all 0 at the start."""

    code: tuple[Instruction, ...]
    loops: int
    marks: int = 0

    @property
    def initial(self) -> tuple[int, ...]:
        """The counters and marks of a thread at the start."""
        return (0,) * (self.loops + self.marks)

    def consumed(self, counters: tuple[int, ...]) -> tuple[int, ...]:
        """``counters`` after a row is consumed: every mark cleared."""
        if not self.marks or not any(counters[self.loops :]):
            return counters
        return (*counters[: self.loops], *(0,) * self.marks)


def nullable(node: nodes.Pattern) -> bool:
    """Can ``node`` match no row at all?"""
    if isinstance(node, nodes.Variable):
        return False
    if isinstance(node, nodes.Anchor):
        return True
    if isinstance(node, (nodes.Concatenation, nodes.Permute)):
        return all(nullable(item) for item in node.items)
    if isinstance(node, nodes.Alternation):
        return any(nullable(item) for item in node.items)
    if isinstance(node, nodes.Exclusion):
        return nullable(node.body)
    return node.low == 0 or nullable(node.body)


def step(instruction: Instruction, counters: tuple[int, ...], loops: int) -> list[tuple[int, ...]] | None:
    """The counters after ``MARK``/``CHECK`` (``loops``: where marks start):
    one successor, or none where ``CHECK`` finds an empty iteration; None
    for any other instruction."""
    op = instruction[0]
    if op == MARK:
        _, mark, loop, low = instruction
        if loop >= 0 and counters[loop] < low:
            return [counters]  # an iteration below the minimum may be empty
        at = loops + mark
        return [(*counters[:at], 1, *counters[at + 1 :])]
    if op == CHECK:
        return [] if counters[loops + instruction[1]] else [counters]
    return None


def describe(instruction: Instruction) -> str:
    """An instruction as text, for docs and debugging."""
    return " ".join([_NAMES[instruction[0]], *(str(x) for x in instruction[1:])])


class _Emitter:
    def __init__(self, ids: dict[str, int]) -> None:
        self.ids = ids
        self.code: list[list[int]] = []
        self.loops = 0
        self.marks = 0

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
            self.checked_body(node.body, -1, 0)
            self.emit(JMP, at)
            self.split(at, at + 1, len(self.code), greedy)
        else:
            loop = self.loops
            self.loops += 1
            # LOOP counter low high(-1: none) greedy exit; the body follows; COUNT counter cap head
            head = self.emit(LOOP, loop, low, -1 if high is None else high, int(greedy), 0)
            if high is None:
                self.checked_body(node.body, loop, low)
            else:
                self.node(node.body)
            self.emit(COUNT, loop, low if high is None else high, head)
            self.code[head][5] = len(self.code)

    def checked_body(self, body: nodes.Pattern, loop: int, low: int) -> None:
        """An unbounded quantifier's body, whose empty iterations past the
        minimum die (``loop`` -1: every iteration here is past it)."""
        if not nullable(body):
            self.node(body)
            return
        mark = self.marks
        self.marks += 1
        # MARK mark counter(-1: none) low; CHECK mark
        self.emit(MARK, mark, loop, low)
        self.node(body)
        self.emit(CHECK, mark)


def compile_pattern(pattern: nodes.Pattern, variables: list[str]) -> Program:
    """Compile ``pattern``; variable ``variables[i]`` gets label id ``i``."""
    emitter = _Emitter({name: i for i, name in enumerate(variables)})
    emitter.node(pattern)
    emitter.emit(MATCH)
    return Program(tuple(tuple(i) for i in emitter.code), emitter.loops, emitter.marks)
