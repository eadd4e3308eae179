"""Python regular expressions compiled to minimal byte-level DFAs.

The pattern is parsed by Python's own parser (``re._parser``), so syntax and meaning are
exactly those of :mod:`re`; the resulting :class:`~gramalign.grammar.automata.dfa.ByteDFA` accepts
the UTF-8 encoding of ``s`` exactly when ``re.fullmatch(pattern, s, flags)`` matches.

Single-character constructs become sets of code points. Literals and ranges are computed
directly; Unicode categories and anything under IGNORECASE are computed by asking ``re``
itself which characters match, so Unicode ``\\d``/``\\w``/``\\s`` and Python's case-folding
rules (KELVIN SIGN, long s, ...) are reproduced exactly. The results are cached.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from ...errors import RegexError
from .dfa import (
                  NFA,
                  UNICODE_SCALARS,
                  ByteDFA,
                  IntervalSet,
                  StateLimitError,
                  complement_intervals,
                  intersect_intervals,
                  intervals_from_points,
                  nfa_to_utf8_dfa,
                  normalize_intervals,
                  subtract_intervals,
                  union_intervals,
                  )
from .lookaround import LookaroundError, has_lookaround, lookahead_classes, lookaround_dfa

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

try:
    import _sre
except ImportError:  # pragma: no cover
    _sre = None  # type: ignore[assignment]

try:  # characters whose case-insensitive matching re special-cases (e.g. 's' ~ 'ſ')
    from re._casefix import _EXTRA_CASES as _CASE_FIXES
except ImportError:  # pragma: no cover - Python 3.10
    try:
        from sre_compile import _ignorecase_fixes as _CASE_FIXES  # type: ignore[no-redef]
    except ImportError:
        _CASE_FIXES = {}

__all__ = ["regex_to_dfa", "MAX_NFA_STATES"]

MAX_NFA_STATES = 100_000
"""Largest NFA (over code points) a pattern may expand to, e.g. ``a{100000}`` is too large."""

_LITERAL = _sre_parse.LITERAL
_NOT_LITERAL = _sre_parse.NOT_LITERAL
_ANY = _sre_parse.ANY
_IN = _sre_parse.IN
_NEGATE = _sre_parse.NEGATE
_RANGE = _sre_parse.RANGE
_CATEGORY = _sre_parse.CATEGORY
_SUBPATTERN = _sre_parse.SUBPATTERN
_BRANCH = _sre_parse.BRANCH
_AT = _sre_parse.AT
_REPEATS = {_sre_parse.MAX_REPEAT, _sre_parse.MIN_REPEAT}  # same language under fullmatch
_MAXREPEAT = _sre_parse.MAXREPEAT
_SINGLE_CHARACTER = {_LITERAL, _NOT_LITERAL, _ANY, _IN}
_START_ANCHORS = {_sre_parse.AT_BEGINNING, _sre_parse.AT_BEGINNING_STRING}
_END_ANCHORS = {_sre_parse.AT_END, _sre_parse.AT_END_STRING}
_TYPE_FLAGS = re.ASCII | re.LOCALE | re.UNICODE

# Category -> (escape letter, negated).
_CATEGORIES = {
    _sre_parse.CATEGORY_DIGIT: ("d", False),
    _sre_parse.CATEGORY_NOT_DIGIT: ("d", True),
    _sre_parse.CATEGORY_SPACE: ("s", False),
    _sre_parse.CATEGORY_NOT_SPACE: ("s", True),
    _sre_parse.CATEGORY_WORD: ("w", False),
    _sre_parse.CATEGORY_NOT_WORD: ("w", True),
}

SUPPORTED_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII | re.UNICODE | re.DEBUG


def regex_to_dfa(pattern: str, *, flags: int = 0, max_states: int = 50_000, whole_text: bool = False) -> ByteDFA:
    """Compile a Python regular expression to a trimmed, minimal DFA over UTF-8 bytes.

    Results are cached (the last ``REGEX_CACHE_SIZE`` distinct patterns); the returned DFA
    is shared, so treat its arrays as read-only.

    The DFA accepts ``s.encode("utf-8")`` exactly when ``re.fullmatch(pattern, s, flags)``
    matches (for every ``str`` without lone surrogates); invalid UTF-8 is never accepted.

    Supported: literals and every escape of :mod:`re` (``\\x``, ``\\u``, ``\\U``, ``\\N{...}``,
    octal), ``.``, classes with ranges/negation/``\\d \\w \\s \\D \\W \\S`` (Unicode-aware unless
    ASCII), groups of every capturing/non-capturing/named kind, scoped and global inline
    flags (``i s x a u m``), alternation, greedy and lazy ``* + ? {m,n} {m,} {,n}``, and the
    anchors ``^ \\A`` at the start and ``$ \\Z`` at the end of the pattern or of a top-level
    alternative (where they never change the fullmatch language).

    Lookaheads and lookbehinds of bounded width, and word boundaries ``\\b``/``\\B``, are
    supported where they read only inside the match (see :mod:`.lookaround`). With
    ``whole_text`` the match is the whole text (a regex that stands alone, not a lexeme
    among others), so a word boundary at its start reads "start of text" and one at its end
    "end of text", where ``\\b`` sees a non-word character, as ``re.fullmatch`` does.

    Raises :class:`~gramalign.errors.RegexError` with the 0-based position of the offending
    construct for invalid patterns and for non-regular or unsupported constructs:
    back-references, conditionals, lookarounds and word boundaries that can read outside the
    match, word boundaries in a repeat (:class:`~.lookaround.LookaroundError`), atomic groups,
    possessive repeats (position of the quantifier) and anchors anywhere else. Size limits raise
    RegexError without a position: an NFA above :data:`MAX_NFA_STATES` states, or more than
    ``max_states`` DFA states (checked during determinisation over code points and while
    encoding to bytes). ``bytes`` patterns raise TypeError.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"regex_to_dfa needs a str pattern, not {type(pattern).__name__}")
    return _cached_regex_to_dfa(pattern, int(flags), int(max_states), bool(whole_text))


