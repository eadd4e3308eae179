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
is why what depends on them (the reachable winners) is cached per state.

Terminals are numbered by *rank*, the tie-break order of longest match: higher priority
first, then literals before patterns, then grammar order. The winner among the terminals
that accept a lexeme is therefore the lowest set bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import GrammarError
from .dfa_kernels import column_classes, member_product, sorted_columns
from .grammar import Terminal

MAX_LEXER_STATES = 200_000
"""Product states before :func:`build_lexer` gives up (terminals that interact badly)."""


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

    @property
    def num_states(self) -> int:
        return int(self.transitions.shape[0])

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
    bits = np.zeros((len(ranked) + 63) // 64, dtype=np.uint64)
    for name in names:
        index = terminal_index(ranked, name)
        bits[index >> 6] |= np.uint64(1) << np.uint64(index & 63)
    return bits


def rank_terminals(terminals) -> tuple[Terminal, ...]:
    """Terminals in longest-match tie-break order (see the module docstring)."""
    order = sorted(range(len(terminals)),
                   key=lambda i: (-terminals[i].priority, not terminals[i].literal, i))
    return tuple(terminals[i] for i in order)


def build_lexer(terminals, *, starts: "np.ndarray | None" = None, max_states: int = MAX_LEXER_STATES) -> LexerDFA:
    """The product DFA of ``terminals`` (which must each match at least one non-empty text).

    ``starts`` (uint64 [k, words], bitsets over the terminals in rank order, see
    :func:`rank_terminals`) are the terminal sets of the k start states; by default one
    start tracks every terminal."""
    ranked = rank_terminals(tuple(terminals))
    if not ranked:
        raise GrammarError("a grammar needs at least one terminal")
    dfas = []
    for terminal in ranked:
        dfa = terminal.dfa
        if dfa.num_states == 0:
            raise GrammarError(f"terminal {terminal.name} matches no string at all")
        if dfa.accepting[dfa.initial]:
            raise GrammarError(f"terminal {terminal.name} matches the empty string")
        dfas.append(dfa)

    # One table for all terminal DFAs: global state = offset of its terminal + local state.
    sizes = [d.num_states for d in dfas]
    offsets = np.zeros(len(dfas) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    owner = np.repeat(np.arange(len(dfas)), sizes)
    # int32 throughout: an int64 copy of a format's 25k-state table cost more than the product.
    big = np.concatenate([d.transitions for d in dfas], dtype=np.int32)
    np.add(big, offsets[owner].astype(np.int32)[:, None], out=big, where=big >= 0)  # one pass, not one per terminal
    big_accepting = np.concatenate([d.accepting for d in dfas])
    # Bytes that no terminal tells apart form one class; the product walks classes only.
    _, byte_class, representative = _byte_classes(big)

    words = (len(ranked) + 63) // 64
    # A product state is the array of its members' global states, in terminal order (each
    # terminal DFA contributes at most one). No transition re-enters a start state: a start
    # always means "the lexeme is empty", even for terminals whose DFAs cycle back to their
    # start (see member_product).
    initial = np.asarray([offsets[k] + d.initial for k, d in enumerate(dfas)], dtype=np.int64)
    if starts is None:
        start_pool, start_offsets = initial, np.array([0, initial.shape[0]], dtype=np.int64)
    else:
        tracked = np.unpackbits(np.ascontiguousarray(starts, dtype=np.uint64).reshape(-1, words).view(np.uint8),
                                axis=1, bitorder="little")[:, :len(ranked)].astype(bool)
        start_pool = initial[np.nonzero(tracked)[1]]
        start_offsets = np.zeros(tracked.shape[0] + 1, dtype=np.int64)
        np.cumsum(tracked.sum(axis=1), out=start_offsets[1:])
    class_rows, flat, member_offsets, overflowed = member_product(
        np.ascontiguousarray(big[:, representative]), start_pool, start_offsets, max_states)
    if overflowed:
        raise GrammarError(
            f"the lexer automaton of this grammar exceeds {max_states} states; "
            "some terminals overlap too much (simplify the terminal regexes)")
    num_states = class_rows.shape[0]
    transitions = np.ascontiguousarray(class_rows[:, byte_class], dtype=np.int32)
    state_of = np.repeat(np.arange(num_states), np.diff(member_offsets))
    terminal = owner[flat]
    bits = np.left_shift(np.uint64(1), (terminal & 63).astype(np.uint64))
    alive_bits = np.zeros((num_states, words), dtype=np.uint64)
    accept_bits = np.zeros((num_states, words), dtype=np.uint64)
    np.bitwise_or.at(alive_bits, (state_of, terminal >> 6), bits)
    accepted = big_accepting[flat]
    np.bitwise_or.at(accept_bits, (state_of[accepted], terminal[accepted] >> 6), bits[accepted])
    return LexerDFA(ranked, transitions, start_offsets.shape[0] - 1, accept_bits, alive_bits,
                    byte_class.astype(np.int64), representative.astype(np.int64))


def _byte_classes(table: np.ndarray):
    """(number of classes, class of each byte, a representative byte per class).

    Classes are numbered in the lexicographic order of their columns, as they always were:
    the lexer's state numbering follows from it, and masks saved on disk (keyed by lexer
    state) must keep meaning the same states. The distinct columns are found by a numba
    hash first, so only those few are sorted (by a numba kernel: ``np.unique(axis=0)`` cost more
    than the rest of the lexer).
    """
    class_in_first_order, first = column_classes(table)
    representative = sorted_columns(table, first)
    rank = np.empty(len(first), dtype=np.int64)
    rank[class_in_first_order[representative]] = np.arange(len(first))
    return len(first), rank[class_in_first_order], representative
