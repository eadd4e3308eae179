"""Exact token masks for context-free grammars: the token trie walked through the parser.

:func:`walk_trie_grammar` is the reference path: it runs the incremental parser's
hypotheses (see :mod:`gramalign.parsing.hypotheses`) down every branch of the token trie, so a
token is allowed exactly when some hypothesis survives its bytes and can still complete a
sentence. The mask store (:mod:`.store`) uses it on small sub-tries of the tokens that
cross a lexeme boundary, and answers the rest from precomputed per-lexer-state masks.

Viability is cheap per trie node because it factors: a hypothesis can be completed iff
the terminals its lexeme can still become (cached per lexer state) meet the terminals its
stack can shift (computed once per distinct stack, copied down the trie).
"""

from __future__ import annotations

import numpy as np

from ...bitsets import intersects, lowest_common_bit, several_common_bits
from ...grammar.parser_tables import EVERY_SPLIT
from ...jit import kernel
from ...parsing.hypotheses import advance_hypothesis, repeats_kept, usable_meets
from ...parsing.lexing import fill_reach, free_terminal, lexeme_escapes_shadows, lexer_step, reachable_winners
from ...parsing.stacks import node_parent, node_state
from ...parsing.state import BRACKETS, COLUMN, HYPOTHESES_FULL, LEXEME, OK, STACK, shadow_column, shadow_slots


MERGE_AFTER = 4
"""Hypotheses at one trie depth beyond which equal ones are merged (fewer are the common
case, where the comparisons would cost more than they save)."""


