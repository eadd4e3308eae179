"""String languages for JSON Schema: from code points to JSON string literals.

Schema keywords constrain a string's *contents* (its code points): ``pattern``, ``format``,
``minLength``, ``enum``. Those are built as UTF-8 DFAs over the contents; :func:`json_string_dfa`
then turns a contents language into the language of every JSON literal that denotes one of
its strings — raw characters where JSON allows them, and every escape (``\\n``, ``\\u00e9``
in either case of hex digit, surrogate pairs for astral code points). So ``"\\u0061"`` is
the key ``a`` exactly as a JSON parser sees it, and a language minus ``a`` excludes it too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..automata.algebra import MAX_STATES, intersect, without_words
from ..automata.cache import AutomatonCache
from ..automata.dfa import (DEAD, NFA, UNICODE_SCALARS, ByteDFA, StateLimitError, dfa_from_table, empty_byte_dfa, literal_dfa,
                            nfa_to_byte_dfa, nfa_to_utf8_dfa, renumbered)
from ..automata.kernels import weighted_path_lengths

__all__ = ["CountedStrings", "any_string_contents", "json_literal_dfa", "json_string_dfa", "length_dfa",
           "literal_contents_dfa", "other_strings"]

_SHORT_ESCAPES = {ord('"'): ord('"'), ord("\\"): ord("\\"), ord("/"): ord("/"), 0x08: ord("b"),
                  0x0C: ord("f"), 0x0A: ord("n"), 0x0D: ord("r"), 0x09: ord("t")}
_HEX_DIGIT_BYTES = [((48 + d, 48 + d),) if d < 10 else ((65 + d - 10, 65 + d - 10), (97 + d - 10, 97 + d - 10))
                    for d in range(16)]


@functools.lru_cache(maxsize=None)
def any_string_contents() -> ByteDFA:
    """Every string (of Unicode scalar values)."""
    nfa = NFA()
    nfa.accepting.add(nfa.initial)
    nfa.add_edge(nfa.initial, UNICODE_SCALARS, nfa.initial)
    return nfa_to_utf8_dfa(nfa)


def literal_contents_dfa(strings, *, max_states: int | None = None) -> ByteDFA:
    """Exactly the given strings."""
    return literal_dfa((s.encode("utf-8") for s in strings), max_states=max_states)


def other_strings(names, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Every string but ``names`` (the keys an object leaves to additionalProperties)."""
    if not names:
        return any_string_contents()
    others = without_words(any_string_contents(), [name.encode("utf-8") for name in names], max_states=max_states)
    if not any(_ESCAPED_CHARACTER.search(name) for name in names):  # see json_string_dfa
        _EXCLUDED_NAMES.put(others.digest, tuple(sorted(set(names))))
    return others


_EXCLUDED_NAMES = AutomatonCache("names excluded from any string", 4 << 20,
                                 size=lambda names: 100 + sum(50 + len(name) for name in names))
"""Digest of ``other_strings(names)`` -> ``names`` (sorted), for names that need no escapes:
their minimal spellings are then those of any string minus the quoted names."""


@functools.lru_cache(maxsize=256)
def length_dfa(minimum: int, maximum: int | None, *, max_states: int = MAX_STATES) -> ByteDFA:
    """Strings of ``minimum`` to ``maximum`` code points (no upper bound when None).

    Laid out directly, as the minimal UTF-8 automaton of that code point chain numbers its
    states (determinising the chain and encoding it took 60 ms for ``maxLength: 1000``, in
    a lazily built schema's mask): the chain's boundaries first, then per boundary the
    states inside a code point, by the bytes still to come and what they may be."""
    top = minimum if maximum is None else maximum
    n = 8 * top + 1  # (an unbounded last boundary shares its code points' inner states with the one before)
    if n > max_states:
        raise StateLimitError(f"the UTF-8 byte DFA needs more than max_states={max_states} states")
    table = np.full((n, 256), DEAD, dtype=np.int32)
    accepting = np.zeros(n, dtype=bool)
    accepting[minimum:top + 1] = True
    boundary = np.arange(top)
    after = (boundary + 1).astype(np.int32)[:, None]
    one, two, e0, ed, three, f0, f4 = ((top + 1 + 7 * boundary + i).astype(np.int32)[:, None] for i in range(7))
    table[boundary, 0x00:0x80] = after
    table[boundary, 0xC2:0xE0] = one
    table[boundary, 0xE0:0xE1] = e0  # then A0-BF: no overlong form
    table[boundary, 0xE1:0xED] = two
    table[boundary, 0xED:0xEE] = ed  # then 80-9F: no surrogate
    table[boundary, 0xEE:0xF0] = two
    table[boundary, 0xF0:0xF1] = f0  # then 90-BF: no overlong form
    table[boundary, 0xF1:0xF4] = three
    table[boundary, 0xF4:0xF5] = f4  # then 80-8F: nothing past U+10FFFF
    for inner, low, high, target in ((one, 0x80, 0xC0, after), (two, 0x80, 0xC0, one), (three, 0x80, 0xC0, two),
                                     (e0, 0xA0, 0xC0, one), (ed, 0x80, 0xA0, one), (f0, 0x90, 0xC0, two),
                                     (f4, 0x80, 0x90, two)):
        table[inner[:, 0], low:high] = target
    if maximum is None and top > 0:
        table[top] = table[top - 1]  # more code points, each back to the last boundary
    return ByteDFA(table, 0, accepting)


