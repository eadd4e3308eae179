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

import numpy as np

from ..errors import GrammarError
from ..grammar.lalr import ACCEPT
from ..grammar.lalr_kernels import FORK, UNBUILT, goto_of
from ..jit import kernel
from .state import FORK_LIMIT, NEED_STATE, OK, POOL_FULL, SCRATCH_BASE, SCRATCH_FULL

FORKED = -3
"""The top :func:`feed_terminal` returns where the table forks: :func:`feed_all` follows it."""
MAX_FORK_STEPS = 1_000_000
"""Reductions and shifts one terminal may cost across all of a generalized parser's forks."""


@kernel(inline="always")
def node_state(pool_state, scratch_state, node):
    if node >= SCRATCH_BASE:
        return scratch_state[node - SCRATCH_BASE]
    return pool_state[node]


@kernel(inline="always")
def node_parent(pool_parent, scratch_parent, node):
    if node >= SCRATCH_BASE:
        return scratch_parent[node - SCRATCH_BASE]
    return pool_parent[node]


@kernel
def feed_terminal(lr, pool, node, column, to_scratch, alloc):
    """Reduce as the LALR table says for terminal ``column``, then shift it (and make the
    default reductions of an LR(0) table, see ``grammar/lalr.py``, where it lands).

    New nodes go to the scratch pool when ``to_scratch`` (look-ahead only) or else to the
    committed pool, from index ``alloc``. Returns ``(new top node, alloc, status)``; the
    node is -1 when the terminal is a syntax error here, -2 when it completes the
    sentence (ACCEPT, only for ``$END``), ``FORKED`` when the table lists several actions
    on the way (then nodes may have been allocated for nothing: call :func:`feed_all`).
    ``exposed[0]`` is lowered to the lowest committed node that a reduction uncovered (see
    :class:`StackPool`).
    """
    action, goto, rule_lhs, rule_len = lr
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
    base = SCRATCH_BASE if to_scratch else 0
    default = action.shape[1] - 1
    while True:
        state = node_state(pool_state, scratch_state, node)
        a = action[state, column]
        if a == 0:
            if column == default:  # shifted, and the top can shift: done
                return node, alloc, OK
            return -1, alloc, OK
        if a == UNBUILT:  # landed in a state whose row is not built yet (lazy tables)
            exposed[1] = state
            return -1, alloc, NEED_STATE
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
            column = default  # then the reductions of states that can only reduce (LR(0) tables)


@kernel
def feed_all(lr, pool, node, column, to_scratch, alloc):
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
    action, goto, rule_lhs, rule_len = lr
    n_states = goto[0]
    # Nodes made at the current position and shifted nodes, by state: at most one per state,
    # so these never grow. (An array variable assigned twice costs reference counting on
    # every turn of the loops it lives in: the growing arrays are grown between tasks only.)
    here = np.empty((2, n_states), np.int32)
    top = np.empty((2, n_states), np.int32)
    counts = np.zeros(COUNTERS, np.int64)
    counts[ALLOC] = alloc
    tasks = np.empty((2, 16), np.int32)  # node; -1 for every action of it, else its reductions through this parent
    tasks[0, 0], tasks[1, 0] = node, -1
    counts[N_TASK] = 1
    edges = np.full(64, -1, np.int64)  # (node << 32 | parent) of the nodes made here: a set
    below = np.empty(16, np.int32)
    while True:
        status = _feed_all_tasks(lr, pool, column, to_scratch, here, top, tasks, edges, below, counts)
        if status != _ROOM:
            break
        need = counts[NEED]  # room for this many more tasks and edges, the nodes below the task in ``below``
        below = np.empty(max(2 * below.shape[0], need), np.int32)
        if counts[N_TASK] + need > tasks.shape[1]:
            size = tasks.shape[1]
            while size < counts[N_TASK] + need:
                size *= 2
            grown = np.empty((2, size), np.int32)
            grown[:, :counts[N_TASK]] = tasks[:, :counts[N_TASK]]
            tasks = grown
        if 2 * (counts[N_EDGES] + need) >= edges.shape[0]:
            size = edges.shape[0]
            while 2 * (counts[N_EDGES] + need) >= size:
                size *= 2
            edges = _rehashed(edges, size)
    n_top = counts[N_TOP]
    accepted = counts[ACCEPTED] != 0
    count = n_top + (1 if accepted else 0)
    tops = np.empty(max(1, count), np.int32)
    if status != OK:
        return tops, 0, counts[ALLOC], status
    tops[:n_top] = top[1, :n_top]
    if accepted:
        tops[n_top] = -2
    return tops, count, counts[ALLOC], OK


