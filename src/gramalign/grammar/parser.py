"""The incremental parser: bytes in, "can this still become a sentence?" out.

It runs the lexer DFA (all terminals at once, see :mod:`.lexer`) and an LALR(1) parser
(see :mod:`.lalr`) together, one byte at a time, with the lexing semantics of
``docs/grammars.md``: the candidates for a lexeme are the terminals the parser can take
in the state where the lexeme starts, plus the ignored ones; a lexeme is the longest
match among them; equal lengths go to the best-ranked terminal.

The state is a small set of *hypotheses*. Most of the time there is one. A second one
appears while the current lexeme could either end here or go on (``12`` may be a number
or the start of ``123``). Ending a lexeme early leaves a *shadow*: the automaton state of
the longer lexeme that was not taken. Longest match forbids that longer lexeme, so if a
shadow ever reaches an accepting state its hypothesis dies; when it dies out, it is
dropped.

There is no fixed bound on either: text that keeps many decisions pending (a long run that
a terminal like ``/[ab]{2,40}c/`` may still take whole, while shorter terminals split it)
needs as many hypotheses and shadows as it has pending lexemes. The kernels report when
their output rows or shadow slots are full and the caller grows them and calls again (as
for the node pool); hypotheses that mean the same (equal stack contents, lexeme, layout and
shadow set) are merged after every byte, and so are equal shadows of one hypothesis.

A hypothesis is a row of int32 values: the parser stack (a node id), the lexer state of
the current lexeme, two shadow slots (lexer state, parser state whose candidates apply; -1
when free; more slots, when needed, follow the ``HYPOTHESIS_FIELDS`` fixed fields, see
:func:`shadow_column`) and, for grammars with an :class:`~.grammar.Indentation`
layout, the bracket depth, the column of the current newline lexeme (0 in any other
lexeme) and the stack of open blocks' columns (a node id, -1 for none; block nodes live in
the same pool as parser nodes, with the column as their state). Where a newline lexeme
ends outside brackets, the parser is fed the newline terminal and then an indent or the
dedents its column calls for. Parser stacks are persistent linked lists stored
in a *pool* of two int32 arrays (state, parent): pushing allocates a node, popping follows
parents, and nothing is ever overwritten, so a state is just a node id and forking a
matcher copies nothing but its pool. Kernels that only look ahead allocate their
temporary nodes in a separate *scratch* pool (ids from ``SCRATCH_BASE`` up).

All hot functions are numba kernels over plain arrays; :class:`IncrementalParser` is the
Python face used by matchers and by tests as the slow, byte-by-byte oracle.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np

from ..errors import GrammarError
from .grammar import Grammar
from .automaton_cache import AutomatonCache
from .lalr import ACCEPT, ParseTable, build_parse_table
from .lalr_kernels import goto_of
from .limits import check_time
from .lexer import LexerDFA, build_lexer, character_starts, characters_to_close, rank_terminals, terminal_bits
from .lexer_starts import largest_supersets, safe_to_share

HYPOTHESIS_FIELDS = 9
STACK, LEXEME, SHADOW1, SHADOW1_PARSER, SHADOW2, SHADOW2_PARSER, BRACKETS, COLUMN, BLOCKS = range(HYPOTHESIS_FIELDS)

# Entries of the ``layout`` array (all -1 for grammars without an Indentation layout),
# then the fewest and most code points of each counted terminal (see ``Terminal.length``).
NEWLINE_TERMINAL, NEWLINE_COLUMN, INDENT_COLUMN, DEDENT_COLUMN, TAB_SIZE, COUNTED_BOUNDS = range(6)
# ``tracks_column`` (int32 per lexer state) says what the COLUMN field of a hypothesis counts
# there: nothing (0), the column of a newline lexeme, or the code points of counted terminal
# j (``COUNTED + 2 * j``, plus one in the state between two characters).
# In a counted terminal's states, the bits from NEED_SHIFT up hold the fewest characters still
# to start before its closing quote can be read (``lexer.characters_to_close``).
NEWLINE = 1
COUNTED = 2
NEED_SHIFT = 16
KIND_MASK = (1 << NEED_SHIFT) - 1
MAX_NEED = (1 << (31 - NEED_SHIFT)) - 1
MAX_COUNT = 2**31 - 2  # the most code points a counted terminal's bounds may name (int32 counter)
SCRATCH_BASE = 1 << 29
INITIAL_HYPOTHESES = 16  # rows a parser's state arrays start with; they grow when text needs more

# Status codes of the kernels.
OK = 0
POOL_FULL = 1  # the committed pool needs to grow: grow it and call again
SCRATCH_FULL = 2  # the scratch pool needs to grow
SHADOWS_FULL = 3  # a hypothesis needs more shadow slots: widen the rows and call again
HYPOTHESES_FULL = 4  # more live hypotheses than the output rows hold: more rows and call again

REACH_MAX_BYTES = 256 << 20


@dataclass(frozen=True, eq=False)
class ParserTables:
    """Everything the kernels need about one grammar, as arrays (shared, read-only except
    for the lazily filled ``reach_*`` cache)."""

    grammar: Grammar
    lexer: LexerDFA
    table: ParseTable
    term_column: np.ndarray  # int32 [lexer terminals]: parser column, -1 for ignored terminals
    candidate_bits: np.ndarray  # uint64 [parser states, words]: lexer terminals usable there
    candidate_id: np.ndarray  # int32 [parser states]: its lexer start, which tracks a superset of its candidates
    reach_bits: np.ndarray  # uint64 [lexer states, words]: lazily filled, see fill_reach
    reach_done: np.ndarray  # uint8 [lexer states]
    accepting: tuple[bool, ...]  # per lexer state: does any terminal accept there?
    layout: np.ndarray  # int32 [5 + 2 x counted terminals]: see NEWLINE_TERMINAL ... COUNTED_BOUNDS
    bracket_delta: np.ndarray  # int32 [lexer terminals]: +1 opens a bracket, -1 closes one
    tracks_column: np.ndarray  # int32 [lexer states]: what the COLUMN field counts there (NEWLINE, COUNTED)
    start_bits: np.ndarray  # uint64 [lexer starts, words]: the terminals each start tracks (see lexer_starts)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (the reachable winners counted whole, though filled lazily)."""
        arrays = (self.lexer.transitions, self.lexer.accept_bits, self.lexer.alive_bits, self.table.action,
                  self.table.goto, self.candidate_bits, self.reach_bits, self.reach_done, self.tracks_column)
        return sum(int(a.nbytes) for a in arrays) + 8 * len(self.accepting)

    @property
    def has_layout(self) -> bool:
        return bool(self.layout[NEWLINE_TERMINAL] >= 0)

    @property
    def end_column(self) -> int:
        return len(self.table.terminals) - 1

    def kernel_args(self):
        """The arrays, in the order every kernel of this module takes them."""
        t = self.table
        lx = self.lexer
        return (lx.transitions, lx.accept_bits, lx.alive_bits, np.int32(lx.num_starts), lx.class_byte,
                t.action, t.goto, t.rule_lhs, t.rule_len, self.term_column,
                self.candidate_bits, self.candidate_id, self.reach_bits, self.reach_done,
                self.layout, self.bracket_delta, self.tracks_column)


