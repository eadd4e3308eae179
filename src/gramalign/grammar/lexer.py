"""The lexer automaton: one byte-level DFA that runs every terminal of a grammar at once.

A state of the lexer DFA is a tuple of terminal-DFA states (the product construction), so
it knows, for the text of the current lexeme, which terminals accept it now
(``accept_bits``) and which could still accept a longer text (``alive_bits``).

The lexing is contextual: a lexeme may only become one of the terminals the parser can use
where it starts (its *candidates*). So the automaton has one start state per distinct
candidate set (state k for the candidate set numbered k) that tracks those terminals only,
and every state reached from it tracks a subset of them. A lexeme therefore never pays for
terminals it cannot become: a string body under a plain ``string`` schema is a few states
even when another field's ``format`` terminal has tens of thousands, and the two never
multiply. States reached from different starts are shared where they track the same
terminal states, and a state's bits name candidates of every start that reaches it, which
is why what depends on them (the reachable winners) is cached per state. Once a lexeme can
only be one terminal, its states are that terminal's own, numbered in the terminal's block:
the product is built only where two or more terminals are still alive (see
:mod:`.lexer_kernels`).

Terminals are numbered by *rank*, the tie-break order of longest match: higher priority
first, then literals before patterns, then grammar order. The winner among the terminals
that accept a lexeme is therefore the lowest set bit.

A terminal that starts with a word boundary (lark's ``/\\bif\\b/``) accepts what follows a
word character apart from what follows another character: its automaton reads one of the
bytes ``AFTER_WORD`` and ``AFTER_OTHER`` first (never part of UTF-8 text). Such a grammar
has two starts per candidate set, one per kind of character before the lexeme (the two
halves of ``ParserTables.candidate_id``), and each such terminal enters its automaton past
the marker of its start; other terminals enter theirs at the initial state from both.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import GrammarError
from ..jit import kernel
from .automata.dfa import ByteDFA, distinct_columns
from .grammar import Terminal
from .lexer_kernels import copy_block, expand_product_rows, multi_member_product
from .limits import DEFAULT_LIMITS, active_limits, check_time

MAX_LEXER_STATES = DEFAULT_LIMITS.max_lexer_states
"""Product states before :func:`build_lexer` gives up (terminals that interact badly)."""

AFTER_WORD = 0xFE
"""First byte of a lexeme that follows a word character (``\\w``), for terminals that tell."""
AFTER_OTHER = 0xFF
"""First byte of a lexeme that follows another character or starts the text."""


@dataclass(frozen=True, eq=False)
class LexerDFA:
    """All terminals of a grammar as one DFA; see the module docstring."""

    terminals: tuple[Terminal, ...]  # in rank order: bit i of the bitsets is terminals[i]
    transitions: np.ndarray  # int32 [n_states, 256], DEAD (-1) when no terminal survives
    num_starts: int  # states 0 .. num_starts - 1 are the starts (nothing read yet); never re-entered
    accept_bits: np.ndarray  # uint64 [n_states, words]: terminals accepting the lexeme so far
    alive_bits: np.ndarray  # uint64 [n_states, words]: terminals that accept it or an extension
    # Bytes every terminal treats alike, so every state does: the class of each byte (int64
    # [256]) and a byte of each class (int64 [classes]). Possibly finer than the table's own
    # column classes, never coarser; known from the build, so nothing re-derives them.
    byte_class: np.ndarray
    class_byte: np.ndarray
    # The first state of each terminal's block (its own states, in its own order), -1 for a
    # terminal never alone in a lexeme (int64 [terminals]).
    block_start: np.ndarray

    @property
    def num_states(self) -> int:
        return int(self.transitions.shape[0])

    @cached_property
    def is_start(self) -> np.ndarray:
        """uint8 [states]: 1 at the starts (the lexeme is empty there), what kernels test."""
        flags = np.zeros(self.num_states, dtype=np.uint8)
        flags[:self.num_starts] = 1
        return flags

    @property
    def words(self) -> int:
        return int(self.accept_bits.shape[1])

    def terminal_index(self, name: str) -> int:
        return terminal_index(self.terminals, name)

    def bits_of(self, names) -> np.ndarray:
        """The uint64 bitset of the named terminals."""
        return terminal_bits(self.terminals, names)


def terminal_index(ranked, name: str) -> int:
    for index, terminal in enumerate(ranked):
        if terminal.name == name:
            return index
    raise KeyError(name)


def terminal_bits(ranked, names) -> np.ndarray:
    """The uint64 bitset of the named terminals of ``ranked`` (terminals in rank order)."""
    bits = np.zeros(max(1, (len(ranked) + 63) // 64), dtype=np.uint64)
    for name in names:
        index = terminal_index(ranked, name)
        bits[index >> 6] |= np.uint64(1) << np.uint64(index & 63)
    return bits


def rank_terminals(terminals) -> tuple[Terminal, ...]:
    """Terminals in longest-match tie-break order (see the module docstring)."""
    order = sorted(range(len(terminals)),
                   key=lambda i: (-terminals[i].priority, not terminals[i].literal, i))
    return tuple(terminals[i] for i in order)


def build_lexer(terminals, *, starts: "np.ndarray | None" = None, max_states: "int | None" = None,
                after_word: "np.ndarray | None" = None) -> LexerDFA:
    """The product DFA of ``terminals`` (which must each match at least one non-empty text).

    ``starts`` (uint64 [k, words], bitsets over the terminals in rank order, see
    :func:`rank_terminals`) are the terminal sets of the k start states; by default one
    start tracks every terminal. ``after_word`` (bool [k]) says which starts follow a word
    character (see the module docstring). ``max_states`` defaults to the compile's
    ``max_lexer_states``."""
    if max_states is None:
        max_states = active_limits().max_lexer_states
    ranked = rank_terminals(tuple(terminals))
    if not ranked:  # a grammar whose only sentence is "": every lexeme dies at once
        count = 1 if starts is None else int(np.asarray(starts).shape[0])
        return LexerDFA((), np.full((count, 256), -1, dtype=np.int32), count, np.zeros((count, 1), dtype=np.uint64),
                        np.zeros((count, 1), dtype=np.uint64), np.zeros(256, dtype=np.int64),
                        np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    dfas = []
    for terminal in ranked:
        check_time(f"terminal {terminal.name}")
        dfa = terminal.dfa
        if dfa.num_states == 0:
            raise GrammarError(f"terminal {terminal.name} matches no string at all")
        if dfa.accepting[dfa.initial]:
            raise GrammarError(f"terminal {terminal.name} matches the empty string")
        dfas.append(dfa)

    byte_class, representative, sizes, offsets, owner, big = product_inputs(dfas)

    words = (len(ranked) + 63) // 64
    # A product state is the array of its members' global states, in terminal order (each
    # terminal DFA contributes at most one). No transition re-enters a start state: a start
    # always means "the lexeme is empty", even for terminals whose DFAs cycle back to their
    # start. States of one member live in their terminal's block (see lexer_kernels).
    initial = np.asarray([offsets[k] + d.initial for k, d in enumerate(dfas)], dtype=np.int64)
    if starts is None:
        start_pool, start_offsets = initial, np.array([0, initial.shape[0]], dtype=np.int64)
    else:
        tracked = np.unpackbits(np.ascontiguousarray(starts, dtype=np.uint64).reshape(-1, words).view(np.uint8),
                                axis=1, bitorder="little")[:, :len(ranked)].astype(bool)
        if after_word is None:
            start_pool = initial[np.nonzero(tracked)[1]]
            start_offsets = np.zeros(tracked.shape[0] + 1, dtype=np.int64)
            np.cumsum(tracked.sum(axis=1), out=start_offsets[1:])
        else:
            start_pool, start_offsets = _initial_states_after(dfas, offsets, tracked, after_word)
    rows, flat, member_offsets, overflowed = multi_member_product(big, np.arange(big.shape[1]), start_pool,
                                                                  start_offsets, max_states)
    single = rows[rows <= -2]
    entered = np.unique(owner[-2 - single]) if single.size else np.zeros(0, dtype=np.int64)
    n_product = rows.shape[0]
    block_start = np.full(len(dfas), -1, dtype=np.int64)
    block_start[entered] = n_product + np.concatenate(([0], np.cumsum(sizes[entered])[:-1]))
    num_states = n_product + int(sizes[entered].sum())
    if overflowed or num_states > max_states:
        raise GrammarError(
            f"the lexer automaton of this grammar exceeds {max_states} states; "
            "some terminals overlap too much (simplify the terminal regexes)")
    transitions = np.empty((num_states, 256), dtype=np.int32)
    expand_product_rows(rows, byte_class, owner, offsets, block_start, transitions)
    alive_bits = np.zeros((num_states, words), dtype=np.uint64)
    accept_bits = np.zeros((num_states, words), dtype=np.uint64)
    state_of = np.repeat(np.arange(n_product), np.diff(member_offsets))
    terminal = owner[flat]
    bits = np.left_shift(np.uint64(1), (terminal & 63).astype(np.uint64))
    np.bitwise_or.at(alive_bits, (state_of, terminal >> 6), bits)
    accepted = np.concatenate([d.accepting for d in dfas])[flat]
    np.bitwise_or.at(accept_bits, (state_of[accepted], terminal[accepted] >> 6), bits[accepted])
    for t in entered.tolist():
        first, dfa = int(block_start[t]), dfas[t]
        block = slice(first, first + dfa.num_states)
        copy_block(dfa.transitions, first, transitions[block])
        bit = np.uint64(1) << np.uint64(t & 63)
        alive_bits[block, t >> 6] = bit  # trimmed: every state of a terminal can still accept
        accept_bits[block, t >> 6] = np.where(dfa.accepting, bit, np.uint64(0))
    return LexerDFA(ranked, transitions, start_offsets.shape[0] - 1, accept_bits, alive_bits,
                    byte_class, representative, block_start)


def product_inputs(dfas) -> tuple:
    """What the product kernel reads, for terminal automata ``dfas``: (class of each byte, a
    byte of each class, each DFA's size, its first global state, the DFA of each global
    state, the table int32 [global states, classes]). Bytes no terminal tells apart form one
    class, so the product walks classes only; a global state is the offset of its terminal
    plus its local state."""
    byte_class, representative = joint_byte_classes(dfas)
    sizes = np.array([d.num_states for d in dfas], dtype=np.int64)
    offsets = np.zeros(len(dfas) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    owner = np.repeat(np.arange(len(dfas)), sizes)
    big = np.concatenate([table[:, class_of_byte[representative]]
                          for class_of_byte, table in map(byte_classes_of, dfas)])
    np.add(big, offsets[owner].astype(np.int32)[:, None], out=big, where=big >= 0)
    return byte_class, representative, sizes, offsets, owner, big


def _initial_states_after(dfas, offsets, tracked: np.ndarray, after_word: np.ndarray):
    """(pool, offsets) of the starts' member states where each start follows a word
    character or not: a terminal whose automaton reads ``AFTER_WORD``/``AFTER_OTHER`` first
    enters it past its marker (or not at all where none follows), the others at their
    initial state."""
    pool, counts = [], []
    for row, word in zip(tracked, np.asarray(after_word, dtype=bool).tolist()):
        marker = AFTER_WORD if word else AFTER_OTHER
        members = 0
        for k in np.flatnonzero(row).tolist():
            d = dfas[k]
            table = d.transitions
            state = d.initial
            if table[state, AFTER_WORD] >= 0 or table[state, AFTER_OTHER] >= 0:
                state = int(table[state, marker])
                if state < 0:
                    continue
            pool.append(int(offsets[k]) + state)
            members += 1
        counts.append(members)
    start_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=start_offsets[1:])
    return np.asarray(pool, dtype=np.int64), start_offsets


_CLASSES: "weakref.WeakKeyDictionary[ByteDFA, tuple[np.ndarray, np.ndarray]]" = weakref.WeakKeyDictionary()


def byte_classes_of(dfa: ByteDFA) -> tuple[np.ndarray, np.ndarray]:
    """(class of each byte, its table over classes) of one terminal DFA, kept with the DFA:
    terminals (a ``format``, a JSON string body) recur in every grammar that uses them."""
    found = _CLASSES.get(dfa)
    if found is None:
        found = dfa.known_columns()
        if found is None:
            table, class_of_byte = distinct_columns(dfa.transitions)
            found = (class_of_byte, table)
        _CLASSES[dfa] = found
    return found


def joint_byte_classes(dfas) -> tuple[np.ndarray, np.ndarray]:
    """(class of each byte, a byte of each class) for bytes that every DFA treats alike:
    the common refinement of their own classes, numbered in the lexicographic order of the
    per-DFA class vectors (deterministic, so lexer states keep their numbers)."""
    stacked = np.stack([byte_classes_of(d)[0] for d in dfas], axis=1).astype(np.int64)  # [256, dfas]
    # Bytes grouped by a hash of their class vectors (np.unique over rows sorts them as
    # bytes: ~0.5 ms for 15 terminals, and lazy lexers call this per candidate set), the
    # grouping confirmed exactly, then the groups ranked lexicographically
    weights = _CLASS_WEIGHTS[np.arange(stacked.shape[1]) % _CLASS_WEIGHTS.shape[0]]
    _, first, inverse = np.unique(stacked @ weights, return_index=True, return_inverse=True)
    inverse = inverse.reshape(256)
    if not (stacked == stacked[first][inverse]).all():  # a hash collision: sort the rows themselves
        _, representative, byte_class = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
        return byte_class.reshape(256).astype(np.int64), representative.astype(np.int64)
    order = np.lexsort(stacked[first].T[::-1])
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0])
    return rank[inverse], first[order].astype(np.int64)


_CLASS_WEIGHTS = np.random.default_rng(20261204).integers(1, 2**62, size=64, dtype=np.int64) | 1


@kernel
def _json_string_roles(transitions, initial):
    """Where each state of a JSON string's automaton stands in the spelling of a character
    (0: between characters, 1: after a backslash, 2-5: hex digits of a u-escape left + 1,
    6-8: UTF-8 continuation bytes left + 5, 9: after the closing quote, 10: before the
    opening quote), or -1 for every state when some state stands in two places."""
    n = transitions.shape[0]
    role = np.full(n, -1, np.int8)
    stack = np.empty(n, np.int64)
    role[initial] = 10
    stack[0] = initial
    top = 1
    while top:
        top -= 1
        s = stack[top]
        r = role[s]
        for b in range(256):
            t = transitions[s, b]
            if t < 0:
                continue
            if r == 10:
                nxt = 0 if b == 0x22 else -1
            elif r == 0:
                if b == 0x22:
                    nxt = 9
                elif b == 0x5C:
                    nxt = 1
                elif b < 0x80:
                    nxt = 0
                elif 0xC2 <= b <= 0xDF:
                    nxt = 6
                elif 0xE0 <= b <= 0xEF:
                    nxt = 7
                elif 0xF0 <= b <= 0xF4:
                    nxt = 8
                else:
                    nxt = -1
            elif r == 1:
                nxt = 5 if b == 0x75 else 0
            elif 2 <= r <= 5:
                nxt = 0 if r == 2 else r - 1
            elif 6 <= r <= 8:
                nxt = 0 if r == 6 else r - 1
            else:
                nxt = -1
            if nxt < 0 or (role[t] >= 0 and role[t] != nxt):
                role[:] = -1
                return role
            if role[t] < 0:
                role[t] = nxt
                stack[top] = t
                top += 1
    return role


def characters_to_close(dfa: ByteDFA) -> np.ndarray:
    """int32 per state of a counted JSON string's automaton: the fewest characters still to
    start before the closing quote can be read (0 where it can be read now, or in the
    character being spelled, and past the quote, where nothing is counted any more). A
    lexeme with ``count`` code points so far in state ``s`` can end within ``most`` code
    points iff ``count + need[s] <= most``: an e-mail address four characters into a
    ``maxLength: 5`` string with no ``@`` yet cannot."""
    return _characters_to_close(dfa.transitions, character_starts(dfa).astype(np.uint8))


@kernel
def _characters_to_close(transitions, between):
    # 0-1 breadth-first search backwards from the states that read the closing quote: a step
    # costs 1 where it starts a character (from a state between characters, not the quote).
    n = transitions.shape[0]
    far = np.int32(1 << 30)
    need = np.full(n, far, np.int32)
    counts = np.zeros(n + 1, np.int64)
    for s in range(n):
        for b in range(256):
            t = transitions[s, b]
            if t >= 0:
                counts[t + 1] += 1
    for s in range(n):
        counts[s + 1] += counts[s]
    source = np.empty(counts[n], np.int32)
    byte_of = np.empty(counts[n], np.uint8)
    fill = counts[:-1].copy()
    for s in range(n):
        for b in range(256):
            t = transitions[s, b]
            if t >= 0:
                source[fill[t]] = s
                byte_of[fill[t]] = b
                fill[t] += 1
    queue = np.empty(2 * n + 2 * counts[n] + 2, np.int32)  # a deque: 0-cost steps go to the front
    head = tail = n + counts[n] + 1
    for s in range(n):
        if between[s] and transitions[s, 0x22] >= 0:
            need[s] = 0
            queue[tail] = s
            tail += 1
    while head < tail:
        t = queue[head]
        head += 1
        for k in range(counts[t], counts[t + 1]):
            s = source[k]
            cost = 1 if between[s] and byte_of[k] != 0x22 else 0
            if need[t] + cost < need[s]:
                need[s] = need[t] + cost
                if cost == 0:
                    head -= 1
                    queue[head] = s
                else:
                    queue[tail] = s
                    tail += 1
    for s in range(n):
        if need[s] == far:  # past the closing quote (a trimmed automaton has no other such state)
            need[s] = 0
    return need


def character_starts(dfa: ByteDFA) -> np.ndarray:
    """bool per state of a JSON string literal's automaton: between two characters, where
    the next byte starts one (or is the closing quote). Raises GrammarError where that is
    not one place per state, or where a character may be a surrogate-pair escape (two
    escapes, one code point)."""
    role = _json_string_roles(dfa.transitions, dfa.initial)
    between = role == 0
    if (role < 0).any():
        raise GrammarError("a counted terminal must spell JSON strings (one place in a character per state)")
    high_surrogates = [b"\\u" + bytes([d, h]) for d in b"dD" for h in b"89abAB"]
    for state in np.flatnonzero(between).tolist():
        for escape in high_surrogates:
            if dfa.advance(state, escape) >= 0:
                raise GrammarError("a counted terminal cannot spell characters as surrogate-pair escapes")
    return between
