"""The parser's byte step: a set of hypotheses advanced by one byte, with the lexing
semantics of ``docs/grammars.md``.

The candidates for a lexeme are the terminals the parser can take in the state where the
lexeme starts, plus the ignored ones; a lexeme is the longest match among them; equal
lengths go to the best-ranked terminal. Most of the time a state has one hypothesis
(:mod:`.state`). A second one appears while the current lexeme could either end here or go
on (``12`` may be a number or the start of ``123``). Ending a lexeme early leaves a
*shadow*: the automaton state of the longer lexeme that was not taken. Longest match
forbids that longer lexeme, so if a shadow ever reaches an accepting state its hypothesis
dies; when it dies out, it is dropped.

There is no fixed bound on either: text that keeps many decisions pending (a long run that
a terminal like ``/[ab]{2,40}c/`` may still take whole, while shorter terminals split it)
needs as many hypotheses and shadows as it has pending lexemes. The kernels report when
their output rows or shadow slots are full and the caller grows them and calls again (as
for the node pool); hypotheses that mean the same (equal stack contents, lexeme, layout and
shadow set) are merged after every byte, and so are equal shadows of one hypothesis. Where
a newline lexeme ends outside brackets, the parser is fed the newline terminal and then an
indent or the dedents its column calls for.

The kernels take their arrays in four bundles (tuples, unpacked where used, which costs
nothing: see :mod:`gramalign.jit`), first and in this order: ``lexer``, ``lr`` and ``glue``
(``ParserTables.kernel_args()``, which names their members) and ``pool``
(:meth:`.stacks.StackPool.arrays`); then the rest.
"""

from __future__ import annotations

import numpy as np

from ..bitsets import intersects, lowest_common_bit, several_common_bits
from ..grammar.parser_tables import (BRACKET_DELTA, DEDENT_COLUMN, ENDS_IN_WORD, EVERY_SPLIT, INDENT_COLUMN,
                                     LOOKAHEAD_STATE, NEEDS_TEXT, NEWLINE_COLUMN, NEWLINE_TERMINAL, OWN_LONGEST)
from ..jit import kernel
from .lexing import (free_terminal, lexeme_escapes_shadows, lexer_step, newline_column, next_column,
                     reachable_winners, shadow_covers)
from .stacks import (FORKED, feed_all, feed_any, feed_terminal, has_forks, merge_stacks, node_parent, node_state,
                     same_stack)
from .state import (BLOCKS, BRACKETS, COLUMN, HYPOTHESES_FULL, LEXEME, OK, POOL_FULL, SCRATCH_BASE,
                    SCRATCH_FULL, SHADOWS_FULL, STACK, shadow_column, shadow_slots)


@kernel
def usable_meets(lr, term_column, pool, node, scratch_alloc, free_terminal, wanted, usable, known):
    """Can the stack ``node`` really shift (or ignore) some terminal of ``wanted``?

    ``usable``/``known`` (uint64 bitsets) memoize the per-terminal answers for this stack:
    only terminals not known yet are fed, one at a time, stopping at the first that works,
    so a look-ahead reads no deeper into the stack than it must. ``free_terminal`` (or -1)
    is ignored on this hypothesis whatever the stack: a newline inside brackets. A newline
    is checked by feeding the newline terminal alone: the lexeme can still reach any
    column, so whatever indent or dedents the stack needs can follow. Returns (answer,
    status).
    """
    words = wanted.shape[0]
    if free_terminal >= 0 and (wanted[free_terminal >> 6] >> np.uint64(free_terminal & 63)) & np.uint64(1):
        return True, OK
    for w in range(words):
        if wanted[w] & usable[w]:
            return True, OK
    for w in range(words):
        x = wanted[w] & ~known[w]
        k = 0
        while x:
            if x & np.uint64(1):
                bit = np.uint64(1) << np.uint64(k)
                column = term_column[w * 64 + k]
                ok = column < 0
                if not ok:
                    top, _, status = feed_terminal(lr, pool, node, column, True, scratch_alloc)
                    if top == FORKED:
                        top, _, status = feed_any(lr, pool, node, column, True, scratch_alloc)
                    if status != OK:
                        return False, status
                    ok = top != -1
                known[w] |= bit
                if ok:
                    usable[w] |= bit
                    return True, OK
            x >>= np.uint64(1)
            k += 1
    return False, OK


