"""Parser stacks as persistent linked lists in a node pool, and the LR step on them.

A pool is two int32 arrays (state, parent): pushing allocates a node, popping follows
parents, and nothing is ever overwritten, so a stack is just a node id and forking a matcher
copies nothing but its pool. Kernels that only look ahead allocate their temporary nodes in
a separate *scratch* pool (ids from ``SCRATCH_BASE`` up). Block stacks of an indentation
layout live in the same pool, with a block's column as its state.

Generalized LR: where the table lists several actions for a terminal (a generalized
grammar's conflict, see ``grammar/lalr.py``), :func:`feed_terminal` stops and says so
(``FORKED``), and :func:`feed_all` follows every action, returning each distinct stack
that shifts the terminal. The stacks share their common part (the pool is a tree of
nodes), and each becomes a hypothesis of its own; equal stacks are merged by content. The
grammar has no empty rules and no unit cycles (``grammar/normalize.py``), so every
reduction pops a symbol or climbs a finite chain of unit rules, and a terminal is fed in
bounded work; ``MAX_FORK_STEPS`` bounds it further.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import GrammarError
from ..grammar.lalr import ACCEPT
from ..grammar.lalr_kernels import FORK, goto_of
from .state import FORK_LIMIT, OK, POOL_FULL, SCRATCH_BASE, SCRATCH_FULL

FORKED = -3
"""The top :func:`feed_terminal` returns where the table forks: :func:`feed_all` follows it."""
MAX_FORK_STEPS = 1_000_000
"""Reductions and shifts one terminal may cost across all of a generalized parser's forks."""


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
    sentence (ACCEPT, only for ``$END``), ``FORKED`` when the table lists several actions
    on the way (then nodes may have been allocated for nothing: call :func:`feed_all`).
    ``exposed[0]`` is lowered to the lowest committed node that a reduction uncovered (see
    :class:`StackPool`).
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
            if a >= FORK:
                return FORKED, alloc, OK
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


@numba.njit(cache=True, nogil=True)
def feed_all(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state, scratch_parent, exposed,
             node, column, to_scratch, alloc):
    """Every stack that the stack ``node`` becomes on terminal ``column``, following each
    action of a forking cell. Returns ``(tops, count, alloc, status)``: ``tops[:count]`` are
    distinct stacks (by content) that shifted the terminal, or -2 for the end accepted;
    ``FORK_LIMIT`` when the forks took more than ``MAX_FORK_STEPS``. Allocation as in
    :func:`feed_terminal`."""
    capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
    base = SCRATCH_BASE if to_scratch else 0
    tops = np.empty(4, np.int32)
    count = 0
    pending_node = np.empty(16, np.int32)
    pending_action = np.empty(16, np.int32)
    pending_node[0], pending_action[0] = node, 0  # 0: read the table
    n_pending = 1
    steps = 0
    seen = np.full(64, -1, np.int64)  # open addressing: (node below << 32 | state) of reduced stacks
    seen_count = 0
    while n_pending:
        n_pending -= 1
        node = pending_node[n_pending]
        a = pending_action[n_pending]
        while True:
            if a == 0:
                a = action[node_state(pool_state, scratch_state, node), column]
                if a == 0:
                    break
            if a == ACCEPT or a >= FORK:
                if a == ACCEPT:
                    top = -2
                else:  # each listed action goes on from this same stack
                    at = a - FORK
                    n = goto[at]
                    if n_pending + n > pending_node.shape[0]:
                        size = 2 * (n_pending + n)
                        grown_node = np.empty(size, np.int32)
                        grown_action = np.empty(size, np.int32)
                        grown_node[:n_pending] = pending_node[:n_pending]
                        grown_action[:n_pending] = pending_action[:n_pending]
                        pending_node, pending_action = grown_node, grown_action
                    for k in range(n):
                        pending_node[n_pending] = node
                        pending_action[n_pending] = goto[at + 1 + k]
                        n_pending += 1
                    break
            else:
                steps += 1
                if steps > MAX_FORK_STEPS:
                    return tops, count, alloc, FORK_LIMIT
                if alloc >= capacity:
                    return tops, count, alloc, SCRATCH_FULL if to_scratch else POOL_FULL
                if a > 0:
                    target = a - 1
                else:
                    rule = -a - 1
                    for _ in range(rule_len[rule]):
                        node = node_parent(pool_parent, scratch_parent, node)
                    if node < exposed[0]:
                        exposed[0] = node
                    target = goto_of(goto, node_state(pool_state, scratch_state, node), rule_lhs[rule])
                if to_scratch:
                    scratch_state[alloc] = target
                    scratch_parent[alloc] = node
                else:
                    pool_state[alloc] = target
                    pool_parent[alloc] = node
                node = base + alloc
                alloc += 1
                if a < 0:
                    # a stack reached before by another way (same node below, same state) is done
                    key = (np.int64(node_parent(pool_parent, scratch_parent, node)) << 32) | np.int64(target)
                    if seen_count * 2 >= seen.shape[0]:
                        seen = _rehashed(seen)
                    if not _insert(seen, key):
                        break
                    seen_count += 1
                    a = 0
                    continue
                top = node
            # a shifted stack (or the accepted end): keep it unless an equal one is kept
            fresh = True
            for k in range(count):
                if tops[k] == top or (top >= 0 and tops[k] >= 0 and same_stack(
                        pool_state, pool_parent, scratch_state, scratch_parent, tops[k], top)):
                    fresh = False
                    break
            if fresh:
                if count == tops.shape[0]:
                    grown = np.empty(2 * count, np.int32)
                    grown[:count] = tops
                    tops = grown
                tops[count] = top
                count += 1
            break
    return tops, count, alloc, OK


@numba.njit(cache=True, nogil=True, inline="always")
def _insert(table, key):
    """Add ``key`` (>= 0) to the open-addressing set ``table``; False if it was there."""
    mask = table.shape[0] - 1
    i = (key * np.int64(0x9E3779B97F4A7C15)) >> np.int64(7)
    while True:
        i &= mask
        if table[i] == key:
            return False
        if table[i] < 0:
            table[i] = key
            return True
        i += 1


@numba.njit(cache=True, nogil=True)
def _rehashed(table):
    grown = np.full(2 * table.shape[0], -1, np.int64)
    for k in range(table.shape[0]):
        if table[k] >= 0:
            _insert(grown, table[k])
    return grown


@numba.njit(cache=True, nogil=True)
def feed_any(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state, scratch_parent, exposed,
             node, column, to_scratch, alloc):
    """Like :func:`feed_terminal` where only success matters: ``(a top, alloc, status)``,
    the top being some stack that shifted the terminal (-2: the end accepted) or -1, the
    forks followed where the table has them."""
    top, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state,
                                       scratch_parent, exposed, node, column, to_scratch, alloc)
    if top != FORKED:
        return top, alloc, status
    tops, count, alloc, status = feed_all(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state,
                                          scratch_parent, exposed, node, column, to_scratch, alloc)
    if status != OK or count == 0:
        return -1, alloc, status
    for k in range(count):
        if tops[k] == -2:
            return -2, alloc, OK
    return tops[0], alloc, OK


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
        elif status == FORK_LIMIT:
            raise GrammarError(f"the grammar is too ambiguous here: its parses of one terminal took more than "
                               f"{MAX_FORK_STEPS:,} steps (a generalized grammar; make the ambiguous rules "
                               "unambiguous, or shorten the text)")
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
            if status != POOL_FULL and status != SCRATCH_FULL and status != FORK_LIMIT:
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
