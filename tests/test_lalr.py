"""The LALR(1) analyser's look-ahead traversal against lark's own recursive one."""

from __future__ import annotations

import random
import sys

import lark
import pytest
from lark.parsers.lalr_analysis import digraph as lark_digraph

import gramalign as ga
from gramalign.grammar.lalr import _digraph, build_parse_table


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
    ours = _digraph(nodes, relation, {x: set(v) for x, v in initial.items()})
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