def with_length(contents: ByteDFA, minimum: int, maximum: int | None, *, max_states: int = MAX_STATES) -> ByteDFA:
    """The strings of ``contents`` with ``minimum`` to ``maximum`` code points."""
    if minimum == 0 and maximum is None:
        return contents
    if maximum is not None and maximum > 64:
        # a long maxLength times a pattern's states can outgrow the budget although the
        # pattern already bounds the length (``^[a-z]{1,20}$`` with maxLength 500): drop
        # the bounds the contents imply, exactly, before building the product
        shortest, longest = code_point_lengths(contents)
        if longest is not None and longest <= maximum:
            maximum = None
        if shortest >= minimum:
            minimum = 0
        if minimum == 0 and maximum is None:
            return contents
    return intersect(contents, length_dfa(minimum, maximum, max_states=max_states), max_states=max_states)


COUNTED_LENGTH = 0
"""Length bounds above this on otherwise unconstrained strings stay bounds (:class:`CountedStrings`):
measured on fresh values with the Llama-3.2 vocabulary, counting beat the automaton from maxLength 8 up
(mask p90 254 vs 1,705 µs at 8, 106 vs 519 µs at 64), and compiles in ~2 ms at any bound."""

MAX_COUNTED_LENGTH = 2**31 - 2
"""The most code points a length bound can count (the parser's counter is an int32). A
``maxLength`` above it is no bound (no generated string gets that far); a ``minLength``
above it is refused."""


@dataclass(frozen=True)
class CountedStrings:
    """The strings of ``contents`` (default: every string) with ``minimum`` to ``maximum``
    code points (None: no upper bound), kept as the contents and the bounds instead of
    one automaton.

    As one automaton, ``maxLength: 4096`` is ~10 states per code point (escapes, UTF-8
    sequences): 40k states to build and, in the lexer, a new state at every position of a
    value, so every mask of a fresh value classified the vocabulary anew (~0.4 ms), and
    32767 was refused; the 253-octet bound of ``hostname`` made 125 states 24k. The
    grammar emitter writes such strings as a terminal that spells the contents and leaves
    the bounds to the parser, which counts code points (see ``Terminal.length``): its few
    lexer states repeat. Set operations with other string languages build the automaton
    (:meth:`dfa`), as before."""

    minimum: int
    maximum: int | None
    contents: ByteDFA = field(default_factory=lambda: any_string_contents(), compare=False)
    known: "Callable[[], ByteDFA] | None" = field(default=None, compare=False)  # gives :meth:`dfa` (shipped data)

    def __eq__(self, other) -> bool:
        return (isinstance(other, CountedStrings) and (self.minimum, self.maximum) == (other.minimum, other.maximum)
                and self.contents.digest == other.contents.digest)

    def __hash__(self) -> int:
        return hash((self.minimum, self.maximum, self.contents.digest))

    def dfa(self, *, max_states: int = MAX_STATES) -> ByteDFA:
        if self.known is not None:
            return self.known()
        return with_length(self.contents, self.minimum, self.maximum, max_states=max_states)

    def is_empty(self, *, max_states: int = MAX_STATES) -> bool:
        """Does no string of the contents have a length within the bounds? A format's contents
        (``email``: 3 code points at least) may miss a short bound that the bounds alone allow
        (``maxLength: 1``), and a value no string can finish is a dead end for the masks.
        Exact: a short upper bound is checked on the automaton; past it the contents' fewest
        and most code points decide, as every counted contents (any string, the ``hostname``
        and ``email`` labels) takes every length in between."""
        if self.contents is any_string_contents():
            return False  # the bounds were checked when made
        if self.contents.initial == DEAD:  # (a pattern no address matches, say)
            return True
        if self.maximum is not None and self.maximum <= 64:
            return with_length(self.contents, self.minimum, self.maximum, max_states=max_states).initial == DEAD
        shortest, longest = code_point_lengths(self.contents)
        return (self.maximum is not None and shortest > self.maximum) or (longest is not None
                                                                          and longest < self.minimum)

    def meet(self, other: "CountedStrings") -> "CountedStrings | None":
        """Both bounds, for the same contents (None: no string)."""
        low = max(self.minimum, other.minimum)
        high = self.maximum if other.maximum is None else (
            other.maximum if self.maximum is None else min(self.maximum, other.maximum))
        if high is not None and high < low:
            return None
        same = (low, high) == (self.minimum, self.maximum)
        return CountedStrings(low, high, self.contents, self.known if same else None)

    def join(self, other: "CountedStrings") -> "CountedStrings | None":
        """The union, for the same contents, when it is one range, else None."""
        first, second = sorted((self, other), key=lambda c: c.minimum)
        if first.maximum is not None and first.maximum + 1 < second.minimum:
            return None
        high = None if first.maximum is None or second.maximum is None else max(first.maximum, second.maximum)
        return CountedStrings(first.minimum, high, self.contents)


