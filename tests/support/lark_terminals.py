"""A Lark terminal's regex read as gramalign reads a terminal's (for tests that check every
regex of a shipped grammar is in gramalign's dialect, or compare lexemes with ``re``)."""

from __future__ import annotations

from gramalign.grammar.automata.dfa import ByteDFA
from gramalign.grammar.automata.regex import regex_lookahead_classes, regex_to_dfa


def lexeme_dfa(pattern: str) -> ByteDFA:
    """The lexemes of ``pattern``: its language, or where a lookahead reads past the match
    (python.lark's line continuation, ``(?=[\\s\\S])``), every lexeme that lookahead may keep."""
    found = regex_lookahead_classes(pattern)
    return regex_to_dfa(pattern) if found is None else found[0]