def _check_newline_reaches_every_column(terminal) -> None:
    """Masks treat a newline lexeme as able to end at any column (so the parser is fed the
    newline terminal alone to check it, see :func:`usable_meets`). That holds when every
    prefix of the terminal can be continued to a point where a line break and then any
    number of spaces completes it."""
    dfa = terminal.dfa
    trans = dfa.transitions
    good = np.zeros(dfa.num_states, dtype=bool)
    for state in range(dfa.num_states):
        after, seen = int(trans[state, 10]), set()
        while after >= 0 and after not in seen and dfa.accepting[after]:
            seen.add(after)
            after = int(trans[after, 32])
        good[state] = after >= 0 and after in seen
    while True:  # widen to the states that can reach a good one
        reaches = good | np.any(good[np.where(trans >= 0, trans, 0)] & (trans >= 0), axis=1)
        if np.array_equal(reaches, good):
            break
        good = reaches
    if not good.all():
        raise GrammarError(
            f"the newline terminal {terminal.name} of an indentation layout must allow, after any of its "
            r"prefixes, a line break followed by any number of spaces (for example /(\r?\n[\t ]*(#[^\n]*)?)+/)")


TABLES_CACHE_BYTES = 64 << 20
"""Memory for the tables of recently used grammars, least recently used out (a count bound
let 64 large grammars hold over a GiB in a server that compiles one schema after another)."""

_TABLES = AutomatonCache("parser tables", TABLES_CACHE_BYTES, size=lambda tables: tables.nbytes)


def build_parser_tables(grammar: Grammar) -> ParserTables:
    """Lexer DFA + LALR table + the glue between them for ``grammar`` (cached per grammar,
    see ``TABLES_CACHE_BYTES``)."""
    found = _TABLES.get(grammar)
    if found is None:
        found = _TABLES.put(grammar, _build_parser_tables(grammar))
    return found