@kernel
def walk_trie_grammar(lexer, lr, glue, pool, hyps, trie, roots, max_depth, rows, out_words):
    """OR into ``out_words`` every token of ``trie`` (``TokenTrie.arrays``) that some
    hypothesis in ``hyps`` can read and still complete, tracking up to ``rows`` hypotheses per
    trie depth. Returns a status code (grow the pools, ``rows`` or the width of ``hyps`` and
    call again if not OK).

    The common step (one hypothesis, no shadow, a lexeme that cannot end here) is written
    out inline with scalar indexing: calls and array views cost more than the work. What a
    stack can shift is found out lazily, terminal by terminal, and memoized per hypothesis
    (``usable``/``known``) down the trie.
    """
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    term_column, cand_bits, cand_id, reach_bits, reach_done, layout, end_effects, tracks_column = glue
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    node_byte, node_depth, subtree_end, token_start, token_ids = trie
    root_node, root_byte, root_first2, level2_node, level2_byte = roots
    words = cand_bits.shape[1]
    width = hyps.shape[1]
    rows = max(rows, hyps.shape[0])
    # Rows below depth 0 are written before they are read (a child starts from its parent's or
    # from nothing), so only depth 0 is zeroed: most walks use a few of the max_depth levels.
    levels = np.empty((max_depth + 1, rows, width), np.int32)
    known = np.empty((max_depth + 1, rows, words), np.uint64)
    usable = np.empty((max_depth + 1, rows, words), np.uint64)
    parser_state = np.empty((max_depth + 1, rows), np.int32)
    level_size = np.zeros(max_depth + 1, np.int32)
    level_alloc = np.zeros(max_depth + 1, np.int64)
    # what ending each hypothesis's lexeme fed the parser (see advance_hypothesis), shared by
    # its children, with what is known of what that stack can shift
    ended = np.empty((max_depth + 1, rows, 5), np.int32)
    ended_usable = np.empty((max_depth + 1, rows, words), np.uint64)
    ended_known = np.empty((max_depth + 1, rows, words), np.uint64)
    known[0] = 0
    usable[0] = 0
    ended[0] = 0
    ended_usable[0] = 0
    ended_known[0] = 0
    # How each hypothesis of a level is read (_reading), worked out when a child of its node
    # first needs it, not once per child: the root's level is read by up to 256 first bytes.
    reading = np.empty((max_depth + 1, rows), np.int8)
    level_gen = np.zeros(max_depth + 1, np.int64)  # bumped each time a level is written
    reading_gen = np.full(max_depth + 1, -1, np.int64)
    every = layout[EVERY_SPLIT] == 1
    n_start = 0
    for h in range(hyps.shape[0]):
        levels[0, n_start] = hyps[h]
        parser_state[0, n_start] = node_state(pool_state, scratch_state, hyps[h, STACK])
        n_start += 1
    level_size[0] = n_start
    # Where every hypothesis only goes on with its lexeme (the common narrow context: inside a
    # key or a literal), a first byte no lexeme takes is skipped before any other work: most
    # of the 256 roots, which otherwise cost a step each.
    first_bytes = np.zeros(256, np.bool_)
    some_first = False
    for h in range(n_start):
        if _reading(lx_accept, lx_is_start, cand_bits, levels[0, h], parser_state[0, h]) != SIMPLE:
            some_first = False
            break
        q = levels[0, h, LEXEME]
        for b in range(256):
            if lx_trans[q, b] >= 0:
                first_bytes[b] = True
        some_first = True

    n_nodes = node_byte.shape[0]
    i = 0
    # The next node at depth 1 and at depth 2, read from ``roots`` (see TokenTrie.roots): a first
    # or second byte that dies touches no node of the trie, whose nodes lie a subtree apart.
    r = 0
    r2 = 0
    while i < n_nodes:
        if i == root_node[r]:
            depth = 1
            byte = root_byte[r]
            r += 1
            if some_first and not first_bytes[byte]:
                i = root_node[r]
                r2 = root_first2[r]
                continue
        elif i == level2_node[r2]:
            depth = 2
            byte = level2_byte[r2]
            r2 += 1
        else:
            depth = node_depth[i]
            byte = node_byte[i]
        above = depth - 1
        alloc = level_alloc[above]
        n_out = 0
        if reading_gen[above] != level_gen[above]:
            for h in range(level_size[above]):
                reading[above, h] = _reading(lx_accept, lx_is_start, cand_bits, levels[above, h], parser_state[above, h])
            reading_gen[above] = level_gen[above]
        for h in range(level_size[above]):
            q = levels[above, h, LEXEME]
            state = parser_state[above, h]
            simple = reading[above, h] == SIMPLE
            if reading[above, h] == MAY_END:
                if every and ended[above, h, 3] >= 1:
                    # Lexed every way, ending here is remembered (from a sibling, or from an
                    # earlier state of the lexeme: same stack): where no stack it left can
                    # start a lexeme with this byte, only going on is left.
                    key = lowest_common_bit(lx_accept[q], cand_bits[state])
                    if several_common_bits(lx_accept[q], cand_bits[state]):
                        key = -2
                    if ended[above, h, 4] == key:
                        simple = not _ended_reads(lx_trans, lx_alive, cand_bits, cand_id, pool, ended[above, h], byte)
            if simple:
                went_on, counter = lexer_step(lx_trans, tracks_column, layout, q, levels[above, h, COLUMN], byte)
                if went_on < 0:
                    continue
                if not reach_done[went_on]:
                    fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, went_on)
                # Reachable winners are empty when the lexeme is dead for these candidates.
                viable = False
                unknown = False
                for w in range(words):
                    if reach_bits[went_on, w] & usable[above, h, w]:
                        viable = True
                        break
                    if reach_bits[went_on, w] & ~known[above, h, w]:
                        unknown = True
                if not viable and unknown:
                    viable, status = usable_meets(lr, term_column, pool, levels[above, h, STACK], alloc,
                                                  free_terminal(layout, levels[above, h, BRACKETS]),
                                                  reach_bits[went_on], usable[above, h], known[above, h])
                    if status != OK:
                        return status
                if not viable:
                    continue
                if n_out >= rows:
                    return HYPOTHESES_FULL
                for f in range(width):
                    levels[depth, n_out, f] = levels[above, h, f]
                levels[depth, n_out, LEXEME] = went_on
                levels[depth, n_out, COLUMN] = counter
                for w in range(words):
                    usable[depth, n_out, w] = usable[above, h, w]
                    known[depth, n_out, w] = known[above, h, w]
                parser_state[depth, n_out] = state
                _inherit_ending(ended, ended_usable, ended_known, above, h, depth, n_out, every)
                n_out += 1
                continue
            first_new = n_out
            memo = ended[above, h]
            was_known = memo[3] >= 1
            was_node = memo[0]
            n_out, alloc, status = advance_hypothesis(lexer, lr, glue, pool, levels[above, h], byte, True, alloc,
                                                      levels[depth], n_out, memo)
            if status != OK:
                return status
            if memo[3] >= 1 and not (was_known and memo[0] == was_node):
                level_alloc[above] = alloc  # the remembered nodes stay allocated for the siblings
                ended_usable[above, h] = 0  # (and what is known of what they can shift starts afresh)
                ended_known[above, h] = 0
            kept = first_new
            for k in range(first_new, n_out):
                stack = levels[depth, k, STACK]
                new_state = node_state(pool_state, scratch_state, stack)
                shared = memo[3] == 1 and stack == memo[0]
                if stack == levels[above, h, STACK]:
                    usable[depth, kept] = usable[above, h]
                    known[depth, kept] = known[above, h]
                elif shared:
                    usable[depth, kept] = ended_usable[above, h]
                    known[depth, kept] = ended_known[above, h]
                else:
                    usable[depth, kept] = 0
                    known[depth, kept] = 0
                lexeme = levels[depth, k, LEXEME]
                alive = lx_is_start[lexeme] != 0
                if not alive:
                    reach = reachable_winners(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done,
                                              lexeme)
                    alive, status = usable_meets(lr, term_column, pool, stack, alloc,
                                                 free_terminal(layout, levels[depth, k, BRACKETS]), reach,
                                                 usable[depth, kept], known[depth, kept])
                    if status != OK:
                        return status
                if shared:  # what this stack can shift, found out once for all the siblings
                    ended_usable[above, h] |= usable[depth, kept]
                    ended_known[above, h] |= known[depth, kept]
                if alive:  # a hypothesis that cannot be completed has no completable successor
                    if kept != k:
                        levels[depth, kept] = levels[depth, k]
                    parser_state[depth, kept] = new_state
                    kept += 1
            for k in range(first_new, kept):  # after the loop: it may add to what ended_usable knows
                _inherit_ending(ended, ended_usable, ended_known, above, h, depth, k,
                                every and levels[depth, k, STACK] == levels[above, h, STACK])
            n_out = kept
        if n_out > MERGE_AFTER:
            n_out = _distinct_levels(pool, cand_id, levels[depth], usable[depth], known[depth], parser_state[depth],
                                     n_out)
        if n_out == 0:
            if depth == 1:
                i = root_node[r]
                r2 = root_first2[r]
            elif depth == 2:
                i = min(root_node[r], level2_node[r2])
            else:
                i = subtree_end[i]
            continue
        level_size[depth] = n_out
        level_gen[depth] += 1
        level_alloc[depth] = alloc
        for k in range(token_start[i], token_start[i + 1]):
            token = token_ids[k]
            out_words[token >> 5] |= np.uint32(1) << np.uint32(token & 31)
        i += 1
    return OK


