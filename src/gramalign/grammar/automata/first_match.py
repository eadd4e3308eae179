"""Terminals with lazy quantifiers, as lark's lexer reads them.

lark lexes with Python's ``re.match``, which returns the *first* match its backtracking
finds. For greedy patterns gramalign takes the terminal's whole language (the longest match
among terminals, see ``docs/grammars.md``), but a lazy quantifier changes which text a
terminal takes: ``/".*?"/`` stops at the first quote, so ``"a"x"b"`` is two strings to lark.

Where the first match is provably the *shortest* prefix the pattern fully matches, the
terminal's lexemes are exactly the words of its language that have no proper prefix in it,
a regular language: the pattern's DFA with every edge out of an accepting state removed.
That holds for a pattern that is a sequence of

* pieces of fixed width (literals, character classes, ``(.|\\n)``, ``x{3}``), and
* lazy repeats ``X*?``, ``X+?``, ``X{m,n}?`` whose body ``X`` has a fixed width, every one
  after the first of width one character, or *guarded*: right after a negative lookbehind
  of one character class that holds every character ``X`` can match
  (``.*?(?<!\\)(\\\\)*?"``, the escaped-string idiom),

and, before the first lazy repeat, also of

* a *delimited prefix*: lazy-free pieces of variable width, followed by a rest that cannot
  match the empty string and whose first byte never continues a word of the prefix
  (``([ubf]?r?|r[ubf])"...`` of Python's string prefixes), and
* an alternation whose alternatives, each followed by what comes after it, start with
  pairwise different bytes and cannot match the empty string (``"...?"|'...?'``); each
  alternative with its tail must be one of these shapes again.

A pattern may end with one greedy repeat of a character class that can match nothing
(``[imslux]*``, ``(?:i)?``): ``re`` takes the first match of the part before it, then the
longest run of the class, and never backtracks, so the lexemes are that part's first
matches followed by any run, of which longest-match lexing takes the longest.

Proof sketch. Every piece consumes a fixed width and what follows a position depends only
on the position, so ``re`` finds the lexicographically least vector of repeat counts
(k1, k2, ...) that matches, and the match length grows with each count. Suppose a match B
were shorter than that first match A. Take the first lazy repeat at whose end B is not
ahead of A: B entered it later than A (B is ahead from the first count where they differ,
or the two reach that repeat together and the argument goes on from there, with fewer
repeats); that repeat is not the first, so its body is one character wide, and A's run of
it covers every character up to where B leaves it. So A could have stopped there and gone
on as B does: a smaller count at that repeat, with the counts before it unchanged, i.e. a
lexicographically smaller match than A, which is impossible. A guarded repeat of a wider
body: B would enter it inside A's run, right after a character of the body, which its
lookbehind forbids; so B enters where A leaves, and the two reach its end together.
Lookaheads and lookbehinds (zero-width pieces, accepted by the regex module only where they
read inside the match) leave the argument as it is: from that point A's new route meets
them at B's positions in the same text, so it passes them as B does. A delimited prefix
ends at the same place in every match of a text (a longer prefix word would have to go on
with a byte the rest starts with), and of the alternatives at most one can match a text,
so ``re``'s backtracking into them finds nothing but that one route's first match, and the
argument applies to it.

Any other pattern with a lazy quantifier goes to :func:`ordered_first_match_dfa`, which
runs ``re``'s backtracking order as an automaton (the ordered subset construction) and
reads any pattern without lookaheads, anchors or back-references, where no repeat's body
can match the empty string (lookbehinds only where the character before them settles
them: SynCode's python.lark ``_NL``, lazy repeats inside a repeat; sql.lark's
``"(?:[^"\\]|\\.)*?"``). What neither reads is refused (:class:`LazyQuantifierError`),
never read greedily.
"""

from __future__ import annotations

import numpy as np

from ...errors import GrammarError
from ..limits import check_time
from .algebra import concatenate, difference
from .dfa import (NFA, ByteDFA, StateLimitError, symbol_classes, dfa_from_table, intersect_intervals,
                  nfa_to_utf8_dfa, subtract_intervals)
