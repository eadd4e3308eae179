"""Masks inside counted strings (``Terminal.length``): the length bounds as a filter.

A counted string runs in the few lexer states of "any JSON string"; the hypothesis's
COLUMN field counts its code points (see ``parser.lexer_step``). The mask store computes
its masks as if the string had no bounds, so its contexts repeat at every position of
every value, and :class:`LengthFilter` narrows them where a bound is within a token's
reach: fewer code points so far than the fewest (a closing quote must wait), or fewer left
than a token may add before the most. Per lexer state of the string, one walk of the
vocabulary trie records each token's code points up to the closing quote (or its end) and
whether it closes the string; the filter is then a comparison per token.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

from ...grammar.automata.dfa import ByteDFA
from ...grammar.lexer import character_starts, characters_to_close
from ...grammar.parser_tables import COUNTED, COUNTED_BOUNDS, KIND_MASK, NEED_SHIFT, ParserTables
from ...jit import kernel
from ...parsing.state import COLUMN, LEXEME
from ...tokens.trie import TokenTrie

FILTER_ROWS = 256
"""Filters kept per grammar (least recently used out): one per lexer state and count met
near a bound."""


@kernel
def token_growth(transitions, between, need, start, node_byte, node_depth, subtree_end, token_start, token_ids,
                 max_depth, grow, closes):
    """From state ``start`` of a counted string's automaton (``between[s]``: state s lies
    between two characters; ``need[s]``: characters still to start before the quote can
    close it), write for every token the code points the string has at the least once it
    is read: up to the closing quote, or to the token's end plus what its state still needs
    (``grow``); and whether it closes the string (``closes``); tokens the string cannot
    read are left alone. Returns the most code points a token adds."""
    states = np.empty(max_depth + 1, np.int32)
    counts = np.zeros(max_depth + 1, np.int32)
    closed = np.zeros(max_depth + 1, np.uint8)
    states[0] = start
    most = 0
    i = 0
    n_nodes = node_byte.shape[0]
    while i < n_nodes:
        depth = node_depth[i]
        if closed[depth - 1]:  # past the closing quote: other lexemes, counted elsewhere
            counts[depth] = counts[depth - 1]
            closed[depth] = 1
        else:
            source = states[depth - 1]
            byte = node_byte[i]
            target = transitions[source, byte]
            if target < 0:
                i = subtree_end[i]
                continue
            count = counts[depth - 1]
            shut = 0
            if between[source]:
                if byte == 0x22:
                    shut = 1
                else:
                    count += 1
            states[depth] = target
            counts[depth] = count
            closed[depth] = shut
        least = counts[depth] if closed[depth] else counts[depth] + need[states[depth]]
        for k in range(token_start[i], token_start[i + 1]):
            grow[token_ids[k]] = least
            closes[token_ids[k]] = closed[depth]
        most = max(most, least)
        i += 1
    return most


class LengthFilter:
    """The tokens a counted string's bounds allow, per (lexer state, code points so far).
    At a lexer start, the tokens that open a counted string (the grammar has no ignored
    terminals, so a token that opens one starts with its quote) are checked from 0."""

    def __init__(self, tables: ParserTables, trie: TokenTrie, vocab_size: int, width: int):
        self._trie = trie
        self._size = vocab_size
        self._width = width
        self._growth: dict[int, tuple] = {}
        self._rows: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._need = 0
        self._counted: list[int] = []
        self._dfas: dict = {}
        self._states_read = self._terminals_read = 0
        self.bind(tables)

    def bind(self, tables: ParserTables) -> None:
        """Read the tables (again, after lazy tables grew); rows computed so far stay: a lexer
        state's rows never change, so only the states and terminals added since are read."""
        lexer = tables.lexer
        self._tracks = tables.tracks_column
        # the most characters a counted string's state still needs before its quote
        new = self._tracks[self._states_read:]
        self._need = max(self._need, int((new >> NEED_SHIFT).max(initial=0)))
        self._states_read = self._tracks.shape[0]
        self._layout = tables.layout
        self._trans = lexer.transitions
        for k in range(self._terminals_read, len(lexer.terminals)):
            if lexer.terminals[k].length is not None:
                self._counted.append(k)
                self._dfas[k] = lexer.terminals[k].dfa
        self._terminals_read = len(lexer.terminals)
        self._block_start = lexer.block_start
        self._is_start = lexer.is_start

    @staticmethod
    def needed(tables: ParserTables, since: int = 0) -> bool:
        """Does the lexer count a string's length (in its states from ``since`` on: lazy
        tables mark a counted block's states as they add them)?"""
        return bool((tables.tracks_column[since:] >= COUNTED).any())

    def allowed(self, hyp: np.ndarray) -> "np.ndarray | None":
        """The uint32 row of tokens the bounds allow this hypothesis (one row of
        ``HYPOTHESIS_FIELDS``), or None where no token can reach a bound. Tokens that end
        the string inside them and go on are also checked by the exact walk; the filter
        agrees with it, as it counts only up to the closing quote."""
        q, count = int(hyp[LEXEME]), int(hyp[COLUMN])
        if self._is_start[q]:  # a token may open a counted string (counted from 0) and go on in it
            kind = int(self._tracks[self._trans[q, 0x22]]) & KIND_MASK if self._trans[q, 0x22] >= 0 else 0
            count = 0
        else:
            kind = int(self._tracks[q]) & KIND_MASK
        if kind < COUNTED or count < 0:
            return None
        at = COUNTED_BOUNDS + ((kind - COUNTED) & ~1)
        fewest, most = int(self._layout[at]), int(self._layout[at + 1])
        if count >= fewest and (most < 0 or count + self._trie.max_depth + self._need <= most):
            return None  # a token has at most max_depth bytes, so at most as many code points
        growth = self._growth_of(q)
        if count >= fewest and count + growth[4] <= most:
            return None
        key = (q, count)
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows.move_to_end(key)
                return row
        row = self._row(growth, count, fewest, most)
        with self._lock:
            self._rows[key] = row
            if len(self._rows) > FILTER_ROWS:
                self._rows.popitem(last=False)
        return row

    def _row(self, growth, count: int, fewest: int, most: int) -> np.ndarray:
        """Every token but those that would pass the most code points, or close the string
        before the fewest."""
        grow, long, descending, closers, _ = growth
        if most < 0:
            too_long = long[:0]
        elif most - count >= LONG:
            too_long = long[:np.searchsorted(descending, count - most, side="left")]
        else:
            too_long = np.flatnonzero(grow > most - count)
        too_short = closers[count + grow[closers] < fewest]
        forbidden = np.concatenate((too_long, too_short))
        row = np.full(self._width, 0xFFFFFFFF, dtype=np.uint32)
        if forbidden.size > self._size // 8:
            ok = np.ones(32 * self._width, dtype=bool)
            ok[forbidden] = False
            return np.packbits(ok, bitorder="little").view(np.uint32)
        np.bitwise_and.at(row, forbidden >> 5, ~(np.uint32(1) << (forbidden & 31).astype(np.uint32)))
        return row

    def _growth_of(self, q: int) -> tuple:
        found = self._growth.get(q)
        if found is None:
            kind = int(self._tracks[self._trans[q, 0x22] if self._is_start[q] else q]) & KIND_MASK
            terminal = self._counted[(kind - COUNTED) >> 1]
            dfa = self._dfas[terminal]
            local = dfa.initial if self._is_start[q] else q - int(self._block_start[terminal])
            found = self._growth[q] = growth_of(dfa, local, self._trie, self._size)
        return found