REGEX_CACHE_SIZE = 4096


@functools.lru_cache(maxsize=REGEX_CACHE_SIZE)
def _cached_regex_to_dfa(pattern: str, flags: int, max_states: int, whole_text: bool = False) -> ByteDFA:
    flags = int(flags)
    if flags & ~SUPPORTED_FLAGS:
        raise RegexError(f"unsupported regex flags {re.RegexFlag(flags & ~SUPPORTED_FLAGS)!r}", pattern)
    flags &= ~re.DEBUG
    try:
        re.compile(pattern, flags)  # re's own validation gives the exact message and position
        parsed = _sre_parse.parse(pattern, flags)
    except re.error as exc:
        raise RegexError(exc.msg, pattern, exc.pos) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        raise RegexError(f"invalid regex: {exc}", pattern) from None

    return parsed_to_dfa(pattern, parsed, max_states, whole_text)


def parsed_to_dfa(pattern: str, parsed, max_states: int = 50_000, whole_text: bool = False) -> ByteDFA:
    """The byte DFA of ``parsed``, the ``sre_parse`` tree of ``pattern`` or of a part of its
    top-level sequence (``pattern`` serves the error messages); see :func:`regex_to_dfa`."""
    global_flags = parsed.state.flags
    if has_lookaround(list(parsed)):
        construction = functools.partial(lookaround_dfa, whole_text=True) if whole_text else lookaround_dfa
        return _with_lookarounds(pattern, parsed, global_flags, max_states, construction)
    nfa = NFA(max_states=MAX_NFA_STATES)
    try:
        end = _NFABuilder(nfa).sequence(list(parsed), nfa.initial, global_flags, True, True)
    except _Unsupported as exc:
        located = _Locator(pattern, bool(global_flags & re.VERBOSE)).first_problem()
        if located is None:
            raise RegexError(exc.message, pattern) from None
        position, message = located
        raise RegexError(message, pattern, position) from None
    except StateLimitError:
        raise RegexError(
            f"regex too large: its NFA needs more than {MAX_NFA_STATES} states", pattern
        ) from None
    except RecursionError:
        raise RegexError("regex nested too deeply", pattern) from None
    nfa.accepting.add(end)
    try:
        return nfa_to_utf8_dfa(nfa, max_states=max_states)
    except StateLimitError as exc:
        raise RegexError(f"regex too large: {exc}", pattern) from None


