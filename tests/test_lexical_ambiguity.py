"""Text that keeps many longest-match decisions pending: the parser tracks as many
hypotheses and shadows as it needs (issue 20, item 5), verdicts equal lark's LALR parser
and masks equal a brute-force scan of the vocabulary; nothing raises.

Before, the parser had 16 hypothesis rows and 2 shadow slots and raised GrammarError
("lexically ambiguous") inside fill_next_token_bitmask beyond them.
"""

from __future__ import annotations

import random
from functools import lru_cache

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser import HYPOTHESIS_FIELDS, INITIAL_HYPOTHESES, IncrementalParser, build_parser_tables

from test_grammar_masks import assert_mask_equals_brute_force, gpt2_vocabulary

# LONG stays undecided across any run of a's and b's, and its bounded count makes every
# pending lexeme start a shadow in a state of its own; the right recursion gives every
# way of splitting the run a stack of its own.
PENDING = 'start: item start |\nitem: A | B | LONG\nA: "a"\nB: "b"\nLONG: /[ab]{2,40}c/\n%ignore " "\n'
# Shadows in equal states (an unbounded LONG) on stacks that reduce to equal ones: the
# hypotheses that differ only by where the pending lexeme started are merged.
MERGING = 'start: (A | LONG)+\nA: "a"\nLONG: /a+c/\n%ignore " "\n'


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


@lru_cache(maxsize=None)
def pair(text: str):
    return lark.Lark(text, parser="lalr"), IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text)))


def test_a_long_undecided_run_needs_more_rows_and_shadows_than_before():
    oracle, parser = pair(PENDING)
    data = b"b" * 30
    state, _ = parser.feed(parser.initial_state(), data)
    assert state.shape[0] > INITIAL_HYPOTHESES and state.shape[1] > HYPOTHESIS_FIELDS  # the old limits
    for text in ["b" * 30, "b" * 30 + "c", "ab" * 20 + "c", "ab" * 21 + "c", "b" * 29 + "cab", "b b" * 15 + "c"]:
        assert parser.accepts(text.encode()) == lark_accepts(oracle, text), text


PIECES = {PENDING: ["a", "b", "c", "ab", "bb", "bbbb", " "], MERGING: ["a", "c", "aa", "aaaa", " ", "ac"]}


@pytest.mark.parametrize("grammar", [PENDING, MERGING])
def test_verdicts_agree_with_lark(grammar):
    oracle, parser = pair(grammar)
    rng = random.Random(grammar)
    verdicts = set()
    for _ in range(1500):
        text = "".join(rng.choice(PIECES[grammar]) for _ in range(rng.randint(1, 30)))
        expected = lark_accepts(oracle, text)
        assert parser.accepts(text.encode()) == expected, text
        verdicts.add(expected)
    assert verdicts == {True, False}


def small_vocabulary() -> ga.Vocabulary:
    rng = random.Random(4)
    pieces = {"a", "b", "c", " "} | {"".join(rng.choice("aabbbc ") for _ in range(rng.randint(2, 6))) for _ in range(200)}
    tokens = sorted(p.encode() for p in pieces) + [b"<eos>"]
    return ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])


@pytest.mark.parametrize("grammar", [PENDING, MERGING])
def test_masks_equal_brute_force_on_ambiguous_prefixes(grammar):
    compiled = ga.compile(ga.Grammar.from_lark(grammar), small_vocabulary(), cache=False)
    rng = random.Random(7)
    checked = 0
    prefixes = [c * n for c in (b"a", b"b") for n in (1, 2, 17, 33, 39, 40)] + [b"ab" * 12, b"bab" * 9, b"b b" * 8]
    prefixes += ["".join(rng.choice(PIECES[grammar]) for _ in range(rng.randint(1, 40))).encode() for _ in range(25)]
    for prefix in prefixes:
        checked += assert_mask_equals_brute_force(compiled, prefix)
    assert checked >= 12


def test_masks_along_walks_through_ambiguous_text_never_raise():
    compiled = ga.compile(ga.Grammar.from_lark(PENDING), gpt2_vocabulary())
    vocab = compiled.vocabulary
    ab_tokens = [t for t in vocab.grammar_token_ids().tolist()
                 if vocab.token_bytes[t] and set(vocab.token_bytes[t]) <= set(b"ab")]
    rng = np.random.default_rng(3)
    for _ in range(3):
        matcher = compiled.matcher()
        text = b""
        for _ in range(20):  # runs of a's and b's only: nothing is ever decided
            allowed = set(matcher.allowed_token_ids().tolist())
            token = int(rng.choice([t for t in ab_tokens if t in allowed]))
            matcher.accept_token(token)
            text += vocab.token_bytes[token]
        assert_mask_equals_brute_force(compiled, text)
