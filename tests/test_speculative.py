"""Speculative sampling under a grammar has the law of masked sampling from the target.

Toy models over a 4-token vocabulary end by depth 4, so every output is enumerated: the
exact law of masked sampling (product of masked target probabilities), the exact law of
the speculative rounds (every draft, every keep/refuse branch, by the textbook rule), and
the empirical law of ``speculative_sample`` are compared.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np
import pytest

import gramalign as ga
from gramalign.samplers import SamplingOptions, TableModel, constrained_distribution, masked_sample
from gramalign.samplers.speculative import speculative_sample

EOS, V, DEPTH = 3, 4, 4
VOCAB = ga.Vocabulary.from_token_bytes([b"a", b"b", b"c", b""], eos_token_ids=[EOS], special_token_ids=[EOS])
COMPILED = ga.compile(ga.Grammar.from_regex("(a|b)[abc]{0,3}"), VOCAB)


def toy_model(seed: int) -> TableModel:
    rng = np.random.default_rng(seed)

    def distribution(prefix):
        if len(prefix) >= DEPTH:
            return [0, 0, 0, 1]
        return rng.dirichlet(np.full(V, 0.7))  # called once per prefix (TableModel caches)

    return TableModel(V, distribution)


TARGET, DRAFT, DRAFT_2 = toy_model(1), toy_model(2), toy_model(3)


@lru_cache(maxsize=None)
def allowed(prefix: tuple[int, ...]) -> np.ndarray:
    matcher = COMPILED.matcher()
    for token in prefix:
        matcher.accept_token(token)
    mask = np.zeros(V, dtype=bool)
    mask[matcher.allowed_token_ids()] = True
    return mask


def masked_probs(model: TableModel, prefix: tuple[int, ...], options: SamplingOptions) -> np.ndarray:
    return constrained_distribution(model.next_token_logprobs([list(prefix)]), allowed(prefix)[None, :], options)[0]


def masked_law(options: SamplingOptions) -> dict[tuple[int, ...], float]:
    law: dict[tuple[int, ...], float] = {}

    def visit(prefix, mass):
        for token, p in enumerate(masked_probs(TARGET, prefix, options)):
            if p == 0:
                continue
            if token == EOS:
                law[prefix] = law.get(prefix, 0.0) + mass * p
            else:
                visit(prefix + (token,), mass * p)

    visit((), 1.0)
    return law


def speculative_law(draft: TableModel, k: int, options: SamplingOptions) -> dict[tuple[int, ...], float]:
    """The output law of speculative rounds by enumeration (Leviathan et al.'s rule)."""
    law: dict[tuple[int, ...], float] = {}

    def finish(prefix, emitted, mass):
        for token in emitted:
            if token == EOS:
                law[prefix] = law.get(prefix, 0.0) + mass
                return
            prefix = prefix + (token,)
        round_from(prefix, mass)

    def round_from(prefix, mass):
        def drafts(drafted, q_mass):
            if len(drafted) == k or (drafted and drafted[-1] == EOS):
                yield drafted, q_mass
                return
            for token, q in enumerate(masked_probs(draft, prefix + tuple(drafted), options)):
                if q > 0:
                    yield from drafts(drafted + [token], q_mass * q)

        for drafted, q_mass in drafts([], mass):  # q_mass includes the mass reaching this round
            keep_mass = q_mass
            for i, token in enumerate(drafted):
                context = prefix + tuple(drafted[:i])
                p, q = masked_probs(TARGET, context, options), masked_probs(draft, context, options)
                keep = min(1.0, p[token] / q[token])
                if keep < 1:
                    residual = np.maximum(p - q, 0)
                    for y, r in enumerate(residual / residual.sum()):
                        if r > 0:
                            finish(prefix, drafted[:i] + [y], keep_mass * (1 - keep) * r)
                keep_mass *= keep
            if drafted[-1] == EOS:
                finish(prefix, drafted, keep_mass)
            else:
                for y, p in enumerate(masked_probs(TARGET, prefix + tuple(drafted), options)):
                    if p > 0:
                        finish(prefix, drafted + [y], keep_mass * p)

    round_from((), 1.0)
    return law


OPTIONS = [SamplingOptions(), SamplingOptions(temperature=0.7, top_k=2), SamplingOptions(top_p=0.8)]


@pytest.mark.parametrize("options", OPTIONS, ids=["plain", "temp-topk", "topp"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_speculative_rounds_have_the_masked_law_exactly(options, k):
    expected = masked_law(options)
    got = speculative_law(DRAFT, k, options)
    assert {output for output, mass in got.items() if mass > 0} <= set(expected)
    for output, p in expected.items():
        assert abs(got.get(output, 0.0) - p) < 1e-12, output
    assert abs(sum(got.values()) - 1) < 1e-12


def test_speculative_sample_draws_from_the_masked_law():
    options = SamplingOptions()
    expected = masked_law(options)
    runs = 3000
    counts = Counter()
    proposed = accepted = 0
    for seed in range(runs):
        result = speculative_sample(TARGET, DRAFT_2, COMPILED, num_draft_tokens=2, max_new_tokens=10,
                                    options=options, rng=seed)
        assert result.sample.finished
        counts[result.sample.token_ids] += 1
        proposed, accepted = proposed + result.proposed, accepted + result.accepted
    assert set(counts) <= set(expected)
    for output, p in expected.items():  # five standard deviations, per outcome
        assert abs(counts[output] / runs - p) <= 5 * np.sqrt(p * (1 - p) / runs) + 1e-9, output
    assert 0 < accepted < proposed


@pytest.mark.parametrize("draft", [DRAFT, DRAFT_2, TARGET], ids=["draft", "draft2", "self"])
def test_greedy_speculative_output_is_the_greedy_masked_output(draft):
    greedy = SamplingOptions(temperature=0)
    plain = masked_sample(TARGET, COMPILED, options=greedy, max_new_tokens=10, rng=0)[0]
    result = speculative_sample(TARGET, draft, COMPILED, num_draft_tokens=3, max_new_tokens=10, options=greedy,
                                rng=0)
    assert result.sample.token_ids == plain.token_ids and result.sample.finished
    assert abs(result.sample.logprob - plain.logprob) < 1e-12
    if draft is TARGET:
        assert result.accepted == result.proposed  # a draft equal to the target is never refused
