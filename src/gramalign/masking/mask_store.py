"""Token masks for context-free grammars, shared by every matcher of a compiled grammar.

The mask of a parser hypothesis (stack, lexer state, shadows) is assembled from parts
that are cached per *lexical context* — lexer state, candidate terminals, shadows — and so
shared by every stack that reaches that context:

* the *inside* tokens, which extend the current lexeme (possibly across ignored lexemes
  such as whitespace) without ending a parser-visible one: grouped by the terminals their
  lexemes can still become, each group allowed as a block when the stack can shift one of
  them;
* the *dependent* tokens, inside which a parser-visible lexeme could end: a sub-trie that
  the exact walk (:func:`.grammar_walk.walk_trie_grammar`) checks against the real stack;
* when the lexeme can end right here, before the token, the hypothesis "it ended" is
  added and its mask is assembled the same way.

The stack-dependent parts (which groups, which dependent tokens) are cached too, under the
parser states of the top of the stack that computing them actually read (see
:class:`~gramalign.parsing.stacks.StackPool`), so a hit is provably the same answer.
Entries are computed on first use (a numba walk over the vocabulary trie, sparse in what
it writes) and kept for the life of the compiled grammar; access is thread-safe. Where a
context reads any text as one lexeme (string bodies, keys), short plain-text tokens are
taken as precomputed blocks instead of being walked (:mod:`.token_slices`). A walk
that goes on past a few thousand trie nodes is looked up first in, and then added to, the
cross-grammar cache of :mod:`.context_cache`, keyed by an exact signature of what the walk
reads from the lexer.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from pathlib import Path
from dataclasses import dataclass, field

import numpy as np

from ..bitsets import lowest_common_bit
from ..grammar.parser_tables import NEWLINE_TERMINAL, ParserTables
from ..parsing import IncrementalParser
from ..parsing.hypotheses import end_lexeme
from ..parsing.state import (BLOCKS, BRACKETS, COLUMN, HYPOTHESES_FULL, HYPOTHESIS_FIELDS, INITIAL_HYPOTHESES,
                             LEXEME, OK, SCRATCH_BASE, SHADOW1, SHADOW1_PARSER, SHADOW2, SHADOW2_PARSER,
                             SHADOWS_FULL, STACK, widen)
from .bitmask import bitmask_width
from .counted_strings import LengthFilter
from .context_cache import (MAX_SIGNATURE_STATES, ContextClassificationCache, SharedClassification,
                            context_signature, remap_terminal_bits, shared_cache_for,
                            warm_kernels)
from .grammar_walk import classify_tokens, group_rows, stack_shifts_each, walk_trie_grammar
from .kernels import or_sparse_words, sparse_words
from .token_slices import LEVELS, TextSlices, admits_text, clear_first_bytes, step_bytes, text_coverage, text_slices_for
from ..tokens.trie import TokenTrie
from ..tokens.vocabulary import Vocabulary


@dataclass(frozen=True, eq=False)
class _ContextMasks:
    inside: np.ndarray  # uint32 bitmask words: every inside token
    group_reach: np.ndarray  # uint64 [groups, terminal words]: what each group's lexemes can become
    group_masks: np.ndarray  # uint32 [groups, mask words]: the inside tokens of each group
    dependent_ids: np.ndarray  # int32: the dependent tokens (their sub-trie is built on first use)
    # Stack-dependent results, by layout and by how deep into the stack their computation
    # looked: {layout key: {depth: {parser states of the top depth + 1 nodes: (groups,
    # words, bits, whole)}}}, where the layout key is None without an indentation layout,
    # else (bracket depth, newline column, columns of the open blocks), groups lists the
    # inside groups the stack allows (None: all of them), (words, bits) are the allowed
    # dependent tokens as sparse mask words and whole is the finished row (or None).
    by_stack: dict = field(default_factory=dict)
    lazy: dict = field(default_factory=dict)

    def dependent(self, trie: TokenTrie) -> TokenTrie | None:
        """The sub-trie of the dependent tokens of the vocabulary trie ``trie``."""
        if "trie" not in self.lazy:
            if self.dependent_ids.size:
                keep = np.zeros(int(trie.token_ids.max()) + 1, dtype=np.uint8)
                keep[self.dependent_ids] = 1
                self.lazy["trie"] = trie.subset(keep)
            else:
                self.lazy["trie"] = None
        return self.lazy["trie"]


MAX_INSIDE_GROUPS = 16
"""Kinds of lexeme endings per context kept as precomputed masks; rarer tokens go to the walk."""

STACK_CACHE_ENTRIES = 50_000
"""Cached stack-dependent walk results per compiled grammar (more are computed, not kept)."""

SHARE_AFTER_NODES = 4096
"""Trie nodes a context's classification may visit before it is looked up in (and, when
missing, added to) the cross-grammar cache of :mod:`.context_cache`."""

UNSIGNED_TRIES = 2
"""Signatures that come out too large under one candidate set before no more are tried there."""

MEMO_ENTRIES = 4096
"""Rows remembered per parser (matcher) by exact hypothesis, see ``StackPool.memo``."""

WHOLE_ROW_BYTES = 32 << 20
"""Memory per compiled grammar for finished mask rows of cached stack-dependent results."""


class GrammarMaskStore:
    """Exact token masks for the states of an :class:`IncrementalParser`."""

    def __init__(self, tables: ParserTables, vocabulary: Vocabulary, trie: TokenTrie,
                 shared: "ContextClassificationCache | None | bool" = True, text_blocks: bool = True):
        """``shared``: the cross-grammar cache of context classifications to use (True: the
        process-wide one of ``trie``; None or False: classify every context here).
        ``text_blocks``: take plain-text tokens as blocks where a context admits any text
        (see :mod:`.token_slices`); False walks every token (a reference for tests)."""
        self.tables = tables
        self.vocabulary = vocabulary
        self.trie = trie
        self.width = bitmask_width(vocabulary.size)
        self._args = tables.kernel_args()
        self._contexts: dict[tuple[int, ...], _ContextMasks] = {}
        if shared is True:
            shared = shared_cache_for(trie)
        self.shared = None if shared is None or shared is False else shared
        if self.shared is not None:
            warm_kernels()
        self._slices = text_slices_for(trie, self.width) if text_blocks else None
        self._steps: dict = {}  # per alphabet, step_bytes of the lexer's byte classes, on first use
        self._unsigned: dict[int, int] = {}  # candidate set -> signatures that were too large
        self._scratch: list = []  # token position buffers for classify_tokens, one per concurrent build
        self._seen: list = []  # [scratch, last search number] for text_coverage, one per concurrent build
        self._cached_parts = 0
        self._lock = threading.Lock()
        lexer = tables.lexer
        self._accepting_any = tables.accepting
        self._can_continue = np.any(lexer.transitions >= 0, axis=1)
        self._starts = lexer.num_starts
        self._starts_any = np.any(lexer.transitions[:lexer.num_starts] >= 0, axis=0).astype(np.uint8)
        self._candidate_id = tables.candidate_id.tolist()
        self._newline = int(tables.layout[NEWLINE_TERMINAL])
        self._whole_rows_left = WHOLE_ROW_BYTES // (4 * self.width)
        # (top parser state, lexer state, shadows) -> (context, part) for parts computed
        # from the top of the stack alone: the fast path of fill().
        self._by_top: dict[tuple[int, ...], tuple[_ContextMasks, tuple]] = {}
        self._lengths = LengthFilter(tables, trie, vocabulary.size, self.width) if LengthFilter.needed(tables) else None
        self._twins = _counted_block_twins(tables)

    @property
    def num_contexts(self) -> int:
        return len(self._contexts)

    @property
    def memory_bytes(self) -> int:
        t = self.tables
        total = int(t.reach_bits.nbytes + t.reach_done.nbytes + t.lexer.transitions.nbytes
                    + t.table.action.nbytes + t.table.goto.nbytes)
        for entry in list(self._contexts.values()):
            total += entry.inside.nbytes + entry.group_masks.nbytes
            for by_depth in list(entry.by_stack.values()):
                for results in list(by_depth.values()):
                    total += sum(64 + words.nbytes * 2 + (whole.nbytes if whole is not None else 0)
                                 for _, words, _, whole in list(results.values()))
            subtrie = entry.lazy.get("trie")
            if subtrie is not None:
                total += sum(a.nbytes for a in (subtrie.node_byte, subtrie.node_depth, subtrie.subtree_end,
                                                subtrie.token_start, subtrie.token_ids))
        return total

    # -- the on-disk cache ---------------------------------------------------------------

    def save(self, path: "str | Path") -> None:
        """Write every lexical context computed so far to ``path`` (a .npz file)."""
        with self._lock:
            items = list(self._contexts.items())
        width, words = self.width, self.tables.lexer.words
        keys = np.array([key for key, _ in items], dtype=np.int64).reshape(len(items), 6)
        group_counts = np.array([e.group_masks.shape[0] for _, e in items], dtype=np.int64)
        dependent_ids = [e.dependent_ids for _, e in items]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp.npz")
        np.savez_compressed(
            temporary,
            format=np.array([CACHE_FORMAT]),
            grammar=np.array([grammar_hash(self.tables)]),
            vocabulary=np.array([self.vocabulary.fingerprint]),
            keys=keys,
            group_counts=group_counts,
            group_reach=np.concatenate([e.group_reach for _, e in items]) if items else np.zeros((0, words), np.uint64),
            group_masks=np.concatenate([e.group_masks for _, e in items]) if items else np.zeros((0, width), np.uint32),
            dependent_counts=np.array([ids.size for ids in dependent_ids], dtype=np.int64),
            dependent_ids=np.concatenate(dependent_ids) if items else np.zeros(0, np.int32),
        )
        temporary.replace(path)  # atomic: readers never see half a file

    def load(self, path: "str | Path") -> int:
        """Add the contexts saved in ``path``; returns how many. A file for another grammar,
        vocabulary or format is ignored with a warning (and 0 is returned)."""
        try:
            with np.load(path) as data:
                meta_ok = (int(data["format"][0]) == CACHE_FORMAT
                           and str(data["grammar"][0]) == grammar_hash(self.tables)
                           and str(data["vocabulary"][0]) == self.vocabulary.fingerprint)
                if not meta_ok:
                    warnings.warn(f"ignoring mask cache {path}: it was made for another grammar, "
                                  "vocabulary or gramalign version", stacklevel=2)
                    return 0
                arrays = {name: data[name] for name in ("keys", "group_counts", "group_reach", "group_masks",
                                                        "dependent_counts", "dependent_ids")}
        except (OSError, KeyError, ValueError) as exc:
            warnings.warn(f"ignoring unreadable mask cache {path}: {exc}", stacklevel=2)
            return 0
        group_ends = np.cumsum(arrays["group_counts"])
        dependent_ends = np.cumsum(arrays["dependent_counts"])
        loaded = {}
        for k, key in enumerate(arrays["keys"].tolist()):
            g0 = int(group_ends[k - 1]) if k else 0
            d0 = int(dependent_ends[k - 1]) if k else 0
            group_masks = arrays["group_masks"][g0:group_ends[k]]
            inside = (np.bitwise_or.reduce(group_masks, axis=0) if group_masks.shape[0]
                      else np.zeros(self.width, np.uint32))
            loaded[tuple(key)] = _ContextMasks(inside, arrays["group_reach"][g0:group_ends[k]], group_masks,
                                               arrays["dependent_ids"][d0:dependent_ends[k]].astype(np.int32))
        with self._lock:
            for key, entry in loaded.items():
                self._contexts.setdefault(key, entry)
        return len(loaded)

    # -- the exact reference path -------------------------------------------------------

    def walk(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray, trie: TokenTrie | None = None,
             zeroed: bool = False) -> None:
        """OR into ``row`` every token of ``trie`` (default: the vocabulary) allowed after
        ``hyps``; ``zeroed``: ``row`` is all zeros, so the walk may write it directly."""
        trie = trie if trie is not None else self.trie
        scratch = row if zeroed else np.zeros_like(row)
        rows = max(INITIAL_HYPOTHESES, parser.rows)
        while True:
            status = walk_trie_grammar(*self._args, *parser.pool.arrays(), hyps, trie.node_byte,
                                       trie.node_depth, trie.subtree_end, trie.token_start,
                                       trie.token_ids, trie.max_depth, rows, scratch)
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

    # -- the cached path ----------------------------------------------------------------

    def fill(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray) -> None:
        """Write into ``row`` (uint32 words) the non-EOS tokens allowed after ``hyps``."""
        if self._lengths is not None:
            filters = [self._lengths.allowed(hyp) for hyp in hyps]
            if any(f is not None for f in filters):
                self._fill_counted(parser, hyps, row, filters)
                return
        self._fill_unbounded(parser, hyps, row)

    def _fill_unbounded(self, parser: IncrementalParser, hyps: np.ndarray, row: np.ndarray) -> None:
        """``fill`` without length filters (see :mod:`.counted_strings`)."""
        if hyps.shape[0] == 1 and hyps.shape[1] == HYPOTHESIS_FIELDS:
            # The common case: one hypothesis whose lexeme cannot end here, seen before by
            # this parser (stack nodes are immutable, so the whole row is its key), or whose
            # stack-dependent part depended on the top of the stack only.
            fields = tuple(hyps.tolist()[0])
            hit = parser.pool.memo.get(fields)
            if hit is None and self._newline < 0 and not self._accepting_any[fields[LEXEME]]:
                hit = self._by_top.get((int(parser.pool.state[fields[STACK]]),) + fields[LEXEME:SHADOW2_PARSER + 1])
            if hit is not None:
                self._write(hit[0], hit[1], row, True)
                return
        mark = parser.pool.used
        try:
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
            if allowed is not None and hyp[0, LEXEME] >= self._starts:
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
                         overwrite: bool = False) -> None:
        """OR this hypothesis's allowed tokens into ``row`` (or overwrite ``row`` with them)."""
        tables = self.tables
        fields = hyp[0].tolist()
        if len(fields) > HYPOTHESIS_FIELDS and fields[HYPOTHESIS_FIELDS] >= 0:
            # More than two shadows: rare enough that the exact walk beats a context of its own.
            if overwrite:
                row[:] = 0
            self.walk(parser, hyp, row)
            return
        q = fields[LEXEME]
        state = int(parser.pool.state[fields[STACK]])
        entry = self._context(fields, state, hyp[0])
        part, depth = self._stack_part(parser, hyp, entry, fields)
        self._write(entry, part, row, overwrite)
        accepting = q >= self._starts and self._accepting_any[q]
        if not accepting:
            if depth == 0 and self._newline < 0 and len(self._by_top) < STACK_CACHE_ENTRIES:
                self._by_top[(state,) + tuple(fields[LEXEME:SHADOW2_PARSER + 1])] = (entry, part)
            pool = parser.pool
            node = max(fields[STACK], fields[BLOCKS])
            if overwrite and node < pool.used and len(pool.memo) < MEMO_ENTRIES:
                pool.memo[tuple(fields)] = (entry, part)
                pool.memo_top = max(pool.memo_top, node)
        else:
            ended = self._lexeme_ended(parser, hyp[0], state, tables.candidate_bits[state])
            if ended is not None:
                allowed = self._lengths.allowed(ended[0]) if self._lengths is not None and ended.shape[0] else None
                if allowed is not None:  # the next lexeme may be a counted string
                    part = np.empty_like(row)
                    self._fill_hypothesis(parser, ended, part, overwrite=True)
                    row |= part & allowed
                elif ended.shape[0]:
                    self._fill_hypothesis(parser, ended, row)
            else:
                self.walk(parser, hyp, row)

    @staticmethod
    def _write(entry: _ContextMasks, part, row: np.ndarray, overwrite: bool) -> None:
        groups, words, bits, whole = part
        if whole is not None:
            if overwrite:
                np.copyto(row, whole)
            else:
                np.bitwise_or(row, whole, out=row)
        else:
            if groups is None:
                if overwrite:
                    np.copyto(row, entry.inside)
                else:
                    np.bitwise_or(row, entry.inside, out=row)
            else:
                if overwrite:
                    row[:] = 0
                for g in groups:
                    np.bitwise_or(row, entry.group_masks[g], out=row)
            if words.size:
                or_sparse_words(row, words, bits)

    def _stack_part(self, parser: IncrementalParser, hyp: np.ndarray, entry: _ContextMasks, fields: list[int]):
        """((inside groups allowed or None for all, word indexes and bits of the dependent
        tokens allowed, the whole row or None), depth) on this stack. Cached by the top of
        the stack the computation looked at: ``depth + 1`` nodes of it."""
        pool = parser.pool
        node = fields[STACK]
        layout_key = None
        free = -1
        if self._newline >= 0:
            layout_key = (fields[BRACKETS], fields[COLUMN], pool.block_columns(fields[BLOCKS]))
            free = self._newline if fields[BRACKETS] > 0 else -1
        by_stack = entry.by_stack.get(layout_key)
        if by_stack:
            signature = pool.depth_signature(node, max(by_stack))
            for depth, results in list(by_stack.items()):
                found = results.get(signature[:depth + 1], _MISSING)
                if found is not _MISSING:
                    return found, depth
        pool.exposed[0] = SCRATCH_BASE
        allowed = np.empty(entry.group_reach.shape[0], dtype=np.bool_)
        t = self.tables
        pool.until_it_fits(lambda arrays: stack_shifts_each(t.table.action, t.table.goto, t.table.rule_lhs,
                                                            t.table.rule_len, t.term_column, *arrays, node, free,
                                                            entry.group_reach, allowed))
        groups = None if allowed.all() else np.flatnonzero(allowed).tolist()
        subtrie = entry.dependent(self.trie)
        if subtrie is not None:
            words = np.zeros(self.width, dtype=np.uint32)
            self.walk(parser, hyp, words, subtrie, zeroed=True)
            nonzero, bits = sparse_words(words)
        else:
            nonzero, bits = _NO_WORDS, _NO_BITS
        whole = None
        if nonzero.size and self._whole_rows_left > 0 and self._cached_parts < STACK_CACHE_ENTRIES:
            self._whole_rows_left -= 1  # one copy beats assembling the row each time
            whole = words
            if groups is None:
                whole |= entry.inside
            else:
                for g in groups:
                    whole |= entry.group_masks[g]
        part = (groups, nonzero, bits, whole)
        depth = pool.depth_of(node, int(pool.exposed[0]))
        if self._cached_parts < STACK_CACHE_ENTRIES:
            with self._lock:
                by_depth = entry.by_stack.setdefault(layout_key, {})
                by_depth.setdefault(depth, {})[pool.depth_signature(node, depth)] = part
                self._cached_parts += 1
        return part, depth

    def _lexeme_ended(self, parser: IncrementalParser, hyp: np.ndarray, state: int, cand: np.ndarray):
        """The hypothesis "the current lexeme ends before the next byte", as a 1-row array;
        an empty array if the parser rejects it; None if it needs more than two shadows."""
        tables = self.tables
        lexer = tables.lexer
        q = int(hyp[LEXEME])
        common = lexer.accept_bits[q] & cand
        winner = lowest_common_bit(common, common)
        if winner < 0:
            return np.empty((0, hyp.shape[0]), dtype=np.int32)
        pool = parser.pool
        node, brackets, blocks, alloc, _ = pool.until_it_fits(lambda arrays: end_lexeme(
            *tables.lr_arrays, tables.layout, tables.bracket_delta, *arrays, int(hyp[STACK]), winner,
            int(hyp[BRACKETS]), int(hyp[COLUMN]), int(hyp[BLOCKS]), False, pool.used))
        if node < 0:
            return np.empty((0, hyp.shape[0]), dtype=np.int32)
        pool.used = int(alloc)
        shadows = [(int(hyp[SHADOW1]), int(hyp[SHADOW1_PARSER])), (int(hyp[SHADOW2]), int(hyp[SHADOW2_PARSER]))]
        if self._can_continue[q]:
            shadows.append((q, state))
        shadows = [s for s in shadows if s[0] >= 0]
        if len(shadows) > 2:
            return None
        ended = np.full((1, hyp.shape[0]), -1, dtype=np.int32)
        ended[0, STACK] = node
        ended[0, LEXEME] = self._candidate_id[int(pool.state[node])]  # the start of its candidate set
        ended[0, BRACKETS] = brackets
        ended[0, COLUMN] = 0
        ended[0, BLOCKS] = blocks
        for k, (s, p) in enumerate(shadows):
            ended[0, SHADOW1 + 2 * k] = s
            ended[0, SHADOW1_PARSER + 2 * k] = p
        return ended

    def _context(self, fields: list[int], state: int, hyp: np.ndarray) -> _ContextMasks:
        cid = self._candidate_id
        shadow1, shadow2 = fields[SHADOW1], fields[SHADOW2]
        twin = self._twins.get(fields[LEXEME]) if self._twins else None
        if twin is not None and shadow1 < 0 and shadow2 < 0:
            return self._twin_context(twin, cid[state])
        key = (fields[LEXEME], cid[state],
               shadow1, cid[fields[SHADOW1_PARSER]] if shadow1 >= 0 else -1,
               shadow2, cid[fields[SHADOW2_PARSER]] if shadow2 >= 0 else -1)
        entry = self._contexts.get(key)
        if entry is None:
            entry = self._build_context(key, state, hyp)
            with self._lock:
                entry = self._contexts.setdefault(key, entry)
        return entry

    def _twin_context(self, twin: tuple[int, int, int], cid: int) -> _ContextMasks:
        """The context of a state of a counted string's block, shared by every counted string
        that spells the same automaton (a schema's strings of different length bounds are one
        automaton in as many blocks): classified once, in the first such block, where only
        that terminal is alive, so the others' contexts differ in their terminal bit alone."""
        canonical, first, terminal = twin
        key = (canonical, TWIN, terminal, -1, -1, -1)  # the shape of the other keys (saved to disk alike)
        entry = self._contexts.get(key)
        if entry is not None:
            return entry
        base = self._contexts.get((canonical, TWIN, first, -1, -1, -1))
        if base is None:
            base = self._classify((canonical, cid, -1, -1, -1, -1), self.tables.lexer.bits_of(
                [self.tables.lexer.terminals[first].name]), np.zeros(0, np.int32),
                np.zeros((0, self.tables.lexer.words), np.uint64), self.trie.num_nodes)
            with self._lock:
                base = self._contexts.setdefault((canonical, TWIN, first, -1, -1, -1), base)
        if terminal == first:
            return base
        reach = np.zeros_like(base.group_reach)
        has = (base.group_reach[:, first >> 6] >> np.uint64(first & 63)) & np.uint64(1)
        reach[:, terminal >> 6] = has << np.uint64(terminal & 63)
        entry = _ContextMasks(base.inside, reach, base.group_masks, base.dependent_ids)
        entry.lazy.update(base.lazy)
        with self._lock:
            return self._contexts.setdefault(key, entry)

    def _build_context(self, key, state: int, hyp: np.ndarray) -> _ContextMasks:
        tables = self.tables
        cid = self._candidate_id
        lexer = tables.lexer
        shadow_states = np.array([s for s in (hyp[SHADOW1], hyp[SHADOW2]) if s >= 0], dtype=np.int32)
        # The context is shared by every parser state that lexes from this start, so it is
        # classified for the terminals the start tracks (a superset of the state's own; the
        # stack decides the rest, see grammar/lexer_starts.py).
        starts = tables.start_bits
        shadow_cands = np.array([starts[cid[p]] for s, p in ((hyp[SHADOW1], hyp[SHADOW1_PARSER]),
                                                             (hyp[SHADOW2], hyp[SHADOW2_PARSER])) if s >= 0],
                                dtype=np.uint64).reshape(len(shadow_states), lexer.words)
        cand = starts[cid[state]]
        if self.shared is None:
            return self._classify(key, cand, shadow_states, shadow_cands, self.trie.num_nodes)
        # Most contexts admit few first bytes and classify in a few thousand trie nodes,
        # less than a signature costs; only the walks that go on past that are shared.
        entry = self._classify(key, cand, shadow_states, shadow_cands, SHARE_AFTER_NODES)
        if entry is not None:
            return entry
        # The walk gave up, so the context takes no text blocks (those walks never give up):
        # the full walks below need not look for them again.
        if self._unsigned.get(key[1], 0) < UNSIGNED_TRIES:
            signature, real_of = context_signature(lexer.transitions, lexer.accept_bits, lexer.alive_bits,
                                                   np.int64(key[1]), self._starts_any, tables.term_column, cand,
                                                   shadow_states, shadow_cands, np.int64(key[0]), lexer.byte_class,
                                                   lexer.class_byte, MAX_SIGNATURE_STATES)
        else:
            signature = _NO_SIGNATURE
        if not signature.size:  # too large a sub-automaton to be worth a signature
            # Lexemes of a large automaton (a format, a long bounded string) meet a new
            # state at every byte; after a few of them the search is not tried again under
            # these candidates: it costs more than the walk it could save.
            self._unsigned[key[1]] = self._unsigned.get(key[1], 0) + 1
            return self._classify(key, cand, shadow_states, shadow_cands, self.trie.num_nodes, text_blocks=False)
        signature = signature.tobytes()
        shared = self.shared.get(signature)
        if shared is not None:
            group_reach = remap_terminal_bits(shared.group_reach, real_of, lexer.words)
            entry = _ContextMasks(shared.inside, group_reach, shared.group_masks, shared.dependent_ids)
            entry.lazy["trie"] = shared.dependent_trie
            return entry
        entry = self._classify(key, cand, shadow_states, shadow_cands, self.trie.num_nodes, text_blocks=False)
        self._share(signature, real_of, entry)
        return entry

    def _classify(self, key, cand, shadow_states, shadow_cands, max_nodes: int,
                  text_blocks: bool = True) -> "_ContextMasks | None":
        """The context's masks by :func:`classify_tokens`, or None past ``max_nodes`` trie nodes.

        Where the context reads any text as one lexeme for a while (string bodies, object
        keys), the short text tokens are taken as blocks by first byte (see
        :mod:`.token_slices`) and only the other tokens are walked, whatever their number."""
        tables = self.tables
        lexer = tables.lexer
        cover = self._text_cover(key, cand) if text_blocks and not shadow_states.size else None
        if cover is None:
            walks = [(self.trie, _NO_SKIP)]
        else:
            covered, block, state_after = cover
            walks = [(self.trie, covered), (block.rest, 1 - covered)]
            max_nodes = self.trie.num_nodes
        group_reach = np.zeros((MAX_INSIDE_GROUPS, lexer.words), dtype=np.uint64)
        n_groups = 0
        pieces = []
        held = []  # scratch buffers in use, back to the free list at the end
        try:
            for trie, skip in walks:
                if trie is None:
                    continue
                try:
                    scratch = self._scratch.pop()
                except IndexError:  # none free (first build, another thread holds it, or a second walk)
                    scratch = (np.empty(self.trie.token_ids.shape[0], dtype=np.int32),
                               np.empty(self.trie.token_ids.shape[0], dtype=np.int32))
                held.append(scratch)
                positions, groups = scratch
                n_groups, n_written = classify_tokens(
                    lexer.transitions, lexer.accept_bits, lexer.alive_bits, np.int32(lexer.num_starts),
                    lexer.class_byte, self._starts_any, tables.term_column, cand, np.int32(key[1]), tables.reach_bits,
                    tables.reach_done, shadow_states, shadow_cands, np.int32(key[0]), trie.node_byte, trie.node_depth,
                    trie.subtree_end, trie.token_start, trie.token_ids, trie.max_depth, group_reach, np.int64(n_groups),
                    skip, positions, groups, max_nodes)
                if n_groups < 0:
                    return None
                pieces.append((trie, positions, groups, n_written))
            group_masks = inside = None
            dependent = []
            dependent_positions = None
            for trie, positions, groups, n_written in pieces:
                piece_masks, piece_inside, piece_dependent = group_rows(trie.token_ids, positions, groups, n_written,
                                                                        n_groups, self.width)
                if group_masks is None:
                    group_masks, inside, dependent_positions = piece_masks, piece_inside, piece_dependent
                else:
                    group_masks |= piece_masks
                    inside |= piece_inside
                dependent.append(trie.token_ids[piece_dependent])
        finally:
            self._scratch.extend(held)
        if group_masks is None:
            group_masks, inside = np.zeros((n_groups, self.width), np.uint32), np.zeros(self.width, np.uint32)
        dependent_ids = np.concatenate(dependent) if len(dependent) > 1 else (
            dependent[0] if dependent else np.zeros(0, np.int32))
        group_reach = group_reach[:n_groups].copy()
        if cover is not None:
            added = self._add_text_blocks(covered, block, state_after, key, group_reach, group_masks, inside)
            if added is None:  # more kinds of endings than group slots: walk every token
                return self._classify(key, cand, shadow_states, shadow_cands, max_nodes, text_blocks=False)
            group_reach, group_masks = added
            # The dependent tokens came from two tries: their sub-trie is cut from the whole one.
            dependent_positions = np.sort(self._slices[0].position_of[dependent_ids])
            dependent_ids = self.trie.token_ids[dependent_positions]
        elif dependent_positions is None:
            dependent_positions = np.zeros(0, dtype=np.int64)
        entry = _ContextMasks(inside, group_reach, group_masks, dependent_ids)
        entry.lazy["trie"] = self.trie.subset_positions(dependent_positions)
        return entry

    def _text_cover(self, key, cand):
        """(first bytes whose short text tokens go as blocks (uint8 [256]), the
        :class:`.TextBlock` of their level, the lexer state after each first byte), or None
        where no text is read far enough to be worth it. The alphabets are tried widest
        first: any text (string bodies, keys), then letters and digits (names, formats,
        patterns, where a space ends the lexeme)."""
        if self._slices is None:
            return None
        tables = self.tables
        lexer = tables.lexer
        for k, slices in enumerate(self._slices):
            if not admits_text(lexer.transitions, lexer.alive_bits, cand, np.int32(key[0]), slices.text):
                continue
            steps = self._steps.get(k)
            if steps is None:
                steps = self._steps[k] = step_bytes(lexer.byte_class, slices.text)
            try:
                seen = self._seen.pop()
            except IndexError:  # none free (first build, or another thread holds it)
                seen = [np.zeros((lexer.num_states, max(s.text.shape[0] for s in self._slices)), np.int32), 0]
            try:
                if seen[1] > 1 << 30:
                    seen[0][:] = 0
                    seen[1] = 0
                depth, state_after, seen[1] = text_coverage(
                    lexer.transitions, lexer.accept_bits, lexer.alive_bits, lexer.class_byte, cand, tables.reach_bits,
                    tables.reach_done, np.int32(key[0]), slices.text, *steps, LEVELS[-1], seen[0], np.int64(seen[1]))
            finally:
                self._seen.append(seen)
            # The level most text tokens can take (a few first bytes may admit longer texts,
            # e.g. four-byte characters under a length bound in characters).
            ascii_depth = depth[slices.ascii]
            level = TextSlices.level_for(int(np.sort(ascii_depth)[ascii_depth.size // 2]))
            if level:
                return (depth >= level).astype(np.uint8), slices.block(level), state_after
        return None

    def _add_text_blocks(self, covered, block, state_after, key, group_reach, group_masks, inside):
        """Add the text block's tokens of the covered first bytes to the inside groups (by
        the reachable winners after the first byte) and to ``inside`` (in place); returns the
        grown (group_reach, group_masks), or None if a group would be needed beyond the slots."""
        covered_bytes = np.flatnonzero(covered)
        in_block = np.diff(block.offsets) > 0
        reach_of = self.tables.reach_bits[state_after[covered_bytes]]
        if reach_of.shape[0] and (reach_of == reach_of[0]).all():  # one kind of ending after each byte: common
            kinds = [(reach_of[0], covered.astype(bool))]
        else:
            kinds = []
            for reach in np.unique(reach_of.view(f"V{reach_of.shape[1] * 8}")):
                reach = np.frombuffer(reach.tobytes(), dtype=np.uint64)
                same = np.zeros(256, dtype=bool)
                same[covered_bytes[np.all(reach_of == reach, axis=1)]] = True
                kinds.append((reach, same))
        for reach, same in kinds:
            row = block.row.copy()
            clear_first_bytes(row, block.ids, block.offsets, np.flatnonzero(in_block & ~same))
            matches = np.flatnonzero(np.all(group_reach == reach, axis=1))
            if matches.size:
                g = int(matches[0])
            elif group_reach.shape[0] < MAX_INSIDE_GROUPS:
                g = group_reach.shape[0]
                group_reach = np.concatenate([group_reach, reach[None, :]])
                group_masks = np.concatenate([group_masks, np.zeros((1, self.width), np.uint32)])
            else:
                return None
            group_masks[g] |= row
            inside |= row
        return group_reach, group_masks

    def _share(self, signature: bytes, real_of: np.ndarray, entry: _ContextMasks) -> None:
        """Put ``entry``'s classification into the cross-grammar cache, terminals renumbered
        canonically (the inverse of ``real_of``)."""
        canonical_of = np.full(self.tables.lexer.words * 64, -1, dtype=np.int32)
        canonical_of[real_of] = np.arange(real_of.size, dtype=np.int32)
        reach_terminals = np.flatnonzero(np.unpackbits(entry.group_reach.view(np.uint8), bitorder="little"))
        if np.any(canonical_of[reach_terminals % canonical_of.size] < 0):
            return  # cannot happen (reachable winners are winners of the signature's states); never guess
        canonical_reach = remap_terminal_bits(entry.group_reach, canonical_of, max(1, (real_of.size + 63) // 64))
        for array in (entry.inside, entry.group_masks, entry.dependent_ids):
            array.flags.writeable = False  # shared by every grammar of this vocabulary from now on
        self.shared.put(signature, SharedClassification(canonical_reach, entry.group_masks, entry.inside,
                                                        entry.dependent_ids, entry.lazy["trie"]))


_MISSING = object()
_NO_SKIP = np.zeros(256, dtype=np.uint8)
_NO_WORDS = np.zeros(0, dtype=np.int64)
_NO_BITS = np.zeros(0, dtype=np.uint32)
_NO_WORDS.flags.writeable = _NO_BITS.flags.writeable = False
_NO_SIGNATURE = np.zeros(0, dtype=np.int32)

CACHE_FORMAT = 4
"""Version of the on-disk mask cache layout; files of another version are ignored (2: one
lexer start per candidate set, so lexer states are numbered differently; 3: states of one
terminal numbered in its block, see grammar/lexer_kernels)."""


TWIN = -2
"""The candidate-set slot of a context key shared by counted strings (no start has that id)."""


def _counted_block_twins(tables: ParserTables) -> dict[int, tuple[int, int, int]]:
    """Lexer state -> (the same state in the first block of that automaton, its terminal,
    this state's terminal) for the blocks of counted strings (see ``_twin_context``)."""
    lexer = tables.lexer
    first_of: dict[bytes, int] = {}
    twins: dict[int, tuple[int, int, int]] = {}
    for k, terminal in enumerate(lexer.terminals):
        start = int(lexer.block_start[k]) if lexer.block_start.size else -1
        if terminal.length is None or start < 0:
            continue
        first = first_of.setdefault(terminal.dfa.digest, k)
        first_start = int(lexer.block_start[first])
        for local in range(terminal.dfa.num_states):
            twins[start + local] = (first_start + local, first, k)
    return twins


def grammar_hash(tables: ParserTables) -> str:
    """SHA-256 of everything about a grammar that its masks depend on."""
    grammar = tables.grammar
    digest = hashlib.sha256()
    digest.update(repr((CACHE_FORMAT, [(t.name, t.pattern, t.flags, t.priority, t.literal, t.length)
                                       for t in grammar.terminals],
                        [(r.name, r.alternatives, r.priority) for r in grammar.rules], grammar.start,
                        grammar.ignore, grammar.indentation, grammar.always_lexed)).encode("utf-8"))
    return digest.hexdigest()

