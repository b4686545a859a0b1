"""Symbols: the distinct predicate bit vectors one automaton can tell apart.

Only the atoms an automaton's guards read matter to it, so its events fall
into few classes: the *symbols*, numbered as batches bring them and kept
for the engine's life. A batch becomes one symbol id per event, computed
with numpy (the atoms' columns packed into 64-bit words, then ``np.unique``);
a symbol's bit vector over the plan's atom numbering is what the
determinizer reads.

>>> import numpy as np
>>> table = SymbolTable([3, 5])
>>> columns = {3: np.array([True, False, True]), 5: np.array([False, False, False])}
>>> table.encode(columns, np.array([True, True, False])).tolist(), table.bits
([1, 0, -1], [0, 8])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Per atom index, whether it holds for each event of a batch.
AtomColumns = dict[int, npt.NDArray[np.bool_]]
_WORD = 64
#: Up to this many atoms, events are numbered through a table of 2**atoms entries.
_SMALL = 16


class SymbolTable:
    """The symbols of one automaton reading the atoms ``atoms`` (see the
    module example)."""

    def __init__(self, atoms: list[int]) -> None:
        self.atoms = sorted(atoms)
        self.ids: dict[int, int] = {}
        #: per symbol id, its bit vector over the plan's atoms
        self.bits: list[int] = []

    def encode(self, columns: AtomColumns, visible: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """The symbol id of every event; -1 where ``visible`` is False.

        >>> SymbolTable([]).encode({}, np.array([True, True])).tolist()
        [0, 0]
        """
        n = len(visible)
        words = np.zeros((max(1, -(-len(self.atoms) // _WORD)), n), dtype=np.uint64)
        for j, atom in enumerate(self.atoms):
            words[j // _WORD] |= columns[atom].astype(np.uint64) << np.uint64(j % _WORD)
        if len(self.atoms) <= _SMALL:
            # few atoms: a table over every word replaces np.unique's sort
            present = np.zeros(1 << len(self.atoms), dtype=bool)
            present[words[0]] = True
            keys = present.nonzero()[0]
            table = np.zeros(len(present), dtype=np.int64)
            table[keys] = np.arange(len(keys))
            inverse = table[words[0]]
            rows = [[int(k)] for k in keys.tolist()]
        elif len(words) == 1:
            keys, inverse = np.unique(words[0], return_inverse=True)
            rows = [[int(k)] for k in keys.tolist()]
        else:
            unique, inverse = np.unique(words.T, axis=0, return_inverse=True)
            rows = unique.tolist()
        ids = np.array([self._intern(row) for row in rows], dtype=np.int64)
        symbols = ids[inverse.reshape(-1)] if n else np.zeros(0, dtype=np.int64)
        symbols[~visible] = -1
        return symbols

    def _intern(self, words: list[int]) -> int:
        bits = 0
        for w, word in enumerate(words):
            while word:
                low = word & -word
                bits |= 1 << self.atoms[w * _WORD + low.bit_length() - 1]
                word ^= low
        found = self.ids.get(bits)
        if found is None:
            found = self.ids[bits] = len(self.bits)
            self.bits.append(bits)
        return found
