"""Token masks for context-free grammars, shared by every matcher of a compiled grammar.

The mask of a parser hypothesis (stack, lexer state, shadows) is assembled from parts
that are cached per *lexical context* — lexer state, candidate terminals, shadows — and so
shared by every stack that reaches that context:

* the *inside* tokens, which only extend the current lexeme: allowed as a block whenever
  the stack can shift every candidate terminal (the usual case; otherwise the exact trie
  walk decides);
* the *dependent* tokens, inside which the lexeme could end: a small sub-trie that the
  exact walk (:func:`.grammar_walk.walk_trie_grammar`) checks against the real stack;
* when the lexeme can end right here, before the token, the hypothesis "it ended" is
  added and its mask is assembled the same way.

Entries are computed on first use (a numba walk over the whole vocabulary trie) and kept
for the life of the compiled grammar; access is thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..grammar.parser import (LEXEME, OK, SHADOW1, SHADOW1_PARSER, SHADOW2, SHADOW2_PARSER, STACK,
                              IncrementalParser, ParserTables, feed_terminal, viable_terminals)
from .bitmask import bitmask_width
from .grammar_walk import classify_tokens, walk_trie_grammar
from .trie import TokenTrie
from .vocabulary import Vocabulary


@dataclass(frozen=True, eq=False)
class _ContextMasks:
    inside: np.ndarray  # uint32 bitmask words
    dependent: TokenTrie | None  # sub-trie of the dependent tokens


class GrammarMaskStore:
    """Exact token masks for the states of an :class:`IncrementalParser`."""

    def __init__(self, tables: ParserTables, vocabulary: Vocabulary, trie: TokenTrie):
        self.tables = tables
        self.vocabulary = vocabulary
        self.trie = trie
        self.width = bitmask_width(vocabulary.size)
        self._args = tables.kernel_args()
        self._contexts: dict[tuple[int, ...], _ContextMasks] = {}
        self._lock = threading.Lock()
        lexer = tables.lexer
        self._accepting_any = np.any(lexer.accept_bits != 0, axis=1)
        self._can_continue = np.any(lexer.transitions >= 0, axis=1)

    @property
    def num_contexts(self) -> int:
        return len(self._contexts)

    @property
    def memory_bytes(self) -> int:
        t = self.tables
        total = int(t.reach_bits.nbytes + t.reach_done.nbytes + t.lexer.transitions.nbytes
                    + t.table.action.nbytes + t.table.goto.nbytes)
        for entry in list(self._contexts.values()):
            total += entry.inside.nbytes
            if entry.dependent is not None:
                total += sum(a.nbytes for a in (entry.dependent.node_byte, entry.dependent.node_depth,
                                                entry.dependent.subtree_end, entry.dependent.token_start,
                                                entry.dependent.token_ids))
        return total

    # -- the exact reference path -------------------------------------------------------

    def walk(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray, trie: TokenTrie | None = None) -> None:
        """OR into ``row`` every token of ``trie`` (default: the vocabulary) allowed after ``hyps``."""
        trie = trie if trie is not None else self.trie
        scratch = np.zeros_like(row)
        while True:
            status = walk_trie_grammar(*self._args, *parser.pool.arrays(), hyps, trie.node_byte,
                                       trie.node_depth, trie.subtree_end, trie.token_start,
                                       trie.token_ids, trie.max_depth, scratch)
            if status == OK:
                row |= scratch
                return
            parser.pool.grow(status)
            scratch[:] = 0

    # -- the cached path ----------------------------------------------------------------

    def fill(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray) -> None:
        """Write into ``row`` (uint32 words) the non-EOS tokens allowed after ``hyps``."""
        row[:] = 0
        mark = parser.pool.used
        try:
            for h in range(hyps.shape[0]):
                self._fill_hypothesis(parser, hyps[h:h + 1], row)
        finally:
            parser.truncate(mark)

    def _fill_hypothesis(self, parser: IncrementalParser, hyp: np.ndarray, row: np.ndarray) -> None:
        tables = self.tables
        pool = parser.pool
        node = int(hyp[0, STACK])
        q = int(hyp[0, LEXEME])
        state = int(pool.state[node])
        cand = tables.candidate_bits[state]
        usable = np.empty_like(cand)
        status = viable_terminals(*self._args[4:10], *pool.arrays(), node, 0, usable)
        if status != OK or np.any(cand & ~usable):
            self.walk(parser, hyp, row)  # some candidate errors after reductions: no shortcut
            return
        entry = self._context(hyp[0], state)
        row |= entry.inside
        if entry.dependent is not None:
            self.walk(parser, hyp, row, entry.dependent)
        if q != tables.lexer.initial and self._accepting_any[q]:
            ended = self._lexeme_ended(parser, hyp[0], state, cand)
            if ended is not None:
                if ended.shape[0]:
                    self._fill_hypothesis(parser, ended, row)
            else:
                self.walk(parser, hyp, row)

    def _lexeme_ended(self, parser: IncrementalParser, hyp: np.ndarray, state: int, cand: np.ndarray):
        """The hypothesis "the current lexeme ends before the next byte", as a 1-row array;
        an empty array if the parser rejects it; None if it needs more than two shadows."""
        tables = self.tables
        lexer = tables.lexer
        q = int(hyp[LEXEME])
        common = lexer.accept_bits[q] & cand
        winner = _lowest_bit(common)
        if winner < 0:
            return np.empty((0, hyp.shape[0]), dtype=np.int32)
        node = int(hyp[STACK])
        column = int(tables.term_column[winner])
        if column >= 0:
            pool = parser.pool
            while True:
                new_node, alloc, status = feed_terminal(*self._args[4:8], *pool.arrays(), node, column,
                                                        False, pool.used)
                if status == OK:
                    break
                pool.grow(status)
            if new_node < 0:
                return np.empty((0, hyp.shape[0]), dtype=np.int32)
            pool.used = int(alloc)
            node = int(new_node)
        shadows = [(int(hyp[SHADOW1]), int(hyp[SHADOW1_PARSER])), (int(hyp[SHADOW2]), int(hyp[SHADOW2_PARSER]))]
        if self._can_continue[q]:
            shadows.append((q, state))
        shadows = [s for s in shadows if s[0] >= 0]
        if len(shadows) > 2:
            return None
        ended = np.full((1, hyp.shape[0]), -1, dtype=np.int32)
        ended[0, STACK] = node
        ended[0, LEXEME] = lexer.initial
        for k, (s, p) in enumerate(shadows):
            ended[0, SHADOW1 + 2 * k] = s
            ended[0, SHADOW1_PARSER + 2 * k] = p
        return ended

    def _context(self, hyp: np.ndarray, state: int) -> _ContextMasks:
        tables = self.tables
        cid = tables.candidate_id
        key = (int(hyp[LEXEME]), int(cid[state]),
               int(hyp[SHADOW1]), int(cid[hyp[SHADOW1_PARSER]]) if hyp[SHADOW1] >= 0 else -1,
               int(hyp[SHADOW2]), int(cid[hyp[SHADOW2_PARSER]]) if hyp[SHADOW2] >= 0 else -1)
        entry = self._contexts.get(key)
        if entry is None:
            entry = self._build_context(key, state, hyp)
            with self._lock:
                entry = self._contexts.setdefault(key, entry)
        return entry

    def _build_context(self, key, state: int, hyp: np.ndarray) -> _ContextMasks:
        tables = self.tables
        lexer = tables.lexer
        shadow_states = np.array([s for s in (hyp[SHADOW1], hyp[SHADOW2]) if s >= 0], dtype=np.int32)
        shadow_cands = np.array([tables.candidate_bits[p] for s, p in ((hyp[SHADOW1], hyp[SHADOW1_PARSER]),
                                                                      (hyp[SHADOW2], hyp[SHADOW2_PARSER])) if s >= 0],
                                dtype=np.uint64).reshape(len(shadow_states), lexer.words)
        inside = np.zeros(self.width, dtype=np.uint32)
        dependent = np.zeros(self.vocabulary.size, dtype=np.uint8)
        trie = self.trie
        classify_tokens(lexer.transitions, lexer.accept_bits, lexer.alive_bits, np.int32(lexer.initial),
                        tables.term_column, tables.candidate_bits[state], shadow_states, shadow_cands,
                        np.int32(key[0]),
                        trie.node_byte, trie.node_depth, trie.subtree_end, trie.token_start, trie.token_ids,
                        trie.max_depth, inside, dependent)
        ids = np.flatnonzero(dependent).astype(np.int32)
        subtrie = TokenTrie.from_tokens(self.vocabulary.token_bytes, ids) if ids.size else None
        return _ContextMasks(inside, subtrie)


def _lowest_bit(bits: np.ndarray) -> int:
    for w, word in enumerate(bits.tolist()):
        if word:
            return w * 64 + ((word & -word).bit_length() - 1)
    return -1
