"""numba kernels of the mask hot paths. They take plain arrays and release the GIL."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def advance_dfa(transitions, state, data):
    """State after reading the bytes ``data`` (uint8 array) from ``state``; -1 once dead."""
    for k in range(data.shape[0]):
        if state < 0:
            return state
        state = transitions[state, data[k]]
    return state


@numba.njit(cache=True, nogil=True)
def sparse_words(row):
    """(indexes of the nonzero words of ``row``, those words): ``or_sparse_words``' input,
    without numpy's flatnonzero and fancy-indexing overhead on a short list."""
    count = 0
    for k in range(row.shape[0]):
        if row[k]:
            count += 1
    words = np.empty(count, np.int64)
    bits = np.empty(count, row.dtype)
    count = 0
    for k in range(row.shape[0]):
        if row[k]:
            words[count] = k
            bits[count] = row[k]
            count += 1
    return words, bits


@numba.njit(cache=True, nogil=True)
def or_sparse_words(row, words, bits):
    """``row[words] |= bits`` without numpy's fancy-indexing overhead."""
    for k in range(words.shape[0]):
        row[words[k]] |= bits[k]
