"""numba kernels of the DFA algebra: trimming, minimisation, canonical numbering, products.

They take and return plain arrays (``table`` is an int32 ``[states, symbols]`` transition
table with DEAD = -1, ``accepting`` a bool array); :mod:`.dfa` and :mod:`.automata` wrap
them. Every schema compile runs these hundreds of times on small automata and a few times
on large ones (formats, patterns, key sets), which is why they are compiled: the Python
versions spent most of a schema's compile time in interpreter loops.
"""

from __future__ import annotations

import numba
import numpy as np

from ...jit import kernel
from .member_sets import added_members, find_members, hash_members

DEAD = -1

__all__ = ["canonical_order", "coarsest_partition", "column_classes", "common_word", "epsilon_closures", "expand_columns",
           "live_states", "minimal_dfa", "pair_product", "subset_construction"]


@kernel
def live_states(table, initial, accepting):
    """Bool mask of the states reachable from ``initial`` that can reach an accepting state."""
    n, k = table.shape
    reachable = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    reachable[initial] = True
    stack[0] = initial
    top = 1
    while top > 0:
        top -= 1
        state = stack[top]
        for c in range(k):
            target = table[state, c]
            if target >= 0 and not reachable[target]:
                reachable[target] = True
                stack[top] = target
                top += 1
    # reverse adjacency (CSR over targets) for the backward search from accepting states
    in_degree = np.zeros(n + 1, dtype=np.int64)
    for state in range(n):
        for c in range(k):
            target = table[state, c]
            if target >= 0:
                in_degree[target + 1] += 1
    offsets = np.cumsum(in_degree)
    sources = np.empty(offsets[n], dtype=np.int64)
    fill = offsets[:n].copy()
    for state in range(n):
        for c in range(k):
            target = table[state, c]
            if target >= 0:
                sources[fill[target]] = state
                fill[target] += 1
    live = np.zeros(n, dtype=np.bool_)
    top = 0
    for state in range(n):
        if accepting[state]:
            live[state] = True
            stack[top] = state
            top += 1
    while top > 0:
        top -= 1
        state = stack[top]
        for i in range(offsets[state], offsets[state + 1]):
            source = sources[i]
            if not live[source]:
                live[source] = True
                stack[top] = source
                top += 1
    return reachable & live


@kernel(inline="always")
def _mark(x, sets, loc, first, marked, elems, touched, touched_top):
    """Mark element ``x`` of a refinable partition (move it into its set's marked prefix);
    a set marked for the first time is pushed on ``touched``. Returns the new stack top."""
    owner = sets[x]
    here = loc[x]
    j = first[owner] + marked[owner]
    other = elems[j]
    elems[here] = other
    loc[other] = here
    elems[j] = x
    loc[x] = j
    if marked[owner] == 0:
        touched[touched_top] = owner
        touched_top += 1
    marked[owner] += 1
    return touched_top


@kernel
def _split_touched(touched, touched_top, first, past, marked, elems, owner, num_blocks):
    """Split every touched block of a refinable partition into its marked and unmarked
    parts (the smaller part gets the new block number); returns the new block count."""
    while touched_top > 0:
        touched_top -= 1
        b = touched[touched_top]
        j = first[b] + marked[b]
        if j == past[b]:
            marked[b] = 0
            continue
        new = num_blocks
        num_blocks += 1
        if marked[b] <= past[b] - j:  # the marked part is smaller: it leaves
            first[new] = first[b]
            past[new] = j
            first[b] = j
        else:
            past[new] = past[b]
            first[new] = j
            past[b] = j
        for i in range(first[new], past[new]):
            owner[elems[i]] = new
        marked[b] = 0
        marked[new] = 0
    return num_blocks