GENERAL, SIMPLE, MAY_END = 0, 1, 2
"""How the walk reads a hypothesis (see _reading)."""


@kernel(inline="always")
def _reading(lx_accept, lx_is_start, cand_bits, hyp, state):
    """GENERAL for a hypothesis with shadows; else MAY_END where its lexeme could end here
    (the general path, but lexed every way a remembered ending may leave only going on);
    else SIMPLE: the lexeme only goes on, inline."""
    for k in range(shadow_slots(hyp.shape[0])):
        if hyp[shadow_column(k)] >= 0:
            return GENERAL
    q = hyp[LEXEME]
    if lx_is_start[q] == 0:
        for w in range(cand_bits.shape[1]):
            if lx_accept[q, w] & cand_bits[state, w]:
                return MAY_END
    return SIMPLE


@kernel(inline="always")
def _inherit_ending(ended, ended_usable, ended_known, above, h, depth, k, inherit):
    """Row ``k`` at ``depth`` starts with what row ``h`` above remembers of ending its lexeme
    (``inherit``: lexed every way, the same lexeme on the same stack) or with nothing."""
    if inherit:
        ended[depth, k] = ended[above, h]
        ended_usable[depth, k] = ended_usable[above, h]
        ended_known[depth, k] = ended_known[above, h]
    else:
        ended[depth, k, 3] = 0
        ended_usable[depth, k] = 0
        ended_known[depth, k] = 0


@kernel(inline="always")
def _ended_reads(lx_trans, lx_alive, cand_bits, cand_id, pool, memo, byte):
    """In a grammar lexed every way: can a stack that ending the lexeme left (remembered in
    ``memo``, see :func:`.hypotheses.advance_hypothesis`) start a lexeme with ``byte``?"""
    pool_state, pool_parent, scratch_state, scratch_parent, exposed = pool
    if memo[3] == 1:
        node = memo[0]
        if node < 0:
            return False
        state = node_state(pool_state, scratch_state, node)
        first = lx_trans[cand_id[state], byte]
        return first >= 0 and intersects(lx_alive[first], cand_bits[state])
    link = memo[0]
    while link >= 0:
        state = node_state(pool_state, scratch_state, node_state(pool_state, scratch_state, link))
        first = lx_trans[cand_id[state], byte]
        if first >= 0 and intersects(lx_alive[first], cand_bits[state]):
            return True
        link = node_parent(pool_parent, scratch_parent, link)
    return False


