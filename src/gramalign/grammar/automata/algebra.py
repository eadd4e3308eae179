"""Boolean and sequential operations on byte DFAs: the algebra JSON Schema needs.

``allOf`` is an intersection, ``not`` a complement (relative to the JSON values, the
*universe*), ``oneOf`` a union of differences, and object or array bodies are
concatenations and repetitions of member automata. Every result is a trimmed, minimal
:class:`ByteDFA`; every operation takes ``max_states`` and raises
:class:`StateLimitError` instead of running away.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..limits import check_time
from .cache import AutomatonCache
from .dfa import (DEAD, NFA, ByteDFA, StateLimitError, dfa_from_classes, distinct_columns, empty_byte_dfa, literal_dfa,
                  nfa_to_byte_dfa)
from .kernels import DIFFERENCE, INTERSECT, UNION, minus_words, pair_product

__all__ = ["concatenate", "complement", "difference", "intersect", "optional", "repeat", "star", "union",
           "without_words"]

MAX_STATES = 50_000
"""Default bound on the states of any automaton these operations build."""

_INTERSECT, _UNION, _DIFFERENCE = INTERSECT, UNION, DIFFERENCE


def intersect(a: ByteDFA, b: ByteDFA, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings in both ``a`` and ``b``."""
    return _product(a, b, _INTERSECT, max_states)


def union(a: ByteDFA, b: ByteDFA, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings in ``a`` or ``b``."""
    return _product(a, b, _UNION, max_states)


def difference(a: ByteDFA, b: ByteDFA, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings in ``a`` but not in ``b``."""
    return _product(a, b, _DIFFERENCE, max_states)


def complement(a: ByteDFA, universe: ByteDFA, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings of ``universe`` not in ``a`` (a complement must say relative to what)."""
    return _product(universe, a, _DIFFERENCE, max_states)


def _product(a: ByteDFA, b: ByteDFA, mode: int, max_states: int) -> ByteDFA:
    """Breadth-first product of two DFAs (numba, over the bytes' joint classes); a missing
    side is the (implicit) dead state."""
    if a.initial == DEAD and b.initial == DEAD:
        return empty_byte_dfa()
    key = (a.digest, b.digest, mode, max_states)
    found = _PRODUCTS.get(key)
    if found is None:
        found = _PRODUCTS.put(key, _compute_product(a, b, mode, max_states))
    return found


def without_words(a: ByteDFA, words, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings in ``a`` but none of ``words`` (bytes): ``difference(a, literal_dfa(words))``,
    the same automaton, from the words' trie grafted onto ``a`` (one kernel) instead of a
    product and a minimisation (an object's extra keys: any key but its property names)."""
    words = sorted({bytes(word) for word in words})
    joined = b"".join(words)
    if a.initial == DEAD or (len(joined) + 1) * 256 > WORDS_CELLS:
        return difference(a, literal_dfa(words), max_states=max_states)
    check_time("an automaton without some words")
    starts = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum([len(word) for word in words], out=starts[1:])
    transitions, accepting = minus_words(a.transitions, a.initial, a.accepting,
                                         np.frombuffer(joined, dtype=np.uint8), starts)
    if transitions.shape[0] > max_states:
        raise StateLimitError(f"the automaton needs more than {max_states} states")
    return ByteDFA(transitions, 0, accepting) if transitions.shape[0] else empty_byte_dfa()


WORDS_CELLS = 1 << 24
"""Bound on the (trie node, byte) cells of ``without_words``'s kernel; past it, the product."""

_PRODUCTS = AutomatonCache("products", 64 << 20)
"""allOf/oneOf/complement products and key-set differences recur within a schema and
across schemas (any string minus the same names, the same bounds on integers)."""


def _compute_product(a: ByteDFA, b: ByteDFA, mode: int, max_states: int) -> ByteDFA:
    check_time("an automaton product")
    # bytes that neither automaton tells apart are one symbol of the product
    columns, class_of_byte = distinct_columns(np.concatenate([a.transitions, b.transitions]))
    table, accepting, overflowed = pair_product(columns[:a.num_states], a.initial, a.accepting,
                                                columns[a.num_states:], b.initial, b.accepting, mode, max_states)
    if overflowed:
        raise StateLimitError(f"the automaton needs more than {max_states} states")
    if table.shape[0] == 0:
        return empty_byte_dfa()
    return dfa_from_classes(table, 0, accepting, class_of_byte)


def _embed(nfa: NFA, dfa: ByteDFA) -> tuple[int, list[int]]:
    """Copy ``dfa`` into ``nfa``; returns (its initial state, its accepting states).

    One edge per state and byte class (bytes the DFA treats alike), labelled with the class's
    byte ranges: a few array operations for the whole table, where per-state ones cost a
    third of compiling schemas made of many concatenations."""
    base = nfa.num_states
    for _ in range(dfa.num_states):
        nfa.add_state()
    columns, class_of_byte = distinct_columns(dfa.transitions)
    labels = _class_labels(class_of_byte)
    sources, classes = np.nonzero(columns != DEAD)
    targets = columns[sources, classes]
    for source, c, target in zip((sources + base).tolist(), classes.tolist(), (targets + base).tolist()):
        nfa.add_edge(source, labels[c], target)
    return base + dfa.initial, [base + s for s in np.flatnonzero(dfa.accepting).tolist()]


@functools.lru_cache(maxsize=256)
def _class_labels_of(key: bytes) -> tuple[tuple[tuple[int, int], ...], ...]:
    class_of_byte = np.frombuffer(key, dtype=np.int64)
    bounds = np.flatnonzero(np.diff(class_of_byte)) + 1
    labels: list[list[tuple[int, int]]] = [[] for _ in range(int(class_of_byte.max()) + 1)]
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), 256]):
        labels[int(class_of_byte[lo])].append((lo, hi - 1))
    return tuple(tuple(runs) for runs in labels)