@kernel
def coarsest_partition(table, accepting):
    """Block of every state under language equivalence, for a trimmed partial DFA.

    Valmari–Lehtinen refinement ("Fast brief practical DFA minimization", 2012): states and
    transitions are both kept in refinable partitions; each transition block ("cord",
    transitions with one label into one state block) is used once as a splitter, and only
    the smaller half of every split state block re-splits the cords. O(m log n) with m the
    number of non-DEAD transitions, and no work for the missing (DEAD) ones.
    Returns (block of each state, number of blocks).
    """
    n, k = table.shape
    m = 0
    for state in range(n):
        for c in range(k):
            if table[state, c] >= 0:
                m += 1
    tails = np.empty(m, dtype=np.int64)
    labels = np.empty(m, dtype=np.int64)
    heads = np.empty(m, dtype=np.int64)
    t = 0
    for state in range(n):
        for c in range(k):
            target = table[state, c]
            if target >= 0:
                tails[t] = state
                labels[t] = c
                heads[t] = target
                t += 1

    # State partition, initially {accepting, rejecting}; a block's elements are contiguous
    # in s_elems and its first s_marked[b] elements are marked.
    s_elems = np.empty(n, dtype=np.int64)
    s_loc = np.empty(n, dtype=np.int64)
    s_set = np.zeros(n, dtype=np.int64)
    s_first = np.zeros(n + 1, dtype=np.int64)
    s_past = np.zeros(n + 1, dtype=np.int64)
    s_marked = np.zeros(n + 1, dtype=np.int64)
    s_touched = np.empty(n + 1, dtype=np.int64)
    i = 0
    for state in range(n):
        if accepting[state]:
            s_elems[i] = state
            i += 1
    num_accepting = i
    for state in range(n):
        if not accepting[state]:
            s_elems[i] = state
            i += 1
    for i in range(n):
        s_loc[s_elems[i]] = i
    s_past[0] = n
    s_marked[0] = num_accepting
    s_touched[0] = 0
    num_blocks = _split_touched(s_touched, 1, s_first, s_past, s_marked, s_elems, s_set, 1)

    # Transition partition, initially one cord per label: transitions grouped by label,
    # stably (a counting sort; argsort cost more than the refinement on small automata)
    label_start = np.zeros(k + 1, dtype=np.int64)
    for t in range(m):
        label_start[labels[t] + 1] += 1
    for c in range(k):
        label_start[c + 1] += label_start[c]
    c_elems = np.empty(m, dtype=np.int64)
    for t in range(m):
        c_elems[label_start[labels[t]]] = t
        label_start[labels[t]] += 1
    c_loc = np.empty(m, dtype=np.int64)
    c_set = np.zeros(m, dtype=np.int64)
    c_first = np.zeros(m + 1, dtype=np.int64)
    c_past = np.zeros(m + 1, dtype=np.int64)
    c_marked = np.zeros(m + 1, dtype=np.int64)
    c_touched = np.empty(m + 1, dtype=np.int64)
    num_cords = 0
    for i in range(m):
        t = c_elems[i]
        c_loc[t] = i
        if i == 0 or labels[t] != labels[c_elems[i - 1]]:
            if num_cords > 0:
                c_past[num_cords - 1] = i
            c_first[num_cords] = i
            num_cords += 1
        c_set[t] = num_cords - 1
    if num_cords > 0:
        c_past[num_cords - 1] = m

    # incoming transitions of every state (CSR, in transition order)
    in_offsets = np.zeros(n + 1, dtype=np.int64)
    for t in range(m):
        in_offsets[heads[t] + 1] += 1
    in_offsets = np.cumsum(in_offsets)
    incoming = np.empty(m, dtype=np.int64)
    fill = in_offsets[:n].copy()
    for t in range(m):
        incoming[fill[heads[t]]] = t
        fill[heads[t]] += 1

    block_cursor = 1
    cord_cursor = 0
    while cord_cursor < num_cords:
        touched_top = 0
        for i in range(c_first[cord_cursor], c_past[cord_cursor]):
            touched_top = _mark(tails[c_elems[i]], s_set, s_loc, s_first, s_marked, s_elems, s_touched,
                                touched_top)
        num_blocks = _split_touched(s_touched, touched_top, s_first, s_past, s_marked, s_elems, s_set, num_blocks)
        cord_cursor += 1
        while block_cursor < num_blocks:
            touched_top = 0
            for i in range(s_first[block_cursor], s_past[block_cursor]):
                q = s_elems[i]
                for e in range(in_offsets[q], in_offsets[q + 1]):
                    touched_top = _mark(incoming[e], c_set, c_loc, c_first, c_marked, c_elems, c_touched,
                                        touched_top)
            num_cords = _split_touched(c_touched, touched_top, c_first, c_past, c_marked, c_elems, c_set, num_cords)
            block_cursor += 1
    return s_set.astype(np.int32), num_blocks


