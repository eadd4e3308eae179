"""numba kernels of the LALR(1) construction (wrapped by :mod:`.lalr`).

Symbols are integers: terminals ``0 .. n_terminals - 1`` (the last one is ``$END``), then
nonterminal ``k`` as ``n_terminals + k``. Rules are CSR (``rule_offsets``, ``rule_symbols``)
with ``rule_lhs`` the nonterminal index of each; the last rule is the augmented root rule
``$root -> start``, whose nonterminal is the last one. An LR(0) item (rule ``r``, dot ``d``)
is the integer ``rule_offsets[r] + r + d``: a rule's items are consecutive, so advancing
the dot adds one and sorting items sorts them by (rule, dot).

The look-aheads are DeRemer and Pennello's (1982): Read sets by the ``reads`` relation
from the direct reads, Follow sets by ``includes`` from the Read sets, each by one
traversal that unites a strongly connected component's sets; a reduction's look-ahead is
the union of the Follow sets of its ``lookback`` transitions. Terminal sets are bitsets
(uint64 words). One departure, lark's: ``includes`` is also walked from kernel items (see
:func:`lalr_table`), so that the table is lark's. Where lark's look-aheads depend on its
set aliasing (``reads`` cycles, only in grammars that are not LR(k)), these are the
textbook ones. The Python versions of these loops made the LALR table a quarter of a
JSON Schema's time to first mask, and seconds on grammars of thousands of rules.
"""

from __future__ import annotations

import numpy as np

from ..bitsets import lowest_bit
from ..jit import kernel
from .automata.member_sets import added_members, find_members, hash_members

ACCEPT = -(2**31)
FORK = 1 << 30  # an action from here up lists several actions (a generalized grammar, see lalr.py)
UNBUILT = -(2**31) + 1  # the DEFAULT cell of a state whose row is not built yet (see parser_tables_lazy.py)
_DONE = np.iinfo(np.int64).max  # depth of a node whose component is finished
# the index of a word's lowest set bit, by de Bruijn multiplication (numba has no ctz)
__all__ = ["lalr_table", "lr0_automaton", "lr0_table", "productive", "reduce_loop", "rule_defects"]


@kernel(inline="always")
def _room(array, needed):
    """``array``, or a copy with room for ``needed`` entries (at least doubled)."""
    if needed <= array.shape[0]:
        return array
    grown = np.empty(max(needed, 2 * array.shape[0]), dtype=array.dtype)
    grown[:array.shape[0]] = array
    return grown


@kernel
def _sort_prefix(array, length):
    """Sort ``array[:length]`` in place: by insertion when short (most item sets and
    symbol sets are; numba's sort costs more than that to call)."""
    if length > 24:
        array[:length].sort()
        return
    for i in range(1, length):
        value = array[i]
        j = i - 1
        while j >= 0 and array[j] > value:
            array[j + 1] = array[j]
            j -= 1
        array[j + 1] = value


@kernel
def _grouped(keys, n_keys):
    """Indices of ``keys`` grouped by key, stably: (offsets int64 [n_keys + 1], indices)."""
    offsets = np.zeros(n_keys + 1, dtype=np.int64)
    for i in range(keys.shape[0]):
        offsets[keys[i] + 1] += 1
    for k in range(n_keys):
        offsets[k + 1] += offsets[k]
    fill = offsets[:n_keys].copy()
    indices = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        indices[fill[keys[i]]] = i
        fill[keys[i]] += 1
    return offsets, indices


@kernel
def rule_defects(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals):
    """What lark refuses in a grammar: (two rules alike, a nonterminal without rules that
    a rule uses, else -1)."""
    n_rules = rule_offsets.shape[0] - 1
    has_rules = np.zeros(n_nonterminals, dtype=np.bool_)
    for r in range(n_rules):
        has_rules[rule_lhs[r]] = True
    undefined = -1
    for i in range(rule_symbols.shape[0]):
        if rule_symbols[i] >= n_terminals and not has_rules[rule_symbols[i] - n_terminals]:
            undefined = rule_symbols[i] - n_terminals
            break
    hashes = np.empty(n_rules, dtype=np.uint64)
    for r in range(n_rules):
        first = rule_offsets[r]
        h = hash_members(rule_symbols[first:], rule_offsets[r + 1] - first)
        hashes[r] = (h ^ np.uint64(rule_lhs[r])) * np.uint64(1099511628211)
    order = np.argsort(hashes)
    for k in range(1, n_rules):
        b = order[k]
        j = k - 1
        while j >= 0 and hashes[order[j]] == hashes[b]:  # every rule of the same hash
            a = order[j]
            j -= 1
            length = rule_offsets[a + 1] - rule_offsets[a]
            if rule_lhs[a] != rule_lhs[b] or rule_offsets[b + 1] - rule_offsets[b] != length:
                continue
            same = True
            for i in range(length):
                if rule_symbols[rule_offsets[a] + i] != rule_symbols[rule_offsets[b] + i]:
                    same = False
                    break
            if same:
                return True, undefined
    return False, undefined


