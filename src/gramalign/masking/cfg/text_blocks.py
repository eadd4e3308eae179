"""Plain-text tokens taken as blocks, so that long lexemes need not walk the whole trie.

Most tokens of a vocabulary are runs of ordinary text: UTF-8 characters other than the
double quote, the backslash and the C0 controls (the last character may be cut at the
token's end). Inside a JSON string body or an object key that admits any name, each of
them is an inside token of one group, yet classifying the context walks all of them
(~270k trie nodes for Llama-3, milliseconds), and a string with a length bound is a new
context at every position.

:func:`text_coverage` works out on the lexer automaton, exactly and per first byte, how
many bytes of *any* text starting with that byte the context reads as one lexeme that
stays alive, could not end before its last byte and keeps the reachable terminals it had
after the first byte. Where that is at least ``L`` bytes, the text tokens of at most
``L`` bytes starting with that byte (a :class:`TextBlock`, precomputed per vocabulary)
are inside tokens of that group without being visited; only the other tokens are walked.
Every such token is one of the texts checked, so the classification is the one a walk of
every token gives (tests compare both).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ...bitsets import intersects
from ...grammar.parser_tables import ParserTables
from ...jit import kernel
from ...parsing.lexing import fill_reach
from ...tokens.trie import TokenTrie

LEVELS = (4, 8, 16, 32, 64)
"""Byte lengths up to which text tokens may be taken as a block (the largest level not
above a context's admitted depth is used)."""


def _text_automaton() -> np.ndarray:
    """int8 [8, 256]: the well-formed UTF-8 prefixes of text without '"', '\\' or a C0
    control. State 0: at a character boundary; 1-3: that many continuation bytes due;
    4-7: after E0, ED, F0, F4 (whose second byte is restricted)."""
    table = np.full((8, 256), -1, dtype=np.int8)
    for byte in range(0x20, 0x80):
        if byte not in (0x22, 0x5C):
            table[0, byte] = 0
    table[0, 0xC2:0xE0] = 1
    table[0, 0xE1:0xED] = 2
    table[0, 0xEE:0xF0] = 2
    table[0, 0xF1:0xF4] = 3
    table[0, 0xE0], table[0, 0xED], table[0, 0xF0], table[0, 0xF4] = 4, 5, 6, 7
    table[1, 0x80:0xC0] = 0
    table[2, 0x80:0xC0] = 1
    table[3, 0x80:0xC0] = 2
    table[4, 0xA0:0xC0] = 1
    table[5, 0x80:0xA0] = 1
    table[6, 0x90:0xC0] = 2
    table[7, 0x80:0x90] = 2
    table.flags.writeable = False
    return table


def _word_automaton() -> np.ndarray:
    """int8 [1, 256]: ASCII letters and digits, the alphabet of identifiers, host names,
    e-mail addresses and most ``pattern`` strings, where a space or a quote ends what any
    text would go on with."""
    table = np.full((1, 256), -1, dtype=np.int8)
    for low, high in ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)):
        table[0, low:high + 1] = 0
    table.flags.writeable = False
    return table


TEXT = _text_automaton()
WORD = _word_automaton()
ALPHABETS = (TEXT, WORD)
"""The text alphabets blocks are made of, tried in this order (the first is the wider)."""


def ascii_of(text: np.ndarray) -> np.ndarray:
    """The ASCII bytes that are a whole character of ``text`` (state 0 to state 0)."""
    return np.flatnonzero(text[0, :0x80] == 0)


@kernel
def _text_lengths(node_byte, node_depth, token_start, text):
    """Per token position of a trie: its byte length if it is text (see ``TEXT``), else 0."""
    n = node_byte.shape[0]
    state_at = np.empty(node_depth.max() + 2 if n else 2, np.int32)
    state_at[0] = 0
    lengths = np.zeros(token_start[n], np.int32)
    for i in range(n):
        depth = node_depth[i]
        above = state_at[depth - 1]
        state_at[depth] = text[above, node_byte[i]] if above >= 0 else -1
        if state_at[depth] >= 0:
            for k in range(token_start[i], token_start[i + 1]):
                lengths[k] = depth
    return lengths


