"""Masked (locally constrained) sampling: mask the grammar, then temperature, top-k, top-p.

The grammar mask is applied *before* truncation, so top-k and top-p choose among allowed
tokens only (truncating first could leave nothing allowed). This is fast and always
valid, but it samples each token from the model renormalised over the allowed tokens,
which distorts the distribution over whole sequences; see ``asap`` and ``smc``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import SamplingError
from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_token_bitmask_numpy
from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from .jump_forward import jump_forward
from .model import LanguageModel, checked_logprobs, logprobs_along
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
                  rng: "np.random.Generator | int | None" = None,
                  jump_forward_encode: "Callable[[str], Sequence[int]] | None" = None) -> list[Sample]:
    """``num_samples`` sequences sampled together (one batched model call per step).

    With ``jump_forward_encode`` (text -> token ids, no special tokens), text the grammar
    forces is written without sampling, tokenized canonically (see :mod:`.jump_forward`),
    and scored in the same forward pass as the next token. That saves model calls but no
    longer samples the tokenization of forced text, so the law is not masked sampling's
    exactly (the text stays grammatical). ``logprob`` still sums the unconstrained
    log-probabilities of every output token; ``forced_tokens`` counts the output tokens the
    model did not sample (tokens written by a jump less the sampled ones it re-tokenized),
    so the model chose ``len(token_ids) + finished - forced_tokens`` tokens (one step each).
    Fastest with one sequence: a row that jumps is scored on its own.

    Masks are filled (and tokens accepted) with automatic garbage collection paused, model
    calls with it as it was (see :mod:`gramalign.masking.gc_guard`).
    """
    check_model_fits(model, compiled)
    rng = np.random.default_rng(rng)
    vocab_size = compiled.vocabulary.size
    eos_ids = set(compiled.vocabulary.eos_token_ids)
    prompt = [int(t) for t in prompt_ids]
    matchers = [compiled.matcher() for _ in range(num_samples)]
    tokens: list[list[int]] = [[] for _ in range(num_samples)]
    token_logprobs: list[list[float]] = [[] for _ in range(num_samples)]
    forced = np.zeros(num_samples, dtype=np.int64)
    finished = np.zeros(num_samples, dtype=bool)
    bitmask = allocate_token_bitmask_numpy(num_samples, vocab_size)
    while True:
        active = np.flatnonzero(~finished & (np.array([len(t) for t in tokens]) < max_new_tokens))
        if len(active) == 0:
            break
        jumped = {}
        if jump_forward_encode is not None:
            for i in active.tolist():
                scored = _jump(model, matchers[i], jump_forward_encode, prompt, tokens[i], token_logprobs[i],
                               max_new_tokens)
                if scored is not None:
                    jumped[i] = scored[0]
                    forced[i] += scored[1]
        active = np.array([i for i in active.tolist() if len(tokens[i]) < max_new_tokens], dtype=np.int64)
        if len(active) == 0:
            break
        plain = [i for i in active.tolist() if i not in jumped]
        logprobs = np.empty((len(active), vocab_size))
        if plain:
            logprobs[np.isin(active, plain)] = checked_logprobs(model, [prompt + tokens[i] for i in plain])
        with gc_paused:  # fill, draw, accept: no model call, and no garbage collection inside a fill
            for row, i in enumerate(active.tolist()):
                if i in jumped:
                    logprobs[row] = jumped[i]
                matchers[i].fill_next_token_bitmask(bitmask, row)
            allowed = unpack_token_bitmask_numpy(bitmask[: len(active)], vocab_size)
            probs = constrained_distribution(logprobs, allowed, options)
            chosen = draw_tokens(probs, rng)
            for row, (i, token) in enumerate(zip(active.tolist(), chosen.tolist())):
                matchers[i].accept_token(token)
                token_logprobs[i].append(float(logprobs[row, token]))
                if token in eos_ids:
                    finished[i] = True
                else:
                    tokens[i].append(token)
    return [Sample(tuple(tokens[i]), bool(finished[i]), float(sum(token_logprobs[i])), forced_tokens=int(forced[i]))
            for i in range(num_samples)]


def _jump(model: LanguageModel, matcher, encode, prompt: list[int], tokens: list[int], token_logprobs: list[float],
          max_new_tokens: int) -> "tuple[np.ndarray, int] | None":
    """Jump over forced text in place (``tokens``, ``token_logprobs``, ``matcher``); return the
    next-token log-probabilities and how many tokens the sequence grew by, or None without a jump."""
    with gc_paused:
        jump = jump_forward(matcher, encode, tokens)
    if jump is None:
        return None
    del tokens[len(tokens) - jump.rollback:]
    del token_logprobs[len(token_logprobs) - jump.rollback:]
    written = list(jump.token_ids)[: max_new_tokens - len(tokens)]
    matcher.rollback(len(jump.token_ids) - len(written))  # the budget cuts the jump short
    tokens.extend(written)
    grown = len(written) - jump.rollback
    if not written:
        return checked_logprobs(model, [prompt + tokens])[0], grown
    along = logprobs_along(model, prompt + tokens, len(written) + 1)
    token_logprobs.extend(float(along[k, token]) for k, token in enumerate(written))
    return along[-1], grown