def _class_labels(class_of_byte: np.ndarray) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per byte class, its bytes as inclusive ranges (few class layouts recur: cached)."""
    return _class_labels_of(np.ascontiguousarray(class_of_byte, dtype=np.int64).tobytes())


def concatenate(parts: Sequence[ByteDFA], *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings ``x1 x2 ... xn`` with each ``xi`` in ``parts[i]`` (the empty string for no parts)."""
    if any(p.initial == DEAD for p in parts):
        return empty_byte_dfa()
    nfa = NFA()
    current = [nfa.initial]
    for part in parts:
        start, accepting = _embed(nfa, part)
        for state in current:
            nfa.add_epsilon(state, start)
        current = accepting
    nfa.accepting.update(current)
    return nfa_to_byte_dfa(nfa, max_states=max_states)


def star(part: ByteDFA, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Zero or more repetitions of ``part``."""
    return _empty_or(part, loop=True, max_states=max_states)


def optional(part: ByteDFA, *, max_states: int = MAX_STATES) -> ByteDFA:
    """``part`` or the empty string."""
    return _empty_or(part, loop=False, max_states=max_states)


def _empty_or(part: ByteDFA, *, loop: bool, max_states: int) -> ByteDFA:
    """The empty string or ``part`` (repeated when ``loop``)."""
    nfa = NFA()
    nfa.accepting.add(nfa.initial)
    if part.initial != DEAD:
        start, accepting = _embed(nfa, part)
        nfa.add_epsilon(nfa.initial, start)
        for state in accepting:
            if loop:
                nfa.add_epsilon(state, nfa.initial)
            else:
                nfa.accepting.add(state)
    return nfa_to_byte_dfa(nfa, max_states=max_states)


def repeat(part: ByteDFA, minimum: int, maximum: int | None, *, separator: ByteDFA | None = None,
           max_states: int = MAX_STATES) -> ByteDFA:
    """Between ``minimum`` and ``maximum`` (None: unbounded) copies of ``part``, with
    ``separator`` between consecutive copies (e.g. ``,`` in an array)."""
    if minimum < 0 or (maximum is not None and maximum < minimum):
        raise ValueError(f"bad repetition bounds {minimum}..{maximum}")
    glue = separator if separator is not None else None
    item_after_first = concatenate([glue, part], max_states=max_states) if glue is not None else part
    if maximum == 0:
        return concatenate([], max_states=max_states)
    pieces: list[ByteDFA] = []
    if minimum > 0:
        pieces.append(part)
        pieces.extend([item_after_first] * (minimum - 1))
        if maximum is None:
            pieces.append(star(item_after_first, max_states=max_states))
        else:
            pieces.extend([optional(item_after_first, max_states=max_states)] * (maximum - minimum))
        return concatenate(pieces, max_states=max_states)
    # minimum == 0: nothing, or a first copy followed by up to maximum - 1 more.
    rest = repeat(part, 1, maximum, separator=separator, max_states=max_states)
    return optional(rest, max_states=max_states)
