"""Token masks for context-free grammars, shared by every matcher of a compiled grammar.

The mask of a parser hypothesis (stack, lexer state, shadows) is assembled from parts:
the token classes of its *lexical context* (:mod:`.contexts`, computed once per context)
and what its stack allows of them (:mod:`.stack_parts`, cached under the top of the stack
the computation read). When the lexeme can end right here, before the token, the
hypothesis "it ended" is added and its mask is assembled the same way. Counted strings
near a length bound narrow their masks with :mod:`.counted_strings`. Entries are
computed on first use and kept for the life of the compiled grammar; access is
thread-safe. Rare states (more than two shadows) take the exact walk of the whole trie
(:func:`.trie_walk.walk_trie_grammar`), which is also the reference the tests compare with.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...bitsets import bit_indexes, lowest_common_bit
from ...grammar.parser_tables import (ENDS_IN_WORD, EVERY_SPLIT, LOOKAHEAD_STATE, NEWLINE_TERMINAL, OWN_LONGEST,
                                      ParserTables)
from ...parsing import IncrementalParser
from ...parsing.hypotheses import end_lexeme
from ...parsing.stacks import FORKED, feed_all
from ...parsing.state import (BLOCKS, BRACKETS, COLUMN, HYPOTHESES_FULL, HYPOTHESIS_FIELDS, INITIAL_HYPOTHESES,
                              LEXEME, OK, SCRATCH_BASE, SHADOW1, SHADOW1_PARSER, SHADOW2, SHADOW2_PARSER,
                              SHADOWS_FULL, STACK, widen)
from ...tokens.trie import TokenTrie
from ...tokens.vocabulary import Vocabulary
from ..bitmask import bitmask_width
from .contexts import ContextMasks, LexicalContexts
from .counted_strings import LengthFilter
from .disk_cache import load_contexts, save_contexts
from .shared_contexts import ContextClassificationCache
from .stack_parts import STACK_CACHE_ENTRIES, StackParts, sparse_words, write_part
from .trie_walk import walk_trie_grammar

MEMO_ENTRIES = 4096
"""Rows remembered per parser (matcher) by exact hypothesis, see ``StackPool.memo``."""


class GrammarMaskStore:
    """Exact token masks for the states of an :class:`IncrementalParser`."""

    def __init__(self, tables: ParserTables, vocabulary: Vocabulary, trie: TokenTrie,
                 shared: "ContextClassificationCache | None | bool" = True, text_blocks: bool = True):
        """``shared``: the cross-grammar cache of context classifications to use (True: the
        process-wide one of ``trie``; None or False: classify every context here).
        ``text_blocks``: take plain-text tokens as blocks where a context admits any text
        (see :mod:`.text_blocks`); False walks every token (a reference for tests)."""
        self.tables = tables
        self.vocabulary = vocabulary
        self.trie = trie
        self.width = bitmask_width(vocabulary.size)
        self.contexts = LexicalContexts(tables, trie, self.width, shared, text_blocks)
        self.stack_parts = StackParts(tables, trie, self.width)
        self._context_bytes: dict = {}  # id(context) -> (bytes, the context, its sub-trie) when last measured
        self._continues: dict[int, bool] = {}  # lexer state -> some byte goes on from it (rows never change)
        self._length_checked = 0  # lexer states LengthFilter.needed has looked at
        self._lengths = None
        self._bind()
        self._newline = int(tables.layout[NEWLINE_TERMINAL])
        self._every_split = bool(tables.layout[EVERY_SPLIT] == 1)
        # (top parser state, lexer state, shadows) -> (context, part) for parts computed
        # from the top of the stack alone: the fast path of fill(). (The context is None
        # for a first visit's exact walk: its part is the whole row, as sparse words.)
        self._by_top: dict[tuple[int, ...], tuple["ContextMasks | None", tuple]] = {}

    def _bind(self) -> None:
        """Read the tables' arrays (again, after lazy tables grew: see ``ParserTables.version``);
        rows never change once written, so only what new rows add is computed."""
        tables = self.tables
        self._version = tables.version
        lexer = tables.lexer
        self._args = tables.kernel_args()
        self._accepting_any = tables.accepting
        self._is_start = lexer.is_start
        if self._lengths is not None:
            self._lengths.bind(tables)
        elif LengthFilter.needed(tables, self._length_checked):
            self._lengths = LengthFilter(tables, self.trie, self.vocabulary.size, self.width)
        self._length_checked = lexer.num_states
        self.contexts.bind()

    @property
    def num_contexts(self) -> int:
        return len(self.contexts)

    @property
    def memory_bytes(self) -> int:
        t = self.tables
        total = int(t.reach_bits.nbytes + t.reach_done.nbytes + t.lexer.transitions.nbytes
                    + t.table.action.nbytes + t.table.goto.nbytes) + self.stack_parts.bytes
        # each context's arrays measured once (and again once its sub-trie is built): the compile
        # cache measures every grammar it holds every few compiles (masking/compiler.py)
        known = self._context_bytes
        sizes = {}
        for entry in list(self.contexts.entries.values()):
            subtrie = entry.lazy.get("trie")
            found = known.get(id(entry))
            if found is None or found[1] is not entry or found[2] is not subtrie:
                size = 0
                if entry.derived_reach is None:  # (else its classes are its partner's)
                    size = entry.inside.nbytes + entry.group_masks.nbytes
                    if subtrie is not None:
                        size += sum(a.nbytes for a in (subtrie.node_byte, subtrie.node_depth, subtrie.subtree_end,
                                                       subtrie.token_start, subtrie.token_ids))
                found = (size, entry, subtrie)
            sizes[id(entry)] = found  # (shared keys: once)
        self._context_bytes = sizes
        return total + sum(found[0] for found in sizes.values())

    def save(self, path: "str | Path") -> None:
        """Write every lexical context computed so far to ``path`` (a .npz file, see
        :mod:`.disk_cache`)."""
        save_contexts(path, self.contexts.snapshot(), self.tables, self.vocabulary, self.width)

    def load(self, path: "str | Path") -> int:
        """Add the contexts saved in ``path``; returns how many. A file for another grammar,
        vocabulary or format is ignored with a warning (and 0 is returned)."""
        loaded = load_contexts(path, self.tables, self.vocabulary, self.width)
        self.contexts.add(loaded)
        return len(loaded)

    def walk(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray, trie: TokenTrie | None = None,
             zeroed: bool = False) -> None:
        """OR into ``row`` every token of ``trie`` (default: the vocabulary) allowed after
        ``hyps``; ``zeroed``: ``row`` is all zeros, so the walk may write it directly."""
        trie = trie if trie is not None else self.trie
        scratch = row if zeroed else np.zeros_like(row)
        rows = max(INITIAL_HYPOTHESES, parser.rows)
        while True:
            if self._version != self.tables.version:
                self._bind()
            status = walk_trie_grammar(*self._args, parser.pool.arrays(), hyps, trie.arrays, trie.roots, trie.max_depth,
                                       rows, scratch)
            if status == OK:
                if scratch is not row:
                    row |= scratch
                return
            if status == HYPOTHESES_FULL:
                rows *= 2
            elif status == SHADOWS_FULL:
                hyps = widen(hyps)
            else:
                parser.pool.grow(status)
            scratch[:] = 0

    def fill(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray) -> None:
        """Write into ``row`` (uint32 words) the non-EOS tokens allowed after ``hyps``."""
        if self._version != self.tables.version:
            self._bind()
        if self._lengths is not None:
            filters = [self._lengths.allowed(hyp) for hyp in hyps]
            if any(f is not None for f in filters):
                self._fill_counted(parser, hyps, row, filters)
                return
        self._fill_unbounded(parser, hyps, row)

    def _fill_unbounded(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray) -> None:
        """``fill`` without length filters (see :mod:`.counted_strings`)."""
        known = None
        if hyps.shape[0] == 1 and hyps.shape[1] == HYPOTHESIS_FIELDS:
            # The common case: one hypothesis whose lexeme cannot end here, seen before by
            # this parser (stack nodes are immutable, so the whole row is its key), or whose
            # stack-dependent part depended on the top of the stack only.
            fields = tuple(hyps.tolist()[0])
            hit = parser.pool.memo.get(fields)
            if hit is None:
                state = int(parser.pool.state[fields[STACK]])
                known = (fields, state)  # (for _fill_hypothesis: read once)
                if self._newline < 0 and not self._accepting_any[fields[LEXEME]]:
                    hit = self._by_top.get((state,) + fields[LEXEME:SHADOW2_PARSER + 1])
            if hit is not None:
                write_part(hit[0], hit[1], row, True)
                return
        mark = parser.pool.used
        try:
            if known is not None:
                self._fill_hypothesis(parser, hyps, row, True, known)
            else:
                for h in range(hyps.shape[0]):
                    self._fill_hypothesis(parser, hyps[h:h + 1], row, overwrite=h == 0)
        finally:
            if parser.pool.used != mark:
                parser.truncate(mark)

    def _fill_counted(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray, filters) -> None:
        """``fill`` where a counted string is near a bound: each such hypothesis's mask as if
        its string had no bounds (count -1: not checked), narrowed by its length filter."""
        part = np.empty_like(row)
        for h, allowed in enumerate(filters):
            hyp = hyps[h:h + 1]
            if allowed is not None and not self._is_start[hyp[0, LEXEME]]:
                hyp = hyp.copy()
                hyp[0, COLUMN] = -1
            self._fill_unbounded(parser, hyp, part)
            if allowed is not None:
                part &= allowed
            if h == 0:
                np.copyto(row, part)
            else:
                row |= part

    def _fill_hypothesis(self, parser: IncrementalParser, hyp: np.ndarray, row: np.ndarray,
                         overwrite: bool = False, known: "tuple | None" = None) -> None:
        """OR this hypothesis's allowed tokens into ``row`` (or overwrite ``row`` with them).
        ``known``: (its row as a tuple, its stack's top state), where the caller read them."""
        if self._version != self.tables.version:
            self._bind()
        tables = self.tables
        if known is not None:
            fields, state = known
        else:
            fields = hyp[0].tolist()
            if len(fields) > HYPOTHESIS_FIELDS and fields[HYPOTHESIS_FIELDS] >= 0:
                # More than two shadows: rare enough that the exact walk beats a context of its own.
                if overwrite:
                    row[:] = 0
                self.walk(parser, hyp, row)
                return
            state = int(parser.pool.state[fields[STACK]])
        q = fields[LEXEME]
        if self.contexts.walk_first(fields, state):
            if overwrite:
                row[:] = 0
                self._walk_first_visit(parser, hyp, row, fields, state)
            else:
                self.walk(parser, hyp, row)
            return
        entry = self.contexts.of(fields, state, hyp[0])
        part, depth = self.stack_parts.part(parser, hyp, entry, fields, self.walk)
        if part is None:  # a derived context this stack tells apart from its partner
            entry = self.contexts.classified(fields, state, hyp[0])
            part, depth = self.stack_parts.part(parser, hyp, entry, fields, self.walk)
        write_part(entry, part, row, overwrite)
        accepting = not self._is_start[q] and self._accepting_any[q]
        if not accepting:
            if depth == 0:
                self._keep_by_top(state, fields, (entry, part))
            pool = parser.pool
            node = max(fields[STACK], fields[BLOCKS])
            if overwrite and node < pool.used and len(pool.memo) < MEMO_ENTRIES:
                pool.memo[tuple(fields)] = (entry, part)
                pool.memo_top = max(pool.memo_top, node)
        else:
            ended = self._lexeme_ended(parser, hyp[0], state, tables.candidate_bits[state])
            if ended is None:
                self.walk(parser, hyp, row)
            elif ended.shape[0] > 1:  # a generalized parser forked: one hypothesis per stack
                for k in range(ended.shape[0]):
                    self._fill_hypothesis(parser, ended[k:k + 1], row)
            elif ended.shape[0]:
                allowed = self._lengths.allowed(ended[0]) if self._lengths is not None else None
                if allowed is not None:  # the next lexeme may be a counted string
                    part = np.empty_like(row)
                    self._fill_hypothesis(parser, ended, part, overwrite=True)
                    row |= part & allowed
                else:
                    self._fill_hypothesis(parser, ended, row)

    def _walk_first_visit(self, parser: IncrementalParser, hyp: np.ndarray, row: np.ndarray, fields: list[int],
                          state: int) -> None:
        """Write into ``row`` (zeros) the exact walk of a narrow context met for the first time
        (see ``LexicalContexts.walk_first``), and keep it where the walk read no more of the
        stack than its top state, as a classified context's part is kept: the same context on
        another stack with that top (the next object of the same kind) is then a lookup, not
        a classification."""
        pool = parser.pool
        pool.exposed[0] = SCRATCH_BASE
        self.walk(parser, hyp, row, zeroed=True)
        if not self._accepting_any[fields[LEXEME]] and pool.depth_of(fields[STACK], int(pool.exposed[0])) == 0:
            self._keep_by_top(state, fields, (None, ([], *sparse_words(row), None)))

    def _keep_by_top(self, state: int, fields: list[int], hit: tuple) -> None:
        """Keep ``hit`` (a context and its part) for the hypothesis ``fields`` on any stack whose
        top is parser state ``state``: ``_fill_unbounded``'s fast path. (Not where a layout's
        brackets and blocks, which the key leaves out, decide masks too.)"""
        if self._newline < 0 and len(self._by_top) < STACK_CACHE_ENTRIES:
            self._by_top[(state,) + tuple(fields[LEXEME:SHADOW2_PARSER + 1])] = hit

    def _goes_on(self, q: int) -> bool:
        """Can the lexeme at lexer state ``q`` go on (some byte keeps it alive)?"""
        found = self._continues.get(q)
        if found is None:
            found = self._continues[q] = bool((self.tables.lexer.transitions[q] >= 0).any())
        return found

    def _lexeme_ended(self, parser: IncrementalParser, hyp: np.ndarray, state: int, cand: np.ndarray):
        """The hypothesis "the current lexeme ends before the next byte", as a 1-row array
        (a row per stack where a generalized parser forks); an empty array if the parser
        rejects it; None if it needs more than two shadows."""
        tables = self.tables
        lexer = tables.lexer
        q = int(hyp[LEXEME])
        common = lexer.accept_bits[q] & cand
        winner = lowest_common_bit(common, common)
        if winner < 0:
            return np.empty((0, hyp.shape[0]), dtype=np.int32)
        pool = parser.pool
        end_effects = tables.end_effects
        kept = [(int(hyp[SHADOW1]), int(hyp[SHADOW1_PARSER])), (int(hyp[SHADOW2]), int(hyp[SHADOW2_PARSER]))]
        readings = []  # (stack, its shadows)
        # Lexed every way, each terminal that accepts the lexeme is a reading of its own.
        winners = bit_indexes(common) if self._every_split else [winner]
        brackets, blocks = int(hyp[BRACKETS]), int(hyp[BLOCKS])
        for winner in winners:
            shadows = list(kept)
            if self._every_split:
                own = int(end_effects[winner, OWN_LONGEST])
                if own >= 0 and self._goes_on(q) and winner in bit_indexes(lexer.alive_bits[q]):
                    shadows.append((q, own))  # its own longer match must never come
            elif self._goes_on(q):
                shadows.append((q, state))
            lookahead = int(end_effects[winner, LOOKAHEAD_STATE])
            if lookahead >= 0:  # the lookahead past the lexeme, from the start of its pseudo state
                shadows.append((self.contexts.candidate_id[lookahead], lookahead))
            shadows = [s for s in shadows if s[0] >= 0]
            node, brackets, blocks, alloc, _ = pool.until_it_fits(lambda arrays: end_lexeme(
                tables.lr_arrays, tables.term_column, tables.layout, end_effects, arrays, int(hyp[STACK]), winner,
                int(hyp[BRACKETS]), int(hyp[COLUMN]), int(hyp[BLOCKS]), False, pool.used))
            pool.used = int(alloc)
            if node == FORKED:
                tops, count, alloc, _ = pool.until_it_fits(lambda arrays: feed_all(
                    tables.lr_arrays, arrays, int(hyp[STACK]), int(tables.term_column[winner]), False, pool.used))
                pool.used = int(alloc)
                nodes = tops[:count].tolist()
            else:
                nodes = [node]
            readings.extend((n, shadows) for n in nodes if n >= 0)
        if not readings:
            return np.empty((0, hyp.shape[0]), dtype=np.int32)
        if any(len(shadows) > 2 for _, shadows in readings):
            return None
        ended = np.full((len(readings), hyp.shape[0]), -1, dtype=np.int32)
        self.contexts.bind()  # lazy tables may have built the states the stacks landed in
        after_word = int(end_effects[winner, ENDS_IN_WORD])  # the start of its candidate set:
        for row, (node, shadows) in zip(ended, readings):
            row[STACK] = node
            row[LEXEME] = self.contexts.candidate_id[int(pool.state[node]) + self.contexts.half * after_word]
            row[BRACKETS] = brackets
            row[COLUMN] = 0
            row[BLOCKS] = blocks
            for k, (s, p) in enumerate(shadows):
                row[SHADOW1 + 2 * k] = s
                row[SHADOW1_PARSER + 2 * k] = p
        return ended
