"""Lexer steps of the runtime parser: one byte through the lexer DFA (with the column and
code-point counters it carries), and the terminals a lexer state can still end as.

Kernels take the arrays of ``ParserTables.kernel_args()`` they need under the names
``lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte`` (the lexer), ``reach_bits,
reach_done`` (the lazily filled winners cache) and ``layout, tracks_column``.
"""

from __future__ import annotations

import numba
import numpy as np

from ..bitsets import lowest_common_bit, one_bit
from ..grammar.parser_tables import COUNTED, COUNTED_BOUNDS, KIND_MASK, NEED_SHIFT, NEWLINE, NEWLINE_TERMINAL, TAB_SIZE


@numba.njit(cache=True, nogil=True)
def fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, start):
    """Set ``reach_bits[q]`` (and ``reach_done``) to the terminals that win some lexeme
    reachable from ``q``, for ``start`` and every state reachable from it.

    A state tracks only candidates of every start that reaches it (see the lexer module),
    so its winner is the best-ranked terminal accepting there, whatever the candidate set.
    A state that tracks one terminal only reaches states that track it alone, and every
    state of a terminal's automaton can still accept, so its answer is that terminal: the
    search stops there (a format or a bounded string is tens of thousands of such states).

    One pass of Tarjan's strongly connected components: a state's winners are its own and
    those of its successors, so each component, finished after every component it reaches,
    gets the union at once. A search per state would walk the rest of the automaton again
    for each of them: quadratic along a length-bounded string.
    Only finished values are stored, so readers that check ``reach_done`` first never see a
    partial set."""
    if reach_done[start]:
        return
    if one_bit(lx_alive[start]):
        reach_bits[start] = lx_alive[start]
        reach_done[start] = 1
        return
    n = lx_trans.shape[0]
    words = lx_accept.shape[1]
    # Only `met` is cleared: a call is made per state not done yet, and clearing every
    # per-state array of a large lexer each time cost more than the search.
    met = np.zeros(n, np.uint8)  # 0: not met, 1: on the component stack, 2: component done
    index = np.empty(n, np.int32)
    low = np.empty(n, np.int32)
    members = np.empty(n, np.int32)
    n_members = 0
    frames = np.empty(n, np.int32)
    next_class = np.empty(n, np.int32)
    acc = np.empty((n, words), np.uint64)  # a row is cleared when its state is met
    counter = 0
    depth = 0
    met_now = start  # a state met just now, to enter before going on
    while True:
        if met_now >= 0:
            index[met_now] = low[met_now] = counter
            counter += 1
            members[n_members] = met_now
            n_members += 1
            met[met_now] = 1
            acc[met_now] = 0
            frames[depth] = met_now
            next_class[depth] = 0
            depth += 1
            met_now = -1
        if depth == 0:
            break
        v = frames[depth - 1]
        c = next_class[depth - 1]
        if c < lx_class_byte.shape[0]:  # one byte of each class the lexer treats alike
            next_class[depth - 1] = c + 1
            w = lx_trans[v, lx_class_byte[c]]
            if w < 0:
                continue
            if not reach_done[w] and one_bit(lx_alive[w]):
                reach_bits[w] = lx_alive[w]
                reach_done[w] = 1
            if reach_done[w]:
                for k in range(words):
                    acc[v, k] |= reach_bits[w, k]
            elif met[w] == 0:
                met_now = w
            elif met[w] == 1 and index[w] < low[v]:
                low[v] = index[w]
            continue
        winner = lowest_common_bit(lx_accept[v], lx_accept[v])
        if winner >= 0:
            acc[v, winner >> 6] |= np.uint64(1) << np.uint64(winner & 63)
        depth -= 1
        if depth:
            parent = frames[depth - 1]
            if low[v] < low[parent]:
                low[parent] = low[v]
            for k in range(words):
                acc[parent, k] |= acc[v, k]
        if low[v] == index[v]:
            while True:
                n_members -= 1
                z = members[n_members]
                met[z] = 2
                for k in range(words):
                    reach_bits[z, k] = acc[v, k]
                reach_done[z] = 1
                if z == v:
                    break


@numba.njit(cache=True, nogil=True, inline="always")
def reachable_winners(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q):
    """Terminals that can win a lexeme going on from lexer state ``q`` (cached bitset)."""
    if not reach_done[q]:
        fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q)
    return reach_bits[q]


@numba.njit(cache=True, nogil=True, inline="always")
def free_terminal(layout, brackets):
    """The lexer terminal a hypothesis ignores whatever its stack: a newline inside brackets."""
    return layout[NEWLINE_TERMINAL] if brackets > 0 else -1


@numba.njit(cache=True, nogil=True, inline="always")
def next_column(tracks_column, layout, lexeme, column, byte):
    """The column of a newline lexeme once ``byte`` took it to lexer state ``lexeme`` (0 in
    other lexemes): the spaces and tabs right after the last line break. Any other
    character (a comment's ``#``, the quote of a docstring that a newline terminal takes)
    ends them: the column is then kept as ``-column - 2`` (see :func:`newline_column`)."""
    if tracks_column[lexeme] != NEWLINE or byte == 10:
        return 0
    if column < 0:
        return column
    if byte == 32:
        return column + 1
    if byte == 9:
        tab = layout[TAB_SIZE]
        return (column // tab + 1) * tab
    return -column - 2


@numba.njit(cache=True, nogil=True, inline="always")
def newline_column(column):
    """The column a newline lexeme's :func:`next_column` field stands for."""
    return column if column >= 0 else -column - 2


@numba.njit(cache=True, nogil=True, inline="always")
def lexer_step(lx_trans, tracks_column, layout, q, counter, byte):
    """(the lexer state after ``byte`` in state ``q``, -1 when the lexeme dies; the
    hypothesis's COLUMN field after it). In a counted string the field is the code points
    so far: each character starts in the state between characters; the closing quote
    before the fewest kills the lexeme, and so does a state from which the quote cannot
    come within the most. A negative count is not checked (the mask store's count-free
    walks, see ``GrammarMaskStore.fill``)."""
    went_on = lx_trans[q, byte]
    if went_on < 0:
        return went_on, 0
    target = tracks_column[went_on]
    if target < COUNTED:
        return went_on, next_column(tracks_column, layout, went_on, counter, byte)
    source = tracks_column[q] & KIND_MASK
    if source < COUNTED:
        counter = 0  # the opening quote
    elif counter < 0:
        return went_on, counter
    elif source & 1:
        if byte == 0x22:
            return (went_on, counter) if counter >= layout[COUNTED_BOUNDS + source - COUNTED - 1] else (-1, 0)
        counter += 1
    most = layout[COUNTED_BOUNDS + ((target & KIND_MASK) - COUNTED) // 2 * 2 + 1]
    if most >= 0 and counter + (target >> NEED_SHIFT) > most:
        return -1, 0
    return went_on, counter
