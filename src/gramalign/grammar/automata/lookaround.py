"""Lookahead and lookbehind assertions inside a pattern, where they are regular.

An assertion reads text around a position; when everything it can read lies inside the
match itself, the pattern's language (``re.fullmatch``) is regular and equals what
``re.match`` checks in running text. That holds when the assertion's body has a bounded
width W (in characters) and at least W characters of the match always come after a
lookahead (before a lookbehind), whichever way the pattern is matched. ``"(?!")[^"]*"``,
``.*?(?<!\\)(\\\\)*?"`` and ``\\d+(?<!0)x`` are such patterns; ``0(?![1-9])`` (its lookahead
reads the character after the match) and ``(?<=a)b`` (before it) are not, and are refused:
what they accept depends on the text around the lexeme. Where the only such assertion of an
alternative is a negative lookahead (of any width) or a positive one of one character,
:func:`lookahead_classes` splits the lexemes by what must not follow them, for a lexer that
checks it past the lexeme (see ``Terminal.lookahead``).

A word boundary is two assertions about the characters on either side of it: ``\\b`` is
``(?<=\\w)(?!\\w)|(?<!\\w)(?=\\w)`` and ``\\B`` is ``(?<=\\w)(?=\\w)|(?<!\\w)(?!\\w)``, which
is how it is built. So ``a\\b-``, ``\\w+\\b`` (whose boundary becomes the negative lookahead
``(?!\\w)`` past the lexeme) and ``\\w+\\B`` (the positive ``(?=\\w)``) are supported. A
boundary at the start of a lexeme reads the character before it (``\\b\\w+``), unless the
text inside the match decides it (``-\\b\\w`` reads the ``-``): it raises
:class:`BoundaryBeforeError`, and ``before=`` reads the pattern after a given character.
A regex that stands alone is the whole text (``whole_text=``): a boundary at its start
reads "start of text" and one at its end "end of text", where ``\\b`` sees a non-word
character, so the match is read between two spaces put around it and taken off again.
Before Python 3.14, ``re``'s ``\\B`` never matches in the empty text, which is followed.

Construction, over byte DFAs. The pattern is split into alternatives that are flat
sequences of pieces and assertions (groups and alternations around an assertion are
multiplied out). Each assertion k becomes a marker byte ``0xF8 + k`` (never part of UTF-8
text), so every word of the sequence contains each marker exactly once, where its
position is. The assertion is then a condition on the text before or after its marker:
for ``(?=B)``, what follows the marker (markers aside) starts with a word of B; for
``(?<!B)``, what precedes it does not end with one; and so on. The words meeting every
condition, with the markers erased, are the language.

An assertion inside a repeat (``/\\*(\\*(?!/)|[^*])*\\*/``, verilog's comments) keeps its
marker in the repeat's body, so a word holds it once per pass through it; the condition
must then hold at every occurrence (the words with an occurrence that fails it are taken
out), and every occurrence must have the room to read inside the match: no word of the
sequence may have fewer than W characters after (before) one, which the automaton of the
words says exactly. Otherwise it is refused, and so is a word boundary inside a repeat.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from ...errors import RegexError
from ..limits import check_time
from .algebra import concatenate, difference, intersect, repeat, union
from .dfa import DEAD, NFA, ByteDFA, dfa_from_table, nfa_to_byte_dfa

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_ASSERTS = (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT)
_AT = _sre_parse.AT
_BOUNDARIES = (_sre_parse.AT_BOUNDARY, _sre_parse.AT_NON_BOUNDARY)
_SUBPATTERN = _sre_parse.SUBPATTERN
_BRANCH = _sre_parse.BRANCH
_MAXREPEAT = _sre_parse.MAXREPEAT
FIRST_MARKER = 0xF8
MAX_ASSERTIONS = 256 - FIRST_MARKER
MAX_ALTERNATIVES = 64
_BOUNDARY_OUTSIDE = {
    -1: "this word boundary reads the character before the match (a boundary at the start of a lexeme), "
        "which is context beyond the lexeme",
    1: "this word boundary reads the character after the match, which is context beyond the lexeme",
    2: "this word boundary needs a word character after the match, which is context beyond the lexeme",
}


# What a word boundary sees beyond the ends of the whole text: a character that is no \w
# under any flag.
_OUTSIDE_TEXT = " "
# re's \B fails wherever the whole text is empty, until Python 3.14 (gh-124130).
_NO_NON_BOUNDARY_IN_EMPTY_TEXT = sys.version_info < (3, 14)


class LookaroundError(RegexError):
    """An assertion reads text outside the match, or sits where it cannot be read exactly.
    ``index`` numbers the assertion among the pattern's lookarounds, in text order."""

    def __init__(self, reason: str, pattern: str, position: int | None = None, index: int = 0):
        self.reason = reason
        self.index = index
        super().__init__(reason, pattern, position)


