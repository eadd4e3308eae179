"""Lark grammars read as lark's Earley parser reads them (issue 34, item 3).

``Grammar.from_lark(text, parser="earley", lexer=...)`` must accept exactly what
``lark.Lark(text, parser="earley", lexer=...)`` accepts: lark itself is the oracle, on every
string over each grammar's alphabet up to a length and on longer random ones. The grammars
are the shapes where Earley's lexing differs from LALR's: terminals that overlap, a
terminal's own longest match against every split (``A: /a+/`` twice in a row: "aa" is one
``A`` to the dynamic lexer, two to the complete one), keywords against names, ambiguous
rules, empty rules, and ignored whitespace. Masks are checked against a brute-force scan of
a small vocabulary (:mod:`oracles.brute_force_masks`).
"""

from __future__ import annotations

import itertools
import random

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from oracles.brute_force_masks import assert_mask_equals_brute_force

LEXERS = ("dynamic", "dynamic_complete")
EMPTY = {("greedy-twice", "dynamic")}  # the greedy A leaves no "a" for the second: no sentence at all

GRAMMARS = {
    # name: (grammar, alphabet of the exhaustive texts, longest exhaustive text)
    "greedy-twice": ('start: A A\nA: /a+/\n', "ab", 6),
    "greedy-then-other": ('start: A B\nA: /a+/\nB: /a*b/\n', "ab", 6),
    "names-and-space": ('start: NAME+\nNAME: /[a-c]+/\n%ignore " "\n', "ab ", 5),
    "keyword-or-name": ('start: stmt+\nstmt: "if" NAME | NAME "=" NAME\nNAME: /[a-z]+/\n%ignore /[ ]+/\n',
                        "if =", 6),
    "ambiguous-sum": ('start: e\ne: e "+" e | NUMBER\nNUMBER: /[0-9]+/\n%ignore " "\n', "12+ ", 6),
    "empty-and-optional": ('start: a b? c*\na: "x" | \nb: "y" "y"?\nc: "z" | "zz"\n', "xyz", 5),
    "overlapping-literals": ('start: x | y | z\nx: "a" "b"\ny: AB\nz: "a" B\nAB: "ab"\nB: /b+/\n', "ab", 5),
    "not-lalr": ('start: p\np: "a" p "a" | "a"\n', "a", 7),
    "nested-lists": ('start: "[" [item ("," item)*] "]"\n?item: start | WORD\nWORD: /[a-z]+/\n', "[],a", 6),
}


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


def texts_of(alphabet: str, longest: int, rng: random.Random, extra: int = 200) -> list[str]:
    texts = ["".join(t) for n in range(longest + 1) for t in itertools.product(alphabet, repeat=n)]
    for _ in range(extra):  # longer ones, drawn
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(longest + 1, 3 * longest))))
    return texts


@pytest.mark.parametrize("lexer", LEXERS)
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_verdicts_equal_larks(name, lexer):
    text, alphabet, longest = GRAMMARS[name]
    oracle = lark.Lark(text, parser="earley", lexer=lexer)
    grammar = ga.Grammar.from_lark(text, parser="earley", lexer=lexer)
    assert grammar.generalized and grammar.every_split
    parser = IncrementalParser(build_parser_tables(grammar))
    rng = random.Random(f"{name}:{lexer}")
    accepted = 0
    for sample in texts_of(alphabet, longest, rng):
        expected = lark_accepts(oracle, sample)
        accepted += expected
        assert parser.accepts(sample.encode()) == expected, (name, lexer, sample)
    assert accepted >= 3 or (name, lexer) in EMPTY  # the sample reaches into the language


def test_the_two_lexers_differ_where_lark_says():
    text = GRAMMARS["greedy-twice"][0]
    dynamic = IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text, parser="earley")))
    complete = IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text, parser="earley",
                                                                          lexer="dynamic_complete")))
    # "aa" is one greedy A (then nothing is left for the second): refused; split in two: accepted
    assert not dynamic.accepts(b"aa") and complete.accepts(b"aa")
    assert not lark_accepts(lark.Lark(text, parser="earley"), "aa")
    assert lark_accepts(lark.Lark(text, parser="earley", lexer="dynamic_complete"), "aa")


