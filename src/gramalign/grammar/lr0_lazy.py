"""The LR(0) automaton of a grammar whose rules arrive on demand, built a state at a time.

LALR(1) look-aheads read every predecessor of a state, so they cannot be computed for part of
a grammar; LR(0) states can: a state is its kernel items, and its row (what it shifts, its
gotos, the one rule it reduces by default) needs only the rules of the nonterminals its
closure predicts. :class:`LazyLR0` asks its :class:`RuleSource` for a nonterminal's
alternatives the first time a closure predicts it, so a grammar emitted on demand (a JSON
Schema's, see ``json_schema/emit.py``) is emitted only where the parser goes.

A state gets its number when a built row first names it (as the target of a shift or goto);
its own row is built by :meth:`LazyLR0.row`, on first visit. Numbers follow visit order, so
two automata of one grammar are compared through :func:`canonical_states`, which renumbers
breadth first from the initial state with each state's successors in symbol-name order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import GrammarError

ROOT = "$root"


class RuleSource(Protocol):
    def is_terminal(self, name: str) -> bool:
        """Is ``name`` a terminal (known without emitting any rule)?"""

    def alternatives(self, name: str) -> "tuple[tuple[str, ...], ...] | None":
        """The alternatives of nonterminal ``name``, or None where ``name`` is a terminal."""


@dataclass(frozen=True)
class StateRow:
    """One built state: ``shifts`` (terminal -> state), ``gotos`` (nonterminal -> state), the
    rule it reduces by when it can only reduce (``default``, -1 if none), whether it accepts
    the end of the text (the state after the start symbol), and its LR(0) conflicts (states
    with a complete item beside a shift or another complete item; the caller decides)."""

    shifts: dict[str, int]
    gotos: dict[str, int]
    default: int
    accepts: bool
    conflict: bool


class LazyLR0:
    """LR(0) states on first visit; rules on first prediction (see the module docstring).

    Rule ``r`` is ``rules[r] = (lhs, rhs)``; rule 0 is ``$root -> start``. An item is a pair
    (rule, dot). State 0 is the initial state."""

    def __init__(self, source: RuleSource, start: str):
        self._source = source
        self.rules: list[tuple[str, tuple[str, ...]]] = [(ROOT, (start,))]
        self._rules_of: dict[str, tuple[int, ...]] = {}
        self._closure: dict[str, tuple[tuple[int, int], ...]] = {}
        self.kernels: list[tuple[tuple[int, int], ...]] = [((0, 0),)]
        self._number: dict[tuple[tuple[int, int], ...], int] = {self.kernels[0]: 0}
        self.rows: list[StateRow | None] = [None]

    @property
    def num_states(self) -> int:
        """States numbered so far (built or not)."""
        return len(self.kernels)

    def is_terminal(self, symbol: str) -> bool:
        return self._source.is_terminal(symbol)

    def _rules_for(self, name: str) -> tuple[int, ...]:
        found = self._rules_of.get(name)
        if found is None:
            alternatives = self._source.alternatives(name)
            if not alternatives:
                raise GrammarError(f"rule {name!r} has no alternatives")
            first = len(self.rules)
            self.rules.extend((name, tuple(alternative)) for alternative in alternatives)
            found = self._rules_of[name] = tuple(range(first, len(self.rules)))
        return found

    def _predicted(self, name: str) -> tuple[tuple[int, int], ...]:
        """The items ``(r, 0)`` of every rule a prediction of ``name`` brings in (its rules,
        and those of the nonterminals that start them, transitively)."""
        found = self._closure.get(name)
        if found is None:
            items, seen, queue = [], {name}, [name]
            while queue:
                for r in self._rules_for(queue.pop()):
                    items.append((r, 0))
                    rhs = self.rules[r][1]
                    if rhs and rhs[0] not in seen and not self.is_terminal(rhs[0]):
                        seen.add(rhs[0])
                        queue.append(rhs[0])
            found = self._closure[name] = tuple(items)
        return found

    def needs_rules(self, state: int) -> bool:
        """Would building ``state``'s row ask the rule source for a nonterminal it has not
        given yet (a prediction never made before)?"""
        if self.rows[state] is not None:
            return False
        rules = self.rules
        for r, dot in self.kernels[state]:
            rhs = rules[r][1]
            if dot < len(rhs) and rhs[dot] not in self._closure and not self.is_terminal(rhs[dot]):
                return True
        return False

    def row(self, state: int) -> StateRow:
        """State ``state``'s row, built on first call (its targets numbered, not built)."""
        found = self.rows[state]
        if found is not None:
            return found
        rules = self.rules
        items = list(self.kernels[state])
        predicted = set()
        for r, dot in self.kernels[state]:
            rhs = rules[r][1]
            if dot < len(rhs) and rhs[dot] not in predicted and not self.is_terminal(rhs[dot]):
                predicted.add(rhs[dot])
                items.extend(self._predicted(rhs[dot]))
        moves: dict[str, list[tuple[int, int]]] = {}
        complete = []
        accepts = False
        for r, dot in dict.fromkeys(items):
            rhs = rules[r][1]
            if dot == len(rhs):
                if r == 0:
                    accepts = True
                else:
                    complete.append(r)
            else:
                moves.setdefault(rhs[dot], []).append((r, dot + 1))
        shifts, gotos = {}, {}
        for symbol in sorted(moves):
            kernel = tuple(sorted(moves[symbol]))
            target = self._number.get(kernel)
            if target is None:
                target = self._number[kernel] = len(self.kernels)
                self.kernels.append(kernel)
                self.rows.append(None)
            (shifts if self.is_terminal(symbol) else gotos)[symbol] = target
        conflict = len(complete) > 1 or (len(complete) == 1 and bool(shifts))
        default = complete[0] if len(complete) == 1 and not shifts else -1
        found = self.rows[state] = StateRow(shifts, gotos, default, accepts, conflict)
        return found

    def force(self, max_states: int = 1 << 20) -> None:
        """Build every reachable state (the eager automaton; tests and ``eager=True``)."""
        state = 0
        while state < self.num_states:
            if state >= max_states:
                raise GrammarError(f"the LR(0) automaton has more than {max_states} states")
            self.row(state)
            state += 1


