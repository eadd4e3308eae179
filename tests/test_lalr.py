"""The integer LALR(1) construction against lark's analyser, table for table.

Tables are compared after a canonical renumbering of states (lark numbers them in set
order), entry by entry: on the shipped grammars, random BNF grammars (nullable rules, left
and right recursion, conflicts of both kinds, strict or not), long include chains and JSON
Schema grammars from MaskBench. The oracle's own iterative look-ahead traversal is held
to lark's recursive one.
"""

from __future__ import annotations

import dataclasses

import random
import subprocess
import sys
from unittest import mock

import json

import lark
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.parsers.lalr_analysis import digraph as lark_digraph
from oracles.lark_lalr import canonical, input_that_hangs, iterative_digraph, lark_parse_table
from support.shared_data import maskbench_files

import gramalign as ga
import gramalign.grammar.lalr
import gramalign.grammar.parser_tables
from gramalign.grammar.builtin import load_builtin
from gramalign.grammar.grammar import Grammar, Rule, Terminal
from gramalign.grammar.lalr import ACCEPT, ParseTable, build_parse_table, pack_goto_table


def random_relation(rng: random.Random, size: int):
    nodes = [f"n{i}" for i in range(size)]
    relation = {x: {rng.choice(nodes) for _ in range(rng.randrange(0, 4))} for x in nodes}
    initial = {x: {rng.randrange(20) for _ in range(rng.randrange(0, 3))} for x in nodes}
    return nodes, relation, initial


def sharing(result: dict) -> list[list[str]]:
    """Which nodes hold the very same set object (lark's components share one)."""
    groups: dict[int, list[str]] = {}
    for node, value in result.items():
        groups.setdefault(id(value), []).append(node)
    return sorted(sorted(g) for g in groups.values())


@pytest.mark.parametrize("seed", range(40))
def test_iterative_digraph_equals_larks(seed):
    rng = random.Random(seed)
    nodes, relation, initial = random_relation(rng, rng.randrange(1, 40))
    # Both mutate their initial sets (as lark does): give each its own copy.
    ours = iterative_digraph(nodes, relation, {x: set(v) for x, v in initial.items()})
    theirs = lark_digraph(nodes, relation, {x: set(v) for x, v in initial.items()})
    assert {x: ours[x] for x in nodes} == {x: theirs[x] for x in nodes}
    assert sharing(ours) == sharing(theirs)


def test_long_include_chains_need_no_deep_recursion():
    # Each rule ends with the next: a 400-long chain of LALR includes. lark's recursive
    # traversal goes up to 400 calls deep, depending on the (id-hashed) order it meets the
    # states in, so it overflows a 250 limit in some runs; ours must never.
    depth = 400
    rules = "\n".join(f'a{i}: "x" a{i + 1} | "y"' for i in range(depth))
    text = f'start: a0\n{rules}\na{depth}: "z"\n'
    grammar = ga.Grammar.from_lark(text)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(250)
    try:
        for _ in range(5):  # fresh analyser objects, other set orders
            build_parse_table(grammar)
    finally:
        sys.setrecursionlimit(limit)
    compiled = ga.compile(grammar, ga.Vocabulary.from_token_bytes([b"x", b"y", b"z", b"</s>"], eos_token_ids=[3]))
    reference = lark.Lark(text, parser="lalr")
    for sample in ["y", "xy", "x" * 399 + "y", "x" * 400 + "z", "x" * 10 + "z", "xx", "x" * 401 + "z"]:
        try:
            reference.parse(sample)
            expected = True
        except lark.exceptions.LarkError:
            expected = False
        matcher = compiled.matcher()
        try:
            matcher.accept_string(sample)
            accepted = matcher.can_terminate()
        except ga.GramalignError:
            accepted = False
        assert accepted == expected, sample