def _build_parser_tables(grammar: Grammar) -> ParserTables:
    table = build_parse_table(grammar)
    check_time("the parser tables")
    used = set(table.terminals[:-1]) | set(grammar.ignore)
    ranked = rank_terminals(tuple(t for t in grammar.terminals if t.name in used))
    columns = {name: j for j, name in enumerate(table.terminals)}
    term_column = np.array([-1 if t.name in grammar.ignore else columns[t.name] for t in ranked], dtype=np.int32)
    words = max(1, (len(ranked) + 63) // 64)  # one word even without terminals (language {""})
    candidate_bits = _candidate_bits(table.action, term_column, words)
    candidate_bits |= terminal_bits(ranked, grammar.ignore)
    if grammar.indentation is not None:  # always a candidate, as in lark's post-lexers
        candidate_bits |= terminal_bits(ranked, [grammar.indentation.newline])
    if grammar.always_lexed:
        candidate_bits |= terminal_bits(ranked, grammar.always_lexed)
    check_time("the parser tables")
    set_id, n_sets = _row_ranks(candidate_bits)
    sets = np.empty((n_sets, words), dtype=np.uint64)
    sets[set_id] = candidate_bits
    lexer, start_of_set, start_bits = _lexer_with_shared_starts(ranked, sets)
    candidate_id = start_of_set[set_id].astype(np.int32)
    layout, bracket_delta, tracks_column = _layout_arrays(grammar, lexer, table)
    cache_bytes = lexer.num_states * (words * 8 + 1)
    if cache_bytes > REACH_MAX_BYTES:
        raise GrammarError(
            f"grammar too large: {lexer.num_states} lexer states need "
            f"{cache_bytes >> 20} MiB of lookahead tables (limit {REACH_MAX_BYTES >> 20} MiB)")
    reach_bits = np.zeros((lexer.num_states, words), dtype=np.uint64)
    reach_done = np.zeros(lexer.num_states, dtype=np.uint8)
    accepting = tuple(np.any(lexer.accept_bits != 0, axis=1).tolist())
    return ParserTables(grammar, lexer, table, term_column, candidate_bits, candidate_id,
                        reach_bits, reach_done, accepting, layout, bracket_delta, tracks_column, start_bits)


def _lexer_with_shared_starts(ranked, sets: np.ndarray):
    """(lexer, the start of each candidate set, the terminals each start tracks): a set
    lexes from the start of the largest set that contains it where that is exact (see
    :mod:`.lexer_starts`), else from its own."""
    root = largest_supersets(sets)
    shared = np.unique(root)
    lexer = build_lexer(ranked, starts=sets[shared])
    start_of = {int(r): k for k, r in enumerate(shared.tolist())}
    safe = safe_to_share(lexer, sets, root, start_of)
    own = np.flatnonzero(~safe)
    if own.size:  # these keep starts of their own: build the lexer once more with them
        shared = np.concatenate([shared, own])
        lexer = build_lexer(ranked, starts=sets[shared])
        root = np.where(safe, root, np.arange(root.shape[0]))
        start_of.update({int(k): shared.shape[0] - own.size + i for i, k in enumerate(own.tolist())})
    start_of_set = np.array([start_of[int(r)] for r in root.tolist()], dtype=np.int64)
    return lexer, start_of_set, np.ascontiguousarray(sets[shared])


@numba.njit(cache=True, nogil=True)
def _candidate_bits(action: np.ndarray, term_column: np.ndarray, words: int) -> np.ndarray:
    """uint64 [parser states, words]: bit k set where lexer terminal k has an action (-1
    columns, the ignored terminals, have none). A loop: numpy's fancy-indexed copy of the
    action table took 150 ms on a 22k-state table (a 100M-cell table is ~0.2 s here, so the
    compile budget is checked before, not inside)."""
    bits = np.zeros((action.shape[0], words), np.uint64)
    for state in range(action.shape[0]):
        for k in range(term_column.shape[0]):
            column = term_column[k]
            if column >= 0 and action[state, column] != 0:
                bits[state, k >> 6] |= np.uint64(1) << np.uint64(k & 63)
    return bits


def _row_ranks(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """(rank of each row among the distinct rows in lexicographic order, number of distinct
    rows): the numbering ``np.unique(rows, axis=0, return_inverse=True)`` gives, which
    mask caches saved on disk rely on, without its sort of a structured view (most of the
    parser tables' build time)."""
    order = np.lexsort(rows.T[::-1])  # the last key sorts first: word 0
    ordered = rows[order]
    starts_group = np.ones(len(rows), dtype=bool)
    starts_group[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    ranks = np.empty(len(rows), dtype=np.int32)
    ranks[order] = np.cumsum(starts_group) - 1
    return ranks, int(starts_group.sum())


def _layout_arrays(grammar: Grammar, lexer: LexerDFA, table: ParseTable):
    counted = [k for k, terminal in enumerate(lexer.terminals) if terminal.length is not None]
    if counted and grammar.ignore:
        raise GrammarError("counted string terminals need a grammar without ignored terminals (a token "
                           "that opens one must start with its quote for its masks to count it)")
    layout = np.full(COUNTED_BOUNDS + 2 * len(counted), -1, dtype=np.int32)
    bracket_delta = np.zeros(len(lexer.terminals), dtype=np.int32)
    tracks_column = np.zeros(lexer.num_states, dtype=np.int32)
    for j, k in enumerate(counted):
        fewest, most = lexer.terminals[k].length
        if not (0 <= fewest <= MAX_COUNT and -1 <= most <= MAX_COUNT):
            raise GrammarError(f"terminal {lexer.terminals[k].name}: length bounds {lexer.terminals[k].length} "
                               f"outside 0..{MAX_COUNT} (the most may be -1: no bound)")
        layout[COUNTED_BOUNDS + 2 * j:COUNTED_BOUNDS + 2 * j + 2] = fewest, most
        _mark_counted(lexer, k, COUNTED + 2 * j, tracks_column)
    spec = grammar.indentation
    if spec is None:
        return layout, bracket_delta, tracks_column
    newline = lexer.terminal_index(spec.newline)
    _check_newline_reaches_every_column(lexer.terminals[newline])
    layout[:] = (newline, table.terminal_id(spec.newline), table.terminal_id(spec.indent),
                 table.terminal_id(spec.dedent), spec.tab_size)
    names = [t.name for t in lexer.terminals]
    for delta, brackets in ((1, spec.open_brackets), (-1, spec.close_brackets)):
        for name in brackets:
            if name in names:
                bracket_delta[names.index(name)] = delta
    word, bit = newline >> 6, np.uint64(1) << np.uint64(newline & 63)
    in_newline = (lexer.alive_bits[:, word] & bit) != 0
    in_newline[:lexer.num_starts] = False
    tracks_column[in_newline] = NEWLINE
    return layout, bracket_delta, tracks_column


def _mark_counted(lexer: LexerDFA, k: int, kind: int, tracks_column: np.ndarray) -> None:
    """Mark the states of counted terminal ``k`` (see ``Terminal.length``) with ``kind``, and
    ``kind + 1`` at the states between two characters. Its code points are counted from the
    opening quote on, so every lexeme of it must enter its block on that quote: no other
    terminal may be alive with it after one byte."""
    terminal, first = lexer.terminals[k], int(lexer.block_start[k]) if lexer.block_start.size else -1
    word, bit = k >> 6, np.uint64(1) << np.uint64(k & 63)
    alive = np.flatnonzero((lexer.alive_bits[:, word] & bit) != 0)
    dfa = terminal.dfa
    shared = alive[(alive >= lexer.num_starts) & ((alive < first) | (alive >= first + dfa.num_states))]
    if first < 0 or shared.size:
        raise GrammarError(f"the counted string terminal {terminal.name} overlaps another terminal after its "
                           "opening quote; its length cannot be counted")
    need = characters_to_close(dfa)
    if kind + 1 > KIND_MASK or need.max(initial=0) > MAX_NEED:
        raise GrammarError(f"the counted string terminal {terminal.name} cannot be counted: too many counted "
                           "terminals, or a contents language whose strings need too many characters to end")
    block = tracks_column[first:first + dfa.num_states]
    block[:] = kind + (need << NEED_SHIFT)
    block[character_starts(dfa)] += 1


# ---------------------------------------------------------------------------------------
# Kernels. Argument order: the ParserTables.kernel_args() arrays first (named ``lx_trans,
# lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len, term_column,
# cand_bits, cand_id, reach_bits, reach_done``), then the pools, then the rest.


@numba.njit(cache=True, nogil=True, inline="always")
def _node_state(pool_state, scratch_state, node):
    if node >= SCRATCH_BASE:
        return scratch_state[node - SCRATCH_BASE]
    return pool_state[node]


@numba.njit(cache=True, nogil=True, inline="always")
def _node_parent(pool_parent, scratch_parent, node):
    if node >= SCRATCH_BASE:
        return scratch_parent[node - SCRATCH_BASE]
    return pool_parent[node]


@numba.njit(cache=True, nogil=True, inline="always")
def _intersects(a, b):
    for w in range(a.shape[0]):
        if a[w] & b[w]:
            return True
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def _lowest_common_bit(a, b):
    """Index of the lowest bit set in both ``a`` and ``b``, or -1."""
    for w in range(a.shape[0]):
        x = a[w] & b[w]
        if x:
            k = 0
            while not (x >> np.uint64(k)) & np.uint64(1):
                k += 1
            return w * 64 + k
    return -1


@numba.njit(cache=True, nogil=True)
def feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state,
                  scratch_parent, exposed, node, column, to_scratch, alloc):
    """Reduce as the LALR table says for terminal ``column``, then shift it.

    New nodes go to the scratch pool when ``to_scratch`` (look-ahead only) or else to the
    committed pool, from index ``alloc``. Returns ``(new top node, alloc, status)``; the
    node is -1 when the terminal is a syntax error here, -2 when it completes the
    sentence (ACCEPT, only for ``$END``). ``exposed[0]`` is lowered to the lowest
    committed node that a reduction uncovered (see :class:`StackPool`).
    """
    capacity = scratch_state.shape[0] if to_scratch else pool_state.shape[0]
    base = SCRATCH_BASE if to_scratch else 0
    while True:
        state = _node_state(pool_state, scratch_state, node)
        a = action[state, column]
        if a == 0:
            return -1, alloc, OK
        if a == ACCEPT:
            return -2, alloc, OK
        if alloc >= capacity:
            return -1, alloc, SCRATCH_FULL if to_scratch else POOL_FULL
        if a > 0:
            target = a - 1
        else:
            rule = -a - 1
            for _ in range(rule_len[rule]):
                node = _node_parent(pool_parent, scratch_parent, node)
            if node < exposed[0]:
                exposed[0] = node  # the deepest committed node this look-ahead depended on
            target = goto_of(goto, _node_state(pool_state, scratch_state, node), rule_lhs[rule])
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


@numba.njit(cache=True, nogil=True, inline="always")
def _one_bit(bits):
    """Is exactly one bit set in the uint64 bitset ``bits``?"""
    found = False
    for w in range(bits.shape[0]):
        x = bits[w]
        if x:
            if found or x & (x - np.uint64(1)):
                return False
            found = True
    return found


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
    if _one_bit(lx_alive[start]):
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
            if not reach_done[w] and _one_bit(lx_alive[w]):
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
        winner = _lowest_common_bit(lx_accept[v], lx_accept[v])
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


@numba.njit(cache=True, nogil=True)
def usable_meets(action, goto, rule_lhs, rule_len, term_column, pool_state, pool_parent, scratch_state,
                 scratch_parent, exposed, node, scratch_alloc, free_terminal, wanted, usable, known):
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
                    top, _, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                                   scratch_state, scratch_parent, exposed, node, column, True,
                                                   scratch_alloc)
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


@numba.njit(cache=True, nogil=True, inline="always")
def reachable_winners(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q):
    """Terminals that can win a lexeme going on from lexer state ``q`` (cached bitset)."""
    if not reach_done[q]:
        fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q)
    return reach_bits[q]