@kernel
def _distinct_levels(pool, cand_id, rows, usable, known, parser_state, n):
    """Drop hypotheses of one trie depth that mean the same as an earlier one, with their
    memos (in place); returns how many are left."""
    kept = 1
    for h in range(1, n):
        if not repeats_kept(pool, cand_id, rows, h, kept):
            if kept != h:
                rows[kept] = rows[h]
                usable[kept] = usable[h]
                known[kept] = known[h]
                parser_state[kept] = parser_state[h]
            kept += 1
    return kept


KNOWN, ALIVE, ACCEPTS = 1, 2, 4  # bits of classify_tokens' per-lexer-state memo


@kernel
def _state_flags(q, lx_accept, lx_alive, cand, state_flags, state_winner):
    """KNOWN | ALIVE | ACCEPTS for lexer state ``q`` under ``cand``, memoised in
    ``state_flags``; ``state_winner[q]`` is then the lowest accepted candidate (or -1)."""
    flags = KNOWN
    winner = -1
    for w in range(cand.shape[0]):
        if lx_alive[q, w] & cand[w]:
            flags |= ALIVE
        x = lx_accept[q, w] & cand[w]
        if x and winner < 0:
            flags |= ACCEPTS
            k = 0
            while not (x >> np.uint64(k)) & np.uint64(1):
                k += 1
            winner = w * 64 + k
    state_flags[q] = flags
    state_winner[q] = winner
    return flags


MAX_BRANCHES = 8


@kernel(inline="always")
def _write_tokens(out_positions, out_groups, n_written, first, end, group):
    """Positions ``first..end-1`` of the trie's tokens go to ``group`` (-1: dependent)."""
    for k in range(first, end):
        out_positions[n_written] = k
        out_groups[n_written] = group
        n_written += 1
    return n_written


@kernel(inline="always")
def _group_of(reach, group_reach, n_groups):
    """(the group whose reachable winners are ``reach``, a new one if there is a free slot,
    else -1; the number of groups after)."""
    words = reach.shape[0]
    for g in range(n_groups):
        same = True
        for w in range(words):
            if group_reach[g, w] != reach[w]:
                same = False
                break
        if same:
            return g, n_groups
    if n_groups < group_reach.shape[0]:
        for w in range(words):
            group_reach[n_groups, w] = reach[w]
        return n_groups, n_groups + 1
    return -1, n_groups