from .regex import combine_flags, item_symbols, parsed_to_dfa, pieces_dfa, regex_to_dfa

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_MIN_REPEAT = _sre_parse.MIN_REPEAT
_ASSERTS = (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT)
_SUBPATTERN = _sre_parse.SUBPATTERN
_BRANCH = _sre_parse.BRANCH
# Anchors read the text around the match, which the terminal's language does not see;
# back-references are not regular. Lookaheads and lookbehinds are zero-width pieces: the
# regex module accepts them only where they read inside the match (see .lookaround).
_OUTSIDE = {_sre_parse.AT, _sre_parse.GROUPREF, _sre_parse.GROUPREF_EXISTS}


class LazyQuantifierError(GrammarError):
    """A terminal's lazy quantifier cannot be read exactly as lark reads it."""


def first_match_dfa(pattern: str, flags: int = 0) -> ByteDFA | None:
    """The DFA of the lexemes ``re.match(pattern, text)`` can return, when the pattern has a
    lazy quantifier and it is one of the shapes of the module docstring; None for a pattern
    without lazy quantifiers (its language is its DFA's). Raises
    :class:`LazyQuantifierError` for any other lazy pattern.

    >>> dfa = first_match_dfa(r'".*?"')
    >>> dfa.matches(b'"a"'), dfa.matches(b'"a"x"'), first_match_dfa(r'"[^"]*"') is None
    (True, False, True)
    """
    try:
        parsed = _sre_parse.parse(pattern, flags)
    except _sre_parse.error:
        return None  # not a pattern at all: regex_to_dfa says where
    if not has_lazy(parsed.data):
        return None
    items = list(parsed.data)
    tail = len(items) - 1 if items and _is_greedy_tail(items[-1]) else len(items)
    try:
        _check(list(_flattened(items[:tail], parsed.state.flags)), parsed.state, 0)
    except LazyQuantifierError as exc:
        try:  # the general construction, which reads fewer lookarounds
            return ordered_first_match_dfa(pattern, flags)
        except LazyQuantifierError as other:
            raise LazyQuantifierError(f"{exc}, and {other}") from None
    greedy = regex_to_dfa(pattern, flags=flags)  # checks the whole pattern, with its error positions
    if tail < len(items):
        greedy = parsed_to_dfa(pattern, _sre_parse.SubPattern(parsed.state, items[:tail]))
    if greedy.num_states == 0:
        return greedy
    lexemes = _shortest(greedy)
    if tail < len(items):
        lexemes = concatenate([lexemes, parsed_to_dfa(pattern, _sre_parse.SubPattern(parsed.state, items[tail:]))])
    return lexemes


def first_matches_among(pattern: str, language: ByteDFA, flags: int = 0) -> ByteDFA | None:
    """For a pattern with a lazy quantifier and a negative lookahead that can read past the
    match (its ``language`` given without that lookahead, see
    :func:`~.regex.regex_lookahead_classes`): the words of ``language`` ``re.match`` can
    return, or None for a pattern without lazy quantifiers. The pattern must be one of the
    module docstring's shapes, with no greedy tail and every lookahead before the first lazy
    repeat: there the lookahead reads the same text for every route ``re`` tries, so it
    passes or fails for all of them, and the first match is the shortest of the rest.
    """
    try:
        parsed = _sre_parse.parse(pattern, flags)
    except _sre_parse.error:
        return None
    if not has_lazy(parsed.data):
        return None
    _check(list(_flattened(parsed.data, parsed.state.flags)), parsed.state, 0, past=True)
    return _shortest(language)