class BoundaryBeforeError(LookaroundError):
    """A word boundary at the start of a lexeme: what it accepts depends on the character
    before the lexeme (``before=`` of :func:`lookaround_dfa` and :func:`lookahead_classes`
    reads the pattern with one)."""


class _Boundary:
    """A word boundary of the parse tree, one object per occurrence (``sre_parse`` shares one
    ``(AT, AT_BOUNDARY)`` tuple between them), so assertions can be numbered by identity."""

    def __init__(self, kind):
        self.kind = kind


def _is_boundary(op, av) -> bool:
    return op is _AT and (isinstance(av, _Boundary) or av in _BOUNDARIES)


def has_lookaround(items) -> bool:
    """Does the parsed pattern ``items`` contain a lookahead, a lookbehind or a word boundary?"""
    return any(op in _ASSERTS or _is_boundary(op, av) or any(has_lookaround(child) for child in _children(op, av))
               for op, av in items)


def _own_boundaries(items) -> None:
    """Give each word boundary of the parse tree ``items`` its own :class:`_Boundary` (in place)."""
    for k, (op, av) in enumerate(items):
        if op is _AT and av in _BOUNDARIES:
            items[k] = (_AT, _Boundary(av))
        for child in _children(op, av):
            _own_boundaries(child)


def lookaround_dfa(pattern: str, parsed, flags: int, build, max_states: int, before: str | None = None,
                   whole_text: bool = False) -> ByteDFA:
    """The byte DFA of ``re.fullmatch(pattern)`` for a pattern with assertions.

    ``parsed`` is its ``re`` parse tree, ``flags`` the global flags and ``build(items,
    flags, at_start, at_end)`` the byte DFA of assertion-free items (the regex module's
    construction). Raises :class:`LookaroundError` where an assertion reads outside the match.
    With ``before`` (one ASCII character), the match follows that character: a word
    boundary at its start reads it (no other lookbehind does). With ``whole_text``, the
    match is the whole text: word boundaries at its ends read the start and end of the text
    (no other lookaround does).
    """
    after = None
    if whole_text:
        before = after = _OUTSIDE_TEXT
    state = parsed.state
    _own_boundaries(parsed)
    numbers: dict[int, int] = {}
    _number(list(parsed), numbers)
    alternatives = _flat(list(parsed), flags, pattern, numbers)
    result = None
    for sequence in alternatives:
        dfa = _sequence_dfa(sequence, state, build, pattern, max_states, before, after)
        if whole_text and _NO_NON_BOUNDARY_IN_EMPTY_TEXT and _has_non_boundary(sequence):
            dfa = difference(dfa, _empty_text(), max_states=max_states)
        result = dfa if result is None else union(result, dfa, max_states=max_states)
    return result