# :func:`_feed_all_tasks`' counters, kept in an array so that it can stop for room and go on.
N_TASK, N_HERE, N_TOP, N_EDGES, STEPS, ACCEPTED, ALLOC, NEED, COUNTERS = range(9)
_ROOM = -1  # :func:`_feed_all_tasks` needs bigger work arrays (``counts[NEED]`` more entries)


@kernel
def _feed_all_tasks(lr, pool, column, to_scratch, here, top, tasks, edges, below, counts):
    """The work loop of :func:`feed_all`; returns its status, or ``_ROOM`` (the task left on
    the list) where ``tasks``, ``edges`` or ``below`` must grow first."""
    action, goto, rule_lhs, rule_len = lr
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
    n_states = goto[0]
    actions = np.empty(1, np.int32)
    n_task, n_here, n_top = counts[N_TASK], counts[N_HERE], counts[N_TOP]
    n_edges, steps, alloc = counts[N_EDGES], counts[STEPS], counts[ALLOC]
    status = OK
    while n_task:
        n_task -= 1
        node = tasks[0, n_task]
        via = tasks[1, n_task]
        a = action[node_state(pool_state, scratch_state, node), column]
        if a == 0:
            continue
        if a >= FORK:
            at = a - FORK
            n_actions = goto[at]
            start = at + 1
        else:
            actions[0] = a
            n_actions = 1
            start = -1
        for i in range(n_actions):
            a = goto[start + i] if start >= 0 else actions[0]
            if a > 0 and a != ACCEPT and via >= 0:
                continue  # shifted when the node was first done
            steps += 1
            if steps > MAX_FORK_STEPS:
                status = FORK_LIMIT
                break
            if a == ACCEPT:
                if via < 0:
                    counts[ACCEPTED] = 1
                continue
            if a > 0:
                if alloc + 2 > capacity:
                    status = SCRATCH_FULL if to_scratch else POOL_FULL
                    break
                if 2 * (n_edges + 1) >= edges.shape[0]:
                    status = _ROOM
                    counts[NEED] = 1
                    break
                found = -1
                for k in range(n_top):
                    if top[0, k] == a - 1:
                        found = k
                if found < 0:
                    top[0, n_top] = a - 1
                    top[1, n_top] = _push(pool, to_scratch, alloc, a - 1, node)
                    alloc += 1
                    n_top += 1
                    fresh = top[1, n_top - 1]
                else:
                    fresh = top[1, found]
                if _insert(edges, (np.int64(fresh) << 32) | np.int64(node)):
                    n_edges += 1
                    if found >= 0:
                        alloc = _add_parent(pool, to_scratch, alloc, fresh, node)
                continue
            rule = -a - 1
            if via < 0:
                n_below = _nodes_below(pool, node, rule_len[rule], below)
            else:
                n_below = _nodes_below(pool, via, rule_len[rule] - 1, below)
            if n_below < 0 or n_task + 1 + n_below > tasks.shape[1] or 2 * (n_edges + n_below) >= edges.shape[0]:
                status = _ROOM
                counts[NEED] = abs(n_below) + 1
                break
            if alloc + 3 * n_below > capacity:
                status = SCRATCH_FULL if to_scratch else POOL_FULL
                break
            lhs = rule_lhs[rule]
            # Written out, not called: a helper taking arrays, with a branch, costs reference
            # counting per call in numba (~10 ns), the most of this loop's work.
            n_goto = goto[1 + n_states]
            lowest = exposed[0]
            for j in range(n_below):
                under = below[j]
                if under < lowest:
                    lowest = under  # the deepest committed node this look-ahead depended on
                s = scratch_state[under - SCRATCH_BASE] if under >= SCRATCH_BASE else pool_state[under]
                lo, hi = goto[1 + s], goto[2 + s]
                target = -1
                while lo < hi:  # goto_of
                    mid = (lo + hi) >> 1
                    sym = goto[2 + n_states + mid]
                    if sym == lhs:
                        target = goto[2 + n_states + n_goto + mid]
                        break
                    if sym < lhs:
                        lo = mid + 1
                    else:
                        hi = mid
                found = -1
                for k in range(n_here):
                    if here[0, k] == target:
                        found = k
                if found < 0:  # a new node here
                    here[0, n_here] = target
                    there = _push(pool, to_scratch, alloc, target, under)
                    here[1, n_here] = there
                    alloc += 1
                    _insert(edges, (np.int64(there) << 32) | np.int64(under))
                    n_edges += 1
                    tasks[0, n_task], tasks[1, n_task] = there, -1
                    n_here += 1
                    n_task += 1
                    continue
                there = here[1, found]
                key = (np.int64(there) << 32) | np.int64(under)
                mask = edges.shape[0] - 1  # _insert, written out
                h = (key * np.int64(-7046029254386353131)) >> np.int64(17)
                while True:
                    h &= mask
                    if edges[h] == key or edges[h] < 0:
                        break
                    h += 1
                if edges[h] != key:  # a new edge: its reductions
                    edges[h] = key
                    n_edges += 1
                    alloc = _add_parent(pool, to_scratch, alloc, there, under)
                    tasks[0, n_task], tasks[1, n_task] = there, under
                    n_task += 1
            exposed[0] = lowest
        if status != OK:
            if status == _ROOM:  # done again once there is room (what it did already is in the edge set);
                tasks[0, n_task], tasks[1, n_task] = node, via  # a slot is free: see the room checks
                n_task += 1
            break
    counts[N_TASK], counts[N_HERE], counts[N_TOP] = n_task, n_here, n_top
    counts[N_EDGES], counts[STEPS], counts[ALLOC] = n_edges, steps, alloc
    return status