@numba.njit(cache=True, nogil=True)
def hypothesis_viable(lx_trans, lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len,
                      term_column, cand_bits, cand_id, reach_bits, reach_done, layout, bracket_delta,
                      tracks_column, pool_state, pool_parent, scratch_state, scratch_parent, exposed, hyp,
                      scratch_alloc):
    """Can this hypothesis still be completed to a sentence? Returns (viable, status).

    Its stack is a viable prefix (LALR never shifts into a dead end), so the question is
    only whether the current lexeme can become a terminal the stack can take.
    """
    q = hyp[LEXEME]
    if q < lx_starts:
        return True, OK
    node = hyp[STACK]
    reach = reachable_winners(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, q)
    usable = np.zeros(cand_bits.shape[1], np.uint64)
    known = np.zeros(cand_bits.shape[1], np.uint64)
    return usable_meets(action, goto, rule_lhs, rule_len, term_column, pool_state, pool_parent, scratch_state,
                        scratch_parent, exposed, node, scratch_alloc, free_terminal(layout, hyp[BRACKETS]),
                        reach, usable, known)


@numba.njit(cache=True, nogil=True, inline="always")
def free_terminal(layout, brackets):
    """The lexer terminal a hypothesis ignores whatever its stack: a newline inside brackets."""
    return layout[NEWLINE_TERMINAL] if brackets > 0 else -1


