"""Per-state token masks of a byte DFA for one vocabulary."""

from __future__ import annotations

import threading

import numpy as np

from ..grammar.dfa import ByteDFA
from .bitmask import bitmask_width
from .kernels import fill_state_masks
from .trie import TokenTrie
from .vocabulary import Vocabulary

EAGER_MEMORY_LIMIT = 256 * 1024 * 1024
"""Masks of all states are built at compile time when they fit in this many bytes."""


class DFATokenIndex:
    """For each DFA state, the tokens whose bytes keep the DFA alive (EOS excluded).

    Masks are uint32 bitmask rows, built by a numba kernel that walks the vocabulary trie
    through the DFA. Small DFAs are indexed eagerly; larger ones state by state on first
    use. Reads are thread-safe; concurrent first uses of a state may both compute it.
    """

    def __init__(self, dfa: ByteDFA, vocabulary: Vocabulary, trie: TokenTrie, *, eager: bool | None = None):
        self.dfa = dfa
        self.vocabulary = vocabulary
        self.trie = trie
        self.width = bitmask_width(vocabulary.size)
        self._transitions = np.ascontiguousarray(dfa.transitions, dtype=np.int32)
        self._masks = np.zeros((dfa.num_states, self.width), dtype=np.uint32)
        self._built = np.zeros(dfa.num_states, dtype=bool)
        self._lock = threading.Lock()
        if eager is None:
            eager = self._masks.nbytes <= EAGER_MEMORY_LIMIT
        if eager and dfa.num_states:
            self._build(np.arange(dfa.num_states, dtype=np.int32))

    @property
    def memory_bytes(self) -> int:
        return int(self._masks.nbytes)

    def mask(self, state: int) -> np.ndarray:
        """uint32 bitmask row of the tokens allowed in ``state`` (read-only view)."""
        if not self._built[state]:
            self._build(np.array([state], dtype=np.int32))
        return self._masks[state]

    def _build(self, states: np.ndarray) -> None:
        trie = self.trie
        rows = np.empty((states.shape[0], self.width), dtype=np.uint32)
        fill_state_masks(self._transitions, states, trie.node_byte, trie.node_depth, trie.subtree_end,
                         trie.token_start, trie.token_ids, trie.max_depth, rows)
        with self._lock:
            self._masks[states] = rows
            self._built[states] = True