@kernel
def hypothesis_viable(lexer, lr, glue, pool, hyp, scratch_alloc):
    """Can this hypothesis still be completed to a sentence? Returns (viable, status).

    Its stack is a viable prefix (LALR never shifts into a dead end), so the question is
    only whether the current lexeme can become a terminal the stack can take.
    """
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    q = hyp[LEXEME]
    if lx_is_start[q] != 0:
        return True, OK
    node = hyp[STACK]
    reach = reachable_winners(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q)
    usable = np.zeros(cand_bits.shape[1], np.uint64)
    known = np.zeros(cand_bits.shape[1], np.uint64)
    return usable_meets(lr, term_column, pool, node, scratch_alloc, free_terminal(layout, hyp[BRACKETS]), reach, usable,
                        known)


@kernel
def end_lexeme(lr, term_column, layout, end_effects, pool, node, winner, brackets, column, blocks, to_scratch, alloc):
    """Feed the parser what a lexeme won by lexer terminal ``winner`` means.

    Usually that is the terminal itself (nothing for an ignored one). A newline lexeme
    outside brackets is the newline terminal followed by an indent (pushing ``column`` on
    the block stack ``blocks``) or by a dedent per block deeper than ``column``, which must
    then be the column of an open block. Returns ``(node, brackets, blocks, alloc,
    status)``; the node is -1 when the parser rejects it.
    """
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    if winner == layout[NEWLINE_TERMINAL]:
        if brackets > 0:
            return node, brackets, blocks, alloc, OK
        column = newline_column(column)
        node, alloc, status = feed_terminal(lr, pool, node, layout[NEWLINE_COLUMN], to_scratch, alloc)
        if status != OK or node < 0:
            return node, brackets, blocks, alloc, status
        level = 0 if blocks < 0 else node_state(pool_state, scratch_state, blocks)
        if column > level:
            capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
            if alloc >= capacity:
                return -1, brackets, blocks, alloc, SCRATCH_FULL if to_scratch else POOL_FULL
            if to_scratch:
                scratch_state[alloc] = column
                scratch_parent[alloc] = blocks
                blocks = SCRATCH_BASE + alloc
            else:
                pool_state[alloc] = column
                pool_parent[alloc] = blocks
                blocks = alloc
            alloc += 1
            node, alloc, status = feed_terminal(lr, pool, node, layout[INDENT_COLUMN], to_scratch, alloc)
            return node, brackets, blocks, alloc, status
        while column < level:
            node, alloc, status = feed_terminal(lr, pool, node, layout[DEDENT_COLUMN], to_scratch, alloc)
            if status != OK or node < 0:
                return node, brackets, blocks, alloc, status
            blocks = node_parent(pool_parent, scratch_parent, blocks)
            level = 0 if blocks < 0 else node_state(pool_state, scratch_state, blocks)
        if column != level:
            return -1, brackets, blocks, alloc, OK
        return node, brackets, blocks, alloc, OK
    parser_column = term_column[winner]
    if parser_column >= 0:
        node, alloc, status = feed_terminal(lr, pool, node, parser_column, to_scratch, alloc)
        if status != OK or node < 0:
            return node, brackets, blocks, alloc, status
    return node, brackets + end_effects[winner, BRACKET_DELTA], blocks, alloc, OK


@kernel(inline="always")
def _shadow_after(lx_trans, hyp, k, byte):
    """The lexer state shadow slot ``k`` of ``hyp`` reaches on ``byte`` (-1: empty slot or
    no move); its candidates are those of parser state ``hyp[shadow_column(k) + 1]``."""
    shadow = hyp[shadow_column(k)]
    return -1 if shadow < 0 else lx_trans[shadow, byte]


@kernel(inline="always")
def _shadow_violated(lx_trans, lx_accept, cand_bits, hyp, byte):
    """Does ``byte`` take some shadow of ``hyp`` to an accepting state (longest match then
    forbids the hypothesis)?"""
    for k in range(shadow_slots(hyp.shape[0])):
        t = _shadow_after(lx_trans, hyp, k, byte)
        if t >= 0 and intersects(lx_accept[t], cand_bits[hyp[shadow_column(k) + 1]]):
            return True
    return False


@kernel(inline="always")
def _add_shadow(row, used, shadow, parser_state, cand_id):
    """Put the shadow (lexer state, parser state) in the next free slot of ``row`` unless
    an equal one (same state, same candidate set) is there. Returns the slots used, or -1
    when every slot is taken."""
    cid = cand_id[parser_state]
    for k in range(used):
        column = shadow_column(k)
        if row[column] == shadow and cand_id[row[column + 1]] == cid:
            return used
    if used == shadow_slots(row.shape[0]):
        return -1
    column = shadow_column(used)
    row[column] = shadow
    row[column + 1] = parser_state
    return used + 1


