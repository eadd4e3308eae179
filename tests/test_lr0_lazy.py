"""LR(0) states built on first visit over rules that arrive on demand (grammar/lr0_lazy.py).

Oracles: the textbook canonical LR(0) collection computed here from the whole grammar (items,
closure, goto; nothing of gramalign), and for LR(0) grammars lark's LALR(1) table, whose
states and transitions are the LR(0) automaton's. Rules are asked for only when predicted.
"""

from __future__ import annotations

import dataclasses

import pytest

import gramalign as ga
from gramalign.grammar.lr0_lazy import ROOT, GrammarRules, LazyLR0, canonical_states

from oracles.lark_lalr import lark_parse_table
from oracles.random_cfg import random_cfg
from test_lalr import maskbench_grammars


def textbook_lr0(grammar: ga.Grammar) -> list[tuple]:
    """The canonical LR(0) collection in :func:`canonical_states`' form, built eagerly."""
    rules = {rule.name: rule.alternatives for rule in grammar.rules}
    rules[ROOT] = ((grammar.start,),)

    def closure(kernel):
        items, queue = set(kernel), list(kernel)
        while queue:
            lhs, rhs, dot = queue.pop()
            if dot < len(rhs) and rhs[dot] in rules:
                for alternative in rules[rhs[dot]]:
                    item = (rhs[dot], tuple(alternative), 0)
                    if item not in items:
                        items.add(item)
                        queue.append(item)
        return items

    def moves(kernel):
        out = {}
        for lhs, rhs, dot in closure(kernel):
            if dot < len(rhs):
                out.setdefault(rhs[dot], set()).add((lhs, rhs, dot + 1))
        return {symbol: frozenset(items) for symbol, items in out.items()}

    start = frozenset({(ROOT, (grammar.start,), 0)})
    order, number = [start], {start: 0}
    for kernel in order:
        for symbol, target in sorted(moves(kernel).items()):
            if target not in number:
                number[target] = len(order)
                order.append(target)

    def text(lhs, rhs):
        return f"{lhs} -> {' '.join(rhs)}"

    result = []
    for kernel in order:
        complete = [(lhs, rhs) for lhs, rhs, dot in closure(kernel) if dot == len(rhs) and lhs != ROOT]
        shifts_or_gotos = moves(kernel)
        default = text(*complete[0]) if len(complete) == 1 and not any(
            s not in rules for s in shifts_or_gotos) else None
        result.append((tuple(sorted((text(lhs, rhs), dot) for lhs, rhs, dot in kernel)),
                       tuple(sorted((s, number[t]) for s, t in shifts_or_gotos.items())),
                       default, any(lhs == ROOT and dot == 1 for lhs, rhs, dot in kernel)))
    return result


class CountingRules(GrammarRules):
    def __init__(self, grammar):
        super().__init__(grammar)
        self.asked: list[str] = []

    def alternatives(self, name):
        self.asked.append(name)
        return super().alternatives(name)


GRAMMARS = {
    "json": ga.Grammar.builtin("json"),
    "sql": ga.Grammar.builtin("sql"),
    "arithmetic": ga.Grammar.from_lark('start: e\ne: e "+" t | t\nt: t "*" f | f\nf: "(" e ")" | /[0-9]+/\n'),
    "conflicts": ga.Grammar.from_lark('start: x "c" | "a" "b"\nx: "a"\n'),
}


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_forced_lazy_automaton_is_the_textbook_lr0_collection(name):
    grammar = GRAMMARS[name]
    assert canonical_states(LazyLR0(GrammarRules(grammar), grammar.start)) == textbook_lr0(grammar)


@pytest.mark.parametrize("seed", range(40))
def test_random_grammars_forced_equal_the_textbook_collection(seed):
    grammar = ga.Grammar.from_gbnf(random_cfg(seed).text)
    assert canonical_states(LazyLR0(GrammarRules(grammar), grammar.start)) == textbook_lr0(grammar)


def test_maskbench_grammars_lazy_states_are_larks_lalr_states():
    grammars = maskbench_grammars(12, 331)
    assert len(grammars) >= 8
    for name, grammar in grammars:
        lazy = LazyLR0(GrammarRules(grammar), grammar.start)
        lazy.force()
        table = lark_parse_table(dataclasses.replace(grammar, lr0=False))
        assert lazy.num_states == table.num_states, name
        assert not any(lazy.row(s).conflict for s in range(lazy.num_states)), name
        transitions = sum(len(lazy.row(s).shifts) + len(lazy.row(s).gotos) for s in range(lazy.num_states))
        assert transitions == int((table.action[:, :-1] > 0).sum() + (table.goto_table() >= 0).sum()), name


def test_rules_are_asked_for_only_when_a_visited_state_predicts_them():
    grammar = ga.Grammar.from_lark('start: "a" left | "b" right\nleft: "x" deep\ndeep: "y"\nright: "z"\n')
    rules = CountingRules(grammar)
    lazy = LazyLR0(rules, grammar.start)
    row = lazy.row(0)
    assert set(row.shifts) == {"A", "B"} and lazy.rows.count(None) == len(lazy.rows) - 1
    assert "left" not in rules.asked and "right" not in rules.asked
    lazy.row(row.shifts["A"])  # "a" . left: left is predicted, deep is not yet
    assert "left" in rules.asked and "deep" not in rules.asked and "right" not in rules.asked
    lazy.force()
    assert {"deep", "right"} <= set(rules.asked)
    assert len([name for name in rules.asked if name in ("start", "left", "deep", "right")]) == 4  # each once


def test_default_reductions_and_conflicts():
    lazy = LazyLR0(GrammarRules(GRAMMARS["conflicts"]), "start")
    lazy.force()
    rows = [lazy.row(s) for s in range(lazy.num_states)]
    assert sum(row.conflict for row in rows) == 1  # after "a": reduce x -> a, or shift "b"
    assert sum(row.accepts for row in rows) == 1
    assert all(row.default < 0 or not row.shifts for row in rows)


def test_an_unknown_symbol_is_a_clear_error():
    class Broken:
        def is_terminal(self, name):
            return name == "a"

        def alternatives(self, name):
            return {"start": (("a", "missing"),)}.get(name) if name != "a" else None

    class Strict(Broken):
        def alternatives(self, name):
            if name == "missing":
                raise ga.GrammarError("no rule named 'missing'")
            return super().alternatives(name)

    lazy = LazyLR0(Strict(), "start")
    state = lazy.row(0).shifts["a"]
    with pytest.raises(ga.GrammarError, match="missing"):
        lazy.row(state)
    empty = LazyLR0(type("Empty", (), {"alternatives": lambda self, n: (), "is_terminal": lambda self, n: False})(),
                    "start")
    with pytest.raises(ga.GrammarError, match="no alternatives"):
        empty.row(0)
