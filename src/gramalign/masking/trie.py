"""A flattened token trie: the vocabulary as plain numpy arrays that numba kernels can walk.

Nodes are stored in depth-first pre-order, so the subtree of node ``i`` is the contiguous
range ``i .. subtree_end[i] - 1``. A kernel walking the trie through an automaton keeps one
automaton state per depth and, when a byte leads nowhere, jumps to ``subtree_end[i]``,
skipping every token that shares the dead prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """Tokens (by their bytes) in a pre-order trie. The root is implicit (depth 0)."""

    node_byte: np.ndarray  # uint8 [n_nodes]: byte on the edge into the node
    node_depth: np.ndarray  # int32 [n_nodes]: 1 for children of the root
    subtree_end: np.ndarray  # int32 [n_nodes]: first node after this node's subtree
    token_start: np.ndarray  # int32 [n_nodes + 1]: tokens ending at node i are
    token_ids: np.ndarray  # int32: token_ids[token_start[i]:token_start[i + 1]]
    max_depth: int

    @property
    def num_nodes(self) -> int:
        return int(self.node_byte.shape[0])

    @classmethod
    def from_tokens(cls, token_bytes: "list[bytes] | tuple[bytes, ...]", token_ids: np.ndarray) -> "TokenTrie":
        """Build the trie of ``token_bytes[id]`` for each id in ``token_ids`` (non-empty bytes)."""
        ids = [int(i) for i in token_ids]
        ids.sort(key=token_bytes.__getitem__)
        sorted_bytes = [token_bytes[i] for i in ids]
        if any(len(b) == 0 for b in sorted_bytes):
            raise ValueError("a token trie cannot hold empty tokens")
        lengths = np.fromiter((len(b) for b in sorted_bytes), dtype=np.int64, count=len(ids))
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.frombuffer(b"".join(sorted_bytes), dtype=np.uint8)
        arrays = _build_preorder(flat, offsets, np.asarray(ids, dtype=np.int32))
        node_byte, node_depth, subtree_end, token_start, trie_token_ids = arrays
        max_depth = int(node_depth.max()) if node_depth.size else 0
        return cls(node_byte, node_depth, subtree_end, token_start, trie_token_ids, max_depth)


    def subset(self, keep: np.ndarray) -> "TokenTrie | None":
        """The trie of only the tokens with ``keep[id]`` set (uint8/bool per token id), or
        None if there are none. Linear in the trie size; no sorting."""
        arrays = _subset_preorder(self.node_byte, self.node_depth, self.token_start, self.token_ids,
                                  keep.view(np.uint8))
        node_byte, node_depth, subtree_end, token_start, token_ids = arrays
        if token_ids.size == 0:
            return None
        return TokenTrie(node_byte, node_depth, subtree_end, token_start, token_ids, int(node_depth.max()))


@numba.njit(cache=True, nogil=True)
def _fill_subtree_ends(node_depth, n_nodes, subtree_end):
    """In a pre-order trie, the subtree of node i ends at the next node whose depth is not
    greater than i's (or at ``n_nodes``)."""
    stack = np.empty(n_nodes + 1, np.int32)
    top = 0
    for i in range(n_nodes):
        while top > 0 and node_depth[stack[top - 1]] >= node_depth[i]:
            subtree_end[stack[top - 1]] = i
            top -= 1
        stack[top] = i
        top += 1
    while top > 0:
        subtree_end[stack[top - 1]] = n_nodes
        top -= 1


@numba.njit(cache=True, nogil=True)
def _subset_preorder(node_byte, node_depth, token_start, token_ids, keep):
    """Pre-order arrays of the sub-trie of kept tokens (nodes with a kept token below them)."""
    n = node_byte.shape[0]
    kept_below = np.zeros(n + 1, np.int64)  # kept tokens in the subtree of each node
    stack = np.empty(n + 1, np.int32)
    # Children follow their parent in pre-order: accumulate counts from the end.
    for i in range(n - 1, -1, -1):
        count = 0
        for k in range(token_start[i], token_start[i + 1]):
            if keep[token_ids[k]]:
                count += 1
        kept_below[i] += count
    # The parent of a node is the last node before it one level up.
    parent = np.empty(n, np.int32)
    for i in range(n):
        depth = node_depth[i]
        stack[depth] = i
        parent[i] = stack[depth - 1] if depth > 1 else -1
    for i in range(n - 1, -1, -1):
        if parent[i] >= 0:
            kept_below[parent[i]] += kept_below[i]
    new_index = np.full(n, -1, np.int32)
    m = 0
    for i in range(n):
        if kept_below[i] > 0:
            new_index[i] = m
            m += 1
    out_byte = np.empty(m, np.uint8)
    out_depth = np.empty(m, np.int32)
    out_end = np.empty(m, np.int32)
    out_start = np.zeros(m + 1, np.int32)
    n_tokens = 0
    for i in range(n):
        j = new_index[i]
        if j < 0:
            continue
        out_byte[j] = node_byte[i]
        out_depth[j] = node_depth[i]
        for k in range(token_start[i], token_start[i + 1]):
            if keep[token_ids[k]]:
                n_tokens += 1
        out_start[j + 1] = n_tokens
    out_ids = np.empty(n_tokens, np.int32)
    t = 0
    for i in range(n):
        if new_index[i] < 0:
            continue
        for k in range(token_start[i], token_start[i + 1]):
            if keep[token_ids[k]]:
                out_ids[t] = token_ids[k]
                t += 1
    _fill_subtree_ends(out_depth, m, out_end)
    return out_byte, out_depth, out_end, out_start, out_ids


@numba.njit(cache=True, nogil=True)
def _build_preorder(flat, offsets, sorted_ids):
    """Pre-order trie from lexicographically sorted byte strings (``flat[offsets[k]:offsets[k+1]]``)."""
    n_tokens = sorted_ids.shape[0]
    capacity = flat.shape[0]  # at most one node per byte
    node_byte = np.empty(capacity, np.uint8)
    node_depth = np.empty(capacity, np.int32)
    subtree_end = np.empty(capacity, np.int32)
    node_of_token = np.empty(n_tokens, np.int32)
    path = np.empty(flat.shape[0] + 1, np.int32)  # node index at each depth of the current token
    n_nodes = 0
    previous_start = 0
    previous_length = 0
    for k in range(n_tokens):
        start = offsets[k]
        length = offsets[k + 1] - start
        common = 0
        if k > 0:
            limit = min(length, previous_length)
            while common < limit and flat[start + common] == flat[previous_start + common]:
                common += 1
        for depth in range(common, length):
            node_byte[n_nodes] = flat[start + depth]
            node_depth[n_nodes] = depth + 1
            path[depth + 1] = n_nodes
            n_nodes += 1
        node_of_token[k] = path[length]
        previous_start = start
        previous_length = length
    _fill_subtree_ends(node_depth, n_nodes, subtree_end)
    # Tokens are already grouped by node (equal bytes sort together, nodes are pre-order).
    token_start = np.zeros(n_nodes + 1, np.int32)
    for k in range(n_tokens):
        token_start[node_of_token[k] + 1] += 1
    for i in range(n_nodes):
        token_start[i + 1] += token_start[i]
    fill = token_start[:-1].copy()
    token_ids = np.empty(n_tokens, np.int32)
    for k in range(n_tokens):
        node = node_of_token[k]
        token_ids[fill[node]] = sorted_ids[k]
        fill[node] += 1
    return (node_byte[:n_nodes].copy(), node_depth[:n_nodes].copy(), subtree_end[:n_nodes].copy(),
            token_start, token_ids)