@kernel
def _nonterminal_closure(a, rule_offsets, rule_symbols, lhs_offsets, lhs_rules, n_terminals, seen, queue, items,
                         count):
    """Append to ``items[:count]`` the items ``B -> . w`` of every B that nonterminal ``a``
    derives leftmost (``a`` included): what an item with ``a`` after its dot adds to an
    LR(0) closure. ``seen`` marks with ``a``. Returns (items, new count)."""
    seen[a] = a
    queue[0] = a
    head, tail = 0, 1
    while head < tail:
        b = queue[head]
        head += 1
        for j in range(lhs_offsets[b], lhs_offsets[b + 1]):
            r = lhs_rules[j]
            items = _room(items, count + 1)
            items[count] = rule_offsets[r] + r
            count += 1
            if rule_offsets[r + 1] > rule_offsets[r]:
                c = rule_symbols[rule_offsets[r]] - n_terminals
                if c >= 0 and seen[c] != a:
                    seen[c] = a
                    queue[tail] = c
                    tail += 1
    return items, count


@kernel
def lr0_automaton(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals, max_states):
    """The LR(0) automaton, states numbered breadth first from the initial state 0 with
    each state's successors in symbol order (so the numbering is canonical: it depends on
    the grammar only). A state is its sorted kernel items, found again by their hash.
    Stops once more than ``max_states`` states exist (the caller refuses the grammar).

    Returns (number of states, kernel items as CSR by state: offsets, sorted items,
    transitions as CSR by source state: offsets, symbols in increasing order, targets)."""
    n_rules = rule_offsets.shape[0] - 1
    n_items = rule_offsets[n_rules] + n_rules
    item_next = np.full(n_items, -1, dtype=np.int64)  # the symbol after the dot, -1 at the end
    for r in range(n_rules):
        base = rule_offsets[r] + r
        for d in range(rule_offsets[r + 1] - rule_offsets[r]):
            item_next[base + d] = rule_symbols[rule_offsets[r] + d]
    lhs_offsets, lhs_rules = _grouped(rule_lhs, n_nonterminals)
    # a nonterminal's closure items, computed when a kernel item first has it after the dot
    # (all of them up front can be quadratic: a chain a1 -> a2 "x", a2 -> a3 "x", ...)
    closure_first = np.full(n_nonterminals, -1, dtype=np.int64)
    closure_past = np.zeros(n_nonterminals, dtype=np.int64)
    closure_pool = np.empty(64, dtype=np.int64)
    closure_count = 0
    seen = np.full(n_nonterminals, -1, dtype=np.int64)
    queue = np.empty(n_nonterminals, dtype=np.int64)
    n_symbols = n_terminals + n_nonterminals
    root = n_rules - 1
    pool = np.empty(64, dtype=np.int64)  # kernels, CSR by state
    offsets = np.zeros(64, dtype=np.int64)
    pool[0] = rule_offsets[root] + root
    offsets[1] = 1
    count = 1
    slots = np.full(1024, -1, dtype=np.int64)
    slots[np.int64(hash_members(pool, 1) & np.uint64(slots.shape[0] - 1))] = 0
    trans_offsets = np.zeros(64, dtype=np.int64)
    trans_symbol = np.empty(256, dtype=np.int64)
    trans_target = np.empty(256, dtype=np.int64)
    n_trans = 0
    closure = np.empty(n_items, dtype=np.int64)
    bucketed = np.empty(n_items, dtype=np.int64)
    item_stamp = np.full(n_items, -1, dtype=np.int64)
    symbol_stamp = np.full(n_symbols, -1, dtype=np.int64)
    symbol_count = np.zeros(n_symbols, dtype=np.int64)
    symbol_start = np.zeros(n_symbols, dtype=np.int64)
    symbols = np.empty(n_symbols, dtype=np.int64)
    position = 0
    while position < count and count <= max_states:
        size = 0
        for i in range(offsets[position], offsets[position + 1]):
            item = pool[i]
            item_stamp[item] = position
            closure[size] = item
            size += 1
        for i in range(offsets[position], offsets[position + 1]):
            a = item_next[pool[i]] - n_terminals
            if a >= 0:
                if closure_first[a] < 0:
                    closure_first[a] = closure_count
                    closure_pool, closure_count = _nonterminal_closure(
                        a, rule_offsets, rule_symbols, lhs_offsets, lhs_rules, n_terminals, seen, queue, closure_pool,
                        closure_count)
                    closure_past[a] = closure_count
                for j in range(closure_first[a], closure_past[a]):
                    item = closure_pool[j]
                    if item_stamp[item] != position:
                        item_stamp[item] = position
                        closure[size] = item
                        size += 1
        # sorted items make every successor kernel come out sorted from the buckets
        _sort_prefix(closure, size)
        n_next = 0
        for i in range(size):
            x = item_next[closure[i]]
            if x >= 0:
                if symbol_stamp[x] != position:
                    symbol_stamp[x] = position
                    symbol_count[x] = 0
                    symbols[n_next] = x
                    n_next += 1
                symbol_count[x] += 1
        _sort_prefix(symbols, n_next)
        start = 0
        for k in range(n_next):
            x = symbols[k]
            symbol_start[x] = start
            start += symbol_count[x]
            symbol_count[x] = 0
        for i in range(size):
            x = item_next[closure[i]]
            if x >= 0:
                bucketed[symbol_start[x] + symbol_count[x]] = closure[i] + 1
                symbol_count[x] += 1
        trans_symbol = _room(trans_symbol, n_trans + n_next)
        trans_target = _room(trans_target, n_trans + n_next)
        for k in range(n_next):
            x = symbols[k]
            kernel = bucketed[symbol_start[x]:symbol_start[x] + symbol_count[x]]
            found, slot = find_members(slots, offsets, pool, kernel, kernel.shape[0])
            if found < 0:
                found = count
                slots, offsets, pool = added_members(slots, slot, offsets, pool, count, kernel, kernel.shape[0], 0)
                count += 1
            trans_symbol[n_trans] = x
            trans_target[n_trans] = found
            n_trans += 1
        trans_offsets = _room(trans_offsets, position + 2)
        trans_offsets[position + 1] = n_trans
        position += 1
    kernels = offsets[:count + 1], pool[:offsets[count]]
    return (count,) + kernels + (trans_offsets[:count + 1], trans_symbol[:n_trans], trans_target[:n_trans])