def lookahead_classes(pattern: str, parsed, flags: int, build, max_states: int, before: str | None = None):
    """``(everything, classes)`` for a pattern whose lookahead can read past the match, or
    None when no assertion does. ``classes`` lists ``(lexemes, forbidden, needs_text)``: the
    lexemes after which a text starting with a word of ``forbidden`` (a ByteDFA) makes
    ``re.match`` fail the lookahead, ``forbidden`` None for lexemes no text after can fail,
    and ``needs_text`` True where the text must also go on after the lexeme (a positive
    lookahead of one character ``(?=B)`` past the match is read as "not followed by a
    character outside B, and followed by something"); the classes are disjoint.
    ``everything`` is the language with the lookaheads that read past the match left out (a
    superset of every class), for the first-match rule of lazy quantifiers. Raises
    :class:`LookaroundError` for an alternative with more than one assertion reading outside
    the match, a lookbehind, or a positive lookahead wider than one character doing so, and
    where one lexeme would carry two different conditions. ``before``: as for
    :func:`lookaround_dfa`.
    """
    _own_boundaries(parsed)
    numbers: dict[int, int] = {}
    _number(list(parsed), numbers)
    found = []
    for sequence in _flat(list(parsed), flags, pattern, numbers):
        words, markers, trailing = _marked_words(sequence, parsed.state, build, pattern, max_states, True, before)
        found.append((words, markers, trailing))
    if all(trailing is None for _, _, trailing in found):
        return None
    everything = None
    # (the forbidden automaton's digest, or b"" for none; needs_text) -> [lexemes, it]
    by_condition: dict[tuple[bytes, bool], list] = {}

    def add(lexemes: ByteDFA, rest: ByteDFA | None, needs_text: bool) -> None:
        entry = by_condition.setdefault((b"" if rest is None else rest.digest, needs_text), [None, rest, needs_text])
        entry[0] = lexemes if entry[0] is None else union(entry[0], lexemes, max_states=max_states)

    for words, markers, trailing in found:
        loose = _erased(words, markers, max_states)
        everything = loose if everything is None else union(everything, loose, max_states=max_states)
        if trailing is None:
            add(loose, None, False)
            continue
        marker, forbidden, _, positive = trailing
        for state, lexemes in _tracked(words, marker, forbidden, pattern, max_states).items():
            rest = None if state < 0 else dfa_from_table(forbidden.transitions, state, np.asarray(forbidden.accepting))
            add(_erased(lexemes, markers, max_states), rest, positive and (state >= 0 or state == _UNREAD))
    classes = [(lexemes, rest, needs) for lexemes, rest, needs in by_condition.values() if lexemes.initial != DEAD]
    for i in range(len(classes)):
        for j in range(i):
            if intersect(classes[i][0], classes[j][0], max_states=max_states).initial != DEAD:
                raise LookaroundError("a lexeme of this pattern can be followed by different texts the lookahead "
                                      "forbids, depending on where the lookahead sits in it", pattern,
                                      index=min(t[2] for _, _, t in found if t is not None))
    return everything, classes


_UNREAD = -3
"""``_tracked``'s state for a word that ends at a lookahead whose forbidden language is empty."""


def _tracked(words: ByteDFA, marker: int, forbidden: ByteDFA, pattern: str, max_states: int) -> dict[int, ByteDFA]:
    """The words of ``words`` (which hold ``marker`` once) by the state of ``forbidden``
    after reading what follows the marker: -1 where ``forbidden`` can no longer match, so
    nothing after the word can fail the lookahead; words where it matched inside are gone.
    Other marker bytes leave the state as it is. Where ``forbidden`` is empty (``(?=[\\s\\S])``
    forbids no character, it only wants one), a word that ends at the marker is
    ``_UNREAD``: nothing can fail the lookahead, but the text must go on."""
    if words.initial == DEAD:
        return {}
    before, free = -2, -1
    index = {(words.initial, before): 0}
    pairs = [(words.initial, before)]
    rows = []
    table = words.transitions
    f_table, f_accepting = forbidden.transitions, forbidden.accepting
    k = 0
    while k < len(pairs):
        if k % 256 == 0:
            check_time("a lookahead past the lexeme")
        w, t = pairs[k]
        row = np.full(256, DEAD, dtype=np.int32)
        for byte in np.flatnonzero(table[w] != DEAD).tolist():
            target = int(table[w, byte])
            if byte == marker:
                nt = forbidden.initial
                if nt == DEAD:
                    nt = _UNREAD
                elif f_accepting[nt]:
                    continue
            elif byte >= FIRST_MARKER or t == before or t == free:
                nt = t
            elif t == _UNREAD:
                nt = free  # the character the lookahead wants is in the word
            else:
                nt = int(f_table[t, byte])
                if nt == DEAD:
                    nt = free
                elif f_accepting[nt]:
                    continue  # the lookahead matched inside the word: re.match fails here
            pair = (target, nt)
            if pair not in index:
                if len(pairs) >= max_states:
                    raise LookaroundError(f"the lexemes and what their lookahead has read need more than "
                                          f"{max_states} automaton states", pattern)
                index[pair] = len(pairs)
                pairs.append(pair)
            row[byte] = index[pair]
        rows.append(row)
        k += 1
    transitions = np.stack(rows)
    classes = {}
    for state in sorted({t for w, t in pairs if t != before and words.accepting[w]}):
        accepting = np.array([bool(words.accepting[w]) and t == state for w, t in pairs])
        classes[state] = dfa_from_table(transitions, 0, accepting)
    return classes


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
    """Number the assertions and word boundaries in text order (the parse tree's pre-order),
    by node identity."""
    for op, av in items:
        if op in _ASSERTS or _is_boundary(op, av):
            numbers[id(av)] = len(numbers)
        for child in _children(op, av):
            _number(child, numbers)


