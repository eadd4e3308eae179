"""Speculative decoding under a grammar: a draft model proposes, the target model verifies.

Each round the draft model samples up to ``num_draft_tokens`` tokens from its own *masked*
distribution ``q'`` (on a fork of the matcher), the target model scores every draft
position in one batched call, and the matcher fills the target's mask at every position
in one :meth:`~gramalign.GrammarMatcher.validate_draft` call. Draft token ``x`` at a
position is kept with probability ``min(1, p'(x) / q'(x))``, where ``p'`` is the target's
masked distribution there (the one masked sampling would draw from); at the first refusal
a token is drawn from ``max(0, p' - q')`` renormalised, and when every draft token is kept
a bonus token is drawn from ``p'`` at the next position. By the standard argument
(Leviathan et al. 2023; Chen et al. 2023) each emitted token has exactly the law ``p'``
given the tokens before it, so the output law is that of masked sampling with the target
model, and with ``temperature=0`` the output is token for token the greedy masked output.
Both distributions are masked, so a draft token is always grammatical and the residual
never puts mass on a forbidden token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import SamplingError
from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_token_bitmask_numpy
from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from .masked import SamplingOptions, check_model_fits, constrained_distribution, draw_tokens
from .model import LanguageModel, checked_logprobs, logprobs_along
from .result import Sample


@dataclass(frozen=True)
class SpeculativeResult:
    """The sample, and how the rounds went: draft tokens proposed and kept, target calls."""

    sample: Sample
    proposed: int
    accepted: int
    target_calls: int

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0


def speculative_sample(target: LanguageModel, draft: LanguageModel, compiled: CompiledGrammar, *,
                       prompt_ids: Sequence[int] = (), num_draft_tokens: int = 4, max_new_tokens: int = 256,
                       options: SamplingOptions = SamplingOptions(),
                       rng: "np.random.Generator | int | None" = None) -> SpeculativeResult:
    """One sequence with the law of masked sampling from ``target``, proposed by ``draft``.

    ``options`` (temperature, top-k, top-p) shape both models' masked distributions as in
    :func:`~gramalign.samplers.masked_sample`; ``temperature=0`` gives the greedy output.
    """
    if num_draft_tokens < 1:
        raise ValueError(f"num_draft_tokens must be >= 1, got {num_draft_tokens}")
    check_model_fits(target, compiled)
    check_model_fits(draft, compiled)
    rng = np.random.default_rng(rng)
    vocab_size = compiled.vocabulary.size
    eos_ids = set(compiled.vocabulary.eos_token_ids)
    prompt = [int(t) for t in prompt_ids]
    matcher = compiled.matcher()
    tokens: list[int] = []
    logprob = 0.0
    proposed = accepted_total = target_calls = 0
    draft_mask = allocate_token_bitmask_numpy(1, vocab_size)
    target_masks = allocate_token_bitmask_numpy(num_draft_tokens + 1, vocab_size)
    while len(tokens) < max_new_tokens:
        budget = min(num_draft_tokens, max_new_tokens - len(tokens))
        drafted, draft_probs = _propose(draft, matcher.fork(), prompt + tokens, budget, eos_ids, options,
                                        draft_mask, rng)
        proposed += len(drafted)
        target_rows = logprobs_along(target, prompt + tokens + drafted, len(drafted) + 1)
        target_calls += 1
        with gc_paused:  # the target's masks: no garbage collection inside them (masking.gc_guard)
            valid = matcher.validate_draft(drafted, target_masks)
        if valid != len(drafted):  # cannot happen with exact masks; never emit a refused token
            raise SamplingError(f"draft token {drafted[valid]} was sampled under the mask but refused by the matcher")
        target_probs = constrained_distribution(
            target_rows, unpack_token_bitmask_numpy(target_masks[:len(drafted) + 1], vocab_size), options)
        emitted = []  # emitted[i] was chosen at position i, where target_rows[i] applies
        kept = 0
        for position, token in enumerate(drafted):
            p, q = target_probs[position], draft_probs[position]
            if rng.random() * q[token] < p[token]:  # kept with probability min(1, p/q)
                emitted.append(token)
                kept += 1
                continue
            emitted.append(int(draw_tokens(np.maximum(p - q, 0.0)[None, :], rng)[0]))
            break
        else:
            if drafted[-1] not in eos_ids:  # every draft token kept: the bonus token
                emitted.append(int(draw_tokens(target_probs[len(drafted)][None, :], rng)[0]))
        accepted_total += kept
        with gc_paused:
            for position, token in enumerate(emitted):
                if len(tokens) >= max_new_tokens:
                    break
                matcher.accept_token(token)
                logprob += float(target_rows[position, token])
                if token in eos_ids:
                    return SpeculativeResult(Sample(tuple(tokens), True, logprob), proposed, accepted_total,
                                             target_calls)
                tokens.append(token)
    return SpeculativeResult(Sample(tuple(tokens), False, logprob), proposed, accepted_total, target_calls)


def _propose(draft: LanguageModel, matcher, context: list[int], budget: int, eos_ids: set[int],
             options: SamplingOptions, bitmask: np.ndarray, rng: np.random.Generator) -> tuple[list[int], np.ndarray]:
    """Up to ``budget`` draft tokens sampled under the mask, and the masked draft
    distribution each was drawn from (``[len, V]``)."""
    drafted: list[int] = []
    distributions = []
    for _ in range(budget):
        logprobs = checked_logprobs(draft, [context + drafted])
        with gc_paused:
            matcher.fill_next_token_bitmask(bitmask, 0)
            probs = constrained_distribution(logprobs, unpack_token_bitmask_numpy(bitmask, logprobs.shape[1]), options)
            token = int(draw_tokens(probs, rng)[0])
            drafted.append(token)
            distributions.append(probs[0])
            matcher.accept_token(token)
        if token in eos_ids:
            break
    return drafted, np.array(distributions).reshape(len(drafted), -1)