@kernel
def canonical_order(table, initial):
    """Breadth-first numbering from ``initial`` (children in symbol order): new id per state
    (DEAD for states not reached)."""
    n, k = table.shape
    new_id = np.full(n, DEAD, dtype=np.int32)
    order = np.empty(n, dtype=np.int64)
    new_id[initial] = 0
    order[0] = initial
    count = 1
    head = 0
    while head < count:
        state = order[head]
        head += 1
        for c in range(k):
            child = table[state, c]
            if child >= 0 and new_id[child] == DEAD:
                new_id[child] = count
                order[count] = child
                count += 1
    return new_id


@kernel(inline="always")
def _relabelled(table, accepting, new_id, num_rows):
    """``table`` and ``accepting`` with state s renamed ``new_id[s]``: states renamed -1 are
    dropped (their incoming transitions become DEAD), states renamed alike must have rows
    that are equal once renamed."""
    k = table.shape[1]
    result = np.empty((num_rows, k), dtype=np.int32)
    result_accepting = np.empty(num_rows, dtype=np.bool_)
    for state in range(table.shape[0]):
        row = new_id[state]
        if row < 0:
            continue
        result_accepting[row] = accepting[state]
        for c in range(k):
            target = table[state, c]
            result[row, c] = new_id[target] if target >= 0 else DEAD
    return result, result_accepting


@kernel
def minimal_dfa(table, initial, accepting):
    """Trim, minimise and number breadth-first in one call (most automata of a schema are
    small, and the array shuffling between separate kernels cost more than the kernels):
    (table, accepting) of the minimal DFA, initial state 0; no rows for the empty language."""
    n, k = table.shape
    if n == 0 or initial < 0:
        return np.empty((0, k), dtype=np.int32), np.zeros(0, dtype=np.bool_)
    keep = live_states(table, initial, accepting)
    if not keep[initial]:
        return np.empty((0, k), dtype=np.int32), np.zeros(0, dtype=np.bool_)
    kept_id = np.full(n, DEAD, dtype=np.int64)
    num_kept = 0
    for state in range(n):
        if keep[state]:
            kept_id[state] = num_kept
            num_kept += 1
    trimmed, trimmed_accepting = _relabelled(table, accepting, kept_id, num_kept)
    block, num_blocks = coarsest_partition(trimmed, trimmed_accepting)
    merged, merged_accepting = _relabelled(trimmed, trimmed_accepting, block, num_blocks)
    order = canonical_order(merged, block[kept_id[initial]])
    return _relabelled(merged, merged_accepting, order, num_blocks)


@kernel
def expand_columns(table, class_of_byte):
    """The byte table [n, 256] of a class table: byte b reads column ``class_of_byte[b]``
    (-1: DEAD)."""
    n = table.shape[0]
    result = np.empty((n, class_of_byte.shape[0]), dtype=np.int32)
    for state in range(n):
        for b in range(class_of_byte.shape[0]):
            c = class_of_byte[b]
            result[state, b] = table[state, c] if c >= 0 else DEAD
    return result


INTERSECT, UNION, DIFFERENCE = 0, 1, 2


@kernel
def pair_product(table_a, initial_a, accepting_a, table_b, initial_b, accepting_b, mode, max_states):
    """Breadth-first product of two DFAs over the same symbols (a DEAD initial state is the
    empty language). A pair from which ``mode`` can accept nothing (intersection: either
    side dead; union: both; difference: the left side) is DEAD.

    Returns (table int32 [pairs, symbols], accepting bool [pairs], overflowed); with more
    than ``max_states`` pairs, overflowed is True and the arrays are empty.
    """
    k = table_a.shape[1]
    width = table_b.shape[0] + 1
    ids = numba.typed.Dict.empty(key_type=numba.types.int64, value_type=numba.types.int64)
    capacity = 64
    pairs_a = np.empty(capacity, dtype=np.int64)
    pairs_b = np.empty(capacity, dtype=np.int64)
    rows = np.empty((capacity, k), dtype=np.int32)
    count = 0
    if not _pair_alive(initial_a, initial_b, mode):
        return rows[:0], np.zeros(0, dtype=np.bool_), False
    ids[(initial_a + 1) * width + initial_b + 1] = 0
    pairs_a[0] = initial_a
    pairs_b[0] = initial_b
    count = 1
    position = 0
    while position < count:
        sa = pairs_a[position]
        sb = pairs_b[position]
        for c in range(k):
            na = table_a[sa, c] if sa >= 0 else DEAD
            nb = table_b[sb, c] if sb >= 0 else DEAD
            if not _pair_alive(na, nb, mode):
                rows[position, c] = DEAD
                continue
            key = (na + 1) * width + nb + 1
            found = ids.get(key, -1)
            if found < 0:
                if count >= max_states:
                    return rows[:0], np.zeros(0, dtype=np.bool_), True
                if count == capacity:
                    capacity *= 2
                    grown = np.empty((capacity, k), dtype=np.int32)
                    grown[:count] = rows[:count]
                    rows = grown
                    pa = np.empty(capacity, dtype=np.int64)
                    pa[:count] = pairs_a[:count]
                    pairs_a = pa
                    pb = np.empty(capacity, dtype=np.int64)
                    pb[:count] = pairs_b[:count]
                    pairs_b = pb
                found = count
                ids[key] = found
                pairs_a[count] = na
                pairs_b[count] = nb
                count += 1
            rows[position, c] = found
        position += 1
    accepting = np.zeros(count, dtype=np.bool_)
    for p in range(count):
        x = pairs_a[p] >= 0 and accepting_a[pairs_a[p]]
        y = pairs_b[p] >= 0 and accepting_b[pairs_b[p]]
        if mode == INTERSECT:
            accepting[p] = x and y
        elif mode == UNION:
            accepting[p] = x or y
        else:
            accepting[p] = x and not y
    return rows[:count], accepting, False