@kernel
def classify_tokens(lexer, reach_cache, lexeme, restart, trie, max_depth, group_reach, n_groups, skip_first, skip_rows,
                    out, max_nodes):
    """Split the vocabulary for a lexeme in lexer state ``start`` with candidates ``cand``.

    The walk follows the lexer only, branching where a lexeme may end: an ignored lexeme
    (whitespace, comments) leaves the parser stack as it is, so the walk simply goes on
    with a new lexeme; any other lexeme ending inside the token needs the parser.

    * inside: some branch reads the whole token without a non-ignored lexeme ending inside
      it, and none could end one. Such a token is allowed iff one of the terminals its
      branches can still become (the union of their reachable winners) can be shifted by
      the stack. Inside tokens are grouped by that union: group g holds the tokens whose
      union is row g of ``group_reach``.
    * dependent: a non-ignored lexeme could end strictly inside the token. The exact
      parser walk decides those.
    * anything else is rejected. Ending the current lexeme at position 0 is not
      considered: callers add that as a separate hypothesis.

    Bundles: ``lexer`` (see ``ParserTables.lexer_arrays``); ``reach_cache`` is ``(reach_bits,
    reach_done)``, the reachable-winners cache; ``lexeme`` is ``(start, cand, shadow_states,
    shadow_cands)``, the context; ``restart`` is ``(starts_any, term_column, cid,
    cid_after_word, ends_in_word)``, how a lexeme starts after one ends; ``trie`` is
    ``TokenTrie.arrays``; ``out`` is ``(out_positions, out_groups)``.

    ``term_column`` (per lexer terminal; negative: ignored) says which lexemes are ignored.
    ``cid`` is the context's candidate set, so state ``cid`` is where a lexeme starts after
    an ignored one (``cid_after_word`` after one that ends with a word character, where
    ``ends_in_word``, per terminal, says so: see grammar/lexer.py); ``starts_any[b]`` says
    whether any lexer start reads byte ``b``.

    Tokens whose first byte ``b`` has ``skip_first[b]`` 1 are not visited, nor, where
    ``skip_first[b]`` is ``r + 2``, those whose second byte ``c`` has ``skip_rows[r, c]`` set
    (the caller has them otherwise); the first ``n_groups`` rows of ``group_reach`` are
    groups already made.

    The output is sparse, so a context that admits few first bytes costs time in
    proportion to the nodes it visits, not to the vocabulary: the positions (indexes into
    ``token_ids``, ascending) of the inside and dependent tokens go to ``out_positions``
    and their group (-1: dependent) to ``out_groups`` (both int32, sized like
    ``token_ids``). Returns (number of groups, number of tokens written), or (-1, 0) once
    more than ``max_nodes`` trie nodes have been visited (the caller then decides whether
    the whole walk is worth it).

    ``shadow_states``/``shadow_cands`` (int32 [k], uint64 [k, words], k <= 2) are pending
    longest-match lookaheads that must never accept (see the parser module).
    """
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    reach_bits, reach_done = reach_cache
    start, cand, shadow_states, shadow_cands = lexeme
    starts_any, term_column, cid, cid_after_word, ends_in_word = restart
    node_byte, node_depth, subtree_end, token_start, token_ids = trie
    out_positions, out_groups = out
    words = cand.shape[0]
    q_of = np.empty((max_depth + 1, MAX_BRANCHES), np.int32)
    shadow_of = np.full((max_depth + 1, MAX_BRANCHES, 2), -1, np.int32)
    which_of = np.zeros((max_depth + 1, MAX_BRANCHES, 2), np.int32)
    size = np.zeros(max_depth + 1, np.int32)
    # plain[d]: the walk at depth d is one branch without shadows, the common case, which
    # the loop takes on a short path (a third of the time per node of the general one).
    plain = np.zeros(max_depth + 1, np.bool_)
    q_of[0, 0] = start
    for k in range(shadow_states.shape[0]):
        shadow_of[0, 0, k] = shadow_states[k]
        which_of[0, 0, k] = k + 1
    size[0] = 1
    plain[0] = shadow_states.shape[0] == 0
    n_written = 0
    reach = np.empty(words, np.uint64)
    is_open = np.empty(MAX_BRANCHES, np.bool_)
    branch_cands = np.empty((2, words), np.uint64)
    # What the walk asks of a lexer state depends on the state and ``cand`` only, so it is
    # worked out once per state (most nodes of a long walk revisit a handful of states).
    state_flags = np.zeros(lx_trans.shape[0], np.int8)
    state_winner = np.empty(lx_trans.shape[0], np.int32)
    lone_group = np.full(lx_trans.shape[0], -2, np.int32)  # group of a node reached by one branch
    n_nodes = node_byte.shape[0]
    visited = 0
    skip_row = -1  # the skip_rows row of the current first byte
    i = 0
    while i < n_nodes:
        visited += 1
        if visited > max_nodes:
            return -1, 0
        depth = node_depth[i]
        byte = node_byte[i]
        if depth == 1:
            skip = skip_first[byte]
            if skip == 1:
                i = subtree_end[i]
                continue
            skip_row = skip - 2
        elif depth == 2 and skip_row >= 0 and skip_rows[skip_row, byte]:
            i = subtree_end[i]
            continue
        above = depth - 1
        if plain[above]:
            q = q_of[above, 0]
            went_on = lx_trans[q, byte]
            went_on_accepts = False
            alive = False
            if went_on >= 0:
                flags = state_flags[went_on]
                if flags == 0:
                    flags = _state_flags(went_on, lx_accept, lx_alive, cand, state_flags, state_winner)
                went_on_accepts = (flags & ACCEPTS) != 0
                alive = (flags & ALIVE) != 0
            needs_parser = False
            forks = False  # an ignored lexeme may end here: two branches, the general path's job
            if not (depth == 1 or lx_is_start[q] != 0 or went_on_accepts):
                flags = state_flags[q]
                if flags == 0:
                    flags = _state_flags(q, lx_accept, lx_alive, cand, state_flags, state_winner)
                if flags & ACCEPTS:
                    if term_column[state_winner[q]] >= 0:
                        needs_parser = starts_any[byte] != 0
                    else:
                        first = lx_trans[cid_after_word if ends_in_word[state_winner[q]] else cid, byte]
                        if first >= 0:
                            flags = state_flags[first]
                            if flags == 0:
                                flags = _state_flags(first, lx_accept, lx_alive, cand, state_flags, state_winner)
                            forks = (flags & ALIVE) != 0
            if not forks:
                if needs_parser:
                    end = subtree_end[i]
                    n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i], token_start[end],
                                              -1)
                    i = end
                    continue
                if not alive:
                    i = subtree_end[i]
                    continue
                if token_start[i] < token_start[i + 1]:
                    group = lone_group[went_on]
                    if group == -2:
                        if not reach_done[went_on]:
                            fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, went_on)
                        group, n_groups = _group_of(reach_bits[went_on], group_reach, n_groups)
                        lone_group[went_on] = group
                    n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i],
                                              token_start[i + 1], group)
                q_of[depth, 0] = went_on
                size[depth] = 1
                plain[depth] = True
                i += 1
                continue
        n_out = 0
        needs_parser = False
        for h in range(size[above]):
            # Advance both shadows inline (calls and array views cost more than the work).
            s0 = -1
            s1 = -1
            violated = False
            for k in range(2):
                shadow = shadow_of[above, h, k]
                if shadow < 0 or plain[above]:  # a plain level leaves its shadow slots unset
                    continue
                t = lx_trans[shadow, byte]
                if t < 0:
                    continue
                which = which_of[above, h, k]
                accepts = False
                alive = False
                for w in range(words):
                    c = cand[w] if which == 0 else shadow_cands[which - 1, w]
                    if lx_accept[t, w] & c:
                        accepts = True
                    if lx_alive[t, w] & c:
                        alive = True
                if accepts:
                    violated = True
                    break
                if alive:
                    if k == 0:
                        s0 = t
                    else:
                        s1 = t
            if violated:
                continue
            q = q_of[above, h]
            went_on = lx_trans[q, byte]
            went_on_accepts = False
            if went_on >= 0:
                flags = state_flags[went_on]
                if flags == 0:  # calls cost more than the work: only on the first visit
                    flags = _state_flags(went_on, lx_accept, lx_alive, cand, state_flags, state_winner)
                went_on_accepts = (flags & ACCEPTS) != 0
                if flags & ALIVE:
                    if n_out == MAX_BRANCHES:
                        needs_parser = True
                        break
                    q_of[depth, n_out] = went_on
                    shadow_of[depth, n_out, 0] = s0
                    shadow_of[depth, n_out, 1] = s1
                    which_of[depth, n_out, 0] = which_of[above, h, 0]
                    which_of[depth, n_out, 1] = which_of[above, h, 1]
                    n_out += 1
                else:
                    went_on = -1
            if depth == 1 or lx_is_start[q] != 0 or went_on_accepts:
                continue  # no lexeme can end before this byte (or longest match forbids it)
            flags = state_flags[q]
            if flags == 0:
                flags = _state_flags(q, lx_accept, lx_alive, cand, state_flags, state_winner)
            if not flags & ACCEPTS:
                continue
            winner = state_winner[q]
            if term_column[winner] >= 0:
                # The parser takes the lexeme and the next one starts under its new state's
                # candidates: rejected outright only where no candidate set starts with the byte.
                if starts_any[byte]:
                    needs_parser = True
                    break
                continue
            # An ignored lexeme ended: same parser state, same candidates.
            first = lx_trans[cid_after_word if ends_in_word[winner] else cid, byte]
            if first < 0:
                continue
            flags = state_flags[first]
            if flags == 0:
                flags = _state_flags(first, lx_accept, lx_alive, cand, state_flags, state_winner)
            if not flags & ALIVE:
                continue
            # An ignored lexeme ended: same stack, new lexeme, and one more shadow.
            if n_out == MAX_BRANCHES:
                needs_parser = True
                break
            used = 0
            if s0 >= 0:
                shadow_of[depth, n_out, 0] = s0
                which_of[depth, n_out, 0] = which_of[above, h, 0]
                used = 1
            if s1 >= 0:
                shadow_of[depth, n_out, used] = s1
                which_of[depth, n_out, used] = which_of[above, h, 1]
                used += 1
            if went_on >= 0:
                if used == 2:
                    needs_parser = True
                    break
                shadow_of[depth, n_out, used] = went_on
                which_of[depth, n_out, used] = 0
                used += 1
            for k in range(used, 2):
                shadow_of[depth, n_out, k] = -1
                which_of[depth, n_out, k] = 0
            q_of[depth, n_out] = first
            n_out += 1
        group = -1
        n_open = n_out
        if not needs_parser and n_out > 0 and token_start[i] < token_start[i + 1]:
            shadowed = False
            if byte >= 0x80:  # ASCII starts or ends a character: no shadow can corner a lexeme
                for h in range(n_out):
                    if shadow_of[depth, h, 0] >= 0 or shadow_of[depth, h, 1] >= 0:
                        shadowed = True
                        break
            if shadowed:  # (is_open is read only then)
                n_open = _mark_open_branches(lexer, cand, shadow_cands, q_of[depth], shadow_of[depth], which_of[depth],
                                             n_out, is_open, branch_cands)
            if n_open == 1 and n_out == 1 and lone_group[q_of[depth, 0]] != -2:
                group = lone_group[q_of[depth, 0]]
            elif n_open > 0:  # inline: a call per node costs more than the work
                for w in range(words):
                    reach[w] = 0
                for h in range(n_out):
                    if shadowed and not is_open[h]:
                        continue
                    q = q_of[depth, h]
                    if not reach_done[q]:
                        fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q)
                    for w in range(words):
                        reach[w] |= reach_bits[q, w]
                group, n_groups = _group_of(reach, group_reach, n_groups)
                if n_out == 1:
                    lone_group[q_of[depth, 0]] = group
            # With every group slot taken, this node's tokens go to the parser walk.
        if needs_parser:
            end = subtree_end[i]
            n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i], token_start[end], -1)
            i = end
            continue
        if n_out == 0:
            i = subtree_end[i]
            continue
        size[depth] = n_out
        plain[depth] = n_out == 1 and shadow_of[depth, 0, 0] < 0 and shadow_of[depth, 0, 1] < 0
        if n_open > 0:  # else every branch's shadows close its way on: tokens ending here are rejected
            n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i], token_start[i + 1], group)
        i += 1
    return n_groups, n_written