@kernel
def _nullable(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals):
    """Bool [nonterminals]: derives the empty string (least fixpoint, by a worklist)."""
    return _deriving(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals, False)


@kernel
def productive(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals):
    """Bool [nonterminals]: derives some string of terminals."""
    return _deriving(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals, True)


@kernel
def _deriving(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals, terminals_derive):
    """Bool [nonterminals]: derives a string of terminals (``terminals_derive``) or the empty
    string (not): a rule derives once each nonterminal on its right does, by a worklist."""
    n_rules = rule_offsets.shape[0] - 1
    position_rule = np.empty(rule_symbols.shape[0], dtype=np.int64)
    remaining = np.zeros(n_rules, dtype=np.int64)
    for r in range(n_rules):
        for i in range(rule_offsets[r], rule_offsets[r + 1]):
            position_rule[i] = r
            if rule_symbols[i] >= n_terminals or not terminals_derive:  # a terminal never derives ""
                remaining[r] += 1
    occurrence_offsets, occurrences = _grouped(rule_symbols, n_terminals + n_nonterminals)
    nullable = np.zeros(n_nonterminals, dtype=np.bool_)
    queue = np.empty(n_nonterminals, dtype=np.int64)
    tail = 0
    for r in range(n_rules):
        if remaining[r] == 0 and not nullable[rule_lhs[r]]:
            nullable[rule_lhs[r]] = True
            queue[tail] = rule_lhs[r]
            tail += 1
    head = 0
    while head < tail:
        symbol = queue[head] + n_terminals
        head += 1
        for j in range(occurrence_offsets[symbol], occurrence_offsets[symbol + 1]):
            r = position_rule[occurrences[j]]
            remaining[r] -= 1
            if remaining[r] == 0 and not nullable[rule_lhs[r]]:
                nullable[rule_lhs[r]] = True
                queue[tail] = rule_lhs[r]
                tail += 1
    return nullable