def pieces_dfa(pieces: list, max_states: int = 50_000) -> ByteDFA:
    """The byte DFA of ``re.fullmatch`` for a sequence of parse items, each with its own flags:
    ``(op, av, flags)`` triples as ``sre_parse`` gives them, without assertions or anchors.
    Raises :class:`RegexError` where they cannot be built (no position: the caller knows the
    pattern)."""
    nfa = NFA(max_states=MAX_NFA_STATES)
    builder = _NFABuilder(nfa)
    entry = nfa.initial
    try:
        for op, av, flags in pieces:
            entry = builder.node((op, av), entry, flags, False, False)
        nfa.accepting.add(entry)
        return nfa_to_utf8_dfa(nfa, max_states=max_states)
    except _Unsupported as exc:
        raise RegexError(exc.message, "") from None
    except (StateLimitError, RecursionError) as exc:
        raise RegexError(f"regex too large: {exc}", "") from None


def item_symbols(op: Any, av: Any, flags: int) -> IntervalSet | None:
    """The code points one single-character parse item matches, or None for any other item."""
    return _node_symbols(op, av, flags) if op in _SINGLE_CHARACTER else None


def regex_lookahead_classes(pattern: str, *, flags: int = 0, max_states: int = 50_000, before: str | None = None):
    """The lexemes of ``pattern`` split by what must (not) follow them, where a lookahead
    can read past the match (``0(?![1-9])``, ``-(?=[0-9])``), or None where nothing reads past
    it (then :func:`regex_to_dfa` is its language); see :func:`.lookaround.lookahead_classes`.

    >>> everything, classes = regex_lookahead_classes(r"0(?![1-9])|1")
    >>> sorted((lexemes.matches(b"0"), rest is not None and rest.matches(b"5"), needs_text)
    ...        for lexemes, rest, needs_text in classes)
    [(False, False, False), (True, True, False)]
    """
    try:
        parsed = _sre_parse.parse(pattern, int(flags))
    except (re.error, ValueError, OverflowError, RecursionError):
        return None  # regex_to_dfa says what is wrong
    if not has_lookaround(list(parsed)):
        return None
    return _with_lookarounds(pattern, parsed, parsed.state.flags, max_states,
                             functools.partial(lookahead_classes, before=before))


def regex_dfa_after(pattern: str, before: str, *, flags: int = 0, max_states: int = 50_000) -> ByteDFA:
    """:func:`regex_to_dfa` of a match that follows the character ``before`` (one ASCII
    character), which a word boundary at the start of the pattern reads (``\\b\\w+`` after
    ``" "`` is ``\\w+``, after ``"a"`` nothing); see :mod:`.lookaround`.

    >>> regex_dfa_after(r"\\Bx+", "a").matches(b"xx"), regex_dfa_after(r"\\Bx+", " ").matches(b"xx")
    (True, False)
    """
    parsed = _sre_parse.parse(pattern, int(flags))
    return _with_lookarounds(pattern, parsed, parsed.state.flags, max_states,
                             functools.partial(lookaround_dfa, before=before))