@kernel
def common_word(table_a, initial_a, accepting_a, table_b, class_b, initial_b, accepting_b, max_pairs):
    """A shortest byte string both DFAs (over bytes, trimmed) accept, found breadth first over
    pairs of their states without building the product: most intersections a schema asks
    about have a short word, where the product (a format's thousands of states by a pattern's)
    took a tenth of a second. B reads byte c in column ``class_b[c]`` of ``table_b`` (a shipped
    format's columns, never expanded to bytes). Returns (the word as uint8, status): 1 found, 0
    none (the intersection is empty), -1 more than ``max_pairs`` pairs met first (undecided)."""
    width = table_b.shape[0] + 1
    ids = numba.typed.Dict.empty(key_type=numba.types.int64, value_type=numba.types.int64)
    pairs_a = np.empty(max_pairs, dtype=np.int64)
    pairs_b = np.empty(max_pairs, dtype=np.int64)
    parent = np.empty(max_pairs, dtype=np.int64)
    byte = np.empty(max_pairs, dtype=np.uint8)
    if initial_a < 0 or initial_b < 0:
        return np.zeros(0, dtype=np.uint8), 0
    ids[(initial_a + 1) * width + initial_b + 1] = 0
    pairs_a[0] = initial_a
    pairs_b[0] = initial_b
    parent[0] = -1
    count = 1
    position = 0
    while position < count:
        sa = pairs_a[position]
        sb = pairs_b[position]
        if accepting_a[sa] and accepting_b[sb]:
            length = 0
            p = position
            while parent[p] >= 0:
                length += 1
                p = parent[p]
            word = np.empty(length, dtype=np.uint8)
            p = position
            while parent[p] >= 0:
                length -= 1
                word[length] = byte[p]
                p = parent[p]
            return word, 1
        for c in range(table_a.shape[1]):
            na = table_a[sa, c]
            if na < 0 or class_b[c] < 0:
                continue
            nb = table_b[sb, class_b[c]]
            if nb < 0:
                continue
            key = (na + 1) * width + nb + 1
            if key in ids:
                continue
            if count >= max_pairs:
                return np.zeros(0, dtype=np.uint8), -1
            ids[key] = count
            pairs_a[count] = na
            pairs_b[count] = nb
            parent[count] = position
            byte[count] = c
            count += 1
        position += 1
    return np.zeros(0, dtype=np.uint8), 0


@kernel(inline="always")
def _pair_alive(sa, sb, mode):
    if mode == INTERSECT:
        return sa >= 0 and sb >= 0
    if mode == UNION:
        return sa >= 0 or sb >= 0
    return sa >= 0