def greedy_first_matches(pattern: str, language: ByteDFA, flags: int = 0) -> ByteDFA | None:
    """For a pattern without lazy quantifiers whose language is ``language``: the lexemes
    ``re.match`` can return, where they are fewer than the language, else None.

    ``re`` returns the first route its backtracking finds, not the longest: an alternation
    whose earlier alternative is a prefix of a later one (``/a|ab/`` never takes ``ab``), or an
    optional part that a greedy repeat before it has starved (``/a*(ab)?/`` takes ``aa`` of
    ``aab``). :func:`ordered_first_match_dfa` gives those lexemes; where its language is the
    pattern's own (most patterns), longest-match lexing of the language already picks what
    ``re`` picks and None is returned. Patterns the ordered construction does not read
    (a repeat of a body that can match nothing, a lookahead, an anchor) keep their language:
    None.

    >>> from gramalign.grammar.automata.regex import regex_to_dfa
    >>> greedy_first_matches("a|ab", regex_to_dfa("a|ab")).matches(b"ab")
    False
    >>> greedy_first_matches("ab|a", regex_to_dfa("ab|a")) is None
    True
    """
    try:
        parsed = _sre_parse.parse(pattern, flags)
    except _sre_parse.error:
        return None
    if not any(_uses(op, av, (_BRANCH, _sre_parse.MAX_REPEAT)) for op, av in parsed.data):
        return None  # one route through the pattern: nothing to choose
    try:
        first = ordered_first_match_dfa(pattern, flags)
    except (LazyQuantifierError, StateLimitError):
        return None
    return None if difference(language, first).num_states == 0 else first


def _shortest(language: ByteDFA) -> ByteDFA:
    """The words of ``language`` with no proper prefix in it."""
    if language.num_states == 0:
        return language
    cut = language.transitions.copy()
    cut[language.accepting] = -1  # a lexeme ends at the first point the pattern matches
    return dfa_from_table(cut, language.initial, np.asarray(language.accepting))


def _is_greedy_tail(item) -> bool:
    """A greedy repeat of one character class that can match nothing (``[imslux]*``,
    ``(?:i)?``): after the lazy part's first match it takes the longest run it can and
    never fails, so ``re`` never backtracks into the lazy part because of it."""
    op, av = item
    if op is not _sre_parse.MAX_REPEAT or av[0] != 0:
        return False
    body = list(_flattened(av[2], 0))
    return len(body) == 1 and item_symbols(*body[0]) is not None


def _flattened(items, flags):
    """The pattern as one sequence of ``(op, av, flags)``: groups spliced in, each item with
    the flags its groups give it (flags change characters, not widths or the order in which
    ``re`` tries counts)."""
    for op, av in items:
        if op is _SUBPATTERN:
            yield from _flattened(av[3], combine_flags(flags, av[1], av[2]))
        else:
            yield op, av, flags


def _width(state, op, av) -> tuple[int, int]:
    return _sre_parse.SubPattern(state, [(op, av)]).getwidth()


def _check(pieces: list, state, lazy: int, past: bool = False) -> None:
    """Raise LazyQuantifierError unless ``pieces`` (after ``lazy`` lazy repeats) is one of
    the module docstring's shapes; with ``past``, also unless every lookahead comes before
    the first lazy repeat (one of them reads past the match, see :func:`first_matches_among`)."""
    for i, (op, av, flags) in enumerate(pieces):
        if _uses(op, av, _OUTSIDE):
            raise LazyQuantifierError("an anchor or back-reference")
        if past and lazy and op is _sre_parse.ASSERT_NOT and av[0] == 1:
            raise LazyQuantifierError("a lookahead after a lazy quantifier in a pattern whose lookahead can read "
                                      "past the match")
        if op is _MIN_REPEAT and av[0] != av[1]:
            low, high = _sre_parse.SubPattern(state, av[2]).getwidth()
            if low != high or low == 0:
                raise LazyQuantifierError("a lazy quantifier of a body without a fixed width")
            if lazy and low != 1 and not _guarded(pieces[i - 1] if i else None, av[2], flags):
                raise LazyQuantifierError("a lazy quantifier after the first one over more than one character, "
                                          "without a lookbehind that keeps it from starting inside its own run")
            lazy += 1
            continue
        low, high = _width(state, op, av)
        if low == high:
            continue
        if lazy == 0 and not has_lazy([(op, av)]):
            end = i + 1
            while end < len(pieces) and not has_lazy([pieces[end][:2]]):
                end += 1
            _check_delimited(pieces[:end], pieces[end:])
            _check(pieces[end:], state, 0, past)
            return
        if lazy == 0 and op is _BRANCH:
            _check_alternatives([list(_flattened(alternative, flags)) for alternative in av[1]],
                                pieces[i + 1:], state, past)
            return
        raise LazyQuantifierError("a piece of variable width besides the lazy quantifiers")


