"""The lexer built a start at a time (grammar/lexer_lazy.py) against the eager lexer.

Oracle: ``build_lexer`` (grammar/lexer.py) over the same ranked terminals with all the start
sets at once. From the start of each candidate set, added to the lazy lexer in a random
order, every byte string (lexemes of the terminals, their prefixes and extensions, random
bytes) leads to states with the same accepting and live terminals, and both die together.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.lexer import build_lexer, rank_terminals
from gramalign.grammar.lexer_lazy import LazyLexer
from gramalign.grammar.parser_tables import build_parser_tables

from support.shared_data import maskbench_files


def lexeme(dfa, rng: random.Random, max_len: int = 12) -> bytes:
    """A random walk through ``dfa`` that stops at an accepting state when it can."""
    state, out = dfa.initial, bytearray()
    for _ in range(max_len):
        if dfa.accepting[state] and rng.random() < 0.4:
            break
        moves = np.flatnonzero(dfa.transitions[state] >= 0)
        if not len(moves):
            break
        byte = int(rng.choice(moves.tolist()))
        out.append(byte)
        state = int(dfa.transitions[state, byte])
    return bytes(out)


def assert_lexers_agree(terminals, sets: list, seed: int, texts: int = 30) -> None:
    ranked = rank_terminals(tuple(terminals))
    words = (len(ranked) + 63) // 64
    starts = np.zeros((len(sets), words), dtype=np.uint64)
    for k, members in enumerate(sets):
        for t in members:
            starts[k, t >> 6] |= np.uint64(1) << np.uint64(t & 63)
    eager = build_lexer(ranked, starts=starts)
    lazy = LazyLexer()
    for terminal in ranked:
        lazy.add_terminal(terminal)
    rng = random.Random(seed)
    order = list(range(len(sets)))
    rng.shuffle(order)
    lazy_start = {k: lazy.add_start(sets[k]) for k in order}
    assert lazy.add_start(sets[order[0]]) == lazy_start[order[0]]  # once per set
    byte_class, representative = lazy.byte_classes()  # refined terminal by terminal: the same partition
    pairs = set(zip(eager.byte_class.tolist(), byte_class.tolist()))
    assert len(pairs) == len(set(eager.byte_class.tolist())) == len(set(byte_class.tolist()))
    assert byte_class[representative].tolist() == list(range(len(representative)))
    assert lazy.is_start[:lazy.num_states].sum() == len({tuple(sorted(s)) for s in sets})
    for k in range(len(sets)):
        assert lazy.is_start[lazy_start[k]]
        for _ in range(texts):
            members = sorted(sets[k])
            text = b"".join(lexeme(ranked[rng.choice(members)].dfa, rng) for _ in range(rng.randint(1, 2))) \
                if members else b""
            if rng.random() < 0.3:
                text += bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
            e, q = k, lazy_start[k]
            for byte in text:
                e, q = int(eager.transitions[e, byte]), int(lazy.transitions[q, byte])
                assert (e < 0) == (q < 0), (k, text)
                if e < 0:
                    break
                assert np.array_equal(eager.accept_bits[e], lazy.accept_bits[q, :words]), (k, text)
                assert np.array_equal(eager.alive_bits[e], lazy.alive_bits[q, :words]), (k, text)
                assert not lazy.is_start[q]


def candidate_sets(tables) -> list:
    sets = {tuple(np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")).tolist())
            for row in tables.candidate_bits}
    return sorted(sets)


@pytest.mark.parametrize("name", ["json", "sql"])
def test_builtin_grammars_lexers_agree(name):
    tables = build_parser_tables(ga.Grammar.builtin(name))
    assert_lexers_agree(tables.lexer.terminals, candidate_sets(tables), seed=len(name))


def test_maskbench_grammars_lexers_agree():
    checked = 0
    for path in maskbench_files()[::151][:14]:
        try:
            grammar = ga.Grammar.from_json_schema(json.loads(path.read_text(encoding="utf-8"))["schema"]).whole()
            tables = build_parser_tables(grammar)
        except ga.GramalignError:
            continue
        assert_lexers_agree(tables.lexer.terminals, candidate_sets(tables), seed=checked, texts=10)
        checked += 1
    assert checked >= 8


def test_overlapping_terminals_share_product_states_across_starts():
    terminals = [ga.grammar.grammar.Terminal(name, pattern) for name, pattern in
                 [("A", "ab+"), ("B", "a[bc]"), ("C", "[a-c]+"), ("D", "abc")]]
    sets = [[0, 1], [0, 1, 2], [1, 2, 3], [0, 2], [3], []]
    assert_lexers_agree(terminals, sets, seed=1)
    lazy = LazyLexer()
    for terminal in rank_terminals(tuple(terminals)):
        lazy.add_terminal(terminal)
    first = lazy.add_start([0, 1])
    after_a = int(lazy.transitions[first, ord("a")])
    grown = lazy.num_states
    again = lazy.add_start([1, 0, 1])
    assert again == first and lazy.num_states == grown
    other = lazy.add_start([0, 1, 3])  # after "a": A, B and D live, a new product state
    assert int(lazy.transitions[other, ord("a")]) != after_a


def test_terminal_errors_and_the_state_limit():
    lazy = LazyLexer(max_states=3)
    with pytest.raises(ga.GrammarError, match="empty string"):
        lazy.add_terminal(ga.grammar.grammar.Terminal("E", "a*"))
    with pytest.raises(ga.GrammarError, match="exceeds 3 states"):  # its block comes with a terminal
        lazy.add_terminal(ga.grammar.grammar.Terminal("X", "[a-z]{1,8}"))
    assert lazy.terminals == [] and lazy.num_states == 0
    lazy = LazyLexer(max_states=8)
    lazy.add_terminal(ga.grammar.grammar.Terminal("A3", "aaa"))
    lazy.add_terminal(ga.grammar.grammar.Terminal("A", "a+"))
    assert lazy.num_states == 6
    with pytest.raises(ga.GrammarError, match="exceeds 8 states"):  # the product of the two
        lazy.add_start([0, 1])
    assert lazy.num_states == 6 and lazy.add_start([0]) == 6  # one row into A3's block fits


def test_a_shipped_format_is_lexed_from_its_columns_unexpanded():
    # date-time's spelling has 11k states: the lexer writes its block from the distinct
    # columns the shipped data keeps, and its 256-wide table is never expanded; rows equal
    # those of the same automaton expanded (a plain ByteDFA of the same table)
    from gramalign.grammar.automata.dfa import ByteDFA
    from gramalign.grammar.json_schema.format_data import read_format_file
    from gramalign.grammar.lexer_lazy import RESERVED_ROWS

    shipped = read_format_file("date-time")
    assert shipped is not None  # the package data is current
    compact, expanded = shipped.spelling(1 << 20), shipped.spelling(1 << 20)
    plain = ByteDFA(expanded.transitions, expanded.initial, expanded.accepting)
    assert plain.known_columns() is None and compact.known_columns() is not None
    lexers = []
    for dfa in (compact, plain):
        lazy = LazyLexer()
        lazy.add_terminal(ga.grammar.grammar.Terminal("QUOTE", '"'))  # the start product reads both
        lazy.add_terminal(ga.grammar.grammar.Terminal.from_dfa("STAMP", dfa))
        lazy.add_terminal(ga.grammar.grammar.Terminal("WORD", "[a-z]+"))
        table = lazy._transitions
        starts = [lazy.add_start(s) for s in ([0, 1], [1], [1, 2], [2])]
        assert lazy._transitions is table  # rows were reserved past the block: never copied
        lexers.append((lazy, starts))
    assert "transitions" not in compact.__dict__  # never expanded
    (a, starts_a), (b, starts_b) = lexers
    assert starts_a == starts_b and a.num_states == b.num_states > 11_000
    assert np.array_equal(a.transitions, b.transitions)
    assert np.array_equal(a.accept_bits, b.accept_bits) and np.array_equal(a.alive_bits, b.alive_bits)
    assert a._transitions.shape[0] == min(a.max_states, RESERVED_ROWS)
    assert plain.matches(b'"2024-02-29T12:00:00Z"') and not plain.matches(b'"2023-02-29T12:00:00Z"')
