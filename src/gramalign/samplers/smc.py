"""Sequential Monte Carlo over AWRS steps: particles whose weights correct for the grammar.

Each particle extends by one AWRS token per step and multiplies its weight by that step's
unbiased normaliser estimate, so a particle is a properly weighted sample of the model
conditioned on the grammar. When the effective sample size falls below
``ess_threshold * num_particles`` the particles are resampled (systematic resampling) and
their weights set to the mean. Finished particles (EOS) keep their weight and stop.

``log_normaliser`` (the product over resampling epochs of mean weights, times the final
mean) is an unbiased estimate of the probability that the unconstrained model generates
a string of the grammar (within the token budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ParticlesExhausted
from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from .awrs import awrs_step
from .masked import check_model_fits
from .model import LanguageModel, checked_logprobs
from .result import Sample


@dataclass(frozen=True)
class SMCResult:
    """The weighted particles (``Sample.log_weight`` holds each final log weight), the
    estimate of log P(grammar) under the model, how often resampling ran, and the total
    constraint checks. ``budget_exhausted``: ``max_checks`` stopped the run early (particles
    not finished then are returned as they were; the normaliser is then no estimate)."""

    particles: tuple[Sample, ...]
    log_normaliser: float
    resampling_steps: int
    constraint_checks: int
    budget_exhausted: bool = False

    def normalised_weights(self) -> np.ndarray:
        """The particles' weights, summing to 1."""
        logs = np.array([p.log_weight for p in self.particles])
        weights = np.exp(logs - logs.max())
        return weights / weights.sum()

    def choose(self, rng: "np.random.Generator | int | None" = None) -> Sample:
        """One particle drawn by weight: an (asymptotically exact) sample of the conditioned model."""
        index = np.random.default_rng(rng).choice(len(self.particles), p=self.normalised_weights())
        return self.particles[int(index)]


def _log_mean_exp(logs: np.ndarray) -> float:
    top = logs.max()
    if not np.isfinite(top):
        return float("-inf")
    return float(top + np.log(np.mean(np.exp(logs - top))))


def systematic_resample(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ancestor indices for normalised ``weights`` by systematic resampling."""
    count = len(weights)
    positions = (rng.random() + np.arange(count)) / count
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0
    return np.searchsorted(cumulative, positions, side="right")


def smc_sample(model: LanguageModel, compiled: CompiledGrammar, *, num_particles: int = 8,
               ess_threshold: float = 0.5, prompt_ids: Sequence[int] = (), max_new_tokens: int = 256,
               rng: "np.random.Generator | int | None" = None, max_checks: "int | None" = None) -> SMCResult:
    """Run SMC with AWRS proposals; one batched model call per step over the live particles.

    ``ess_threshold`` in [0, 1]: 0 never resamples (plain importance sampling), 1 resamples
    at every step where the weights are not all equal. ``max_checks`` bounds the cost: the
    run stops after the step in which the particles' single-token constraint checks reach it
    (a model that puts its mass on forbidden tokens makes AWRS check many), with
    ``budget_exhausted`` set.
    """
    check_model_fits(model, compiled)
    if num_particles < 1:
        raise ValueError(f"num_particles must be >= 1, got {num_particles}")
    if not 0 <= ess_threshold <= 1:
        raise ValueError(f"ess_threshold must be in [0, 1], got {ess_threshold}")
    if max_checks is not None and max_checks < 1:
        raise ValueError(f"max_checks must be >= 1 or None, got {max_checks}")
    exhausted = False
    rng = np.random.default_rng(rng)
    eos_ids = set(compiled.vocabulary.eos_token_ids)
    prompt = [int(t) for t in prompt_ids]
    matchers = [compiled.matcher() for _ in range(num_particles)]
    tokens: list[list[int]] = [[] for _ in range(num_particles)]
    logprob = np.zeros(num_particles)
    log_weight = np.zeros(num_particles)
    finished = np.zeros(num_particles, dtype=bool)
    dead = np.zeros(num_particles, dtype=bool)
    log_normaliser = 0.0
    resamplings = checks = 0
    for _ in range(max_new_tokens):
        active = np.flatnonzero(~finished & ~dead)
        if len(active) == 0:
            break
        logprobs = checked_logprobs(model, [prompt + tokens[i] for i in active])
        with gc_paused:  # checks and accepts, no model call: no garbage collection (masking.gc_guard)
            for row, i in enumerate(active):
                step = awrs_step(logprobs[row], matchers[i], rng)
                checks += step.checks
                log_weight[i] += step.log_weight
                if step.token is None:
                    dead[i] = True
                    continue
                matchers[i].accept_token(step.token)
                logprob[i] += logprobs[row, step.token]
                if step.token in eos_ids:
                    finished[i] = True
                else:
                    tokens[i].append(step.token)
        if not np.isfinite(log_weight.max()):
            raise ParticlesExhausted("every particle has weight zero: the model gives no probability to "
                                     "any continuation the grammar allows")
        if (finished | dead).all():
            break
        if max_checks is not None and checks >= max_checks:
            exhausted = True
            break
        weights = np.exp(log_weight - log_weight.max())
        ess = weights.sum() ** 2 / np.sum(weights ** 2)
        if ess < ess_threshold * num_particles - 1e-9:
            resamplings += 1
            mean = _log_mean_exp(log_weight)
            log_normaliser += mean
            ancestors = systematic_resample(weights / weights.sum(), rng)
            matchers = [matchers[a].fork() for a in ancestors]
            tokens = [list(tokens[a]) for a in ancestors]
            logprob, finished, dead = logprob[ancestors], finished[ancestors], dead[ancestors]
            log_weight = np.zeros(num_particles)
    # a particle's final weight carries the resampled epochs' means, so the particles'
    # mean weight is the normaliser estimate
    particles = tuple(Sample(tuple(tokens[i]), bool(finished[i]), float(logprob[i]),
                             float(log_normaliser + log_weight[i]), 0)
                      for i in range(num_particles))
    return SMCResult(particles, float(log_normaliser + _log_mean_exp(log_weight)), resamplings, checks, exhausted)