@kernel(inline="always")
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


@kernel
def _rehashed(table, size):
    """``table``'s keys in a table of ``size`` slots (a power of two)."""
    grown = np.full(size, -1, np.int64)
    for k in range(table.shape[0]):
        if table[k] >= 0:
            _insert(grown, table[k])
    return grown


@kernel(inline="always")
def _push(pool, to_scratch, alloc, state, parent):
    """Allocate the node (``state``, ``parent``) at ``alloc``; its id."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    if to_scratch:
        scratch_state[alloc] = state
        scratch_parent[alloc] = parent
        return SCRATCH_BASE + alloc
    pool_state[alloc] = state
    pool_parent[alloc] = parent
    return alloc


@kernel
def _add_parent(pool, to_scratch, alloc, node, parent):
    """Give ``node`` (made in this feed) the parent ``parent`` too (the caller knows it is new);
    returns alloc. At most two list nodes are allocated."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    p = node_parent(pool_parent, scratch_parent, node)
    if p <= -2:
        head = p  # the list goes on as it was, after the new parent
    else:
        first = _push(pool, to_scratch, alloc, p, -1)
        alloc += 1
        head = -first - 2
    added = _push(pool, to_scratch, alloc, parent, -head - 2)
    alloc += 1
    if node >= SCRATCH_BASE:
        scratch_parent[node - SCRATCH_BASE] = -added - 2
    else:
        pool_parent[node] = -added - 2
    return alloc


@kernel
def _nodes_below(pool, node, depth, out):
    """The distinct nodes ``depth`` parents below ``node``, following every parent of a
    merged node, into ``out``: their count, or minus the room needed where ``out`` is too small."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    if out.shape[0] < 1:
        return -1
    out[0] = node
    n = 1
    for level in range(depth):
        if n == 1:
            p = node_parent(pool_parent, scratch_parent, out[0])
            if p >= -1:  # the common case: one stack
                out[0] = p
                continue
            m = 0  # one merged node: its parents, which its list holds once each
            link = -p - 2
            size = out.shape[0]
            while link >= 0:  # node_state and node_parent written out (see _feed_all_tasks)
                if link >= SCRATCH_BASE:
                    if m < size:
                        out[m] = scratch_state[link - SCRATCH_BASE]
                    link = scratch_parent[link - SCRATCH_BASE]
                else:
                    if m < size:
                        out[m] = pool_state[link]
                    link = pool_parent[link]
                m += 1
            if m > out.shape[0]:
                return -m
            n = m
            continue
        return _nodes_below_wide(pool, out, n, depth - level)
    return n


@kernel
def _nodes_below_wide(pool, out, n, depth):
    """:func:`_nodes_below` from the ``n`` nodes in ``out``, ``depth`` levels down."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    size = 16
    while size <= 2 * out.shape[0]:
        size *= 2  # a power of two (_insert masks with it), at most half full
    for level in range(depth):
        seen = np.full(size, -1, np.int64)
        nxt = np.empty(out.shape[0], np.int32)
        m = 0
        mask = size - 1
        for i in range(n):  # node_state, node_parent and _insert written out (see _feed_all_tasks)
            node = out[i]
            p = scratch_parent[node - SCRATCH_BASE] if node >= SCRATCH_BASE else pool_parent[node]
            link = -1
            if p <= -2:
                link = -p - 2
                p = scratch_state[link - SCRATCH_BASE] if link >= SCRATCH_BASE else pool_state[link]
            while True:
                key = np.int64(p)
                h = (key * np.int64(-7046029254386353131)) >> np.int64(17)
                while True:
                    h &= mask
                    if seen[h] == key or seen[h] < 0:
                        break
                    h += 1
                if seen[h] < 0:
                    if m >= out.shape[0]:
                        return -2 * out.shape[0]
                    seen[h] = key
                    nxt[m] = p
                    m += 1
                if link < 0:
                    break
                link = scratch_parent[link - SCRATCH_BASE] if link >= SCRATCH_BASE else pool_parent[link]
                if link < 0:
                    break
                p = scratch_state[link - SCRATCH_BASE] if link >= SCRATCH_BASE else pool_state[link]
        out[:m] = nxt[:m]
        n = m
    return n