@kernel(inline="always")
def _transition(trans_offsets, trans_symbol, state, symbol):
    """Index of ``state``'s transition on ``symbol`` (which must exist): binary search."""
    low, high = trans_offsets[state], trans_offsets[state + 1] - 1
    while low < high:
        middle = (low + high) >> 1
        if trans_symbol[middle] < symbol:
            low = middle + 1
        else:
            high = middle
    return low


@kernel
def _walk(rule, dot, state, node, rule_offsets, rule_symbols, n_terminals, nullable_from, trans_offsets, trans_symbol,
          trans_target, node_of, includer, included, n_includes):
    """Follow the rest of ``rule`` from ``dot`` and ``state``: each nonterminal transition
    on the way with a nullable rest of the rule after it includes ``node`` (appended to
    ``includer``, ``included``). Returns (the state at the end, includer, included, count)."""
    first = rule_offsets[rule]
    for i in range(dot, rule_offsets[rule + 1] - first):
        symbol = rule_symbols[first + i]
        u = _transition(trans_offsets, trans_symbol, state, symbol)
        if symbol >= n_terminals and i + 1 >= nullable_from[rule]:
            includer = _room(includer, n_includes + 1)
            included = _room(included, n_includes + 1)
            includer[n_includes] = node_of[u]
            included[n_includes] = node
            n_includes += 1
        state = trans_target[u]
    return state, includer, included, n_includes


@kernel
def _digraph(offsets, successors, sets):
    """DeRemer and Pennello's traversal, in place: ``sets[x]`` becomes the union of the
    ``sets[y]`` of every y reachable from x (x included) over the relation (CSR
    ``offsets``, ``successors``). The members of a strongly connected component are found
    together (Tarjan) and all get the component's union. No recursion: an explicit stack
    of frames (node, next edge, stack height on entry)."""
    n, words = sets.shape
    depth = np.zeros(n, dtype=np.int64)  # 0: unvisited; stack height on entry; _DONE
    stack = np.empty(n, dtype=np.int64)
    frame_node = np.empty(n, dtype=np.int64)
    frame_edge = np.empty(n, dtype=np.int64)
    frame_height = np.empty(n, dtype=np.int64)
    top = 0
    for root in range(n):
        if depth[root] != 0:
            continue
        stack[top] = root
        top += 1
        depth[root] = top
        frame_node[0], frame_edge[0], frame_height[0] = root, offsets[root], top
        frames = 1
        while frames > 0:
            x = frame_node[frames - 1]
            edge = frame_edge[frames - 1]
            if edge < offsets[x + 1]:
                y = successors[edge]
                if depth[y] == 0:  # descend; the edge is taken again (and y absorbed) on return
                    stack[top] = y
                    top += 1
                    depth[y] = top
                    frame_node[frames], frame_edge[frames], frame_height[frames] = y, offsets[y], top
                    frames += 1
                    continue
                if depth[y] < depth[x]:
                    depth[x] = depth[y]
                for w in range(words):
                    sets[x, w] |= sets[y, w]
                frame_edge[frames - 1] = edge + 1
                continue
            if depth[x] == frame_height[frames - 1]:  # x is the root of its component
                while True:
                    top -= 1
                    z = stack[top]
                    depth[z] = _DONE
                    if z == x:
                        break
                    sets[z, :] = sets[x, :]
            frames -= 1