def _with_lookarounds(pattern: str, parsed, global_flags: int, max_states: int, construction=lookaround_dfa):
    """The DFA of a pattern with lookaheads or lookbehinds (see :mod:`.lookaround`), or
    what ``construction`` (a function of that module) makes of it."""

    def build(items: list, flags: int, at_start: bool, at_end: bool) -> ByteDFA:
        nfa = NFA(max_states=MAX_NFA_STATES)
        end = _NFABuilder(nfa).sequence(list(items), nfa.initial, flags, at_start, at_end)
        nfa.accepting.add(end)
        return nfa_to_utf8_dfa(nfa, max_states=max_states)

    try:
        return construction(pattern, parsed, global_flags, build, max_states)
    except LookaroundError as exc:
        positions = _Locator(pattern, bool(global_flags & re.VERBOSE))
        positions.first_problem()
        where = positions.lookarounds[exc.index] if exc.index < len(positions.lookarounds) else None
        raise type(exc)(exc.reason, pattern, where, index=exc.index) from None
    except _Unsupported as exc:
        located = _Locator(pattern, bool(global_flags & re.VERBOSE)).first_problem()
        if located is None:
            raise RegexError(exc.message, pattern) from None
        raise RegexError(located[1], pattern, located[0]) from None
    except StateLimitError as exc:
        raise RegexError(f"regex too large: {exc}", pattern) from None
    except RecursionError:
        raise RegexError("regex nested too deeply", pattern) from None


# --------------------------------------------------------------------------- characters


@functools.cache
def _all_code_points() -> str:
    """One string holding every code point except the surrogates, in order."""
    points = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x110000)]).astype("<u4")
    return points.tobytes().decode("utf-32-le")


def _code_point_at(position: int) -> int:
    return position if position < 0xD800 else position + 0x800


@functools.cache
def _category_set(letter: str, unicode: bool) -> IntervalSet:
    """Code points matched by ``\\d``, ``\\s`` or ``\\w``, computed by re itself."""
    finder = re.compile("\\" + letter + "+", 0 if unicode else re.ASCII)
    intervals = []
    for match in finder.finditer(_all_code_points()):
        start, end = match.span()
        intervals.append((_code_point_at(start), _code_point_at(end - 1)))
    # A run across the surrogate gap maps to one interval that includes the surrogates.
    return intersect_intervals(normalize_intervals(intervals), UNICODE_SCALARS)


@functools.cache
def _case_sensitive_characters() -> tuple[IntervalSet, str]:
    """Characters whose matching can change under IGNORECASE, as intervals and as a string.

    At run time re only looks at a character's simple lower and upper case and at the
    special cases in ``_CASE_FIXES``; a character that is its own lower and upper case, is
    no other character's lower case and is no special case therefore matches a pattern
    under IGNORECASE exactly as it does without it. Everything else is in this set.
    """
    if _sre is not None:
        cased_mask = np.frombuffer(bytes(map(_sre.unicode_iscased, range(0x110000))), dtype=np.uint8)
        cased = np.flatnonzero(cased_mask).tolist()
        points = set(cased)
        points.update(map(_sre.unicode_tolower, cased))
    else:  # pragma: no cover - every CPython has _sre
        points = {cp for cp in range(0x110000) if chr(cp).lower() != chr(cp) or chr(cp).upper() != chr(cp)}
        points.update(ord(chr(cp).lower()) for cp in list(points) if len(chr(cp).lower()) == 1)
    for key, values in _CASE_FIXES.items():
        points.add(key)
        points.update(values)
    intervals = intersect_intervals(intervals_from_points(points), UNICODE_SCALARS)
    text = "".join(chr(cp) for lo, hi in intervals for cp in range(lo, hi + 1))
    return intervals, text


