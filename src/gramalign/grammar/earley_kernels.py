"""numba kernels of the infilling check: Earley over a lexing automaton (wrapped by :mod:`.bar_hillel`).

The grammar is the binary, ε-free form of :class:`.bar_hillel.BinaryGrammar` (rules
``A -> X Y`` and ``A -> X``), the text an automaton over terminals whose node ids every
edge respects: lexeme edges ``r -t-> q`` with ``q > r``, ε-edges ``a -> b`` with ``b > a``,
and at a gap node a loop on every terminal with a non-empty language (a whole lexeme inside
the gap), which is implicit.

Items ``(rule, dot, origin)`` live at nodes; an item waits for the left symbol (dot 0) or
the right one (dot 1). Only what a derivation of the start can need is predicted, so a flat
list of k values costs about k items, not the k² triples of a bottom-up construction; and
an item is made only if the symbol it waits for can begin with a terminal that a scan at
its node reads, and a triple ``(o, A, q)`` only if a terminal that may follow ``A`` is read
at ``q`` or ``A`` may end the text and ``q`` can (:func:`terminals_ahead`: one terminal of
look-ahead, exact, since an item that can never scan adds nothing, and a triple is used
only with what follows it).
Nodes are settled in id order; at a node, a fixpoint of prediction, scanning (a lexeme edge
from a node the ε-edges reach, to a later node, or a gap's loop), and completion (a triple
``(origin, A, end)`` advancing the items that wait for ``A`` at ``origin``). Items are
copied along ε-edges (ignored text, gap moves) only into gaps; short of a gap, scans read
through them.

**A gap's own items are implicit.** At a gap every rule would be predicted, and every
symbol that derives a word spans the gap (the word written inside it), so the gap's own
items, ``(A -> . X Y, G)`` and ``(A -> X . Y, G)`` for every rule, would be the whole
grammar again at every gap. None is made: a gap predicts nothing, an item that waits at a
gap advances there over its symbol written inside the gap (``-2 - (X * node_count + G)``,
unfolded by ``best_rule``), and the own items act where they would: a terminal read from
the gap (:func:`_gap_scans`) or a symbol completed from it advances every rule that begins
with it (``by_left``) or ends with it after a left symbol written inside the gap
(``by_right``), as queued codes (:func:`_own_item`). The latter are taken last at their
node: the witness keeps the first way found to a record, and those ways write words into
the gap (they climb an array's ``maxItems`` levels one written element at a time).

**Origins move up to gaps.** A gap ``G`` in the ε-closure of an origin ``o`` (ignored text
can run from ``o`` into the gap: a comment opened in an earlier gap, a line comment over a
piece without a newline) stands for ``o`` at every node from ``G`` on: an item or triple
made there with origin ``o`` takes origin ``G``. This is exact. Whatever a symbol derives
from ``o`` to a node ``q >= G`` it also derives from ``G`` (the lexemes before the gap
written inside it, the one lexeme across it begun inside it: the lexing automaton has that
edge); and what waits at ``o`` waits at ``G`` too, since items are copied into the gaps
their ε-edges enter (:func:`scan_closures`). Without this, every gap an ignored lexeme can
reach from an earlier one kept that gap's items (most of the grammar's) alive at every later
gap: k gaps cost k times the items of one. The leaves of a derivation through a renamed
origin are written from ``G`` on (:func:`unfold_leaves`: a lexeme read before ``G`` is a
whole lexeme inside it).

Every item and triple keeps the first way it was made (the item it advanced or copied,
and the child: a triple or a terminal), so a derivation unfolds from the goal triple.
State lives in arrays the caller passes back in: :func:`earley_run` stops after a number of
pops so that a time budget can be checked between calls.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel

# item columns
I_RULE, I_DOT, I_ORIGIN, I_NODE, I_PREV, I_CHILD, I_WNEXT, I_ANEXT, I_COST = range(9)
ITEM_COLUMNS = 9
# triple columns
T_ORIGIN, T_HEAD, T_END, T_PREV, T_CHILD, T_CNEXT, T_COST = range(7)
TRIPLE_COLUMNS = 7
COST_CAP = 1 << 40  # (bytes of the symbols' words written inside gaps: see _cost)
RECORD_COST_CAP = (1 << 30) - 1
"""The most a record's cost column holds (columns are int32 where ids fit: see
:func:`new_state`); a cost only chooses between ways to a record."""
NARROW_LIMIT = (1 << 31) - 2
"""The largest id or code an int32 record column takes (:func:`record_codes_fit`)."""
CHEAPER = 16
"""How much cheaper (in bytes written inside gaps) another way to a record must be to
replace the first one found: enough to keep a witness from writing a symbol's long word into
a gap, not so little that small savings trade plain fillers for ones that comment the next
piece out (the cost does not see ignored text), which the real lexer often refuses."""
APART = 128
"""How much cheaper (bytes written inside gaps) a way from a gap must be than the record from the
gap before it that stands for it to get a record of its own (see :func:`_construct`)."""
# the columns of `heads` after the agenda and completion list heads: see earley_run
H_ORIGIN = 2
H_HASHED = 3  # (1 where a triple from a gap to this node went into the hash table: see _construct)
# counters
C_ITEMS, C_TRIPLES, C_NODE, C_FOUND, C_PHASE = range(5)
# (within one earley_run: _construct's pending advances and pops, and the rows it needs)
C_ADV, C_LATE, C_POPS, C_NEED_ITEMS, C_NEED_TRIPLES, C_NEED_ADV, C_NEED_LATE = range(5, 12)
C_HASHED, C_NEED_HASHED = 12, 13  # (triples in the hash table, and the room it needs)
C_MERGE = 14  # (1: records from gaps merge, see _construct)
C_LOCAL, C_NEED_LOCAL = 15, 16  # (items at the node being settled in its own table, and the room it needs)
COUNTERS = 17
MERGE_GAP_ORIGINS = True
"""Whether new states merge the records that differ only in the gap they begin at (see
:func:`_construct`); the tests turn it off to compare decisions."""
NEAR_ID = (1 << 32) - 1
NEAR_LIMIT = 1 << 20
"""The most entries of the table of triples from a gap to the current node (gaps times symbols,
8 bytes each: :func:`new_state`); a text and grammar larger than that keep them all hashed."""

NONE = -1


@kernel(inline="always")
def _slot(key, mask):
    h = np.uint64(key)  # splitmix64's finaliser: every bit of the key reaches the low bits
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h = h ^ (h >> np.uint64(31))
    return np.int64(h & np.uint64(mask))


@kernel
def _lookup(keys, values, key):
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while True:
        k = keys[s]
        if k == key:
            return values[s]
        if k == -1:
            return -1
        s = (s + 1) & mask


@kernel
def _insert(keys, values, key, value):
    """Sets ``key`` (absent) to ``value``; the table must have a free slot."""
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while keys[s] != -1:
        s = (s + 1) & mask
    keys[s] = key
    values[s] = value


@kernel(inline="always")
def _set(keys, values, key, value):
    """Sets ``key`` to ``value``, present or not; the table must have a free slot."""
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while keys[s] != -1 and keys[s] != key:
        s = (s + 1) & mask
    keys[s] = key
    values[s] = value


@kernel
def _grown_table(keys, values):
    new_keys = np.full(keys.shape[0] * 2, -1, dtype=np.int64)
    new_values = np.full(keys.shape[0] * 2, -1, dtype=values.dtype)
    for s in range(keys.shape[0]):
        if keys[s] != -1:
            _insert(new_keys, new_values, keys[s], values[s])
    return new_keys, new_values


@kernel
def _grown_rows(rows):
    out = np.empty((rows.shape[0] * 2, rows.shape[1]), dtype=rows.dtype)
    out[:rows.shape[0]] = rows
    return out


@kernel
def epsilon_closures(eps_start, eps_to, live):
    """Every live node's ε-closure (itself first): ``nodes[first[n]:last[n]]``; ε-edges
    (``eps_to[eps_start[n]:eps_start[n + 1]]``) go forward."""
    count = eps_start.shape[0] - 1
    first = np.zeros(count, dtype=np.int64)
    last = np.zeros(count, dtype=np.int64)
    nodes = np.empty(max(16, 2 * count), dtype=np.int64)
    stamp = np.full(count, -1, dtype=np.int64)
    used = 0
    for n in range(count - 1, -1, -1):
        if not live[n]:
            continue
        if eps_start[n] == eps_start[n + 1]:
            if used == nodes.shape[0]:
                nodes = np.concatenate((nodes, nodes))
            first[n] = used
            nodes[used] = n
            used += 1
            last[n] = used
            continue
        begin = used
        stamp[n] = n
        if used == nodes.shape[0]:
            nodes = np.concatenate((nodes, nodes))
        nodes[used] = n
        used += 1
        for e in range(eps_start[n], eps_start[n + 1]):
            b = eps_to[e]
            for c in range(first[b], last[b]):
                m = nodes[c]
                if stamp[m] != n:
                    stamp[m] = n
                    if used == nodes.shape[0]:
                        nodes = np.concatenate((nodes, nodes))
                    nodes[used] = m
                    used += 1
        first[n] = begin
        last[n] = used
    return first, last, nodes[:used]


@kernel(inline="always")
def _append(nodes, used, node):
    if used == nodes.shape[0]:
        nodes = np.concatenate((nodes, nodes))
    nodes[used] = node
    return nodes, used + 1


@kernel
def scan_closures(eps_start, eps_to, live, is_gap, clo_first, clo_last, clo_nodes):
    """Where an item at each live node scans from: ``own`` (``nodes[own_first[n]:
    own_last[n]]``), the nodes its ε-edges reach without entering a gap node other than
    ``n``, itself first; and ``enter``, the gap nodes entered first on the others, none in
    another's ε-closure (:func:`epsilon_closures`), into which the item is copied instead:
    their items scan the rest once for every earlier node."""
    count = eps_start.shape[0] - 1
    own_first = np.zeros(count, dtype=np.int64)
    own_last = np.zeros(count, dtype=np.int64)
    own = np.empty(max(16, 2 * count), dtype=np.int64)
    enter_first = np.zeros(count, dtype=np.int64)
    enter_last = np.zeros(count, dtype=np.int64)
    enter = np.empty(16, dtype=np.int64)
    stamp = np.full(count, -1, dtype=np.int64)
    covered = np.full(count, -1, dtype=np.int64)
    used = 0
    entered = 0
    for n in range(count - 1, -1, -1):
        if not live[n]:
            continue
        begin = used
        stamp[n] = n
        own, used = _append(own, used, n)
        candidates = entered
        for e in range(eps_start[n], eps_start[n + 1]):
            b = eps_to[e]
            if not live[b]:
                continue
            if is_gap[b]:
                if stamp[b] != n:
                    stamp[b] = n
                    enter, entered = _append(enter, entered, b)
                continue
            for c in range(own_first[b], own_last[b]):
                m = own[c]
                if stamp[m] != n:
                    stamp[m] = n
                    own, used = _append(own, used, m)
            for c in range(enter_first[b], enter_last[b]):
                g = enter[c]
                if stamp[g] != n:
                    stamp[g] = n
                    enter, entered = _append(enter, entered, g)
        own_first[n] = begin
        own_last[n] = used
        for c in range(candidates, entered):  # what another entered gap reaches is not entered
            g = enter[c]
            for d in range(clo_first[g] + 1, clo_last[g]):
                covered[clo_nodes[d]] = n
        kept = candidates
        for c in range(candidates, entered):
            if covered[enter[c]] != n:
                enter[kept] = enter[c]
                kept += 1
        entered = kept
        enter_first[n] = candidates
        enter_last[n] = entered
    return own_first, own_last, own[:used], enter_first, enter_last, enter[:entered]


@kernel
def closures_holding(clo_first, clo_last, clo_nodes, is_gap):
    """Per gap node G: G, then every other node whose ε-closure holds G, as
    ``nodes[first[G]:first[G + 1]]`` (nothing for other nodes). Closures (of
    :func:`epsilon_closures`) hold live nodes only."""
    count = clo_first.shape[0]
    first = np.zeros(count + 1, dtype=np.int64)
    for o in range(count):
        for c in range(clo_first[o], clo_last[o]):
            if is_gap[clo_nodes[c]]:
                first[clo_nodes[c] + 1] += 1
    for n in range(count):
        first[n + 1] += first[n]
    nodes = np.empty(first[count], dtype=np.int64)
    fill = first[:count].copy()
    for n in range(count):
        if first[n + 1] > first[n]:  # a live gap: itself first
            nodes[fill[n]] = n
            fill[n] += 1
    for o in range(count):
        for c in range(clo_first[o], clo_last[o]):
            n = clo_nodes[c]
            if is_gap[n] and n != o:
                nodes[fill[n]] = o
                fill[n] += 1
    return first, nodes


def record_codes_fit(node_count: int, n_symbols: int, n_rules: int) -> bool:
    """Do the ids and codes a record holds (a symbol written inside a gap,
    ``X * node_count + G``; a gap's own item, ``(rule * 2 + dot) * node_count + G``) fit int32?"""
    return max(n_symbols, 2 * n_rules + 2) * (node_count + 1) + 2 <= NARROW_LIMIT


def new_state(node_count: int, capacity: int = 1024, narrow: bool = True, gaps: int = 0, n_symbols: int = 0):
    """Fresh kernel state: (items, item keys, item values, triples, triple keys, triple
    values, wait keys, wait values, per node [agenda head, completions head, the origin
    items take for it now (see :func:`earley_run`), a triple from a gap to it hashed],
    counters, near: int64 [3, gaps, n_symbols], the triples from each gap to the current node
    (one row when they merge), the items waiting at each gap for each symbol, and the next gap
    from each where some wait for it (see :func:`_construct`), or [3, 0, 0] above
    :data:`NEAR_LIMIT`). With ``narrow``
    (:func:`record_codes_fit`), the records and the tables' values are int32: the
    construction is bound by memory traffic, and half the bytes made the slowest JSON Schema
    checks 10-18 % faster (docs/benchmarks.md); keys stay int64. Last, the node being settled's
    own item table (int64 [slots, 2]: key, value; see :func:`_item_at`): its items are most
    lookups, and a table of one node's items stays in the cache where the whole one did not
    (4-7 % on the slowest schema and JSON constructions)."""
    table = 1
    while table < 4 * capacity:
        table *= 2
    heads = np.full((node_count, 4), -1, dtype=np.int64)
    heads[:, H_ORIGIN] = np.arange(node_count)
    heads[:, H_HASHED] = 0
    near = np.full((3, gaps, n_symbols) if gaps * n_symbols <= NEAR_LIMIT else (3, 0, 0), -1, dtype=np.int64)
    counters = np.zeros(COUNTERS, dtype=np.int64)
    counters[C_FOUND] = -1
    counters[C_MERGE] = MERGE_GAP_ORIGINS and near.shape[1] > 0  # (merged, a triple's gaps are found through near)
    column = np.int32 if narrow else np.int64
    return (np.empty((capacity, ITEM_COLUMNS), dtype=column),
            np.full(table, -1, dtype=np.int64), np.full(table, -1, dtype=column),
            np.empty((capacity, TRIPLE_COLUMNS), dtype=column),
            np.full(table, -1, dtype=np.int64), np.full(table, -1, dtype=column),
            np.full(table, -1, dtype=np.int64), np.full(table, -1, dtype=column),
            heads, counters, near, np.full((4096, 2), -1, dtype=np.int64))


# The construction's arrays grow, but inside :func:`_construct` none is ever reassigned: a
# reassigned array is a variable numba joins at every loop head and copies into each helper
# inlined with it, an atomic incref and decref each time, 40 % of a large schema's construction
# (docs/benchmarks.md). :func:`_construct` makes sure of room before it changes anything and
# otherwise stops, saying how much it needs; :func:`earley_run` grows the arrays and calls it again.


@kernel(inline="always")
def _push_advance(adv, n_adv, item, child, node):
    """Queue the advance of ``item`` over ``child`` to ``node`` in row ``n_adv`` (room made
    beforehand); returns the new count."""
    adv[n_adv, 0] = item
    adv[n_adv, 1] = child
    adv[n_adv, 2] = node
    return n_adv + 1


@kernel(inline="always")
def _add_item(items, tables, heads, n_items, key, rule, dot, origin, node, prev, child, cost, at):
    """Item ``n_items`` := (``rule``, ``dot``, ``origin``) at ``node``, made from item ``prev``
    over ``child`` (-1: predicted) at ``cost``, on its node's agenda and under ``key`` in its
    table (``tables``: item keys, item values, the node being settled's own table; ``at``:
    that node and its lowest key, see :func:`_item_at`; room made beforehand: :func:`_fits`).
    Returns 1 where it went into the node's own table."""
    items[n_items, I_RULE] = rule
    items[n_items, I_DOT] = dot
    items[n_items, I_ORIGIN] = origin
    items[n_items, I_NODE] = node
    items[n_items, I_PREV] = prev
    items[n_items, I_CHILD] = child
    items[n_items, I_COST] = cost
    items[n_items, I_WNEXT] = -1
    items[n_items, I_ANEXT] = heads[node, 0]
    heads[node, 0] = n_items
    return _file_item(tables, key, n_items, node, at)


@kernel(inline="always")
def _file_item(tables, key, item, node, at):
    """Files ``item`` at ``node`` under ``key`` (see :func:`_add_item`); returns 1 where it went
    into the node being settled's own table."""
    item_keys, item_values, local = tables
    if node == at[0]:
        _local_insert(local, key, item, at[1])
        return 1
    _set(item_keys, item_values, key, item)
    return 0


@kernel(inline="always")
def _pop_room(rules, text, heads):
    """The most advances one pop of :func:`_construct` queues (it pops with none queued) past
    the items made so far: a completion queues items waiting for its symbol (at its origin, or
    merged at the gaps from there on: each item waits at one node, so at most every item once)
    and a gap's own items of its symbol (a rule each), an item's scan an edge or a gap's loop per
    node of its closure."""
    return rules[0].shape[0] + text[2].shape[0] + heads.shape[0]


@kernel(inline="always")
def _item_at(item_keys, item_values, local, key, target, node, low):
    """The item of ``key`` at node ``target`` (-1: none): those at the node being settled
    (``node``, whose keys are ``low`` and above) are in its own table ``local`` (those made
    before, copied there when it came up: :func:`_local_agenda`)."""
    if target != node:
        return _lookup(item_keys, item_values, key)
    return _local_lookup(local, key, low)


@kernel(inline="always")
def _local_lookup(local, key, low):
    """The value of ``key`` in the node being settled's own table (-1: none)."""
    mask = local.shape[0] - 1
    s = _slot(key, mask)
    while local[s, 0] >= low:  # (keys below are an earlier node's: free slots)
        if local[s, 0] == key:
            return local[s, 1]
        s = (s + 1) & mask
    return -1


@kernel(inline="always")
def _local_insert(local, key, value, low):
    """Sets ``key`` to ``value`` in the node being settled's own table, whose slots holding keys
    below ``low`` (an earlier node's) are free; the table must have a free slot."""
    mask = local.shape[0] - 1
    s = _slot(key, mask)
    while local[s, 0] >= low and local[s, 0] != key:
        s = (s + 1) & mask
    local[s, 0] = key
    local[s, 1] = value


@kernel(inline="always")
def _local_agenda(items, local, heads, node, n_rules, low, count, is_gap, merge):
    """How many items are already at ``node`` (its agenda: scanned there from earlier nodes);
    unless ``count``, they also go into its own table (of merged ones, the one from the earliest gap)."""
    node_count = heads.shape[0]
    n = 0
    i = heads[node, 0]
    while i != -1:
        n += 1
        if not count:
            key = _item_key(node, items[i, I_RULE], items[i, I_DOT], items[i, I_ORIGIN], n_rules, node_count, is_gap,
                            merge)
            j = _local_lookup(local, key, low)
            if j == -1 or items[j, I_ORIGIN] > items[i, I_ORIGIN]:
                _local_insert(local, key, i, low)
        i = items[i, I_ANEXT]
    return n


@kernel(inline="always")
def _origin_code(origin, node_count, is_gap, merge):
    """The origin's part of a record's key: with ``merge``, every gap's is ``node_count`` (see :func:`_construct`)."""
    return node_count if merge and is_gap[origin] else origin


@kernel(inline="always")
def _item_key(node, rule, dot, origin, n_rules, node_count, is_gap, merge):
    """An item's key."""
    return ((node * n_rules + rule) * 2 + dot) * (node_count + 1) + _origin_code(origin, node_count, is_gap, merge)


@kernel(inline="always")
def _triple_key(origin, head, end, n_symbols, node_count, is_gap, merge):
    """A triple's key."""
    return (_origin_code(origin, node_count, is_gap, merge) * n_symbols + head) * node_count + end


@kernel(inline="always")
def _fits(rows, keys, n):
    """Is there room for ``n`` records in ``rows`` and in its hash table ``keys`` (at most
    half full)?"""
    return n <= rows.shape[0] and 2 * n + 2 <= keys.shape[0]


@kernel
def terminals_ahead(edge_start, edge_t, clo_first, clo_last, clo_nodes, is_gap, can_end, n_terminals, words):
    """uint64 [nodes, words]: the terminals a scan at each node can read (the labels of the
    edges leaving its ε-closure; every terminal where the closure holds a gap), and bit
    ``n_terminals`` where the text can end."""
    node_count = clo_first.shape[0]
    ahead = np.zeros((node_count, words), dtype=np.uint64)
    for node in range(node_count):
        if can_end[node]:
            ahead[node, n_terminals // 64] |= np.uint64(1) << np.uint64(n_terminals % 64)
        for c in range(clo_first[node], clo_last[node]):
            source = clo_nodes[c]
            if is_gap[source]:
                ahead[node, :] = ~np.uint64(0)
                break
            for e in range(edge_start[source], edge_start[source + 1]):
                t = edge_t[e]
                ahead[node, t // 64] |= np.uint64(1) << np.uint64(t % 64)
    return ahead


@kernel(inline="always")
def _can_start(first_bits, ahead, symbol, node):
    """Can a word of ``symbol`` begin with a terminal a scan at ``node`` reads? An item that
    waits for a symbol that cannot is never advanced: it is not made."""
    for w in range(ahead.shape[1]):
        if first_bits[symbol, w] & ahead[node, w]:
            return True
    return False


@kernel(inline="always")
def _moved_up(origin, until, clo_first, clo_last, clo_nodes, is_gap):
    """The latest gap up to node ``until`` in ``origin``'s ε-closure (``origin`` itself when
    none): the origin an item made at ``until`` may take."""
    moved = origin
    for c in range(clo_first[origin], clo_last[origin]):
        g = clo_nodes[c]
        if is_gap[g] and moved < g <= until:
            moved = g
    return moved


@kernel(inline="always")
def _cost(items, triples, word_length, n_terminals, node_count, prev, child):
    """What the witness of an item or triple made from ``prev`` over ``child`` costs: the
    bytes of the symbols' shortest words it writes inside gaps. A record keeps the first
    way found to it unless another is much cheaper (:data:`CHEAPER`); costs only fall, so the
    ways stay a tree (a record costs at least what every record under it costs)."""
    cost = 0
    if prev >= 0:
        cost = items[prev, I_COST]
    elif prev < -1:
        cost = word_length[(-2 - prev) // node_count]
    if child >= 0:
        cost += triples[child, T_COST]
    elif child < -1:
        leaf = -2 - child
        if leaf // node_count >= n_terminals:
            cost += word_length[leaf // node_count]
    return min(cost, RECORD_COST_CAP)


@kernel(inline="always")
def _own_item(rule, dot, gap, node_count):
    """The advance-buffer code of a gap's own item: ``rule`` with its dot at 0 (nothing read
    yet) or 1 (its left symbol written inside the gap), origin ``gap``."""
    return -2 - ((rule * 2 + dot) * node_count + gap)


@kernel
def _gap_scan_count(gap, own_first, own_last, own_nodes, edge_start, edge_t, by_left_start, by_right_start):
    """How many advances :func:`_gap_scans` queues at ``gap``."""
    count = 0
    for c in range(own_first[gap], own_last[gap]):
        source = own_nodes[c]
        for e in range(edge_start[source], edge_start[source + 1]):
            t = edge_t[e]
            count += by_left_start[t + 1] - by_left_start[t] + by_right_start[t + 1] - by_right_start[t]
    return count


@kernel
def _gap_scans(gap, node_count, own_first, own_last, own_nodes, edge_start, edge_to, edge_t, by_left_start, by_left,
               by_right_start, by_right, adv, n_adv):
    """Queue the scans of a gap's own items: every rule that begins with, or (after a left
    symbol inside the gap) ends with, the terminal of an edge leaving the gap (room made
    beforehand: :func:`_gap_scan_count`). Returns the new count."""
    for c in range(own_first[gap], own_last[gap]):
        source = own_nodes[c]
        for e in range(edge_start[source], edge_start[source + 1]):
            t = edge_t[e]
            scanned = -2 - (t * node_count + source)
            for k in range(by_left_start[t], by_left_start[t + 1]):
                n_adv = _push_advance(adv, n_adv, _own_item(by_left[k], 0, gap, node_count), scanned, edge_to[e])
            for k in range(by_right_start[t], by_right_start[t + 1]):
                n_adv = _push_advance(adv, n_adv, _own_item(by_right[k], 1, gap, node_count), scanned, edge_to[e])
    return n_adv


@kernel
def earley_run(rules, sizes, text, items, item_keys, item_values, triples, triple_keys, triple_values, wait_keys,
               wait_values, heads, counters, near, local, max_pops):
    """Runs the construction until the goal triple appears (``counters[C_FOUND]``, its
    triple id), every node is settled (``counters[C_NODE] == node count``), or ``max_pops``
    agenda entries were handled; returns the (possibly grown) arrays.

    ``sizes``: (terminals, symbols, the start symbol) of the grammar; ``rules``: (rule_head,
    rule_left, rule_right, rules_start, rules_of, first_bits, follow_bits, derives,
    word_length, by_left_start, by_left, by_right_start, by_right) of
    :class:`.bar_hillel.EarleyTables` (``derives``: the symbols with a word, a terminal's
    lexemes not empty); ``text``: the automaton,
    (edge_start, edge_to, edge_t, clo_first, clo_last, clo_nodes, is_gap, can_end, ahead,
    gap_of_first, gap_of, from_start, next_gap, scans, gap_rank, gap_nodes, start_gap) (see
    :func:`terminals_ahead`, :func:`closures_holding`; ``from_start``: the nodes of the start's
    ε-closure; ``next_gap``: the first gap node after each node; ``scans``:
    :func:`scan_closures`; ``gap_rank``: a gap node's row of ``near``, -1 at other nodes;
    ``gap_nodes``: the gap nodes in order; ``start_gap``: the latest gap of ``from_start`` up to
    each node, -1 where none).
    ``heads[o, H_ORIGIN]``: the origin an item made now with origin ``o`` takes (the latest
    gap settled in ``o``'s ε-closure; an item made at a node past the next gap may take a later one).
    ``local``: the node being settled's own item table (:func:`new_state`), returned last."""
    # a pending advance: (item, child, target node), room for a pop's at once (it grew from 64
    # rows by doubling, copying, at each call); the late ones: see _construct
    adv = np.empty((items.shape[0] + _pop_room(rules, text, heads), 3), dtype=np.int64)
    late = np.empty((64, 3), dtype=np.int64)
    counters[C_ADV] = 0
    counters[C_LATE] = 0
    counters[C_POPS] = 0
    while _construct(rules, sizes, text, items, item_keys, item_values, triples, triple_keys, triple_values, wait_keys,
                     wait_values, heads, counters, near, (adv, late, local), max_pops):
        while 2 * counters[C_NEED_LOCAL] + 2 > local.shape[0]:
            local = _grown_local(local, counters[C_NODE] * 2 * rules[0].shape[0] * (heads.shape[0] + 1))
        while not _fits(items, item_keys, counters[C_NEED_ITEMS]):
            if counters[C_NEED_ITEMS] > items.shape[0]:
                items = _grown_rows(items)
            if 2 * counters[C_NEED_ITEMS] + 2 > item_keys.shape[0]:
                item_keys, item_values = _grown_table(item_keys, item_values)
                wait_keys, wait_values = _grown_table(wait_keys, wait_values)  # (no more entries than items)
        while counters[C_NEED_TRIPLES] > triples.shape[0]:
            triples = _grown_rows(triples)
        while 2 * counters[C_NEED_HASHED] + 2 > triple_keys.shape[0]:
            triple_keys, triple_values = _grown_table(triple_keys, triple_values)
        while adv.shape[0] < counters[C_NEED_ADV]:
            adv = _grown_rows(adv)
        while late.shape[0] < counters[C_NEED_LATE]:
            late = _grown_rows(late)
    return items, item_keys, item_values, triples, triple_keys, triple_values, wait_keys, wait_values, local


TWIN = -2
"""``I_ANEXT`` (free once an item is popped) of an item waiting at a gap whose twin waits at the next gap."""


@kernel
def _mark_twins(items, near, local, gap, row, n_rules, is_gap, low):
    """Once ``gap`` is settled, marks the items waiting at the gap before it (``row``) that also
    wait at ``gap`` (the same rule, dot and origin, or that from an earlier gap): a triple that
    reaches both advances them from ``gap``, the same records (see :func:`_construct`)."""
    node_count = is_gap.shape[0]
    for x in range(near.shape[2]):
        j = near[1, row, x]
        while j != -1:
            key = _item_key(gap, items[j, I_RULE], items[j, I_DOT], items[j, I_ORIGIN], n_rules, node_count, is_gap,
                            True)
            t = _local_lookup(local, key, low)
            if t != -1 and items[t, I_ORIGIN] <= items[j, I_ORIGIN]:
                items[j, I_ANEXT] = TWIN
            j = items[j, I_WNEXT]


@kernel
def _grown_local(local, low):
    """The node being settled's own item table, twice the size (its keys are ``low`` and above)."""
    grown = np.full((local.shape[0] * 2, 2), -1, dtype=np.int64)
    for s in range(local.shape[0]):
        if local[s, 0] >= low:
            _local_insert(grown, local[s, 0], local[s, 1], low)
    return grown


@kernel
def _construct(rules, sizes, text, items, item_keys, item_values, triples, triple_keys, triple_values, wait_keys,
               wait_values, heads, counters, near, queues, max_pops):
    """:func:`earley_run`'s work, with ``queues`` its advance buffers (``adv``, ``late``). Returns False
    when it stops there (goal, every node, ``max_pops``), True where an array needs room
    first: ``counters[C_NEED_*]`` say for how many rows; the state in ``counters`` lets it
    go on from there when called again.

    Nine in ten triples looked up in a large JSON Schema's construction run from a gap to the
    node being settled (a symbol begun in the gap, ended here). Those are kept in ``near[0]``
    (row ``gap_rank[gap]``, row 0 when gaps merge, column symbol: ``node << 32 | triple``,
    valid while ``node`` is the one being settled), which stays in the cache where the hash
    table did not; the rest are hashed, and a node that got a triple from a gap before it was
    settled (a scan that ends there) is marked ``heads[node, H_HASHED]`` so that its lookups
    try the hash table too. Their completions look for the items waiting at the gap:
    ``near[1]`` (row, symbol) holds the first, where the wait table holds those at other nodes,
    and ``near[2]`` (row, symbol) the first row from there on that holds some.

    **Records from gaps merge** (``counters[C_MERGE]``). What a symbol derives from a gap E to
    a node q it also derives from every later gap up to q (that gap can hold what E and the
    pieces between hold), so a record whose origin is a gap stands for the same record from
    every later gap: records that differ only in the gap they begin at share one key, and the
    first one made is kept unless one from an earlier gap comes (it is made, and the key is
    its from then on). A triple from gap E advances the items waiting for its head at every
    gap from E to its end, and its derivation, used from a later gap G, writes what it read
    before G inside G (:func:`unfold_leaves`). Each gap had kept its own records past the
    next gap, the same climbs as the later gap's: two in three of a Kubernetes schema's
    triples. A way from the gap after the one of the record that stands for it, much cheaper
    (:data:`APART`), gets a record of its own (under the key of its own gap), so that what
    waits at that gap keeps a short witness: counted repetitions otherwise climbed one element
    at a time through the earlier gap's record. (Against any earlier gap, costs that add up
    over many gaps set most ways apart: JSON texts with 64 gaps took 2.4 times as long.)"""
    n_terminals, n_symbols, start_symbol = sizes
    adv, late, local = queues
    tables = (item_keys, item_values, local)
    (rule_head, rule_left, rule_right, rules_start, rules_of, first_bits, follow_bits, derives, word_length,
     by_left_start, by_left, by_right_start, by_right) = rules
    (edge_start, edge_to, edge_t, clo_first, clo_last, clo_nodes, is_gap, can_end, ahead, gap_of_first, gap_of,
     from_start, next_gap, scans, gap_rank, gap_nodes, start_gap) = text
    own_first, own_last, own_nodes, enter_first, enter_last, enter_nodes = scans
    node_count = heads.shape[0]
    merge = counters[C_MERGE] != 0
    n_rules = rule_head.shape[0]
    n_items = counters[C_ITEMS]
    n_triples = counters[C_TRIPLES]
    n_hashed = counters[C_HASHED]
    nearby = near.shape[1] > 0
    node = counters[C_NODE]
    n_adv = counters[C_ADV]
    n_late = counters[C_LATE]
    pops = counters[C_POPS]
    n_local = counters[C_LOCAL]
    counters[C_NEED_LOCAL] = 0
    counters[C_NEED_ITEMS] = 0
    counters[C_NEED_TRIPLES] = 0
    counters[C_NEED_HASHED] = 0
    counters[C_NEED_ADV] = 0
    counters[C_NEED_LATE] = 0
    pop_room = _pop_room(rules, text, heads)
    low = node * 2 * n_rules * (node_count + 1)  # (the lowest key of an item at `node`)
    if counters[C_PHASE] == 0:  # predict the start at node 0
        k = rules_start[start_symbol + 1] - rules_start[start_symbol]
        if not _fits(items, item_keys, n_items + k) or not _fits(items, local, n_local + k):
            counters[C_NEED_ITEMS] = n_items + k
            counters[C_NEED_LOCAL] = n_local + k
            return True
        counters[C_PHASE] = 1
        for k in range(rules_start[start_symbol], rules_start[start_symbol + 1]):
            r = rules_of[k]
            if not _can_start(first_bits, ahead, rule_left[r], 0):
                continue
            key = _item_key(0, r, 0, 0, n_rules, node_count, is_gap, merge)
            if _item_at(item_keys, item_values, local, key, 0, node, low) != -1:
                continue
            n_local += _add_item(items, tables, heads, n_items, key, r, 0, 0, 0, -1, -1, 0, (node, low))
            n_items += 1
    if counters[C_PHASE] == 1:  # the gap's own items' scans, once per gap node (node 0 here)
        if is_gap[node]:
            k = _gap_scan_count(node, own_first, own_last, own_nodes, edge_start, edge_t, by_left_start,
                                by_right_start)
            if n_adv + k > adv.shape[0]:
                counters[C_ITEMS] = n_items
                counters[C_NEED_ADV] = n_adv + k
                return True
            n_adv = _gap_scans(node, node_count, own_first, own_last, own_nodes, edge_start, edge_to, edge_t,
                               by_left_start, by_left, by_right_start, by_right, adv, n_adv)
        counters[C_PHASE] = 2
    # `late`: advances that write a symbol's word inside a gap to complete a gap's own item,
    # taken when nothing else is left at the node: the first way found to a record is the one
    # its witness keeps, and these climb counted repetitions one written element at a time
    # (each level of an array's maxItems) where a plain way to the same record comes later
    need = False
    while node < node_count and counters[C_FOUND] < 0:
        # the fixpoint at `node`
        while True:
            if n_adv == 0:
                if pops >= max_pops and n_late == 0:
                    break
                if n_items + pop_room > adv.shape[0]:
                    counters[C_NEED_ADV] = n_items + pop_room
                    need = True
                    break
                c = heads[node, 1]
                if c != -1:  # a completion: advance what waits for its head at its origin
                    o = triples[c, T_ORIGIN]
                    a = triples[c, T_HEAD]
                    own = is_gap[o] and o != node  # the gap's own items that wait for a
                    if own and n_late + by_right_start[a + 1] - by_right_start[a] > late.shape[0]:
                        counters[C_NEED_LATE] = n_late + by_right_start[a + 1] - by_right_start[a]
                        need = True
                        break
                    pops += 1
                    heads[node, 1] = triples[c, T_CNEXT]
                    # the items waiting for a at its origin; merged, at every gap from there to here
                    # (near[2]: the next row with some; an item whose twin waits at the next gap, in range, is
                    # advanced from there: _mark_twins)
                    row = gap_rank[o]
                    if merge and row >= 0:
                        row = near[2, row, a]
                        while row != -1 and gap_nodes[row] <= node:
                            j = near[1, row, a]
                            twins = row + 1 < gap_nodes.shape[0] and gap_nodes[row + 1] <= node
                            while j != -1:
                                if not (twins and items[j, I_ANEXT] == TWIN):
                                    n_adv = _push_advance(adv, n_adv, j, c, node)
                                j = items[j, I_WNEXT]
                            row = near[2, row + 1, a] if row + 1 < gap_nodes.shape[0] else -1
                    else:
                        j = near[1, row, a] if nearby and row >= 0 else _lookup(wait_keys, wait_values, o * n_symbols + a)
                        while j != -1:
                            n_adv = _push_advance(adv, n_adv, j, c, node)
                            j = items[j, I_WNEXT]
                    if own:
                        for k in range(by_left_start[a], by_left_start[a + 1]):
                            n_adv = _push_advance(adv, n_adv, _own_item(by_left[k], 0, o, node_count), c, node)
                        for k in range(by_right_start[a], by_right_start[a + 1]):
                            n_late = _push_advance(late, n_late, _own_item(by_right[k], 1, o, node_count), c, node)
                else:
                    i = heads[node, 0]
                    if i == -1:
                        if n_late == 0:
                            break
                        if n_late > adv.shape[0]:
                            counters[C_NEED_ADV] = n_late
                            need = True
                            break
                        while n_late:
                            n_late -= 1
                            n_adv = _push_advance(adv, n_adv, late[n_late, 0], late[n_late, 1], late[n_late, 2])
                        continue
                    r = items[i, I_RULE]
                    x = rule_left[r] if items[i, I_DOT] == 0 else rule_right[r]
                    made = enter_last[node] - enter_first[node]  # the most items this pop makes
                    if x >= n_terminals:
                        made += rules_start[x + 1] - rules_start[x]
                    if not _fits(items, item_keys, n_items + made) or not _fits(items, local, n_local + made):
                        counters[C_NEED_ITEMS] = n_items + made
                        counters[C_NEED_LOCAL] = n_local + made
                        need = True
                        break
                    pops += 1
                    heads[node, 0] = items[i, I_ANEXT]
                    if x < n_terminals:  # scan x from the nodes the ε-edges reach short of a gap
                        for c in range(own_first[node], own_last[node]):
                            source = own_nodes[c]
                            scanned = -2 - (x * node_count + source)  # the child: x read from source
                            for e in range(edge_start[source], edge_start[source + 1]):
                                if edge_t[e] == x:
                                    n_adv = _push_advance(adv, n_adv, i, scanned, edge_to[e])
                            if is_gap[source] and derives[x]:  # a whole lexeme inside the gap
                                n_adv = _push_advance(adv, n_adv, i, scanned, source)
                    else:
                        key = node * n_symbols + x
                        waits_near = nearby and gap_rank[node] >= 0
                        if waits_near:
                            head = near[1, gap_rank[node], x]
                        else:
                            head = _lookup(wait_keys, wait_values, key)
                        if head == -1:
                            if waits_near:
                                row = gap_rank[node]
                                near[1, row, x] = i
                                while row >= 0 and near[2, row, x] == -1:  # (this gap is the next with some)
                                    near[2, row, x] = gap_rank[node]
                                    row -= 1
                            else:
                                _insert(wait_keys, wait_values, key, i)
                            items[i, I_WNEXT] = -1
                            # predict x here; a gap predicts nothing: its own items are implicit
                            last = rules_start[x] if is_gap[node] else rules_start[x + 1]
                            for k in range(rules_start[x], last):
                                r2 = rules_of[k]
                                if not _can_start(first_bits, ahead, rule_left[r2], node):
                                    continue
                                key2 = _item_key(node, r2, 0, node, n_rules, node_count, is_gap, merge)
                                if _item_at(item_keys, item_values, local, key2, node, node, low) != -1:
                                    continue
                                n_local += _add_item(items, tables, heads, n_items, key2, r2, 0, node, node, -1, -1, 0,
                                                     (node, low))
                                n_items += 1
                        else:  # link i second in the list (the head stays in the table)
                            items[i, I_WNEXT] = items[head, I_WNEXT]
                            items[head, I_WNEXT] = i
                        if is_gap[node] and derives[x]:  # a word of x written inside the gap
                            n_adv = _push_advance(adv, n_adv, i, -2 - (x * node_count + node), node)
                    # a gap the ε-edges enter: the item is copied there, to scan and wait from it
                    for c in range(enter_first[node], enter_last[node]):
                        g = enter_nodes[c]
                        origin = _moved_up(heads[items[i, I_ORIGIN], H_ORIGIN], g, clo_first, clo_last, clo_nodes,
                                           is_gap)
                        key = _item_key(g, r, items[i, I_DOT], origin, n_rules, node_count, is_gap, merge)
                        j = _item_at(item_keys, item_values, local, key, g, node, low)
                        if j == -1 or items[j, I_ORIGIN] > origin:  # (merged: a later gap's stands for it)
                            n_local += _add_item(items, tables, heads, n_items, key, r, items[i, I_DOT], origin, g, i,
                                                 -1, items[i, I_COST], (node, low))
                            n_items += 1
                continue
            # one advance: item over its waited symbol to `target`; it makes an item or a triple
            if not _fits(items, item_keys, n_items + 1) or not _fits(items, local, n_local + 1):
                counters[C_NEED_ITEMS] = n_items + 1
                counters[C_NEED_LOCAL] = n_local + 1
                need = True
                break
            if n_triples + 1 > triples.shape[0] or 2 * (n_hashed + 1) + 2 > triple_keys.shape[0]:
                counters[C_NEED_TRIPLES] = n_triples + 1
                counters[C_NEED_HASHED] = n_hashed + 1
                need = True
                break
            n_adv -= 1
            i = adv[n_adv, 0]
            child = adv[n_adv, 1]
            target = adv[n_adv, 2]
            if i >= 0:
                r = items[i, I_RULE]
                dot = items[i, I_DOT]
                origin = heads[items[i, I_ORIGIN], H_ORIGIN]
                prev = i
            else:  # a gap's own item (see _own_item): made first here
                code = -2 - i
                gap = code % node_count
                r = code // node_count // 2
                dot = code // node_count % 2
                origin = heads[gap, H_ORIGIN]
                prev = -1 if dot == 0 else -2 - (rule_left[r] * node_count + gap)
            if target >= next_gap[node]:  # past a gap not settled yet: it may stand for the origin too
                origin = _moved_up(origin, target, clo_first, clo_last, clo_nodes, is_gap)
            if dot == 0 and rule_right[r] >= 0:
                if not _can_start(first_bits, ahead, rule_right[r], target):
                    continue
                key = _item_key(target, r, 1, origin, n_rules, node_count, is_gap, merge)
                cost = _cost(items, triples, word_length, n_terminals, node_count, prev, child)
                j = _item_at(item_keys, item_values, local, key, target, node, low)
                if j != -1 and items[j, I_ORIGIN] < origin:  # merged, from an earlier gap: it stands for this one,
                    if cost + APART >= items[j, I_COST] or gap_rank[origin] != gap_rank[items[j, I_ORIGIN]] + 1:
                        continue
                    # unless this one is much cheaper (the witness of what waits at the later gap): its own record
                    key = _item_key(target, r, 1, origin, n_rules, node_count, is_gap, False)
                    j = _item_at(item_keys, item_values, local, key, target, node, low)
                elif j != -1 and items[j, I_ORIGIN] > origin:  # this one stands for it from now on
                    j = -1
                if j != -1:
                    if cost + CHEAPER < items[j, I_COST]:  # a much cheaper way to the same item: the witness takes it
                        items[j, I_PREV] = prev
                        items[j, I_CHILD] = child
                        items[j, I_COST] = cost
                    continue
                n_local += _add_item(items, tables, heads, n_items, key, r, 1, origin, target, prev, child, cost,
                                     (node, low))
                n_items += 1
            else:
                a = rule_head[r]
                if not _can_start(follow_bits, ahead, a, target):
                    continue  # nothing that may follow A is read at `target`, nor can the text end there
                key = _triple_key(origin, a, target, n_symbols, node_count, is_gap, merge)
                cost = _cost(items, triples, word_length, n_terminals, node_count, prev, child)
                row = gap_rank[origin] if nearby and target == node else -1
                if merge and row > 0:
                    row = 0  # (merged: one row)
                if row >= 0:
                    t = near[0, row, a]
                    t = t & NEAR_ID if t >> 32 == target else -1
                    if t == -1 and heads[target, H_HASHED]:
                        t = _lookup(triple_keys, triple_values, key)
                else:
                    t = _lookup(triple_keys, triple_values, key)
                if t != -1 and triples[t, T_ORIGIN] < origin:  # merged: as for items above
                    if cost + APART >= triples[t, T_COST] or gap_rank[origin] != gap_rank[triples[t, T_ORIGIN]] + 1:
                        continue
                    key = _triple_key(origin, a, target, n_symbols, node_count, is_gap, False)
                    row = -1  # (its own record, hashed under its own key)
                    t = _lookup(triple_keys, triple_values, key)
                elif t != -1 and triples[t, T_ORIGIN] > origin:  # this one stands for it from now on
                    t = -1
                if t != -1:
                    if cost + CHEAPER < triples[t, T_COST]:
                        triples[t, T_PREV] = prev
                        triples[t, T_CHILD] = child
                        triples[t, T_COST] = cost
                    continue
                t = n_triples
                n_triples += 1
                triples[t, T_ORIGIN] = origin
                triples[t, T_HEAD] = a
                triples[t, T_END] = target
                triples[t, T_PREV] = prev
                triples[t, T_CHILD] = child
                triples[t, T_COST] = cost
                triples[t, T_CNEXT] = heads[target, 1]
                heads[target, 1] = t
                if row >= 0:
                    near[0, row, a] = (target << 32) | t
                else:
                    _set(triple_keys, triple_values, key, t)
                    n_hashed += 1
                    if gap_rank[origin] >= 0:
                        heads[target, H_HASHED] = 1
                if a == start_symbol and can_end[target] and (from_start[origin] or (
                        merge and is_gap[origin] and start_gap[target] >= origin)):
                    counters[C_FOUND] = t
                    break
        if need or counters[C_FOUND] >= 0 or (pops >= max_pops and n_adv == 0 and n_late == 0):
            break
        if merge and is_gap[node] and gap_rank[node] > 0:  # (again if it stops below: the same)
            _mark_twins(items, near, local, node, gap_rank[node] - 1, n_rules, is_gap, low)
        if node + 1 < node_count and is_gap[node + 1]:  # the next gap's own items' scans: room first
            k = _gap_scan_count(node + 1, own_first, own_last, own_nodes, edge_start, edge_t, by_left_start,
                                by_right_start)
            if n_adv + k > adv.shape[0]:
                counters[C_NEED_ADV] = n_adv + k
                need = True
                break
        if node + 1 < node_count:  # the next node's items so far go into its own table: room first
            k = _local_agenda(items, local, heads, node + 1, n_rules, 0, True, is_gap, merge)
            if 2 * k + 2 > local.shape[0]:
                counters[C_NEED_LOCAL] = k
                need = True
                break
        node += 1
        low = node * 2 * n_rules * (node_count + 1)
        n_local = _local_agenda(items, local, heads, node, n_rules, low, False, is_gap, merge) if node < node_count else 0
        if node < node_count and is_gap[node]:  # from here on the gap stands for the nodes it is in the ε-closure of
            for c in range(gap_of_first[node], gap_of_first[node + 1]):
                heads[gap_of[c], H_ORIGIN] = node
            n_adv = _gap_scans(node, node_count, own_first, own_last, own_nodes, edge_start, edge_to, edge_t,
                               by_left_start, by_left, by_right_start, by_right, adv, n_adv)
    counters[C_ITEMS] = n_items
    counters[C_TRIPLES] = n_triples
    counters[C_HASHED] = n_hashed
    counters[C_NODE] = node
    counters[C_ADV] = n_adv
    counters[C_LATE] = n_late
    counters[C_POPS] = pops
    counters[C_LOCAL] = n_local
    return need


@kernel
def unfold_leaves(items, triples, goal, node_count, n_terminals, best_rule, rule_left, rule_right, start=0):
    """The leaves ``(from node, to node, terminal)`` of the derivation of triple ``goal``,
    leftmost first, from node ``start`` on. A triple whose origin was moved up to a gap (see
    the module docstring), or one from a gap used from a later gap (merged, see
    :func:`_construct`), may have been derived from an earlier node: what it read before that
    gap is written inside it (a record that ends there as one of its symbol's shortest words;
    a lexeme across it begins in it, ``(G, end, t)``). A symbol written inside a gap
    (``-2 - (X * node_count + G)`` as a child or an item's part before) is one of its shortest
    words, ``best_rule`` unfolded."""
    out = np.empty((64, 3), dtype=np.int64)
    n_out = 0
    # tasks: (kind, id, floor); kind 0 a triple, 1 the part of an item before its node, 2 a
    # symbol written inside a gap (id X * node_count + G); floor: the latest origin above,
    # where its leaves may begin at the earliest
    stack_kind = np.empty(64, dtype=np.int64)
    stack_id = np.empty(64, dtype=np.int64)
    stack_floor = np.empty(64, dtype=np.int64)
    stack_kind[0] = 0
    stack_id[0] = goal
    stack_floor[0] = start
    n_stack = 1
    while n_stack:
        n_stack -= 1
        kind = stack_kind[n_stack]
        ident = stack_id[n_stack]
        floor = stack_floor[n_stack]
        if n_stack + 2 > stack_kind.shape[0]:
            stack_kind = np.concatenate((stack_kind, stack_kind))
            stack_id = np.concatenate((stack_id, stack_id))
            stack_floor = np.concatenate((stack_floor, stack_floor))
        if kind == 2:
            symbol = ident // node_count
            gap = max(ident % node_count, floor)
            if symbol < n_terminals:
                if n_out == out.shape[0]:
                    grown = np.empty((out.shape[0] * 2, 3), dtype=np.int64)
                    grown[:n_out] = out
                    out = grown
                out[n_out, 0] = gap
                out[n_out, 1] = gap
                out[n_out, 2] = symbol
                n_out += 1
                continue
            r = best_rule[symbol]  # its left symbol pushed first: the output is built right to left
            stack_kind[n_stack] = 2
            stack_id[n_stack] = rule_left[r] * node_count + gap
            stack_floor[n_stack] = floor
            n_stack += 1
            if rule_right[r] >= 0:
                stack_kind[n_stack] = 2
                stack_id[n_stack] = rule_right[r] * node_count + gap
                stack_floor[n_stack] = floor
                n_stack += 1
            continue
        if kind == 0:
            end = triples[ident, T_END]
            if end <= floor:  # read before the gap it is used from: one of its head's shortest words, inside it
                stack_kind[n_stack] = 2
                stack_id[n_stack] = triples[ident, T_HEAD] * node_count + floor
                stack_floor[n_stack] = floor
                n_stack += 1
                continue
            prev = triples[ident, T_PREV]
            child = triples[ident, T_CHILD]
            floor = max(floor, triples[ident, T_ORIGIN])
        else:
            end = items[ident, I_NODE]
            if end <= floor:  # (as above: its left symbol, if it has read it)
                if items[ident, I_DOT] == 1:
                    stack_kind[n_stack] = 2
                    stack_id[n_stack] = rule_left[items[ident, I_RULE]] * node_count + floor
                    stack_floor[n_stack] = floor
                    n_stack += 1
                continue
            prev = items[ident, I_PREV]
            child = items[ident, I_CHILD]
        if prev >= 0:  # (-1: predicted, nothing before)
            stack_kind[n_stack] = 1
            stack_id[n_stack] = prev
            stack_floor[n_stack] = floor
            n_stack += 1
        elif prev < -1:
            stack_kind[n_stack] = 2
            stack_id[n_stack] = -2 - prev
            stack_floor[n_stack] = floor
            n_stack += 1
        if child >= 0:  # processed first: the output is built right to left
            stack_kind[n_stack] = 0
            stack_id[n_stack] = child
            # (it begins where the item it advanced waited; merged, it may have been made from an earlier gap)
            stack_floor[n_stack] = max(floor, items[prev, I_NODE]) if prev >= 0 else floor
            n_stack += 1
        elif child < -1:  # (-1: an item copied into a gap, no leaf)
            leaf = -2 - child
            if leaf // node_count >= n_terminals:  # a symbol written inside a gap
                stack_kind[n_stack] = 2
                stack_id[n_stack] = leaf
                stack_floor[n_stack] = floor
                n_stack += 1
                continue
            if n_out == out.shape[0]:
                grown = np.empty((out.shape[0] * 2, 3), dtype=np.int64)
                grown[:n_out] = out
                out = grown
            source = leaf % node_count
            if source < floor:  # read before the gap its origin moved up to: written inside it
                source = floor
                end = max(end, floor)
            out[n_out, 0] = source
            out[n_out, 1] = end
            out[n_out, 2] = leaf // node_count
            n_out += 1
    return out[:n_out][::-1].copy()


@kernel(inline="always")
def _push_edge(edges, n_edges, reachable, source, target, terminal):
    """Append the edge (source, target, terminal) and mark its target reachable; returns the
    edge count, or -1 when ``edges`` is full."""
    if n_edges == edges.shape[0]:
        return -1
    edges[n_edges, 0] = source
    edges[n_edges, 1] = target
    edges[n_edges, 2] = terminal
    reachable[target] = True
    return n_edges + 1


@kernel(inline="always")
def _step(walk, j, state, byte):
    """Lexer ``j``'s global state after ``byte`` from global ``state`` (-1: dead), read in its
    own table over byte classes (``walk``: offsets, moves, moves_start, classes, class_of; see
    :class:`.lexings.LexerTables`). Those tables hold a large JSON Schema's hundreds of lexers
    in some 0.5 MB, where the byte table took 9 MB, out of the cache by the time a check lexes
    (the construction runs between two): walking every lexer from each position missed it
    hundreds of times a node."""
    offsets, moves, moves_start, classes, class_of = walk
    target = moves[moves_start[j] + (state - offsets[j]) * classes[j] + class_of[j, byte]]
    return target + offsets[j] if target >= 0 else -1


@kernel
def lex_piece(piece, first, node_base, reachable, walk, accepting, first_moves, longest, edges, survivors):
    """The lexemes that begin at reachable boundary nodes of one fixed piece (positions
    ``first ..`` of ``piece``; node of position i is ``node_base + i``), for every lexer
    from its start states (``first_moves``: per byte b, ``(lexer, global state)`` pairs at
    ``[start[b], start[b + 1])`` of ``(start, lexers, states)``, each start that reads b;
    ``walk``: the lexers' tables over their byte classes, see :func:`_step`). A lexeme ending
    at position e is the edge ``(node_base + i, node_base + e, j)`` (with ``longest[j]``, only
    where its own walk accepts nowhere later in the piece); one that is still alive at the
    piece's end is a survivor ``(node, j, state)`` for the caller to carry across the gap.
    Marks the edges' targets reachable as it goes. Returns (edges written, survivors written),
    or (-1, -1) when an output array is full. (Only the lexers that read a position's byte are
    walked from it: a JSON Schema's hundreds of key lexers read only a quote first.)"""
    n = piece.shape[0]
    n_edges = 0
    n_surv = 0
    first_start, first_lexer, first_state = first_moves
    for i in range(first, n):
        a = node_base + i
        if not reachable[a]:
            continue
        for e in range(first_start[piece[i]], first_start[piece[i] + 1]):
            j = first_lexer[e]
            state = first_state[e]
            last = -1
            position = i + 1
            while True:
                if accepting[state]:
                    if longest[j]:
                        last = position
                    else:
                        n_edges = _push_edge(edges, n_edges, reachable, a, node_base + position, j)
                        if n_edges < 0:
                            return -1, -1
                if position == n:
                    break
                state = _step(walk, j, state, piece[position])
                if state < 0:
                    break
                position += 1
            if last >= 0:
                n_edges = _push_edge(edges, n_edges, reachable, a, node_base + last, j)
                if n_edges < 0:
                    return -1, -1
            if state >= 0:
                if n_surv == survivors.shape[0]:
                    return -1, -1
                survivors[n_surv, 0] = a
                survivors[n_surv, 1] = j
                survivors[n_surv, 2] = state
                n_surv += 1
    return n_edges, n_surv


@kernel
def carried_lexemes(piece, node_base, group_a, group_j, group_start, group_states, walk, accepting, longest,
                    reachable, first):
    """Lexemes carried over a gap into the next ``piece`` (nodes from ``node_base``), group by
    group (group g: begun at node ``group_a[g]``, lexer ``group_j[g]``, in the states
    ``group_states[group_start[g]:group_start[g + 1]]``, global states (``walk``: see :func:`_step`), that the gap
    can take them to; or begun inside the gap, every state their lexer's lexemes reach), those
    states being where the group is after the piece's ``first`` bytes (0 or 1: see
    :func:`first_steps`):
    an edge ``(a, end node, j)`` per position where one of the group's walks ends a lexeme
    (with ``longest[j]``, only the last such position of each walk within the piece), and
    ``(g, state)`` for the states still alive at the piece's end; both in order and distinct
    per group. One pass over every group (a call per group, with its own buffers, was most of
    the time where every lexer begins in a gap: hundreds of groups a gap in a large JSON Schema)."""
    n = piece.shape[0]
    n_groups = group_a.shape[0]
    edges = np.empty((n_groups * (n + 1), 3), dtype=np.int64)  # (at most one edge per group and end)
    survivors = np.empty((group_states.shape[0], 2), dtype=np.int64)
    end_stamp = np.full(n + 1, -1, dtype=np.int64)
    n_edges = 0
    n_surv = 0
    for g in range(n_groups):
        j = group_j[g]
        first_edge = n_edges
        first_surv = n_surv
        for s in range(group_start[g], group_start[g + 1]):
            state = group_states[s]
            last = -1
            position = first
            while True:
                if position > 0 and accepting[state]:
                    if longest[j]:
                        last = position
                    elif end_stamp[position] != g:
                        end_stamp[position] = g
                        edges[n_edges, 1] = position
                        n_edges += 1
                if position == n:
                    break
                state = _step(walk, j, state, piece[position])
                if state < 0:
                    break
                position += 1
            if last >= 0 and end_stamp[last] != g:
                end_stamp[last] = g
                edges[n_edges, 1] = last
                n_edges += 1
            if state >= 0:
                survivors[n_surv, 1] = state
                n_surv += 1
        # in order, as nodes and states; the survivors distinct
        _sort_column(edges, first_edge, n_edges, 1)
        _sort_column(survivors, first_surv, n_surv, 1)
        w = first_surv
        for e in range(first_surv, n_surv):
            if e == first_surv or survivors[e, 1] != survivors[w - 1, 1]:
                survivors[w, 1] = survivors[e, 1]
                w += 1
        n_surv = w
        for e in range(first_edge, n_edges):
            edges[e, 0] = group_a[g]
            edges[e, 1] += node_base
            edges[e, 2] = j
            reachable[edges[e, 1]] = True
        for e in range(first_surv, n_surv):
            survivors[e, 0] = g
    return edges[:n_edges].copy(), survivors[:n_surv].copy()


@kernel(inline="always")
def _sort_column(rows, first, last, column):
    """Sorts ``rows[first:last, column]`` (the other columns are not kept): an insertion sort
    for the few values a group has, numpy's beyond."""
    if last - first > 32:
        rows[first:last, column] = np.sort(rows[first:last, column])
        return
    for k in range(first + 1, last):
        value = rows[k, column]
        m = k - 1
        while m >= first and rows[m, column] > value:
            rows[m + 1, column] = rows[m, column]
            m -= 1
        rows[m + 1, column] = value


REACH_LISTED = 128
"""The most states a lexer may have for :func:`reach_lists` to list each state's reach (its
square bounds the list); a larger lexer's reach is walked at each gap."""


@kernel
def reach_lists(offsets, sizes, moves, moves_start, classes, limit):
    """``(start, states)``: per global state u of a lexer of at most ``limit`` states, the
    global states its automaton reaches from u (u included) at ``states[start[u]:start[u + 1]]``;
    none for a larger lexer's states (``sizes``: states per lexer; ``moves``: see
    :func:`states_across`)."""
    total = offsets[-1] + sizes[-1] if sizes.shape[0] else 0
    start = np.zeros(total + 1, dtype=np.int64)
    count = 0
    for j in range(sizes.shape[0]):
        if sizes[j] <= limit:
            count += sizes[j] * sizes[j]
    states = np.empty(count, dtype=np.int32)
    seen = np.full(max(1, limit), -1, dtype=np.int64)
    stack = np.empty(max(1, limit), dtype=np.int64)
    n = 0
    for j in range(sizes.shape[0]):
        for s in range(sizes[j]):
            u = offsets[j] + s
            start[u] = n
            if sizes[j] > limit:
                continue
            seen[s] = u
            stack[0] = s
            top = 1
            while top:
                top -= 1
                v = stack[top]
                states[n] = v + offsets[j]
                n += 1
                row = moves_start[j] + v * classes[j]
                for c in range(classes[j]):
                    w = moves[row + c]
                    if w >= 0 and seen[w] != u:
                        seen[w] = u
                        stack[top] = w
                        top += 1
    start[total] = n
    return start, states[:n].copy()


@kernel
def states_across(byte, group_j, group_start, group_states, walk, reach, n_states):
    """``(start, states)``: per group g (lexer ``group_j[g]``, in the global states
    ``group_states[group_start[g]:group_start[g + 1]]`` at a gap's start), the distinct states it
    is in once the gap has taken it anywhere its automaton goes and the next piece's first
    ``byte`` is read; :func:`carried_lexemes` (``first`` 1) walks the piece on from them.
    ``reach``: :func:`reach_lists`, where a state's reach is listed (a walk per group cost 1-3
    µs, and a gap inside a JSON key carries hundreds of key lexers across); elsewhere the gap's
    reach is walked over the lexer's byte classes (``walk``: see :func:`_step`), crossing a
    class once, not each of its bytes (``n_states``: the lexers' states in all)."""
    offsets, moves, moves_start, classes, _ = walk
    reach_start, reach_states = reach
    n_groups = group_j.shape[0]
    seen = np.full(n_states, -1, dtype=np.int64)
    after = np.full(n_states, -1, dtype=np.int64)
    stack = np.empty(n_states, dtype=np.int64)
    reached = np.empty(n_states, dtype=np.int64)
    start = np.empty(n_groups + 1, dtype=np.int64)
    states = np.empty(max(16, group_states.shape[0]), dtype=np.int64)
    n = 0
    for g in range(n_groups):
        start[g] = n
        j = group_j[g]
        top = 0
        count = 0
        for k in range(group_start[g], group_start[g + 1]):
            u = group_states[k]
            if reach_start[u + 1] > reach_start[u]:  # listed
                for m in range(reach_start[u], reach_start[u + 1]):
                    v = reach_states[m]
                    if seen[v] != g:
                        seen[v] = g
                        reached[count] = v
                        count += 1
            elif seen[u] != g:
                seen[u] = g
                stack[top] = u
                top += 1
        while top:  # (a larger lexer's) walked
            top -= 1
            u = stack[top]
            reached[count] = u
            count += 1
            row = moves_start[j] + (u - offsets[j]) * classes[j]
            for c in range(classes[j]):
                v = moves[row + c]
                if v >= 0 and seen[v + offsets[j]] != g:
                    seen[v + offsets[j]] = g
                    stack[top] = v + offsets[j]
                    top += 1
        for r in range(count):
            t = _step(walk, j, reached[r], byte)
            if t >= 0 and after[t] != g:
                after[t] = g
                if n == states.shape[0]:
                    states = np.concatenate((states, states))
                states[n] = t
                n += 1
    start[n_groups] = n
    return start, states[:n].copy()


@kernel
def first_steps(walk, n_states, anywhere_start, anywhere, byte):
    """``(start, states)``: per lexer j, ``states[start[j]:start[j + 1]]`` the distinct states
    its lexemes begun anywhere (``anywhere``, by ``anywhere_start``) are in after ``byte``
    (``walk``: see :func:`_step`; ``n_states``: the lexers' states in all). Lexemes begun in a
    gap walk the next piece from these (:func:`carried_lexemes` with ``first`` 1): a format's
    automaton has thousands of states, a few after one byte."""
    seen = np.full(n_states, -1, dtype=np.int64)
    states = np.empty(anywhere.shape[0], dtype=np.int64)
    start = np.empty(anywhere_start.shape[0], dtype=np.int64)
    n = 0
    for j in range(anywhere_start.shape[0] - 1):
        start[j] = n
        for k in range(anywhere_start[j], anywhere_start[j + 1]):
            t = _step(walk, j, anywhere[k], byte)
            if t >= 0 and seen[t] != j:
                seen[t] = j
                states[n] = t
                n += 1
    start[anywhere_start.shape[0] - 1] = n
    return start, states[:n].copy()


@kernel
def reaching(edge_from, edge_to, node_count, final):
    """bool per node: ``final`` is reached from it along the edges (each goes to a later node)."""
    order = np.argsort(edge_from)
    live = np.zeros(node_count, dtype=np.bool_)
    live[final] = True
    for k in range(order.shape[0] - 1, -1, -1):
        e = order[k]
        if live[edge_to[e]]:
            live[edge_from[e]] = True
    return live


@kernel
def nearest_state(table, accepting, sources, order, following, ends_there, any_end):
    """Breadth first over a DFA (``table``: int32 [states, 256], -1 dead) from ``sources``,
    bytes tried in ``order``: the nearest state that, with ``any_end``, accepts, and
    otherwise reads the bytes ``following`` into a live state (an accepting one with
    ``ends_there``); -1 when none. Returns (state, parent, byte): ``parent[s]`` the state
    before ``s`` (-1 at a source, -2 unseen) and ``byte[s]`` the byte between. Every byte
    costs one, so breadth first is Dijkstra here."""
    count = table.shape[0]
    parent = np.full(count, -2, dtype=np.int64)
    via = np.full(count, -1, dtype=np.int64)
    queue = np.empty(count, dtype=np.int64)
    head = 0
    tail = 0
    for s in sources:
        if parent[s] == -2:
            parent[s] = -1
            queue[tail] = s
            tail += 1
    while head < tail:
        s = queue[head]
        head += 1
        if any_end:
            if accepting[s]:
                return s, parent, via
        else:
            t = s
            for byte in following:
                t = table[t, byte]
                if t < 0:
                    break
            if t >= 0 and (not ends_there or accepting[t]):
                return s, parent, via
        for k in range(256):
            b = order[k]
            t = table[s, b]
            if t >= 0 and parent[t] == -2:
                parent[t] = s
                via[t] = b
                queue[tail] = t
                tail += 1
    return -1, parent, via


@kernel
def shortest_lexemes(table, accepting, starts_start, starts):
    """Per lexer (``starts[starts_start[j]:starts_start[j + 1]]``, global rows of ``table``),
    the bytes of its shortest non-empty lexeme, 0 where it has none (breadth first)."""
    count = starts_start.shape[0] - 1
    out = np.zeros(count, dtype=np.int64)
    stamp = np.full(table.shape[0], -1, dtype=np.int64)  # j: queued for lexer j
    queue = np.empty(table.shape[0], dtype=np.int64)
    for j in range(count):
        head = 0
        tail = 0
        for c in range(starts_start[j], starts_start[j + 1]):
            if stamp[starts[c]] != j:
                stamp[starts[c]] = j
                queue[tail] = starts[c]
                tail += 1
        level = 0
        while head < tail and out[j] == 0:
            level += 1
            end = tail
            while head < end and out[j] == 0:
                state = queue[head]
                head += 1
                for b in range(256):
                    t = table[state, b]
                    if t >= 0:
                        if accepting[t]:
                            out[j] = level
                            break
                        if stamp[t] != j:
                            stamp[t] = j
                            queue[tail] = t
                            tail += 1
    return out