@kernel
def lalr_table(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals, n_states, kernel_offsets,
               kernel_items, trans_offsets, trans_symbol, trans_target, start_symbol, max_conflicts):
    """The LALR(1) action and goto tables of the LR(0) automaton (see the module docstring
    of :mod:`.lalr` for the encoding; the root nonterminal has no goto column).

    Shift wins a shift/reduce conflict and the first reduction written wins a
    reduce/reduce one; each reduction that lost is listed in ``conflicts`` as (state,
    terminal, rule), with the reduction it met for a reduce/reduce conflict, so the
    caller can judge them. At most ``max_conflicts`` rows are listed (a random grammar
    listed 19 million, 460 MB, then GBs in the judging); ``overflow`` says more were met.
    Returns (action, goto packed by :func:`pack_goto`, conflicts int64 [n, 3], overflow)."""
    n_rules = rule_offsets.shape[0] - 1
    n_trans = trans_symbol.shape[0]
    nullable = _nullable(rule_offsets, rule_symbols, rule_lhs, n_terminals, n_nonterminals)
    trans_source = np.empty(n_trans, dtype=np.int64)
    for s in range(n_states):
        trans_source[trans_offsets[s]:trans_offsets[s + 1]] = s
    # the nonterminal transitions (p, A): the nodes of both relations
    node_of = np.full(n_trans, -1, dtype=np.int64)
    node_trans = np.empty(n_trans, dtype=np.int64)
    n_nodes = 0
    for t in range(n_trans):
        if trans_symbol[t] >= n_terminals:
            node_of[t] = n_nodes
            node_trans[n_nodes] = t
            n_nodes += 1
    words = (n_terminals + 63) >> 6
    sets = np.zeros((n_nodes, words), dtype=np.uint64)
    # direct reads (terminals shifted right after A) and reads (A followed by a nullable B)
    reads_offsets = np.zeros(n_nodes + 1, dtype=np.int64)
    reads = np.empty(16, dtype=np.int64)
    n_reads = 0
    for x in range(n_nodes):
        after = trans_target[node_trans[x]]
        for u in range(trans_offsets[after], trans_offsets[after + 1]):
            symbol = trans_symbol[u]
            if symbol < n_terminals:
                sets[x, symbol >> 6] |= np.uint64(1) << np.uint64(symbol & 63)
            elif nullable[symbol - n_terminals]:
                reads = _room(reads, n_reads + 1)
                reads[n_reads] = node_of[u]
                n_reads += 1
        reads_offsets[x + 1] = n_reads
    end = n_terminals - 1
    accepted = node_of[_transition(trans_offsets, trans_symbol, 0, start_symbol)]
    sets[accepted, end >> 6] |= np.uint64(1) << np.uint64(end & 63)
    # includes and lookback, walking each rule B -> w from every transition (p, B)
    nullable_from = np.empty(n_rules, dtype=np.int64)  # w[i:] derives the empty string iff i >= this
    for r in range(n_rules):
        i = rule_offsets[r + 1]
        while i > rule_offsets[r] and rule_symbols[i - 1] >= n_terminals:
            if not nullable[rule_symbols[i - 1] - n_terminals]:
                break
            i -= 1
        nullable_from[r] = i - rule_offsets[r]
    lhs_offsets, lhs_rules = _grouped(rule_lhs, n_nonterminals)
    includer = np.empty(16, dtype=np.int64)
    included = np.empty(16, dtype=np.int64)
    n_includes = 0
    lookback_state = np.empty(16, dtype=np.int64)
    lookback_rule = np.empty(16, dtype=np.int64)
    lookback_node = np.empty(16, dtype=np.int64)
    n_lookbacks = 0
    item_rule = np.empty(rule_offsets[n_rules] + n_rules, dtype=np.int64)
    for r in range(n_rules):
        item_rule[rule_offsets[r] + r:rule_offsets[r + 1] + r + 1] = r
    for x in range(n_nodes):
        t = node_trans[x]
        b = trans_symbol[t] - n_terminals
        for j in range(lhs_offsets[b], lhs_offsets[b + 1]):
            r = lhs_rules[j]
            state, includer, included, n_includes = _walk(
                r, 0, trans_source[t], x, rule_offsets, rule_symbols, n_terminals, nullable_from, trans_offsets,
                trans_symbol, trans_target, node_of, includer, included, n_includes)
            lookback_state = _room(lookback_state, n_lookbacks + 1)
            lookback_rule = _room(lookback_rule, n_lookbacks + 1)
            lookback_node = _room(lookback_node, n_lookbacks + 1)
            lookback_state[n_lookbacks] = state
            lookback_rule[n_lookbacks] = r
            lookback_node[n_lookbacks] = x
            n_lookbacks += 1
        # lark (1.x, compute_includes_lookback) also walks p's kernel items B -> a . w as
        # if B started at p: more look-aheads than DeRemer and Pennello's, kept so that the
        # table (and the terminals the contextual lexer tries) stays lark's
        p = trans_source[t]
        for k in range(kernel_offsets[p], kernel_offsets[p + 1]):
            r = item_rule[kernel_items[k]]
            if rule_lhs[r] == b:
                _, includer, included, n_includes = _walk(
                    r, kernel_items[k] - rule_offsets[r] - r, p, x, rule_offsets, rule_symbols, n_terminals,
                    nullable_from, trans_offsets, trans_symbol, trans_target, node_of, includer, included, n_includes)
    _digraph(reads_offsets, reads[:n_reads], sets)
    includes_offsets, order = _grouped(includer[:n_includes], n_nodes)
    _digraph(includes_offsets, included[:n_includes][order], sets)
    # the tables (the last column, DEFAULT, stays empty: an LALR(1) parser reduces on look-ahead)
    action = np.zeros((n_states, n_terminals + 1), dtype=np.int32)
    goto_source = np.empty(n_nodes, dtype=np.int64)
    goto_symbol = np.empty(n_nodes, dtype=np.int64)
    goto_target = np.empty(n_nodes, dtype=np.int64)
    final = -1
    for t in range(n_trans):
        symbol = trans_symbol[t]
        if symbol < n_terminals:
            action[trans_source[t], symbol] = trans_target[t] + 1
        else:
            x = node_of[t]
            goto_source[x], goto_symbol[x], goto_target[x] = trans_source[t], symbol - n_terminals, trans_target[t]
            if trans_source[t] == 0 and symbol == start_symbol:
                final = trans_target[t]
    goto = pack_goto(goto_source, goto_symbol, goto_target, n_states)
    conflicts = np.empty((16, 3), dtype=np.int64)
    n_conflicts = 0
    overflow = False
    for k in range(n_lookbacks):
        q, r, x = lookback_state[k], lookback_rule[k], lookback_node[k]
        reduce = -(r + 1)
        for w in range(words):
            bits = sets[x, w]
            while bits != 0:
                terminal = (w << 6) + lowest_bit(bits)
                bits &= bits - np.uint64(1)
                present = action[q, terminal]
                if present == 0:
                    action[q, terminal] = reduce
                elif present != reduce:
                    if n_conflicts + 2 > max_conflicts:
                        overflow = True
                        continue
                    if n_conflicts + 2 > conflicts.shape[0]:
                        grown = np.empty((2 * conflicts.shape[0], 3), dtype=np.int64)
                        grown[:n_conflicts] = conflicts[:n_conflicts]
                        conflicts = grown
                    conflicts[n_conflicts, 0], conflicts[n_conflicts, 1], conflicts[n_conflicts, 2] = q, terminal, r
                    n_conflicts += 1
                    if present < 0:
                        conflicts[n_conflicts, 0], conflicts[n_conflicts, 1] = q, terminal
                        conflicts[n_conflicts, 2] = -present - 1
                        n_conflicts += 1
    action[final, end] = ACCEPT
    return action, goto, conflicts[:n_conflicts], overflow


