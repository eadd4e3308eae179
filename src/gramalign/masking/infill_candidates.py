"""A cheap per-position token filter for partially masked sequences (diffusion decoding).

:class:`InfillCandidates` says which tokens may stand at one masked position of a sequence
that :meth:`InfillChecker.check_tokens <gramalign.InfillChecker.check_tokens>` reads (fixed
tokens, masks as gaps, EOS ending the text), from the position's neighbours alone: a token is
removed only where no sentence of the grammar, under any lexing, can hold it there, so the
filter never removes a token the check would not call ``impossible``.

It over-approximates which bytes can stand next to each other in a sentence: every sentence
is a concatenation of lexemes of the grammar's terminals (ignored ones included), so two
adjacent bytes lie inside one lexeme (a pair some terminal's automaton reads through one
state) or across a boundary (a byte some terminal can end with, then one some terminal can
start with). A token is kept where all of its own byte pairs are possible and its first and
last bytes can meet its fixed neighbours' (or start or end the text); a gap beside it may
be empty or hold anything, so a masked neighbour constrains nothing. EOS rules follow
``check_tokens``: after a fixed EOS only EOS, and EOS only where no fixed text follows.

>>> import gramalign as ga
>>> vocab = ga.Vocabulary.from_token_bytes([b"1", b",", b",,", b"x", b"<eos>"], eos_token_ids=[4])
>>> candidates = InfillCandidates(ga.Grammar.from_regex(r"[0-9]+(,[0-9]+)*"), vocab)
>>> MASK = 5
>>> [vocab.token_to_bytes(t) for t in np.flatnonzero(candidates.at([0, MASK, 0], 1, MASK))]
[b'1', b',']
>>> [vocab.token_to_bytes(t) for t in np.flatnonzero(candidates.at([0, MASK], 1, MASK))]
[b'1', b'<eos>']
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..errors import InfillError
from ..grammar.automata.dfa import DEAD
from ..grammar.grammar import Grammar
from ..tokens.vocabulary import Vocabulary
from .compiler import CompiledGrammar

__all__ = ["InfillCandidates", "adjacent_bytes"]


def adjacent_bytes(grammar: Grammar) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs, first, last): ``pairs[a, b]`` when byte ``b`` may follow byte ``a`` somewhere
    in a sentence, ``first[b]`` when a sentence may start with ``b``, ``last[a]`` when one may
    end with ``a``, over-approximated from the terminals (see the module docstring)."""
    pairs = np.zeros((256, 256), dtype=bool)
    first = np.zeros(256, dtype=bool)
    last = np.zeros(256, dtype=bool)
    for terminal in grammar.terminals:
        dfa = terminal.dfa
        if dfa.num_states == 0:
            continue
        table = dfa.transitions
        live = table != DEAD
        states, byte_values = np.nonzero(live)
        entered = np.zeros(live.shape, dtype=np.float32)  # entered[s, a]: byte a leads into s
        entered[table[states, byte_values], byte_values] = 1.0
        pairs |= (entered.T @ live.astype(np.float32)) > 0  # a into s, then b out of s
        first |= live[dfa.initial]
        last[byte_values[dfa.accepting[table[states, byte_values]]]] = True
    if grammar.single_terminal() is None:  # else a sentence is one lexeme
        pairs |= np.outer(last, first)  # one lexeme ends, the next starts
    return pairs, first, last


CACHED_ROWS = 256
"""Rows kept per filter (least recently used out): a row is the vocabulary's size in bytes,
and most masked positions share the few whose neighbours are masks too."""