def _first_inside(items, numbers: dict[int, int]) -> int:
    for op, av in items:
        if op in _ASSERTS or _is_boundary(op, av):
            return numbers[id(av)]
        for child in _children(op, av):
            found = _first_inside(child, numbers)
            if found >= 0:
                return found
    return -1


def _flat(items, flags: int, pattern: str, numbers: dict[int, int]) -> list[list[tuple]]:
    """The pattern as alternatives of flat sequences of ("piece", item, flags) and
    ("assert", (op, direction, body, number, boundary), flags) entries (``boundary``: the
    assertion is half of a word boundary, see the module docstring)."""
    sequences: list[list[tuple]] = [[]]
    for op, av in items:
        if op in _ASSERTS:
            options = [[("assert", (op, av[0], list(av[1]), numbers[id(av)], False), flags)]]
        elif _is_boundary(op, av):
            word = list(_sre_parse.parse(r"\w"))
            number = numbers[id(av)]
            halves = ([(_sre_parse.ASSERT, _sre_parse.ASSERT_NOT), (_sre_parse.ASSERT_NOT, _sre_parse.ASSERT)]
                      if av.kind is _sre_parse.AT_BOUNDARY else
                      [(_sre_parse.ASSERT, _sre_parse.ASSERT), (_sre_parse.ASSERT_NOT, _sre_parse.ASSERT_NOT)])
            options = [[("assert", (behind, -1, word, number, True), flags),
                        ("assert", (ahead, 1, word, number, True), flags)] for behind, ahead in halves]
        elif not has_lookaround([(op, av)]):
            options = [[("piece", (op, av), flags)]]
        elif op is _SUBPATTERN:
            from .regex import combine_flags  # the regex module imports this one

            options = _flat(list(av[3]), combine_flags(flags, av[1], av[2]), pattern, numbers)
        elif op is _BRANCH:
            options = [sequence for alternative in av[1]
                       for sequence in _flat(list(alternative), flags, pattern, numbers)]
        elif op in (_sre_parse.MIN_REPEAT, _sre_parse.MAX_REPEAT) and not _has_boundary(list(av[2])):
            low, high, body = av
            options = [[("loop", (low, high, _flat(list(body), flags, pattern, numbers)), flags)]]
        else:
            raise LookaroundError("a word boundary inside a repeat is not supported "
                                  "(write the repeated part without it)", pattern,
                                  index=_first_inside([(op, av)], numbers))
        sequences = [s + o for s in sequences for o in options]
        if len(sequences) > MAX_ALTERNATIVES:
            raise LookaroundError(f"lookarounds in more than {MAX_ALTERNATIVES} alternatives", pattern,
                                  index=_first_inside([(op, av)], numbers))
    return sequences


def _width(state, items) -> tuple[int, int]:
    return _sre_parse.SubPattern(state, items).getwidth()


def _has_boundary(items) -> bool:
    return any(_is_boundary(op, av) or any(_has_boundary(child) for child in _children(op, av)) for op, av in items)


def _assertions(sequence) -> list[tuple]:
    """The assertion items of a flat sequence, those inside its repeats included, in order."""
    found = []
    for kind, item, _ in sequence:
        if kind == "assert":
            found.append(item)
        elif kind == "loop":
            for inner in item[2]:
                found.extend(_assertions(inner))
    return found


def _minimum_width(state, entry) -> int:
    """The fewest characters an entry of a flat sequence matches."""
    kind, item, _ = entry
    if kind == "piece":
        return _width(state, [item])[0]
    if kind == "loop":
        low, _, alternatives = item
        return low * min(sum(_minimum_width(state, inner) for inner in sequence) for sequence in alternatives)
    return 0


def _loop_words(item, flags: int, state, build, pattern: str, max_states: int, markers: list[int],
                repeated: list[tuple]) -> ByteDFA:
    """The words of a repeat whose body holds assertions, with a marker byte wherever an
    iteration passes one (a new marker per assertion, in ``markers``); each assertion's
    ``(marker, direction, positive, body DFA, width, number)`` goes to ``repeated``."""
    low, high, alternatives = item
    body = None
    for sequence in alternatives:
        parts = []
        for kind, inner, inner_flags in sequence:
            if kind == "piece":
                parts.append(build([inner], inner_flags, False, False))
                continue
            if kind == "loop":
                parts.append(_loop_words(inner, inner_flags, state, build, pattern, max_states, markers, repeated))
                continue
            op, direction, assertion_body, number, _ = inner
            if has_lookaround(assertion_body):
                raise LookaroundError("a lookaround inside a lookaround is not supported", pattern, index=number)
            width = _width(state, assertion_body)[1]
            if width >= _MAXREPEAT:
                raise LookaroundError(f"a {'lookahead' if direction > 0 else 'lookbehind'} of unbounded width "
                                      "inside a repeat is not supported", pattern, index=number)
            marker = FIRST_MARKER + len(markers)
            markers.append(marker)
            repeated.append((marker, direction, op is _sre_parse.ASSERT,
                             build(assertion_body, inner_flags, False, False), width, number))
            parts.append(_single_byte(marker))
        words = concatenate(parts, max_states=max_states)
        body = words if body is None else union(body, words, max_states=max_states)
    return repeat(body, low, None if high >= _MAXREPEAT else high, max_states=max_states)


