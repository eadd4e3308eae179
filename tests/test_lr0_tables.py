"""LR(0) tables with default reductions (``Grammar.lr0``; JSON Schema grammars are LR(0), and the lazy
tables, which cannot have look-aheads, read them so).

Oracles: lark's LALR(1) table of the same grammar (tests/oracles/lark_lalr.py): where the
grammar is LR(0), the LR(0) table has the same states and shifts, and a state reduces by
default exactly where every action of lark's row is that one reduction; and the same
grammar read through its LALR(1) table (``lr0=False``): the same masks along random walks,
with brute force over the vocabulary at some steps.
"""

from __future__ import annotations

import dataclasses
import random
import re

import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.lalr import ACCEPT, build_parse_table, parse_terminals

from oracles.lark_lalr import canonical, lark_parse_table
from support.mask_walks import lockstep_walks
from support.random_schemas import SchemaGenerator
from support.vocabularies import gpt2_vocabulary
from test_lalr import maskbench_grammars


def assert_lr0_table_matches_larks(grammar: ga.Grammar) -> None:
    table = build_parse_table(grammar)
    lark = canonical(lark_parse_table(dataclasses.replace(grammar, lr0=False)))
    terminals = slice(0, len(table.terminals))
    assert table.action.shape == lark.action.shape
    assert np.array_equal(table.goto_table(), lark.goto_table())
    ours, theirs = table.action[:, terminals], lark.action[:, terminals]
    shifts = theirs > 0
    assert np.array_equal(ours[shifts], theirs[shifts])  # ACCEPT is negative: compared below
    assert np.array_equal(ours == ACCEPT, theirs == ACCEPT)
    assert not ((ours < 0) & (ours != ACCEPT)).any(), "an LR(0) table reduces in the default column only"
    for state in range(table.num_states):
        row = theirs[state]
        reductions = set(row[(row < 0) & (row != ACCEPT)].tolist())
        default = int(table.action[state, -1])
        if (row > 0).any() or (row == ACCEPT).any():
            assert default == 0, state
        else:
            assert reductions == {default}, state


def test_json_schema_grammars_are_lr0_and_their_tables_are_larks_without_look_aheads():
    grammars = maskbench_grammars(40, 197)
    assert len(grammars) >= 30
    for name, grammar in grammars:
        grammar = dataclasses.replace(grammar, lr0=True)
        try:
            assert_lr0_table_matches_larks(grammar)
        except AssertionError as exc:
            raise AssertionError(name) from exc


def _grammar(rules: str) -> ga.Grammar:
    return dataclasses.replace(ga.Grammar.from_lark(rules), lr0=True)


def test_a_grammar_with_an_lr0_conflict_gets_its_lalr1_table():
    # after "a", reduce x -> "a" or shift "b": LR(0) cannot tell, LALR(1) can
    grammar = _grammar('start: x "c" | "a" "b"\nx: "a"\n')
    table = build_parse_table(grammar)
    assert not (table.action[:, -1] < 0).any()
    assert np.array_equal(table.action, build_parse_table(dataclasses.replace(grammar, lr0=False)).action)
    # an empty rule: its closure item is complete where it is predicted
    grammar = _grammar('start: "a" x "b"\nx: "c"?\n')
    assert not (build_parse_table(grammar).action[:, -1] < 0).any()


def test_default_reductions_parse_what_the_lalr_table_parses():
    grammar = _grammar('start: list\nlist: "[" items "]" | "[" "]"\nitems: item | items "," item\n'
                       'item: "x" | list\n')
    table = build_parse_table(grammar)
    assert (table.action[:, -1] < 0).any()
    lalr = build_parse_table(dataclasses.replace(grammar, lr0=False))
    names = {re.sub(r"\\(.)", r"\1", t.pattern): t.name for t in grammar.terminals}
    rng = random.Random(5)
    accepted = 0
    for _ in range(400):
        text = _random_list(rng, 3)
        if rng.random() < 0.5:  # damaged: one character replaced, dropped or doubled
            i = rng.randrange(len(text))
            text = text[:i] + rng.choice(["", rng.choice("[],x"), text[i] * 2]) + text[i + 1:]
        if not text:
            continue
        expected = parse_terminals(lalr, [names[c] for c in text])
        assert parse_terminals(table, [names[c] for c in text]) == expected, text
        accepted += expected
    assert 50 <= accepted <= 350


def _random_list(rng: random.Random, depth: int) -> str:
    items = [_random_list(rng, depth - 1) if depth and rng.random() < 0.4 else "x" for _ in range(rng.randrange(4))]
    return "[" + ",".join(items) + "]"


OBJECTS = {"type": "object", "properties": {
    "id": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}},
    "kind": {"anyOf": [{"type": "null"}, {"enum": ["a", "bc"]},
                       {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}]},
    "nested": {"type": "object", "properties": {"deep": {"type": "array", "items": {"type": "number"}}}},
}, "required": ["id"]}


@pytest.mark.parametrize("seed", range(4))
def test_masks_of_lr0_and_lalr1_tables_agree_along_random_walks(seed):
    vocab = gpt2_vocabulary()
    schemas = [OBJECTS] + [SchemaGenerator(random.Random(seed * 7 + k)).schema() for k in range(3)]
    compared = 0
    for schema in schemas:
        try:
            grammar = ga.Grammar.from_json_schema(schema, strict=False).whole()
        except ga.SchemaCompileError:
            continue
        grammar = dataclasses.replace(grammar, lr0=True)
        lr0 = ga.compile(grammar, vocab)
        lalr = ga.compile(dataclasses.replace(grammar, lr0=False), vocab)
        assert (lr0.store.tables.table.action[:, -1] < 0).any()
        assert not (lalr.store.tables.table.action[:, -1] < 0).any()
        compared += lockstep_walks(lr0, lalr, seed, 3, 30)
    assert compared >= 30


def test_the_lr0_grammar_flag_builds_no_lalr_table(monkeypatch):
    from gramalign.grammar import lalr
    monkeypatch.setattr(lalr, "lalr_table", lambda *args: pytest.fail("the LALR(1) look-aheads were computed"))
    grammar = dataclasses.replace(ga.Grammar.from_json_schema(OBJECTS).whole(), lr0=True)
    table = build_parse_table(grammar)
    assert table.forks == 0 and (table.action[:, -1] < 0).any()