def string_contents_dfa(strings, *, max_states: int = MAX_STATES) -> ByteDFA:
    """``strings`` as an automaton of contents (a :class:`CountedStrings` is built)."""
    return strings.dfa(max_states=max_states) if isinstance(strings, CountedStrings) else strings


def counted_or_dfa(contents: "ByteDFA | CountedStrings", minimum: int, maximum: int | None, *,
                   max_states: int = MAX_STATES) -> "ByteDFA | CountedStrings":
    """``with_length(contents, minimum, maximum)``, kept as a :class:`CountedStrings` where
    the contents are any string (and a bound is long) or already counted."""
    if isinstance(contents, CountedStrings):
        met = contents.meet(CountedStrings(minimum, maximum, contents.contents))
        if met is not None and met.minimum > 0 and not lengths_upward_closed(met.contents):
            # Counting reads the most code points exactly (a prefix fits iff its shortest
            # completion does), the least only where no completion length is skipped: an
            # e-mail address ends at "]" of an IP literal, and after a full 63-letter label one
            # more character completes nothing. The least goes into the automaton (its states
            # times the least length), the most stays counted.
            least = with_length(met.contents, met.minimum, None, max_states=max_states)
            return least if met.maximum is None else CountedStrings(0, met.maximum, least)
        return met
    # maxLength 0 counts too: as an automaton it is the only bound that a union of counted
    # lengths (anyOf of maxLength 0..999) would have to build every other one against
    if contents is any_string_contents() and (max(minimum, maximum or 0) > COUNTED_LENGTH or maximum == 0):
        return CountedStrings(minimum, maximum)
    if max(minimum, maximum or 0) > COUNTED_PATTERN_LENGTH and lengths_upward_closed(contents):
        return CountedStrings(minimum, maximum, contents)
    return with_length(contents, minimum, maximum, max_states=max_states)


COUNTED_PATTERN_LENGTH = 16
"""Length bounds above this on a ``pattern``'s (or another language's) strings are counted by
the parser where :func:`lengths_upward_closed` says that is exact: as one automaton the
pattern's states are multiplied by every length (``^(?:\\S+\\s+){0,9}\\S+$`` with
``maxLength: 200``: over 50,000 states, refused; with 120: 37,000 states, 250 ms to spell)."""

MAX_UPWARD_STATES = 4096
"""Contents automata larger than this are not examined (their bounds are built, as before)."""

_CONTINUATIONS = np.zeros(256, dtype=np.int64)  # continuation bytes after a leading byte
_CONTINUATIONS[0xC0:0xE0] = 1
_CONTINUATIONS[0xE0:0xF0] = 2
_CONTINUATIONS[0xF0:0xF8] = 3
_UPWARD = AutomatonCache("contents whose lengths can be counted", 1 << 20, size=lambda closed: 1)