@kernel
def epsilon_closures(num_states, eps_offsets, eps_targets, important, max_work, max_pool):
    """Per NFA state, the sorted important states reachable by ε-moves (itself included):
    (offsets, pool, overflowed) in CSR form. Closures can be quadratic in the NFA
    (``(.*){1,32000}``): past ``max_work`` states visited or ``max_pool`` closure members
    in all, the work stops and ``overflowed`` is True."""
    offsets = np.zeros(num_states + 1, dtype=np.int64)
    work = 0
    pool = np.empty(max(16, num_states), dtype=np.int64)
    stamp = np.full(num_states, -1, dtype=np.int64)
    stack = np.empty(num_states, dtype=np.int64)
    found = np.empty(num_states, dtype=np.int64)
    used = 0
    for state in range(num_states):
        stamp[state] = state
        stack[0] = state
        top = 1
        length = 0
        while top > 0:
            top -= 1
            q = stack[top]
            work += 1
            if work > max_work:
                return offsets, pool[:0], True
            if important[q]:
                found[length] = q
                length += 1
            for i in range(eps_offsets[q], eps_offsets[q + 1]):
                nxt = eps_targets[i]
                if stamp[nxt] != state:
                    stamp[nxt] = state
                    stack[top] = nxt
                    top += 1
        if used + length > max_pool:
            return offsets, pool[:0], True
        if used + length > pool.shape[0]:
            grown = np.empty(min(2 * (used + length), max_pool), dtype=np.int64)
            grown[:used] = pool[:used]
            pool = grown
        pool[used:used + length] = np.sort(found[:length])
        used += length
        offsets[state + 1] = used
    return offsets, pool[:used], False


@kernel
def subset_construction(num_states, initial, accepting, edge_offsets, edge_class, edge_target,
                        closure_offsets, closure_pool, num_classes, max_states, max_work):
    """Determinise an NFA over symbol classes (ε-moves given as closures).

    ``edge_*`` is the CSR of labelled edges by source (one entry per class an edge's label
    contains); ``closure_*`` the ε-closures (important states only, sorted). A DFA state is
    the sorted set of important NFA states. Returns (table int32 [states, classes],
    accepting bool [states], overflowed); no states when the start closure is empty. It
    also overflows once more than ``max_work`` closure members were visited (its time
    follows that count: wide subsets, as in ``(a{1,100}){1,100}``, cost seconds in few states).
    """
    work = 0
    pool = np.empty(max(64, 4 * num_states), dtype=np.int64)
    offsets = np.zeros(64, dtype=np.int64)
    rows = np.empty((64, num_classes), dtype=np.int32)
    is_accepting = np.zeros(64, dtype=np.bool_)
    first, past = closure_offsets[initial], closure_offsets[initial + 1]
    if past == first:
        return rows[:0], is_accepting[:0], False
    length = past - first
    pool[:length] = closure_pool[first:past]
    offsets[1] = length
    count = 1
    slots = np.full(1024, -1, dtype=np.int64)
    mask = slots.shape[0] - 1
    slots[np.int64(hash_members(pool, length) & np.uint64(mask))] = 0
    # per class: the NFA targets of the current subset (bucketed), then the closure union
    class_count = np.zeros(num_classes, dtype=np.int64)
    class_start = np.zeros(num_classes + 1, dtype=np.int64)
    targets = np.empty(16, dtype=np.int64)
    bucketed = np.empty(16, dtype=np.int64)
    stamp = np.full(num_states, -1, dtype=np.int64)
    buffer = np.empty(num_states, dtype=np.int64)
    stamp_value = 0
    position = 0
    while position < count:
        s_first, s_past = offsets[position], offsets[position + 1]
        accept = False
        total = 0
        class_count[:] = 0
        for i in range(s_first, s_past):
            q = pool[i]
            if accepting[q]:
                accept = True
            for e in range(edge_offsets[q], edge_offsets[q + 1]):
                class_count[edge_class[e]] += 1
                total += 1
        is_accepting[position] = accept
        if total > targets.shape[0]:
            targets = np.empty(2 * total, dtype=np.int64)
            bucketed = np.empty(2 * total, dtype=np.int64)
        class_start[0] = 0
        for c in range(num_classes):
            class_start[c + 1] = class_start[c] + class_count[c]
        class_count[:] = 0
        for i in range(s_first, s_past):
            q = pool[i]
            for e in range(edge_offsets[q], edge_offsets[q + 1]):
                c = edge_class[e]
                bucketed[class_start[c] + class_count[c]] = edge_target[e]
                class_count[c] += 1
        for c in range(num_classes):
            if class_count[c] == 0:
                rows[position, c] = DEAD
                continue
            stamp_value += 1
            length = 0
            for i in range(class_start[c], class_start[c + 1]):
                t = bucketed[i]
                work += closure_offsets[t + 1] - closure_offsets[t]
                for j in range(closure_offsets[t], closure_offsets[t + 1]):
                    member = closure_pool[j]
                    if stamp[member] != stamp_value:
                        stamp[member] = stamp_value
                        buffer[length] = member
                        length += 1
            work += 8 * length  # sorting, hashing and comparing the new subset
            if work > max_work:
                return rows[:0], is_accepting[:0], True
            if length == 0:
                rows[position, c] = DEAD
                continue
            buffer[:length] = np.sort(buffer[:length])
            found, slot = find_members(slots, offsets, pool, buffer, length)
            if found < 0:
                if count >= max_states:
                    return rows[:0], is_accepting[:0], True
                found = count
                if count >= rows.shape[0]:
                    grown_rows = np.empty((2 * rows.shape[0], num_classes), dtype=np.int32)
                    grown_rows[:count] = rows[:count]
                    rows = grown_rows
                    grown_accepting = np.zeros(2 * is_accepting.shape[0], dtype=np.bool_)
                    grown_accepting[:count] = is_accepting[:count]
                    is_accepting = grown_accepting
                slots, offsets, pool = added_members(slots, slot, offsets, pool, count, buffer, length, 0)
                count += 1
            rows[position, c] = found
        position += 1
    return rows[:count], is_accepting[:count], False