def canonical_states(automaton: LazyLR0) -> list[tuple]:
    """The forced automaton as a list, one entry per state in breadth-first order from state
    0 (successors in symbol-name order): (kernel items as (rule text, dot), shifts and gotos
    as (symbol, canonical target), default rule text, accepts). Two automata of one grammar
    have equal lists whatever order they were built in."""
    automaton.force()
    order, number = [0], {0: 0}
    for state in order:
        row = automaton.row(state)
        for _, target in sorted({**row.shifts, **row.gotos}.items()):
            if target not in number:
                number[target] = len(order)
                order.append(target)

    def text(r: int) -> str:
        lhs, rhs = automaton.rules[r]
        return f"{lhs} -> {' '.join(rhs)}"

    result = []
    for state in order:
        row = automaton.row(state)
        result.append((tuple(sorted((text(r), dot) for r, dot in automaton.kernels[state])),
                       tuple(sorted((s, number[t]) for s, t in {**row.shifts, **row.gotos}.items())),
                       text(row.default) if row.default >= 0 else None, row.accepts))
    return result


class GrammarRules:
    """The :class:`RuleSource` of a complete :class:`~gramalign.grammar.grammar.Grammar`."""

    def __init__(self, grammar):
        self._alternatives = {rule.name: rule.alternatives for rule in grammar.rules}
        self.terminals = {t.name: t for t in grammar.terminals}
        self._terminals = set(self.terminals)

    def is_terminal(self, name: str) -> bool:
        return name in self._terminals

    def first_bytes(self):
        """uint8 [256]: the bytes some terminal's lexeme starts with."""
        first = np.zeros(256, dtype=np.uint8)
        for terminal in self.terminals.values():
            dfa = terminal.dfa
            first |= (dfa.transitions[dfa.initial] >= 0).astype(np.uint8)
        return first

    def alternatives(self, name: str) -> "tuple[tuple[str, ...], ...] | None":
        if name in self._terminals:
            return None
        found = self._alternatives.get(name)
        if found is None:
            raise GrammarError(f"the grammar uses {name!r}, which is neither a rule nor a terminal")
        return found