def _plain_set(op: Any, av: Any, unicode: bool, dotall: bool) -> IntervalSet:
    """Code points matched by a single-character node without IGNORECASE."""
    if op is _LITERAL:
        return intersect_intervals(((av, av),), UNICODE_SCALARS)
    if op is _NOT_LITERAL:
        return complement_intervals(((av, av),))
    if op is _ANY:
        return UNICODE_SCALARS if dotall else complement_intervals(((10, 10),))
    negate = False
    parts: list[IntervalSet] = []
    for item_op, item_av in av:
        if item_op is _NEGATE:
            negate = True
        elif item_op is _LITERAL:
            parts.append(((item_av, item_av),))
        elif item_op is _RANGE:
            parts.append((tuple(item_av),))
        elif item_op is _CATEGORY and item_av in _CATEGORIES:
            letter, negated = _CATEGORIES[item_av]
            category = _category_set(letter, unicode)
            parts.append(complement_intervals(category) if negated else category)
        else:
            raise _Unsupported(f"unsupported character class item {item_op}")
    members = intersect_intervals(union_intervals(*parts), UNICODE_SCALARS)
    return complement_intervals(members) if negate else members


def _node_regex(op: Any, av: Any) -> str:
    """A one-character regex equivalent to a single-character node."""

    def escape(cp: int) -> str:
        return "\\U%08x" % cp

    if op is _LITERAL:
        return escape(av)
    if op is _NOT_LITERAL:
        return "[^" + escape(av) + "]"
    if op is _ANY:
        return "."
    parts = []
    for item_op, item_av in av:
        if item_op is _NEGATE:
            parts.insert(0, "^")
        elif item_op is _LITERAL:
            parts.append(escape(item_av))
        elif item_op is _RANGE:
            parts.append(escape(item_av[0]) + "-" + escape(item_av[1]))
        else:
            letter, negated = _CATEGORIES[item_av]
            parts.append("\\" + (letter.upper() if negated else letter))
    return "[" + "".join(parts) + "]"


@functools.lru_cache(maxsize=16384)
def _character_set(op: Any, av: Any, ignorecase: bool, unicode: bool, dotall: bool) -> IntervalSet:
    """Code points matched by a single-character node under the given flags."""
    plain = _plain_set(op, av, unicode, dotall)
    if not ignorecase:
        return plain
    case_sensitive, case_sensitive_text = _case_sensitive_characters()
    regex_flags = re.IGNORECASE | (re.DOTALL if dotall else 0) | (0 if unicode else re.ASCII)
    finder = re.compile(_node_regex(op, av), regex_flags)
    folded = intervals_from_points(map(ord, finder.findall(case_sensitive_text)))
    return union_intervals(subtract_intervals(plain, case_sensitive), folded)


def _node_symbols(op: Any, av: Any, flags: int) -> IntervalSet:
    if op is _IN:
        av = tuple(av)  # hashable for the cache; its items are already tuples
    return _character_set(
        op, av, bool(flags & re.IGNORECASE), bool(flags & re.UNICODE), bool(flags & re.DOTALL)
    )


# --------------------------------------------------------------------------- NFA


class _Unsupported(Exception):
    """A construct the DFA cannot express; located in the pattern text afterwards."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def combine_flags(flags: int, add: int, remove: int) -> int:
    """Flags inside ``(?add-remove:...)``, as re's compiler combines them."""
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~remove


def _is_transparent(node: tuple[Any, Any], anchors: set[Any]) -> bool:
    """True for nodes that match only the empty string with no condition but ``anchors``."""
    op, av = node
    if op is _AT:
        return av in anchors
    if op is _SUBPATTERN:
        return all(_is_transparent(item, anchors) for item in av[-1])
    if op is _BRANCH:
        return all(_is_transparent(item, anchors) for alternative in av[1] for item in alternative)
    return False


def _estimated_size(items: list) -> int:
    """Number of NFA states :class:`_NFABuilder` creates for ``items``."""
    size = 0
    for op, av in items:
        if op in _SINGLE_CHARACTER:
            size += 1
        elif op is _SUBPATTERN:
            size += _estimated_size(av[-1])
        elif op is _BRANCH:
            size += 1 + sum(_estimated_size(alternative) for alternative in av[1])
        elif op in _REPEATS:
            low, high, body = av
            copies = low + (1 if high == _MAXREPEAT else high - low)
            size += 1 + _estimated_size(body) * copies
    return size


