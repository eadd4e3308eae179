"""Lookahead and lookbehind assertions inside a pattern, where they are regular.

An assertion reads text around a position; when everything it can read lies inside the
match itself, the pattern's language (``re.fullmatch``) is regular and equals what
``re.match`` checks in running text. That holds when the assertion's body has a bounded
width W (in characters) and at least W characters of the match always come after a
lookahead (before a lookbehind), whichever way the pattern is matched. ``"(?!")[^"]*"``,
``.*?(?<!\\)(\\\\)*?"`` and ``\\d+(?<!0)x`` are such patterns; ``0(?![1-9])`` (its lookahead
reads the character after the match) and ``(?<=a)b`` (before it) are not, and are refused:
what they accept depends on the text around the lexeme.

Construction, over byte DFAs. The pattern is split into alternatives that are flat
sequences of pieces and assertions (groups and alternations around an assertion are
multiplied out; an assertion inside a repeat is refused). Each assertion k becomes a
marker byte ``0xF8 + k`` (never part of UTF-8 text), so every word of the sequence
contains each marker exactly once, where its position is. The assertion is then a
condition on the text before or after its marker: for ``(?=B)``, what follows the marker
(markers aside) starts with a word of B; for ``(?<!B)``, what precedes it does not end
with one; and so on. The words meeting every condition, with the markers erased, are the
language.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import RegexError
from .automata import concatenate, difference, intersect, union
from .dfa import DEAD, NFA, ByteDFA, dfa_from_table, nfa_to_byte_dfa

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_ASSERTS = (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT)
_SUBPATTERN = _sre_parse.SUBPATTERN
_BRANCH = _sre_parse.BRANCH
_MAXREPEAT = _sre_parse.MAXREPEAT
FIRST_MARKER = 0xF8
MAX_ASSERTIONS = 256 - FIRST_MARKER
MAX_ALTERNATIVES = 64


class LookaroundError(RegexError):
    """An assertion reads text outside the match, or sits where it cannot be read exactly.
    ``index`` numbers the assertion among the pattern's lookarounds, in text order."""

    def __init__(self, reason: str, pattern: str, position: int | None = None, index: int = 0):
        self.reason = reason
        self.index = index
        super().__init__(reason, pattern, position)


def has_lookaround(items) -> bool:
    """Does the parsed pattern ``items`` contain a lookahead or lookbehind?"""
    return any(op in _ASSERTS or any(has_lookaround(child) for child in _children(op, av)) for op, av in items)


def lookaround_dfa(pattern: str, parsed, flags: int, build, max_states: int) -> ByteDFA:
    """The byte DFA of ``re.fullmatch(pattern)`` for a pattern with assertions.

    ``parsed`` is its ``re`` parse tree, ``flags`` the global flags and ``build(items,
    flags, at_start, at_end)`` the byte DFA of assertion-free items (the regex module's
    construction). Raises :class:`LookaroundError` where an assertion reads outside the match.
    """
    state = parsed.state
    numbers: dict[int, int] = {}
    _number(list(parsed), numbers)
    alternatives = _flat(list(parsed), flags, pattern, numbers)
    result = None
    for sequence in alternatives:
        dfa = _sequence_dfa(sequence, state, build, pattern, max_states)
        result = dfa if result is None else union(result, dfa, max_states=max_states)
    return result


def _children(op, av):
    if op is _SUBPATTERN:
        return [av[3]]
    if op in (_sre_parse.MIN_REPEAT, _sre_parse.MAX_REPEAT):
        return [av[2]]
    if op is _BRANCH:
        return list(av[1])
    if op in _ASSERTS:
        return [av[1]]
    if op is _sre_parse.GROUPREF_EXISTS:
        return [branch for branch in av[1:] if branch is not None]
    return []


def _number(items, numbers: dict[int, int]) -> None:
    """Number the assertions in text order (the parse tree's pre-order), by node identity."""
    for op, av in items:
        if op in _ASSERTS:
            numbers[id(av)] = len(numbers)
        for child in _children(op, av):
            _number(child, numbers)


def _first_inside(items, numbers: dict[int, int]) -> int:
    for op, av in items:
        if op in _ASSERTS:
            return numbers[id(av)]
        for child in _children(op, av):
            found = _first_inside(child, numbers)
            if found >= 0:
                return found
    return -1


def _flat(items, flags: int, pattern: str, numbers: dict[int, int]) -> list[list[tuple]]:
    """The pattern as alternatives of flat sequences of ("piece", item, flags) and
    ("assert", (op, direction, body, number), flags) entries."""
    sequences: list[list[tuple]] = [[]]
    for op, av in items:
        if op in _ASSERTS:
            options = [[("assert", (op, av[0], list(av[1]), numbers[id(av)]), flags)]]
        elif not has_lookaround([(op, av)]):
            options = [[("piece", (op, av), flags)]]
        elif op is _SUBPATTERN:
            from .regex import combine_flags  # the regex module imports this one

            options = _flat(list(av[3]), combine_flags(flags, av[1], av[2]), pattern, numbers)
        elif op is _BRANCH:
            options = [sequence for alternative in av[1]
                       for sequence in _flat(list(alternative), flags, pattern, numbers)]
        else:
            raise LookaroundError("a lookahead or lookbehind inside a repeat is not supported (write the "
                                  "repeated part without it)", pattern, index=_first_inside([(op, av)], numbers))
        sequences = [s + o for s in sequences for o in options]
        if len(sequences) > MAX_ALTERNATIVES:
            raise LookaroundError(f"lookarounds in more than {MAX_ALTERNATIVES} alternatives", pattern,
                                  index=_first_inside([(op, av)], numbers))
    return sequences


