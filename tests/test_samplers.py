"""Samplers against exact distributions computed by enumeration on toy models.

Toy problems: a TableModel over a few tokens with EOS forced at a fixed depth, so every
complete sequence can be listed with its model probability; the target is the model
conditioned on the grammar. Masked sampling's exact output law is enumerated too
(oracles/exact_laws.py).
"""

import math

import numpy as np
import pytest

import gramalign as ga
from gramalign.samplers import (ASApSampler, SamplingOptions, TableModel, awrs_step, constrained_distribution,
                                masked_sample, normaliser_estimate, smc_sample)

from oracles.exact_laws import EOS, distortion_case, empirical, in_grammar, kl, masked_exact, target_distribution


# -- masked ---------------------------------------------------------------------------------


def test_constrained_distribution_matches_direct_computation():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 10)) * 2
    logprobs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    allowed = rng.random((3, 10)) < 0.6
    allowed[:, 0] = True
    for options in [SamplingOptions(), SamplingOptions(temperature=0.5), SamplingOptions(top_k=2),
                    SamplingOptions(top_p=0.7), SamplingOptions(temperature=2.0, top_k=3, top_p=0.5),
                    SamplingOptions(temperature=0)]:
        got = constrained_distribution(logprobs, allowed, options)
        for row in range(3):
            ids = np.flatnonzero(allowed[row])
            if options.temperature == 0:
                expected = np.zeros(10)
                expected[ids[np.argmax(logprobs[row, ids])]] = 1
                assert np.array_equal(got[row], expected)
                continue
            scores = {int(i): math.exp(logprobs[row, i] / options.temperature) for i in ids}
            ranked = sorted(scores, key=lambda i: -scores[i])
            if options.top_k is not None:
                ranked = ranked[: options.top_k]
            if options.top_p is not None:
                total, kept = sum(scores[i] for i in ranked), []
                for i in ranked:
                    if sum(scores[j] for j in kept) / total >= options.top_p:
                        break
                    kept.append(i)
                ranked = kept
            expected = np.zeros(10)
            for i in ranked:
                expected[i] = scores[i]
            np.testing.assert_allclose(got[row], expected / expected.sum(), rtol=1e-12, atol=1e-15)


def test_masked_sampling_is_always_grammatical_and_has_model_logprob():
    _, compiled, model = distortion_case()
    for sample in masked_sample(model, compiled, num_samples=50, rng=1):
        assert sample.finished and in_grammar(compiled, sample.token_ids)
        prefix, expected = (), 0.0
        for token in sample.token_ids + (EOS,):
            expected += math.log(model.distribution(prefix)[token])
            prefix += (token,)
        assert sample.logprob == pytest.approx(expected, abs=1e-12)


def test_masked_sampling_frequencies_match_its_exact_law():
    _, compiled, model = distortion_case()
    exact = masked_exact(model, compiled)
    samples = masked_sample(model, compiled, num_samples=4000, rng=2)
    freq = empirical([s.token_ids for s in samples])
    for seq, p in exact.items():
        assert abs(freq.get(seq, 0) - p) < 4 * math.sqrt(p * (1 - p) / 4000) + 1e-3, seq


# -- AWRS: exact enumeration of rejection trajectories -----------------------------------------