def lengths_upward_closed(contents: ByteDFA) -> bool:
    """Whether, from every state between two code points, the completions' lengths (in code
    points) are every length from the shortest up. Then a parser that counts code points and
    knows each state's shortest completion (``lexer.characters_to_close``) reads length
    bounds exactly: a prefix whose count plus shortest completion fits the most can always be
    completed to any length up to it. Where a completion length is missing (``^(ab)+$``: even
    lengths; ``^a$`` after the ``a``: none but 0) a prefix could be allowed that no length
    within the bounds completes, so the bounds must be built into the automaton.

    The state sets reached after k code points from each such state are iterated until they
    repeat (the sequence is then periodic): a state whose completions once had a length and
    then lack one fails."""
    if contents.initial == DEAD or contents.num_states > MAX_UPWARD_STATES:
        return False
    found = _UPWARD.get(contents.digest)
    if found is None:
        found = _lengths_upward_closed(contents)
        _UPWARD.put(contents.digest, found)
    return found


def _lengths_upward_closed(contents: ByteDFA) -> bool:
    between, steps = _character_steps(contents)
    accepting = contents.accepting[between]
    reach = np.eye(len(between), dtype=bool)
    started = np.zeros(len(between), dtype=bool)  # some completion length seen already
    seen = set()
    for _ in range(4 * len(between) + 64):
        accepts = reach[:, accepting].any(axis=1)
        if (started & ~accepts).any():
            return False
        started |= accepts
        key = reach.tobytes()
        if key in seen:  # periodic from here: nothing new can fail
            return bool(started.all())
        seen.add(key)
        reach = (reach.astype(np.float32) @ steps) > 0
    return False


def _character_steps(contents: ByteDFA) -> "tuple[list[int], np.ndarray]":
    """(the states between two code points, reached from the initial state by whole ones;
    float32 [k, k] over them: 1 where one code point, a leading byte and its continuation
    bytes, leads from one to the other)."""
    table = contents.transitions
    continuation = np.arange(0x80, 0xC0)
    leads = [np.flatnonzero(_LEADING_BYTES & (_CONTINUATIONS == extra)) for extra in range(4)]
    index = {contents.initial: 0}
    order, successors = [contents.initial], []
    position = 0
    while position < len(order):
        state = order[position]
        position += 1
        found = set()
        for extra, columns in enumerate(leads):
            reached = np.unique(table[state, columns])
            reached = reached[reached != DEAD]
            for _ in range(extra):
                if not reached.size:
                    break
                reached = np.unique(table[reached][:, continuation])
                reached = reached[reached != DEAD]
            found.update(reached.tolist())
        for target in found:
            if target not in index:
                index[target] = len(order)
                order.append(target)
        successors.append(found)
    steps = np.zeros((len(order), len(order)), dtype=np.float32)
    for row, found in enumerate(successors):
        steps[row, [index[t] for t in found]] = 1.0
    return order, steps


_LEADING_BYTES = np.array([not 0x80 <= b <= 0xBF for b in range(256)])  # bytes that start a code point
_LEADING_WEIGHTS = _LEADING_BYTES.astype(np.int64)


def code_point_lengths(contents: ByteDFA) -> tuple[int, int | None]:
    """The fewest and most code points of a string of ``contents`` (most: None when unbounded).

    ``contents`` is trimmed (every state lies on an accepted path), so a cycle means
    unbounded lengths, and otherwise the longest path over the DAG counts the bytes that
    start a code point.
    """
    if contents.initial == DEAD:
        return 0, 0
    fewest, most = weighted_path_lengths(contents.transitions, contents.initial, contents.accepting, _LEADING_WEIGHTS)
    return int(fewest), None if most < 0 else int(most)