@kernel
def lr0_table(rule_offsets, rule_lhs, n_terminals, n_states, kernel_offsets, kernel_items, trans_offsets,
              trans_symbol, trans_target, start_symbol):
    """The action and goto tables of an LR(0) grammar, without look-aheads: a state that can
    only reduce (one complete item, nothing to shift) holds that reduction in its DEFAULT
    column (the last), which the parser follows right after it lands there; its terminal
    cells stay empty, so its lexer candidates are none (it is never the top of a stack).
    The state after ``start`` accepts ``$END``. Returns (action, packed goto, conflicts):
    the number of states with an LR(0) conflict (a complete item beside another complete
    item or a shift), where the caller builds the LALR(1) table instead."""
    n_rules = rule_offsets.shape[0] - 1
    root_rule = n_rules - 1
    item_rule = np.empty(rule_offsets[n_rules] + n_rules, dtype=np.int64)
    for r in range(n_rules):
        item_rule[rule_offsets[r] + r:rule_offsets[r + 1] + r + 1] = r
    action = np.zeros((n_states, n_terminals + 1), dtype=np.int32)
    default = n_terminals
    n_trans = trans_symbol.shape[0]
    n_gotos = 0
    for t in range(n_trans):
        if trans_symbol[t] >= n_terminals:
            n_gotos += 1
    goto_source = np.empty(n_gotos, dtype=np.int64)
    goto_symbol = np.empty(n_gotos, dtype=np.int64)
    goto_target = np.empty(n_gotos, dtype=np.int64)
    n_gotos = 0
    conflicts = 0
    final = -1
    for s in range(n_states):
        shifts = 0
        for t in range(trans_offsets[s], trans_offsets[s + 1]):
            symbol = trans_symbol[t]
            if symbol < n_terminals:
                action[s, symbol] = trans_target[t] + 1
                shifts += 1
            else:
                goto_source[n_gotos], goto_symbol[n_gotos], goto_target[n_gotos] = s, symbol - n_terminals, trans_target[t]
                n_gotos += 1
                if s == 0 and symbol == start_symbol:
                    final = trans_target[t]
        complete = -1
        n_complete = 0
        for k in range(kernel_offsets[s], kernel_offsets[s + 1]):
            item = kernel_items[k]
            r = item_rule[item]
            if item - rule_offsets[r] - r == rule_offsets[r + 1] - rule_offsets[r] and r != root_rule:
                complete = r
                n_complete += 1
        if n_complete > 1 or (n_complete == 1 and shifts > 0):
            conflicts += 1
        elif n_complete == 1:
            action[s, default] = -(complete + 1)
    if final >= 0:
        action[final, n_terminals - 1] = ACCEPT
    return action, pack_goto(goto_source, goto_symbol, goto_target, n_states), conflicts