class _NFABuilder:
    """Thompson construction from the sre parse tree, over code point sets.

    Every build method takes the state to start from and returns the state where the
    construct ends. Loops always close onto fresh states so that shared entry states never
    gain back edges. ``at_start``/``at_end`` say whether nothing can be consumed before /
    after the node, which is where anchors are no-ops under fullmatch.
    """

    def __init__(self, nfa: NFA):
        self.nfa = nfa

    def sequence(self, items: list, entry: int, flags: int, at_start: bool, at_end: bool) -> int:
        starts = []
        still_start = at_start
        for item in items:
            starts.append(still_start)
            still_start = still_start and _is_transparent(item, _START_ANCHORS)
        ends = []
        still_end = at_end
        for item in reversed(items):
            ends.append(still_end)
            still_end = still_end and _is_transparent(item, _END_ANCHORS)
        ends.reverse()
        for item, item_start, item_end in zip(items, starts, ends):
            entry = self.node(item, entry, flags, item_start, item_end)
        return entry

    def node(self, node: tuple[Any, Any], entry: int, flags: int, at_start: bool, at_end: bool) -> int:
        op, av = node
        nfa = self.nfa
        if op in _SINGLE_CHARACTER:
            exit_state = nfa.add_state()
            nfa.add_edge(entry, _node_symbols(op, av, flags), exit_state)
            return exit_state
        if op is _SUBPATTERN:
            _group, add, remove, body = av
            return self.sequence(list(body), entry, combine_flags(flags, add, remove), at_start, at_end)
        if op is _BRANCH:
            exit_state = nfa.add_state()
            for alternative in av[1]:
                nfa.add_epsilon(self.sequence(list(alternative), entry, flags, at_start, at_end), exit_state)
            return exit_state
        if op in _REPEATS:
            low, high, body = av
            return self.repeat(list(body), low, None if high == _MAXREPEAT else high, entry, flags)
        if op is _AT:
            if (av in _START_ANCHORS and at_start) or (av in _END_ANCHORS and at_end):
                return entry
            raise _Unsupported(f"anchor {av} is only supported at the start or end of the pattern")
        raise _Unsupported(f"unsupported regex construct {op}")

    def repeat(self, body: list, low: int, high: int | None, entry: int, flags: int) -> int:
        nfa = self.nfa
        copies = low + (1 if high is None else high - low)
        if copies == 0:
            return entry
        if nfa.max_states is not None and nfa.num_states + _estimated_size(body) * copies > nfa.max_states:
            raise StateLimitError("repeat too large")  # fail before building the copies
        for _ in range(low):
            entry = self.sequence(body, entry, flags, False, False)
        if high is None:
            return self._star(body, entry, flags)
        return self._optionals(body, entry, high - low, flags)

    def _star(self, body: list, entry: int, flags: int) -> int:
        nfa = self.nfa
        loop = nfa.add_state()
        nfa.add_epsilon(entry, loop)
        nfa.add_epsilon(self.sequence(body, loop, flags, False, False), loop)
        return loop

    def _optionals(self, body: list, entry: int, count: int, flags: int) -> int:
        """``body{0,count}`` as nested optionals that all skip to one exit (small closures)."""
        if count == 0:
            return entry
        nfa = self.nfa
        exit_state = nfa.add_state()
        for _ in range(count):
            nfa.add_epsilon(entry, exit_state)
            entry = self.sequence(body, entry, flags, False, False)
        nfa.add_epsilon(entry, exit_state)
        return exit_state


# --------------------------------------------------------------------------- error positions


_OCTAL_DIGITS = "01234567"
_VERBOSE_WHITESPACE = " \t\n\r\v\f"
_QUANTIFIER_BRACES = re.compile(r"\{\d*(?:,\d*)?\}")
_FLAG_GROUP = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])")


