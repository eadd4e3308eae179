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

from dataclasses import dataclass, replace

import numpy as np

from .bar_hillel import BinaryGrammar, EarleyTables, earley_derivation
from .earley_kernels import shortest_lexemes
from .grammar import Grammar, Rule
from .infill import Budget, BudgetExhausted, PartialText, path_bytes
from .lexings import STRUCTURAL, Lexer, LexerTables, LexingAutomaton, build_lexings

__all__ = ["GrammarInfill", "Search"]

SHORTCUT_GAPS = 3
"""Gaps from which a search first tries the pieces that lexemes spanning gaps do not jump over
(see :meth:`GrammarInfill.search`, :func:`_jumped`): with fewer, the ends are most of the
text. A block comment or a string opened in the first gap and closed in the last is a filling
whatever lies between, and the whole construction of a 1,024-byte SQL text with 64 gaps took
100-200 ms to find it (docs/benchmarks.md)."""

RETRY_S = 0.015
"""Seconds the whole text's construction may take after the shortcut (:func:`_jumped`) gave a
filling that the parser refused (the answer is then known not to be "impossible": only another
witness is sought). Python texts of 1,024 bytes with 64 gaps spent 100-650 ms there and none of
21 got a witness; the statuses of 600 Python and SQL checks were the same with 15 ms, 25 ms and
1 s (docs/benchmarks.md)."""


@dataclass(frozen=True)
class Search:
    """What the language-level search found: ``possible`` False is a proof that no filling
    works; otherwise ``candidates`` (filler tuples, best first) for the parser to verify."""

    possible: bool
    candidates: tuple[tuple[bytes, ...], ...] = ()
    nodes: int = 0
    """Live nodes of the lexing automaton (a size for benchmarks)."""
    gave_up: "str | None" = None
    """Why no candidates came where ``possible`` is known (the retry ran past :data:`RETRY_S`)."""


def _jumped(automaton: LexingAutomaton, edges: np.ndarray) -> "np.ndarray | None":
    """The live nodes of the pieces that lexemes spanning gaps (a string, a block comment) do
    not jump over, greedily from the first piece (each time the farthest jump from the piece
    kept last), and of the gaps beside them; None unless that leaves at most half the pieces.
    A lexeme from the first gap to the last leaves the first and last pieces; a Python text
    holding both kinds of triple quotes needs two or more (its 64-gap checks ran the whole
    construction, up to 264 ms, where no one lexeme spanned the ends)."""
    live = automaton.live
    piece_of = automaton.piece_of[:automaton.node_count]
    is_gap = automaton.is_gap
    m = len(automaton.text.pieces) - 1
    used = live[edges[:, 0]] & live[edges[:, 1]]
    farthest = np.zeros(m + 1, dtype=np.int64)  # per piece: the first piece a lexeme from it reaches past a gap
    np.maximum.at(farthest, piece_of[edges[used, 0]], piece_of[edges[used, 1]] + is_gap[edges[used, 1]])
    kept, k = [0], 0
    while k < m:
        k = max(k + 1, int(farthest[k]))
        kept.append(k)
    if 2 * len(kept) > m + 1:
        return None
    ends = live & np.isin(piece_of, kept)
    before = [automaton.gap_node(k - 1) for k in kept[1:]]  # where a lexeme jumping to piece k may end
    ends[before] = live[before]
    return ends


def without_layout(grammar: Grammar) -> Grammar:
    """A grammar holding every word of ``grammar``, an indentation-laid-out grammar (Python),
    with its last line's newline (the layout supplies a missing one at the end of the text,
    and :class:`GrammarInfill` reads one there), with no layout of its own: the indent and
    dedent terminals (which the layout makes from the columns of lines) are taken out of the
    rules, and newline lexemes may come between any two lexemes inside brackets (the layout
    ignores them there). Over-approximate: a proof that no filling works here is one for
    ``grammar``; a filling found here is only a candidate for the real parser."""
    layout = grammar.indentation
    dropped = {layout.indent, layout.dedent}
    alternatives = {rule.name: tuple(tuple(s for s in alternative if s not in dropped)
                                     for alternative in rule.alternatives) for rule in grammar.rules}
    names = {t.name for t in grammar.terminals} | set(alternatives)

    def fresh(base: str) -> str:
        name = base
        while name in names:
            name += "_"
        names.add(name)
        return name

    rules = _bracketed_newlines(alternatives, layout, fresh)
    priority = {rule.name: rule.priority for rule in grammar.rules}
    return replace(grammar, rules=tuple(Rule(name, alts, priority.get(name, 0)) for name, alts in rules.items()),
                   terminals=tuple(t for t in grammar.terminals if t.name not in dropped), indentation=None)


