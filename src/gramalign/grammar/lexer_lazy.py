"""The lexer automaton built a start at a time, for grammars whose terminals and candidate
sets arrive on demand (a JSON Schema's, emitted where the parser goes).

:class:`LazyLexer` holds the same arrays as :class:`~.lexer.LexerDFA` (transitions, accept
and alive bitsets, per-terminal blocks), grown append-only: :meth:`LazyLexer.add_terminal`
appends a terminal (its bit is its index: terminals are ranked in the order they arrive,
which is exact where, as in JSON grammars, no two candidates of a state accept one lexeme),
and :meth:`LazyLexer.add_start` builds one candidate set's start. Its product states (two or
more live terminals) are computed by the eager lexer's kernel over that set alone, then
merged: a state whose members some earlier start already reached is that state again, so
states are shared across starts as in the eager lexer; a lexeme that becomes one terminal
enters the terminal's block, copied once when first entered. Rows, once written, never
change, so whatever is keyed by lexer states stays valid as the lexer grows.

Starts are not numbered first, as in the eager lexer: ``is_start`` marks them.
"""

from __future__ import annotations

import numpy as np

from ..errors import GrammarError
from .grammar import Terminal
from .lexer import byte_classes_of, product_inputs, terminal_bits, terminal_index
from .lexer_kernels import DEAD, copy_block, multi_member_product
from .limits import active_limits