@kernel(inline="always")
def _advance_shadows(lx_trans, lx_alive, cand_bits, cand_id, hyp, byte, row):
    """Write the shadows of ``hyp`` after ``byte`` into ``row`` (a different row), dropping
    the dead ones and duplicates, and clear the other slots. Returns the slots used, or -1
    when ``row`` has too few (the caller checked that none accepts)."""
    used = 0
    for k in range(shadow_slots(hyp.shape[0])):
        t = _shadow_after(lx_trans, hyp, k, byte)
        parser_state = hyp[shadow_column(k) + 1]
        if t < 0 or not intersects(lx_alive[t], cand_bits[parser_state]):
            continue
        used = _add_shadow(row, used, t, parser_state, cand_id)
        if used < 0:
            return -1
    for k in range(used, shadow_slots(row.shape[0])):
        column = shadow_column(k)
        row[column] = -1
        row[column + 1] = -1
    return used


@kernel(inline="always")
def _any_shadowed(out, first, n_out):
    """Has some row of ``out[first:n_out]`` a shadow?"""
    slots = shadow_slots(out.shape[1])
    for h in range(first, n_out):
        for k in range(slots):
            if out[h, shadow_column(k)] >= 0:
                return True
    return False


@kernel
def _drop_cornered(lx_trans, lx_accept, lx_alive, cand_bits, pool_state, scratch_state, out, first, n_out):
    """Remove from ``out[first:n_out]`` (order kept) the rows whose shadows leave their
    lexeme no way on (:func:`.lexing.lexeme_escapes_shadows`); returns the rows left."""
    kept = first
    for h in range(first, n_out):
        if _escapes_shadows(lx_trans, lx_accept, lx_alive, cand_bits, pool_state, scratch_state, out[h]):
            if kept != h:
                out[kept] = out[h]
            kept += 1
    return kept


@kernel(inline="always")
def _escapes_shadows(lx_trans, lx_accept, lx_alive, cand_bits, pool_state, scratch_state, row):
    """:func:`.lexing.lexeme_escapes_shadows` for a hypothesis row."""
    q = row[LEXEME]
    cand = cand_bits[node_state(pool_state, scratch_state, row[STACK])]
    slots = shadow_slots(row.shape[0])
    shadowed = False
    for k in range(slots):
        shadow = row[shadow_column(k)]
        if shadow == q and shadow_covers(lx_alive[q], cand, cand_bits[row[shadow_column(k) + 1]]):
            return False  # the common case, settled before anything is allocated
        shadowed = shadowed or shadow >= 0
    if not shadowed:
        return True
    states = np.empty(slots, np.int32)
    cands = np.zeros((slots, cand_bits.shape[1]), np.uint64)
    for k in range(slots):
        column = shadow_column(k)
        states[k] = row[column]
        if states[k] >= 0:
            cands[k] = cand_bits[row[column + 1]]
    return lexeme_escapes_shadows(lx_trans, lx_accept, lx_alive, q, cand, states, cands)


