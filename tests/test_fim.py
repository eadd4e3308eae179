"""Fill-in-the-middle sampling (samplers/fim.py) against an exact law by enumeration.

The oracle decides the allowed set of each step by brute force (``re.fullmatch`` of prefix,
middle, token, every filler up to 6 bytes, suffix), independent of gramalign's infilling
check; the law of a whole middle is the product of the model's probabilities restricted to
those sets and renormalised. Sampled middles must follow it, and every finished one must
put prefix and suffix into one sentence (lark's parser for a context-free grammar).
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.samplers.fim import fim_sample

TOKENS = [b"a", b"b", b"c", b"ab", b"ca", b"<eos>"]
EOS = 5
PATTERN = "(ab|c){0,4}"  # bounded: a suffix leaves room for few units, so it rules out tokens
FILLERS = [b""] + [bytes(p) for n in range(1, 7) for p in itertools.product(b"abc", repeat=n)]


def vocab():
    return ga.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[EOS])


def table_model(seed: int) -> ga.TableModel:
    rng = random.Random(seed)
    rows: dict = {}

    def distribution(prefix):
        if prefix not in rows:
            rows[prefix] = [rng.random() + 0.05 for _ in TOKENS]
        return rows[prefix]
    return ga.TableModel(len(TOKENS), distribution)


def allowed(prefix: bytes, middle: bytes, suffix: bytes) -> set[int]:
    """The tokens a middle may take next, by brute force: EOS when prefix + middle + suffix
    matches, another token when some filler of up to 6 bytes after it meets the suffix."""
    out = set()
    for token, data in enumerate(TOKENS):
        if token == EOS:
            ok = re.fullmatch(PATTERN.encode(), prefix + middle + suffix) is not None
        else:
            ok = any(re.fullmatch(PATTERN.encode(), prefix + middle + data + f + suffix) for f in FILLERS)
        if ok:
            out.add(token)
    return out


def exact_law(model, prefix: bytes, suffix: bytes, max_tokens: int) -> dict:
    """P(token sequence, finished) of the masked law, by enumeration."""
    law: dict = {}

    def walk(tokens: tuple, middle: bytes, p: float):
        if len(tokens) == max_tokens:
            law[(tokens, False)] = law.get((tokens, False), 0.0) + p
            return
        probs = model.distribution(tokens)
        ok = allowed(prefix, middle, suffix)
        z = sum(probs[t] for t in ok)
        for t in ok:
            q = p * probs[t] / z
            if t == EOS:
                law[(tokens, True)] = law.get((tokens, True), 0.0) + q
            else:
                walk(tokens + (t,), middle + TOKENS[t], q)
    walk((), b"", 1.0)
    return law


# a mid-unit prefix and a two-unit suffix (the middle is b and at most one unit), three units and
# one (at most one unit in between), none (at most four units)
@pytest.mark.parametrize("prefix, suffix", [(b"a", b"cab"), (b"cab", b"c"), (b"", b"")])
def test_sampled_middles_follow_the_masked_law(prefix, suffix):
    compiled = ga.compile(ga.Grammar.from_regex(PATTERN), vocab())
    model = table_model(7)
    max_tokens = 3
    law = exact_law(model, prefix, suffix, max_tokens)
    assert abs(sum(law.values()) - 1) < 1e-9
    checker = ga.InfillChecker(compiled)
    runs = 3000
    seen = Counter()
    rng = np.random.default_rng(11)
    for _ in range(runs):
        result = fim_sample(model, compiled, prefix, suffix, max_new_tokens=max_tokens, rng=rng, checker=checker)
        seen[(result.token_ids, result.finished)] += 1
        if result.finished:
            assert re.fullmatch(PATTERN.encode(), prefix + result.middle + suffix), result
        assert result.undecided == 0
    assert set(seen) <= set(law)  # nothing the law gives probability 0
    total_variation = sum(abs(seen[k] / runs - p) for k, p in law.items()) / 2
    assert total_variation < 0.08, total_variation  # sampling noise alone is about 0.04 here
    for key, p in law.items():  # and each outcome within 5 standard deviations of its count
        assert abs(seen[key] - runs * p) <= 5 * (runs * p * (1 - p)) ** 0.5 + 1e-9, (key, seen[key], runs * p)


def test_a_context_free_middle_closes_what_the_prefix_opened():
    text = 'start: "(" start ")" start | "x"\n'
    oracle = lark.Lark(text, parser="lalr")
    tokens = [b"(", b")", b"x", b"()", b"x)", b"<eos>"]
    compiled = ga.compile(ga.Grammar.from_lark(text), ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[5]))
    model = ga.TableModel(6, lambda prefix: [0.5, 2.0, 2.0, 1.0, 2.0, 3.0])  # closing is likelier
    checker = ga.InfillChecker(compiled)
    finished = 0
    for seed in range(40):
        result = fim_sample(model, compiled, b"((", b")x", max_new_tokens=20, rng=seed, checker=checker)
        if result.finished:
            finished += 1
            oracle.parse((b"((" + result.middle + b")x").decode())  # raises if not a sentence
    assert finished >= 30


def test_impossible_prefixes_and_suffixes_are_clear_errors():
    compiled = ga.compile(ga.Grammar.from_regex(PATTERN), vocab())
    model = table_model(1)
    with pytest.raises(ga.InfillError, match="not the beginning of any sentence"):
        fim_sample(model, compiled, b"b", b"", rng=0)
    with pytest.raises(ga.InfillError, match="no middle puts the prefix"):
        fim_sample(model, compiled, b"ab", b"abcabc", rng=0)  # five units at least