def assert_same_table_as_lark(grammar: Grammar) -> None:
    """Same table as lark's up to state numbering, or a refusal of the same kind naming the
    same collisions as lark without its set aliasing (``shared_sets``, see
    ``lark_parse_table``: it finds more, and only in grammars that are not LR(k))."""
    try:
        expected = lark_parse_table(grammar)
    except ga.GrammarError as refusal:
        with pytest.raises(ga.GrammarError) as info:
            build_parse_table(grammar)
        assert refusal_kind(str(info.value)) == refusal_kind(str(refusal))
        with pytest.raises(ga.GrammarError) as unshared:
            lark_parse_table(grammar, shared_sets=False)
        assert collisions(str(info.value)) == collisions(str(unshared.value))
        return
    with mock.patch.object(gramalign.grammar.lalr, "_refuse_reduce_loop", lambda *_: None):  # tested below
        table = build_parse_table(grammar)
    expected = canonical(expected)
    for field in ("terminals", "nonterminals", "rule_names", "initial_state"):
        assert getattr(table, field) == getattr(expected, field), field
    for field in ("rule_lhs", "rule_len", "action", "goto_table"):
        ours, theirs = getattr(table, field), getattr(expected, field)
        if field == "goto_table":
            ours, theirs = ours(), theirs()
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, field
        different = np.argwhere(ours != theirs)
        assert len(different) == 0, (field, [(tuple(i), ours[tuple(i)], theirs[tuple(i)]) for i in different[:5]])
    assert np.array_equal(canonical(table).action, table.action)  # ours is numbered canonically


def refusal_kind(message: str) -> str:
    return next((kind for kind in ("Shift/Reduce", "Reduce/Reduce") if kind in message), message)


def collisions(message: str):
    """What a refusal says, independent of lark's set order: the shift/reduce conflict
    kind, or every reduce/reduce collision as (terminal, rules)."""
    if "Shift/Reduce" in message:
        return "Shift/Reduce"
    message = message.split(" (make one alternative")[0]
    found = []
    for part in message.split("Reduce/Reduce collision in ")[1:]:
        terminal, rules = part.split(" between the following rules: ")
        found.append((terminal, frozenset(line.strip() for line in rules.split("\n\t- ")[1:])))
    assert found or "Rules defined twice" in message or "undefined rule" in message, message
    return sorted((terminal, sorted(rules)) for terminal, rules in found) if found else message


def random_bnf(rng: random.Random, *, strict: bool = False) -> Grammar:
    """A random grammar straight in the IR: few terminals, empty alternatives, left and
    right recursion, unreachable and nullable rules, often conflicts."""
    n_terminals = rng.randint(1, 5)
    n_rules = rng.randint(1, 7)
    terminals = [f"T{i}" for i in range(n_terminals)]
    names = [f"r{i}" for i in range(n_rules)]
    rules = []
    for name in names:
        alternatives = set()
        for _ in range(rng.randint(1, 4)):
            length = rng.choice([0, 1, 1, 2, 2, 3, 4])
            pool = terminals + names if rng.random() < 0.7 else names
            alternatives.add(tuple(rng.choice(pool) for _ in range(length)))
        if rng.random() < 0.2:  # make left or right recursion likely
            other = rng.choice(terminals)
            alternatives.add((name, other) if rng.random() < 0.5 else (other, name))
        rules.append(Rule(name, tuple(sorted(alternatives))))
    return Grammar(terminals=tuple(Terminal(t, t.lower()) for t in terminals), rules=tuple(rules), start="r0",
                   strict=strict)


@pytest.mark.parametrize("seed", range(400))
def test_random_grammars_have_larks_tables(seed):
    assert_same_table_as_lark(random_bnf(random.Random(seed), strict=seed % 3 == 0))


def test_random_grammars_cover_conflicts_and_accepted_grammars():
    outcomes = {"table": 0, "Shift/Reduce": 0, "Reduce/Reduce": 0, "Shift/Reduce resolved": 0}
    for seed in range(400):
        grammar = random_bnf(random.Random(seed), strict=seed % 3 == 0)
        try:
            lark_parse_table(grammar)
        except ga.GrammarError as refusal:
            outcomes["Shift/Reduce" if "Shift/Reduce" in str(refusal) else "Reduce/Reduce"] += 1
            continue
        outcomes["table"] += 1
        if not grammar.strict:
            try:
                lark_parse_table(Grammar(grammar.terminals, grammar.rules, grammar.start, strict=True))
            except ga.GrammarError:
                outcomes["Shift/Reduce resolved"] += 1
    assert min(outcomes.values()) >= 20, outcomes