@numba.njit(cache=True, nogil=True, inline="always")
def next_column(tracks_column, layout, lexeme, column, byte):
    """The column of a newline lexeme once ``byte`` took it to lexer state ``lexeme`` (0 in
    other lexemes): spaces and tabs after the last line break, up to a comment (-1 after
    one; a comment always runs to a line break, except at the end of the text)."""
    if tracks_column[lexeme] != NEWLINE or byte == 10:
        return 0
    if column < 0:
        return column
    if byte == 32:
        return column + 1
    if byte == 9:
        tab = layout[TAB_SIZE]
        return (column // tab + 1) * tab
    if byte == 35:
        return -1
    return column


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


@numba.njit(cache=True, nogil=True)
def end_lexeme(action, goto, rule_lhs, rule_len, term_column, layout, bracket_delta, pool_state, pool_parent,
               scratch_state, scratch_parent, exposed, node, winner, brackets, column, blocks, to_scratch, alloc):
    """Feed the parser what a lexeme won by lexer terminal ``winner`` means.

    Usually that is the terminal itself (nothing for an ignored one). A newline lexeme
    outside brackets is the newline terminal followed by an indent (pushing ``column`` on
    the block stack ``blocks``) or by a dedent per block deeper than ``column``, which must
    then be the column of an open block. Returns ``(node, brackets, blocks, alloc,
    status)``; the node is -1 when the parser rejects it.
    """
    if winner == layout[NEWLINE_TERMINAL]:
        if brackets > 0:
            return node, brackets, blocks, alloc, OK
        if column < 0:
            return -1, brackets, blocks, alloc, OK
        node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                            scratch_state, scratch_parent, exposed, node,
                                            layout[NEWLINE_COLUMN], to_scratch, alloc)
        if status != OK or node < 0:
            return node, brackets, blocks, alloc, status
        level = 0 if blocks < 0 else _node_state(pool_state, scratch_state, blocks)
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
            node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                                scratch_state, scratch_parent, exposed, node,
                                                layout[INDENT_COLUMN], to_scratch, alloc)
            return node, brackets, blocks, alloc, status
        while column < level:
            node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                                scratch_state, scratch_parent, exposed, node,
                                                layout[DEDENT_COLUMN], to_scratch, alloc)
            if status != OK or node < 0:
                return node, brackets, blocks, alloc, status
            blocks = _node_parent(pool_parent, scratch_parent, blocks)
            level = 0 if blocks < 0 else _node_state(pool_state, scratch_state, blocks)
        if column != level:
            return -1, brackets, blocks, alloc, OK
        return node, brackets, blocks, alloc, OK
    parser_column = term_column[winner]
    if parser_column >= 0:
        node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                            scratch_state, scratch_parent, exposed, node, parser_column,
                                            to_scratch, alloc)
        if status != OK or node < 0:
            return node, brackets, blocks, alloc, status
    return node, brackets + bracket_delta[winner], blocks, alloc, OK


@numba.njit(cache=True, nogil=True, inline="always")
def shadow_column(k):
    """The column of shadow slot ``k`` of a hypothesis row (its parser state is the next one):
    slots 0 and 1 are the fixed SHADOW1/SHADOW2 fields, more follow the fixed fields."""
    return SHADOW1 + 2 * k if k < 2 else HYPOTHESIS_FIELDS + 2 * (k - 2)


@numba.njit(cache=True, nogil=True, inline="always")
def shadow_slots(width):
    """Shadow slots of a hypothesis row ``width`` int32 values wide."""
    return 2 + (width - HYPOTHESIS_FIELDS) // 2


@numba.njit(cache=True, nogil=True, inline="always")
def _shadow_after(lx_trans, hyp, k, byte):
    """The lexer state shadow slot ``k`` of ``hyp`` reaches on ``byte`` (-1: empty slot or
    no move); its candidates are those of parser state ``hyp[shadow_column(k) + 1]``."""
    shadow = hyp[shadow_column(k)]
    return -1 if shadow < 0 else lx_trans[shadow, byte]


@numba.njit(cache=True, nogil=True, inline="always")
def _shadow_violated(lx_trans, lx_accept, cand_bits, hyp, byte):
    """Does ``byte`` take some shadow of ``hyp`` to an accepting state (longest match then
    forbids the hypothesis)?"""
    for k in range(shadow_slots(hyp.shape[0])):
        t = _shadow_after(lx_trans, hyp, k, byte)
        if t >= 0 and _intersects(lx_accept[t], cand_bits[hyp[shadow_column(k) + 1]]):
            return True
    return False


@numba.njit(cache=True, nogil=True, inline="always")
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