@kernel(inline="always")
def advance_hypothesis(lexer, lr, glue, pool, hyp, byte, to_scratch, alloc, out, n_out, ended):
    """Write the successors of ``hyp`` on ``byte`` into ``out[n_out:]``, without those whose
    shadows leave no way on (see :func:`.lexing.lexeme_escapes_shadows` and :func:`_successors`)."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    first = n_out
    n_out, alloc, status = _successors(lexer, lr, glue, pool, hyp, byte, to_scratch, alloc, out, n_out, ended)
    if status == OK and byte >= 0x80 and _any_shadowed(out, first, n_out):  # (ASCII starts or ends a character)
        n_out = _drop_cornered(lx_trans, lx_accept, lx_alive, cand_bits, pool_state, scratch_state, out, first,
                               n_out)
    return n_out, alloc, status


@kernel(inline="always")
def _successors(lexer, lr, glue, pool, hyp, byte, to_scratch, alloc, out, n_out, ended):
    """Write the successors of ``hyp`` on ``byte`` into ``out[n_out:]``.

    Returns ``(n_out, alloc, status)``: "the lexeme goes on" and "the lexeme ended just
    before this byte" (one successor per stack where a generalized parser forks).
    ``HYPOTHESES_FULL``: ``out`` needs more rows; ``SHADOWS_FULL``: the rows need more
    shadow slots (see :func:`.state.widen`).

    ``ended`` (int32 [5]) remembers what ending this hypothesis's lexeme fed the parser
    (node, brackets, blocks, then 1 once known; 0: not yet; -1: do not remember; 2: the
    parser forked, and the node heads a list of the stacks in the scratch pool, each
    list node's state being a stack and its parent the next list node; then the terminal
    fed, -2 for every terminal that accepts), which does not depend on ``byte``: a trie
    walk passes one per hypothesis and its children share it, the nodes staying allocated
    (a lexeme that closes a long chain of optional members reduces it once, not once per
    token that starts with its last byte). Lexed every way, the lexeme's deeper states
    share it too (same stack); it is taken only for the same terminal.
    """
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    if _shadow_violated(lx_trans, lx_accept, cand_bits, hyp, byte):
        return n_out, alloc, OK
    node = hyp[STACK]
    state = node_state(pool_state, scratch_state, node)
    cand = cand_bits[state]
    q = hyp[LEXEME]
    went_on, counter = lexer_step(lx_trans, tracks_column, layout, q, hyp[COLUMN], byte)
    if went_on >= 0 and intersects(lx_alive[went_on], cand):
        if n_out >= out.shape[0]:
            return n_out, alloc, HYPOTHESES_FULL
        row = out[n_out]
        row[STACK] = node
        row[LEXEME] = went_on
        row[BRACKETS] = hyp[BRACKETS]
        row[COLUMN] = counter
        row[BLOCKS] = hyp[BLOCKS]
        if _advance_shadows(lx_trans, lx_alive, cand_bits, cand_id, hyp, byte, row) < 0:
            return n_out, alloc, SHADOWS_FULL
        n_out += 1
    if lx_is_start[q] != 0:
        return n_out, alloc, OK
    winner = lowest_common_bit(lx_accept[q], cand)
    if winner < 0:
        return n_out, alloc, OK
    every = layout[EVERY_SPLIT] == 1
    # The lexeme ends before ``byte``: what it would have become is now a shadow (lexed
    # every way, both readings simply go on).
    shadow = -1
    if went_on >= 0 and not every:
        if intersects(lx_accept[went_on], cand):
            return n_out, alloc, OK  # a longer lexeme matches: longest match forbids ending here
        if intersects(lx_alive[went_on], cand):
            shadow = went_on
    # A lookahead past the lexeme reads from ``byte`` on: a shadow of its pseudo parser state.
    lookahead = end_effects[winner, LOOKAHEAD_STATE]
    ahead = -1
    if lookahead >= 0:
        ahead = lx_trans[cand_id[lookahead], byte]
        if ahead >= 0 and intersects(lx_accept[ahead], cand_bits[lookahead]):
            return n_out, alloc, OK  # the text after the lexeme starts as the lookahead forbids
        if ahead >= 0 and not intersects(lx_alive[ahead], cand_bits[lookahead]):
            ahead = -1
    if every and _own_longest_among(end_effects, lx_accept[q], cand):
        return _end_each_reading(lexer, lr, glue, pool, hyp, byte, went_on, to_scratch, alloc, out, n_out)
    ending = (byte, winner, state, shadow, ahead, lookahead)
    several = every and several_common_bits(lx_accept[q], cand)
    if ended[3] >= 1 and ended[4] != (-2 if several else winner):
        ended[3] = 0  # remembered for another terminal (an earlier state of the lexeme): redone
    if ended[3] == 1:
        new_node, brackets, blocks = ended[0], ended[1], ended[2]
    elif ended[3] == 2:  # the stacks of a fork, remembered as a list in the pool
        brackets, blocks = ended[1], ended[2]
        link = ended[0]
        while link >= 0:
            n_out, status = _write_ended(lexer, glue, pool, hyp, ending, node_state(pool_state, scratch_state, link),
                                         brackets, blocks, out, n_out)
            if status != OK:
                return n_out, alloc, status
            link = node_parent(pool_parent, scratch_parent, link)
        return n_out, alloc, OK
    elif several:  # each terminal that accepts is a reading
        tops, count, alloc, status = _every_winner_stacks(lr, term_column, layout, end_effects, pool, node,
                                                          lx_accept[q], cand, to_scratch, alloc)
        if status != OK:
            return n_out, alloc, status
        return _write_stacks(lexer, glue, pool, hyp, ending, tops, count, hyp[BRACKETS], hyp[BLOCKS], to_scratch,
                             alloc, out, n_out, ended, -2)
    else:
        new_node, brackets, blocks, alloc, status = end_lexeme(lr, term_column, layout, end_effects, pool, node, winner,
                                                               hyp[BRACKETS], hyp[COLUMN], hyp[BLOCKS], to_scratch,
                                                               alloc)
        if status != OK:
            return n_out, alloc, status
        if new_node == FORKED:  # a generalized grammar (no layout): one successor per stack
            tops, count, alloc, status = feed_all(lr, pool, node, term_column[winner], to_scratch, alloc)
            if status != OK:
                return n_out, alloc, status
            return _write_stacks(lexer, glue, pool, hyp, ending, tops, count, brackets, blocks, to_scratch, alloc,
                                 out, n_out, ended, winner)
        if ended[3] == 0:
            ended[0], ended[1], ended[2], ended[3], ended[4] = new_node, brackets, blocks, 1, winner
    if new_node < 0:
        return n_out, alloc, OK
    n_out, status = _write_ended(lexer, glue, pool, hyp, ending, new_node, brackets, blocks, out, n_out)
    return n_out, alloc, status


@kernel(inline="always")
def _has_bit(bits, k):
    return (bits[k >> 6] >> np.uint64(k & 63)) & np.uint64(1) != 0


@kernel(inline="always")
def _own_longest_among(end_effects, accept, cand):
    """Is some terminal of ``accept`` & ``cand`` lexed by its own longest match?"""
    for w in range(accept.shape[0]):
        x = accept[w] & cand[w]
        k = 0
        while x:
            if x & np.uint64(1) and end_effects[w * 64 + k, OWN_LONGEST] >= 0:
                return True
            x >>= np.uint64(1)
            k += 1
    return False


@kernel
def _end_each_reading(lexer, lr, glue, pool, hyp, byte, went_on, to_scratch, alloc, out, n_out):
    """The successors of ``hyp`` whose lexeme (lexed every way) ended before ``byte``, one
    terminal at a time: a terminal lexed by its own longest match (``OWN_LONGEST``) ends
    here only if ``byte`` does not take it on to a match, and leaves a shadow (of its pseudo
    parser state) while it could still reach one. Nothing is remembered for the trie walk's
    siblings (see :func:`advance_hypothesis`). Returns ``(n_out, alloc, status)``."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    node = hyp[STACK]
    state = node_state(pool_state, scratch_state, node)
    cand = cand_bits[state]
    accept = lx_accept[hyp[LEXEME]]
    for w in range(accept.shape[0]):
        x = accept[w] & cand[w]
        k = 0
        while x:
            if x & np.uint64(1):
                terminal = w * 64 + k
                shadow = -1
                own = end_effects[terminal, OWN_LONGEST]
                if own >= 0 and went_on >= 0:
                    if _has_bit(lx_accept[went_on], terminal):
                        x >>= np.uint64(1)
                        k += 1
                        continue  # the terminal's own match goes on past this byte
                    if _has_bit(lx_alive[went_on], terminal):
                        shadow = went_on
                tops, count, brackets, blocks, alloc, status = _stacks_after(
                    lr, term_column, layout, end_effects, pool, node, terminal, hyp[BRACKETS], hyp[COLUMN], hyp[BLOCKS],
                    to_scratch, alloc)
                if status != OK:
                    return n_out, alloc, status
                for j in range(count):
                    n_out, status = _write_ended(lexer, glue, pool, hyp, (byte, terminal, own, shadow, -1, -1),
                                                 tops[j], brackets, blocks, out, n_out)
                    if status != OK:
                        return n_out, alloc, status
            x >>= np.uint64(1)
            k += 1
    return n_out, alloc, OK


