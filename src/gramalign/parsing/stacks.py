"""Parser stacks as persistent linked lists in a node pool, and the LR step on them.

A pool is two int32 arrays (state, parent): pushing allocates a node, popping follows
parents, and nothing is overwritten once the step that made it has returned (only
:func:`feed_all` adds parents to the nodes it is making), so a stack is just a node id and
forking a matcher copies nothing but its pool. Kernels that only look ahead allocate their temporary nodes in
a separate *scratch* pool (ids from ``SCRATCH_BASE`` up). Block stacks of an indentation
layout live in the same pool, with a block's column as its state.

Generalized LR: where the table lists several actions for a terminal (a generalized
grammar's conflict, see ``grammar/lalr.py``), :func:`feed_terminal` stops and says so
(``FORKED``), and :func:`feed_all` follows every action, returning each distinct stack
that shifts the terminal; each becomes a hypothesis of its own. Where two hypotheses
differ only below the top of their stacks, they are merged (:func:`merge_stacks`): one node
with several parents stands for both, its parent field ``-(list) - 2`` heading a list of
them (each list node's state is a parent, its parent the next list node). The pool is then a
graph-structured stack, and ambiguous text costs polynomial work, not exponential. The
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
                if node <= -2:
                    return FORKED, alloc, OK  # a merged stack: several nodes lie below
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
    action of a forking cell and each parent of a merged node. Returns ``(tops, count,
    alloc, status)``: ``tops[:count]`` are the stacks that shifted the terminal, one node per
    state (merged where several stacks reach it), and -2 where the end is accepted;
    ``FORK_LIMIT`` when the forks took more than ``MAX_FORK_STEPS``. Allocation as in
    :func:`feed_terminal`.

    Tomita's algorithm on a graph-structured stack, for a grammar without empty rules: the
    reductions make nodes at the current position, one per state; a node reached again by
    another way gains a parent, and only the reductions through that new edge are done
    again (every reduction pops at least one symbol, so each path leaves a node by one edge).
    """
    capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
    base = SCRATCH_BASE if to_scratch else 0
    here_state = np.empty(8, np.int32)  # nodes made at the current position, by state
    here_node = np.empty(8, np.int32)
    n_here = 0
    top_state = np.empty(4, np.int32)  # the shifted nodes (the next position), by state
    top_node = np.empty(4, np.int32)
    n_top = 0
    accepted = False
    task_node = np.empty(16, np.int32)
    task_via = np.empty(16, np.int32)  # -1: every action of the node; else its reductions through this parent
    task_node[0], task_via[0] = node, -1
    n_task = 1
    steps = 0
    below = np.empty(4, np.int32)
    actions = np.empty(1, np.int32)
    edges = np.full(64, -1, np.int64)  # (node << 32 | parent) of the nodes made here: a set
    n_edges = 0
    while n_task:
        n_task -= 1
        node = task_node[n_task]
        via = task_via[n_task]
        a = action[node_state(pool_state, scratch_state, node), column]
        if a == 0:
            continue
        if a >= FORK:
            at = a - FORK
            n_actions = goto[at]
            start = at + 1
            listed = goto
        else:
            actions[0] = a
            n_actions = 1
            start = 0
            listed = actions
        for i in range(n_actions):
            a = listed[start + i]
            steps += 1
            if steps > MAX_FORK_STEPS:
                return top_node, 0, alloc, FORK_LIMIT
            if a == ACCEPT:
                accepted = accepted or via < 0
                continue
            if a > 0:
                if via >= 0:
                    continue  # shifted when the node was first done
                if alloc + 2 > capacity:
                    return top_node, 0, alloc, SCRATCH_FULL if to_scratch else POOL_FULL
                found = -1
                for k in range(n_top):
                    if top_state[k] == a - 1:
                        found = k
                if found < 0:
                    top_state, top_node = _grown2(top_state, top_node, n_top)
                    top_state[n_top] = a - 1
                    top_node[n_top] = _push(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch,
                                            alloc, a - 1, node)
                    alloc += 1
                    n_top += 1
                    fresh = top_node[n_top - 1]
                else:
                    fresh = top_node[found]
                if n_edges * 2 >= edges.shape[0]:
                    edges = _rehashed(edges)
                if _insert(edges, (np.int64(fresh) << 32) | np.int64(node)):
                    n_edges += 1
                    if found >= 0:
                        alloc = _add_parent(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch,
                                            alloc, fresh, node)
                continue
            rule = -a - 1
            if via < 0:
                below, n_below = _nodes_below(pool_parent, scratch_parent, scratch_state, pool_state, node,
                                              rule_len[rule], below)
            else:
                below, n_below = _nodes_below(pool_parent, scratch_parent, scratch_state, pool_state, via,
                                              rule_len[rule] - 1, below)
            if alloc + 3 * n_below > capacity:
                return top_node, 0, alloc, SCRATCH_FULL if to_scratch else POOL_FULL
            for j in range(n_below):
                under = below[j]
                if under < exposed[0]:
                    exposed[0] = under  # the deepest committed node this look-ahead depended on
                target = goto_of(goto, node_state(pool_state, scratch_state, under), rule_lhs[rule])
                found = -1
                for k in range(n_here):
                    if here_state[k] == target:
                        found = k
                task_node, task_via = _grown2(task_node, task_via, n_task)
                if n_edges * 2 >= edges.shape[0]:
                    edges = _rehashed(edges)
                if found < 0:
                    here_state, here_node = _grown2(here_state, here_node, n_here)
                    here_state[n_here] = target
                    there = _push(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch, alloc, target,
                                  under)
                    here_node[n_here] = there
                    alloc += 1
                    _insert(edges, (np.int64(there) << 32) | np.int64(under))
                    n_edges += 1
                    task_node[n_task], task_via[n_task] = there, -1
                    n_here += 1
                    n_task += 1
                else:
                    there = here_node[found]
                    if _insert(edges, (np.int64(there) << 32) | np.int64(under)):  # a new edge: its reductions
                        n_edges += 1
                        alloc = _add_parent(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch,
                                            alloc, there, under)
                        task_node[n_task], task_via[n_task] = there, under
                        n_task += 1
    count = n_top + (1 if accepted else 0)
    tops = np.empty(max(1, count), np.int32)
    tops[:n_top] = top_node[:n_top]
    if accepted:
        tops[n_top] = -2
    return tops, count, alloc, OK