def _bracketed_newlines(alternatives: dict, layout, fresh) -> dict:
    """``alternatives`` where, between an opening bracket and its partner in one
    alternative, a run of newlines (a new nullable rule) may come before every terminal, the
    partner included, in the rule and in everything the symbols there derive (``A__in``
    rules; a terminal ``t`` there is ``t__in: NEWLINE__run t``, shared by every place it
    comes: a run between each two symbols instead made a chain symbol per pair). An
    alternative whose brackets do not pair up lets newlines come anywhere (a plainer
    over-approximation)."""
    opens, closes = set(layout.open_brackets), set(layout.close_brackets)
    newlines = fresh(f"{layout.newline}__run")
    rules = {newlines: ((), (newlines, layout.newline))}
    inside: dict[str, str] = {}
    queue: list[str] = []

    def within(symbol: str) -> str:
        if symbol not in inside:
            inside[symbol] = fresh(f"{symbol}__in")
            if symbol in alternatives:
                queue.append(symbol)
            else:
                rules[inside[symbol]] = ((newlines, symbol),)
        return inside[symbol]

    anywhere = False
    for name, alts in alternatives.items():
        out_alts = []
        for alt in alts:
            out, depth, opened = [], 0, 0
            for k, symbol in enumerate(alt):
                if depth == 0:
                    out.append(symbol)
                    if symbol in opens:
                        depth, opened = 1, k
                    elif symbol in closes:
                        anywhere = True
                    continue
                depth += (symbol in opens) - (symbol in closes)
                if depth == 0:  # alt[opened] and this symbol pair up
                    out += [within(inner) for inner in alt[opened + 1:k + 1]]
            if depth:
                anywhere = True
                out += [within(inner) for inner in alt[opened + 1:]]
            out_alts.append(tuple(out))
        rules[name] = tuple(out_alts)
    while queue:
        symbol = queue.pop()
        rules[inside[symbol]] = tuple(tuple(within(inner) for inner in alt) for alt in alternatives[symbol])
    if anywhere:  # brackets that open in one rule and close in another: newlines anywhere
        rules = {name: tuple(_interleaved(alt, newlines) for alt in alts) if name != newlines else alts
                 for name, alts in rules.items()}
    return rules


def _interleaved(symbols, separator: str) -> tuple:
    """``symbols`` with ``separator`` between each two."""
    out: list[str] = []
    for symbol in symbols:
        if out:
            out.append(separator)
        out.append(symbol)
    return tuple(out)