def with_random_priorities(grammar: Grammar, rng: random.Random) -> Grammar:
    rules = tuple(Rule(rule.name, rule.alternatives, rng.choice([0, 0, 1, 2, 3, -1])) for rule in grammar.rules)
    return Grammar(grammar.terminals, rules, grammar.start, strict=grammar.strict)


@pytest.mark.parametrize("seed", range(300))
def test_rule_priorities_settle_reduce_reduce_conflicts_as_in_lark(seed):
    rng = random.Random(seed)
    assert_same_table_as_lark(with_random_priorities(random_bnf(rng, strict=seed % 4 == 0), rng))


def test_random_priorities_decide_conflicts_both_ways():
    """The test above meets grammars that priorities make LALR(1) and ones they do not."""
    outcomes = {"settled": 0, "still a collision": 0}
    for seed in range(300):
        rng = random.Random(seed)
        grammar = with_random_priorities(random_bnf(rng, strict=seed % 4 == 0), rng)
        plain = Grammar(grammar.terminals, tuple(Rule(r.name, r.alternatives) for r in grammar.rules),
                        grammar.start, strict=grammar.strict)
        try:
            lark_parse_table(plain)
            continue
        except ga.GrammarError as refusal:
            if "Reduce/Reduce" not in str(refusal):
                continue
        try:
            lark_parse_table(grammar)
            outcomes["settled"] += 1
        except ga.GrammarError:
            outcomes["still a collision"] += 1
    assert min(outcomes.values()) >= 15, outcomes


def test_tables_that_reduce_forever_are_refused():
    """A priority can settle a reduce/reduce conflict into a loop of reductions that never
    reads the next terminal, where lark's parser hangs. Every table in which a brute-force
    search of lark's own table finds an input that hangs is refused; a refusal where the
    search finds none is the check's over-approximation (a loop that priorities make
    unreachable), which stays rare."""
    outcomes = {"hangs, refused": 0, "hangs, built": 0, "refused, no hang found": 0}
    for seed in range(300):
        rng = random.Random(seed)
        grammar = with_random_priorities(random_bnf(rng, strict=seed % 4 == 0), rng)
        try:
            expected = canonical(lark_parse_table(grammar))
        except ga.GrammarError:
            continue
        hangs = input_that_hangs(expected) is not None
        try:
            build_parse_table(grammar)
            refused = False
        except ga.GrammarError as refusal:
            assert "reduce forever" in str(refusal), refusal
            refused = True
        if hangs or refused:
            outcomes[("hangs, " + ("refused" if refused else "built")) if hangs else "refused, no hang found"] += 1
    assert outcomes["hangs, built"] == 0 and outcomes["hangs, refused"] >= 3, outcomes
    assert outcomes["refused, no hang found"] <= 2, outcomes


def test_lark_test_suite_grammar_that_hangs_lark_is_refused():
    text = 'start: (a+)*\n!a.1: "A" |\n'  # from lark's tests, where it is only run with Earley
    with pytest.raises(ga.GrammarError, match=r"reduce forever .* with \$END next, it reduces .*a -> <empty>"):
        ga.Grammar.from_lark(text)
    hang = f"import lark; lark.Lark({text!r}, parser='lalr').parse('A')"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", hang], timeout=5, capture_output=True)


def test_lark_rule_priorities_reach_the_table():
    text = 'start: a | b\na.2: "x"\nb: "x" | "y"\n'
    grammar = ga.Grammar.from_lark(text)
    assert [r.priority for r in grammar.rules] == [0, 2, 0]
    assert_same_table_as_lark(grammar)
    table = build_parse_table(grammar)
    # after "x" the look-ahead $END reduces by a -> X, the rule of priority 2
    after_x = table.action[table.initial_state, table.terminal_id("X")] - 1
    assert table.rule_names[-table.action[after_x, table.terminal_id("$END")] - 1] == "a -> X"
    tie = 'start: a | b\na.2: "x"\nb.2: "x"\n'
    with pytest.raises(ga.GrammarError, match="Reduce/Reduce"):
        ga.Grammar.from_lark(tie)
    with pytest.raises(lark.exceptions.GrammarError, match="Reduce/Reduce"):
        lark.Lark(tie, parser="lalr")