@kernel
def column_classes(table):
    """Columns of ``table`` that are identical form one class: (class of each column,
    first column of each class), classes numbered in the order of their first column."""
    n, k = table.shape
    hashes = np.full(k, np.uint64(14695981039346656037), dtype=np.uint64)
    for s in range(n):  # row by row: the table is row-major
        for c in range(k):
            hashes[c] = (hashes[c] ^ np.uint64(table[s, c] + 1)) * np.uint64(1099511628211)
    class_of = np.empty(k, dtype=np.int64)
    first = np.empty(k, dtype=np.int64)
    count = 0
    for c in range(k):
        found = -1
        for j in range(count):
            r = first[j]
            if hashes[r] != hashes[c]:
                continue
            same = True
            for s in range(n):
                if table[s, r] != table[s, c]:
                    same = False
                    break
            if same:
                found = j
                break
        if found < 0:
            found = count
            first[count] = c
            count += 1
        class_of[c] = found
    return class_of, first[:count]




@kernel
def row_runs(table):
    """``table`` row by row as runs of equal entries: per row its number of runs, then each
    run's first column and value. Injective (rows are read back in order), and a fraction of
    the table where rows are mostly DEAD: what an automaton's digest hashes."""
    n, k = table.shape
    size = 0
    for s in range(n):
        size += 1
        for c in range(k):
            if c == 0 or table[s, c] != table[s, c - 1]:
                size += 2
    out = np.empty(size, dtype=np.int32)
    p = 0
    for s in range(n):
        head = p
        p += 1
        runs = 0
        for c in range(k):
            if c == 0 or table[s, c] != table[s, c - 1]:
                out[p] = c
                out[p + 1] = table[s, c]
                p += 2
                runs += 1
        out[head] = runs
    return out


@kernel(inline="always")
def _renamed(new_id):
    """How many states ``new_id`` keeps (those renamed 0 and up)."""
    n = 0
    for s in range(new_id.shape[0]):
        if new_id[s] >= 0:
            n += 1
    return n


@kernel
def literal_words_dfa(data, starts, used):
    """The minimal DFA of the words ``data[starts[i]:starts[i + 1]]`` (sorted, distinct), over
    the bytes ``used`` (sorted; each its own class): (transitions int32 [n, 256], accepting),
    states numbered breadth-first from the initial state 0, bytes in order (the canonical
    numbering of :func:`canonical_order`). Built as a trie, whose states are then merged
    bottom up (a child is created after its parent, so descending ids see children first):
    two states are equal when they agree on accepting and on every child's class."""
    k = used.shape[0]
    class_of_byte = np.full(256, -1, dtype=np.int64)
    for c in range(k):
        class_of_byte[used[c]] = c
    table = np.full((data.shape[0] + 1, k), -1, dtype=np.int64)
    accepting = np.zeros(data.shape[0] + 1, dtype=np.bool_)
    count = 1
    for i in range(starts.shape[0] - 1):
        s = 0
        for p in range(starts[i], starts[i + 1]):
            c = class_of_byte[data[p]]
            t = table[s, c]
            if t < 0:
                t = count
                count += 1
                table[s, c] = t
            s = t
        accepting[s] = True
    # merge equal states: rep[s] is the registered state equal to s
    rep = np.arange(count)
    size = 16
    while size < 2 * count:
        size *= 2
    slots = np.full(size, -1, dtype=np.int64)
    for s in range(count - 1, -1, -1):
        h = np.uint64(14695981039346656037) ^ np.uint64(accepting[s])
        for c in range(k):
            t = table[s, c]
            if t >= 0:
                t = rep[t]
                table[s, c] = t
            h = (h ^ np.uint64(t + 1)) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(size - 1))
        while slots[slot] >= 0:
            other = slots[slot]
            same = accepting[other] == accepting[s]
            c = 0
            while same and c < k:
                same = table[other, c] == table[s, c]
                c += 1
            if same:
                rep[s] = other
                break
            slot = (slot + 1) & (size - 1)
        if rep[s] == s:
            slots[slot] = s
    # breadth-first numbering of the merged states (classes are in byte order)
    number = canonical_order(table, 0)
    merged, final = _relabelled(table, accepting, number, _renamed(number))
    return expand_columns(merged, class_of_byte), final