@kernel
def text_coverage(lexer, cand, reach_bits, reach_done, start, text, step_bytes, step_offsets, max_depth, marks,
                  searches, stamp):
    """(depth, state, searches): depth and state are int32 [256], by first byte ``b`` of a
    text: how many bytes of any text that starts with ``b`` lexer state ``start`` reads under candidates ``cand``
    such that after each byte the lexeme is alive and has the reachable winners of
    ``state[b]`` (the state after ``b``), and before the last byte could not end. Capped at
    ``max_depth``; 0 for bytes no text starts with or that end the lexeme at once.

    ``step_bytes[step_offsets[t]:step_offsets[t + 1]]`` are the bytes to try from text state
    ``t``: one per class of bytes that both automata treat alike (see :func:`step_bytes`).

    ``marks`` (int32 [lexer states, text states, 3]) is the caller's scratch, kept across
    calls and never cleared (clearing one the size of a large lexer per context cost more
    than the searches): ``marks[p, u, 0] == search`` marks a pair met by search number
    ``search`` (searches are numbered on from ``searches`` and the last number is
    returned); ``marks[p, u, 2]`` is the answer for the pair (lexer state, text state) after
    a first byte where ``marks[p, u, 1]`` is ``stamp``, a number the caller keeps while
    ``cand``, ``text`` and ``max_depth`` stay the same (the keys of one object share most of
    these pairs). A fresh scratch is zeros with ``searches`` 0 and ``stamp`` 1."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    depth = np.zeros(256, np.int32)
    state = np.full(256, -1, np.int32)
    queues = np.empty((2, 0, 2), np.int32)  # the searches' queues, allocated at the first search
    for b in range(256):
        u = text[0, b]
        p = lx_trans[start, b]
        if u < 0 or p < 0:
            continue
        state[b] = p
        depth[b], searches, queues = _remembered_depth(lexer, cand, reach_bits, reach_done, p, u, text, step_bytes,
                                                       step_offsets, max_depth, marks, searches, stamp, queues)
    return depth, state, searches


@kernel(inline="always")
def _remembered_depth(lexer, cand, reach_bits, reach_done, p, u, text, step_bytes, step_offsets, max_depth, marks,
                      searches, stamp, queues):
    """(:func:`_depth_from` for the pair (``p``, ``u``), from the memo in ``marks`` under
    ``stamp`` or searched now; the last search number; the queues, made on first need)."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    if marks[p, u, 1] != stamp:
        if queues.shape[1] == 0:
            queues = np.empty((2, lx_trans.shape[0] * text.shape[0], 2), np.int32)
        searches += 1
        marks[p, u, 1] = stamp
        marks[p, u, 2] = _depth_from(lexer, cand, reach_bits, reach_done, p, u, text, step_bytes, step_offsets,
                                     max_depth, marks, searches, queues[0], queues[1])
    return marks[p, u, 2], searches, queues


