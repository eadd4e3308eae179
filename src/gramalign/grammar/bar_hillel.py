"""Is a context-free language disjoint from a regular one? Bar-Hillel triples, bottom up.

The grammar is put in a binary form (every alternative a chain of two-symbol rules, the
empty word removed by unit rules around nullable symbols), and a worklist derives triples
``(p, X, q)``: symbol ``X`` derives a non-empty word that labels a path from ``p`` to ``q``
in the automaton. The intersection grammar is never built, and the search stops as soon as
``(start node, start symbol, a final node)`` appears. Each triple remembers the first way it
was derived, so a derivation (hence a word of both languages) comes back with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .grammar import Grammar
from .infill import Budget

__all__ = ["BinaryGrammar", "find_derivation"]


@dataclass(frozen=True)
class BinaryGrammar:
    """A grammar over symbol ids (terminals ``0 .. n_terminals-1``) with rules ``A -> X Y``
    and ``A -> X`` only, generating the grammar's language minus the empty word."""

    n_terminals: int
    n_symbols: int
    start: int
    start_nullable: bool
    by_left: tuple[tuple[tuple[int, int], ...], ...]
    """``by_left[X]``: ``(A, Y)`` for every rule ``A -> X Y``."""
    by_right: tuple[tuple[tuple[int, int], ...], ...]
    """``by_right[Y]``: ``(A, X)`` for every rule ``A -> X Y``."""
    units: tuple[tuple[int, ...], ...]
    """``units[X]``: every ``A`` with a rule ``A -> X``."""

    @classmethod
    def from_grammar(cls, grammar: Grammar, terminal_names: "tuple[str, ...]") -> "BinaryGrammar":
        """``terminal_names`` fixes the terminal ids; names neither a terminal nor a rule
        (a ``%declare``-d terminal no lexer produces) are terminals nothing derives."""
        ids = {name: n for n, name in enumerate(terminal_names)}
        rules = {}
        for rule in grammar.rules:
            rules.setdefault(rule.name, []).extend(rule.alternatives)
        for name in rules:
            if name not in ids:
                ids[name] = len(ids)
        for rule in grammar.rules:
            for alternative in rule.alternatives:
                for name in alternative:
                    if name not in ids:
                        ids[name] = len(ids)  # never derived: no lexer, no rule
        binary: list[tuple[int, int, int]] = []
        unit: list[tuple[int, int]] = []
        count = len(ids)
        for name, alternatives in rules.items():
            head = ids[name]
            for alternative in alternatives:
                symbols = [ids[s] for s in alternative]
                if len(symbols) == 1:
                    unit.append((head, symbols[0]))
                    continue
                left = head
                while len(symbols) > 2:  # left -> first rest, rest a fresh chain symbol
                    rest = count
                    count += 1
                    binary.append((left, symbols[0], rest))
                    left, symbols = rest, symbols[1:]
                if len(symbols) == 2:
                    binary.append((left, symbols[0], symbols[1]))
        # nullable symbols: an empty alternative, or a rule whose every symbol is nullable
        nullable = [False] * count
        for name, alternatives in rules.items():
            if any(len(alternative) == 0 for alternative in alternatives):
                nullable[ids[name]] = True
        changed = True
        while changed:
            changed = False
            for head, x, y in binary:
                if not nullable[head] and nullable[x] and nullable[y]:
                    nullable[head] = changed = True
            for head, x in unit:
                if not nullable[head] and nullable[x]:
                    nullable[head] = changed = True
        for head, x, y in binary:  # the empty word removed: drop a nullable side
            if nullable[x]:
                unit.append((head, y))
            if nullable[y]:
                unit.append((head, x))
        by_left = [[] for _ in range(count)]
        by_right = [[] for _ in range(count)]
        units = [[] for _ in range(count)]
        for head, x, y in set(binary):
            by_left[x].append((head, y))
            by_right[y].append((head, x))
        for head, x in set(unit):
            if head != x:
                units[x].append(head)
        start = ids[grammar.start]
        return cls(len(terminal_names), count, start, nullable[start],
                   tuple(map(tuple, by_left)), tuple(map(tuple, by_right)), tuple(map(tuple, units)))


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
