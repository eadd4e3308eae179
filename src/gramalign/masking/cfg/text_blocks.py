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

import threading
import weakref
from dataclasses import dataclass

import numba
import numpy as np

from ...bitsets import intersects
from ...grammar.parser_tables import ParserTables
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


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def text_coverage(lx_trans, lx_accept, lx_alive, lx_class_byte, cand, reach_bits, reach_done, start, text, step_bytes,
                  step_offsets, max_depth, seen, searches):
    """(depth, state, searches): depth and state are int32 [256], by first byte ``b`` of a
    text: how many bytes of any text that starts with ``b`` lexer state ``start`` reads under candidates ``cand``
    such that after each byte the lexeme is alive and has the reachable winners of
    ``state[b]`` (the state after ``b``), and before the last byte could not end. Capped at
    ``max_depth``; 0 for bytes no text starts with or that end the lexeme at once.

    ``step_bytes[step_offsets[t]:step_offsets[t + 1]]`` are the bytes to try from text state
    ``t``: one per class of bytes that both automata treat alike (see :func:`step_bytes`).

    ``seen`` (int32, at least [lexer states, text states]) is the caller's scratch:
    ``seen[p, u] == search`` marks a pair met by search number ``search``; searches are
    numbered on from ``searches`` and the last number is returned, so a scratch kept across
    calls is never cleared (clearing one the size of a large lexer per context cost more than
    the searches). A fresh scratch is zeros with ``searches`` 0."""
    depth = np.zeros(256, np.int32)
    state = np.full(256, -1, np.int32)
    pairs = lx_trans.shape[0] * text.shape[0]
    level = np.empty((pairs, 2), np.int32)
    following = np.empty((pairs, 2), np.int32)
    for b in range(256):
        u = text[0, b]
        p = lx_trans[start, b]
        if u < 0 or p < 0:
            continue
        state[b] = p
        for earlier in range(b):  # the same pair after another first byte: the same answer
            if state[earlier] == p and text[0, earlier] == u:
                depth[b] = depth[earlier]
                break
        else:
            searches += 1
            depth[b] = _depth_from(lx_trans, lx_accept, lx_alive, lx_class_byte, cand, reach_bits, reach_done, p, u,
                                   text, step_bytes, step_offsets, max_depth, seen, searches, level, following)
    return depth, state, searches


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def _depth_from(lx_trans, lx_accept, lx_alive, lx_class_byte, cand, reach_bits, reach_done, first, first_text, text,
                step_bytes, step_offsets, max_depth, seen, search, level, following):
    """:func:`text_coverage` for the texts whose first byte led to (lexer ``first``, text
    ``first_text``): breadth-first over (lexer state, text state) pairs. Once a level
    brings no pair not seen before, deeper levels repeat checked pairs: ``max_depth``."""
    words = cand.shape[0]
    fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, first)
    n_next = 1
    following[0, 0] = first
    following[0, 1] = first_text
    seen[first, first_text] = search
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
                if seen[p, u] != search:
                    seen[p, u] = search
                    following[n_next, 0] = p
                    following[n_next, 1] = u
                    n_next += 1
        if n_next == 0:
            return max_depth
    return max_depth


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def block_kinds(covered, state_after, reach_bits):
    """(kind of each first byte, -1 where not covered; the reachable winners of each kind):
    covered first bytes grouped by the terminals their lexemes can still become."""
    kind_of = np.full(256, -1, np.int64)
    kinds = np.empty((256, reach_bits.shape[1]), np.uint64)
    n = 0
    for b in range(256):
        if not covered[b]:
            continue
        reach = reach_bits[state_after[b]]
        for k in range(n):
            same = True
            for w in range(reach.shape[0]):
                if kinds[k, w] != reach[w]:
                    same = False
                    break
            if same:
                kind_of[b] = k
                break
        if kind_of[b] < 0:
            kinds[n] = reach
            kind_of[b] = n
            n += 1
    return kind_of, kinds[:n].copy()


@numba.njit(cache=True, nogil=True)
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
    rest: "TokenTrie | None"  # the trie of every other token


class TextSlices:
    """The tokens of one vocabulary trie that are text of one alphabet (``TEXT`` or
    ``WORD``) and a :class:`TextBlock` per level, all built at once (~30 ms and ~10 MB for
    Llama-3's 128k tokens, once per process and alphabet) so that no mask pays for one."""

    def __init__(self, trie: TokenTrie, width: int, text: np.ndarray = TEXT):
        self.trie = trie
        self.width = width
        self.text = text
        self.ascii = ascii_of(text)
        self.lengths = _text_lengths(trie.node_byte, trie.node_depth, trie.token_start, text)
        self._first_byte = trie.node_byte[_token_nodes_first_byte(trie.node_depth, trie.token_start)]
        self.position_of = np.zeros(int(trie.token_ids.max()) + 1 if trie.token_ids.size else 1, dtype=np.int64)
        self.position_of[trie.token_ids] = np.arange(trie.token_ids.size)  # token id -> position in trie
        self._blocks = {level: self._build(level) for level in LEVELS}

    @staticmethod
    def level_for(depth: int) -> int:
        """The largest level not above ``depth`` (0: none)."""
        return max((level for level in LEVELS if level <= depth), default=0)

    def block(self, level: int) -> TextBlock:
        return self._blocks[level]

    def _build(self, level: int) -> TextBlock:
        in_block = (self.lengths > 0) & (self.lengths <= level)
        first = self._first_byte[in_block]
        order = np.argsort(first, kind="stable")
        ids = self.trie.token_ids[in_block][order]
        offsets = np.zeros(257, dtype=np.int64)
        np.cumsum(np.bincount(first, minlength=256), out=offsets[1:])
        wide = ids.astype(np.int64)
        row = np.zeros(self.width, dtype=np.uint32)
        np.bitwise_or.at(row, wide >> 5, np.left_shift(np.uint32(1), (wide & 31).astype(np.uint32)))
        for array in (row, ids, offsets):
            array.flags.writeable = False
        return TextBlock(level, row, ids, offsets, self.trie.subset_positions(np.flatnonzero(~in_block)))


