"""Can a partial text still become a word of a grammar? A proof of "no", or candidate fillers.

The grammar's byte language is over-approximated by the CFG over all lexings
(:mod:`.lexings`), and the partial text by every lexing of its completions; their
intersection is tested for emptiness (:mod:`.bar_hillel`, Earley over the automaton). Empty: no completion exists, for
any lexing (sound). Not empty: the derivation found names a terminal path, which becomes
fillers (the gap parts of its lexemes, shortest lexemes where a gap holds whole ones). Those
are only *candidates*: the real lexer may split them otherwise, so the caller verifies them
with the parser. Further candidates separate lexemes inside gaps with ignored text, where
the grammar ignores some (two names written side by side would lex as one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bar_hillel import BinaryGrammar, EarleyTables, earley_derivation
from .grammar import Grammar
from .infill import Budget, PartialText, path_bytes
from .lexings import STRUCTURAL, Lexer, LexerTables, LexingAutomaton, build_lexings

__all__ = ["GrammarInfill", "Search"]


@dataclass(frozen=True)
class Search:
    """What the language-level search found: ``possible`` False is a proof that no filling
    works; otherwise ``candidates`` (filler tuples, best first) for the parser to verify."""

    possible: bool
    candidates: tuple[tuple[bytes, ...], ...] = ()
    nodes: int = 0
    """Live nodes of the lexing automaton (a size for benchmarks)."""


class GrammarInfill:
    """The language-level infilling check of one grammar (built once, used per text)."""

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        used = {name for rule in grammar.rules for alternative in rule.alternatives for name in alternative}
        by_name = {terminal.name: terminal for terminal in grammar.terminals}
        names = tuple(t.name for t in grammar.terminals if t.name in used and t.name not in grammar.ignore)
        ignored = tuple(by_name[name] for name in grammar.ignore if name in by_name)
        self.lexers = tuple(Lexer(by_name[name], False) for name in names) + tuple(Lexer(t, True) for t in ignored)
        self.n_terminals = len(names)
        self.cfg = BinaryGrammar.from_grammar(grammar, names)
        self.lexer_tables = LexerTables(self.lexers)
        self.tables = EarleyTables(self.cfg, [bool(lex.starts) for lex in self.lexers[:self.n_terminals]])
        self.separators = self._separators()

    def _separators(self) -> "tuple[bytes, ...]":
        """Ignored lexemes to put between lexemes in gaps: the single bytes some ignored
        terminal matches (space, newline, tab first: a newline ends a line comment that a
        space would extend), else the shortest ignored lexeme."""
        singles = []
        for byte in b" \n\t\r" + bytes(range(256)):
            data = bytes([byte])
            if data not in singles and any(lex.lexes(data) for lex in self.lexers[self.n_terminals:]):
                singles.append(data)
        if singles:
            return tuple(singles[:3])
        best = None
        for lex in self.lexers[self.n_terminals:]:
            dfa = lex.paths.dfa
            state, _, parents = lex.paths.explore({s: 0 for s in lex.starts}, goal=lambda s: bool(dfa.accepting[s]))
            if state is not None:
                text = path_bytes(parents, state)[1]
                if text and (best is None or len(text) < len(best)):
                    best = text
        return () if best is None else (best,)

    def search(self, text: PartialText, budget: "Budget | None" = None) -> Search:
        automaton = build_lexings(self.lexers, self.n_terminals, text, budget, self.lexer_tables)
        if not automaton.live[automaton.start]:
            return Search(False)
        terminals = self.n_terminals
        edges = [(a, b, j) for a, b, j in automaton.edges if 0 <= j < terminals]
        epsilon = [(a, b) for a, b, j in automaton.edges if not 0 <= j < terminals]
        can_end = np.zeros(automaton.node_count, dtype=np.bool_)
        can_end[automaton.final] = True
        for a, b in sorted(epsilon, reverse=True):  # every ε-edge goes forward
            if can_end[b]:
                can_end[a] = True
        nodes = int(automaton.live.sum())
        if self.cfg.start_nullable and can_end[automaton.start]:
            leaves: "list | None" = []
        else:
            gaps = [automaton.gap_node(k) for k in range(text.gaps) if automaton.live[automaton.gap_node(k)]]
            found = earley_derivation(self.tables, automaton.node_count, edges, epsilon, gaps, can_end, budget,
                                      live=automaton.live)
            if found is None:
                return Search(False, nodes=nodes)
            leaves, at = [], automaton.start
            for r, q, t in found.tolist():
                leaves.append((at, r, q, t))
                at = q
        return Search(True, self._candidates(automaton, leaves), nodes)

    def _candidates(self, automaton: LexingAutomaton, leaves) -> "tuple[tuple[bytes, ...], ...]":
        """Fillers from the leaves of a derivation: plain, then with separators."""
        successors = automaton.epsilon_successors()
        gaps: list[list[tuple[bytes, bool, bool]]] = [[] for _ in range(automaton.text.gaps)]
        at = automaton.start
        steps = []
        for p, r, q, t in leaves:
            assert p == at, (p, at)
            steps.extend(automaton.epsilon_path(successors, p, r))
            steps.append((r, q, t))
            at = q
        steps.extend(automaton.epsilon_path(successors, at, automaton.final))
        piece_of, gap = automaton.piece_of, automaton.is_gap
        for a, b, j in steps:
            if j != STRUCTURAL and (gap[a] or gap[b] or piece_of[a] != piece_of[b]):  # else all fixed bytes
                for k, data, begins, ends in automaton.lexeme_pieces(j, a, b):
                    gaps[k].append((data, begins, ends))
        plain = tuple(b"".join(data for data, _, _ in pieces) for pieces in gaps)
        candidates = [plain]
        for separator in self.separators:
            separated = []
            for pieces in gaps:
                out = bytearray()
                for n, (data, begins, ends) in enumerate(pieces):
                    if begins:
                        out += separator
                    out += data
                    if ends and n == len(pieces) - 1:
                        out += separator
                separated.append(bytes(out))
            if tuple(separated) not in candidates:
                candidates.append(tuple(separated))
        return tuple(candidates)