@numba.njit(cache=True, nogil=True, inline="always")
def _advance_shadows(lx_trans, lx_alive, cand_bits, cand_id, hyp, byte, row):
    """Write the shadows of ``hyp`` after ``byte`` into ``row`` (a different row), dropping
    the dead ones and duplicates, and clear the other slots. Returns the slots used, or -1
    when ``row`` has too few (the caller checked that none accepts)."""
    used = 0
    for k in range(shadow_slots(hyp.shape[0])):
        t = _shadow_after(lx_trans, hyp, k, byte)
        parser_state = hyp[shadow_column(k) + 1]
        if t < 0 or not _intersects(lx_alive[t], cand_bits[parser_state]):
            continue
        used = _add_shadow(row, used, t, parser_state, cand_id)
        if used < 0:
            return -1
    for k in range(used, shadow_slots(row.shape[0])):
        column = shadow_column(k)
        row[column] = -1
        row[column + 1] = -1
    return used


@numba.njit(cache=True, nogil=True, inline="always")
def advance_hypothesis(lx_trans, lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len,
                       term_column, cand_bits, cand_id, layout, bracket_delta, tracks_column, pool_state,
                       pool_parent, scratch_state, scratch_parent, exposed, hyp, byte, to_scratch, alloc, out,
                       n_out):
    """Write the successors of ``hyp`` on ``byte`` into ``out[n_out:]``.

    Returns ``(n_out, alloc, status)``: at most two successors, "the lexeme goes on" and
    "the lexeme ended just before this byte". ``HYPOTHESES_FULL``: ``out`` needs more rows;
    ``SHADOWS_FULL``: the rows need more shadow slots (see :func:`widen`).
    """
    if _shadow_violated(lx_trans, lx_accept, cand_bits, hyp, byte):
        return n_out, alloc, OK
    node = hyp[STACK]
    state = _node_state(pool_state, scratch_state, node)
    cand = cand_bits[state]
    q = hyp[LEXEME]
    went_on, counter = lexer_step(lx_trans, tracks_column, layout, q, hyp[COLUMN], byte)
    if went_on >= 0 and _intersects(lx_alive[went_on], cand):
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
    if q < lx_starts:
        return n_out, alloc, OK
    winner = _lowest_common_bit(lx_accept[q], cand)
    if winner < 0:
        return n_out, alloc, OK
    # The lexeme ends before ``byte``: what it would have become is now a shadow.
    shadow = -1
    if went_on >= 0:
        if _intersects(lx_accept[went_on], cand):
            return n_out, alloc, OK  # a longer lexeme matches: longest match forbids ending here
        if _intersects(lx_alive[went_on], cand):
            shadow = went_on
    new_node, brackets, blocks, alloc, status = end_lexeme(
        action, goto, rule_lhs, rule_len, term_column, layout, bracket_delta, pool_state, pool_parent,
        scratch_state, scratch_parent, exposed, node, winner, hyp[BRACKETS], hyp[COLUMN], hyp[BLOCKS],
        to_scratch, alloc)
    if status != OK:
        return n_out, alloc, status
    if new_node < 0:
        return n_out, alloc, OK
    new_state = _node_state(pool_state, scratch_state, new_node)
    first = lx_trans[cand_id[new_state], byte]  # the next lexeme starts at the new state's start
    if first < 0 or not _intersects(lx_alive[first], cand_bits[new_state]):
        return n_out, alloc, OK
    if n_out >= out.shape[0]:
        return n_out, alloc, HYPOTHESES_FULL
    row = out[n_out]
    row[STACK] = new_node
    row[LEXEME] = first
    row[BRACKETS] = brackets
    row[COLUMN] = next_column(tracks_column, layout, first, 0, byte)
    row[BLOCKS] = blocks
    used = _advance_shadows(lx_trans, lx_alive, cand_bits, cand_id, hyp, byte, row)
    if used >= 0 and shadow >= 0:
        used = _add_shadow(row, used, shadow, state, cand_id)
    if used < 0:
        return n_out, alloc, SHADOWS_FULL
    return n_out + 1, alloc, OK


@numba.njit(cache=True, nogil=True, inline="always")
def _same_stack(pool_state, pool_parent, scratch_state, scratch_parent, a, b):
    """Do the persistent stacks ``a`` and ``b`` (node ids, -1 empty) hold the same states?
    They share their bottom, so the walk stops where they meet."""
    while a != b:
        if a < 0 or b < 0:
            return False
        if _node_state(pool_state, scratch_state, a) != _node_state(pool_state, scratch_state, b):
            return False
        a = _node_parent(pool_parent, scratch_parent, a)
        b = _node_parent(pool_parent, scratch_parent, b)
    return True


@numba.njit(cache=True, nogil=True)
def same_hypothesis(pool_state, pool_parent, scratch_state, scratch_parent, cand_id, x, y):
    """Do the hypothesis rows ``x`` and ``y`` mean the same: equal stacks, lexeme, layout
    and set of shadows (each shadow judged by its lexer state and candidate set)?"""
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
    return (_same_stack(pool_state, pool_parent, scratch_state, scratch_parent, x[STACK], y[STACK])
            and _same_stack(pool_state, pool_parent, scratch_state, scratch_parent, x[BLOCKS], y[BLOCKS]))


@numba.njit(cache=True, nogil=True)
def distinct_hypotheses(pool_state, pool_parent, scratch_state, scratch_parent, cand_id, rows, n):
    """Drop rows of ``rows[:n]`` that mean the same as an earlier one (in place, order kept);
    returns how many are left. Ambiguous text that lexes two ways into equal states (an
    ignored separator split differently) would otherwise double the rows again and again."""
    kept = 1
    for h in range(1, n):
        if not repeats_kept(pool_state, pool_parent, scratch_state, scratch_parent, cand_id, rows, h, kept):
            if kept != h:
                rows[kept] = rows[h]
            kept += 1
    return kept if n else 0