@kernel(inline="always")
def _row_entry(trans, byte_of, rows, n_l, x, c):
    return trans[x, byte_of[c]] if x < n_l else rows[x - n_l, c]


@kernel(inline="always")
def _row_accepts(accepting, final, n_l, x):
    return accepting[x] if x < n_l else final[x - n_l]


@kernel
def minus_words(trans, initial, accepting, data, starts):
    """The minimal DFA of ``L - W``, ``L`` a trimmed minimal DFA (``trans``, ``initial``,
    ``accepting``) and ``W`` the words ``data[starts[i]:starts[i + 1]]``: (transitions int32
    [n, 256], accepting), numbered breadth-first from the initial state 0, bytes in order; no
    states for the empty language.

    A state of ``L - W`` is a state of ``L`` or a node of the words' trie (a prefix ``u``,
    with ``L``'s state after ``u``: bytes leaving the trie go on in ``L``). Nodes are merged
    bottom up (a node is created after its parent, so descending ids see children first) by
    their rows and accepting flags, ``L``'s states registered first: ``L`` being minimal, a
    node equal to one of its states is found there. Ids: ``L``'s states, then node ``t`` as
    ``n_l + t``; a node that accepts nothing is dead (-1). Rows are over byte classes: ``L``'s
    own, each byte of a word a class of its own, numbered by first byte (so walking classes
    in order meets targets in byte order)."""
    n_l = trans.shape[0]
    l_class, _ = column_classes(trans)
    in_words = np.zeros(256, dtype=np.bool_)
    for p in range(data.shape[0]):
        in_words[data[p]] = True
    class_of = np.empty(256, dtype=np.int64)
    byte_of = np.empty(256, dtype=np.int64)
    numbered = np.full(256, -1, dtype=np.int64)  # L's class -> its class here (bytes of no word)
    k = 0
    for b in range(256):
        if in_words[b]:
            class_of[b] = k
        elif numbered[l_class[b]] >= 0:
            class_of[b] = numbered[l_class[b]]
            continue
        else:
            numbered[l_class[b]] = k
            class_of[b] = k
        byte_of[k] = b
        k += 1
    total = data.shape[0] + 1
    rows = np.full((total, k), -1, dtype=np.int32)  # the trie's children, then the nodes' rows (ids)
    inside = np.full(total, -1, dtype=np.int64)  # L's state after the node's prefix
    word = np.zeros(total, dtype=np.bool_)
    inside[0] = initial
    count = 1
    for i in range(starts.shape[0] - 1):
        s = 0
        for p in range(starts[i], starts[i + 1]):
            b = data[p]
            t = rows[s, class_of[b]]
            if t < 0:
                t = count
                count += 1
                rows[s, class_of[b]] = t
                if inside[s] >= 0:
                    inside[t] = trans[inside[s], b]
            s = t
        word[s] = True
    final = np.zeros(count, dtype=np.bool_)
    merged = np.full(count, -1, dtype=np.int64)
    size = 16
    while size < 2 * (n_l + count):
        size *= 2
    slots = np.full(size, -1, dtype=np.int64)
    for j in range(n_l + count):
        x = j if j < n_l else n_l + (count - 1 - (j - n_l))
        if x >= n_l:
            t = x - n_l
            q = inside[t]
            final[t] = q >= 0 and accepting[q] and not word[t]
            live = final[t]
            for c in range(k):
                child = rows[t, c]
                target = merged[child] if child >= 0 else (trans[q, byte_of[c]] if q >= 0 else -1)
                rows[t, c] = target
                if target >= 0:
                    live = True
            if not live:
                continue  # merged[t] stays -1: dead
        h = np.uint64(14695981039346656037) ^ np.uint64(_row_accepts(accepting, final, n_l, x))
        for c in range(k):
            h = (h ^ np.uint64(_row_entry(trans, byte_of, rows, n_l, x, c) + 1)) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(size - 1))
        found = -1
        while slots[slot] >= 0:
            y = slots[slot]
            same = _row_accepts(accepting, final, n_l, y) == _row_accepts(accepting, final, n_l, x)
            c = 0
            while same and c < k:
                same = _row_entry(trans, byte_of, rows, n_l, y, c) == _row_entry(trans, byte_of, rows, n_l, x, c)
                c += 1
            if same:
                found = y
                break
            slot = (slot + 1) & (size - 1)
        if found < 0:
            slots[slot] = x
            found = x
        if x >= n_l:
            merged[x - n_l] = found
    root = merged[0]
    if root < 0:
        return np.full((0, 256), -1, dtype=np.int32), np.zeros(0, dtype=np.bool_)
    # breadth-first numbering from the root over one table of every id (classes are in byte order)
    table = np.empty((n_l + count, k), dtype=np.int64)
    flags = np.empty(n_l + count, dtype=np.bool_)
    for x in range(n_l + count):
        flags[x] = _row_accepts(accepting, final, n_l, x)
        for c in range(k):
            table[x, c] = _row_entry(trans, byte_of, rows, n_l, x, c)
    number = canonical_order(table, root)
    merged, merged_accepting = _relabelled(table, flags, number, _renamed(number))
    return expand_columns(merged, class_of), merged_accepting