def _sequence_dfa(sequence, state, build, pattern: str, max_states: int, before: str | None,
                  after: str | None = None) -> ByteDFA:
    words, markers, _ = _marked_words(sequence, state, build, pattern, max_states, False, before, after)
    return _erased(words, markers, max_states)


def _marked_words(sequence, state, build, pattern: str, max_states: int, trailing_ok: bool,
                  before: str | None = None, after: str | None = None):
    """``(words, markers, trailing)``: the sequence's words with a marker byte where each
    assertion sits, those reading inside the match already enforced, and ``trailing`` the
    lookahead that can read past the match, as ``(marker, forbidden DFA, number, positive)``
    (a positive one of one character forbids the other characters), or None (only with
    ``trailing_ok``; else such an assertion raises, as any other reading outside the match).
    ``before``: the character before the match, which word boundaries read (a piece put in
    front, and taken off the words at the end); ``after`` likewise, a piece put behind."""
    prefix = 0 if before is None else 1
    suffix = 0 if after is None else 1
    if before is not None:
        sequence = [("piece", (_sre_parse.LITERAL, ord(before)), 0)] + list(sequence)
    if after is not None:
        sequence = list(sequence) + [("piece", (_sre_parse.LITERAL, ord(after)), 0)]
    asserts = _assertions(sequence)
    if len(asserts) > MAX_ASSERTIONS:
        raise LookaroundError(f"more than {MAX_ASSERTIONS} lookarounds in one alternative", pattern,
                              index=asserts[MAX_ASSERTIONS][3])
    minimum = [0] * (len(sequence) + 1)  # characters the pieces before position k take at least
    for k, entry in enumerate(sequence):
        minimum[k + 1] = minimum[k] + _minimum_width(state, entry)
    total = minimum[-1]
    parts = []
    conditions = []
    markers: list[int] = []
    trailing = None
    # Half of a word boundary that reads outside the match is refused only where its
    # alternative has words: in \w+\b, "a word character before" is the whole story.
    outside = None
    repeated: list[tuple] = []  # (marker, direction, positive, body DFA, width) of assertions inside repeats
    for k, (kind, item, flags) in enumerate(sequence):
        if kind == "piece":
            parts.append(build([item], flags, k == prefix, k == len(sequence) - 1 - suffix))
            continue
        if kind == "loop":
            parts.append(_loop_words(item, flags, state, build, pattern, max_states, markers, repeated))
            continue
        op, direction, body, number, boundary = item
        if has_lookaround(body):
            raise LookaroundError("a lookaround inside a lookaround is not supported", pattern, index=number)
        low, high = _width(state, body)
        marker = FIRST_MARKER + len(markers)
        markers.append(marker)
        parts.append(_single_byte(marker))
        # The characters put around the match are read by word boundaries only.
        room = total - minimum[k] - (0 if boundary else suffix) if direction > 0 else \
            minimum[k] - (0 if boundary else prefix)
        if trailing_ok and trailing is None and direction > 0 and room < high:
            if op is _sre_parse.ASSERT_NOT:
                trailing = (marker, build(body, flags, False, False), number, False)
                continue
            if low == high == 1:
                one = build([(_sre_parse.ANY, None)], flags | re.DOTALL, False, False)
                others = difference(one, build(body, flags, False, False), max_states=max_states)
                trailing = (marker, others, number, True)
                continue
        if high >= _MAXREPEAT:
            raise LookaroundError("a lookahead of unbounded width reads past the end of the match", pattern,
                                  index=number)
        if room < high:
            if boundary:
                if outside is None or (direction < 0 and outside[2] > 0):
                    outside = (_BOUNDARY_OUTSIDE[direction + (op is _sre_parse.ASSERT and direction > 0)], number,
                               direction)
                continue
            where = ("the characters after the match (a lookahead at the end of the pattern)" if direction > 0
                     else "the characters before the match (a lookbehind at the start of the pattern)")
            raise LookaroundError(f"this {'lookahead' if direction > 0 else 'lookbehind'} can read {where}, "
                                  "which is context beyond the lexeme", pattern, index=number)
        conditions.append((marker, direction, op is _sre_parse.ASSERT, build(body, flags, False, False)))
    words = concatenate(parts, max_states=max_states)
    if words.initial == DEAD:
        return _before(_after(words, before), after), markers, trailing
    anything = build([(_sre_parse.MAX_REPEAT, (0, _MAXREPEAT, [(_sre_parse.ANY, None)]))], re.DOTALL, False, False)
    loose_anything = _ignoring(anything, markers)
    # An assertion inside a repeat has a marker wherever an iteration passes it (any number
    # of times): each of them must have the room to read inside the match, which the
    # automaton of the words says exactly, and each must meet the condition.
    for marker, direction, positive, body, width, number in repeated:
        if width + (suffix if direction > 0 else prefix) == 0:
            continue  # an empty lookaround reads nothing
        short = _ignoring(build([(_sre_parse.MAX_REPEAT, (0, width - 1 + (suffix if direction > 0 else prefix),
                                                            [(_sre_parse.ANY, None)]))],
                                re.DOTALL, False, False), markers)
        around = [loose_anything, _single_byte(marker), short] if direction > 0 else [short, _single_byte(marker),
                                                                                       loose_anything]
        if intersect(words, concatenate(around, max_states=max_states), max_states=max_states).initial != DEAD:
            where = ("the characters after the match" if direction > 0 else "the characters before the match")
            raise LookaroundError(f"this {'lookahead' if direction > 0 else 'lookbehind'} inside a repeat can read "
                                  f"{where}, which is context beyond the lexeme", pattern, index=number)
    for marker, direction, positive, body, _, _ in repeated:
        shape = [body, anything] if direction > 0 else [anything, body]
        met = _ignoring(concatenate(shape, max_states=max_states), markers)
        failed = difference(loose_anything, met, max_states=max_states) if positive else met
        around = [loose_anything, _single_byte(marker), failed] if direction > 0 else [failed, _single_byte(marker),
                                                                                         loose_anything]
        words = difference(words, concatenate(around, max_states=max_states), max_states=max_states)
        if words.initial == DEAD:
            break
    for marker, direction, positive, body in conditions:
        shape = [body, anything] if direction > 0 else [anything, body]
        met = _ignoring(concatenate(shape, max_states=max_states), markers)
        if not positive:
            met = difference(loose_anything, met, max_states=max_states)
        around = [loose_anything, _single_byte(marker), met] if direction > 0 else [met, _single_byte(marker),
                                                                                      loose_anything]
        words = intersect(words, concatenate(around, max_states=max_states), max_states=max_states)
    if outside is not None and words.initial != DEAD:
        error = BoundaryBeforeError if outside[2] < 0 else LookaroundError
        raise error(outside[0], pattern, index=outside[1])
    return _before(_after(words, before), after), markers, trailing


