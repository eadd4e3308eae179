"""Parser tables: a grammar's lexer DFA and LALR(1) table, and the glue the runtime parser
(:mod:`gramalign.parsing`) reads them through, as plain arrays.

This is analysis, done once per grammar and cached: which terminals each parser state can
take (its *candidates*, a bitset), which lexer start lexes them (states whose candidate sets
nest share one, see :mod:`.lexer_starts`), what the indentation layout and counted string
terminals need (the ``layout``, ``end_effects`` and ``tracks_column`` arrays). Building
them is also where a grammar's LALR conflicts and lexer size limits surface, so the front
ends call :func:`build_parser_tables` to check a grammar before handing it out.

A terminal's lookahead past the lexeme (``Terminal.lookahead``) is lexed like a terminal of
its own, ranked after every real one, and is the only candidate of a *pseudo parser state*
(a row of ``candidate_bits``/``candidate_id`` after the LALR states). A lexeme that ends
with such a lookahead leaves a shadow of that pseudo state, and a shadow dies with its
hypothesis when it accepts (see :mod:`gramalign.parsing.hypotheses`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import GrammarError
from ..jit import kernel
from .automata.cache import AutomatonCache
from .automata.dfa import ByteDFA
from .grammar import HANDED_TABLES_ATTRIBUTE, Grammar, Terminal
from .lalr import ParseTable, build_parse_table
from .lexer import LexerDFA, build_lexer, character_starts, characters_to_close, rank_terminals, terminal_bits
from .lexer_starts import largest_supersets, safe_to_share
from .limits import check_time

# Entries of the ``layout`` array (the first five all -1 for grammars without an Indentation
# layout; EVERY_SPLIT 1 for a grammar lexed every way, see ``Grammar.every_split``, else -1),
# then the fewest and most code points of each counted terminal (see ``Terminal.length``).
NEWLINE_TERMINAL, NEWLINE_COLUMN, INDENT_COLUMN, DEDENT_COLUMN, TAB_SIZE, EVERY_SPLIT, COUNTED_BOUNDS = range(7)
# Columns of ``end_effects`` (int32 per lexer terminal): what ending one of its lexemes does
# besides the shift: the change of bracket depth (+1 opens, -1 closes), the pseudo parser
# state of its lookahead past the lexeme (-1: none), 1 where the text may not end right
# after the lexeme (``Terminal.needs_text_after``) and 1 where the lexeme ends with a word
# character (``Terminal.ends_in_word``: the next lexeme starts from the second half of
# ``candidate_id``).
# OWN_LONGEST: in a grammar lexed every way, the pseudo parser state (its one candidate is the
# terminal) of a terminal lexed by its own longest match (``Grammar.own_longest``), else -1.
BRACKET_DELTA, LOOKAHEAD_STATE, NEEDS_TEXT, ENDS_IN_WORD, OWN_LONGEST = range(5)
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

REACH_MAX_BYTES = 256 << 20


@dataclass(frozen=True, eq=False)
class ParserTables:
    """Everything the kernels need about one grammar, as arrays (shared, read-only except
    for the lazily filled ``reach_*`` cache)."""

    grammar: Grammar
    lexer: LexerDFA
    table: ParseTable
    term_column: np.ndarray  # int32 [lexer terminals]: parser column, -1 for ignored terminals
    candidate_bits: np.ndarray  # uint64 [parser states + lookaheads, words]: lexer terminals usable there
    # int32 [2 x (parser states + lookaheads)]: the lexer start of each row, which tracks a
    # superset of its candidates; the second half after a word character (see grammar/lexer.py),
    # the same as the first where no terminal starts with a word boundary
    candidate_id: np.ndarray
    reach_bits: np.ndarray  # uint64 [lexer states, words]: lazily filled, see fill_reach
    reach_done: np.ndarray  # uint8 [lexer states]
    accepting: tuple[bool, ...]  # per lexer state: does any terminal accept there?
    layout: np.ndarray  # int32 [6 + 2 x counted terminals]: see NEWLINE_TERMINAL ... COUNTED_BOUNDS
    end_effects: np.ndarray  # int32 [lexer terminals, 4]: BRACKET_DELTA ... ENDS_IN_WORD
    tracks_column: np.ndarray  # int32 [lexer states]: what the COLUMN field counts there (NEWLINE, COUNTED)
    start_bits: np.ndarray  # uint64 [lexer starts, words]: the terminals each start tracks (see lexer_starts)

    version = 0  # lazy tables (parser_tables_lazy.py) count their growth here; these never grow

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

    @cached_property
    def lexer_arrays(self) -> tuple:
        """The ``lexer`` bundle: ``lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte``,
        the lexer DFA."""
        lx = self.lexer
        return lx.transitions, lx.accept_bits, lx.alive_bits, lx.is_start, lx.class_byte

    @cached_property
    def lr_arrays(self) -> tuple:
        """The ``lr`` bundle: ``action, goto, rule_lhs, rule_len``, the LALR table."""
        t = self.table
        return t.action, t.goto, t.rule_lhs, t.rule_len

    @cached_property
    def glue_arrays(self) -> tuple:
        """The ``glue`` bundle: ``term_column, cand_bits, cand_id, reach_bits, reach_done, layout,
        end_effects, tracks_column``, what ties the lexer to the table (each lexer terminal's
        column in it, the candidates of each parser state, the reachable-winners cache, the
        layout, what ending each terminal does)."""
        return (self.term_column, self.candidate_bits, self.candidate_id, self.reach_bits, self.reach_done, self.layout,
                self.end_effects, self.tracks_column)

    @cached_property
    def reads_before(self) -> bool:
        """Does some terminal start with a word boundary (two starts per candidate set)?"""
        half = self.candidate_id.shape[0] // 2
        return bool(np.any(self.candidate_id[:half] != self.candidate_id[half:]))

    def kernel_args(self) -> tuple:
        """``(lexer, lr, glue)``: the bundles the kernels of :mod:`gramalign.parsing` take first
        (:attr:`lexer_arrays`, :attr:`lr_arrays`, :attr:`glue_arrays`). Tuples from Python cost
        ~15 ns an array a call more than flat arguments (numba 0.68); inside numba, their
        members are borrowed, not counted (:mod:`gramalign.jit`)."""
        return self.lexer_arrays, self.lr_arrays, self.glue_arrays


def _check_newline_reaches_every_column(terminal) -> None:
    """Masks treat a newline lexeme as able to end at any column (so the parser is fed the
    newline terminal alone to check it, see ``parsing.hypotheses.usable_meets``). That
    holds when every prefix of the terminal can be continued to a point where a line break
    and then any number of spaces completes it."""
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
    see ``TABLES_CACHE_BYTES``); a JSON Schema's grammar has every rule emitted first
    (:meth:`Grammar.whole`)."""
    grammar = grammar.whole()
    found = handed_parser_tables(grammar)
    if found is None:
        found = _TABLES.get(grammar)
    if found is None:
        found = _TABLES.put(grammar, _build_parser_tables(grammar))
    return found


