"""Masked (locally constrained) sampling: mask the grammar, then temperature, top-k, top-p.

The grammar mask is applied *before* truncation, so top-k and top-p choose among allowed
tokens only (truncating first could leave nothing allowed). This is fast and always
valid, but it samples each token from the model renormalised over the allowed tokens,
which distorts the distribution over whole sequences; see ``asap`` and ``smc``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import SamplingError
from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_bitmask
from ..masking.compiler import CompiledGrammar
from .model import LanguageModel, checked_logprobs
from .result import Sample


@dataclass(frozen=True)
class SamplingOptions:
    """How to turn constrained log-probabilities into a sampling distribution.

    ``temperature=0`` means greedy (the most likely allowed token, lowest id on ties).
    ``top_k`` keeps the k most likely allowed tokens; ``top_p`` keeps the smallest set of
    most likely allowed tokens whose probability reaches ``top_p``.
    """

    temperature: float = 1.0
    top_k: "int | None" = None
    top_p: "float | None" = None

    def __post_init__(self) -> None:
        if not (self.temperature >= 0 and np.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {self.top_k}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1] or None, got {self.top_p}")


def constrained_distribution(logprobs: np.ndarray, allowed: np.ndarray,
                             options: SamplingOptions = SamplingOptions()) -> np.ndarray:
    """The distribution masked sampling draws from, row by row (float64 ``[batch, V]``).

    Raises :class:`SamplingError` for a row whose allowed tokens all have probability 0.
    """
    logprobs = np.atleast_2d(np.asarray(logprobs, dtype=np.float64))
    allowed = np.atleast_2d(np.asarray(allowed, dtype=bool))
    scores = np.where(allowed, logprobs, -np.inf)
    best = scores.max(axis=1, keepdims=True)
    dead = ~np.isfinite(best[:, 0])
    if dead.any():
        raise SamplingError(f"rows {np.flatnonzero(dead).tolist()}: every allowed token has probability 0")
    if options.temperature == 0:
        out = np.zeros_like(scores)
        out[np.arange(len(scores)), np.argmax(scores, axis=1)] = 1.0
        return out
    probs = np.exp((scores - best) / options.temperature)
    if options.top_k is not None or options.top_p is not None:
        order = np.argsort(-probs, axis=1, kind="stable")  # most likely first, lower id first on ties
        ranked = np.take_along_axis(probs, order, axis=1)
        keep = np.ones_like(ranked, dtype=bool)
        if options.top_k is not None:
            keep[:, options.top_k:] = False
        if options.top_p is not None:
            masses = np.where(keep, ranked, 0.0)
            cumulative = np.cumsum(masses, axis=1) / masses.sum(axis=1, keepdims=True)
            # keep a token while the mass *before* it is still short of top_p
            before = cumulative - masses / masses.sum(axis=1, keepdims=True)
            keep &= before < options.top_p
        ranked = np.where(keep, ranked, 0.0)
        probs = np.zeros_like(probs)
        np.put_along_axis(probs, order, ranked, axis=1)
    return probs / probs.sum(axis=1, keepdims=True)


def draw_tokens(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One token id per row of ``probs`` (rows need not be normalised)."""
    cumulative = np.cumsum(probs, axis=1)
    targets = rng.random(len(probs)) * cumulative[:, -1]
    ids = (cumulative <= targets[:, None]).sum(axis=1)
    return np.minimum(ids, probs.shape[1] - 1)


def check_model_fits(model: LanguageModel, compiled: CompiledGrammar) -> None:
    """Raise ValueError when the model's vocabulary size differs from the grammar's."""
    if model.vocab_size != compiled.vocabulary.size:
        raise ValueError(f"the model has {model.vocab_size} tokens but the grammar was compiled for a vocabulary "
                         f"of {compiled.vocabulary.size}; compile with gramalign.vocabulary_for_model")


def masked_sample(model: LanguageModel, compiled: CompiledGrammar, *, num_samples: int = 1,
                  prompt_ids: Sequence[int] = (), max_new_tokens: int = 256,
                  options: SamplingOptions = SamplingOptions(),
                  rng: "np.random.Generator | int | None" = None) -> list[Sample]:
    """``num_samples`` sequences sampled together (one batched model call per step)."""
    check_model_fits(model, compiled)
    rng = np.random.default_rng(rng)
    vocab_size = compiled.vocabulary.size
    eos_ids = set(compiled.vocabulary.eos_token_ids)
    prompt = [int(t) for t in prompt_ids]
    matchers = [compiled.matcher() for _ in range(num_samples)]
    tokens: list[list[int]] = [[] for _ in range(num_samples)]
    logprob = np.zeros(num_samples)
    finished = np.zeros(num_samples, dtype=bool)
    bitmask = allocate_token_bitmask_numpy(num_samples, vocab_size)
    for _ in range(max_new_tokens):
        active = np.flatnonzero(~finished)
        if len(active) == 0:
            break
        logprobs = checked_logprobs(model, [prompt + tokens[i] for i in active])
        for row, i in enumerate(active):
            matchers[i].fill_next_token_bitmask(bitmask, row)
        probs = constrained_distribution(logprobs, unpack_bitmask(bitmask[: len(active)], vocab_size), options)
        chosen = draw_tokens(probs, rng)
        for row, (i, token) in enumerate(zip(active, chosen.tolist())):
            matchers[i].accept_token(token)
            logprob[i] += logprobs[row, token]
            if token in eos_ids:
                finished[i] = True
            else:
                tokens[i].append(token)
    return [Sample(tuple(tokens[i]), bool(finished[i]), float(logprob[i])) for i in range(num_samples)]