def _before(words: ByteDFA, after: str | None) -> ByteDFA:
    """The words that ``words`` has followed by the (one-byte) character ``after``, without it."""
    if after is None or words.initial == DEAD:
        return words
    targets = words.transitions[:, ord(after)]
    accepting = (targets != DEAD) & np.asarray(words.accepting)[np.maximum(targets, 0)]
    return dfa_from_table(words.transitions, words.initial, accepting)


def _after(words: ByteDFA, before: str | None) -> ByteDFA:
    """The words of ``words`` that follow the (one-byte) character ``before``, without it."""
    if before is None or words.initial == DEAD:
        return words
    return dfa_from_table(words.transitions, int(words.transitions[words.initial, ord(before)]),
                          np.asarray(words.accepting))


def _has_non_boundary(sequence) -> bool:
    """Does the flat sequence hold a ``\\B``? Its two halves assert alike (``\\b``'s differ)."""
    halves: dict[int, set] = {}
    for kind, item, _ in sequence:
        if kind == "assert" and item[4]:
            halves.setdefault(item[3], set()).add(item[0])
    return any(len(ops) == 1 for ops in halves.values())


def _empty_text() -> ByteDFA:
    return dfa_from_table(np.full((1, 256), DEAD, dtype=np.int32), 0, np.array([True]))


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