class GrammarInfill:
    """The language-level infilling check of one grammar (built once, used per text). A
    grammar with an indentation layout is checked through :func:`without_layout`."""

    def __init__(self, grammar: Grammar):
        newline = None
        if grammar.indentation is not None:
            newline = grammar.indentation.newline
            grammar = without_layout(grammar)
        self.grammar = grammar
        used = {name for rule in grammar.rules for alternative in rule.alternatives for name in alternative}
        by_name = {terminal.name: terminal for terminal in grammar.terminals}
        names = tuple(t.name for t in grammar.terminals if t.name in used and t.name not in grammar.ignore)
        ignored = tuple(by_name[name] for name in grammar.ignore if name in by_name)
        self.lexers = tuple(Lexer(by_name[name], False) for name in names) + tuple(Lexer(t, True) for t in ignored)
        self.n_terminals = len(names)
        self.terminal_names = names
        self.final_newline = names.index(newline) if newline in names else None
        """The layout's newline terminal (id), which the layout supplies at the end of the
        text where the last line has none: read there as an edge to one more node."""
        self.cfg = BinaryGrammar.from_grammar(grammar, names)
        self.lexer_tables = tables = LexerTables(self.lexers)
        shortest = shortest_lexemes(tables.table, tables.accepting, tables.starts_start, tables.starts)
        self.tables = EarleyTables(self.cfg, shortest[:self.n_terminals])
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

    def search(self, text: PartialText, budget: "Budget | None" = None, verify=None) -> Search:
        """Search ``text``'s lexings for a derivation. With ``verify`` (fillers -> bool, the
        caller's parser) and :data:`SHORTCUT_GAPS` gaps or more, the pieces that lexemes
        spanning gaps (a comment, a string) do not jump over are tried first, where that leaves
        at most half of them (:func:`_jumped`; the text's ends, where one lexeme spans from the
        first gap to the last); a candidate from there that ``verify`` accepts is returned
        alone; where it refuses them all, the whole text is searched for another witness for at
        most :data:`RETRY_S` (``gave_up`` says so past it). Otherwise (and for "impossible")
        the whole text."""
        automaton = build_lexings(self.lexers, self.n_terminals, text, budget, self.lexer_tables)
        if not automaton.live[automaton.start]:
            return Search(False)
        nodes = int(automaton.live.sum())
        edges = automaton.edges
        whole = budget  # the whole text's search
        if verify is not None and text.gaps >= SHORTCUT_GAPS:
            ends = _jumped(automaton, edges)
            if ends is not None:
                leaves = self._derivation(automaton, text, budget, edges, ends)
                if leaves:
                    for fillers in self._candidates(automaton, leaves, budget):
                        if verify(fillers):
                            return Search(True, (fillers,), nodes)
                    # a filling exists; the whole text is searched for another witness, briefly
                    whole = budget.within(RETRY_S) if budget is not None else Budget(RETRY_S)
        try:
            leaves = self._derivation(automaton, text, whole, edges, automaton.live)
        except BudgetExhausted:
            if whole is budget:
                raise
            if budget is not None:
                budget.check()
            return Search(True, (), nodes, gave_up=(
                f"a filling exists (found with the pieces that lexemes spanning gaps jump over left out), but "
                f"the parser refused its witness candidates and the search for another ran past {RETRY_S} s"))
        if leaves is None:
            return Search(False, nodes=nodes)
        return Search(True, self._candidates(automaton, leaves, budget), nodes)

    def _derivation(self, automaton: LexingAutomaton, text: PartialText, budget: "Budget | None",
                    edges: np.ndarray, live: np.ndarray) -> "list | None":
        """The leaves ``(at, r, q, t)`` of a derivation along the ``live`` nodes (those of the
        automaton: every path; fewer: the paths through them alone), or None where there is
        none. ``edges``: the automaton's, as an array."""
        kept = edges[live[edges[:, 0]] & live[edges[:, 1]]]
        lexeme = (kept[:, 2] >= 0) & (kept[:, 2] < self.n_terminals)
        epsilon = kept[~lexeme, :2]
        node_count = automaton.node_count
        can_end = np.zeros(node_count, dtype=np.bool_)
        can_end[automaton.final] = live[automaton.final]
        for a, b in epsilon[np.argsort(-epsilon[:, 0], kind="stable")].tolist():  # every ε-edge goes forward
            if can_end[b]:
                can_end[a] = True
        if self.cfg.start_nullable and can_end[automaton.start]:
            return []
        lexemes = kept[lexeme]
        if self.final_newline is not None and live[automaton.final]:  # the layout's last newline
            lexemes = np.vstack((lexemes, [[automaton.final, node_count, self.final_newline]]))
            can_end, live = np.append(can_end, True), np.append(live, True)
            node_count += 1
        gaps = [automaton.gap_node(k) for k in range(text.gaps) if live[automaton.gap_node(k)]]
        found = earley_derivation(self.tables, node_count, lexemes, epsilon, gaps, can_end, budget, live=live)
        if found is None:
            return None
        leaves, at = [], automaton.start
        for r, q, t in found.tolist():
            if q < automaton.node_count:  # (not the layout's last newline: no bytes)
                leaves.append((at, r, q, t))
                at = q
        return leaves

    def _candidates(self, automaton: LexingAutomaton, leaves, budget: "Budget | None" = None
                    ) -> "tuple[tuple[bytes, ...], ...]":
        """Fillers from the leaves of a derivation: plain, then with separators. (A derivation
        may write hundreds of kilobytes into the gaps: the budget is checked as they are read.)"""
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
        for n, (a, b, j) in enumerate(steps):
            if budget is not None and n % 256 == 255:
                budget.check()
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