def json_string_dfa(contents: ByteDFA, *, escapes: str = "all", max_states: int = MAX_STATES) -> ByteDFA:
    """Every JSON string literal (quotes included) whose decoded value is in ``contents``.

    ``escapes="minimal"`` keeps only the spellings ``json.dumps(..., ensure_ascii=False)``
    can produce: a character is escaped exactly when JSON requires it (``"``, ``\\`` and
    control characters; a short escape where one exists, else a u-escape). The automaton
    is then much smaller, and a model cannot spell ``a`` as a u-escape.

    ``contents`` must read UTF-8 (as the DFAs of this package do). Raises StateLimitError
    beyond ``max_states``.
    """
    if contents.initial == DEAD:
        return empty_byte_dfa()
    key = (contents.digest, escapes, max_states)  # not the tables: they can be megabytes
    found = _JSON_STRINGS.get(key)
    if found is None:
        if escapes == "minimal":
            found = (_shipped_spelling(contents, max_states) or _spelled_other_strings(contents, max_states)
                     or minimally_escaped(contents, max_states))
        else:
            found = _escaped(contents, escapes, max_states)
        found = _JSON_STRINGS.put(key, found)
    return found


def json_literal_dfa(text: str, *, escapes: str = "all", max_states: int = MAX_STATES) -> ByteDFA:
    """``json_string_dfa(literal_contents_dfa([text]), ...)``: the spellings of one string
    (an object key). With minimal escapes a string with nothing to escape has exactly one
    spelling, itself in quotes, whose chain automaton is already minimal and canonical:
    built directly, it skips the contents automaton, the escape paths and a minimisation
    (this ran once per property name)."""
    if escapes == "minimal" and _ESCAPED_CHARACTER.search(text) is None:
        return literal_dfa([b'"' + text.encode("utf-8") + b'"'], max_states=max_states)
    return json_string_dfa(literal_contents_dfa([text]), escapes=escapes, max_states=max_states)


def _spelled_other_strings(contents: ByteDFA, max_states: int) -> ByteDFA | None:
    """For ``contents = other_strings(names)`` with nothing to escape in the names, exactly
    ``minimally_escaped(contents)``, as the spellings of any string (cached once) minus the
    quoted names: one product instead of spelling and minimising a new automaton. Distinct
    strings have disjoint spellings, so spelling commutes with the difference. None for
    other contents, and where ``minimally_escaped`` could hit ``max_states`` (it counts at
    most 7n + 2 states before minimising): its error, if any, is then the one raised."""
    names = _EXCLUDED_NAMES.get(contents.digest)
    if names is None or 7 * contents.num_states + 2 > max_states:
        return None
    try:
        return without_words(json_string_dfa(any_string_contents(), escapes="minimal", max_states=max_states),
                             [b'"' + name.encode("utf-8") + b'"' for name in names], max_states=max_states)
    except StateLimitError:
        return None


_SHIPPED_SPELLINGS: dict[bytes, Callable[[int], ByteDFA | None]] = {}
"""Contents digest -> loader of its precomputed minimal-escape spelling, given ``max_states``
(None where that spelling would raise StateLimitError or its data is unusable). Filled by
:mod:`.format_data` for the format automata it loads from the package data."""


def register_shipped_spelling(contents_digest: bytes, loader: Callable[[int], ByteDFA | None]) -> None:
    """Let ``json_string_dfa(contents, escapes="minimal")`` take its result from ``loader``
    (which must return exactly what :func:`minimally_escaped` would) for contents with
    this digest."""
    _SHIPPED_SPELLINGS[contents_digest] = loader


def _shipped_spelling(contents: ByteDFA, max_states: int) -> ByteDFA | None:
    loader = _SHIPPED_SPELLINGS.get(contents.digest)
    return None if loader is None else loader(max_states)


def minimal_spelling_states(contents: ByteDFA) -> int:
    """The states :func:`minimally_escaped` lays out before minimising: it raises
    StateLimitError exactly when this exceeds ``max_states``."""
    table = contents.transitions
    escaping = (table[:, _NEEDS_ESCAPE] != DEAD).any(axis=1)
    if not escaping.any():
        return contents.num_states + 2
    low = (table[escaping][:, _LOW_HEX_ESCAPED] != DEAD).any(axis=1)
    high = (table[escaping][:, 0x10:0x20] != DEAD).any(axis=1)
    with_u = low | high  # states that also read \u00XX
    return contents.num_states + 2 + int(escaping.sum()) + 3 * int(with_u.sum()) + int(low.sum()) + int(high.sum())


_JSON_STRINGS = AutomatonCache("JSON string spellings", 64 << 20)
"""Schemas share most strings (keys, formats, any string)."""
_NEEDS_ESCAPE = [*range(0x20), 0x22, 0x5C]
_ESCAPED_CHARACTER = re.compile(r'[\x00-\x1f"\\]')  # the characters of _NEEDS_ESCAPE


