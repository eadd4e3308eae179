"""Adaptive weighted rejection sampling (AWRS): one exact constrained token per step,
from single-token grammar checks, with an unbiased estimate of the local normaliser.

At a step the model gives ``p`` over the vocabulary and the grammar allows a set ``A``;
the constrained next-token distribution is ``p(v) / Z`` on ``A`` with ``Z = p(A)``. AWRS
never builds the mask: it draws tokens from ``p``, checks each with
``GrammarMatcher.is_token_allowed`` and removes rejected ones from the pool, so a token
is checked at most once per step.

Why the estimator is unbiased (our own construction; Lipkin et al. 2025 use a related
two-loop scheme). Picture an i.i.d. stream ``y_1, y_2, ...`` of draws from ``p`` *with*
replacement. Haldane's negative-binomial result: if ``N`` is the index of the second draw
that lands in ``A``, then ``P(N = n) = (n-1) Z^2 (1-Z)^(n-2)`` and
``E[1/(N-1)] = sum_{n>=2} Z^2 (1-Z)^(n-2) = Z``. The first draw in ``A`` is distributed
``p(.|A)``, independent of ``N``. AWRS is that stream with the draws that land on an
already-rejected token skipped: between two real draws the rejected set ``R_j`` is fixed,
so the next real draw has law ``p`` restricted to ``V \\ R_j`` and the number of skipped
draws before it is geometric, ``P(G_j = g) = (1-m_j) m_j^g`` with ``m_j = p(R_j)``. Given
the real trajectory the ``G_j`` are independent (the joint law factorises as
``prod_j p(x_j) m_j^(G_j)``). The real process stops at the second acceptance (the first
is the returned token; the accepted token stays in the pool and drawing it again needs
no check). We never simulate the skipped draws; we return their conditional expectation
(Rao-Blackwellisation, which keeps unbiasedness and lowers variance): with ``n`` real
draws and ``N = n + sum_j G_j``, using ``1/(N-1) = int_0^1 t^(N-2) dt`` and the generating
function ``E[t^(1+G_j)] = t (1-m_j) / (1 - m_j t)``,

    Z_hat = E[1/(N-1) | trajectory] = int_0^1 (1-u)^(n-2) prod_j 1 / (1 + u m_j / (1-m_j)) du.

So ``E[Z_hat | token = a] = Z`` for every allowed ``a``: the pair (token, Z_hat) is a
properly weighted sample, which is what sequential Monte Carlo needs. When every token
is allowed, ``Z_hat = 1`` exactly. The integral is computed by Gauss-Legendre on
geometrically growing panels, accurate to about 1e-14 relative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from ..masking.matcher import GrammarMatcher
from .masked import check_model_fits
from .model import LanguageModel, checked_logprobs
from .result import Sample

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(24)


@dataclass(frozen=True)
class AWRSStep:
    """One AWRS step: the token (None when every token the model can produce is rejected),
    the log of the normaliser estimate (``-inf`` then), the constraint checks made, and the
    pool masses ``s_j = 1 - m_j`` and rejected masses ``m_j`` before each real draw."""

    token: "int | None"
    log_weight: float
    checks: int
    pool_masses: tuple[float, ...]
    rejected_masses: tuple[float, ...]


def normaliser_estimate(pool_masses: Sequence[float], rejected_masses: Sequence[float]) -> float:
    """``int_0^1 (1-u)^(n-2) prod_j 1/(1 + u m_j/s_j) du`` for the real draws of one step.

    ``pool_masses[j]`` is ``s_j``, the model probability still in the pool before draw
    ``j`` and ``rejected_masses[j]`` is ``m_j = 1 - s_j`` (passed separately so that
    neither loses precision to the other). Needs ``n >= 2`` draws.
    """
    s = np.asarray(pool_masses, dtype=np.float64)
    m = np.asarray(rejected_masses, dtype=np.float64)
    n = len(s)
    if n < 2 or len(m) != n:
        raise ValueError(f"need at least two draws with both masses, got {n} and {len(m)}")
    ratios, counts = np.unique(m[m > 0] / s[m > 0], return_counts=True)
    smallest_scale = 1.0 / ratios.max() if len(ratios) else 1.0
    start = min(smallest_scale, 1.0 / n, 1.0) * 1e-3
    edges = [0.0]
    edge = start
    while edge < 1.0:
        edges.append(edge)
        edge *= 2.0
    edges.append(1.0)
    edges = np.asarray(edges)
    lows, highs = edges[:-1], edges[1:]
    half = (highs - lows)[:, None] / 2
    u = (lows + highs)[:, None] / 2 + half * _NODES[None, :]
    log_f = (n - 2) * np.log1p(-u)
    if len(ratios):
        log_f -= np.log1p(u[..., None] * ratios).dot(counts)
    return float(np.sum(half * _WEIGHTS[None, :] * np.exp(log_f)))


def awrs_step(logprobs: np.ndarray, matcher: GrammarMatcher, rng: np.random.Generator) -> AWRSStep:
    """Draw one constrained token from ``exp(logprobs)`` with single-token checks (never a mask).

    The checks run with automatic garbage collection paused (:mod:`gramalign.masking.gc_guard`).
    """
    with gc_paused:
        return _awrs_step(logprobs, matcher, rng)


def _awrs_step(logprobs: np.ndarray, matcher: GrammarMatcher, rng: np.random.Generator) -> AWRSStep:
    probs = np.exp(np.asarray(logprobs, dtype=np.float64))
    total = probs.sum()
    cumulative = np.cumsum(probs)
    positive_left = int(np.count_nonzero(probs))
    rejected: set[int] = set()
    rejected_mass = 0.0
    pool_mass = total
    explicit: "np.ndarray | None" = None  # cdf of the pool as of its last rebuild
    accepted: set[int] = set()
    token = None
    checks = 0
    pools: list[float] = []
    rejecteds: list[float] = []
    while True:
        if positive_left == 0:  # only in the first phase: every possible token is forbidden
            return AWRSStep(None, float("-inf"), checks, tuple(pools), tuple(rejecteds))
        draw = _draw(rng, cumulative, explicit, rejected, probs)
        pools.append(pool_mass / total)
        rejecteds.append(rejected_mass / total)
        if draw in accepted:
            allowed = True
        else:
            checks += 1
            allowed = matcher.is_token_allowed(draw)
        if allowed:
            if token is not None:
                break
            token = draw
            accepted.add(draw)
            continue
        rejected.add(draw)
        positive_left -= 1
        rejected_mass += probs[draw]
        pool_mass -= probs[draw]
        # Draws come from the last rebuilt cdf (a superset of the pool) and redraw on a
        # rejected token, which is exact; rebuild when under half of it is still in the
        # pool, so redraws stay few and rebuilds (O(V)) are logarithmically many.
        if pool_mass < 0.5 * (explicit[-1] if explicit is not None else total):
            pool = probs.copy()
            pool[list(rejected)] = 0.0
            explicit = np.cumsum(pool)
            pool_mass = explicit[-1]  # summed, not subtracted: no cancellation when tiny
    return AWRSStep(token, float(np.log(normaliser_estimate(pools, rejecteds))), checks, tuple(pools),
                    tuple(rejecteds))


def _draw(rng: np.random.Generator, cumulative: np.ndarray, explicit: "np.ndarray | None", rejected: set[int],
          probs: np.ndarray) -> int:
    """A token from ``probs`` restricted to the pool (everything not in ``rejected``)."""
    last = len(cumulative) - 1
    while True:
        if explicit is not None:
            token = min(int(np.searchsorted(explicit, rng.random() * explicit[-1], side="right")), last)
        else:
            token = min(int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")), last)
        if token not in rejected and probs[token] > 0:
            return token


def awrs_sample(model: LanguageModel, compiled: CompiledGrammar, *, prompt_ids: Sequence[int] = (),
                max_new_tokens: int = 256, rng: "np.random.Generator | int | None" = None) -> Sample:
    """One sequence by AWRS at every step: an importance sample of the model conditioned on
    the grammar, with ``log_weight`` the sum of the log normaliser estimates."""
    check_model_fits(model, compiled)
    rng = np.random.default_rng(rng)
    eos_ids = set(compiled.vocabulary.eos_token_ids)
    prompt = [int(t) for t in prompt_ids]
    matcher = compiled.matcher()
    tokens: list[int] = []
    logprob = log_weight = 0.0
    checks = 0
    for _ in range(max_new_tokens):
        logprobs = checked_logprobs(model, [prompt + tokens])[0]
        step = awrs_step(logprobs, matcher, rng)
        checks += step.checks
        log_weight += step.log_weight
        if step.token is None:
            return Sample(tuple(tokens), False, logprob, log_weight, checks)
        with gc_paused:
            matcher.accept_token(step.token)
        logprob += float(logprobs[step.token])
        if step.token in eos_ids:
            return Sample(tuple(tokens), True, logprob, log_weight, checks)
        tokens.append(step.token)
    return Sample(tuple(tokens), False, logprob, log_weight, checks)
