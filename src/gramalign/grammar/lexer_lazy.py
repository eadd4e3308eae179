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
enters the terminal's block, copied when the terminal is added (the product reads the
blocks themselves, over byte classes refined as terminals arrive). Rows, once written,
never change, so whatever is keyed by lexer states stays valid as the lexer grows.

Starts are not numbered first, as in the eager lexer: ``is_start`` marks them.
"""

from __future__ import annotations

import mmap

import numpy as np

from ..errors import GrammarError
from .grammar import Terminal
from .automata.kernels import column_classes
from .lexer import byte_classes_of, terminal_bits, terminal_index
from .lexer_kernels import multi_member_product, write_block, write_product_states
from .limits import active_limits


GROWTH = 4
"""Factor by which the lexer's arrays grow below :data:`SMALL_ROWS` and past
:data:`RESERVED_ROWS` (and the parser tables' per-lexer-state arrays always). A growth copies
the rows there are, in whichever mask first needs the room: by four, about a third of the
copying that doubling does."""

SMALL_ROWS = 1 << 11
"""Rows up to which the lexer's arrays are plain arrays grown by :data:`GROWTH` (copies of
at most 2 MiB; most schemas' lexers stay below: a reservation, mapped and unmapped, costs
~0.1 ms of their first mask)."""

RESERVED_ROWS = 1 << 18
"""Rows (up to ``max_states``) the lexer's arrays reserve when they outgrow
:data:`SMALL_ROWS`: address space, not memory (an anonymous mapping takes a page only when
a row on it is first written), so the lexer never copies its rows again below this. Growing
by copying, a lexer that reached a format's block (11k states of ``date-time``, 1 KiB each)
copied 11-45 MB in the mask that needed the room: 3-30 ms."""

SMALL_DFA = 64
"""A terminal automaton of at most this many states is read as its byte table; a larger one
as its distinct columns (``lexer.byte_classes_of``), kept with the automaton: a format's
spelling has thousands of states and a score of columns, and a shipped one is never
expanded to 256 (11k states of ``date-time``: 11 MB, 5-20 ms)."""

_EVERY_BYTE = np.arange(256, dtype=np.int64)


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
        self._block_start = np.zeros(16, dtype=np.int64)  # per terminal, its first lexer state
        self._byte_class = np.zeros(256, dtype=np.int64)
        self._representative = np.zeros(1, dtype=np.int64)
        self._unrefined: list = []  # terminals' automata the byte classes do not tell apart yet
        self._members: dict[bytes, int] = {}  # product state by its members (lexer states, in order)
        self._starts: dict[tuple[int, ...], int] = {}  # start by candidate set (sorted indices)
        self._views()

    def _views(self) -> None:
        n = self.num_states
        self.transitions = self._transitions[:n]
        self.accept_bits = self._accept[:n]
        self.alive_bits = self._alive[:n]
        self.is_start = self._is_start[:n]
        self.block_start = self._block_start[:len(self.terminals)]

    @property
    def words(self) -> int:
        return int(self._accept.shape[1])

    def add_terminal(self, terminal: Terminal) -> int:
        """Append ``terminal`` (its block of lexer states with it); returns its index (its
        bit in the bitsets)."""
        dfa = terminal.dfa
        if dfa.num_states == 0:
            raise GrammarError(f"terminal {terminal.name} matches no string at all")
        if dfa.accepting[dfa.initial]:
            raise GrammarError(f"terminal {terminal.name} matches the empty string")
        t = len(self.terminals)
        if t // 64 + 1 > self.words:
            self._accept = _widened(self._accept, t // 64 + 1, self.num_states)
            self._alive = _widened(self._alive, t // 64 + 1, self.num_states)
        self._room(dfa.num_states)
        first = self.num_states
        if dfa.num_states <= SMALL_DFA:
            column_of_byte, columns = _EVERY_BYTE, dfa.transitions
        else:  # (byte_classes reads the columns of such a terminal too; a shipped one keeps them)
            column_of_byte, columns = byte_classes_of(dfa)
        write_block(columns, column_of_byte, dfa.accepting, first, t >> 6, np.uint64(1) << np.uint64(t & 63),
                    self._transitions, self._alive, self._accept)
        self.num_states += dfa.num_states
        if t >= self._block_start.shape[0]:
            self._block_start = _grown(self._block_start, 2 * t, t)
        self._block_start[t] = first
        self.terminals.append(terminal)
        self._dfas.append(dfa)
        self._unrefined.append(dfa)
        self._views()
        return t

    def _room(self, count: int) -> None:
        needed = self.num_states + count
        if needed > self.max_states:
            raise GrammarError(f"the lexer automaton of this grammar exceeds {self.max_states} states; "
                               "some terminals overlap too much (simplify the terminal regexes)")
        capacity = self._transitions.shape[0]
        if needed <= capacity:
            return
        if needed <= SMALL_ROWS:
            capacity, reserve = min(SMALL_ROWS, max(needed, GROWTH * capacity)), False
        else:
            reserved = min(self.max_states, RESERVED_ROWS)
            capacity, reserve = max(needed, reserved if capacity < reserved else GROWTH * capacity), True
        used = self.num_states
        self._transitions = _grown(self._transitions, capacity, used, reserve)
        self._accept = _grown(self._accept, capacity, used, reserve)
        self._alive = _grown(self._alive, capacity, used, reserve)
        self._is_start = _grown(self._is_start, capacity, used, reserve)

    def add_start(self, terminals) -> int:
        """The start state of the candidate set ``terminals`` (indices), built on first call:
        the product of the terminals' blocks from their initial states (a set whose
        terminals share no first byte is one row into their blocks)."""
        key = tuple(sorted(set(terminals)))
        found = self._starts.get(key)
        if found is not None:
            return found
        if len(key) <= 1:  # one terminal's product is its initial row (none's, a row no byte leaves)
            return self._one_terminal_start(key[0] if key else -1)
        byte_class, representative = self.byte_classes()
        block_start = self._block_start
        initial = np.array([block_start[t] + self._dfas[t].initial for t in key], dtype=np.int64)
        rows, members, offsets, overflowed = multi_member_product(
            self._transitions, representative, initial, np.array([0, len(key)], dtype=np.int64), self.max_states)
        if overflowed:
            raise GrammarError(f"the lexer automaton of this grammar exceeds {self.max_states} states; "
                               "some terminals overlap too much (simplify the terminal regexes)")
        # number the product states: the start always anew, the others shared by members
        # (lexer states of the terminals' blocks), the same state in every start
        local = np.empty(rows.shape[0], dtype=np.int64)
        fresh, fresh_keys = [0], []
        keys = members.tobytes()
        base = self.num_states
        for i, (lo, hi) in enumerate(zip(offsets[1:-1].tolist(), offsets[2:].tolist()), start=1):
            member_key = keys[8 * lo:8 * hi]
            state = self._members.get(member_key)
            if state is None:
                state = base + len(fresh)
                fresh.append(i)
                fresh_keys.append(member_key)
            local[i] = state
        local[0] = base
        self._room(len(fresh))
        self._members.update(zip(fresh_keys, range(base + 1, base + len(fresh))))
        write_product_states(rows, byte_class, local, np.array(fresh, dtype=np.int64), base, members, offsets,
                             self._transitions, self._alive, self._accept)
        self.num_states += len(fresh)
        self._is_start[base] = 1
        self._starts[key] = base
        self._views()
        return base

    def _one_terminal_start(self, t: int) -> int:
        """``add_start`` of terminal ``t`` alone (the most common candidate set): a copy of its
        initial state's row, whose every transition leads into its block already, without the
        product's numbering and byte classes (a fifth of the time). ``t`` -1: the empty set's
        start (of a state that only reduces), which no byte leaves."""
        self._room(1)
        base = self.num_states
        if t >= 0:
            initial = int(self._block_start[t]) + self._dfas[t].initial
            self._transitions[base] = self._transitions[initial]
            self._alive[base] = self._alive[initial]
            self._accept[base] = self._accept[initial]
        else:
            self._transitions[base] = -1
            self._alive[base] = self._accept[base] = 0
        self.num_states += 1
        self._is_start[base] = 1
        self._starts[(t,) if t >= 0 else ()] = base
        self._views()
        return base

    def terminal_index(self, name: str) -> int:
        return terminal_index(self.terminals, name)

    def bits_of(self, names) -> np.ndarray:
        """The uint64 bitset of the named terminals."""
        return terminal_bits(self.terminals, names)

    def byte_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(class of each byte, a byte of each class) that every terminal so far treats alike
        (classes numbered by their first byte). The lexer's rows are whole 256-byte rows, so
        a finer partition later leaves every row right."""
        if self._unrefined:
            # bytes stay together where the classes so far and every new table's columns agree
            rows = [self._byte_class.astype(np.int32).reshape(1, 256)]
            rows += [d.transitions if d.num_states <= SMALL_DFA else byte_classes_of(d)[0].astype(np.int32).reshape(1, 256)
                     for d in self._unrefined]
            self._byte_class, self._representative = column_classes(np.concatenate(rows))
            self._unrefined = []
        return self._byte_class, self._representative