# The goto table, packed. Dense, it is [states x nonterminals] and almost empty: a JSON
# Schema of 21k states and 2k rules has 17k entries in 45M cells (171 MiB). Packed, each
# state lists its entries sorted by nonterminal (CSR; most states have none or a few), and a
# lookup is a binary search among them. Row displacement would give O(1) lookups, but its
# first-fit packing tripled the table's build time on some schemas. One int32 array, so
# kernels take it like the dense table they took before:
#   [n_states, offsets[n_states + 1], symbols[entries], targets[entries]]
# (a generalized grammar's fork lists follow, see lalr.py).


@kernel
def pack_goto(sources, symbols, targets, n_states):
    """The packed goto table of the entries ``(sources[k], symbols[k]) -> targets[k]``
    (states below ``n_states``, nonterminal indices; no pair twice); see :func:`goto_of`."""
    n = sources.shape[0]
    packed = np.empty(2 + n_states + 2 * n, dtype=np.int32)
    packed[0] = n_states
    offsets = packed[1:2 + n_states]
    offsets[:] = 0
    for k in range(n):
        offsets[sources[k] + 1] += 1
    for s in range(n_states):
        offsets[s + 1] += offsets[s]
    fill = offsets[:-1].copy()
    by_symbol = np.argsort(symbols, kind="mergesort")
    for k in by_symbol:
        i = fill[sources[k]]
        packed[2 + n_states + i] = symbols[k]
        packed[2 + n_states + n + i] = targets[k]
        fill[sources[k]] += 1
    return packed


@kernel
def merge_goto(packed, sources, symbols, targets, n_states):
    """``packed`` (:func:`pack_goto`'s layout, no fork lists) with the entries ``(sources[k],
    symbols[k]) -> targets[k]`` added, over ``n_states`` states (at least ``packed``'s). A
    state's entries come all at once (a lazily built state's row), so a state with new
    entries has none in ``packed``: the old entries are copied in runs around the new ones'
    places, not sorted again (a large schema's lazy table repacked 10^5 entries per build)."""
    old_states = packed[0]
    n_old = packed[1 + old_states]
    k = sources.shape[0]
    n = n_old + k
    out = np.empty(2 + n_states + 2 * n, dtype=np.int32)
    out[0] = n_states
    keys = np.empty(k, dtype=np.int64)
    for j in range(k):
        keys[j] = (np.int64(sources[j]) << 32) + symbols[j]
    order = np.argsort(keys)
    j = 0
    for s in range(n_states + 1):  # offsets: the old ones, shifted by the new entries before
        while j < k and sources[order[j]] < s:
            j += 1
        out[1 + s] = (packed[1 + s] if s <= old_states else n_old) + j
    old_symbols, old_targets = 2 + old_states, 2 + old_states + n_old
    new_symbols, new_targets = 2 + n_states, 2 + n_states + n
    copied = 0  # old entries copied so far
    j = 0
    while True:
        upto = n_old
        if j < k:
            s = sources[order[j]]
            upto = packed[1 + s] if s <= old_states else n_old
        for i in range(copied, upto):
            out[new_symbols + i + j] = packed[old_symbols + i]
            out[new_targets + i + j] = packed[old_targets + i]
        copied = upto
        if j == k:
            break
        while j < k and sources[order[j]] == s:
            out[new_symbols + copied + j] = symbols[order[j]]
            out[new_targets + copied + j] = targets[order[j]]
            j += 1
    return out