@numba.njit(cache=True, nogil=True, inline="always")
def _insert(table, key):
    """Add ``key`` (>= 0) to the open-addressing set ``table`` (its size a power of two, less
    than half full); False if it was there."""
    mask = table.shape[0] - 1
    i = (key * np.int64(-7046029254386353131)) >> np.int64(17)
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


@numba.njit(cache=True, nogil=True, inline="always")
def _push(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch, alloc, state, parent):
    """Allocate the node (``state``, ``parent``) at ``alloc``; its id."""
    if to_scratch:
        scratch_state[alloc] = state
        scratch_parent[alloc] = parent
        return SCRATCH_BASE + alloc
    pool_state[alloc] = state
    pool_parent[alloc] = parent
    return alloc


@numba.njit(cache=True, nogil=True)
def _add_parent(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch, alloc, node, parent):
    """Give ``node`` (made in this feed) the parent ``parent`` too (the caller knows it is new);
    returns alloc. At most two list nodes are allocated."""
    p = node_parent(pool_parent, scratch_parent, node)
    if p <= -2:
        head = p  # the list goes on as it was, after the new parent
    else:
        first = _push(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch, alloc, p, -1)
        alloc += 1
        head = -first - 2
    added = _push(pool_state, pool_parent, scratch_state, scratch_parent, to_scratch, alloc, parent, -head - 2)
    alloc += 1
    if node >= SCRATCH_BASE:
        scratch_parent[node - SCRATCH_BASE] = -added - 2
    else:
        pool_parent[node] = -added - 2
    return alloc


@numba.njit(cache=True, nogil=True, inline="always")
def _grown2(first, second, n):
    """Two parallel arrays with room for one more entry than ``n``."""
    if n < first.shape[0]:
        return first, second
    grown_first = np.empty(2 * first.shape[0], np.int32)
    grown_second = np.empty(2 * second.shape[0], np.int32)
    grown_first[:n] = first[:n]
    grown_second[:n] = second[:n]
    return grown_first, grown_second


