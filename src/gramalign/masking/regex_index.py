"""The regex index: per-state token masks of a byte DFA for one vocabulary.

A grammar that is one regular expression (``Grammar.from_regex``, or a schema that is one
string) needs no parser: its masks are rows of :class:`DFATokenIndex`, filled by a numba
walk of the token trie through the DFA (the kernels below; they release the GIL).
"""

from __future__ import annotations

import threading

import numpy as np

from ..grammar.automata.dfa import ByteDFA
from ..jit import kernel
from ..tokens.trie import TokenTrie
from ..tokens.vocabulary import Vocabulary
from .bitmask import bitmask_width

EAGER_MEMORY_LIMIT = 256 * 1024 * 1024
"""Masks of all states are built at compile time when they fit in this many bytes."""

TOKEN_LIVENESS_MAX_STATES = 8192
"""Up to this many DFA states, states that no token sequence can complete are pruned."""


class DFATokenIndex:
    """For each DFA state, the tokens whose bytes keep the DFA alive (EOS excluded).

    Masks are uint32 bitmask rows, built by a numba kernel that walks the vocabulary trie
    through the DFA. Small DFAs are indexed eagerly; larger ones state by state on first
    use. Reads are thread-safe; concurrent first uses of a state may both compute it.

    A byte-level DFA state may be completable only through bytes that no token spells
    (SmolLM2's vocabulary, for one, has no token containing 0x04 or 0xF5-0xFF). Up to
    ``TOKEN_LIVENESS_MAX_STATES`` states, a fixpoint over token transitions finds those
    states and the masks never lead into them; larger DFAs skip this check.
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
        self.live = np.ones(dfa.num_states, dtype=bool)
        if eager is None:
            eager = self._masks.nbytes <= EAGER_MEMORY_LIMIT
        if eager and dfa.num_states:
            self._build_all()
        elif 0 < dfa.num_states <= TOKEN_LIVENESS_MAX_STATES:
            self._prune_token_dead_states(self._successors(np.arange(dfa.num_states, dtype=np.int32)))

    @property
    def memory_bytes(self) -> int:
        return int(self._masks.nbytes)

    def mask(self, state: int) -> np.ndarray:
        """uint32 bitmask row of the tokens allowed in ``state`` (read-only view)."""
        if not self._built[state]:
            self._build(np.array([state], dtype=np.int32))
        return self._masks[state]

    def _build(self, states: np.ndarray, successors: np.ndarray | None = None) -> None:
        trie = self.trie
        rows = np.empty((states.shape[0], self.width), dtype=np.uint32)
        record = successors if successors is not None else np.zeros((0, 0), dtype=bool)
        fill_state_masks(self._transitions, states, trie.node_byte, trie.node_depth, trie.subtree_end,
                         trie.token_start, trie.token_ids, trie.max_depth, self.live, rows, record)
        with self._lock:
            self._masks[states] = rows
            self._built[states] = True

    def _build_all(self) -> None:
        n = self.dfa.num_states
        states = np.arange(n, dtype=np.int32)
        if n > TOKEN_LIVENESS_MAX_STATES:
            self._build(states)
            return
        successors = np.zeros((n, n), dtype=bool)
        self._build(states, successors)
        if self._prune_token_dead_states(successors):
            self._build(states)

    def _successors(self, states: np.ndarray) -> np.ndarray:
        successors = np.zeros((states.shape[0], self.dfa.num_states), dtype=bool)
        scratch = np.empty((states.shape[0], self.width), dtype=np.uint32)
        trie = self.trie
        fill_state_masks(self._transitions, states, trie.node_byte, trie.node_depth, trie.subtree_end,
                         trie.token_start, trie.token_ids, trie.max_depth, self.live, scratch, successors)
        return successors

    def _prune_token_dead_states(self, successors: np.ndarray) -> bool:
        """Mark states no token sequence can complete; True if there are any."""
        live = self.dfa.accepting.copy()
        while True:
            grown = live | (successors & live[None, :]).any(axis=1)
            if np.array_equal(grown, live):
                break
            live = grown
        if not live[self.dfa.initial]:
            from ..errors import GrammarError

            raise GrammarError("no string of this language can be spelled with the vocabulary's tokens")
        self.live = live
        return not live.all()


@kernel
def walk_trie_through_dfa(transitions, start_state, node_byte, node_depth, subtree_end,
                          token_start, token_ids, max_depth, live, out_words, successors):
    """OR into ``out_words`` (uint32 bitmask) every token whose bytes the DFA can read from
    ``start_state`` and that ends in a state marked in ``live``.

    No byte of an allowed token leads to the dead state (-1). Every DFA state can reach
    acceptance by *some* bytes; ``live`` says which can by bytes the vocabulary's tokens
    spell. When ``successors`` (bool [n_states]) is not empty, the states in which
    tokens end are marked in it.
    """
    record = successors.shape[0] > 0
    states = np.empty(max_depth + 1, np.int32)
    states[0] = start_state
    n_nodes = node_byte.shape[0]
    i = 0
    while i < n_nodes:
        depth = node_depth[i]
        next_state = transitions[states[depth - 1], node_byte[i]]
        if next_state < 0:
            i = subtree_end[i]
            continue
        states[depth] = next_state
        if record and token_start[i] < token_start[i + 1]:
            successors[next_state] = True
        if live[next_state]:
            for k in range(token_start[i], token_start[i + 1]):
                token = token_ids[k]
                out_words[token >> 5] |= np.uint32(1) << np.uint32(token & 31)
        i += 1


@kernel
def fill_state_masks(transitions, states, node_byte, node_depth, subtree_end,
                     token_start, token_ids, max_depth, live, out_masks, successors):
    """Row r of ``out_masks`` (uint32) becomes the token mask of DFA state ``states[r]``, and
    row r of ``successors`` (bool [rows, n_states], or shape (0, 0) to skip) the states
    its tokens lead to."""
    record = successors.shape[0] > 0
    for r in range(states.shape[0]):
        out_masks[r, :] = 0
        walk_trie_through_dfa(transitions, states[r], node_byte, node_depth, subtree_end,
                              token_start, token_ids, max_depth, live, out_masks[r],
                              successors[r] if record else successors[0:0, 0:0].ravel())