@pytest.mark.parametrize("name", ["json", "sql", "python"])
def test_builtin_grammars_have_larks_tables(name):
    assert_same_table_as_lark(load_builtin(name))


@pytest.mark.parametrize("text", [
    'start: a\na: a "x" | "y"\n',  # left recursion
    'start: a\na: "x" a | "y"\n',  # right recursion
    'start: a b a\na: "x" a | \nb: b "y" | \n',  # nullable on both sides
    'start: a "z"\na: b c\nb: "x"?\nc: "y"? b\n',  # a nullable chain ending a rule
    'start: (a | b)+\na: "x" "y"?\nb: "x" "z"\n',
    'start: e\ne: e "+" t | t\nt: t "*" f | f\nf: "(" e ")" | "n"\n',  # the dragon book's
    's: l "=" r | r\nl: "*" r | "i"\nr: l\n',  # LALR(1) but not SLR(1)
    'start: a "x" | b "y" | "c" a "y" | "c" b "x"\na: "z"\nb: "z"\n',  # LR(1) but not LALR(1)
    'start: "if" e "then" start | "if" e "then" start "else" start | "s"\ne: "e"\n',  # dangling else
])
def test_classic_grammars_have_larks_tables(text, monkeypatch):
    # from_lark builds the table to refuse conflicts early; compare refusals here instead
    monkeypatch.setattr(gramalign.grammar.parser_tables, "build_parser_tables", lambda grammar: None)
    assert_same_table_as_lark(ga.Grammar.from_lark(text, start="s" if text.startswith("s:") else "start"))


def test_long_include_chains_have_larks_tables():
    depth = 400
    rules = "\n".join(f'a{i}: "x" a{i + 1} | "y"' for i in range(depth))
    assert_same_table_as_lark(ga.Grammar.from_lark(f'start: a0\n{rules}\na{depth}: "z"\n'))


def test_conflicts_are_refused_as_lark_refuses_them():
    x = (Terminal("X", "x"),)
    reduce_reduce = Grammar(x, (Rule("start", (("a",), ("b",))), Rule("a", (("X",),)), Rule("b", (("X",),))), "start")
    with pytest.raises(ga.GrammarError, match=r"not LALR\(1\): Reduce/Reduce collision in Terminal\('\$END'\)"
                       r" between the following rules: \n\t- <a : X>\n\t- <b : X>"):
        build_parse_table(reduce_reduce)
    # dangling else: shift wins, or a strict grammar is refused
    shift_reduce = (Rule("start", (("I", "start"), ("I", "start", "E", "start"), ("S",))),)
    terminals = tuple(Terminal(name, name.lower()) for name in "IES")
    dangling = Grammar(terminals, shift_reduce, "start")
    assert_same_table_as_lark(dangling)
    table = build_parse_table(dangling)
    assert (table.action[:, table.terminal_id("E")] > 0).any()
    strict_message = r"Shift/Reduce conflict for terminal E\. \[strict-mode\]\n \* <start : I start>"
    with pytest.raises(ga.GrammarError, match=strict_message):
        build_parse_table(Grammar(terminals, shift_reduce, "start", strict=True))
    twice = Grammar(x, (Rule("start", (("X",), ("X",))),), "start")
    with pytest.raises(ga.GrammarError, match="Rules defined twice"):
        build_parse_table(twice)
    with pytest.raises(ga.GrammarError, match="neither a rule nor a non-ignored terminal"):
        build_parse_table(Grammar(x, (Rule("start", (("Y",),)),), "start"))
    with pytest.raises(ga.GrammarError, match="start rule 'begin'"):
        build_parse_table(Grammar(x, (Rule("start", (("X",),)),), "begin"))
    with pytest.raises(ga.GrammarError, match="undefined rule"):
        build_parse_table(Grammar(x, (Rule("start", (("a",),)), Rule("a", ())), "start"))