class InfillCandidates:
    """The filter of one grammar and vocabulary (see the module docstring); rows are cached
    by what decides them (the neighbours), so most masked positions share one row."""

    def __init__(self, grammar_or_compiled, vocabulary: Vocabulary):
        grammar = grammar_or_compiled.grammar if isinstance(grammar_or_compiled, CompiledGrammar) \
            else grammar_or_compiled
        if not isinstance(grammar, Grammar):
            raise InfillError("InfillCandidates needs a gramalign.Grammar or CompiledGrammar, not "
                              f"{type(grammar_or_compiled).__name__}")
        if not isinstance(vocabulary, Vocabulary):
            raise InfillError(f"vocabulary must be a gramalign.Vocabulary, not {type(vocabulary).__name__}")
        self.vocabulary = vocabulary
        self.pairs, self.first, self.last = adjacent_bytes(grammar)
        size = vocabulary.size
        self._eos = np.zeros(size, dtype=bool)
        self._eos[list(vocabulary.eos_token_ids)] = True
        self._bytes = [vocabulary.token_to_bytes(t) for t in range(size)]
        self._empty = np.array([not b for b in self._bytes]) & ~self._eos
        self._head = np.array([b[0] if b else 0 for b in self._bytes], dtype=np.int64)
        self._tail = np.array([b[-1] if b else 0 for b in self._bytes], dtype=np.int64)
        # a token on its own: every byte pair inside it possible (a single byte: some lexeme holds it)
        possible = self.pairs.any(axis=0) | self.pairs.any(axis=1) | self.first | self.last
        self._alone = np.array([_inside_ok(b, self.pairs, possible) for b in self._bytes]) & ~self._eos
        self._rows: "OrderedDict[tuple, np.ndarray]" = OrderedDict()

    def at(self, ids, position: int, mask_id: int, *, end: bool = True) -> np.ndarray:
        """bool ``[vocabulary.size]``: the tokens that may stand at ``position`` of ``ids``
        (a masked position, or any other: its own token is ignored). ``end`` as for
        ``check_tokens``: with ``end=False`` more text follows the ids and EOS is never kept."""
        ids = [int(t) for t in ids]
        if not 0 <= position < len(ids):
            raise InfillError(f"position {position} is outside the sequence of {len(ids)} ids")
        return self._cached(self._key(ids, position, mask_id, end))

    def masked(self, ids, mask_id: int, *, end: bool = True) -> "dict[int, np.ndarray]":
        """:meth:`at` for every position of ``ids`` that holds ``mask_id``, in one pass."""
        ids = [int(t) for t in ids]
        eos = self.vocabulary.eos_token_ids
        text_after = [False] * (len(ids) + 1)  # some fixed non-EOS token after each position
        for p in range(len(ids) - 1, -1, -1):
            text_after[p] = text_after[p + 1] or (ids[p] != mask_id and ids[p] not in eos)
        rows, eos_before = {}, False
        for p, token in enumerate(ids):
            if token == mask_id:
                rows[p] = self._cached(self._key(ids, p, mask_id, end, eos_before, text_after[p + 1]))
            elif token in eos:
                eos_before = True
        return rows

    def _key(self, ids: list, position: int, mask_id: int, end: bool, eos_before: "bool | None" = None,
             text_after: "bool | None" = None) -> tuple:
        eos = self.vocabulary.eos_token_ids
        if eos_before is None:
            eos_before = any(t in eos for t in ids[:position] if t != mask_id)
            text_after = any(t != mask_id and t not in eos for t in ids[position + 1:])
        left = ids[position - 1] if position else _EDGE
        right = ids[position + 1] if position + 1 < len(ids) else (_EDGE if end else mask_id)
        return None if left == mask_id else left, None if right == mask_id else right, eos_before, text_after, end

    def _cached(self, key: tuple) -> np.ndarray:
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = self._row(*key)
            if len(self._rows) > CACHED_ROWS:
                self._rows.popitem(last=False)
        else:
            self._rows.move_to_end(key)
        return row

    def _row(self, left, right, eos_before: bool, text_after: bool, end: bool) -> np.ndarray:
        eos = self.vocabulary.eos_token_ids
        eos_ok = end and not text_after
        if eos_before:  # check_tokens: after the first EOS, only EOS (or a mask)
            return self._eos.copy() if eos_ok else np.zeros_like(self._eos)
        keep = self._alone.copy()
        # a gap beside the token may hold anything, or nothing (then what lies beyond it): no constraint
        if left == _EDGE:
            keep &= self.first[self._head]
        elif left is not None and self._bytes[left]:  # (an EOS on the left returned above)
            keep &= self.pairs[self._bytes[left][-1], self._head]
        if right == _EDGE or (right is not None and right in eos):  # the text ends after the token
            keep &= self.last[self._tail]
        elif right is not None and self._bytes[right]:
            keep &= self.pairs[self._tail, self._bytes[right][0]]
        keep |= self._empty  # no bytes: nothing to meet its neighbours
        keep |= self._eos & eos_ok
        return keep


_EDGE = "edge"  # the start of the text on the left, its end on the right (key of a cached row)


def _inside_ok(data: bytes, pairs: np.ndarray, possible: np.ndarray) -> bool:
    if not data:
        return True
    if len(data) == 1:
        return bool(possible[data[0]])
    return all(pairs[a, b] for a, b in zip(data, data[1:]))
