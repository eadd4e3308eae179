"""Masks of random grammars against a brute-force scan of the vocabulary.

Random small grammars mix terminals that overlap on purpose (prefixes of each other,
keywords inside identifier classes, repeated characters, ignored separators), which is
where contextual longest-match lexing, shadows and the mask store's classification are
most delicate. The oracle feeds each token to the incremental parser the slow way; every
step of random walks through the masks must agree with it exactly.

Some random grammars keep many longest-match lookaheads pending (``/[ab]+c/`` stays
undecided across any run of a's and b's that other terminals split): masks must still be
exact there, and never raise.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import gramalign as ga
from gramalign.parsing import IncrementalParser
from gramalign.masking.bitmask import unpack_bitmask_row

TERMINAL_POOL = [
    ('"a"', None), ('"ab"', None), ('"abc"', None), ('"b"', None), ('"ba"', None), ('"c"', None),
    ("/a+/", "AS"), ("/[ab]+c/", "ABC"), ("/[a-c]+/", "WORD"), ("/b[0-9]*/", "BNUM"), ("/[0-9]+/", "NUM"),
    ("/[0-9]+\\.[0-9]+/", "DEC"), ('"0"', None), ('"."', None), ('"-"', None), ("/--[^\\n]*\\n/", "COMMENT"),
]
ALPHABET = "abc0123.- \n"


def random_grammar(rng: random.Random) -> str:
    chosen = rng.sample(TERMINAL_POOL, rng.randint(3, 7))
    symbols = []
    definitions = []
    for pattern, name in chosen:
        if name is None:
            symbols.append(pattern)
        else:
            symbols.append(name)
            definitions.append(f"{name}: {pattern}")
    rules = ["start: item+", "item: " + " | ".join(
        " ".join(rng.choice(symbols + ["group"]) for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(2, 4))),
        "group: " + " ".join(rng.sample(symbols, min(2, len(symbols)))) + " item?"]
    if rng.random() < 0.7:
        definitions.append('%ignore " "')
    if rng.random() < 0.4:
        definitions.append("%ignore /\\n/")
    return "\n".join(rules + definitions) + "\n"


def vocabulary(rng: random.Random) -> ga.Vocabulary:
    pieces = {c for c in ALPHABET}
    while len(pieces) < 160:
        pieces.add("".join(rng.choice(ALPHABET) for _ in range(rng.randint(2, 5))))
    tokens = sorted(p.encode() for p in pieces) + [b"<eos>"]
    return ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])


def brute_force(compiled: ga.CompiledGrammar, data: bytes) -> np.ndarray:
    parser = IncrementalParser(compiled.store.tables)
    state, _ = parser.feed(parser.initial_state(), data)
    vocab = compiled.vocabulary
    expected = np.zeros(vocab.size, dtype=bool)
    for token in vocab.grammar_token_ids().tolist():
        expected[token] = parser.feed(state, vocab.token_bytes[token])[0] is not None
    expected[vocab.eos_token_ids[0]] = parser.can_end(state)
    return expected


@pytest.mark.parametrize("seed", range(60))
def test_random_grammar_masks_equal_brute_force(seed):
    rng = random.Random(seed)
    text = random_grammar(rng)
    try:
        grammar = ga.Grammar.from_lark(text)
    except ga.GrammarError:
        pytest.skip("this random grammar is not LALR(1)")
    vocab = vocabulary(rng)
    compiled = ga.compile(grammar, vocab, cache=False)
    eos = vocab.eos_token_ids[0]
    steps = 0
    for _ in range(4):
        matcher = compiled.matcher()
        data = b""
        for _ in range(12):
            mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
            matcher.fill_next_token_bitmask(mask, 0)
            got = unpack_bitmask_row(mask[0], vocab.size)
            expected = brute_force(compiled, data)
            assert np.array_equal(got, expected), (text, data, [vocab.token_bytes[t] for t in
                                                              np.flatnonzero(got != expected)])
            steps += 1
            choices = [t for t in np.flatnonzero(got).tolist() if t != eos]
            if not choices:
                break
            token = rng.choice(choices)
            matcher.accept_token(token)
            data += vocab.token_bytes[token]
    assert steps >= 4