@kernel
def _stacks_after(lr, term_column, layout, end_effects, pool, node, terminal, brackets, column, blocks, to_scratch,
                  alloc):
    """Every stack that ``node`` becomes where a lexeme of lexer terminal ``terminal`` ends
    (:func:`end_lexeme`, and :func:`.stacks.feed_all` where a generalized parser forks):
    ``(tops, count, brackets, blocks, alloc, status)``, ``tops[:count]`` without rejected ones."""
    new_node, brackets, blocks, alloc, status = end_lexeme(lr, term_column, layout, end_effects, pool, node, terminal,
                                                           brackets, column, blocks, to_scratch, alloc)
    if status == OK and new_node == FORKED:
        tops, count, alloc, status = feed_all(lr, pool, node, term_column[terminal], to_scratch, alloc)
        return tops, count, brackets, blocks, alloc, status
    return np.full(1, new_node, np.int32), 1 if status == OK and new_node >= 0 else 0, brackets, blocks, alloc, status


@kernel
def _every_winner_stacks(lr, term_column, layout, end_effects, pool, node, accept, cand, to_scratch, alloc):
    """The stacks that ``node`` becomes on each terminal of ``accept`` & ``cand`` (a grammar
    lexed every way: every terminal that accepts the lexeme is a reading of its own), as
    ``(tops, count, alloc, status)`` like :func:`.stacks.feed_all`."""
    tops = np.empty(4, np.int32)
    count = 0
    for w in range(accept.shape[0]):
        x = accept[w] & cand[w]
        k = 0
        while x:
            if x & np.uint64(1):
                found, n_found, _, _, alloc, status = _stacks_after(lr, term_column, layout, end_effects, pool, node,
                                                                    w * 64 + k, 0, 0, -1, to_scratch, alloc)
                if status != OK:
                    return tops, 0, alloc, status
                for j in range(n_found):
                    if found[j] < 0:
                        continue
                    if count == tops.shape[0]:
                        grown = np.empty(2 * count, np.int32)
                        grown[:count] = tops
                        tops = grown
                    tops[count] = found[j]
                    count += 1
            x >>= np.uint64(1)
            k += 1
    return tops, count, alloc, OK


