"""Parser stacks as persistent linked lists in a node pool, and the LR step on them.

A pool is two int32 arrays (state, parent): pushing allocates a node, popping follows
parents, and nothing is ever overwritten, so a stack is just a node id and forking a matcher
copies nothing but its pool. Kernels that only look ahead allocate their temporary nodes in
a separate *scratch* pool (ids from ``SCRATCH_BASE`` up). Block stacks of an indentation
layout live in the same pool, with a block's column as its state.
"""

from __future__ import annotations

import numba
import numpy as np

from ..grammar.lalr import ACCEPT
from ..grammar.lalr_kernels import goto_of
from .state import OK, POOL_FULL, SCRATCH_BASE, SCRATCH_FULL


@numba.njit(cache=True, nogil=True, inline="always")
def node_state(pool_state, scratch_state, node):
    if node >= SCRATCH_BASE:
        return scratch_state[node - SCRATCH_BASE]
    return pool_state[node]


@numba.njit(cache=True, nogil=True, inline="always")
def node_parent(pool_parent, scratch_parent, node):
    if node >= SCRATCH_BASE:
        return scratch_parent[node - SCRATCH_BASE]
    return pool_parent[node]


@numba.njit(cache=True, nogil=True)
def feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state,
                  scratch_parent, exposed, node, column, to_scratch, alloc):
    """Reduce as the LALR table says for terminal ``column``, then shift it.

    New nodes go to the scratch pool when ``to_scratch`` (look-ahead only) or else to the
    committed pool, from index ``alloc``. Returns ``(new top node, alloc, status)``; the
    node is -1 when the terminal is a syntax error here, -2 when it completes the
    sentence (ACCEPT, only for ``$END``). ``exposed[0]`` is lowered to the lowest
    committed node that a reduction uncovered (see :class:`StackPool`).
    """
    capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
    base = SCRATCH_BASE if to_scratch else 0
    while True:
        state = node_state(pool_state, scratch_state, node)
        a = action[state, column]
        if a == 0:
            return -1, alloc, OK
        if a == ACCEPT:
            return -2, alloc, OK
        if alloc >= capacity:
            return -1, alloc, SCRATCH_FULL if to_scratch else POOL_FULL
        if a > 0:
            target = a - 1
        else:
            rule = -a - 1
            for _ in range(rule_len[rule]):
                node = node_parent(pool_parent, scratch_parent, node)
            if node < exposed[0]:
                exposed[0] = node  # the deepest committed node this look-ahead depended on
            target = goto_of(goto, node_state(pool_state, scratch_state, node), rule_lhs[rule])
        if to_scratch:
            scratch_state[alloc] = target
            scratch_parent[alloc] = node
        else:
            pool_state[alloc] = target
            pool_parent[alloc] = node
        node = base + alloc
        alloc += 1
        if a > 0:
            return node, alloc, OK


@numba.njit(cache=True, nogil=True, inline="always")
def same_stack(pool_state, pool_parent, scratch_state, scratch_parent, a, b):
    """Do the persistent stacks ``a`` and ``b`` (node ids, -1 empty) hold the same states?
    They share their bottom, so the walk stops where they meet."""
    while a != b:
        if a < 0 or b < 0:
            return False
        if node_state(pool_state, scratch_state, a) != node_state(pool_state, scratch_state, b):
            return False
        a = node_parent(pool_parent, scratch_parent, a)
        b = node_parent(pool_parent, scratch_parent, b)
    return True


@numba.njit(cache=True, nogil=True)
def _top_states(state, parent, node, count):
    """The states of the top ``count`` nodes of the stack ``node`` (fewer where it is shorter)."""
    out = np.empty(count, np.int32)
    n = 0
    while n < count:
        out[n] = state[node]
        n += 1
        node = parent[node]
        if node < 0:
            break
    return out[:n]


class StackPool:
    """The committed parser-stack (and block-stack) nodes of one matcher: two growable
    int32 arrays.

    A parent is always allocated before its children, so node ids fall going down a
    stack. That makes ``exposed`` (the lowest committed node any reduction uncovered
    since it was last reset) a measure of how deep a look-ahead reached into a stack,
    and so of which stacks it would behave the same on.
    """

    __slots__ = ("state", "parent", "used", "scratch_state", "scratch_parent", "exposed", "memo", "memo_top")

    def __init__(self, initial_state: int, capacity: int = 1024):
        self.state = np.empty(capacity, dtype=np.int32)
        self.parent = np.empty(capacity, dtype=np.int32)
        self.state[0] = initial_state
        self.parent[0] = -1
        self.used = 1
        self.scratch_state = np.empty(4096, dtype=np.int32)
        self.scratch_parent = np.empty(4096, dtype=np.int32)
        self.exposed = np.full(1, SCRATCH_BASE, dtype=np.int64)
        self.forget()

    def forget(self) -> None:
        """Empty ``memo``: results that callers keyed by the (immutable) nodes of this pool.
        ``memo_top`` is the highest node id among its keys; a truncation below it empties it."""
        self.memo: dict = {}
        self.memo_top = -1

    def copy(self) -> "StackPool":
        twin = StackPool.__new__(StackPool)
        twin.state = self.state.copy()
        twin.parent = self.parent.copy()
        twin.used = self.used
        twin.scratch_state = np.empty_like(self.scratch_state)
        twin.scratch_parent = np.empty_like(self.scratch_parent)
        twin.exposed = np.full(1, SCRATCH_BASE, dtype=np.int64)
        twin.forget()
        return twin

    def grow(self, status: int) -> None:
        if status == POOL_FULL:
            self.state = np.concatenate([self.state, np.empty_like(self.state)])
            self.parent = np.concatenate([self.parent, np.empty_like(self.parent)])
        elif status == SCRATCH_FULL:
            self.scratch_state = np.empty(2 * self.scratch_state.shape[0], dtype=np.int32)
            self.scratch_parent = np.empty(2 * self.scratch_parent.shape[0], dtype=np.int32)
        else:
            raise ValueError(f"not a pool status: {status}")

    def arrays(self):
        return self.state, self.parent, self.scratch_state, self.scratch_parent, self.exposed

    def until_it_fits(self, call):
        """``call(self.arrays())``, again after growing the pool for as long as its status (the
        result, or its last element) asks for room; the final result."""
        while True:
            result = call(self.arrays())
            status = result[-1] if isinstance(result, tuple) else result
            if status != POOL_FULL and status != SCRATCH_FULL:
                return result
            self.grow(status)

    def depth_signature(self, node: int, depth: int) -> tuple[int, ...]:
        """The parser states of the top ``depth + 1`` nodes of the stack ``node``."""
        return tuple(_top_states(self.state, self.parent, node, depth + 1).tolist())

    def block_columns(self, blocks: int) -> tuple[int, ...]:
        """The columns of the open blocks of the block stack ``blocks``, innermost first."""
        columns = []
        while blocks >= 0:
            columns.append(int(self.state[blocks]))
            blocks = int(self.parent[blocks])
        return tuple(columns)

    def depth_of(self, top: int, exposed: int) -> int:
        """How many nodes below ``top`` the committed node ``exposed`` lies (0 if none)."""
        if exposed >= SCRATCH_BASE or exposed > top:
            return 0
        depth, node, parent = 0, top, self.parent
        while node > exposed:
            node = int(parent[node])
            depth += 1
        return depth