def small_vocabulary(alphabet: str, rng: random.Random) -> ga.Vocabulary:
    pieces = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(60)} | set(alphabet))
    pieces = [p.encode() for p in pieces] + [b"</s>"]
    return ga.Vocabulary.from_token_bytes(pieces, eos_token_ids=[len(pieces) - 1])


@pytest.mark.parametrize("lexer", LEXERS)
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_equal_brute_force(name, lexer):
    if (name, lexer) in EMPTY:
        pytest.skip("no sentence to take prefixes of")
    text, alphabet, longest = GRAMMARS[name]
    oracle = lark.Lark(text, parser="earley", lexer=lexer)
    rng = random.Random(f"masks:{name}:{lexer}")
    compiled = ga.compile(ga.Grammar.from_lark(text, parser="earley", lexer=lexer), small_vocabulary(alphabet, rng),
                          cache=False)
    sentences = [t for t in texts_of(alphabet, longest, rng, extra=400) if lark_accepts(oracle, t)]
    checked = 0
    for sentence in rng.sample(sentences, min(12, len(sentences))):
        for cut in sorted({0, len(sentence), rng.randint(0, len(sentence))}):
            checked += assert_mask_equals_brute_force(compiled, sentence[:cut].encode())
    assert checked >= 6


def test_random_walks_of_the_masks_are_sentences_lark_reads():
    """Text drawn from the masks (with the end where the mask allows it) is a sentence."""
    for name in ("keyword-or-name", "ambiguous-sum", "names-and-space"):
        text, alphabet, _ = GRAMMARS[name]
        for lexer in LEXERS:
            oracle = lark.Lark(text, parser="earley", lexer=lexer)
            rng = random.Random(f"walk:{name}:{lexer}")
            vocab = small_vocabulary(alphabet, rng)
            compiled = ga.compile(ga.Grammar.from_lark(text, parser="earley", lexer=lexer), vocab, cache=False)
            eos = vocab.eos_token_ids[0]
            for _ in range(10):
                matcher = compiled.matcher()
                out = b""
                for _ in range(12):
                    mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
                    matcher.fill_next_token_bitmask(mask, 0)
                    allowed = [t for t in range(vocab.size) if (int(mask[0, t >> 5]) >> (t & 31)) & 1]
                    assert allowed, (name, lexer, out)  # never a dead end
                    token = rng.choice(allowed)
                    if token == eos:
                        break
                    matcher.accept_token(token)
                    out += vocab.token_bytes[token]
                if matcher.can_terminate():
                    assert lark_accepts(oracle, out.decode()), (name, lexer, out)


def test_clear_errors():
    with pytest.raises(ga.GrammarError, match="parser='lalr'"):
        ga.Grammar.from_lark('start: A\nA: /a(?=b)/\n', parser="earley")
    with pytest.raises(ga.GrammarError, match="lexer='basic'"):
        ga.Grammar.from_lark('start: "a"\n', parser="earley", lexer="basic")
    with pytest.raises(ga.GrammarError, match="parser='cyk'"):
        ga.Grammar.from_lark('start: "a"\n', parser="cyk")
    with pytest.raises(ga.GrammarError, match="indentation"):
        ga.Grammar.from_lark('start: "a"\n', parser="earley", indentation=ga.Indentation())


def test_the_lalr_refusal_names_the_earley_parser():
    text = 'start: a | b\na: "x" "y"?\nb: "x" "z"?\n'  # "x" alone: reduce to a or to b?
    with pytest.raises(ga.GrammarError, match='parser="earley"'):
        ga.Grammar.from_lark(text)
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text, parser="earley")))
    oracle = lark.Lark(text, parser="earley")
    for sample in ["x", "xy", "xz", "xyz", "y", ""]:
        assert parser.accepts(sample.encode()) == lark_accepts(oracle, sample), sample