@kernel(inline="always")
def _write_stacks(lexer, glue, pool, hyp, ending, tops, count, brackets, blocks, to_scratch, alloc, out, n_out, ended,
                  key):
    """Write a successor of ``hyp`` per stack of ``tops[:count]`` (its lexeme ended as
    ``ending`` says, see :func:`_write_ended`), remembering the stacks in ``ended`` as a
    list in the scratch pool where the caller lets it (see :func:`advance_hypothesis`;
    ``key``: the terminal fed, -2 for every one that accepts). Returns ``(n_out, alloc,
    status)``."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    if ended[3] == 0 and to_scratch and alloc + count <= scratch_state.shape[0]:
        link = -1
        for k in range(count):
            scratch_state[alloc] = tops[k]
            scratch_parent[alloc] = link
            link = SCRATCH_BASE + alloc
            alloc += 1
        ended[0], ended[1], ended[2], ended[3], ended[4] = link, brackets, blocks, 2, key
    for k in range(count):
        n_out, status = _write_ended(lexer, glue, pool, hyp, ending, tops[k], brackets, blocks, out, n_out)
        if status != OK:
            return n_out, alloc, status
    return n_out, alloc, OK


@kernel(inline="always")
def _write_ended(lexer, glue, pool, hyp, ending, new_node, brackets, blocks, out, n_out):
    """Write to ``out[n_out]`` the successor of ``hyp`` whose lexeme (won by ``winner``) ended
    before ``byte`` with the stack ``new_node``, unless ``byte`` cannot start the next
    lexeme there. ``ending`` is ``(byte, winner, state, shadow, ahead, lookahead)``: the byte
    after the lexeme, its winner, the parser state it was lexed in, the shadow of a longer
    lexeme (or -1) and that of the lookahead's pseudo parser state (``ahead``, or -1, and
    ``lookahead``). Returns ``(n_out, status)``."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    byte, winner, state, shadow, ahead, lookahead = ending
    new_state = node_state(pool_state, scratch_state, new_node)
    # The next lexeme starts at the new state's start, after a word character or not.
    first = lx_trans[cand_id[new_state + (cand_id.shape[0] >> 1) * end_effects[winner, ENDS_IN_WORD]], byte]
    if first < 0 or not intersects(lx_alive[first], cand_bits[new_state]):
        return n_out, OK
    if n_out >= out.shape[0]:
        return n_out, HYPOTHESES_FULL
    row = out[n_out]
    row[STACK] = new_node
    row[LEXEME] = first
    row[BRACKETS] = brackets
    row[COLUMN] = next_column(tracks_column, layout, first, 0, byte)
    row[BLOCKS] = blocks
    used = _advance_shadows(lx_trans, lx_alive, cand_bits, cand_id, hyp, byte, row)
    if used >= 0 and shadow >= 0:
        used = _add_shadow(row, used, shadow, state, cand_id)
    if used >= 0 and ahead >= 0:
        used = _add_shadow(row, used, ahead, lookahead, cand_id)
    if used < 0:
        return n_out, SHADOWS_FULL
    return n_out + 1, OK


