"""What the stack decides of a context's mask, cached under the part of the stack it read.

A context's inside groups are allowed when the stack can shift one of the terminals their
lexemes can become, and its dependent tokens are checked by the exact walk against the
real stack (:func:`.trie_walk.walk_trie_grammar`). The result (which groups, which
dependent tokens as sparse mask words, and while memory lasts the finished row) is cached
on the context under the parser states of the top of the stack that the computation
actually read (see :class:`~gramalign.parsing.stacks.StackPool`), so a hit is provably the
same answer.
"""

from __future__ import annotations

import threading

import numpy as np

from ...grammar.parser_tables import EVERY_SPLIT, NEWLINE_TERMINAL, ParserTables
from ...jit import kernel
from ...parsing import IncrementalParser
from ...parsing.state import BLOCKS, BRACKETS, COLUMN, SCRATCH_BASE, STACK
from ...tokens.trie import TokenTrie
from .contexts import ContextMasks
from .trie_walk import stack_shifts_each

STACK_CACHE_ENTRIES = 50_000
"""Cached stack-dependent walk results per compiled grammar (more are computed, not kept)."""

WHOLE_ROW_BYTES = 32 << 20
"""Memory per compiled grammar for finished mask rows of cached stack-dependent results."""

_MISSING = object()
_NO_WORDS = np.zeros(0, dtype=np.int64)
_NO_BITS = np.zeros(0, dtype=np.uint32)
_NO_WORDS.flags.writeable = _NO_BITS.flags.writeable = False


class StackParts:
    """The stack-dependent parts of one grammar's masks (see the module docstring)."""

    def __init__(self, tables: ParserTables, trie: TokenTrie, width: int):
        self.tables = tables
        self.trie = trie
        self.width = width
        self._newline = int(tables.layout[NEWLINE_TERMINAL])
        self._every_split = bool(tables.layout[EVERY_SPLIT] == 1)
        self._cached = 0
        self.bytes = 0  # of the parts cached so far (what memory_bytes counts, kept as they come)
        self._whole_rows_left = WHOLE_ROW_BYTES // (4 * width)
        self._lock = threading.Lock()

    def part(self, parser: IncrementalParser, hyp: np.ndarray, entry: ContextMasks, fields: list[int], walk):
        """((inside groups allowed or None for all, word indexes and bits of the dependent
        tokens allowed, the whole row or None), depth) on this stack, or (None, 0) where
        ``entry`` is derived and this stack needs its real classes. Cached by the top of
        the stack the computation looked at: ``depth + 1`` nodes of it. ``walk(parser, hyps,
        row, trie, zeroed=)`` is the exact walk (``GrammarMaskStore.walk``), passed per call:
        kept here, it would tie the store into a reference cycle that only the cyclic
        garbage collector frees."""
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
        tables = self.tables  # its arrays read at each try: lazy tables grow where a stack lands
        pool.until_it_fits(lambda arrays: stack_shifts_each(tables.lr_arrays, tables.term_column, arrays, node, free,
                                                            entry.group_reach, allowed))
        if entry.derived_reach is not None and not allowed.all():
            return None, 0  # a derived context's groups are exact only where all are allowed
        groups = None if allowed.all() else np.flatnonzero(allowed).tolist()
        subtrie = entry.dependent(self.trie)
        if groups is not None and self._every_split:
            # Lexed every way, a token of a group the stack refuses may still split into
            # lexemes the stack takes: the exact walk decides every token here.
            groups, subtrie = [], self.trie
        if subtrie is not None:
            words = np.zeros(self.width, dtype=np.uint32)
            walk(parser, hyp, words, subtrie, zeroed=True)
            nonzero, bits = sparse_words(words)
        else:
            nonzero, bits = _NO_WORDS, _NO_BITS
        whole = None
        if nonzero.size and self._whole_rows_left > 0 and self._cached < STACK_CACHE_ENTRIES:
            self._whole_rows_left -= 1  # one copy beats assembling the row each time
            whole = words
            if groups is None:
                whole |= entry.inside
            else:
                for g in groups:
                    whole |= entry.group_masks[g]
        part = (groups, nonzero, bits, whole)
        depth = pool.depth_of(node, int(pool.exposed[0]))
        if depth >= 0 and self._cached < STACK_CACHE_ENTRIES:  # (-1: read across a merged node)
            with self._lock:
                by_depth = entry.by_stack.setdefault(layout_key, {})
                by_depth.setdefault(depth, {})[pool.depth_signature(node, depth)] = part
                self._cached += 1
                self.bytes += 64 + nonzero.nbytes + bits.nbytes + (whole.nbytes if whole is not None else 0)
        return part, depth


def write_part(entry: ContextMasks, part, row: np.ndarray, overwrite: bool) -> None:
    """Write (or OR) into ``row`` the tokens of ``entry`` that the stack part ``part`` allows."""
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


@kernel
def sparse_words(row):
    """(indexes of the nonzero words of ``row``, those words): ``or_sparse_words``' input,
    without numpy's flatnonzero and fancy-indexing overhead on a short list."""
    count = 0
    for k in range(row.shape[0]):  # (without a branch: the loop vectorizes)
        count += row[k] != 0
    words = np.empty(count, np.int64)
    bits = np.empty(count, row.dtype)
    j = 0
    k = 0
    while j < count:  # up to the last nonzero word only
        if row[k]:
            words[j] = k
            bits[j] = row[k]
            j += 1
        k += 1
    return words, bits


@kernel
def or_sparse_words(row, words, bits):
    """``row[words] |= bits`` without numpy's fancy-indexing overhead."""
    for k in range(words.shape[0]):
        row[words[k]] |= bits[k]
