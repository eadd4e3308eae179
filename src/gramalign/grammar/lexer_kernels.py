"""numba kernels of the lexer construction (wrapped by :mod:`.lexer`).

The lexer is the product of the terminal DFAs, but most of it is not a product at all: a
lexeme becomes one terminal after a byte or two (the quote of a string, the first letter
of a keyword), and from there on its states are that terminal's own states. So only the
states with two or more live members are built by the product (and hashed); a transition
to a single member leads into the terminal's *block*, a copy of its DFA table shifted to
the block's first lexer state. A 25k-state ``format`` string then costs one pass over its
table, not a hash lookup per state and byte class.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from .automata.member_sets import added_members, find_members

DEAD = -1


@kernel
def multi_member_product(big, columns, start_pool, start_offsets, max_states):
    """The product states with two or more members (and the starts), from several starts.

    ``big`` is int32 [global states, columns]: every terminal DFA's table with its states
    offset to be distinct, -1 for dead; the product reads the columns ``columns`` (a byte
    of each class: a lexer's own rows, or all of a table already over classes). A product state is the ordered array of its live
    members' global states. Start state k has the members
    ``start_pool[start_offsets[k]:start_offsets[k + 1]]``; starts are states 0 .. k - 1 and
    are never re-entered (a transition to the same members makes a new state: a start
    always means "nothing read yet"). A transition to exactly one member ``g`` is written
    ``-2 - g``, to be resolved to ``g``'s place in its terminal's block.
    Returns (rows int32 [states, classes], member pool, offsets into it, overflowed).
    """
    num_classes = columns.shape[0]
    n_starts = start_offsets.shape[0] - 1
    width = 1
    for k in range(n_starts):
        width = max(width, start_offsets[k + 1] - start_offsets[k])
    pool = np.empty(max(64, 4 * start_pool.shape[0]), dtype=np.int64)
    pool[:start_pool.shape[0]] = start_pool
    offsets = np.empty(max(64, 2 * (n_starts + 1)), dtype=np.int64)
    offsets[:n_starts + 1] = start_offsets
    rows = np.empty((max(64, 2 * n_starts), num_classes), dtype=np.int32)
    count = n_starts
    slots = np.full(1024, -1, dtype=np.int64)  # open addressing: state ids by member hash
    buffer = np.empty(width, dtype=np.int64)
    position = 0
    while position < count:
        first, past = offsets[position], offsets[position + 1]
        for c in range(num_classes):
            length = 0
            for i in range(first, past):
                target = big[pool[i], columns[c]]
                if target >= 0:
                    buffer[length] = target
                    length += 1
            if length == 0:
                rows[position, c] = DEAD
                continue
            if length == 1:
                rows[position, c] = -2 - buffer[0]
                continue
            found, slot = find_members(slots, offsets, pool, buffer, length)
            if found < 0:
                if count >= max_states:
                    return rows[:0], pool[:0], offsets[:1], True
                found = count
                if count >= rows.shape[0]:
                    grown_rows = np.empty((2 * rows.shape[0], num_classes), dtype=np.int32)
                    grown_rows[:count] = rows[:count]
                    rows = grown_rows
                # the starts are never looked up
                slots, offsets, pool = added_members(slots, slot, offsets, pool, count, buffer, length, n_starts)
                count += 1
            rows[position, c] = found
        position += 1
    return rows[:count], pool[:offsets[count]], offsets[:count + 1], False


@kernel
def expand_product_rows(rows, byte_class, owner, global_offsets, block_start, out):
    """``out[s, b]`` for the product states: ``rows[s, byte_class[b]]``, with a single member
    ``-2 - g`` resolved to its state in the block of its terminal."""
    for s in range(rows.shape[0]):
        for b in range(256):
            target = rows[s, byte_class[b]]
            if target <= -2:
                g = -2 - target
                t = owner[g]
                target = block_start[t] + (g - global_offsets[t])
            out[s, b] = target


@kernel
def write_block(columns, column_of_byte, accepting, first, word, bit, lexer_trans, lexer_alive, lexer_accept):
    """A terminal's table as lexer rows from ``first`` on (its states shifted there), read
    from its columns (byte ``b`` reads ``columns[:, column_of_byte[b]]``: a large automaton's
    distinct columns, or a small one's whole table with every byte its own column), with its
    bit alive in every row (a terminal DFA is trimmed) and accepting where it accepts. The
    bitset rows are zero before (rows are never reused)."""
    shift = np.int32(first)
    for s in range(columns.shape[0]):
        out = first + s
        for b in range(256):
            target = columns[s, column_of_byte[b]]
            lexer_trans[out, b] = target + shift if target >= 0 else DEAD
        lexer_alive[out, word] = bit
        if accepting[s]:
            lexer_accept[out, word] = bit


@kernel
def write_product_states(rows, byte_class, local, fresh, first, pool, offsets, lexer_trans, lexer_alive,
                         lexer_accept):
    """Rows ``first + j`` of the lexer for the product states ``fresh[j]`` (indices into
    ``rows``, over byte classes: a product state, -1 dead, or ``-2 - s`` one lexer state
    ``s``), product states renumbered by ``local``; each alive and accepting where a member
    (``pool[offsets[i]:offsets[i + 1]]``, lexer states) is."""
    for j in range(fresh.shape[0]):
        i = fresh[j]
        out = first + j
        for b in range(256):
            target = rows[i, byte_class[b]]
            if target <= -2:
                lexer_trans[out, b] = -2 - target
            elif target >= 0:
                lexer_trans[out, b] = local[target]
            else:
                lexer_trans[out, b] = DEAD
        for m in range(offsets[i], offsets[i + 1]):
            for w in range(lexer_alive.shape[1]):
                lexer_alive[out, w] |= lexer_alive[pool[m], w]
                lexer_accept[out, w] |= lexer_accept[pool[m], w]


@kernel
def copy_block(transitions, first_state, out):
    """A terminal's table as lexer rows: its states shifted to start at ``first_state``."""
    shift = np.int32(first_state)
    for s in range(transitions.shape[0]):
        for b in range(256):
            target = transitions[s, b]
            out[s, b] = target + shift if target >= 0 else DEAD