@kernel
def same_hypothesis(pool, cand_id, x, y):
    """Do the hypothesis rows ``x`` and ``y`` mean the same: equal stacks, lexeme, layout
    and set of shadows (each shadow judged by its lexer state and candidate set)?"""
    return (same_lexing(pool, cand_id, x, y)
            and same_stack(pool, x[STACK], y[STACK]))


@kernel
def same_lexing(pool, cand_id, x, y):
    """Do the hypothesis rows ``x`` and ``y`` agree on all but their parser stacks: lexeme,
    layout and set of shadows?"""
    if x[LEXEME] != y[LEXEME] or x[BRACKETS] != y[BRACKETS] or x[COLUMN] != y[COLUMN]:
        return False
    n_x = 0
    for k in range(shadow_slots(x.shape[0])):
        column = shadow_column(k)
        if x[column] < 0:
            continue
        n_x += 1
        found = False
        for j in range(shadow_slots(y.shape[0])):
            other = shadow_column(j)
            if y[other] == x[column] and y[other] >= 0 and cand_id[y[other + 1]] == cand_id[x[column + 1]]:
                found = True
                break
        if not found:
            return False
    n_y = 0
    for j in range(shadow_slots(y.shape[0])):
        if y[shadow_column(j)] >= 0:
            n_y += 1
    if n_x != n_y:  # shadows within a row are distinct, so equal counts make the sets equal
        return False
    return same_stack(pool, x[BLOCKS], y[BLOCKS])