_SHORT_ESCAPE_LETTERS = {code_point: letter for code_point, letter in _SHORT_ESCAPES.items() if code_point != ord("/")}
_LOW_HEX_ESCAPED = [cp for cp in range(0x10) if cp not in _SHORT_ESCAPE_LETTERS]  # written \u000X


def minimally_escaped(contents: ByteDFA, max_states: int) -> ByteDFA:
    """The minimal-escape JSON spellings of ``contents``, built directly as a DFA.

    Every character JSON requires escaped (``"``, ``\\``, U+0000-U+001F) is one ASCII
    byte, so the spelling is the contents table with those bytes' transitions replaced by
    short deterministic paths: from a state q, ``\\`` leads to a state of q's own whose
    ``"``, ``\\``, ``b f n r t`` go where the escaped character went, and whose ``u00``
    + two hex digits (either case; only for characters without a short escape) do too.
    No subset construction is needed (this was an NFA determinised in Python: seconds for
    ``format: email``).
    """
    table = contents.transitions
    n = contents.num_states
    escaped_targets = table[:, _NEEDS_ESCAPE]
    escaping = np.flatnonzero((escaped_targets != DEAD).any(axis=1))  # states that need a backslash path
    if not len(escaping):
        # Nothing to escape: the contents automaton between an opening and a closing quote
        # state stays minimal (distinct contents states keep distinct spellings, only the
        # closing state accepts, and the opening one reads a quote where contents states
        # read none or go to the closing one), so minimising would only renumber.
        if n + 2 > max_states:
            raise StateLimitError(f"the JSON spellings of these strings need more than max_states={max_states} states")
        result = np.full((n + 2, 256), DEAD, dtype=np.int32)
        result[:n] = table
        result[n, 0x22] = contents.initial
        result[np.flatnonzero(contents.accepting), 0x22] = n + 1
        accepting = np.zeros(n + 2, dtype=bool)
        accepting[n + 1] = True
        return renumbered(result, n, accepting)
    low = (table[escaping][:, _LOW_HEX_ESCAPED] != DEAD).any(axis=1)  # \u000X from this state
    high = (table[escaping][:, 0x10:0x20] != DEAD).any(axis=1)  # \u001X
    with_u = np.flatnonzero(low | high)
    opening, closing = n, n + 1
    backslash = n + 2 + np.arange(len(escaping))
    after_u = backslash[-1] + 1 + np.arange(len(with_u)) if len(escaping) else np.zeros(0, dtype=np.int64)
    after_u0 = after_u + len(with_u)
    after_u00 = after_u0 + len(with_u)
    next_free = n + 2 + len(escaping) + 3 * len(with_u)
    low_rows = np.searchsorted(with_u, np.flatnonzero(low))  # rows of after_u00 that read a low digit
    high_rows = np.searchsorted(with_u, np.flatnonzero(high))
    low_digit = next_free + np.arange(len(low_rows))
    high_digit = next_free + len(low_rows) + np.arange(len(high_rows))
    num_states = next_free + len(low_rows) + len(high_rows)
    if num_states > max_states:
        raise StateLimitError(f"the JSON spellings of these strings need more than max_states={max_states} states")
    result = np.full((num_states, 256), DEAD, dtype=np.int32)
    result[:n] = table
    result[:n, _NEEDS_ESCAPE] = DEAD  # never written raw
    result[opening, 0x22] = contents.initial
    result[np.flatnonzero(contents.accepting), 0x22] = closing
    result[escaping, 0x5C] = backslash
    for code_point, letter in _SHORT_ESCAPE_LETTERS.items():
        result[backslash, letter] = table[escaping, code_point]
    result[backslash[with_u], ord("u")] = after_u
    result[after_u, ord("0")] = after_u0
    result[after_u0, ord("0")] = after_u00
    result[after_u00[low_rows], ord("0")] = low_digit
    result[after_u00[high_rows], ord("1")] = high_digit
    low_sources, high_sources = escaping[np.flatnonzero(low)], escaping[np.flatnonzero(high)]
    for digit in range(16):
        for lo, hi in _HEX_DIGIT_BYTES[digit]:
            if digit in _LOW_HEX_ESCAPED:
                result[low_digit, lo] = table[low_sources, digit]
            result[high_digit, lo] = table[high_sources, 0x10 + digit]
    accepting = np.zeros(num_states, dtype=bool)
    accepting[closing] = True
    return dfa_from_table(result, opening, accepting)