def _width(state, items) -> tuple[int, int]:
    return _sre_parse.SubPattern(state, items).getwidth()


def _sequence_dfa(sequence, state, build, pattern: str, max_states: int) -> ByteDFA:
    asserts = [k for k, entry in enumerate(sequence) if entry[0] == "assert"]
    if len(asserts) > MAX_ASSERTIONS:
        raise LookaroundError(f"more than {MAX_ASSERTIONS} lookarounds in one alternative", pattern,
                              index=sequence[asserts[MAX_ASSERTIONS]][1][3])
    minimum = [0] * (len(sequence) + 1)  # characters the pieces before position k take at least
    for k, (kind, item, _) in enumerate(sequence):
        minimum[k + 1] = minimum[k] + (_width(state, [item])[0] if kind == "piece" else 0)
    total = minimum[-1]
    parts = []
    conditions = []
    for k, (kind, item, flags) in enumerate(sequence):
        if kind == "piece":
            parts.append(build([item], flags, k == 0, k == len(sequence) - 1))
            continue
        op, direction, body, number = item
        if has_lookaround(body):
            raise LookaroundError("a lookaround inside a lookaround is not supported", pattern, index=number)
        low, high = _width(state, body)
        if high >= _MAXREPEAT:
            raise LookaroundError("a lookahead of unbounded width reads past the end of the match", pattern,
                                  index=number)
        marker = FIRST_MARKER + len(conditions)
        room = total - minimum[k] if direction > 0 else minimum[k]
        if room < high:
            where = ("the characters after the match (a lookahead at the end of the pattern)" if direction > 0
                     else "the characters before the match (a lookbehind at the start of the pattern)")
            raise LookaroundError(f"this {'lookahead' if direction > 0 else 'lookbehind'} can read {where}, "
                                  "which is context beyond the lexeme", pattern, index=number)
        parts.append(_single_byte(marker))
        conditions.append((marker, direction, op is _sre_parse.ASSERT, build(body, flags, False, False)))
    words = concatenate(parts, max_states=max_states)
    if words.initial == DEAD:
        return words
    anything = build([(_sre_parse.MAX_REPEAT, (0, _MAXREPEAT, [(_sre_parse.ANY, None)]))], re.DOTALL, False, False)
    markers = list(range(FIRST_MARKER, FIRST_MARKER + len(conditions)))
    loose_anything = _ignoring(anything, markers)
    for marker, direction, positive, body in conditions:
        shape = [body, anything] if direction > 0 else [anything, body]
        met = _ignoring(concatenate(shape, max_states=max_states), markers)
        if not positive:
            met = difference(loose_anything, met, max_states=max_states)
        around = [loose_anything, _single_byte(marker), met] if direction > 0 else [met, _single_byte(marker),
                                                                                      loose_anything]
        words = intersect(words, concatenate(around, max_states=max_states), max_states=max_states)
    return _erased(words, markers, max_states)


def _single_byte(byte: int) -> ByteDFA:
    table = np.full((2, 256), DEAD, dtype=np.int32)
    table[0, byte] = 1
    return dfa_from_table(table, 0, np.array([False, True]))


def _ignoring(dfa: ByteDFA, markers: list[int]) -> ByteDFA:
    """``dfa`` with the marker bytes allowed anywhere (a self-loop on every state)."""
    if dfa.initial == DEAD:
        return dfa
    table = dfa.transitions.copy()
    rows = np.arange(dfa.num_states, dtype=np.int32)
    for marker in markers:
        table[:, marker] = rows
    return dfa_from_table(table, dfa.initial, np.asarray(dfa.accepting))


def _erased(dfa: ByteDFA, markers: list[int], max_states: int) -> ByteDFA:
    """The words of ``dfa`` with the marker bytes removed."""
    if dfa.initial == DEAD:
        return dfa
    nfa = NFA()
    base = nfa.num_states
    for _ in range(dfa.num_states):
        nfa.add_state()
    marker_set = set(markers)
    table = dfa.transitions
    for source in range(dfa.num_states):
        row = table[source]
        for byte in np.flatnonzero(row != DEAD).tolist():
            target = base + int(row[byte])
            if byte in marker_set:
                nfa.add_epsilon(base + source, target)
            else:
                nfa.add_edge(base + source, ((byte, byte),), target)
    nfa.add_epsilon(nfa.initial, base + dfa.initial)
    nfa.accepting.update(base + s for s in np.flatnonzero(dfa.accepting).tolist())
    return nfa_to_byte_dfa(nfa, max_states=max_states)