_GROWTH: "weakref.WeakKeyDictionary[TokenTrie, dict]" = weakref.WeakKeyDictionary()
_GROWTH_LOCK = threading.Lock()
LONG = 16
"""Code points above which the tokens are listed apart (few tokens add more)."""


def growth_of(dfa: ByteDFA, state: int, trie: TokenTrie, size: int) -> tuple:
    """(code points of each token from ``state`` of a counted string's automaton ``dfa``, the
    tokens adding more than :data:`LONG` sorted most first, their negated code points, the
    tokens that close the string, the most code points), kept per vocabulary: every
    counted string of every grammar spells the same automaton."""
    key = (dfa.digest, state)
    with _GROWTH_LOCK:
        per_trie = _GROWTH.setdefault(trie, {})
        found = per_trie.get(key)
    if found is None:
        grow = np.zeros(size, dtype=np.int32)
        closes = np.zeros(size, dtype=np.uint8)
        between = character_starts(dfa).astype(np.uint8)
        reach = token_growth(dfa.transitions, between, characters_to_close(dfa), state, trie.node_byte,
                             trie.node_depth, trie.subtree_end, trie.token_start, trie.token_ids, trie.max_depth,
                             grow, closes)
        long = np.flatnonzero(grow > LONG)
        long = long[np.argsort(-grow[long], kind="stable")]
        found = (grow, long, -grow[long], np.flatnonzero(closes), int(reach))
        with _GROWTH_LOCK:
            per_trie[key] = found
    return found