def awrs_trajectories(probs, allowed):
    """(probability, token, Z_hat) for every AWRS trajectory, mirroring the algorithm:
    draw from the pool (rejected tokens removed), stop at the second acceptance."""
    out = []

    def walk(prob, rejected, token, pools, rejecteds):
        rejected_mass = sum(probs[r] for r in rejected)
        pool_mass = 1.0 - rejected_mass
        for x in range(len(probs)):
            if x in rejected or probs[x] == 0:
                continue
            q = probs[x] / pool_mass
            new_pools, new_rejecteds = pools + [pool_mass], rejecteds + [rejected_mass]
            if allowed[x]:
                if token is None:
                    walk(prob * q, rejected, x, new_pools, new_rejecteds)
                else:
                    out.append((prob * q, token, normaliser_estimate(new_pools, new_rejecteds)))
            else:
                walk(prob * q, rejected | {x}, token, new_pools, new_rejecteds)

    walk(1.0, frozenset(), None, [], [])
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_awrs_estimate_is_exactly_unbiased_and_token_law_is_masked_law(seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(6, 0.5))
    probs[rng.integers(6)] *= 1e-4  # one nearly impossible token
    probs /= probs.sum()
    allowed = np.array([True, False, True, False, False, seed == 2])
    z = probs[allowed].sum()
    trajectories = awrs_trajectories(probs, allowed)
    assert sum(p for p, _, _ in trajectories) == pytest.approx(1.0, abs=1e-12)
    assert sum(p * zh for p, _, zh in trajectories) == pytest.approx(z, abs=1e-12)
    for token in np.flatnonzero(allowed):
        mass = sum(p for p, t, _ in trajectories if t == token)
        assert mass == pytest.approx(probs[token] / z, abs=1e-12)  # one step of masked sampling
        conditional = sum(p * zh for p, t, zh in trajectories if t == token) / mass
        assert conditional == pytest.approx(z, abs=1e-12)  # properly weighted: E[Z_hat | token] = Z


def test_awrs_estimate_is_one_when_everything_is_allowed():
    assert normaliser_estimate([1.0, 1.0], [0.0, 0.0]) == pytest.approx(1.0, abs=1e-14)


def test_awrs_sampled_weights_average_to_normaliser():
    """The implementation (not the enumeration) against Z, with a 4-sigma tolerance."""
    vocab = ga.Vocabulary.from_token_bytes([b"x", b"y", b"z", b"w", b"v", b"</s>"], eos_token_ids=[5])
    compiled = ga.compile(ga.Grammar.from_regex(r"[xv]w*"), vocab)
    matcher = compiled.matcher()
    probs = np.array([0.02, 0.5, 0.3, 0.1, 0.005, 0.075])  # allowed now: x, v
    z = 0.025
    rng = np.random.default_rng(3)
    steps = [awrs_step(np.log(probs), matcher, rng) for _ in range(4000)]
    estimates = np.exp([s.log_weight for s in steps])
    assert abs(estimates.mean() - z) < 4 * estimates.std() / math.sqrt(len(steps))
    tokens = np.array([s.token for s in steps])
    assert set(tokens.tolist()) <= {0, 4}
    assert matcher.num_accepted_tokens == 0  # checks never change the matcher
    assert all(s.checks <= 6 for s in steps)


# -- the distortion case: ASAp and SMC reach what masked sampling cannot --------------------------


def test_masked_distortion_and_asap_converges():
    _, compiled, model = distortion_case()
    target, _ = target_distribution(model, compiled)
    masked_kl = kl(masked_exact(model, compiled), target)
    threshold = 0.05
    assert masked_kl > 5 * threshold  # the case shows the distortion, exactly
    sampler = ASApSampler(model, compiled)
    rng = np.random.default_rng(4)
    samples = [sampler.sample(rng=rng).token_ids for _ in range(3000)]
    assert all(in_grammar(compiled, s) for s in samples)
    assert kl(empirical(samples[1000:]), target) < threshold
    assert sampler.grammatical_mass_bound() >= target_distribution(model, compiled)[1] - 1e-12