def remember_parser_tables(tables: ParserTables) -> None:
    """Tables built elsewhere (another process, see integrations/built_grammars): while their
    grammar lives, :func:`build_parser_tables` of it returns them, even where they are too
    large for the cache."""
    _TABLES.put(tables.grammar, tables)
    object.__setattr__(tables.grammar, HANDED_TABLES_ATTRIBUTE, tables)


def handed_parser_tables(grammar: Grammar) -> "ParserTables | None":
    """The tables :func:`remember_parser_tables` gave ``grammar``, if any."""
    return grammar.__dict__.get(HANDED_TABLES_ATTRIBUTE)


def _build_parser_tables(grammar: Grammar) -> ParserTables:
    table = build_parse_table(grammar)
    if table.forks and grammar.indentation is not None:
        raise GrammarError("an indentation layout needs an LALR(1) grammar: this one has conflicts that only the "
                           "generalized parser reads, and it does not read layouts")
    check_time("the parser tables")
    used = set(table.terminals[:-1]) | set(grammar.ignore)
    ranked = rank_terminals(tuple(t for t in grammar.terminals if t.name in used))
    ranked, lookaheads = _with_lookaheads(ranked, set(grammar.ignore))
    first_lookahead = len(ranked) - len(lookaheads)
    columns = {name: j for j, name in enumerate(table.terminals)}
    term_column = np.array([-1 if t.name in grammar.ignore or k >= first_lookahead else columns[t.name]
                            for k, t in enumerate(ranked)], dtype=np.int32)
    words = max(1, (len(ranked) + 63) // 64)  # one word even without terminals (language {""})
    candidate_bits = _candidate_bits(table.action, term_column, words)
    candidate_bits |= terminal_bits(ranked, grammar.ignore)
    if grammar.indentation is not None:  # always a candidate, as in lark's post-lexers
        candidate_bits |= terminal_bits(ranked, [grammar.indentation.newline])
    if grammar.always_lexed:
        candidate_bits |= terminal_bits(ranked, grammar.always_lexed)
    check_time("the parser tables")
    if lookaheads:  # one pseudo parser state per lookahead, with it as its only candidate
        rows = [terminal_bits(ranked, [t.name]) for t in ranked[first_lookahead:]]
        candidate_bits = np.concatenate([candidate_bits, np.stack(rows)])
    own_longest = [k for k, t in enumerate(ranked) if t.name in grammar.own_longest]
    own_state = {}
    if own_longest:  # and one per terminal lexed by its own longest match: its shadows' candidates
        own_state = {k: candidate_bits.shape[0] + j for j, k in enumerate(own_longest)}
        rows = [terminal_bits(ranked, [ranked[k].name]) for k in own_longest]
        candidate_bits = np.concatenate([candidate_bits, np.stack(rows)])
    set_id, n_sets = _row_ranks(candidate_bits)
    sets = np.empty((n_sets, words), dtype=np.uint64)
    sets[set_id] = candidate_bits
    if any(t.ends_in_word is not None for t in ranked):  # a terminal starts with a word boundary
        start_bits = np.concatenate([sets, sets])
        lexer = build_lexer(ranked, starts=start_bits, after_word=np.repeat([False, True], n_sets))
        candidate_id = np.concatenate([set_id, set_id + n_sets]).astype(np.int32)
    elif grammar.every_split:
        # A start of its own per candidate set: lexed every way, a token whose lexeme the
        # stack cannot take may still split into lexemes it can, so a mask class of a
        # superset's terminals would send whole classes to the exact walk.
        lexer = build_lexer(ranked, starts=sets)
        start_bits = sets
        candidate_id = np.tile(set_id, 2).astype(np.int32)
    else:
        lexer, start_of_set, start_bits = _lexer_with_shared_starts(ranked, sets)
        candidate_id = np.tile(start_of_set[set_id].astype(np.int32), 2)
    layout, end_effects, tracks_column = _layout_arrays(grammar, lexer, table)
    for k, terminal in enumerate(ranked[:first_lookahead]):
        if terminal.lookahead is not None:
            end_effects[k, LOOKAHEAD_STATE] = table.action.shape[0] + lookaheads.index(terminal.lookahead.digest)
        end_effects[k, NEEDS_TEXT] = terminal.needs_text_after
        end_effects[k, ENDS_IN_WORD] = bool(terminal.ends_in_word)
        end_effects[k, OWN_LONGEST] = own_state.get(k, -1)
    cache_bytes = lexer.num_states * (words * 8 + 1)
    if cache_bytes > REACH_MAX_BYTES:
        raise GrammarError(
            f"grammar too large: {lexer.num_states} lexer states need "
            f"{cache_bytes >> 20} MiB of lookahead tables (limit {REACH_MAX_BYTES >> 20} MiB)")
    reach_bits = np.zeros((lexer.num_states, words), dtype=np.uint64)
    reach_done = np.zeros(lexer.num_states, dtype=np.uint8)
    accepting = tuple(np.any(lexer.accept_bits != 0, axis=1).tolist())
    return ParserTables(grammar, lexer, table, term_column, candidate_bits, candidate_id,
                        reach_bits, reach_done, accepting, layout, end_effects, tracks_column, start_bits)


def _with_lookaheads(ranked: tuple[Terminal, ...], ignored: set) -> tuple[tuple[Terminal, ...], list[bytes]]:
    """``ranked`` followed by one pseudo terminal per distinct lookahead automaton (ranked
    after every real terminal: lower priority), and the digests of those automata in order.
    An ignored terminal may not have one: the masks read an ignored lexeme that ends inside
    a token without the parser, so its lookahead would go unchecked."""
    found: dict[bytes, ByteDFA] = {}
    for terminal in ranked:
        dfa = terminal.lookahead
        if dfa is not None and terminal.name in ignored:
            raise GrammarError(f"terminal {terminal.name} is ignored and has a lookahead past its lexeme, which "
                               "gramalign reads only for the terminals the parser takes; write it without one")
        if dfa is not None and dfa.digest not in found:
            if dfa.num_states == 0 or dfa.accepting[dfa.initial]:
                raise GrammarError(f"terminal {terminal.name}: its lookahead past the lexeme must match a "
                                   "non-empty text")
            found[dfa.digest] = dfa
    if not found:
        return ranked, []
    lowest = min(t.priority for t in ranked) - 1
    pseudo = tuple(Terminal.from_dfa(f"<not followed by {k}>", dfa, priority=lowest)
                   for k, dfa in enumerate(found.values()))
    return ranked + pseudo, list(found)


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


@kernel
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
    end_effects = np.zeros((len(lexer.terminals), 5), dtype=np.int32)
    end_effects[:, LOOKAHEAD_STATE] = -1
    end_effects[:, OWN_LONGEST] = -1
    tracks_column = np.zeros(lexer.num_states, dtype=np.int32)
    for j, k in enumerate(counted):
        fewest, most = lexer.terminals[k].length
        if not (0 <= fewest <= MAX_COUNT and -1 <= most <= MAX_COUNT):
            raise GrammarError(f"terminal {lexer.terminals[k].name}: length bounds {lexer.terminals[k].length} "
                               f"outside 0..{MAX_COUNT} (the most may be -1: no bound)")
        layout[COUNTED_BOUNDS + 2 * j:COUNTED_BOUNDS + 2 * j + 2] = fewest, most
        _mark_counted(lexer, k, COUNTED + 2 * j, tracks_column)
    if grammar.every_split or grammar.own_longest:
        _check_every_split(grammar, lexer)
        layout[EVERY_SPLIT] = 1
    spec = grammar.indentation
    if spec is None:
        return layout, end_effects, tracks_column
    newline = lexer.terminal_index(spec.newline)
    _check_newline_reaches_every_column(lexer.terminals[newline])
    layout[:EVERY_SPLIT] = (newline, table.terminal_id(spec.newline), table.terminal_id(spec.indent),
                 table.terminal_id(spec.dedent), spec.tab_size)
    names = [t.name for t in lexer.terminals]
    for delta, brackets in ((1, spec.open_brackets), (-1, spec.close_brackets)):
        for name in brackets:
            if name in names:
                end_effects[names.index(name), BRACKET_DELTA] = delta
    word, bit = newline >> 6, np.uint64(1) << np.uint64(newline & 63)
    in_newline = (lexer.alive_bits[:, word] & bit) != 0
    in_newline[:lexer.num_starts] = False
    tracks_column[in_newline] = NEWLINE
    return layout, end_effects, tracks_column


def _check_every_split(grammar: Grammar, lexer: LexerDFA) -> None:
    """A grammar lexed every way (``Grammar.every_split``) feeds the parser every terminal
    that accepts, and nothing else: no lexeme may have an effect of its own."""
    if grammar.own_longest and not grammar.every_split:
        raise GrammarError("own_longest terminals need a grammar lexed every way (every_split)")
    what = ("an indentation layout" if grammar.indentation else
            "lookaheads past a lexeme" if any(t.lookahead is not None or t.needs_text_after for t in lexer.terminals)
            else "word boundaries" if any(t.ends_in_word is not None for t in lexer.terminals)
            else "counted strings" if any(t.length is not None for t in lexer.terminals) else None)
    if what is not None:
        raise GrammarError(f"a grammar lexed every way it splits (every_split) cannot have {what}")


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
    mark_counted_block(terminal, first, kind, tracks_column)


def mark_counted_block(terminal: Terminal, first: int, kind: int, tracks_column: np.ndarray) -> None:
    """Write ``kind`` (``kind + 1`` between two characters) and the characters still needed
    to close into ``tracks_column`` for the block of counted ``terminal`` from lexer state
    ``first``."""
    dfa = terminal.dfa
    need = characters_to_close(dfa)
    if kind + 1 > KIND_MASK or need.max(initial=0) > MAX_NEED:
        raise GrammarError(f"the counted string terminal {terminal.name} cannot be counted: too many counted "
                           "terminals, or a contents language whose strings need too many characters to end")
    block = tracks_column[first:first + dfa.num_states]
    block[:] = kind + (need << NEED_SHIFT)
    block[character_starts(dfa)] += 1