@kernel
def merged_hypotheses(pool, cand_id, rows, n, alloc):
    """Merge rows of ``rows[:n]`` that differ only below the tops of their stacks (same top
    state) into one whose stack node stands for both (:func:`.stacks.merge_stacks`, in the
    committed pool from ``alloc``), in place, order kept. Returns ``(rows left, alloc,
    status)``. Only a generalized grammar needs it: there, stacks that a deterministic parser
    would never tell apart multiply with every ambiguous choice."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    kept = 1 if n else 0
    for h in range(1, n):
        merged = False
        for k in range(kept):
            a, b = rows[k, STACK], rows[h, STACK]
            if pool_state[a] == pool_state[b] and same_lexing(pool, cand_id, rows[k], rows[h]):
                node, alloc, status = merge_stacks(pool_state, pool_parent, a, b, alloc)
                if status != OK:
                    return n, alloc, status
                rows[k, STACK] = node
                merged = True
                break
        if not merged:
            if kept != h:
                rows[kept] = rows[h]
            kept += 1
    return kept, alloc, OK


@kernel
def distinct_hypotheses(pool, cand_id, rows, n):
    """Drop rows of ``rows[:n]`` that mean the same as an earlier one (in place, order kept);
    returns how many are left. Ambiguous text that lexes two ways into equal states (an
    ignored separator split differently) would otherwise double the rows again and again."""
    kept = 1
    for h in range(1, n):
        if not repeats_kept(pool, cand_id, rows, h, kept):
            if kept != h:
                rows[kept] = rows[h]
            kept += 1
    return kept if n else 0


@kernel(inline="always")
def repeats_kept(pool, cand_id, rows, h, kept):
    """Does ``rows[h]`` mean the same as one of the first ``kept`` rows?"""
    for k in range(kept):
        if same_hypothesis(pool, cand_id, rows[h], rows[k]):
            return True
    return False


@kernel
def advance_bytes(lexer, lr, glue, pool, hyps, data, pool_used, out):
    """Feed ``data`` to the hypotheses ``hyps``, committing new stack nodes to the pool.

    Writes the surviving, viable hypotheses to ``out`` (as wide as ``hyps``) and returns
    ``(count, new pool_used, status, offset)``; ``count == 0`` means the bytes are
    rejected, and ``offset`` is then the first byte no hypothesis survived. Statuses other
    than OK ask for a larger pool, more rows in ``out`` or wider rows, and a call again.
    """
    action, goto, rule_lhs, rule_len = lr
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    current = np.empty((max(out.shape[0], hyps.shape[0]), hyps.shape[1]), np.int32)
    current[:hyps.shape[0]] = hyps
    n_current = hyps.shape[0]
    following = np.empty((out.shape[0], hyps.shape[1]), np.int32)
    alloc = pool_used
    unremembered = np.full(5, -1, np.int32)
    forks = has_forks(goto)
    for offset in range(data.shape[0]):
        n_next = 0
        for h in range(n_current):
            n_next, alloc, status = advance_hypothesis(lexer, lr, glue, pool, current[h], data[offset], False, alloc,
                                                       following, n_next, unremembered)
            if status != OK:
                return 0, pool_used, status, offset
        if n_next == 0:
            return 0, pool_used, OK, offset
        if n_next > 1:
            n_next = distinct_hypotheses(pool, cand_id, following, n_next)
        if n_next > 1 and forks:
            n_next, alloc, status = merged_hypotheses(pool, cand_id, following, n_next, alloc)
            if status != OK:
                return 0, pool_used, status, offset
        current[:n_next] = following[:n_next]
        n_current = n_next
    n_out = 0
    for h in range(n_current):
        viable, status = hypothesis_viable(lexer, lr, glue, pool, current[h], 0)
        if status != OK:
            return 0, pool_used, status, data.shape[0]
        if viable:
            if n_out >= out.shape[0]:
                return 0, pool_used, HYPOTHESES_FULL, data.shape[0]
            out[n_out] = current[h]
            n_out += 1
    return n_out, alloc, OK, data.shape[0]


@kernel
def _close_and_end(lr, layout, pool, node, blocks, end_column, alloc):
    """(does the stack accept the end of the text after every open block is closed, alloc, status)."""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    while blocks >= 0:
        node, alloc, status = feed_terminal(lr, pool, node, layout[DEDENT_COLUMN], True, alloc)
        if status != OK or node < 0:
            return False, alloc, status
        blocks = node_parent(pool_parent, scratch_parent, blocks)
    top, alloc, status = feed_terminal(lr, pool, node, end_column, True, alloc)
    if top == FORKED:
        top, alloc, status = feed_any(lr, pool, node, end_column, True, alloc)
    return top == -2, alloc, status


@kernel
def hypotheses_accept_end(lexer, lr, glue, pool, hyps, end_column):
    """(the text so far is a complete sentence for some hypothesis, status).

    With an indentation layout, the end of the text closes every open block, after a
    newline terminal if the text does not end with one already; the column of a final
    newline lexeme does not matter.
    """
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    newline = layout[NEWLINE_TERMINAL]
    for h in range(hyps.shape[0]):
        node = hyps[h, STACK]
        q = hyps[h, LEXEME]
        brackets = hyps[h, BRACKETS]
        blocks = hyps[h, BLOCKS]
        alloc = 0
        ends_with_newline = False
        if lx_is_start[q] == 0:
            state = node_state(pool_state, scratch_state, node)
            winner = lowest_common_bit(lx_accept[q], cand_bits[state])
            if winner < 0 or end_effects[winner, NEEDS_TEXT]:
                continue
            if layout[EVERY_SPLIT] == 1:  # lexed every way (no layout): does one reading end?
                tops, count, alloc, status = _every_winner_stacks(lr, term_column, layout, end_effects, pool, node,
                                                                  lx_accept[q], cand_bits[state], True, alloc)
                if status != OK:
                    return False, status
                for k in range(count):
                    accepted, alloc, status = _close_and_end(lr, layout, pool, tops[k], -1, end_column, alloc)
                    if status != OK:
                        return False, status
                    if accepted:
                        return True, OK
                continue
            if winner == newline and brackets == 0:
                node, alloc, status = feed_terminal(lr, pool, node, layout[NEWLINE_COLUMN], True, alloc)
                ends_with_newline = True
            else:
                below = node
                node, brackets, blocks, alloc, status = end_lexeme(lr, term_column, layout, end_effects, pool, node,
                                                                   winner, brackets, 0, blocks, True, alloc)
                if node == FORKED:  # a generalized grammar (no layout): does one of the stacks end?
                    tops, count, alloc, status = feed_all(lr, pool, below, term_column[winner], True, alloc)
                    if status != OK:
                        return False, status
                    for k in range(count):
                        accepted, alloc, status = _close_and_end(lr, layout, pool, tops[k], -1, end_column, alloc)
                        if status != OK:
                            return False, status
                        if accepted:
                            return True, OK
                    continue
            if status != OK:
                return False, status
            if node < 0:
                continue
        if brackets != 0:
            continue  # (always 0 without a layout)
        # Without a layout there are no blocks, and closing them is just the end.
        for supply_newline in range(2):
            if supply_newline:
                if newline < 0 or ends_with_newline:
                    break
                node, alloc, status = feed_terminal(lr, pool, node, layout[NEWLINE_COLUMN], True, alloc)
                if status != OK:
                    return False, status
                if node < 0:
                    break
            accepted, alloc, status = _close_and_end(lr, layout, pool, node, blocks, end_column, alloc)
            if status != OK:
                return False, status
            if accepted:
                return True, OK
    return False, OK