def test_smc_with_awrs_weights_converges():
    _, compiled, model = distortion_case()
    target, z_grammar = target_distribution(model, compiled)
    masked_kl = kl(masked_exact(model, compiled), target)
    rng = np.random.default_rng(5)
    seqs, weights, normalisers = [], [], []
    for _ in range(300):
        result = smc_sample(model, compiled, num_particles=8, rng=rng)
        for particle in result.particles:
            assert particle.finished and in_grammar(compiled, particle.token_ids)
            seqs.append(particle.token_ids)
            weights.append(math.exp(particle.log_weight))
        normalisers.append(math.exp(result.log_normaliser))
    assert kl(empirical(seqs, np.array(weights)), target) < 0.05 < masked_kl
    normalisers = np.array(normalisers)
    assert abs(normalisers.mean() - z_grammar) < 4 * normalisers.std() / math.sqrt(len(normalisers))


@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_smc_normaliser_is_unbiased_without_and_with_resampling(threshold):
    _, compiled, model = distortion_case()
    _, z_grammar = target_distribution(model, compiled)
    rng = np.random.default_rng(6)
    results = [smc_sample(model, compiled, num_particles=4, ess_threshold=threshold, rng=rng) for _ in range(400)]
    estimates = np.exp([r.log_normaliser for r in results])
    assert abs(estimates.mean() - z_grammar) < 4 * estimates.std() / math.sqrt(len(estimates))
    if threshold == 1.0:
        assert sum(r.resampling_steps for r in results) > 0


def test_asap_trie_round_trip_gives_identical_samples(tmp_path):
    _, compiled, model = distortion_case()
    sampler = ASApSampler(model, compiled)
    for seed in range(40):
        sampler.sample(rng=seed)
    path = tmp_path / "trie.json"
    sampler.save(path)
    loaded = ASApSampler.load(path, model, compiled)
    assert loaded.num_nodes == sampler.num_nodes
    assert [loaded.sample(rng=100 + i) for i in range(30)] == [sampler.sample(rng=100 + i) for i in range(30)]
    path.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not an ASAp trie"):
        ASApSampler.load(path, model, compiled)


def test_model_vocabulary_mismatch_is_a_clear_error():
    _, compiled, _ = distortion_case()
    with pytest.raises(ValueError, match="compiled for a vocabulary of 4"):
        masked_sample(TableModel(5, {}, default=[0, 0, 0, 0, 1]), compiled)


def test_dead_ends_raise_clear_errors():
    _, compiled, _ = distortion_case()
    only_c = TableModel(4, {}, default=[0, 0, 1, 0])  # 'c' first is never grammatical
    with pytest.raises(ga.SamplingError, match="every allowed token has probability 0"):
        masked_sample(only_c, compiled)
    step = awrs_step(np.array([-np.inf, -np.inf, 0.0, -np.inf]), compiled.matcher(), np.random.default_rng(0))
    assert step.token is None and step.log_weight == -math.inf and step.checks == 1
    with pytest.raises(ga.ParticlesExhausted):
        smc_sample(only_c, compiled, num_particles=3, rng=0)
    with pytest.raises(ga.SamplingError, match="probability zero to every string"):
        ASApSampler(only_c, compiled).sample(rng=0)
    with pytest.raises(ga.ModelError, match=r"shape \(3,\), expected \(4,\)"):
        TableModel(4, {}, default=[0.5, 0.5, 0]).next_token_logprobs([[]])


def test_smc_stops_within_its_check_budget():
    """max_checks ends the run after the step that reaches it, flagged; the particles are
    still grammatical prefixes, and without a budget the same seed runs to the end."""
    _, compiled, model = distortion_case()
    full = smc_sample(model, compiled, num_particles=8, rng=11)
    assert not full.budget_exhausted and all(p.finished for p in full.particles)
    budget = max(1, full.constraint_checks // 3)
    cut = smc_sample(model, compiled, num_particles=8, rng=11, max_checks=budget)
    assert cut.budget_exhausted and budget <= cut.constraint_checks < full.constraint_checks
    for particle in cut.particles:
        matcher = compiled.matcher()
        for token in particle.token_ids:
            matcher.accept_token(token)  # raises if not a grammatical prefix
    with pytest.raises(ValueError, match="max_checks"):
        smc_sample(model, compiled, max_checks=0)
