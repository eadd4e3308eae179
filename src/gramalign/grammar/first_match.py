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
  after the first of width one character.

Proof sketch. Every piece consumes a fixed width and what follows a position depends only
on the position, so ``re`` finds the lexicographically least vector of repeat counts
(k1, k2, ...) that matches, and the match length grows with each count. Suppose a match B
were shorter than that first match A. Take the first lazy repeat at whose end B is not
ahead of A: B entered it later than A (B is ahead from the first count where they differ,
or the two reach that repeat together and the argument goes on from there, with fewer
repeats); that repeat is not the first, so its body is one character wide, and A's run of
it covers every character up to where B leaves it. So A could have stopped there and gone
on as B does: a smaller count at that repeat, with the counts before it unchanged, i.e. a
lexicographically smaller match than A, which is impossible. Lookaheads and lookbehinds
(zero-width pieces, accepted by the regex module only where they read inside the match)
leave the argument as it is: from that point A's new route meets them at B's positions in
the same text, so it passes them as B does.

Any other pattern with a lazy quantifier is refused (:class:`LazyQuantifierError`), never
read greedily.
"""

from __future__ import annotations

import numpy as np

from ..errors import GrammarError
from .dfa import ByteDFA, dfa_from_table
from .regex import regex_to_dfa

try:  # Python >= 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_MIN_REPEAT = _sre_parse.MIN_REPEAT
_ASSERTS = (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT)
_SUBPATTERN = _sre_parse.SUBPATTERN
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
    if not _has_lazy(parsed.data):
        return None
    lazy = 0
    for op, av in _flattened(parsed.data):
        if op is _MIN_REPEAT and av[0] != av[1]:
            body = _sre_parse.SubPattern(parsed.state, av[2])
            low, high = body.getwidth()
            if low != high or low == 0:
                raise LazyQuantifierError("a lazy quantifier of a body without a fixed width")
            if lazy and low != 1:
                raise LazyQuantifierError("a lazy quantifier after the first one over more than one character")
            lazy += 1
        else:
            low, high = _sre_parse.SubPattern(parsed.state, [(op, av)]).getwidth()
            if low != high:
                raise LazyQuantifierError("a piece of variable width besides the lazy quantifiers")
        if _uses(op, av, _OUTSIDE):
            raise LazyQuantifierError("an anchor or back-reference")
    greedy = regex_to_dfa(pattern, flags=flags)
    if greedy.num_states == 0:
        return greedy
    cut = greedy.transitions.copy()
    cut[greedy.accepting] = -1  # a lexeme ends at the first point the pattern matches
    return dfa_from_table(cut, greedy.initial, np.asarray(greedy.accepting))


def _flattened(items):
    """The pattern as one sequence: groups spliced in (their flags change characters, not
    widths or the order in which ``re`` tries counts)."""
    for op, av in items:
        if op is _SUBPATTERN:
            yield from _flattened(av[3])
        else:
            yield op, av


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


def _has_lazy(items) -> bool:
    """A lazy repeat outside assertions (inside one it does not change what matches)."""
    return any((op is _MIN_REPEAT and av[0] != av[1])
               or (op not in _ASSERTS and any(_has_lazy(c) for c in _children(op, av)))
               for op, av in items)


def _uses(op, av, ops) -> bool:
    return op in ops or any(_uses(o, a, ops) for child in _children(op, av) for o, a in child)
