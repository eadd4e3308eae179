"""The reference emptiness test of the infilling check: the bottom-up Bar-Hillel worklist.

This is what ``gramalign.grammar.bar_hillel`` ran before its Earley construction (issue 37):
a worklist derives every triple ``(p, X, q)`` (symbol ``X`` derives a non-empty word that
labels a path from ``p`` to ``q`` in the automaton) bottom up, with no left context, and
stops as soon as ``(start node, start symbol, a final node)`` appears. Pure Python and
quadratic on a flat list, but simple: the tests compare the Earley kernels' decision with it
on random partial texts.
"""

from __future__ import annotations

from gramalign.grammar.bar_hillel import BinaryGrammar
from gramalign.grammar.infill import Budget
from gramalign.grammar.lexings import LexingAutomaton, build_lexings

__all__ = ["find_derivation", "reference_possible"]


def find_derivation(grammar: BinaryGrammar, node_count: int, seeds, start: int, finals, budget: "Budget | None" = None):
    """The leaves, in order, of a derivation of ``grammar.start`` along a path from ``start``
    to one of ``finals``, or None when there is none (the intersection is empty).

    ``seeds`` yields ``(p, t, q, leaf)``: terminal ``t`` labels an edge ``p -> q``, ``leaf``
    is what the caller wants back for it. The empty word is the caller's to check
    (``grammar.start_nullable``)."""
    n_symbols = grammar.n_symbols
    by_left, by_right, units = grammar.by_left, grammar.by_right, grammar.units
    goal_symbol = grammar.start
    finals = frozenset(finals)
    forward: dict[int, list[int]] = {}   # p * n_symbols + X -> [q]
    backward: dict[int, list[int]] = {}  # q * n_symbols + X -> [p]
    derived: dict[int, tuple] = {}       # (p * n_symbols + X) * node_count + q -> how
    pending: list[tuple[int, int, int]] = []
    found = None

    def add(p: int, x: int, q: int, how: tuple) -> bool:
        px = p * n_symbols + x
        key = px * node_count + q
        if key in derived:
            return False
        derived[key] = how
        pending.append((p, x, q))
        forward.setdefault(px, []).append(q)
        backward.setdefault(q * n_symbols + x, []).append(p)
        return x == goal_symbol and p == start and q in finals

    for p, t, q, leaf in seeds:
        if add(p, t, q, ("leaf", leaf)):
            found = (p, t, q)
            break
    steps = 0
    while found is None and pending:
        steps += 1
        if budget is not None and not steps & 1023:
            budget.check()
        p, x, q = pending.pop()
        for head in units[x]:
            if add(p, head, q, ("unit", x)):
                found = (p, head, q)
                break
        if found is not None:
            break
        for head, y in by_left[x]:
            for q2 in forward.get(q * n_symbols + y, ()):
                if add(p, head, q2, ("pair", x, y, q)):
                    found = (p, head, q2)
                    break
            if found is not None:
                break
        if found is not None:
            break
        for head, w in by_right[x]:
            for p0 in backward.get(p * n_symbols + w, ()):
                if add(p0, head, q, ("pair", w, x, p)):
                    found = (p0, head, q)
                    break
            if found is not None:
                break
    if found is None:
        return None
    # unfold the derivation, leftmost leaf first (an explicit stack: derivations run deep)
    leaves = []
    stack = [found]
    while stack:
        p, x, q = stack.pop()
        how = derived[(p * n_symbols + x) * node_count + q]
        if how[0] == "leaf":
            leaves.append(how[1])
        elif how[0] == "unit":
            stack.append((p, how[1], q))
        else:
            _, left, right, middle = how
            stack.append((middle, right, q))
            stack.append((p, left, middle))
    return leaves


def reference_possible(search, text, budget: "Budget | None" = None) -> bool:
    """The emptiness decision of ``search`` (a ``GrammarInfill``) on ``text``, by this
    module's worklist on the same lexing automaton: True when some filling exists for some
    lexing."""
    automaton = build_lexings(search.lexers, search.n_terminals, text, budget)
    if not automaton.live[automaton.start]:
        return False
    closure = closures(automaton)
    finals = [p for p, reached in closure.items() if automaton.final in reached]
    if search.cfg.start_nullable and automaton.final in closure[automaton.start]:
        return True
    return find_derivation(_unmerged(search), automaton.node_count, seeds(search, automaton, closure),
                           automaton.start, finals, budget) is not None


_UNMERGED: dict = {}


def _unmerged(search) -> BinaryGrammar:
    """``search``'s grammar in binary form with no symbols merged (the kernels run on the
    merged one: ``bar_hillel.alike_symbols``), so that the reference does not share that step."""
    key = id(search.grammar)
    if key not in _UNMERGED or _UNMERGED[key][0] is not search.grammar:
        _UNMERGED[key] = (search.grammar,
                          BinaryGrammar.from_grammar(search.grammar, search.terminal_names, merge=False))
    return _UNMERGED[key][1]


def seeds(search, automaton, closure):
    """``(p, t, q, leaf)``: an ε-path from ``p`` to ``r`` then a lexeme of terminal ``t``
    from ``r`` to ``q`` (``r == q``, a gap: a whole lexeme inside it)."""
    terminals = search.n_terminals
    out: dict[int, list[tuple[int, int]]] = {}
    for a, b, j in automaton.edges.tolist():
        if 0 <= j < terminals:
            out.setdefault(a, []).append((b, j))
    gaps = {automaton.gap_node(k) for k in range(automaton.text.gaps)}
    nonempty = [t for t in range(terminals) if search.lexers[t].starts]
    for p, reached in closure.items():
        for r in reached:
            for q, t in out.get(r, ()):
                yield p, t, q, (p, r, q, t)
            if r in gaps:
                for t in nonempty:
                    yield p, t, r, (p, r, r, t)



def closures(automaton: LexingAutomaton) -> "dict[int, frozenset[int]]":
    """Live node -> the nodes its ε-edges reach (itself included)."""
    successors = automaton.epsilon_successors()
    live = [int(p) for p in automaton.live.nonzero()[0]]
    closure: dict[int, frozenset[int]] = {}
    for p in reversed(live):  # every edge goes forward
        targets = successors.get(p)
        if not targets:
            closure[p] = frozenset((p,))
        else:
            reached = {p}
            for b, _ in targets:
                reached |= closure[b]
            closure[p] = frozenset(reached)
    return closure