def _escaped(contents: ByteDFA, escapes: str, max_states: int) -> ByteDFA:
    nfa = NFA(max_states=max_states * 4)
    table = contents.transitions
    n = contents.num_states
    pieces_of = _boundary_pieces(contents)
    node = [nfa.add_state() for _ in range(n)]
    start = nfa.initial
    final = nfa.add_state(accepting=True)
    nfa.add_edge(start, ((34, 34),), node[contents.initial])
    for q in range(n):
        raw_only = q in pieces_of
        row = table[q].copy()
        if raw_only:  # these characters can only be written escaped
            row[:0x20] = DEAD
            row[34] = row[92] = DEAD
        for target in set(row.tolist()) - {DEAD}:
            bytes_to_target = np.flatnonzero(row == target).tolist()
            nfa.add_edge(node[q], [(b, b) for b in bytes_to_target], node[target])
        if raw_only:
            if contents.accepting[q]:
                nfa.add_edge(node[q], ((34, 34),), final)
            pieces = pieces_of[q]
            if escapes == "minimal":
                pieces = [(max(lo, a), min(hi, b), t) for lo, hi, t in pieces for a, b in _MUST_ESCAPE
                          if max(lo, a) <= min(hi, b)]
            _add_escapes(nfa, node, q, pieces, minimal=escapes == "minimal")
    return nfa_to_byte_dfa(nfa, max_states=max_states)


def _boundary_pieces(dfa: ByteDFA) -> dict[int, list[tuple[int, int, int]]]:
    """The code point pieces of every state that lies between two code points (the other
    states are inside a UTF-8 sequence)."""
    memo: dict = {}
    pieces_of = {}
    stack = [dfa.initial]
    while stack:
        q = stack.pop()
        if q in pieces_of:
            continue
        pieces_of[q] = _code_point_pieces(dfa.transitions, q, memo)
        stack.extend(target for _, _, target in pieces_of[q] if target not in pieces_of)
    return pieces_of


def _code_point_pieces(table, q: int, memo: dict) -> list[tuple[int, int, int]]:
    """Sorted ``(lo, hi, target)``: reading any code point in lo..hi from ``q`` leads to ``target``."""
    pieces: list[tuple[int, int, int]] = []
    row = table[q]
    for byte in range(256):
        target = int(row[byte])
        if target == DEAD:
            continue
        if byte < 0x80:
            _append_piece(pieces, byte, byte, target)
        elif 0xC2 <= byte <= 0xF4:
            continuations = 1 if byte < 0xE0 else 2 if byte < 0xF0 else 3
            lead_bits = byte & (0x1F if continuations == 1 else 0x0F if continuations == 2 else 0x07)
            base = lead_bits << (6 * continuations)
            for lo, hi, end in _continuation_pieces(memo, table, target, continuations):
                _append_piece(pieces, base + lo, base + hi, end)
    return pieces


def _append_piece(pieces, lo: int, hi: int, target: int) -> None:
    if pieces and pieces[-1][2] == target and pieces[-1][1] + 1 == lo:
        pieces[-1] = (pieces[-1][0], hi, target)
    else:
        pieces.append((lo, hi, target))


def _continuation_pieces(memo: dict, table, q: int, remaining: int) -> list[tuple[int, int, int]]:
    """Pieces of the low ``6 * remaining`` bits read as continuation bytes from ``q``."""
    found = memo.get((q, remaining))
    if found is not None:
        return found
    pieces: list[tuple[int, int, int]] = []
    row = table[q]
    for byte in range(0x80, 0xC0):
        target = int(row[byte])
        if target == DEAD:
            continue
        offset = (byte & 0x3F) << (6 * (remaining - 1))
        if remaining == 1:
            _append_piece(pieces, offset, offset, target)
        else:
            for lo, hi, end in _continuation_pieces(memo, table, target, remaining - 1):
                _append_piece(pieces, offset + lo, offset + hi, end)
    memo[(q, remaining)] = pieces
    return pieces


_MUST_ESCAPE = ((0, 0x1F), (34, 34), (92, 92))