def _check_delimited(prefix: list, rest: list) -> None:
    """The prefix ends at the same place in every match: no accepting state of its DFA goes
    on with a byte that the rest (non-empty) can start with."""
    first, nullable = _first_bytes(rest)
    if nullable:
        raise LazyQuantifierError("a piece of variable width followed by a part that can match nothing")
    dfa = pieces_dfa(_without_assertions(prefix))
    ends = dfa.transitions[np.asarray(dfa.accepting, dtype=bool)]
    if ends.size and (ends[:, first] >= 0).any():
        raise LazyQuantifierError("a piece of variable width before the lazy quantifiers that can go on with "
                                  "the byte the rest starts with")


def _check_alternatives(alternatives: list, tail: list, state, past: bool) -> None:
    """At most one alternative (with the tail) can match a text; each is a shape again."""
    seen = np.zeros(256, dtype=bool)
    for alternative in alternatives:
        first, nullable = _first_bytes(alternative + tail)
        if nullable or seen[first].any():
            raise LazyQuantifierError("lazy quantifiers in alternatives that can start with the same byte")
        seen[first] = True
    for alternative in alternatives:
        _check(alternative + tail, state, 0, past)


def _first_bytes(pieces: list) -> tuple[np.ndarray, bool]:
    """The bytes a match of ``pieces`` can start with (a superset: assertions are left out)
    and whether it can be empty."""
    dfa = pieces_dfa(_without_assertions(pieces))
    if dfa.num_states == 0:
        return np.zeros(0, dtype=np.int64), False
    return np.flatnonzero(dfa.transitions[dfa.initial] >= 0), bool(dfa.accepting[dfa.initial])


def _guarded(before, body, flags: int) -> bool:
    """Is ``before`` a negative lookbehind of one character class holding every character
    the lazy repeat's ``body`` matches?"""
    if before is None or before[0] is not _sre_parse.ASSERT_NOT or before[1][0] != -1:
        return False
    behind = list(_flattened(before[1][1], before[2]))
    if len(behind) != 1 or (forbidden := item_symbols(*behind[0])) is None:
        return False
    for item in _flattened(body, flags):
        symbols = item_symbols(*item)
        if symbols is None or subtract_intervals(symbols, forbidden):
            return False
    return True


def _without_assertions(pieces: list) -> list:
    """``pieces`` with every lookahead and lookbehind left out (a superset language)."""
    return [(op, _strip(op, av), flags) for op, av, flags in pieces if op not in _ASSERTS]


def _strip(op, av):
    def items(sequence):
        return [(o, _strip(o, a)) for o, a in sequence if o not in _ASSERTS]

    if op is _SUBPATTERN:
        return (av[0], av[1], av[2], items(av[3]))
    if op in (_sre_parse.MIN_REPEAT, _sre_parse.MAX_REPEAT):
        return (av[0], av[1], items(av[2]))
    if op is _sre_parse.BRANCH:
        return (av[0], [items(alternative) for alternative in av[1]])
    return av


def _children(op, av):
    """The sub-sequences of one parsed item."""
    if op is _SUBPATTERN:
        return [av[3]]
    if op in (_sre_parse.MIN_REPEAT, _sre_parse.MAX_REPEAT):
        return [av[2]]
    if op is _sre_parse.BRANCH:
        return list(av[1])
    if op in (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT):
        return [av[1]]
    if op is _sre_parse.GROUPREF_EXISTS:
        return [branch for branch in av[1:] if branch is not None]
    return []