class _Locator:
    """Finds where the first unsupported construct starts by scanning the pattern text.

    sre_parse records no positions, so this mirrors just enough of its grammar (escapes,
    classes, groups, quantifiers, verbose whitespace and comments) to find back-references,
    lookarounds and word boundaries, conditionals, atomic groups, possessive repeats and
    misplaced anchors. The pattern is already known to be valid for ``re``.
    """

    def __init__(self, pattern: str, verbose: bool):
        self.text = pattern
        self.pos = 0
        self.verbose = verbose
        self.problems: list[tuple[int, str]] = []
        self.lookarounds: list[int] = []  # where each lookahead, lookbehind or \b/\B starts, in order

    def first_problem(self) -> tuple[int, str] | None:
        tree = self._alternation(self.verbose)
        self._check_alternatives(tree, True, True)
        return min(self.problems) if self.problems else None

    # Items of the mini parse tree: ("atom",), ("anchor", position, side),
    # ("group", alternatives), ("repeat", item).

    def _alternation(self, verbose: bool) -> list[list[tuple]]:
        alternatives = [self._sequence(verbose)]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            alternatives.append(self._sequence(verbose))
        return alternatives

    def _sequence(self, verbose: bool) -> list[tuple]:
        items: list[tuple] = []
        while True:
            self._skip_ignorable(verbose)
            if self.pos >= len(self.text) or self.text[self.pos] in "|)":
                return items
            item = self._item(verbose)
            if item is not None:
                items.append(self._quantified(item, verbose))

    def _skip_ignorable(self, verbose: bool) -> None:
        text = self.text
        while verbose and self.pos < len(text):
            if text[self.pos] in _VERBOSE_WHITESPACE:
                self.pos += 1
            elif text[self.pos] == "#":
                newline = text.find("\n", self.pos)
                self.pos = len(text) if newline < 0 else newline + 1
            else:
                return

    def _quantified(self, item: tuple, verbose: bool) -> tuple:
        text = self.text
        while True:
            self._skip_ignorable(verbose)
            start = self.pos
            if start < len(text) and text[start] in "*+?":
                self.pos += 1
            else:
                braces = _QUANTIFIER_BRACES.match(text, start)
                if braces is None or braces.group() == "{}":
                    return item
                self.pos = braces.end()
            if self.pos < len(text) and text[self.pos] == "?":
                self.pos += 1
            elif self.pos < len(text) and text[self.pos] == "+":
                self.pos += 1
                self.problems.append((start, "possessive repeats are not supported (they change the language)"))
            item = ("repeat", item)

    def _item(self, verbose: bool) -> tuple | None:
        text, start = self.text, self.pos
        char = text[start]
        if char == "(":
            return self._group(verbose)
        if char == "[":
            self._skip_class()
            return ("atom",)
        if char == "\\":
            return self._escape()
        self.pos += 1
        if char == "^":
            return ("anchor", start, "start")
        if char == "$":
            return ("anchor", start, "end")
        return ("atom",)

    def _skip_class(self) -> None:
        text = self.text
        self.pos += 1
        if text[self.pos] == "^":
            self.pos += 1
        if text[self.pos] == "]":
            self.pos += 1
        while text[self.pos] != "]":
            self.pos += 2 if text[self.pos] == "\\" else 1
        self.pos += 1

    def _escape(self) -> tuple:
        text, start = self.text, self.pos
        kind = text[start + 1]
        self.pos = start + 2
        if kind in "bB":  # supported where regular (see .lookaround)
            self.lookarounds.append(start)
        elif kind == "A":
            return ("anchor", start, "start")
        elif kind == "Z":
            return ("anchor", start, "end")
        elif kind == "0":
            for _ in range(2):
                if self.pos < len(text) and text[self.pos] in _OCTAL_DIGITS:
                    self.pos += 1
        elif kind in "123456789":
            backreference = True
            if self.pos < len(text) and text[self.pos].isdigit():
                if (
                    kind in _OCTAL_DIGITS
                    and text[self.pos] in _OCTAL_DIGITS
                    and self.pos + 1 < len(text)
                    and text[self.pos + 1] in _OCTAL_DIGITS
                ):
                    self.pos += 2
                    backreference = False
                else:
                    self.pos += 1
            if backreference:
                self.problems.append((start, "back-references are not supported (not a regular language)"))
        elif kind == "x":
            self.pos += 2
        elif kind == "u":
            self.pos += 4
        elif kind == "U":
            self.pos += 8
        elif kind == "N":
            self.pos = text.index("}", self.pos) + 1
        return ("atom",)

    def _group(self, verbose: bool) -> tuple | None:
        text, start = self.text, self.pos
        if not text.startswith("(?", start):
            self.pos += 1
            return self._group_body(verbose)
        kind = text[start + 2]
        rest = text[start + 2 : start + 4]
        if kind == "#":  # comment: not an item at all
            self.pos = start + 3
            while text[self.pos] != ")":
                self.pos += 2 if text[self.pos] == "\\" else 1
            self.pos += 1
            return None
        if kind == ":":
            self.pos = start + 3
            return self._group_body(verbose)
        if rest == "P<":
            self.pos = text.index(">", start) + 1
            return self._group_body(verbose)
        if rest == "P=":
            self.pos = text.index(")", start) + 1
            self.problems.append((start, "back-references are not supported (not a regular language)"))
            return ("atom",)
        problem = None
        if kind in "=!" or rest in ("<=", "<!"):  # supported where regular (see .lookaround)
            self.pos = start + (3 if kind in "=!" else 4)
            self.lookarounds.append(start)
            self._group_body(verbose)
            return ("atom",)
        if kind == ">":
            self.pos = start + 3
            problem = "atomic groups are not supported (they change the language)"
        elif kind == "(":
            self.pos = text.index(")", start + 3) + 1
            problem = "conditional groups are not supported (not a regular language)"
        if problem is not None:
            self.problems.append((start, problem))
            self._group_body(verbose)
            return ("atom",)
        flag_group = _FLAG_GROUP.match(text, start)
        if flag_group is None:  # pragma: no cover - re accepted the pattern
            self.pos = start + 2
            return self._group_body(verbose)
        self.pos = flag_group.end()
        added, removed, terminator = flag_group.group(1), flag_group.group(2) or "", flag_group.group(3)
        if terminator == ")":  # global flags; a global (?x) is already in `verbose`
            return None
        return self._group_body((verbose or "x" in added) and "x" not in removed)

    def _group_body(self, verbose: bool) -> tuple:
        alternatives = self._alternation(verbose)
        self.pos += 1  # the closing parenthesis
        return ("group", alternatives)

    @staticmethod
    def _transparent(item: tuple, side: str) -> bool:
        if item[0] == "anchor":
            return item[2] == side
        if item[0] == "group":
            return all(_Locator._transparent(inner, side) for alt in item[1] for inner in alt)
        return False

    def _check_alternatives(self, alternatives: list[list[tuple]], at_start: bool, at_end: bool) -> None:
        for items in alternatives:
            starts, ends = [], []
            still_start, still_end = at_start, at_end
            for item in items:
                starts.append(still_start)
                still_start = still_start and self._transparent(item, "start")
            for item in reversed(items):
                ends.append(still_end)
                still_end = still_end and self._transparent(item, "end")
            ends.reverse()
            for item, item_start, item_end in zip(items, starts, ends):
                self._check_item(item, item_start, item_end)

    def _check_item(self, item: tuple, at_start: bool, at_end: bool) -> None:
        if item[0] == "anchor":
            _, position, side = item
            token = self.text[position] if self.text[position] != "\\" else self.text[position : position + 2]
            if side == "start" and not at_start:
                self.problems.append(
                    (position, f"anchor {token!r} is only supported at the start of the pattern or of a top-level alternative")
                )
            elif side == "end" and not at_end:
                self.problems.append(
                    (position, f"anchor {token!r} is only supported at the end of the pattern or of a top-level alternative")
                )
        elif item[0] == "group":
            self._check_alternatives(item[1], at_start, at_end)
        elif item[0] == "repeat":
            self._check_item(item[1], False, False)