def _add_escapes(nfa: NFA, node: list[int], q: int, pieces, minimal: bool = False) -> None:
    backslash = nfa.add_state()
    nfa.add_edge(node[q], ((92, 92),), backslash)
    after_u = nfa.add_state()
    nfa.add_edge(backslash, ((117, 117),), after_u)
    for lo, hi, target in pieces:
        for code_point, letter in _SHORT_ESCAPES.items():
            if lo <= code_point <= hi:
                nfa.add_edge(backslash, ((letter, letter),), node[target])
        if minimal:
            for code_point in range(lo, hi + 1):
                if code_point not in _SHORT_ESCAPES:
                    _add_hex_range(nfa, after_u, node[target], code_point, code_point, 4)
            continue
        bmp_lo, bmp_hi = lo, min(hi, 0xFFFF)
        for a, b in ((bmp_lo, min(bmp_hi, 0xD7FF)), (max(bmp_lo, 0xE000), bmp_hi)):
            if a <= b:
                _add_hex_range(nfa, after_u, node[target], a, b, 4)
        if hi >= 0x10000:
            _add_surrogate_pairs(nfa, after_u, node[target], max(lo, 0x10000), hi)


def _add_surrogate_pairs(nfa: NFA, after_u: int, target: int, lo: int, hi: int) -> None:
    """``HHHH\\uLLLL`` (after the first ``\\u``) for the astral code points lo..hi."""
    lo, hi = lo - 0x10000, hi - 0x10000
    first_high, last_high = lo >> 10, hi >> 10
    groups = []  # (high lo, high hi, low lo, low hi)
    if first_high == last_high:
        groups.append((first_high, first_high, lo & 0x3FF, hi & 0x3FF))
    else:
        start, end = first_high, last_high
        if lo & 0x3FF:
            groups.append((first_high, first_high, lo & 0x3FF, 0x3FF))
            start += 1
        if (hi & 0x3FF) != 0x3FF:
            groups.append((last_high, last_high, 0, hi & 0x3FF))
            end -= 1
        if start <= end:
            groups.append((start, end, 0, 0x3FF))
    for high_lo, high_hi, low_lo, low_hi in groups:
        middle = nfa.add_state()
        _add_hex_range(nfa, after_u, middle, 0xD800 + high_lo, 0xD800 + high_hi, 4)
        second_backslash = nfa.add_state()
        second_u = nfa.add_state()
        nfa.add_edge(middle, ((92, 92),), second_backslash)
        nfa.add_edge(second_backslash, ((117, 117),), second_u)
        _add_hex_range(nfa, second_u, target, 0xDC00 + low_lo, 0xDC00 + low_hi, 4)


def _add_hex_range(nfa: NFA, source: int, target: int, lo: int, hi: int, width: int) -> None:
    """Paths spelling every number lo..hi as exactly ``width`` hex digits (either case)."""
    if width == 0:
        nfa.add_epsilon(source, target)
        return
    unit = 16 ** (width - 1)
    top_lo, top_hi = lo // unit, hi // unit
    if top_lo == top_hi:
        middle = nfa.add_state()
        nfa.add_edge(source, _HEX_DIGIT_BYTES[top_lo], middle)
        _add_hex_range(nfa, middle, target, lo % unit, hi % unit, width - 1)
        return
    if lo % unit:
        _add_hex_range(nfa, source, target, lo, (top_lo + 1) * unit - 1, width)
        top_lo += 1
    if hi % unit != unit - 1:
        _add_hex_range(nfa, source, target, top_hi * unit, hi, width)
        top_hi -= 1
    if top_lo <= top_hi:
        labels = tuple(interval for d in range(top_lo, top_hi + 1) for interval in _HEX_DIGIT_BYTES[d])
        middle = nfa.add_state()
        nfa.add_edge(source, labels, middle)
        _add_any_hex(nfa, middle, target, width - 1)


def _add_any_hex(nfa: NFA, source: int, target: int, width: int) -> None:
    every_digit = tuple(interval for d in range(16) for interval in _HEX_DIGIT_BYTES[d])
    for _ in range(width - 1):
        middle = nfa.add_state()
        nfa.add_edge(source, every_digit, middle)
        source = middle
    if width:
        nfa.add_edge(source, every_digit, target)
    else:
        nfa.add_epsilon(source, target)