@numba.njit(cache=True, nogil=True)
def _nodes_below(pool_parent, scratch_parent, scratch_state, pool_state, node, depth, out):
    """(the distinct nodes ``depth`` parents below ``node``, following every parent of a
    merged node, in ``out`` or a larger array; their count)."""
    out[0] = node
    n = 1
    for _ in range(depth):
        p = node_parent(pool_parent, scratch_parent, out[0])
        if n == 1 and p >= -1:  # the common case: one stack
            out[0] = p
            continue
        if n == 1:  # one merged node: its parents, which its list holds once each
            nxt = np.empty(8, np.int32)
            m = 0
            link = -p - 2
            while link >= 0:
                nxt = _grown(nxt, m)
                nxt[m] = node_state(pool_state, scratch_state, link)
                m += 1
                link = node_parent(pool_parent, scratch_parent, link)
            out, n = nxt, m
            continue
        nxt = np.empty(max(4, 2 * n), np.int32)
        size = 16
        while size < 4 * n:
            size *= 2  # a power of two: _insert masks with it
        seen = np.full(size, -1, np.int64)
        m = 0
        for i in range(n):
            p = node_parent(pool_parent, scratch_parent, out[i])
            link = -1
            if p <= -2:
                link = -p - 2
                p = node_state(pool_state, scratch_state, link)
            while True:
                if m * 2 >= seen.shape[0]:
                    seen = _rehashed(seen)
                if _insert(seen, np.int64(p)):
                    nxt = _grown(nxt, m)
                    nxt[m] = p
                    m += 1
                if link < 0:
                    break
                link = node_parent(pool_parent, scratch_parent, link)
                if link < 0:
                    break
                p = node_state(pool_state, scratch_state, link)
        out, n = nxt, m
    return out, n


@numba.njit(cache=True, nogil=True, inline="always")
def _add_node(nodes, n, node):
    for k in range(n):
        if nodes[k] == node:
            return n
    nodes[n] = node
    return n + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _grown(nodes, n):
    if n < nodes.shape[0]:
        return nodes
    grown = np.empty(2 * nodes.shape[0], np.int32)
    grown[:n] = nodes[:n]
    return grown


@numba.njit(cache=True, nogil=True, inline="always")
def has_forks(goto):
    """Does the table list several actions somewhere (fork lists follow the packed goto)?"""
    n_states = goto[0]
    return goto.shape[0] > 2 + n_states + 2 * goto[1 + n_states]


@numba.njit(cache=True, nogil=True)
def merge_stacks(pool_state, pool_parent, a, b, alloc):
    """A committed node that stands for both stacks ``a`` and ``b`` (whose tops have one
    state): the graph-structured stack's merge, its parents being theirs. Returns ``(node,
    alloc, status)``; the node is ``a`` where they have one parent node."""
    parents = np.empty(8, np.int32)
    n = 0
    for top in (a, b):
        p = pool_parent[top]
        if p >= -1:
            n = _add_node(parents, n, p)
            parents = _grown(parents, n)
        else:
            link = -p - 2
            while link >= 0:
                n = _add_node(parents, n, pool_state[link])
                parents = _grown(parents, n)
                link = pool_parent[link]
    if n == 1:
        return a, alloc, OK
    if alloc + n + 1 > pool_state.shape[0]:
        return -1, alloc, POOL_FULL
    link = -1
    for k in range(n):  # the list of parents: each list node's state is a parent, its parent the next
        pool_state[alloc] = parents[k]
        pool_parent[alloc] = link
        link = alloc
        alloc += 1
    pool_state[alloc] = pool_state[a]
    pool_parent[alloc] = -link - 2
    return alloc, alloc + 1, OK


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


MERGED = -5
"""Ends a stack signature where a merged node lies: no single stack has it."""


@numba.njit(cache=True, nogil=True)
def _top_states(state, parent, node, count):
    """The states of the top ``count`` nodes of the stack ``node`` (fewer where it is shorter;
    ``MERGED`` last where several stacks lie below)."""
    out = np.empty(count + 1, np.int32)
    n = 0
    while True:
        out[n] = state[node]
        n += 1
        if n == count:
            break
        node = parent[node]
        if node <= -2:
            out[n] = MERGED
            n += 1
            break
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
        """How many nodes below ``top`` the committed node ``exposed`` lies (0 if none; -1
        where a merged node lies on the way, and no one depth says what was read)."""
        if exposed >= SCRATCH_BASE or exposed > top:
            return 0
        depth, node, parent = 0, top, self.parent
        while node > exposed:
            node = int(parent[node])
            if node <= -2:
                return -1
            depth += 1
        return depth