@numba.njit(cache=True, nogil=True, inline="always")
def repeats_kept(pool_state, pool_parent, scratch_state, scratch_parent, cand_id, rows, h, kept):
    """Does ``rows[h]`` mean the same as one of the first ``kept`` rows?"""
    for k in range(kept):
        if same_hypothesis(pool_state, pool_parent, scratch_state, scratch_parent, cand_id, rows[h], rows[k]):
            return True
    return False


@numba.njit(cache=True, nogil=True)
def advance_bytes(lx_trans, lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len,
                  term_column, cand_bits, cand_id, reach_bits, reach_done, layout, bracket_delta, tracks_column,
                  pool_state, pool_parent, scratch_state, scratch_parent, exposed, hyps, data, pool_used, out):
    """Feed ``data`` to the hypotheses ``hyps``, committing new stack nodes to the pool.

    Writes the surviving, viable hypotheses to ``out`` (as wide as ``hyps``) and returns
    ``(count, new pool_used, status, offset)``; ``count == 0`` means the bytes are
    rejected, and ``offset`` is then the first byte no hypothesis survived. Statuses other
    than OK ask for a larger pool, more rows in ``out`` or wider rows, and a call again.
    """
    current = np.empty((max(out.shape[0], hyps.shape[0]), hyps.shape[1]), np.int32)
    current[:hyps.shape[0]] = hyps
    n_current = hyps.shape[0]
    following = np.empty((out.shape[0], hyps.shape[1]), np.int32)
    alloc = pool_used
    for offset in range(data.shape[0]):
        n_next = 0
        for h in range(n_current):
            n_next, alloc, status = advance_hypothesis(
                lx_trans, lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len,
                term_column, cand_bits, cand_id, layout, bracket_delta, tracks_column, pool_state, pool_parent,
                scratch_state, scratch_parent, exposed, current[h], data[offset], False, alloc, following, n_next)
            if status != OK:
                return 0, pool_used, status, offset
        if n_next == 0:
            return 0, pool_used, OK, offset
        if n_next > 1:
            n_next = distinct_hypotheses(pool_state, pool_parent, scratch_state, scratch_parent, cand_id,
                                         following, n_next)
        current[:n_next] = following[:n_next]
        n_current = n_next
    n_out = 0
    for h in range(n_current):
        viable, status = hypothesis_viable(
            lx_trans, lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len, term_column,
            cand_bits, cand_id, reach_bits, reach_done, layout, bracket_delta, tracks_column, pool_state,
            pool_parent, scratch_state, scratch_parent, exposed, current[h], 0)
        if status != OK:
            return 0, pool_used, status, data.shape[0]
        if viable:
            if n_out >= out.shape[0]:
                return 0, pool_used, HYPOTHESES_FULL, data.shape[0]
            out[n_out] = current[h]
            n_out += 1
    return n_out, alloc, OK, data.shape[0]


@numba.njit(cache=True, nogil=True)
def _close_and_end(action, goto, rule_lhs, rule_len, layout, pool_state, pool_parent, scratch_state,
                   scratch_parent, exposed, node, blocks, end_column, alloc):
    """(does the stack accept the end of the text after every open block is closed, alloc, status)."""
    while blocks >= 0:
        node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                            scratch_state, scratch_parent, exposed, node,
                                            layout[DEDENT_COLUMN], True, alloc)
        if status != OK or node < 0:
            return False, alloc, status
        blocks = _node_parent(pool_parent, scratch_parent, blocks)
    top, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent, scratch_state,
                                       scratch_parent, exposed, node, end_column, True, alloc)
    return top == -2, alloc, status


@numba.njit(cache=True, nogil=True)
def hypotheses_accept_end(lx_trans, lx_accept, lx_alive, lx_starts, lx_class_byte, action, goto, rule_lhs, rule_len,
                          term_column, cand_bits, cand_id, reach_bits, reach_done, layout, bracket_delta,
                          tracks_column, pool_state, pool_parent, scratch_state, scratch_parent, exposed, hyps,
                          end_column):
    """(the text so far is a complete sentence for some hypothesis, status).

    With an indentation layout, the end of the text closes every open block, after a
    newline terminal if the text does not end with one already; the column of a final
    newline lexeme does not matter.
    """
    newline = layout[NEWLINE_TERMINAL]
    for h in range(hyps.shape[0]):
        node = hyps[h, STACK]
        q = hyps[h, LEXEME]
        brackets = hyps[h, BRACKETS]
        blocks = hyps[h, BLOCKS]
        alloc = 0
        ends_with_newline = False
        if q >= lx_starts:
            state = _node_state(pool_state, scratch_state, node)
            winner = _lowest_common_bit(lx_accept[q], cand_bits[state])
            if winner < 0:
                continue
            if winner == newline and brackets == 0:
                node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                                    scratch_state, scratch_parent, exposed, node,
                                                    layout[NEWLINE_COLUMN], True, alloc)
                ends_with_newline = True
            else:
                node, brackets, blocks, alloc, status = end_lexeme(
                    action, goto, rule_lhs, rule_len, term_column, layout, bracket_delta, pool_state, pool_parent,
                    scratch_state, scratch_parent, exposed, node, winner, brackets, 0, blocks, True, alloc)
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
                node, alloc, status = feed_terminal(action, goto, rule_lhs, rule_len, pool_state, pool_parent,
                                                    scratch_state, scratch_parent, exposed, node,
                                                    layout[NEWLINE_COLUMN], True, alloc)
                if status != OK:
                    return False, status
                if node < 0:
                    break
            accepted, alloc, status = _close_and_end(action, goto, rule_lhs, rule_len, layout, pool_state,
                                                     pool_parent, scratch_state, scratch_parent, exposed, node,
                                                     blocks, end_column, alloc)
            if status != OK:
                return False, status
            if accepted:
                return True, OK
    return False, OK