def _grown(array: np.ndarray, rows: int, used: int, reserve: bool = False) -> np.ndarray:
    """``array`` with room for ``rows`` rows (zeros; ``reserve``: in address space, see
    :func:`reserved_zeros`), its first ``used`` copied."""
    shape = (rows,) + array.shape[1:]
    grown = reserved_zeros(shape, array.dtype) if reserve else np.zeros(shape, array.dtype)
    grown[:used] = array[:used]
    return grown


def _widened(bits: np.ndarray, words: int, used: int) -> np.ndarray:
    wider = (reserved_zeros if bits.shape[0] > SMALL_ROWS else np.zeros)((bits.shape[0], words), bits.dtype)
    wider[:used, :bits.shape[1]] = bits[:used]
    return wider


def reserved_zeros(shape: tuple, dtype) -> np.ndarray:
    """A zero array whose memory is taken as it is first written: an anonymous private
    mapping, in pages of 4 KiB for its first 2 MiB (the rows copied in) and huge pages past
    them (where a format's block lands: half the page faults' time). Unmapped when the last
    view of it goes. np.zeros for a small array, and where there is no such mapping
    (Windows) or no address space left."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    size = count * dtype.itemsize
    if size < _SMALL_PAGES:
        return np.zeros(shape, dtype)
    try:
        buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (AttributeError, OSError, ValueError, OverflowError):
        return np.zeros(shape, dtype)
    try:
        buffer.madvise(mmap.MADV_HUGEPAGE, _SMALL_PAGES, size - _SMALL_PAGES)
    except (AttributeError, OSError, ValueError):  # no transparent huge pages here: small ones
        pass
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


_SMALL_PAGES = 1 << 21
