"""Lexer steps of the runtime parser: one byte through the lexer DFA (with the column and
code-point counters it carries), and the terminals a lexer state can still end as.

Kernels take the members of ``ParserTables.kernel_args()`` they need, one by one, under the
names ``lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte`` (the lexer),
``reach_bits, reach_done`` (the lazily filled winners cache) and ``layout, tracks_column``.
"""

from __future__ import annotations

import numpy as np

from ..bitsets import intersects, lowest_common_bit, one_bit
from ..grammar.parser_tables import COUNTED, COUNTED_BOUNDS, KIND_MASK, NEED_SHIFT, NEWLINE, NEWLINE_TERMINAL, TAB_SIZE
from ..jit import kernel


@kernel
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


@kernel(inline="always")
def reachable_winners(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q):
    """Terminals that can win a lexeme going on from lexer state ``q`` (cached bitset)."""
    if not reach_done[q]:
        fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q)
    return reach_bits[q]


SHADOW_SEARCH_WIDTH = 256
"""Distinct joint states per byte that :func:`lexeme_escapes_shadows` follows before it
gives up (answering yes)."""


@kernel(inline="always")
def _between_characters(lx_trans, lx_accept, lx_alive, q, cand):
    """Can a lexeme in lexer state ``q`` end here or go on with a byte that starts a
    character (its automaton is not inside a multi-byte character)?"""
    if intersects(lx_accept[q], cand):
        return True
    for byte in range(256):
        if 0x80 <= byte < 0xC0:
            continue
        t = lx_trans[q, byte]
        if t >= 0 and intersects(lx_alive[t], cand):
            return True
    return False


@kernel(inline="always")
def shadow_covers(alive, cand, shadow_cand):
    """Is every terminal of ``cand`` still alive (``alive``) also a shadow's candidate? Then
    a shadow in the lexeme's own state accepts wherever the lexeme could end."""
    for w in range(cand.shape[0]):
        if alive[w] & cand[w] & ~shadow_cand[w]:
            return False
    return True


@kernel
def lexeme_escapes_shadows(lx_trans, lx_accept, lx_alive, q, cand, shadow_states, shadow_cands):
    """Can a lexeme in lexer state ``q`` (candidates ``cand``) finish the character it is
    inside of, if any, with no shadow accepting on the way (longest match, or a lookahead
    past a lexeme, forbids that) and none dying? ``shadow_states`` are lexer states (-1
    for none), each with its candidates ``shadow_cands``.

    Each alone is not enough: after ``x and`` and the byte 0xC2, the new lexeme may become
    a NAME (U+00AA) and the shadow, the longer NAME ``and...``, does not accept; but the
    byte that completes the letter completes the longer NAME too, and any other kills the
    lexeme, so a mask that let 0xC2 through would leave nothing allowed after it. The
    search walks the lexeme and the shadows together through continuation bytes
    (0x80-0xBF), breadth first, until the lexeme is between characters, a shadow died out
    or ``SHADOW_SEARCH_WIDTH`` distinct joint states at one depth would be exceeded (then
    it answers yes): it closes no way on. Between characters the next byte decides each
    shadow at once in the grammars met so far (a word character makes the longer NAME,
    another ends it), so the search stops there; callers run it only after a byte
    0x80 and up. A shadow in the lexeme's own state whose candidates include the lexeme's
    live ones accepts wherever the lexeme could end: no at once (the case most calls meet).
    """
    slots = shadow_states.shape[0]
    any_shadow = False
    for k in range(slots):
        if shadow_states[k] == q and shadow_covers(lx_alive[q], cand, shadow_cands[k]):
            return False  # the shadow accepts wherever the lexeme can end (common: the hot case)
        if shadow_states[k] >= 0:
            any_shadow = True
    if not any_shadow or _between_characters(lx_trans, lx_accept, lx_alive, q, cand):
        return True
    lexeme = np.empty((2, SHADOW_SEARCH_WIDTH), np.int32)
    shadows = np.empty((2, SHADOW_SEARCH_WIDTH, slots), np.int32)
    moved = np.empty(slots, np.int32)
    lexeme[0, 0] = q
    shadows[0, 0] = shadow_states
    size = 1
    now = 0
    for _ in range(3):  # at most three continuation bytes finish a character
        after = 1 - now
        n_after = 0
        for i in range(size):
            for byte in range(0x80, 0xC0):
                went_on = lx_trans[lexeme[now, i], byte]
                if went_on < 0 or not intersects(lx_alive[went_on], cand):
                    continue
                violated = False
                left = 0
                for k in range(slots):
                    s = shadows[now, i, k]
                    t = -1 if s < 0 else lx_trans[s, byte]
                    if t >= 0:
                        if intersects(lx_accept[t], shadow_cands[k]) or (
                                t == went_on and shadow_covers(lx_alive[t], cand, shadow_cands[k])):
                            violated = True  # now, or wherever the lexeme could end
                            break
                        if not intersects(lx_alive[t], shadow_cands[k]):
                            t = -1
                    moved[k] = t
                    if t >= 0:
                        left += 1
                if violated:
                    continue
                if left == 0:
                    return True
                seen = False
                for j in range(n_after):
                    if lexeme[after, j] == went_on:
                        same = True
                        for k in range(slots):
                            if shadows[after, j, k] != moved[k]:
                                same = False
                                break
                        if same:
                            seen = True
                            break
                if seen:  # (before the test below, which costs a scan of the bytes)
                    continue
                if _between_characters(lx_trans, lx_accept, lx_alive, went_on, cand):
                    return True
                if n_after == SHADOW_SEARCH_WIDTH:
                    return True
                lexeme[after, n_after] = went_on
                shadows[after, n_after] = moved
                n_after += 1
        if n_after == 0:
            return False
        size = n_after
        now = after
    return True


@kernel(inline="always")
def free_terminal(layout, brackets):
    """The lexer terminal a hypothesis ignores whatever its stack: a newline inside brackets."""
    return layout[NEWLINE_TERMINAL] if brackets > 0 else -1


@kernel(inline="always")
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


@kernel(inline="always")
def newline_column(column):
    """The column a newline lexeme's :func:`next_column` field stands for."""
    return column if column >= 0 else -column - 2


@kernel(inline="always")
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