# ---------------------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _top_states(state, parent, node, count):
    """The states of the top ``count`` nodes of the stack ``node`` (fewer where it is shorter)."""
    out = np.empty(count, np.int32)
    n = 0
    while n < count:
        out[n] = state[node]
        n += 1
        node = parent[node]
        if node < 0:
            break
    return out[:n]


def widen(hyps: np.ndarray) -> np.ndarray:
    """``hyps`` with one more (free) shadow slot per row."""
    return np.concatenate([hyps, np.full((hyps.shape[0], 2), -1, dtype=np.int32)], axis=1)


def narrowest(hyps: np.ndarray) -> np.ndarray:
    """A copy of ``hyps`` with only the shadow slots some row uses beyond the two fixed ones
    (the kernels fill slots in order), so states are as wide as their ambiguity needs."""
    extra = hyps[:, HYPOTHESIS_FIELDS::2] >= 0
    used = np.flatnonzero(extra.any(axis=0))
    width = HYPOTHESIS_FIELDS + 2 * (int(used[-1]) + 1 if used.size else 0)
    return hyps[:, :width].copy()


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
            if status != POOL_FULL and status != SCRATCH_FULL:
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
        """How many nodes below ``top`` the committed node ``exposed`` lies (0 if none)."""
        if exposed >= SCRATCH_BASE or exposed > top:
            return 0
        depth, node, parent = 0, top, self.parent
        while node > exposed:
            node = int(parent[node])
            depth += 1
        return depth


class IncrementalParser:
    """Byte-level parser state for one sequence: feed bytes, ask whether it can end.

    States are immutable int32 arrays of hypotheses; :meth:`feed` returns a new one (or
    None when the bytes are rejected) and never changes the old one, so callers keep a
    history for rollback. Nodes of rejected or rolled-back states are garbage in the pool;
    :meth:`truncate` reclaims the pool tail after a rollback.
    """

    def __init__(self, tables: ParserTables, pool: StackPool | None = None):
        self.tables = tables
        self.pool = pool if pool is not None else StackPool(tables.table.initial_state)
        self._args = tables.kernel_args()
        self._accepting = tables.accepting
        self.rows = INITIAL_HYPOTHESES  # output rows of feed, doubled when text needs more

    def initial_state(self) -> np.ndarray:
        hyp = np.full((1, HYPOTHESIS_FIELDS), -1, dtype=np.int32)
        hyp[0, STACK] = 0
        hyp[0, LEXEME] = self.tables.candidate_id[self.tables.table.initial_state]
        hyp[0, BRACKETS] = 0
        hyp[0, COLUMN] = 0
        return hyp

    def fork(self) -> "IncrementalParser":
        return IncrementalParser(self.tables, self.pool.copy())

    def feed(self, hyps: np.ndarray, data: bytes) -> "tuple[np.ndarray | None, int]":
        """``(new state, pool size before)`` after ``data``, or ``(None, offset of the failing byte)``."""
        array = np.frombuffer(data, dtype=np.uint8)
        rows = max(self.rows, hyps.shape[0])
        while True:
            out = np.empty((rows, hyps.shape[1]), dtype=np.int32)
            pool = self.pool
            count, used, status, offset = advance_bytes(*self._args, *pool.arrays(), hyps, array,
                                                        pool.used, out)
            if status == OK:
                break
            if status == HYPOTHESES_FULL:
                rows *= 2
            elif status == SHADOWS_FULL:
                hyps = widen(hyps)
            else:
                pool.grow(status)
        self.rows = rows
        if count == 0:
            return None, int(offset)
        before = pool.used
        pool.used = int(used)
        return narrowest(out[:count]), before

    def truncate(self, used: int) -> None:
        """Forget pool nodes from ``used`` on (they belong to rolled-back states only)."""
        pool = self.pool
        pool.used = used
        if used <= pool.memo_top:
            pool.forget()  # node ids from ``used`` on will be reused for other stacks

    def can_end(self, hyps: np.ndarray) -> bool:
        """Is the text so far a complete sentence?"""
        starts = self.tables.lexer.num_starts
        if not any(q < starts or self._accepting[q] for q in hyps[:, LEXEME].tolist()):
            return False  # mid-lexeme, and no terminal accepts it yet
        while True:  # every fill asks: the loop without until_it_fits' closure
            result, status = hypotheses_accept_end(*self._args, *self.pool.arrays(), hyps,
                                                   self.tables.end_column)
            if status == OK:
                return bool(result)
            self.pool.grow(status)

    def accepts(self, data: bytes) -> bool:
        """Is ``data`` a complete sentence? (From the start state; a convenience for tests.)"""
        state, _ = self.feed(self.initial_state(), data)
        return state is not None and self.can_end(state)

    def is_prefix(self, data: bytes) -> bool:
        """Can ``data`` be extended to a sentence?"""
        state, _ = self.feed(self.initial_state(), data)
        return state is not None
