"""Byte-level deterministic finite automata: the form every terminal takes before it meets tokens.

Besides the :class:`ByteDFA` container this module holds the construction machinery:

* :class:`NFA`, a nondeterministic automaton with ε-moves whose edges are labelled by sets
  of integers (byte values or Unicode code points) given as sorted disjoint intervals;
* :func:`nfa_to_byte_dfa` (labels are bytes) and :func:`nfa_to_utf8_dfa` (labels are code
  points, the result reads their UTF-8 encoding) — subset construction, trimming and
  minimisation;
* :func:`dfa_from_table` to trim and minimise any byte transition table, and
  :func:`literal_dfa` for a finite set of byte strings.

Internally every automaton is first built over *symbol classes*: the coarsest partition of
the alphabet such that every edge label is a union of classes. Typical patterns need only a
handful of classes even when a label such as Unicode ``\\w`` has hundreds of intervals, so
determinisation and minimisation work on small dense tables.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

import numpy as np

from ...errors import GrammarError
from ..limits import active_limits, check_size, check_time
from .cache import AutomatonCache
from .kernels import (canonical_order, column_classes, common_word, epsilon_closures, expand_columns,
                      literal_words_dfa, minimal_dfa, row_runs, subset_construction)

__all__ = [
    "DEAD",
    "ByteDFA",
    "IntervalSet",
    "NFA",
    "StateLimitError",
    "dfa_from_table",
    "empty_byte_dfa",
    "literal_dfa",
    "minimize",
    "nfa_to_byte_dfa",
    "nfa_to_utf8_dfa",
    "renumbered",
    "symbol_classes",
]

DEAD = -1
"""Transition target meaning "no continuation can be accepted"."""

IntervalSet = tuple[tuple[int, int], ...]
"""A set of integers as sorted, disjoint, non-adjacent inclusive ``(lo, hi)`` intervals."""

_BYTES = np.arange(256, dtype=np.int64)  # each byte its own column

MAX_CODE_POINT = 0x10FFFF
UNICODE_SCALARS: IntervalSet = ((0, 0xD7FF), (0xE000, MAX_CODE_POINT))
"""Every code point UTF-8 can encode (surrogates excluded)."""


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """A trimmed, minimal DFA over bytes.

    ``transitions[s, b]`` is the state after reading byte ``b`` in state ``s``, or ``DEAD``.
    Every state is reachable from ``initial`` and can reach an accepting state, so a
    non-dead state always means "this prefix can still be completed". The empty language
    has no states and ``initial == DEAD``.
    """

    transitions: np.ndarray  # int32 [n_states, 256]
    initial: int
    accepting: np.ndarray  # bool [n_states]

    @property
    def num_states(self) -> int:
        return int(self.transitions.shape[0])

    def known_columns(self) -> "tuple[np.ndarray, np.ndarray] | None":
        """(column of each byte, the table's distinct columns) as :func:`distinct_columns`
        gives them, where they are known without reading the byte table (a shipped automaton
        not expanded yet keeps them); None otherwise."""
        return None

    def __repr__(self) -> str:
        # by content, cheaply: shapes holding automata are sorted by their repr (the table's
        # own repr took a third of a millisecond)
        return f"ByteDFA({self.num_states} states, digest {self.digest.hex()})"

    @cached_property
    def digest(self) -> bytes:
        """A 16-byte hash of the automaton's content (equal automata, equal digests): the
        key of the process-wide automaton caches. The table is hashed as runs of equal
        entries per row (``row_runs``): rows are mostly DEAD, and hashing the whole table
        cost a fifth of a small schema's compile."""
        digest = hashlib.blake2b(row_runs(np.ascontiguousarray(self.transitions)).tobytes(), digest_size=16)
        digest.update(self.accepting.tobytes())
        digest.update(str(self.initial).encode())
        return digest.digest()

    def advance(self, state: int, data: bytes) -> int:
        """State after reading ``data`` from ``state``; ``DEAD`` as soon as no completion exists."""
        table = self.transitions
        for byte in data:
            if state == DEAD:
                return DEAD
            state = int(table[state, byte])
        return state

    def matches(self, data: bytes) -> bool:
        """True when ``data`` as a whole is in the language (``re.fullmatch`` semantics)."""
        state = self.advance(self.initial, data)
        return state != DEAD and bool(self.accepting[state])

    def is_prefix(self, data: bytes) -> bool:
        """True when ``data`` can be extended to a string of the language."""
        return self.advance(self.initial, data) != DEAD

    def common_word(self, other: "ByteDFA", max_pairs: int = 1 << 16) -> "bytes | None":
        """A shortest string of both languages, or None where they share none, found breadth
        first over pairs of states (the product is never built). Raises StateLimitError past
        ``max_pairs`` pairs.

        >>> from gramalign.grammar.automata.regex import regex_to_dfa
        >>> a, b = regex_to_dfa("[a-c]+x"), regex_to_dfa("b*x|cc*x")
        >>> a.common_word(b), a.common_word(regex_to_dfa("y"))
        (b'bx', None)
        """
        columns = other.known_columns()
        class_b, table_b = columns if columns is not None else (_BYTES, other.transitions)
        word, status = common_word(self.transitions, self.initial, self.accepting, table_b, class_b, other.initial,
                                   other.accepting, max_pairs)
        if status < 0:
            raise StateLimitError(f"more than {max_pairs} pairs of states before a common word")
        return bytes(word) if status else None

    def shortest_word(self) -> bytes:
        """A shortest string of the (non-empty) language, found breadth first."""
        if self.initial == DEAD:
            raise ValueError("an empty automaton has no word")
        came = {self.initial: (None, 0)}  # state -> (the state before it, the byte read)
        frontier = [self.initial]
        while frontier:
            following = []
            for state in frontier:
                if self.accepting[state]:
                    word = bytearray()
                    while came[state][0] is not None:
                        state, byte = came[state]
                        word.append(byte)
                    return bytes(reversed(word))
                for byte in np.flatnonzero(self.transitions[state] >= 0).tolist():
                    target = int(self.transitions[state, byte])
                    if target not in came:
                        came[target] = (state, byte)
                        following.append(target)
            frontier = following
        raise ValueError("no accepting state is reachable")  # (a trimmed automaton has one)


class StateLimitError(GrammarError):
    """An automaton grew beyond the configured number of states."""


def empty_byte_dfa() -> ByteDFA:
    """The DFA of the empty language: no states, ``initial == DEAD``."""
    return ByteDFA(np.zeros((0, 256), dtype=np.int32), DEAD, np.zeros(0, dtype=bool))


# --------------------------------------------------------------------------- interval sets


def normalize_intervals(intervals: Iterable[tuple[int, int]]) -> IntervalSet:
    """Sort, drop empty intervals, and merge overlapping or adjacent ones."""
    merged: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if lo > hi:
            continue
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def intervals_from_points(points: Iterable[int]) -> IntervalSet:
    """Interval set of a collection of integers."""
    runs: list[list[int]] = []
    for point in sorted(set(points)):
        if runs and point == runs[-1][1] + 1:
            runs[-1][1] = point
        else:
            runs.append([point, point])
    return tuple((lo, hi) for lo, hi in runs)


def union_intervals(*sets: IntervalSet) -> IntervalSet:
    return normalize_intervals(interval for s in sets for interval in s)


def subtract_intervals(base: IntervalSet, removed: IntervalSet) -> IntervalSet:
    """``base`` minus ``removed``; both normalised."""
    result: list[tuple[int, int]] = []
    starts = [lo for lo, _ in removed]
    for lo, hi in base:
        # Only intervals of ``removed`` that can overlap [lo, hi] are visited.
        index = max(bisect_left(starts, lo) - 1, 0)
        cursor = lo
        while index < len(removed) and removed[index][0] <= hi:
            r_lo, r_hi = removed[index]
            if r_hi >= cursor:
                if r_lo > cursor:
                    result.append((cursor, r_lo - 1))
                cursor = max(cursor, r_hi + 1)
            index += 1
        if cursor <= hi:
            result.append((cursor, hi))
    return tuple(result)


def intersect_intervals(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    return subtract_intervals(a, subtract_intervals(a, b))


def complement_intervals(intervals: IntervalSet, universe: IntervalSet = UNICODE_SCALARS) -> IntervalSet:
    """Everything in ``universe`` that is not in ``intervals``."""
    return subtract_intervals(universe, intervals)


# --------------------------------------------------------------------------- NFA


class NFA:
    """A nondeterministic automaton with ε-moves over an integer alphabet.

    Edge labels are :data:`IntervalSet` values (bytes 0..255 or code points). ``max_states``
    bounds :meth:`add_state`, so a huge expansion fails early with :class:`StateLimitError`.
    """

    def __init__(self, max_states: int | None = None):
        self.max_states = max_states
        self.epsilon: list[list[int]] = []
        self.edges: list[list[tuple[int, int]]] = []  # per state: (label id, target)
        self.labels: list[IntervalSet] = []
        self._label_ids: dict[IntervalSet, int] = {}
        self.accepting: set[int] = set()
        self.initial = self.add_state()

    @property
    def num_states(self) -> int:
        return len(self.edges)

    def add_state(self, accepting: bool = False) -> int:
        state = len(self.edges)
        if self.max_states is not None and state >= self.max_states:
            raise StateLimitError(f"the NFA needs more than {self.max_states} states")
        self.epsilon.append([])
        self.edges.append([])
        if accepting:
            self.accepting.add(state)
        return state

    def add_epsilon(self, source: int, target: int) -> None:
        self.epsilon[source].append(target)

    def add_edge(self, source: int, symbols: Iterable[tuple[int, int]], target: int) -> None:
        """Edge taken on any symbol of ``symbols`` (inclusive ``(lo, hi)`` intervals)."""
        symbols = tuple(symbols)
        label = self._label_ids.get(symbols)
        if label is None:
            normalized = normalize_intervals(symbols)
            label = self._label_ids.get(normalized)
            if label is None:
                label = self._label_ids[normalized] = len(self.labels)
                self.labels.append(normalized)
            self._label_ids[symbols] = label
        if self.labels[label]:
            self.edges[source].append((label, target))


# --------------------------------------------------------------------------- class-level DFA


@dataclass
class _ClassDFA:
    """A DFA over symbol classes: ``table[s, c]`` is the target on any symbol of class ``c``."""

    table: np.ndarray  # int32 [n, n_classes]
    initial: int
    accepting: np.ndarray  # bool [n]

    @property
    def num_states(self) -> int:
        return int(self.table.shape[0])


def _empty_class_dfa(num_classes: int) -> _ClassDFA:
    return _ClassDFA(np.zeros((0, num_classes), dtype=np.int32), DEAD, np.zeros(0, dtype=bool))


def symbol_classes(labels: Sequence[IntervalSet]) -> tuple[list[IntervalSet], list[list[int]]]:
    """Split the alphabet into classes of symbols that every label treats alike.

    Returns the intervals of each class and, for each label, the classes it contains.
    Symbols outside every label belong to no class (they always lead to DEAD).
    """
    events: list[tuple[int, int]] = []
    for label, intervals in enumerate(labels):
        for lo, hi in intervals:
            events.append((lo, label))
            events.append((hi + 1, ~label))
    events.sort()
    class_of_signature: dict[frozenset[int], int] = {}
    class_intervals: list[list[tuple[int, int]]] = []
    active: set[int] = set()
    index = 0
    while index < len(events):
        position = events[index][0]
        while index < len(events) and events[index][0] == position:
            label = events[index][1]
            if label >= 0:
                active.add(label)
            else:
                active.discard(~label)
            index += 1
        if active and index < len(events):
            signature = frozenset(active)
            symbol_class = class_of_signature.get(signature)
            if symbol_class is None:
                symbol_class = class_of_signature[signature] = len(class_intervals)
                class_intervals.append([])
            class_intervals[symbol_class].append((position, events[index][0] - 1))
    label_classes: list[list[int]] = [[] for _ in labels]
    for signature, symbol_class in class_of_signature.items():
        for label in signature:
            label_classes[label].append(symbol_class)
    for classes in label_classes:
        classes.sort()
    return [normalize_intervals(ivs) for ivs in class_intervals], label_classes


def _determinize(
    nfa: NFA, max_states: int, universe: IntervalSet | None = None
) -> tuple[_ClassDFA, list[IntervalSet]]:
    """Subset construction over symbol classes; fails as soon as ``max_states`` is exceeded.

    Symbols outside ``universe`` (when given) are ignored, as if no edge carried them.
    """
    class_intervals, label_classes = symbol_classes(nfa.labels)
    if universe is not None:
        clipped = [intersect_intervals(ivs, universe) for ivs in class_intervals]
        new_index = {}
        for symbol_class, intervals in enumerate(clipped):
            if intervals:
                new_index[symbol_class] = len(new_index)
        class_intervals = [ivs for ivs in clipped if ivs]
        label_classes = [[new_index[c] for c in classes if c in new_index] for classes in label_classes]
    num_classes = len(class_intervals)
    n = nfa.num_states
    # The NFA as arrays for the kernels: ε-moves and labelled edges in CSR form by source,
    # one labelled entry per symbol class of the edge's label.
    eps_lengths = np.fromiter((len(targets) for targets in nfa.epsilon), dtype=np.int64, count=n)
    eps_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(eps_lengths, out=eps_offsets[1:])
    eps_targets = np.fromiter((t for targets in nfa.epsilon for t in targets), dtype=np.int64,
                              count=int(eps_offsets[-1]))
    class_lengths = np.fromiter((len(classes) for classes in label_classes), dtype=np.int64,
                                count=len(label_classes))
    class_offsets = np.zeros(len(label_classes) + 1, dtype=np.int64)
    np.cumsum(class_lengths, out=class_offsets[1:])
    class_pool = np.fromiter((c for classes in label_classes for c in classes), dtype=np.int64,
                             count=int(class_offsets[-1]))
    edge_counts = np.fromiter((len(edges) for edges in nfa.edges), dtype=np.int64, count=n)
    num_edges = int(edge_counts.sum())
    edge_label = np.fromiter((label for edges in nfa.edges for label, _ in edges), dtype=np.int64, count=num_edges)
    edge_target = np.fromiter((target for edges in nfa.edges for _, target in edges), dtype=np.int64,
                              count=num_edges)
    per_edge = class_lengths[edge_label]  # classes each edge expands to
    expanded_starts = np.cumsum(per_edge) - per_edge
    within = np.arange(int(per_edge.sum()), dtype=np.int64) - np.repeat(expanded_starts, per_edge)
    expanded_class = class_pool[np.repeat(class_offsets[:-1][edge_label], per_edge) + within]
    expanded_target = np.repeat(edge_target, per_edge)
    source_of_edge = np.repeat(np.arange(n, dtype=np.int64), edge_counts)
    edge_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.repeat(source_of_edge, per_edge), minlength=n), out=edge_offsets[1:])
    accepting = np.zeros(n, dtype=bool)
    accepting[list(nfa.accepting)] = True
    # A subset is represented by its "important" states only (those with labelled edges or
    # accepting): subsets that differ only in pass-through states behave identically.
    important = (edge_counts > 0) | accepting
    limits = active_limits()
    # Closure members are int64 and the pool doubles as it grows: max_work_bytes // 32 of them.
    closure_offsets, closure_pool, overflowed = epsilon_closures(n, eps_offsets, eps_targets, important,
                                                                 limits.max_subset_work, limits.max_work_bytes // 32)
    if overflowed:
        raise StateLimitError(f"the pattern's ε-closures need more than max_subset_work={limits.max_subset_work} "
                              f"steps or max_work_bytes={limits.max_work_bytes} of memory (a large repeat of a "
                              "repeat, such as (.*){1,32000}: write it without the outer count)")
    table, is_accepting, overflowed = subset_construction(
        n, nfa.initial, accepting, edge_offsets, expanded_class, expanded_target, closure_offsets, closure_pool,
        num_classes, max_states, limits.max_subset_work)
    if overflowed:
        raise StateLimitError(f"the DFA needs more than max_states={max_states} states or more than "
                              f"max_subset_work={active_limits().max_subset_work} steps "
                              "(the pattern's automaton explodes under determinisation)")
    if table.shape[0] == 0:
        return _empty_class_dfa(num_classes), class_intervals
    return _ClassDFA(table, 0, is_accepting), class_intervals


def _minimal(dfa: _ClassDFA) -> _ClassDFA:
    """Trimmed minimal equivalent of a class DFA, numbered breadth-first from 0 = initial
    (children in class order); no states for the empty language."""
    table, accepting = minimal_dfa(dfa.table, dfa.initial, dfa.accepting)
    return _ClassDFA(table, 0 if table.shape[0] else DEAD, accepting)


# --------------------------------------------------------------------------- byte DFAs


def _byte_dfa_from_classes(dfa: _ClassDFA, class_of_byte: np.ndarray) -> ByteDFA:
    """Expand a class DFA to 256 columns; ``class_of_byte`` is -1 for bytes in no class."""
    if dfa.num_states == 0:
        return empty_byte_dfa()
    return ByteDFA(expand_columns(dfa.table, class_of_byte), dfa.initial, dfa.accepting)


def nfa_to_byte_dfa(nfa: NFA, *, max_states: int = 50_000) -> ByteDFA:
    """Determinise, trim and minimise an NFA whose labels are byte values (0..255).

    Raises :class:`StateLimitError` as soon as determinisation needs more than
    ``max_states`` states.
    """
    check_time("determinising an automaton")
    for label in nfa.labels:
        if label[0][0] < 0 or label[-1][1] > 255:
            raise ValueError(f"byte NFA label out of range 0..255: {label!r}")
    dfa, class_intervals = _determinize(nfa, max_states)
    dfa = _minimal(dfa)
    class_of_byte = np.full(256, -1, dtype=np.int64)
    for symbol_class, intervals in enumerate(class_intervals):
        for lo, hi in intervals:
            class_of_byte[lo : hi + 1] = symbol_class
    return _byte_dfa_from_classes(dfa, class_of_byte)


def dfa_from_table(transitions: np.ndarray, initial: int, accepting: np.ndarray) -> ByteDFA:
    """Trimmed minimal ByteDFA equivalent to an arbitrary (possibly redundant) byte table.

    ``transitions`` is int [n, 256] with DEAD = -1; ``initial`` may be DEAD.
    """
    transitions = np.asarray(transitions, dtype=np.int32)
    accepting = np.asarray(accepting, dtype=bool)
    if transitions.ndim != 2 or transitions.shape[1] != 256:
        raise ValueError("transitions must have shape [n_states, 256]")
    n = transitions.shape[0]
    if initial == DEAD or n == 0:
        return empty_byte_dfa()
    columns, class_of_byte = distinct_columns(transitions)
    return dfa_from_classes(columns, initial, accepting, class_of_byte)


def renumbered(transitions: np.ndarray, initial: int, accepting: np.ndarray) -> ByteDFA:
    """:func:`dfa_from_table` for a table already trimmed and minimal by construction: only
    its numbering (breadth-first, bytes in order) is left to do, without the minimisation."""
    new_id = canonical_order(transitions, initial)
    table = np.empty_like(transitions)
    table[new_id] = np.append(new_id, np.int32(DEAD))[transitions]
    result_accepting = np.empty_like(accepting)
    result_accepting[new_id] = accepting
    return ByteDFA(table, 0, result_accepting)


def dfa_from_classes(table: np.ndarray, initial: int, accepting: np.ndarray, class_of_byte: np.ndarray) -> ByteDFA:
    """Trimmed minimal ByteDFA of a table over byte classes (``class_of_byte[b]`` is byte b's
    column, -1 for a byte that always leads to DEAD)."""
    dfa = _minimal(_ClassDFA(np.asarray(table, dtype=np.int32), int(initial), np.asarray(accepting, dtype=bool)))
    return _byte_dfa_from_classes(dfa, class_of_byte)


def distinct_columns(transitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes whose columns are identical behave as one symbol: (distinct columns, class of byte),
    classes numbered in the order of their first byte."""
    class_of_byte, first_byte = column_classes(transitions)
    return np.ascontiguousarray(transitions[:, first_byte]), class_of_byte


def minimize(dfa: ByteDFA) -> ByteDFA:
    """Trimmed minimal ByteDFA for the same language (numbered breadth-first, initial 0)."""
    return dfa_from_table(dfa.transitions, dfa.initial, dfa.accepting)


def literal_dfa(strings: Iterable[bytes], *, max_states: int | None = None) -> ByteDFA:
    """Minimal ByteDFA accepting exactly the given byte strings (empty iterable: empty language).

    Built incrementally over the sorted strings (Daciuk et al., 2000): a finished branch is
    merged at once with an equal state, so memory follows the minimal automaton, not the
    total length of the strings (100,000 enum members sharing a long suffix stay small).
    Raises StateLimitError when the minimal automaton needs more than ``max_states``.
    """
    words = sorted({bytes(data) for data in strings})
    if not words:
        return empty_byte_dfa()
    key = hashlib.blake2b(b"".join(len(word).to_bytes(4, "little") + word for word in words), digest_size=16).digest()
    found = _LITERALS.get((key, max_states))
    if found is None:
        found = _LITERALS.put((key, max_states), _literal_dfa(words, max_states))
    return found


TRIE_CELLS = 1 << 18
"""Words whose trie fits this many (state, byte) cells are minimised from the trie in one
kernel; larger sets are built incrementally (Daciuk et al.), minimal all along."""


def _literal_dfa(words: list[bytes], max_states: int | None) -> ByteDFA:
    if len(words) > 1:
        joined = b"".join(words)
        used = sorted(set(joined))
        if (len(joined) + 1) * len(used) <= TRIE_CELLS:
            starts = np.zeros(len(words) + 1, dtype=np.int64)
            np.cumsum([len(word) for word in words], out=starts[1:])
            transitions, accepting = literal_words_dfa(np.frombuffer(joined, dtype=np.uint8), starts,
                                                       np.array(used, dtype=np.int64))
            if max_states is not None and transitions.shape[0] > max_states:
                raise StateLimitError(f"the literal strings need more than {max_states} automaton states")
            return ByteDFA(transitions, 0, accepting)
    if len(words) == 1:  # one word (an object key, a const): its chain is already minimal and canonical
        word = np.frombuffer(words[0], dtype=np.uint8)
        if max_states is not None and len(word) + 1 > max_states:
            raise StateLimitError(f"the literal strings need more than {max_states} automaton states")
        transitions = np.full((len(word) + 1, 256), DEAD, dtype=np.int32)
        transitions[np.arange(len(word)), word] = np.arange(1, len(word) + 1, dtype=np.int32)
        accepting = np.zeros(len(word) + 1, dtype=bool)
        accepting[-1] = True
        return ByteDFA(transitions, 0, accepting)
    children: dict[int, dict[int, int]] = {0: {}}
    final = {0: False}
    register: dict[tuple, int] = {}
    next_id = 1

    def merge_tail(path: list[int], word: bytes, keep: int) -> None:
        """Replace each state of ``path`` below depth ``keep`` by an equal registered one."""
        for depth in range(len(path) - 1, keep, -1):
            state = path[depth]
            signature = (final[state], tuple(sorted(children[state].items())))
            twin = register.get(signature)
            if twin is None:
                register[signature] = state
                if max_states is not None and len(register) > max_states:
                    raise StateLimitError(f"the literal strings need more than {max_states} automaton states")
            else:
                children[path[depth - 1]][word[depth - 1]] = twin
                del children[state], final[state]

    previous = b""
    path = [0]
    for word in words:
        common = 0
        for a, b in zip(previous, word):
            if a != b:
                break
            common += 1
        merge_tail(path, previous, common)
        del path[common + 1:]
        for byte in word[common:]:
            children[next_id], final[next_id] = {}, False
            children[path[-1]][byte] = next_id
            path.append(next_id)
            next_id += 1
        final[path[-1]] = True
        previous = word
    merge_tail(path, previous, 0)
    # The register leaves the automaton minimal (Daciuk et al.), so only the numbering
    # dfa_from_table would give remains to be done: breadth-first, bytes in order, as
    # canonical_order numbers the class table (classes are in the order of their first byte).
    order = [0]
    number = {0: 0}
    rows, columns, targets = [], [], []  # the transitions, written into the table at once
    for row, state in enumerate(order):  # ``order`` grows while it is walked
        edges = children[state]
        for byte in sorted(edges):
            target = edges[byte]
            if target not in number:
                number[target] = len(order)
                order.append(target)
            rows.append(row)
            columns.append(byte)
            targets.append(number[target])
    transitions = np.full((len(order), 256), DEAD, dtype=np.int32)
    transitions[rows, columns] = targets
    accepting = np.array([final[state] for state in order], dtype=bool)
    return ByteDFA(transitions, 0, accepting)



_LITERALS = AutomatonCache("literal strings", 32 << 20)
"""Object keys, property name sets and enums recur across the schemas of a process."""


# --------------------------------------------------------------------------- UTF-8


# (lead byte prefix, continuation bytes, smallest and largest code point) per encoded length.
# The code point bounds exclude overlong encodings and code points above U+10FFFF; lead
# byte = prefix + (code point >> 6 * continuations).
_UTF8_LEADS = (
    (0xC0, 1, 0x80, 0x7FF),
    (0xE0, 2, 0x800, 0xFFFF),
    (0xF0, 3, 0x10000, MAX_CODE_POINT),
)

_Pieces = tuple[tuple[int, int, int], ...]  # (lo, hi, target) sorted disjoint code point ranges


class _Utf8Encoder:
    """Turns code point transition functions into byte-level states.

    The state reached after a lead byte, or after some continuation bytes, is determined by
    the number of continuation bytes still expected and by the map "code point offset within
    the current block -> target"; states are shared whenever both coincide, which keeps the
    expansion of large Unicode classes small and, for a minimal code point DFA, minimal.
    """

    def __init__(self, first_free_state: int, max_states: int):
        self.num_states = first_free_state
        self.max_states = max_states
        self.memo: dict[tuple[int, _Pieces], int] = {}
        # Transition runs (state, first byte, last byte, target), filled into a table at the end.
        self.run_state: list[int] = []
        self.run_lo: list[int] = []
        self.run_hi: list[int] = []
        self.run_target: list[int] = []

    def _add_run(self, state: int, lo: int, hi: int, target: int) -> None:
        self.run_state.append(state)
        self.run_lo.append(lo)
        self.run_hi.append(hi)
        self.run_target.append(target)

    def encode_state(self, state: int, pieces: _Pieces) -> None:
        """Add the byte transitions of a code point state whose transition function is ``pieces``."""
        his = [hi for _, hi, _ in pieces]
        for lo, hi, target in _clip(pieces, his, 0, 0x7F):
            self._add_run(state, lo, hi, target)
        for lead_prefix, continuations, cp_lo, cp_hi in _UTF8_LEADS:
            in_range = _clip(pieces, his, cp_lo, cp_hi)
            if in_range:
                self._add_prefix_bytes(state, in_range, lead_prefix, continuations)

    def _add_prefix_bytes(self, state: int, pieces: _Pieces, first_byte: int, remaining: int) -> None:
        """Transitions of ``state`` on one byte that fixes the top bits of the code point offset.

        ``pieces`` lie in [0, 64 * 64**remaining) (lead bytes: the valid range of their
        length); byte ``first_byte + j`` selects the j-th block of ``64**remaining`` offsets,
        after which ``remaining`` continuation bytes follow.
        """
        unit = 64**remaining
        partial: dict[int, list[tuple[int, int, int]]] = {}
        for lo, hi, target in pieces:
            first_full = -(-lo // unit)
            last_full = (hi + 1) // unit - 1
            if first_full <= last_full:
                nxt = target if remaining == 0 else self._continuation(remaining, ((0, unit - 1, target),))
                self._add_run(state, first_byte + first_full, first_byte + last_full, nxt)
            # Blocks only partly covered by this piece (at most one at each end).
            for block in {lo // unit, hi // unit}:
                if first_full <= block <= last_full:
                    continue
                base = block * unit
                partial.setdefault(block, []).append((max(lo, base) - base, min(hi, base + unit - 1) - base, target))
        for block, block_pieces in partial.items():
            self._add_run(state, first_byte + block, first_byte + block, self._continuation(remaining, tuple(block_pieces)))

    def _continuation(self, remaining: int, residual: _Pieces) -> int:
        """State expecting ``remaining`` continuation bytes, then going on as ``residual`` says."""
        key = (remaining, residual)
        state = self.memo.get(key)
        if state is None:
            state = self.memo[key] = self.num_states
            self.num_states += 1
            if self.num_states > self.max_states:
                raise StateLimitError(f"the UTF-8 byte DFA needs more than max_states={self.max_states} states")
            self._add_prefix_bytes(state, residual, 0x80, remaining - 1)
        return state

    def table(self) -> np.ndarray:
        transitions = np.full((self.num_states, 256), DEAD, dtype=np.int32)
        if self.run_state:
            lo = np.array(self.run_lo, dtype=np.int64)
            lengths = np.array(self.run_hi, dtype=np.int64) - lo + 1
            starts = np.cumsum(lengths) - lengths
            columns = np.arange(int(lengths.sum())) - np.repeat(starts - lo, lengths)
            rows = np.repeat(np.array(self.run_state, dtype=np.int64), lengths)
            transitions[rows, columns] = np.repeat(np.array(self.run_target, dtype=np.int32), lengths)
        return transitions


def _clip(pieces: _Pieces, his: list[int], lo: int, hi: int) -> _Pieces:
    """The parts of ``pieces`` inside [lo, hi]."""
    result = []
    index = bisect_left(his, lo)
    while index < len(pieces) and pieces[index][0] <= hi:
        p_lo, p_hi, target = pieces[index]
        result.append((max(p_lo, lo), min(p_hi, hi), target))
        index += 1
    return tuple(result)


def _code_point_pieces(dfa: _ClassDFA, class_intervals: list[IntervalSet]) -> list[_Pieces]:
    """Per state, its transition function as sorted (lo, hi, target) code point ranges."""
    atoms = sorted((lo, hi, c) for c, intervals in enumerate(class_intervals) for lo, hi in intervals)
    n = dfa.num_states
    if not atoms:
        return [()] * n
    lo_arr = np.array([a[0] for a in atoms], dtype=np.int64)
    hi_arr = np.array([a[1] for a in atoms], dtype=np.int64)
    class_arr = np.array([a[2] for a in atoms], dtype=np.int64)
    adjacent = lo_arr[1:] == hi_arr[:-1] + 1
    result: list[_Pieces] = []
    chunk = max(1, 1_000_000 // len(atoms))
    pieces = 0
    for first in range(0, n, chunk):
        check_time("the code point ranges of an automaton")
        targets = dfa.table[first : first + chunk][:, class_arr]  # [rows, atoms]
        keep = targets != DEAD
        # A piece is a maximal run of adjacent atoms with one target.
        continues = np.zeros_like(keep)
        continues[:, 1:] = keep[:, :-1] & adjacent & (targets[:, 1:] == targets[:, :-1])
        starts = keep & ~continues
        ends = keep.copy()
        ends[:, :-1] &= ~continues[:, 1:]
        start_rows, start_cols = np.nonzero(starts)
        # each piece becomes a Python tuple (~100 bytes): refuse before building millions
        pieces += len(start_rows)
        check_size("max_work_bytes", 100 * pieces, "the code point ranges of an automaton",
                   f"{n} states with {pieces}+ ranges, ~100 bytes each")
        _, end_cols = np.nonzero(ends)
        piece_lo = lo_arr[start_cols].tolist()
        piece_hi = hi_arr[end_cols].tolist()
        piece_target = targets[start_rows, start_cols].tolist()
        bounds = np.searchsorted(start_rows, np.arange(targets.shape[0] + 1)).tolist()
        for row in range(targets.shape[0]):
            b0, b1 = bounds[row], bounds[row + 1]
            result.append(tuple(zip(piece_lo[b0:b1], piece_hi[b0:b1], piece_target[b0:b1])))
    return result


def nfa_to_utf8_dfa(nfa: NFA, *, max_states: int = 50_000) -> ByteDFA:
    """Byte DFA reading the UTF-8 encoding of the code point language of ``nfa``.

    Labels are code points; surrogates are ignored (UTF-8 cannot encode them), so invalid
    UTF-8 is never accepted. The automaton is determinised and minimised over code points
    and then encoded; the result is minimal over bytes. ``max_states`` bounds both the code
    point DFA (checked during subset construction) and the byte DFA (checked while
    encoding); exceeding it raises :class:`StateLimitError`.
    """
    check_time("determinising an automaton")
    dfa, class_intervals = _determinize(nfa, max_states, UNICODE_SCALARS)
    dfa = _minimal(dfa)
    if dfa.num_states == 0:
        return empty_byte_dfa()
    encoder = _Utf8Encoder(dfa.num_states, max_states)
    for state, pieces in enumerate(_code_point_pieces(dfa, class_intervals)):
        check_time("encoding an automaton in UTF-8")
        encoder.encode_state(state, pieces)
    return ByteDFA(encoder.table(), dfa.initial, np.concatenate([dfa.accepting, np.zeros(encoder.num_states - dfa.num_states, dtype=bool)]))