def has_lazy(items) -> bool:
    """Do the parsed ``items`` hold a lazy repeat outside assertions (inside one it does not
    change what matches; nor does one of a fixed count)?"""
    return any((op is _MIN_REPEAT and av[0] != av[1])
               or (op not in _ASSERTS and any(has_lazy(c) for c in _children(op, av)))
               for op, av in items)


def _uses(op, av, ops) -> bool:
    return op in ops or any(_uses(o, a, ops) for child in _children(op, av) for o, a in child)


# --------------------------------------------------------------------------- any lazy pattern


MAX_ORDERED_STATES = 20_000
"""Most states of the ordered subset construction (:func:`ordered_first_match_dfa`)."""

_SPLIT, _CHAR, _MATCH = 0, 1, 2


class _PriorityNFA:
    """A Thompson NFA whose ε-choices are ordered as ``re``'s backtracking tries them: a
    greedy repeat tries another pass before leaving, a lazy one leaves first, an alternation
    tries its alternatives from the left. States: (``_SPLIT``, [targets in order]),
    (``_CHAR``, (code points, target)), (``_MATCH``, None)."""

    def __init__(self, state):
        self.parse_state = state
        self.kind: list[int] = []
        self.data: list = []

    def add(self, kind: int, data) -> int:
        if len(self.kind) >= 100_000:
            raise LazyQuantifierError("a pattern too large to read its first matches")
        self.kind.append(kind)
        self.data.append(data)
        return len(self.kind) - 1

    def sequence(self, items: list, after: int, flags: int) -> int:
        """The entry of ``items`` followed by state ``after``."""
        items = list(items)
        for k in range(len(items) - 1, -1, -1):
            after = self.item(items[k], items[k - 1] if k else None, after, flags)
        return after

    def item(self, node, previous, after: int, flags: int) -> int:
        op, av = node
        symbols = item_symbols(op, av, flags)
        if symbols is not None:
            return self.add(_CHAR, (symbols, after))
        if op is _SUBPATTERN:
            return self.sequence(av[3], after, combine_flags(flags, av[1], av[2]))
        if op is _BRANCH:
            return self.add(_SPLIT, [self.sequence(alternative, after, flags) for alternative in av[1]])
        if op in (_MIN_REPEAT, _sre_parse.MAX_REPEAT):
            low, high, body = av
            if _sre_parse.SubPattern(self.parse_state, list(body)).getwidth()[0] == 0:
                raise LazyQuantifierError("a repeat whose body can match the empty string")
            lazy = op is _MIN_REPEAT
            if high == _sre_parse.MAXREPEAT:
                loop = self.add(_SPLIT, [])
                enter = self.sequence(body, loop, flags)
                self.data[loop] = [after, enter] if lazy else [enter, after]
                tail = loop
            else:
                tail = after
                for _ in range(high - low):
                    enter = self.sequence(body, tail, flags)
                    tail = self.add(_SPLIT, [after, enter] if lazy else [enter, after])
            for _ in range(low):
                tail = self.sequence(body, tail, flags)
            return tail
        if op in _ASSERTS and av[0] == -1:
            verdict = _settled_lookbehind(op, av, previous, flags)
            if verdict is True:
                return after
            if verdict is False:
                return self.add(_SPLIT, [])  # never passes
            raise LazyQuantifierError("a lookbehind that the character before it does not settle")
        if op in _ASSERTS:
            raise LazyQuantifierError("a lookahead")
        raise LazyQuantifierError("an anchor, word boundary or back-reference")


def _settled_lookbehind(op, av, previous, flags: int):
    """True or False where a lookbehind of one character class always passes or always fails
    because the item before it (one character) decides it (three quotes, then ``(?<!\\\\)``), else None."""
    if previous is None or item_symbols(*previous, flags) is None:
        return None
    behind = list(_flattened(av[1], flags))
    if len(behind) != 1 or (inside := item_symbols(*behind[0])) is None:
        return None
    before = item_symbols(*previous, flags)
    if not subtract_intervals(before, inside):
        holds = True  # every character before is in the lookbehind's class
    elif not intersect_intervals(before, inside):
        holds = False  # none is
    else:
        return None
    return holds if op is _sre_parse.ASSERT else not holds