def test_includes_also_walk_kernel_items_as_in_lark():
    # start: "b" a | a "c";  a: "b" e;  e: (empty). After "b", lark's includes relation also
    # walks the kernel item a -> "b" . e, so e's look-ahead there gains $END (textbook
    # LALR(1): only "c"): one more reduction, which errs a step later. Kept: the table (and
    # what the contextual lexer tries where) is lark's.
    terminals = (Terminal("B", "b"), Terminal("C", "c"))
    rules = (Rule("start", (("B", "a"), ("a", "C"))), Rule("a", (("B", "e"),)), Rule("e", ((),)))
    grammar = Grammar(terminals, rules, "start")
    assert_same_table_as_lark(grammar)
    table = build_parse_table(grammar)
    textbook = canonical(lark_parse_table(grammar, kernel_includes=False))
    after_b = table.action[0, 0] - 1
    end = table.terminal_id("$END")
    assert table.action[after_b, end] == -(table.rule_names.index("e -> <empty>") + 1)
    assert textbook.action[after_b, end] == 0
    assert [tuple(i) for i in np.argwhere(table.action != textbook.action)] == [(after_b, 2)]
    # and so lark, like gramalign, refuses some LALR(1) grammars
    t1, t2, t0 = (Terminal(name, name.lower()) for name in ("T1", "T2", "T0"))
    lalr1 = Grammar((t0, t1, t2), (Rule("r0", (("T2", "T1", "r2"),)), Rule("r1", (("T2", "T1", "r0"), ("r2", "T1"))),
                                    Rule("r2", (("T1", "r1", "T0"), ("r0",)))), "r0")
    lark_parse_table(lalr1, kernel_includes=False)
    assert_same_table_as_lark(lalr1)
    with pytest.raises(ga.GrammarError, match="Reduce/Reduce"):
        build_parse_table(lalr1)


def test_accept_is_the_end_states_end_action():
    table = build_parse_table(ga.Grammar.from_lark('start: "x"\n'))
    assert table.initial_state == 0 and table.action[table.goto_of(0, 0), table.terminal_id("$END")] == ACCEPT


def maskbench_grammars(count: int, every: int):
    grammars = []
    for path in maskbench_files()[::every]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            grammar = ga.Grammar.from_json_schema(schema).whole()
        except ga.GramalignError:
            continue
        if sum(len(rule.alternatives) for rule in grammar.rules) <= 3000:  # lark takes seconds beyond
            grammars.append((path.stem, grammar))
        if len(grammars) == count:
            break
    return grammars


def test_json_schema_grammars_have_larks_tables():
    grammars = maskbench_grammars(40, 197)
    assert len(grammars) >= 30
    for name, grammar in grammars:
        try:
            assert_same_table_as_lark(dataclasses.replace(grammar, lr0=False))  # see test_lr0_tables for lr0
        except AssertionError as exc:
            raise AssertionError(name) from exc


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_packed_goto_table_reads_back_every_cell(n_states, n_symbols, density, seed):
    """The packed goto table answers every (state, nonterminal) as the dense table does,
    -1 where undefined, whatever the pattern of entries."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n_states, n_symbols)) < density, rng.integers(0, n_states, (n_states, n_symbols)), -1)
    packed = pack_goto_table(dense.astype(np.int32))
    table = ParseTable(terminals=("$END",), nonterminals=tuple(f"n{k}" for k in range(n_symbols)),
                       action=np.zeros((n_states, 1), np.int32), goto=packed, rule_lhs=np.zeros(0, np.int32),
                       rule_len=np.zeros(0, np.int32), rule_names=(), initial_state=0)
    assert np.array_equal(table.goto_table(), dense)
    assert all(table.goto_of(s, a) == dense[s, a] for s in range(n_states) for a in range(n_symbols))