@kernel(inline="always")
def goto_of(goto, state, symbol):
    """The state after reducing to nonterminal ``symbol`` in ``state``, -1 if undefined."""
    n_states = goto[0]
    n = goto[1 + n_states]
    lo, hi = goto[1 + state], goto[2 + state]
    symbols = 2 + n_states
    while lo < hi:
        mid = (lo + hi) >> 1
        found = goto[symbols + mid]
        if found == symbol:
            return goto[symbols + n + mid]
        if found < symbol:
            lo = mid + 1
        else:
            hi = mid
    return -1


@kernel
def _reductions_diverge(action, goto, rule_lhs, rule_len, base, first, terminal, stack, saved):
    """Does the parser, with ``base`` then ``first`` on its stack and ``terminal`` next,
    reduce forever? Only reductions that keep ``base`` are followed (one that pops it is
    judged from a deeper base). Two ways to never stop: the stack repeats (Brent's cycle
    search over whole stacks), or it grows, which shows as a state pushed while the same
    state, pushed earlier in this run, is still on the stack: everything the parser did
    from that state's push onwards, without popping it, it then does again, higher."""
    stack[0], stack[1] = base, first
    depth = 2
    saved_depth = 0
    power = lam = 1
    while True:
        a = action[stack[depth - 1], terminal]
        if a >= 0 or a == ACCEPT:  # shift, error or accept: the reductions stop
            return False
        rule = -a - 1
        depth -= rule_len[rule]
        if depth < 1:
            return False
        pushed = goto_of(goto, stack[depth - 1], rule_lhs[rule])
        if pushed < 0:
            return False
        for k in range(1, depth):
            if stack[k] == pushed:
                return True
        stack[depth] = pushed
        depth += 1
        if depth == saved_depth:
            same = True
            for k in range(depth):
                if stack[k] != saved[k]:
                    same = False
                    break
            if same:
                return True
        if power == lam:  # Brent: move the saved stack forward at powers of two
            saved[:depth] = stack[:depth]
            saved_depth = depth
            power *= 2
            lam = 0
        lam += 1


@kernel
def reduce_loop(action, goto, rule_lhs, rule_len, usable):
    """(state, nonterminal, terminal) such that the parser, having reduced to
    ``nonterminal`` in ``state`` with ``terminal`` next, reduces forever without reading
    it; (-1, -1, -1) if there is none. Every endless run of reductions has a lowest point,
    a goto pushed onto a state that stays below it from then on, so trying every goto
    entry on every terminal finds them all; only the entries marked ``usable`` (bool, one
    per packed entry: the ones that input can reach) are tried. An LALR(1) table without
    conflicts has none (its parser stops on every input); conflicts settled by priority
    can make one."""
    n_states = goto[0]
    n = goto[1 + n_states]
    symbols = 2 + n_states
    # no stack state repeats above the base before a run is judged endless
    stack = np.empty(n_states + 2, dtype=np.int32)
    saved = np.empty(n_states + 2, dtype=np.int32)
    for state in range(n_states):
        for i in range(goto[1 + state], goto[2 + state]):
            target = goto[symbols + n + i]
            if not usable[i]:
                continue
            for terminal in range(action.shape[1]):
                a = action[target, terminal]
                if a < 0 and a != ACCEPT:
                    if _reductions_diverge(action, goto, rule_lhs, rule_len, state, target, terminal, stack, saved):
                        return state, goto[symbols + i], terminal
    return -1, -1, -1