@kernel
def _mark_open_branches(lexer, cand, shadow_cands, q_of, shadow_of, which_of, n_out, is_open, branch_cands):
    """Set ``is_open[h]`` for each of the ``n_out`` branches of a trie node (lexer states
    ``q_of``, shadows ``shadow_of`` of kind ``which_of``) whose lexeme can get clear of its
    shadows (:func:`~gramalign.parsing.lexing.lexeme_escapes_shadows`): a token may end
    only on those. Returns how many are open."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    n_open = 0
    for h in range(n_out):
        shadowed = False
        for k in range(2):
            if shadow_of[h, k] >= 0:
                shadowed = True
                which = which_of[h, k]
                branch_cands[k] = cand if which == 0 else shadow_cands[which - 1]
        is_open[h] = not shadowed or lexeme_escapes_shadows(lx_trans, lx_accept, lx_alive, q_of[h], cand,
                                                            shadow_of[h], branch_cands)
        if is_open[h]:
            n_open += 1
    return n_open


@kernel
def classify_tokens_every_split(lexer, reach_cache, lexeme, starts_any, trie, max_depth, group_reach, n_groups, out,
                                max_nodes):
    """:func:`classify_tokens` for a grammar lexed every way (``Grammar.every_split``): a
    lexeme may end wherever it accepts even if it could go on. A token along which the
    lexeme stays alive is inside (allowed through its group, whatever else it could split
    into); a token whose lexeme dies after a point where it could have ended is dependent
    (so is one inside which an ignored lexeme could end). The context's shadows (own
    longest matches, see ``Grammar.own_longest``) bind every reading: where one accepts,
    the subtree is rejected. The caller walks a group's tokens exactly when the stack does
    not allow that group, since a split may still allow some of them. Same output and
    arguments as :func:`classify_tokens`, less those that only longest match reads (a
    separate kernel: branching inside that one's hot loop slowed it down by half)."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    reach_bits, reach_done = reach_cache
    start, cand, shadow_states, shadow_cands = lexeme
    node_byte, node_depth, subtree_end, token_start, token_ids = trie
    out_positions, out_groups = out
    q_of = np.empty(max_depth + 1, np.int32)
    shadow_of = np.full((max_depth + 1, 2), -1, np.int32)
    which_of = np.zeros((max_depth + 1, 2), np.int32)
    split_above = np.zeros(max_depth + 1, np.bool_)  # the lexeme could end before this depth
    q_of[0] = start
    for k in range(shadow_states.shape[0]):
        shadow_of[0, k] = shadow_states[k]
        which_of[0, k] = k + 1
    n_written = 0
    state_flags = np.zeros(lx_trans.shape[0], np.int8)
    state_winner = np.empty(lx_trans.shape[0], np.int32)
    lone_group = np.full(lx_trans.shape[0], -2, np.int32)
    n_nodes = node_byte.shape[0]
    visited = 0
    i = 0
    while i < n_nodes:
        visited += 1
        if visited > max_nodes:
            return -1, 0
        depth = node_depth[i]
        byte = node_byte[i]
        above = depth - 1
        dead = False
        for k in range(2):
            shadow = shadow_of[above, k]
            shadow_of[depth, k] = -1
            which_of[depth, k] = which_of[above, k]
            if shadow < 0:
                continue
            t = lx_trans[shadow, byte]
            if t < 0:
                continue
            which = which_of[above, k] - 1
            if intersects(lx_accept[t], shadow_cands[which]):
                dead = True
                break
            if intersects(lx_alive[t], shadow_cands[which]):
                shadow_of[depth, k] = t
        if dead:
            i = subtree_end[i]
            continue
        q = q_of[above]
        went_on = lx_trans[q, byte]
        alive = False
        if went_on >= 0:
            flags = state_flags[went_on]
            if flags == 0:
                flags = _state_flags(went_on, lx_accept, lx_alive, cand, state_flags, state_winner)
            alive = (flags & ALIVE) != 0
        splits = split_above[above]
        if not (depth == 1 or lx_is_start[q] != 0 or splits) and starts_any[byte]:
            flags = state_flags[q]
            if flags == 0:
                flags = _state_flags(q, lx_accept, lx_alive, cand, state_flags, state_winner)
            splits = (flags & ACCEPTS) != 0
        if not alive:
            end = subtree_end[i]
            if splits:
                n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i], token_start[end], -1)
            i = end
            continue
        if token_start[i] < token_start[i + 1]:  # (written out: a helper returning a tuple ran at half speed)
            if byte >= 0x80 and (shadow_of[depth, 0] >= 0 or shadow_of[depth, 1] >= 0) and not _escapes_every_split(
                    lexer, cand, shadow_cands, went_on, shadow_of[depth], which_of[depth]):
                if splits:  # the shadows close the lexeme's way on: only a split may be left
                    n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i],
                                              token_start[i + 1], -1)
            else:
                group = lone_group[went_on]
                if group == -2:
                    if not reach_done[went_on]:
                        fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, went_on)
                    group, n_groups = _group_of(reach_bits[went_on], group_reach, n_groups)
                    lone_group[went_on] = group
                n_written = _write_tokens(out_positions, out_groups, n_written, token_start[i], token_start[i + 1],
                                          group)
        q_of[depth] = went_on
        split_above[depth] = splits
        i += 1
    return n_groups, n_written


