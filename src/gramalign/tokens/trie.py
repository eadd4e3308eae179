"""A flattened token trie: the vocabulary as plain numpy arrays that numba kernels can walk.

Nodes are stored in depth-first pre-order, so the subtree of node ``i`` is the contiguous
range ``i .. subtree_end[i] - 1``. A kernel walking the trie through an automaton keeps one
automaton state per depth and, when a byte leads nowhere, jumps to ``subtree_end[i]``,
skipping every token that shares the dead prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..jit import kernel


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """Tokens (by their bytes) in a pre-order trie. The root is implicit (depth 0)."""

    node_byte: np.ndarray  # uint8 [n_nodes]: byte on the edge into the node
    node_depth: np.ndarray  # int32 [n_nodes]: 1 for children of the root
    subtree_end: np.ndarray  # int32 [n_nodes]: first node after this node's subtree
    token_start: np.ndarray  # int32 [n_nodes + 1]: tokens ending at node i are
    token_ids: np.ndarray  # int32: token_ids[token_start[i]:token_start[i + 1]]
    max_depth: int
    # Lazily built: the parent of each node and the node of each token position (for
    # subset_positions), and the ``roots`` bundle.
    _links: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def arrays(self) -> tuple:
        """The ``trie`` bundle kernels take: ``node_byte, node_depth, subtree_end, token_start,
        token_ids``."""
        return self.node_byte, self.node_depth, self.subtree_end, self.token_start, self.token_ids

    @property
    def roots(self) -> tuple:
        """The ``roots`` bundle, the first two levels of the trie apart, which a walk reads
        where most first and second bytes die (the nodes themselves lie a subtree apart, a
        cache miss each): ``root_node`` (the nodes at depth 1, ascending, then ``num_nodes``),
        ``root_byte``, ``root_first2`` (per entry of ``root_node``, the index in ``level2_node``
        of the first node at depth 2 after it), ``level2_node`` (the nodes at depth 2, then
        ``num_nodes``) and ``level2_byte``."""
        found = self._links.get("roots")
        if found is None:
            first = np.flatnonzero(self.node_depth == 1).astype(np.int32)
            second = np.flatnonzero(self.node_depth == 2).astype(np.int32)
            end = np.int32(self.num_nodes)
            root_node = np.append(first, end)
            found = self._links["roots"] = (
                root_node, self.node_byte[first], np.searchsorted(second, root_node).astype(np.int32),
                np.append(second, end), self.node_byte[second])
        return found

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
        None if there are none."""
        return self.subset_positions(_kept_positions(self.token_ids, keep.view(np.uint8)))

    def subset_positions(self, positions: np.ndarray) -> "TokenTrie | None":
        """The trie of only the tokens at the given ascending positions of ``token_ids``, or
        None if there are none. Time grows with the sub-trie, not with this trie (after a
        one-time pass that links every node to its parent)."""
        if positions.size == 0:
            return None
        if "parent" not in self._links:
            parent, token_node = _links(self.node_depth, self.token_start)
            self._links.update(parent=parent, token_node=token_node)
        arrays = _subset_from_positions(self._links["parent"], self._links["token_node"], self.node_byte,
                                        self.node_depth, self.token_ids, positions.astype(np.int64, copy=False))
        node_byte, node_depth, subtree_end, token_start, token_ids = arrays
        return TokenTrie(node_byte, node_depth, subtree_end, token_start, token_ids, int(node_depth.max()))


@kernel
def _kept_positions(token_ids, keep):
    count = 0
    for k in range(token_ids.shape[0]):
        if keep[token_ids[k]]:
            count += 1
    out = np.empty(count, np.int64)
    count = 0
    for k in range(token_ids.shape[0]):
        if keep[token_ids[k]]:
            out[count] = k
            count += 1
    return out


@kernel
def _links(node_depth, token_start):
    """(parent node or -1 per node, node per token position) of a pre-order trie."""
    n = node_depth.shape[0]
    parent = np.empty(n, np.int32)
    path = np.empty(n + 2, np.int32)
    for i in range(n):
        depth = node_depth[i]
        path[depth] = i
        parent[i] = path[depth - 1] if depth > 1 else -1
    token_node = np.empty(token_start[n], np.int32)
    for i in range(n):
        for k in range(token_start[i], token_start[i + 1]):
            token_node[k] = i
    return parent, token_node


@kernel
def _subset_from_positions(parent, token_node, node_byte, node_depth, token_ids, positions):
    """Pre-order arrays of the sub-trie holding the tokens at ``positions`` (ascending):
    their nodes and every ancestor, found by walking up until a node already taken.

    No array the size of the whole trie is touched (a context's sub-trie is often a few
    dozen nodes). Token nodes come in pre-order, so an ancestor taken before is still the
    node recorded at its depth on the last chain taken (no node of that depth lies between
    it and a node of its subtree), and each new chain, read top-down, continues the
    ascending order."""
    deepest = 0
    total = 0
    for p in range(positions.shape[0]):
        depth = node_depth[token_node[positions[p]]]
        total += depth
        deepest = max(deepest, depth)
    path = np.full(deepest + 1, -1, np.int32)
    chain = np.empty(deepest + 1, np.int32)
    nodes = np.empty(total, np.int32)
    m = 0
    for p in range(positions.shape[0]):
        node = token_node[positions[p]]
        k = 0
        while node >= 0 and path[node_depth[node]] != node:
            chain[k] = node
            k += 1
            node = parent[node]
        for j in range(k - 1, -1, -1):
            path[node_depth[chain[j]]] = chain[j]
            nodes[m] = chain[j]
            m += 1
    order = nodes[:m]
    out_byte = np.empty(m, np.uint8)
    out_depth = np.empty(m, np.int32)
    out_end = np.empty(m, np.int32)
    out_start = np.zeros(m + 1, np.int32)
    out_ids = np.empty(positions.shape[0], np.int32)
    p = 0
    for j in range(m):
        i = order[j]
        out_byte[j] = node_byte[i]
        out_depth[j] = node_depth[i]
        while p < positions.shape[0] and token_node[positions[p]] == i:
            out_ids[p] = token_ids[positions[p]]
            p += 1
        out_start[j + 1] = p
    _fill_subtree_ends(out_depth, m, out_end)
    return out_byte, out_depth, out_end, out_start, out_ids


@kernel
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


@kernel
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