@kernel
def pair_coverage(lexer, cand, reach_bits, reach_done, depth, state, level, text, step_bytes, step_offsets, max_depth,
                  marks, searches, stamp):
    """:func:`text_coverage` one byte further, for the first bytes it left short of ``level``
    although the lexeme after them is alive and cannot end there (a key whose reachable
    names change at its next byte: ``"l`` of ``"line_length"`` among any other key). Returns
    (``row[b]``: the row of first byte ``b``, -1 if not split; ``covered[row, c]``: texts
    starting with ``b c`` are read ``level`` bytes deep as :func:`text_coverage` demands,
    keeping the reachable winners they have after ``c``; ``after[row, c]``: the lexer state
    after ``b c``; the last search number).

    The other arguments are :func:`text_coverage`'s, its memo included."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    row = np.full(256, -1, np.int32)
    n = 0
    for b in range(256):
        if depth[b] < 1 or depth[b] >= level:
            continue
        q = state[b]
        if intersects(lx_alive[q], cand) and not intersects(lx_accept[q], cand):
            row[b] = n
            n += 1
    covered = np.zeros((n, 256), np.uint8)
    after = np.full((n, 256), -1, np.int32)
    queues = np.empty((2, 0, 2), np.int32)
    for b in range(256):
        r = row[b]
        if r < 0:
            continue
        q = state[b]
        u = text[0, b]
        for c in range(256):
            v = text[u, c]
            p = lx_trans[q, c]
            if v < 0 or p < 0:
                continue
            after[r, c] = p
            depth_after, searches, queues = _remembered_depth(lexer, cand, reach_bits, reach_done, p, v, text,
                                                              step_bytes, step_offsets, max_depth, marks, searches,
                                                              stamp, queues)
            if depth_after >= level - 1:
                covered[r, c] = 1
    return row, covered, after, searches


@kernel
def admits_text(lx_trans, lx_alive, cand, start, text):
    """Do at least half the ASCII bytes of ``text`` keep the lexeme in ``start`` alive? If not,
    :func:`text_coverage` is not worth asking: callers take the level half of them reach, so
    nothing would be covered (most contexts: punctuation, numbers, literals)."""
    alive_ascii = 0
    n_ascii = 0
    for b in range(0x80):
        if text[0, b] == 0:
            n_ascii += 1
            p = lx_trans[start, b]
            if p >= 0 and intersects(lx_alive[p], cand):
                alive_ascii += 1
    return 2 * alive_ascii >= n_ascii


@kernel
def _depth_from(lexer, cand, reach_bits, reach_done, first, first_text, text, step_bytes, step_offsets, max_depth,
                marks, search, level, following):
    """:func:`text_coverage` for the texts whose first byte led to (lexer ``first``, text
    ``first_text``): breadth-first over (lexer state, text state) pairs. Once a level
    brings no pair not seen before, deeper levels repeat checked pairs: ``max_depth``."""
    lx_trans, lx_accept, lx_alive, lx_is_start, lx_class_byte = lexer
    words = cand.shape[0]
    fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, first)
    n_next = 1
    following[0, 0] = first
    following[0, 1] = first_text
    marks[first, first_text, 0] = search
    for depth in range(1, max_depth + 1):
        # Check the pairs `depth` bytes in, then expand them.
        for k in range(n_next):
            p = following[k, 0]
            if not reach_done[p]:
                fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, p)
            alive = False
            accepts = False
            for w in range(words):
                if lx_alive[p, w] & cand[w]:
                    alive = True
                if lx_accept[p, w] & cand[w]:
                    accepts = True
                if reach_bits[p, w] != reach_bits[first, w]:
                    return depth - 1
            if not alive:
                return depth - 1
            if accepts:  # a longer text could end the lexeme inside: this depth is the last
                return depth
        level, following = following, level
        size = n_next
        n_next = 0
        for k in range(size):
            q = level[k, 0]
            t = level[k, 1]
            for j in range(step_offsets[t], step_offsets[t + 1]):
                byte = step_bytes[j]
                u = text[t, byte]
                p = lx_trans[q, byte]
                if p < 0:
                    return depth
                if marks[p, u, 0] != search:
                    marks[p, u, 0] = search
                    following[n_next, 0] = p
                    following[n_next, 1] = u
                    n_next += 1
        if n_next == 0:
            return max_depth
    return max_depth


@kernel
def step_bytes(byte_class, text):
    """(bytes, offsets [9]) for :func:`text_coverage`: per text state, one byte of each class
    of the bytes it admits that the lexer (``byte_class`` per byte) also treats alike."""
    n_states = text.shape[0]
    chosen = np.empty(n_states * 256, np.int32)
    offsets = np.zeros(n_states + 1, np.int64)
    taken = np.full((byte_class.max() + 1, n_states), -1, np.int32)  # by (class, next text state)
    count = 0
    for t in range(n_states):
        for b in range(256):
            u = text[t, b]
            if u >= 0 and taken[byte_class[b], u] != t:
                taken[byte_class[b], u] = t
                chosen[count] = b
                count += 1
        offsets[t + 1] = count
    return chosen[:count].copy(), offsets


@kernel(inline="always")
def _kind_of(reach, kinds, n):
    """(index of ``reach`` among the first ``n`` rows of ``kinds``, appended if new; n after)."""
    for k in range(n):
        same = True
        for w in range(reach.shape[0]):
            if kinds[k, w] != reach[w]:
                same = False
                break
        if same:
            return k, n
    kinds[n] = reach
    return n, n + 1


@kernel
def block_kinds(covered, state_after, pair_covered, pair_state, reach_bits):
    """(kind of each first byte, -1 where not covered; kind of each covered pair, by the
    rows of :func:`pair_coverage`, -1 elsewhere; the reachable winners of each kind):
    covered texts grouped by the terminals their lexemes can still become."""
    kind_of = np.full(256, -1, np.int64)
    kind_of_pair = np.full(pair_covered.shape, -1, np.int64)
    kinds = np.empty((256 + np.count_nonzero(pair_covered), reach_bits.shape[1]), np.uint64)
    n = 0
    last_state = -1  # most texts go to the same few states: runs of one state have one kind
    kind = -1
    for b in range(256):
        if covered[b]:
            if state_after[b] != last_state:
                last_state = state_after[b]
                kind, n = _kind_of(reach_bits[last_state], kinds, n)
            kind_of[b] = kind
    for r in range(pair_covered.shape[0]):
        for c in range(256):
            if pair_covered[r, c]:
                if pair_state[r, c] != last_state:
                    last_state = pair_state[r, c]
                    kind, n = _kind_of(reach_bits[last_state], kinds, n)
                kind_of_pair[r, c] = kind
    return kind_of, kind_of_pair, kinds[:n].copy()


@kernel
def or_pair_tokens(ids, pair_start, pair_end, pair_row, kind_of_pair, kind, group_row, inside):
    """OR into ``group_row`` and ``inside`` the block's tokens (``ids[pair_start[b, c]:
    pair_end[b, c]]`` start with bytes ``b c``) of the pairs of kind ``kind``."""
    for b in range(256):
        r = pair_row[b]
        if r < 0:
            continue
        for c in range(256):
            if kind_of_pair[r, c] != kind:
                continue
            for k in range(pair_start[b, c], pair_end[b, c]):
                token = ids[k]
                bit = np.uint32(1) << np.uint32(token & 31)
                group_row[token >> 5] |= bit
                inside[token >> 5] |= bit


@kernel
def or_block_tokens(row, ids, offsets, kind_of, kind, group_row, inside):
    """OR into ``group_row`` and ``inside`` the block's tokens (``row``; ``ids[offsets[b]:
    offsets[b + 1]]`` start with byte ``b``) whose first byte is of kind ``kind``: set one by
    one, or as the whole row less the others, whichever touches fewer tokens."""
    taken = 0
    for b in range(256):
        if kind_of[b] == kind:
            taken += offsets[b + 1] - offsets[b]
    if 2 * taken <= offsets[256]:
        for b in range(256):
            if kind_of[b] == kind:
                for k in range(offsets[b], offsets[b + 1]):
                    token = ids[k]
                    bit = np.uint32(1) << np.uint32(token & 31)
                    group_row[token >> 5] |= bit
                    inside[token >> 5] |= bit
        return
    part = row.copy()
    for b in range(256):
        if kind_of[b] != kind:
            for k in range(offsets[b], offsets[b + 1]):
                token = ids[k]
                part[token >> 5] &= ~(np.uint32(1) << np.uint32(token & 31))
    for w in range(part.shape[0]):
        group_row[w] |= part[w]
        inside[w] |= part[w]


@dataclass(frozen=True, eq=False)
class TextBlock:
    """The text tokens of at most ``level`` bytes of one vocabulary trie. Read-only."""

    level: int
    row: np.ndarray  # uint32 bitmask row of all of them
    ids: np.ndarray  # int32: their ids, by first byte ...
    offsets: np.ndarray  # int64 [257]: ... ids[offsets[b]:offsets[b + 1]] start with byte b
    pair_start: np.ndarray  # int32 [256, 256]: ... and ids[pair_start[b, c]:pair_end[b, c]] with
    pair_end: np.ndarray  # bytes b c (tokens of two bytes or more, in trie order)
    rest: "TokenTrie | None"  # the trie of every other token


class TextSlices:
    """The tokens of one vocabulary trie that are text of one alphabet (``TEXT`` or
    ``WORD``) and a :class:`TextBlock` per level, all built at once (~30 ms and ~15 MB for
    Llama-3's 128k tokens, once per process and alphabet) so that no mask pays for one."""

    def __init__(self, trie: TokenTrie, width: int, text: np.ndarray = TEXT):
        # (the trie is not kept: these are the values of a weak map keyed by it, see text_slices_for)
        self.width = width
        self.text = text
        self.ascii = ascii_of(text)
        self.lengths = _text_lengths(trie.node_byte, trie.node_depth, trie.token_start, text)
        first_node, second_node = _token_prefix_nodes(trie.node_depth, trie.token_start)
        self._first_byte = trie.node_byte[first_node]
        self._second_byte = np.where(second_node >= 0, trie.node_byte[second_node].astype(np.int32), -1)
        self.position_of = np.zeros(int(trie.token_ids.max()) + 1 if trie.token_ids.size else 1, dtype=np.int64)
        self.position_of[trie.token_ids] = np.arange(trie.token_ids.size)  # token id -> position in trie
        self._blocks = {level: self._build(trie, level) for level in LEVELS}

    @staticmethod
    def level_for(depth: int) -> int:
        """The largest level not above ``depth`` (0: none)."""
        return max((level for level in LEVELS if level <= depth), default=0)

    def block(self, level: int) -> TextBlock:
        return self._blocks[level]

    def _build(self, trie: TokenTrie, level: int) -> TextBlock:
        in_block = (self.lengths > 0) & (self.lengths <= level)
        first = self._first_byte[in_block]
        order = np.argsort(first, kind="stable")
        ids = trie.token_ids[in_block][order]
        offsets = np.zeros(257, dtype=np.int64)
        np.cumsum(np.bincount(first, minlength=256), out=offsets[1:])
        pair_start, pair_end = _pair_ranges(first[order], self._second_byte[in_block][order])
        wide = ids.astype(np.int64)
        row = np.zeros(self.width, dtype=np.uint32)
        np.bitwise_or.at(row, wide >> 5, np.left_shift(np.uint32(1), (wide & 31).astype(np.uint32)))
        for array in (row, ids, offsets, pair_start, pair_end):
            array.flags.writeable = False
        return TextBlock(level, row, ids, offsets, pair_start, pair_end,
                         trie.subset_positions(np.flatnonzero(~in_block)))


@kernel
def _token_prefix_nodes(node_depth, token_start):
    """Per token position of a pre-order trie: the depth-1 node its path starts at, and the
    depth-2 node after it (-1 for a one-byte token)."""
    n = node_depth.shape[0]
    first = np.empty(token_start[n], np.int64)
    second = np.empty(token_start[n], np.int64)
    current = 0
    below = -1
    for i in range(n):
        if node_depth[i] == 1:
            current = i
            below = -1
        elif node_depth[i] == 2:
            below = i
        for k in range(token_start[i], token_start[i + 1]):
            first[k] = current
            second[k] = below if node_depth[i] > 1 else -1
    return first, second


@kernel
def _pair_ranges(first, second):
    """(start, end) int32 [256, 256]: the range of positions with first byte b and second
    byte c (both arrays in trie order, so each pair's positions are contiguous)."""
    start = np.zeros((256, 256), np.int32)
    end = np.zeros((256, 256), np.int32)
    for k in range(first.shape[0]):
        c = second[k]
        if c < 0:
            continue
        b = first[k]
        if end[b, c] == 0:
            start[b, c] = k
        end[b, c] = k + 1
    return start, end


_warm = False


def _warm_kernels() -> None:
    """Load this module's kernels (from numba's cache) once per process, on a one-state
    lexer that reads any text, with the argument types masks use: otherwise the first text
    context of a process pays ~20 ms for it inside a mask."""
    global _warm
    if _warm:
        return
    text_bytes = np.flatnonzero(TEXT[0] >= 0)
    for order in ("C", "F"):
        transitions = np.full((1, 256), -1, dtype=np.int32, order=order)
        transitions[0, text_bytes] = 0
        bits = np.ones((1, 1), dtype=np.uint64)
        reach_bits, reach_done = np.zeros((1, 1), np.uint64), np.zeros(1, np.uint8)
        if not admits_text(transitions, bits, bits[0], np.int32(0), TEXT):
            raise AssertionError("a lexer that reads any text admits text")
        steps = step_bytes(np.zeros(256, np.int64), TEXT)
        marks = np.zeros((1, TEXT.shape[0], 3), np.int32)
        lexer = (transitions, bits, bits, np.zeros(1, np.uint8), np.zeros(1, np.int64))  # (lexer_arrays' types)
        depth, state, _ = text_coverage(lexer, bits[0], reach_bits, reach_done, np.int32(0), TEXT, *steps, LEVELS[-1],
                                        marks, np.int64(0), np.int64(1))
        pair_coverage(lexer, bits[0], reach_bits, reach_done, depth, state, LEVELS[-1], TEXT, *steps, LEVELS[-1], marks,
                      np.int64(0), np.int64(1))
    ids, offsets, row = np.zeros(1, np.int32), np.zeros(257, np.int64), np.zeros(1, np.uint32)
    pairs = np.zeros((256, 256), np.int32)
    for array in (ids, offsets, row, pairs):
        array.flags.writeable = False
    kind_of, kind_of_pair, _ = block_kinds(np.ones(256, np.uint8), np.zeros(256, np.int32), np.zeros((1, 256), np.uint8),
                                           np.zeros((1, 256), np.int32), np.zeros((1, 1), np.uint64))
    or_block_tokens(row, ids, offsets, kind_of, 0, np.zeros(1, np.uint32), np.zeros(1, np.uint32))
    or_pair_tokens(ids, pairs, pairs, np.zeros(256, np.int32), kind_of_pair, 0, np.zeros(1, np.uint32),
                   np.zeros(1, np.uint32))
    _warm = True


_SLICES: "weakref.WeakKeyDictionary[TokenTrie, tuple[TextSlices, ...]]" = weakref.WeakKeyDictionary()
_SLICES_LOCK = threading.Lock()


def text_slices_for(trie: TokenTrie, width: int) -> "tuple[TextSlices, ...]":
    """The process-wide :class:`TextSlices` of a vocabulary trie, one per alphabet of
    ``ALPHABETS`` in that order (built once, ~30 ms each)."""
    with _SLICES_LOCK:
        found = _SLICES.get(trie)
        if found is None:
            found = _SLICES[trie] = tuple(TextSlices(trie, width, text) for text in ALPHABETS)
            _warm_kernels()
        return found


@dataclass(frozen=True, eq=False)
class Cover:
    """The texts one context takes as blocks: whole first bytes, and pairs of bytes after
    the first bytes that fell short (see :func:`pair_coverage`)."""

    covered: np.ndarray  # uint8 [256]: the block's tokens starting with b are inside
    block: TextBlock
    state_after: np.ndarray  # int32 [256]: the lexer state after first byte b
    pair_row: np.ndarray  # int32 [256]: the row of first byte b below, -1 where not split
    pair_covered: np.ndarray  # uint8 [rows, 256]: the block's tokens starting with b c are inside
    pair_state: np.ndarray  # int32 [rows, 256]: the lexer state after b c

    def skips(self):
        """The ``(skip_first, skip_rows)`` of :func:`.trie_walk.classify_tokens` for the
        walk of the whole trie (every token the block does not take) and for the walk of
        ``block.rest`` (the tokens of the covered first bytes and pairs that the block lacks)."""
        split = self.pair_row >= 0
        rows = (self.pair_row + 2).astype(np.int32)
        whole = np.where(split, rows, self.covered.astype(np.int32))
        rest = np.where(split, rows, 1 - self.covered.astype(np.int32))
        return (whole, self.pair_covered), (rest, 1 - self.pair_covered)


# Left writeable: numba compiles a read-only argument apart, and these go to the same kernels
# as the arrays of a cover that splits bytes (never written there).
_NO_ROW = np.full(256, -1, np.int32)
_NO_PAIRS = np.zeros((0, 256), np.uint8)
_NO_PAIR_STATES = np.zeros((0, 256), np.int32)


class _CoverScratch:
    """The scratch of :func:`text_coverage` and :func:`pair_coverage` for one alphabet (see
    their docstrings), kept process-wide and lent to one build at a time (of any grammar:
    its numbers only grow, so marks left by another never pass), with the grammar and
    candidate set its memo holds answers for."""

    def __init__(self, states: int, text_states: int):
        self.marks = np.zeros((states, text_states, 3), np.int32)
        self.searches = 0
        self.stamp = 0
        self.memo_for = None

    def stamp_for(self, owner: int, cand: np.ndarray) -> np.int64:
        """The memo stamp under which answers for ``cand`` in grammar ``owner`` are kept (a
        new one when either changes); clears the scratch when the numbers run out."""
        if self.searches > 1 << 30 or self.stamp > 1 << 30:
            self.marks[:] = 0
            self.searches = self.stamp = 0
            self.memo_for = None
        key = (owner, cand.tobytes())
        if self.memo_for != key:
            self.stamp += 1
            self.memo_for = key
        return np.int64(self.stamp)


_FREE_SCRATCH: "list[list[_CoverScratch]]" = [[] for _ in ALPHABETS]
_SCRATCH_LOCK = threading.Lock()
_OWNERS = itertools.count()


def _borrow_scratch(alphabet: int, states: int) -> _CoverScratch:
    """A free scratch for ``alphabet`` with rows for ``states`` lexer states (larger ones
    replace smaller ones: one big lexer's scratch serves every grammar after it)."""
    with _SCRATCH_LOCK:
        free = _FREE_SCRATCH[alphabet]
        if free:
            scratch = free.pop()
            if scratch.marks.shape[0] >= states:
                return scratch
    return _CoverScratch(states, ALPHABETS[alphabet].shape[0])


def _return_scratch(alphabet: int, scratch: _CoverScratch) -> None:
    with _SCRATCH_LOCK:
        _FREE_SCRATCH[alphabet].append(scratch)


class TextCover:
    """Per grammar and vocabulary: which short text tokens a context takes as blocks, and
    the blocks added to its classes (the text side of :mod:`.contexts`)."""

    def __init__(self, tables: ParserTables, trie: TokenTrie, width: int):
        self.tables = tables
        self.width = width
        self.slices = text_slices_for(trie, width)
        self.position_of = self.slices[0].position_of  # token id -> position in the whole trie
        self._steps: dict = {}  # per alphabet, step_bytes of the lexer's byte classes, on first use
        self._owner = next(_OWNERS)  # tells this grammar's memo answers from another's
        self._classes = tables.lexer.class_byte

    def bind(self) -> None:
        """Lazy tables grew: byte classes may be finer now (more terminals), so steps again."""
        if self._classes is not self.tables.lexer.class_byte:
            self._steps = {}
            self._classes = self.tables.lexer.class_byte

    def cover(self, start: int, cand: np.ndarray) -> "Cover | None":
        """The :class:`Cover` of the context at lexer state ``start`` under candidates
        ``cand``, or None where no text is read far enough to be worth it. The alphabets are
        tried widest first: any text (string bodies, keys), then letters and digits (names,
        formats, patterns, where a space ends the lexeme)."""
        tables = self.tables
        lexer = tables.lexer
        for k, slices in enumerate(self.slices):
            if not admits_text(lexer.transitions, lexer.alive_bits, cand, np.int32(start), slices.text):
                continue
            steps = self._steps.get(k)
            if steps is None:
                steps = self._steps[k] = step_bytes(lexer.byte_class, slices.text)
            scratch = _borrow_scratch(k, lexer.num_states)
            try:
                stamp = scratch.stamp_for(self._owner, cand)
                depth, state_after, scratch.searches = text_coverage(
                    tables.lexer_arrays, cand, tables.reach_bits, tables.reach_done, np.int32(start), slices.text,
                    *steps, LEVELS[-1], scratch.marks, np.int64(scratch.searches), stamp)
                # The level most text tokens can take (a few first bytes may admit longer texts,
                # e.g. four-byte characters under a length bound in characters).
                ascii_depth = depth[slices.ascii]
                level = TextSlices.level_for(int(np.sort(ascii_depth)[ascii_depth.size // 2]))
                row, pair_covered, pair_state = _NO_ROW, _NO_PAIRS, _NO_PAIR_STATES
                if np.any((depth > 0) & (depth < level)):  # the first bytes short of it, split by the second
                    row, pair_covered, pair_state, scratch.searches = pair_coverage(
                        tables.lexer_arrays, cand, tables.reach_bits, tables.reach_done, depth, state_after, level,
                        slices.text, *steps, LEVELS[-1], scratch.marks, np.int64(scratch.searches), stamp)
            finally:
                _return_scratch(k, scratch)
            if level:
                return Cover((depth >= level).astype(np.uint8), slices.block(level), state_after, row, pair_covered,
                             pair_state)
        return None

    def add_blocks(self, cover: Cover, group_reach, group_masks, inside, max_groups: int):
        """Add the text block's tokens that ``cover`` takes to the inside groups (by the
        reachable winners after their first byte, or pair) and to ``inside`` (in place);
        returns the grown (group_reach, group_masks), or None if it would take more than
        ``max_groups``."""
        block = cover.block
        kind_of, kind_of_pair, kinds = block_kinds(cover.covered, cover.state_after, cover.pair_covered,
                                                   cover.pair_state, self.tables.reach_bits)
        for kind in range(kinds.shape[0]):
            reach = kinds[kind]
            matches = np.flatnonzero(np.all(group_reach == reach, axis=1))
            if matches.size:
                g = int(matches[0])
            elif group_reach.shape[0] < max_groups:
                g = group_reach.shape[0]
                group_reach = np.concatenate([group_reach, reach[None, :]])
                group_masks = np.concatenate([group_masks, np.zeros((1, self.width), np.uint32)])
            else:
                return None
            or_block_tokens(block.row, block.ids, block.offsets, kind_of, kind, group_masks[g], inside)
            if cover.pair_covered.shape[0]:
                or_pair_tokens(block.ids, block.pair_start, block.pair_end, cover.pair_row, kind_of_pair, kind,
                               group_masks[g], inside)
        return group_reach, group_masks