def ordered_first_match_dfa(pattern: str, flags: int = 0, max_states: int = MAX_ORDERED_STATES) -> ByteDFA:
    """The lexemes of ``re.match(pattern, ...)`` for any pattern without lookaheads, anchors,
    word boundaries or back-references (lookbehinds only where the character before them
    settles them), and no repeat of a body that can match the empty string: the texts ``w``
    such that ``re.match(pattern, w)`` matches all of ``w``, of which the longest prefix of
    any text is ``re.match``'s match in it.

    ``re`` backtracks through the pattern's choices in a fixed order and returns the first
    route that reaches the end. The same route is found by running every route at once, in
    that order, one character at a time (as RE2 does for Perl's semantics): a route that
    reaches a state an earlier one already holds is dropped (the earlier one has the same
    future and comes first), and when a route reaches the end, every route after it is
    dropped (the first match can only come from the earlier ones, which may still match
    later, and then it is theirs). The ordered list of live states after a text is a
    function of the text, so the lists form a DFA (the ordered subset construction), and a
    text is a lexeme exactly where its list holds the end: ``re.match`` returns the last
    such point it passes. Refused repeats of nullable bodies are where ``re``'s rule for
    empty passes and this construction could differ.

    >>> dfa = ordered_first_match_dfa(r'"(?:[^"\\\\]|\\\\.)*?"')
    >>> dfa.matches(b'"a\\\\"b"'), dfa.matches(b'"a"b"')
    (True, False)
    """
    parsed = _sre_parse.parse(pattern, flags)
    nfa = _PriorityNFA(parsed.state)
    match = nfa.add(_MATCH, None)
    start = nfa.sequence(list(parsed.data), match, parsed.state.flags)
    kind, data = nfa.kind, nfa.data

    def closure(states) -> tuple[int, ...]:
        seen: set[int] = set()
        found: list[int] = []
        stack = list(reversed(states))
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            if kind[state] == _SPLIT:
                stack.extend(reversed(data[state]))
                continue
            found.append(state)
            if kind[state] == _MATCH:
                break  # routes after the first to match are never taken
        return tuple(found)

    chars = [s for s in range(len(kind)) if kind[s] == _CHAR]
    classes, label_classes = symbol_classes([data[s][0] for s in chars])
    class_members: list[list[int]] = [[] for _ in classes]  # class -> the char states taking it
    for state, members in zip(chars, label_classes):
        for c in members:
            class_members[c].append(state)
    taking = [set(members) for members in class_members]
    initial = closure([start])
    index = {initial: 0}
    order = [initial]
    rows = []
    k = 0
    while k < len(order):
        if k % 256 == 0:
            check_time("the first matches of a lazy pattern")
        current = order[k]
        row = {}
        for c in range(len(classes)):
            moved = [data[s][1] for s in current if s in taking[c]]
            if not moved:
                continue
            target = closure(moved)
            if not target:
                continue
            if target not in index:
                if len(order) >= max_states:
                    raise LazyQuantifierError(f"first matches that need more than {max_states} automaton states")
                index[target] = len(order)
                order.append(target)
            row[c] = index[target]
        rows.append(row)
        k += 1
    out = NFA()
    ids = [out.initial] + [out.add_state() for _ in range(len(order) - 1)]
    for source, row in enumerate(rows):
        by_target: dict[int, list] = {}
        for c, target in row.items():
            by_target.setdefault(target, []).extend(classes[c])
        for target, intervals in by_target.items():
            out.add_edge(ids[source], intervals, ids[target])
    out.accepting.update(ids[s] for s, states in enumerate(order) if match in states)
    try:
        return nfa_to_utf8_dfa(out, max_states=50_000)
    except StateLimitError as exc:
        raise LazyQuantifierError(f"first matches whose automaton is too large ({exc})") from None