class LazyLexer:
    """A lexer DFA grown a start at a time; see the module docstring."""

    def __init__(self, max_states: "int | None" = None):
        self.max_states = active_limits().max_lexer_states if max_states is None else max_states
        self.terminals: list[Terminal] = []
        self._dfas = []
        self.num_states = 0
        # capacity arrays; the public names are views of their first num_states rows
        self._transitions = np.empty((64, 256), dtype=np.int32)
        self._accept = np.zeros((64, 1), dtype=np.uint64)
        self._alive = np.zeros((64, 1), dtype=np.uint64)
        self._is_start = np.zeros(64, dtype=np.uint8)
        self.block_start = np.zeros(0, dtype=np.int64)  # per terminal, -1 until a lexeme first becomes it alone
        self._byte_class = np.zeros(256, dtype=np.int64)
        self._representative = np.zeros(1, dtype=np.int64)
        self._members: dict[bytes, int] = {}  # product state by its members (terminal, local state) pairs
        self._starts: dict[tuple[int, ...], int] = {}  # start by candidate set (sorted indices)
        self._views()

    def _views(self) -> None:
        n = self.num_states
        self.transitions = self._transitions[:n]
        self.accept_bits = self._accept[:n]
        self.alive_bits = self._alive[:n]
        self.is_start = self._is_start[:n]

    @property
    def words(self) -> int:
        return int(self._accept.shape[1])

    def add_terminal(self, terminal: Terminal) -> int:
        """Append ``terminal``; returns its index (its bit in the bitsets)."""
        dfa = terminal.dfa
        if dfa.num_states == 0:
            raise GrammarError(f"terminal {terminal.name} matches no string at all")
        if dfa.accepting[dfa.initial]:
            raise GrammarError(f"terminal {terminal.name} matches the empty string")
        self.terminals.append(terminal)
        self._dfas.append(dfa)
        self.block_start = np.append(self.block_start, np.int64(-1))
        # the byte classes refined by this terminal's (the lexer's rows are whole 256-byte rows,
        # so a finer partition later leaves every row right)
        own = byte_classes_of(dfa)[0].astype(np.int64)
        _, self._representative, self._byte_class = np.unique(self._byte_class * 256 + own, return_index=True,
                                                              return_inverse=True)
        words = (len(self.terminals) + 63) // 64
        if words > self.words:
            self._accept = _widened(self._accept, words)
            self._alive = _widened(self._alive, words)
            self._views()
        return len(self.terminals) - 1

    def _room(self, count: int) -> None:
        needed = self.num_states + count
        if needed > self.max_states:
            raise GrammarError(f"the lexer automaton of this grammar exceeds {self.max_states} states; "
                               "some terminals overlap too much (simplify the terminal regexes)")
        capacity = self._transitions.shape[0]
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity)
        self._transitions = _grown(self._transitions, capacity)
        self._accept = _grown(self._accept, capacity, zero=True)
        self._alive = _grown(self._alive, capacity, zero=True)
        self._is_start = _grown(self._is_start, capacity, zero=True)

    def _block(self, t: int) -> int:
        """The first lexer state of terminal ``t``'s block, copied on first use."""
        first = int(self.block_start[t])
        if first < 0:
            dfa = self._dfas[t]
            self._room(dfa.num_states)
            first = self.num_states
            self.block_start[t] = first
            block = slice(first, first + dfa.num_states)
            copy_block(dfa.transitions, first, self._transitions[block])
            bit = np.uint64(1) << np.uint64(t & 63)
            self._alive[block, t >> 6] = bit  # trimmed: every state of a terminal can still accept
            self._accept[block, t >> 6] = np.where(dfa.accepting, bit, np.uint64(0))
            self.num_states += dfa.num_states
        return first

    def add_start(self, terminals) -> int:
        """The start state of the candidate set ``terminals`` (indices), built on first call."""
        key = tuple(sorted(set(terminals)))
        found = self._starts.get(key)
        if found is not None:
            return found
        terms = np.asarray(key, dtype=np.int64)
        dfas = [self._dfas[t] for t in key]
        if dfas:
            # one terminal (most candidate sets of JSON: a colon, a key), or several that share
            # no first byte: no product
            firsts = np.stack([d.transitions[d.initial] for d in dfas])  # [terminals, 256]
            if (np.count_nonzero(firsts >= 0, axis=0) <= 1).all():
                return self._disjoint_start(key, firsts)
            # the eager lexer's product kernel, over this set's terminals alone
            byte_class, _, _, offsets, owner, big = product_inputs(dfas)
            initial = np.asarray([offsets[k] + d.initial for k, d in enumerate(dfas)], dtype=np.int64)
            rows, flat, member_offsets, overflowed = multi_member_product(
                big, initial, np.array([0, len(dfas)], dtype=np.int64), self.max_states)
            if overflowed:
                raise GrammarError(f"the lexer automaton of this grammar exceeds {self.max_states} states; "
                                   "some terminals overlap too much (simplify the terminal regexes)")
        else:
            rows = np.full((1, 1), -1, dtype=np.int32)
            byte_class = np.zeros(256, dtype=np.int64)
            flat, member_offsets = np.zeros(0, np.int64), np.zeros(2, np.int64)
            owner = offsets = None
        # number the product states: the start always anew, the others shared by members,
        # a state's key its members as (terminal index, its local state) pairs, the same
        # state in every start
        if len(flat):
            pairs_all = np.stack([terms[owner[flat]], flat - offsets[owner[flat]]], axis=1)
            keys = pairs_all.tobytes()
        local = np.empty(rows.shape[0], dtype=np.int64)
        fresh = []
        width = 16  # bytes per (terminal, state) pair
        for i in range(rows.shape[0]):
            lo, hi = int(member_offsets[i]), int(member_offsets[i + 1])
            member_key = keys[lo * width:hi * width] if hi > lo else b""
            state = self._members.get(member_key) if i else None
            if state is None:
                state = -1 - len(fresh)
                fresh.append((i, member_key, lo, hi))
            local[i] = state
        if owner is not None and fresh:  # blocks first: copying one may grow the arrays
            fresh_rows = rows[[i for i, _, _, _ in fresh]]
            singles = -2 - fresh_rows[fresh_rows <= -2].astype(np.int64)
            for k in np.unique(owner[singles]).tolist():
                self._block(int(terms[k]))
            block_of = self.block_start[terms]
        self._room(len(fresh))
        base = self.num_states
        for j, (i, member_key, _, _) in enumerate(fresh):
            local[i] = base + j
            if i:
                self._members[member_key] = base + j
        self.num_states += len(fresh)
        if fresh:
            index = np.array([i for i, _, _, _ in fresh], dtype=np.int64)
            targets = rows[index][:, byte_class].astype(np.int64)  # [fresh, 256]
            out = np.where(targets >= 0, local[np.maximum(targets, 0)], -1)
            single = targets <= -2
            if single.any():
                g = -2 - targets[single]
                k = owner[g]
                out[single] = block_of[k] + g - offsets[k]
            self._transitions[base:base + len(fresh)] = out
            # each member's terminal is alive in its product state, and accepts where its state does
            counts = np.array([hi - lo for _, _, lo, hi in fresh], dtype=np.int64)
            if counts.sum():  # (an empty candidate set's start has no members)
                # the members' global states (a terminal's offset plus its own state)
                members = np.concatenate([flat[lo:hi] for _, _, lo, hi in fresh])
                state_of = base + np.repeat(np.arange(len(fresh)), counts)
                t = terms[owner[members]]
                bits = np.left_shift(np.uint64(1), (t & 63).astype(np.uint64))
                np.bitwise_or.at(self._alive, (state_of, t >> 6), bits)
                accepts = np.concatenate([d.accepting for d in dfas])[members]
                np.bitwise_or.at(self._accept, (state_of[accepts], t[accepts] >> 6), bits[accepts])
        start = int(local[0])
        self._is_start[start] = 1
        self._starts[key] = start
        self._views()
        return start

    def _disjoint_start(self, key: tuple, firsts: np.ndarray) -> int:
        """The start of a set of terminals no two of which share a first byte (one terminal;
        ``,`` or ``}``; a value's string, number, ``{``, ``[`` and literals): a state of its own
        (a start is never re-entered) whose every byte enters one terminal's block."""
        row = np.full(256, DEAD, dtype=np.int32)
        alive = [0] * self.words
        for t, first_row in zip(key, firsts):
            first = self._block(t)
            np.copyto(row, first_row + np.int32(first), where=first_row >= 0)
            alive[t >> 6] |= 1 << (t & 63)
        self._room(1)
        start = self.num_states
        self._transitions[start] = row
        self._alive[start] = np.array(alive, dtype=np.uint64)
        self._accept[start] = 0  # no terminal matches the empty string (add_terminal)
        self._is_start[start] = 1
        self.num_states += 1
        self._starts[key] = start
        self._views()
        return start

    def terminal_index(self, name: str) -> int:
        return terminal_index(self.terminals, name)

    def bits_of(self, names) -> np.ndarray:
        """The uint64 bitset of the named terminals."""
        return terminal_bits(self.terminals, names)

    def byte_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(class of each byte, a byte of each class) that every terminal so far treats alike."""
        return self._byte_class.reshape(256), self._representative.astype(np.int64)


def _grown(array: np.ndarray, rows: int, zero: bool = False) -> np.ndarray:
    grown = (np.zeros if zero else np.empty)((rows,) + array.shape[1:], dtype=array.dtype)
    grown[:array.shape[0]] = array
    return grown


def _widened(bits: np.ndarray, words: int) -> np.ndarray:
    wider = np.zeros((bits.shape[0], words), dtype=bits.dtype)
    wider[:, :bits.shape[1]] = bits
    return wider
