"""Symbols whose rules are alike, merged before the infilling check (bar_hillel.alike_symbols).

Oracle: the words of length up to 6 each symbol derives, enumerated from the grammar as
given; merged symbols must derive the same ones, and the merged grammar's symbols the words
of the symbols they stand for."""

from __future__ import annotations

import random

import numpy as np

from gramalign.grammar import bar_hillel
from gramalign.grammar.bar_hillel import alike_symbols

MAX_LENGTH = 6


def words(n_terminals: int, count: int, binary, unit) -> list[frozenset]:
    """Per symbol, its words (tuples of terminals) of length up to MAX_LENGTH, to a fixpoint."""
    found = [{(t,)} if t < n_terminals else set() for t in range(count)]
    while True:
        grown = False
        for head, x in unit:
            new = found[x] - found[head]
            if new:
                found[head] |= new
                grown = True
        for head, x, y in binary:
            new = {a + b for a in found[x] for b in found[y] if len(a) + len(b) <= MAX_LENGTH} - found[head]
            if new:
                found[head] |= new
                grown = True
        if not grown:
            return [frozenset(w) for w in found]


def random_grammar(rng: random.Random, n_terminals: int, count: int):
    """Rules over few symbols, with copies of some symbols' rules under other names (the
    repeats a JSON Schema grammar has), some of them recursive."""
    binary, unit = [], []
    originals = list(range(n_terminals, count - 3))
    for head in originals:
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.3:
                unit.append((head, rng.randrange(count)))
            else:
                binary.append((head, rng.randrange(count), rng.randrange(count)))
    for copy in range(count - 3, count):  # a renamed copy of an original, its self-references renamed too
        source = rng.choice(originals)
        binary += [(copy, x, copy if y == source else y) for head, x, y in binary if head == source]
        unit += [(copy, x) for head, x in unit if head == source]
    return binary, unit


def test_alike_symbols_derive_the_same_words():
    rng = random.Random(5)
    merged_some = 0
    for _ in range(300):
        n_terminals = rng.randint(1, 3)
        count = rng.randint(n_terminals + 4, n_terminals + 8)
        binary, unit = random_grammar(rng, n_terminals, count)
        ids = alike_symbols(n_terminals, count, binary, unit)
        assert ids[:n_terminals].tolist() == list(range(n_terminals))
        assert sorted(set(ids[n_terminals:].tolist())) == list(range(n_terminals, int(ids.max(initial=0)) + 1))
        before = words(n_terminals, count, binary, unit)
        merged_count = int(ids.max(initial=n_terminals - 1)) + 1
        after = words(n_terminals, merged_count, [(ids[a], ids[b], ids[c]) for a, b, c in binary],
                      [(ids[a], ids[b]) for a, b in unit])
        for symbol in range(count):
            assert after[ids[symbol]] == before[symbol], (binary, unit, symbol)
        merged_some += len(set(ids.tolist())) < count
    assert merged_some > 50


def test_renamed_recursive_copies_are_one_symbol():
    # 2: a 2 | b ; 3: a 3 | b (a renamed copy) ; 4: a 2 | a (not alike)
    binary = [(2, 0, 2), (3, 0, 3), (4, 0, 2)]
    unit = [(2, 1), (3, 1), (4, 0)]
    ids = alike_symbols(2, 5, binary, unit)
    assert ids[2] == ids[3] != ids[4]


def test_hash_collisions_fall_back_to_exact_parts(monkeypatch):
    rng = random.Random(9)
    for _ in range(40):
        n_terminals = rng.randint(1, 3)
        count = rng.randint(n_terminals + 4, n_terminals + 8)
        binary, unit = random_grammar(rng, n_terminals, count)
        expected = alike_symbols(n_terminals, count, binary, unit)
        with monkeypatch.context() as patch:  # every rule set hashes alike: nothing splits until checked
            patch.setattr(bar_hillel, "_mixed", lambda values: np.zeros(np.shape(values), dtype=np.uint64))
            assert alike_symbols(n_terminals, count, binary, unit).tolist() == expected.tolist()


def test_merging_keeps_terminals_apart_from_symbols_without_rules():
    # 1 and 2 have no rules (never derived), terminal 0 has none either: only 1 and 2 are one
    ids = alike_symbols(1, 4, [(3, 0, 1), (3, 0, 2)], [])
    assert ids.tolist() == [0, 1, 1, 2]