@numba.njit(cache=True, nogil=True)
def _token_nodes_first_byte(node_depth, token_start):
    """Per token position of a pre-order trie: the depth-1 node its path starts at."""
    n = node_depth.shape[0]
    root_child = np.empty(token_start[n], np.int64)
    current = 0
    for i in range(n):
        if node_depth[i] == 1:
            current = i
        for k in range(token_start[i], token_start[i + 1]):
            root_child[k] = current
    return root_child


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
        text_coverage(transitions, bits, bits, np.zeros(1, np.int64), bits[0], reach_bits, reach_done, np.int32(0),
                      TEXT, *steps, LEVELS[-1], np.zeros((1, TEXT.shape[0]), np.int32), np.int64(0))
    ids, offsets, row = np.zeros(1, np.int32), np.zeros(257, np.int64), np.zeros(1, np.uint32)
    ids.flags.writeable = offsets.flags.writeable = row.flags.writeable = False
    kind_of, _ = block_kinds(np.ones(256, np.uint8), np.zeros(256, np.int32), np.zeros((1, 1), np.uint64))
    or_block_tokens(row, ids, offsets, kind_of, 0, np.zeros(1, np.uint32), np.zeros(1, np.uint32))
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


class TextCover:
    """Per grammar and vocabulary: which first bytes' short text tokens a context takes as
    blocks, and the blocks added to its classes (the text side of :mod:`.contexts`)."""

    def __init__(self, tables: ParserTables, trie: TokenTrie, width: int):
        self.tables = tables
        self.width = width
        self.slices = text_slices_for(trie, width)
        self.position_of = self.slices[0].position_of  # token id -> position in the whole trie
        self._steps: dict = {}  # per alphabet, step_bytes of the lexer's byte classes, on first use
        self._seen: list = []  # [scratch, last search number] for text_coverage, one per concurrent build

    def cover(self, start: int, cand: np.ndarray):
        """(first bytes whose short text tokens go as blocks (uint8 [256]), the
        :class:`TextBlock` of their level, the lexer state after each first byte) for the
        context at lexer state ``start`` under candidates ``cand``, or None where no text is
        read far enough to be worth it. The alphabets are tried widest first: any text
        (string bodies, keys), then letters and digits (names, formats, patterns, where a
        space ends the lexeme)."""
        tables = self.tables
        lexer = tables.lexer
        for k, slices in enumerate(self.slices):
            if not admits_text(lexer.transitions, lexer.alive_bits, cand, np.int32(start), slices.text):
                continue
            steps = self._steps.get(k)
            if steps is None:
                steps = self._steps[k] = step_bytes(lexer.byte_class, slices.text)
            try:
                seen = self._seen.pop()
            except IndexError:  # none free (first build, or another thread holds it)
                seen = [np.zeros((lexer.num_states, max(s.text.shape[0] for s in self.slices)), np.int32), 0]
            try:
                if seen[1] > 1 << 30:
                    seen[0][:] = 0
                    seen[1] = 0
                depth, state_after, seen[1] = text_coverage(
                    lexer.transitions, lexer.accept_bits, lexer.alive_bits, lexer.class_byte, cand, tables.reach_bits,
                    tables.reach_done, np.int32(start), slices.text, *steps, LEVELS[-1], seen[0], np.int64(seen[1]))
            finally:
                self._seen.append(seen)
            # The level most text tokens can take (a few first bytes may admit longer texts,
            # e.g. four-byte characters under a length bound in characters).
            ascii_depth = depth[slices.ascii]
            level = TextSlices.level_for(int(np.sort(ascii_depth)[ascii_depth.size // 2]))
            if level:
                return (depth >= level).astype(np.uint8), slices.block(level), state_after
        return None

    def add_blocks(self, covered, block: TextBlock, state_after, group_reach, group_masks, inside, max_groups: int):
        """Add the text block's tokens of the covered first bytes to the inside groups (by
        the reachable winners after the first byte) and to ``inside`` (in place); returns the
        grown (group_reach, group_masks), or None if it would take more than ``max_groups``."""
        kind_of, kinds = block_kinds(covered, state_after, self.tables.reach_bits)
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
        return group_reach, group_masks
