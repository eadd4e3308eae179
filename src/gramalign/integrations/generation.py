"""Generation: what every one-call generation of gramalign returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..samplers.asap import ASApSampler
    from ..samplers.result import Sample


@dataclass(frozen=True)
class Generation:
    """A constrained generation.

    ``text``/``token_ids`` (EOS excluded) are the chosen output; ``finished`` says EOS
    ended it; ``logprob`` is its log-probability under the unconstrained model;
    ``log_weight`` its log importance weight (AWRS, SMC; None otherwise). For SMC,
    ``particles`` holds every weighted particle (the output is one drawn by weight) and
    ``log_normaliser`` estimates log P(grammar | prompt). ``constraint_checks`` counts
    AWRS's single-token checks. For ASAp, ``asap`` is the sampler with its trie: pass it
    back as ``generate(..., asap=previous.asap)`` to keep learning. ``forced_tokens``
    counts the output tokens jump-forward wrote that the model did not sample; ``seconds``
    is the wall time of the generation (prompt to last token).

    ``generate`` and ``generate_chat`` (Hugging Face ``model.generate`` with the logits
    processor) both return one; the fields of samplers ``generate_chat`` does not run keep
    their defaults.
    """

    text: str
    token_ids: tuple[int, ...]
    finished: bool
    logprob: float
    log_weight: "float | None" = None
    particles: "tuple[Sample, ...] | None" = None
    log_normaliser: "float | None" = None
    constraint_checks: int = 0
    asap: "ASApSampler | None" = None
    forced_tokens: int = 0
    seconds: float = 0.0