@kernel(inline="always")
def _add_node(nodes, n, node):
    for k in range(n):
        if nodes[k] == node:
            return n
    nodes[n] = node
    return n + 1


@kernel(inline="always")
def _grown(nodes, n):
    if n < nodes.shape[0]:
        return nodes
    grown = np.empty(2 * nodes.shape[0], np.int32)
    grown[:n] = nodes[:n]
    return grown


@kernel(inline="always")
def has_forks(goto):
    """Does the table list several actions somewhere (fork lists follow the packed goto)?"""
    n_states = goto[0]
    return goto.shape[0] > 2 + n_states + 2 * goto[1 + n_states]


@kernel
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


@kernel
def feed_any(lr, pool, node, column, to_scratch, alloc):
    """Like :func:`feed_terminal` where only success matters: ``(a top, alloc, status)``,
    the top being some stack that shifted the terminal (-2: the end accepted) or -1, the
    forks followed where the table has them."""
    top, alloc, status = feed_terminal(lr, pool, node, column, to_scratch, alloc)
    if top != FORKED:
        return top, alloc, status
    tops, count, alloc, status = feed_all(lr, pool, node, column, to_scratch, alloc)
    if status != OK or count == 0:
        return -1, alloc, status
    for k in range(count):
        if tops[k] == -2:
            return -2, alloc, OK
    return tops[0], alloc, OK


@kernel(inline="always")
def same_stack(pool, a, b):
    """Do the persistent stacks ``a`` and ``b`` (node ids, -1 empty) hold the same states?
    They share their bottom, so the walk stops where they meet."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
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


@kernel
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

    __slots__ = ("state", "parent", "used", "scratch_state", "scratch_parent", "exposed", "memo", "memo_top",
                 "on_need")

    def __init__(self, initial_state: int, capacity: int = 1024):
        self.state = np.empty(capacity, dtype=np.int32)
        self.parent = np.empty(capacity, dtype=np.int32)
        self.state[0] = initial_state
        self.parent[0] = -1
        self.used = 1
        self.scratch_state = np.empty(4096, dtype=np.int32)
        self.scratch_parent = np.empty(4096, dtype=np.int32)
        self.exposed = np.full(2, SCRATCH_BASE, dtype=np.int64)  # and [1]: the state a NEED_STATE asks for
        self.on_need = None  # lazy tables: builds the state a kernel stopped at (NEED_STATE)
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
        twin.exposed = np.full(2, SCRATCH_BASE, dtype=np.int64)
        twin.on_need = self.on_need
        twin.forget()
        return twin

    def grow(self, status: int) -> None:
        if status == POOL_FULL:
            self.state = np.concatenate([self.state, np.empty_like(self.state)])
            self.parent = np.concatenate([self.parent, np.empty_like(self.parent)])
        elif status == SCRATCH_FULL:
            self.scratch_state = np.empty(2 * self.scratch_state.shape[0], dtype=np.int32)
            self.scratch_parent = np.empty(2 * self.scratch_parent.shape[0], dtype=np.int32)
        elif status == NEED_STATE and self.on_need is not None:
            self.on_need(int(self.exposed[1]))
        elif status == FORK_LIMIT:
            raise GrammarError(f"the grammar is too ambiguous here: its parses of one terminal took more than "
                               f"{MAX_FORK_STEPS:,} steps (a generalized grammar; make the ambiguous rules "
                               "unambiguous, or shorten the text)")
        else:
            raise ValueError(f"not a pool status: {status}")

    def arrays(self) -> tuple:
        """The ``pool`` bundle kernels take: ``pool_state, pool_parent, scratch_state,
        scratch_parent, exposed``."""
        return self.state, self.parent, self.scratch_state, self.scratch_parent, self.exposed

    def until_it_fits(self, call):
        """``call(self.arrays())``, again after growing the pool for as long as its status (the
        result, or its last element) asks for room; the final result."""
        while True:
            result = call(self.arrays())
            status = result[-1] if isinstance(result, tuple) else result
            if status != POOL_FULL and status != SCRATCH_FULL and status != FORK_LIMIT and status != NEED_STATE:
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