@kernel
def _escapes_every_split(lexer, cand, shadow_cands, q, shadows, which):
    """:func:`~gramalign.parsing.lexing.lexeme_escapes_shadows` for a node of
    :func:`classify_tokens_every_split` (every shadow there is one of the context's)."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    cands = np.empty((2, cand.shape[0]), np.uint64)
    for k in range(2):
        if shadows[k] >= 0:
            cands[k] = shadow_cands[which[k] - 1]
    return lexeme_escapes_shadows(lx_trans, lx_accept, lx_alive, q, cand, shadows, cands)


@kernel
def stack_shifts_each(lr, term_column, pool, node, free, group_reach, allowed):
    """``allowed[g]``: can the stack at ``node`` shift one of the terminals of row g of
    ``group_reach`` (one memo of what the stack can shift serves every row)? Returns a
    status (grow the pools and call again if not OK)."""
    words = group_reach.shape[1]
    usable = np.zeros(words, np.uint64)
    known = np.zeros(words, np.uint64)
    for g in range(group_reach.shape[0]):
        answer, status = usable_meets(lr, term_column, pool, node, 0, free, group_reach[g], usable, known)
        if status != OK:
            return status
        allowed[g] = answer
    return OK


@kernel
def group_rows(token_ids, positions, groups, n_written, n_groups, width):
    """The first ``n_written`` entries of a classification: (uint32 [n_groups, width], a
    bitmask row of inside tokens per group; uint32 [width], every inside token; int64, the
    positions of the dependent tokens, ascending). Only these rows are zeroed."""
    rows = np.zeros((n_groups, width), np.uint32)
    inside = np.zeros(width, np.uint32)
    n_dependent = 0
    for k in range(n_written):
        if groups[k] < 0:
            n_dependent += 1
    dependent = np.empty(n_dependent, np.int64)
    n_dependent = 0
    for k in range(n_written):
        g = groups[k]
        if g >= 0:
            token = token_ids[positions[k]]
            bit = np.uint32(1) << np.uint32(token & 31)
            rows[g, token >> 5] |= bit
            inside[token >> 5] |= bit
        else:
            dependent[n_dependent] = positions[k]
            n_dependent += 1
    return rows, inside, dependent