@kernel
def weighted_path_lengths(table, initial, accepting, weight):
    """(fewest, most) total ``weight[b]`` (0 or 1 per byte) over the bytes of an accepted
    string of a trimmed DFA; most is -1 when unbounded (a cycle: in a trimmed DFA every state
    lies on an accepted path; a cycle of zero weight counts as unbounded too, as the callers'
    automata have none)."""
    n = table.shape[0]
    # fewest: breadth first by weight, each level closed under weight-0 bytes first
    far = n * 256 + 1
    dist = np.full(n, far, dtype=np.int64)
    level = np.empty(n, dtype=np.int64)
    stack = np.empty(n * 2 + 1, dtype=np.int64)
    following = np.empty(n, dtype=np.int64)
    fewest = -1
    dist[initial] = 0
    level[0] = initial
    size = 1
    d = 0
    while size and fewest < 0:
        top = 0
        for i in range(size):
            stack[top] = level[i]
            top += 1
        n_next = 0
        while top:
            top -= 1
            s = stack[top]
            if accepting[s] and fewest < 0:
                fewest = d
            for b in range(256):
                t = table[s, b]
                if t < 0:
                    continue
                if weight[b] == 0:
                    if dist[t] > d:
                        dist[t] = d
                        stack[top] = t
                        top += 1
                elif dist[t] > d + 1:
                    dist[t] = d + 1
                    following[n_next] = t
                    n_next += 1
        size = 0
        for i in range(n_next):
            if dist[following[i]] == d + 1:
                level[size] = following[i]
                size += 1
        d += 1
    # most: longest path over a topological order (Kahn), none if a cycle remains
    indegree = np.zeros(n, dtype=np.int64)
    for s in range(n):
        for b in range(256):
            if table[s, b] >= 0:
                indegree[table[s, b]] += 1
    order = np.empty(n, dtype=np.int64)
    head = 0
    tail = 0
    for s in range(n):
        if indegree[s] == 0:
            order[tail] = s
            tail += 1
    while head < tail:
        s = order[head]
        head += 1
        for b in range(256):
            t = table[s, b]
            if t >= 0:
                indegree[t] -= 1
                if indegree[t] == 0:
                    order[tail] = t
                    tail += 1
    if tail < n:
        return fewest, -1
    longest = np.zeros(n, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        s = order[i]
        best = 0 if accepting[s] else -1
        for b in range(256):
            t = table[s, b]
            if t >= 0 and longest[t] >= 0 and longest[t] + weight[b] > best:
                best = longest[t] + weight[b]
        longest[s] = best
    return fewest, longest[initial]
